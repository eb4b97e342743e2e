"""Bad input through the real hyperion-submit: one line naming the field, exit 2, nothing run.

Every case runs with both backends (the checks happen before either runs
anything): no traceback, no q/ directory, no log file.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import TEST_SITE, run_cli

BASE = yaml.safe_load(TEST_SITE.read_text())


def _site(**changes: object) -> str:
    data = {**BASE, **changes}
    return yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False)


def _gpu(options: list[str]) -> str:
    return _site(gpu_types={"v100": {"options": options}})


# (id, site YAML text or None for the test site, submitter args, command, expected field)
ARRAY_LOG = "log/t.JOB.log"
YAML_CASES = [
    ("export", _site(base_options=["--export=NONE"]), "base_options"),
    ("export-prefix", _site(base_options=["--exp=NONE"]), "base_options"),
    ("output-prefix", _site(base_options=["--outp=x"]), "base_options"),
    ("mem-per-prefix", _site(base_options=["--mem-p=1G"]), "base_options"),
    ("short-output", _site(base_options=["-o", "x.out"]), "base_options"),
    ("short-cpus-attached", _site(base_options=["-c4"]), "base_options"),
    ("time-separate-value", _site(base_options=["--time", "10"]), "base_options"),
    ("short-time-attached", _site(base_options=["-t10"]), "base_options"),
    ("gres-in-base", _site(base_options=["--gres=gpu:1"]), "base_options"),
    ("short-gpus", _site(base_options=["-G1"]), "base_options"),
    ("array-in-base", _site(base_options=["--array=1-3"]), "base_options"),
    ("parsable-in-base", _site(base_options=["--parsable"]), "base_options"),
    ("gpus-in-cpu-options", _site(cpu_options=["--gpus=1"]), "cpu_options"),
    ("mem-in-gpu-options", _gpu(["--partition=gpu", "--mem=1G"]), "gpu_types.v100.options"),
    ("cpus-per-gpu-in-gpu-options", _gpu(["--partition=gpu", "--cpus-per-gpu=2"]), "gpu_types.v100.options"),
    ("export-separate-value", _site(base_options=["--account", "x", "--export", "NONE"]), "base_options"),
    ("export-in-short-cluster", _site(base_options=["-Qe", "x.err"]), "base_options"),
    ("shell-semicolon", _site(base_options=["--account=a;rm -rf"]), "base_options"),
    ("shell-subst", _site(base_options=["--qos=$(x)"]), "base_options"),
    ("shell-backtick", _site(cpu_options=["--comment=`id`"]), "cpu_options"),
    ("not-an-option", _site(base_options=["nodes=1"]), "base_options"),
    ("unknown-sbatch-option", _site(base_options=["--nodez=1"]), "base_options"),
    ("bad-placeholder", _gpu(["--partition=gpu", "--gres=gpu:v100:{gpus}"]), "gpu_types.v100.options"),
    ("unknown-key", _site(num_gpu=1), "num_gpu"),
    ("unquoted-time", TEST_SITE.read_text().replace('"00:10:00"', "168:00:00"), "time"),
    ("bad-time", _site(time="ten hours"), "time"),
    ("zero-time", _site(time="0"), "time"),
    ("time-above-a-year", _site(time="400-00:00:00"), "time"),
    ("poll-interval-zero", _site(poll_interval=0), "poll_interval"),
    ("poll-interval-text", _site(poll_interval="fast"), "poll_interval"),
    ("both-mem-scopes", _site(mem="8G", mem_per_cpu="2G"), "mem_per_cpu"),
    ("bad-mem", _site(mem="8X"), "mem"),
    ("zero-threads", _site(num_threads=0), "num_threads"),
    ("negative-gpus", _site(num_gpus=-1), "num_gpus"),
    ("not-a-mapping", "- a\n- b\n", "--cfg"),
    ("empty-file", "", "--cfg"),
    ("comments-only", "# nothing here yet\n", "--cfg"),
    ("not-utf8", b"num_gpus: 0\n# caf\xe9\n", "--cfg"),
    ("unhashable-key", "? [1, 2]\n: 3\n", "--cfg"),
    ("gpus-not-integer", _site(num_gpus="two"), "num_gpus"),
    ("base-options-string", _site(base_options="--nodes=1"), "base_options"),
    ("gpu-types-list", _site(gpu_types=["v100"]), "gpu_types"),
    ("gpu-type-without-options", _site(gpu_types={"v100": None}), "gpu_types.v100"),
    ("gpu-options-string", _gpu("--gres=gpu:v100:{num_gpus}"), "gpu_types.v100.options"),
]
CLI_CASES = [
    ("both-mem-on-cli", ["--mem", "1G", "--mem-per-cpu", "1G", "--output-file", "log/t.log"], ["true"], "--mem-per-cpu"),
    ("missing-output-file", [], ["true"], "--output-file"),
    ("missing-separator", ["--output-file", "log/t.log", "true"], None, "--"),
    ("empty-command", ["--output-file", "log/t.log"], [], "command"),
    ("command-is-separator", ["--output-file", "log/t.log"], ["--"], "command"),
    ("command-is-option", ["--output-file", "log/t.log"], ["--time", "10", "true"], "command"),
    ("output-file-empty", ["--output-file", ""], ["true"], "--output-file"),
    ("output-file-trailing-slash", ["--output-file", "log/"], ["true"], "--output-file"),
    ("output-file-dot", ["--output-file", "."], ["true"], "--output-file"),
    ("output-file-dotdot", ["--output-file", "log/.."], ["true"], "--output-file"),
    ("array-bad-name", ["--array", "1JOB=1:3", "--output-file", "log/t.1JOB.log"], ["true"], "--array"),
    ("array-zero-start", ["--array", "JOB=0:3", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-reversed", ["--array", "JOB=5:3", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-not-integer", ["--array", "JOB=1:x", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-huge", ["--array", "JOB=1:1000000", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-huge-dry-run", ["--dry-run", "--array", "JOB=1:1000000", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-no-range", ["--array", "JOB=", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-trailing-comma", ["--array", "JOB=1:3,", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-name-not-in-log", ["--array", "JOB=1:3", "--output-file", "log/t.log"], ["true"], "--output-file"),
    ("env-sets-array-name", ["--array", "JOB=1:3", "--env", "JOB=5", "--output-file", ARRAY_LOG], ["true"], "--env"),
    ("max-jobs-without-array", ["--max-jobs-run", "2", "--output-file", "log/t.log"], ["true"], "--max-jobs-run"),
    ("max-jobs-zero", ["--array", "JOB=1:3", "--max-jobs-run", "0", "--output-file", ARRAY_LOG], ["true"], "--max-jobs-run"),
    ("negative-gpus", ["--num-gpus", "-1", "--output-file", "log/t.log"], ["true"], "--num-gpus"),
    ("gpus-not-integer", ["--num-gpus", "two", "--output-file", "log/t.log"], ["true"], "--num-gpus"),
    ("zero-threads", ["--num-threads", "0", "--output-file", "log/t.log"], ["true"], "--num-threads"),
    ("bad-mem", ["--mem", "lots", "--output-file", "log/t.log"], ["true"], "--mem"),
    ("bad-time", ["--time", "1:2:3:4", "--output-file", "log/t.log"], ["true"], "--time"),
    ("zero-time", ["--time", "0", "--output-file", "log/t.log"], ["true"], "--time"),
    ("zero-time-clock", ["--time", "00:00:00", "--output-file", "log/t.log"], ["true"], "--time"),
    ("time-above-a-year", ["--time", "525601", "--output-file", "log/t.log"], ["true"], "--time"),
    ("poll-interval-on-cli", ["--poll_interval", "5", "--output-file", "log/t.log"], ["true"], "--poll_interval"),
    ("unknown-option", ["--foo", "1", "--output-file", "log/t.log"], ["true"], "--foo"),
    ("site-key-on-cli", ["--base_options", "--nodes=1", "--output-file", "log/t.log"], ["true"], "--base_options"),
    ("option-without-value", ["--output-file"], ["true"], "--output-file"),
]


def _check_rejected(result, tmp_path: Path, field: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"hyperion-submit: error: {field}: "), lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert not list(tmp_path.rglob("q")), "a q/ directory was created"
    assert not list(tmp_path.rglob("*.log")), "a log was written"


@pytest.mark.parametrize("backend", ["local", "slurm"])
@pytest.mark.parametrize("site_text,field", [c[1:] for c in YAML_CASES], ids=[c[0] for c in YAML_CASES])
def test_bad_site_file_is_one_line_exit_2(tmp_path, cli_env, backend, site_text, field):
    site = tmp_path / "site.yaml"
    site.write_bytes(site_text if isinstance(site_text, bytes) else site_text.encode())
    args = ["--output-file", "log/t.log"]
    if field == "default_gpu_type":
        args += ["--num-gpus", "1"]
    result = run_cli("hyperion-submit", backend, "--cfg", str(site), *args, "--", "true",
                     cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, field)


@pytest.mark.parametrize("backend", ["local", "slurm"])
@pytest.mark.parametrize("args,command,field", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_bad_command_line_is_one_line_exit_2(tmp_path, cli_env, backend, args, command, field):
    tail = [] if command is None else ["--", *command]
    result = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), *args, *tail,
                     cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, field)


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_gpus_without_a_defined_default_gpu_type(tmp_path, cli_env, backend):
    site = tmp_path / "site.yaml"
    site.write_text(_site(default_gpu_type="a100"))
    result = run_cli("hyperion-submit", backend, "--cfg", str(site), "--num-gpus", "1",
                     "--output-file", "log/t.log", "--", "true", cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, "default_gpu_type")
    assert "a100" in result.stderr


@pytest.mark.parametrize("argv,field", [
    (["sge", "--cfg", str(TEST_SITE), "--output-file", "t.log", "--", "true"], "backend"),
    (["local", "--output-file", "t.log", "--", "true"], "--cfg"),
    (["local", "--cfg", "does-not-exist.yaml", "--output-file", "t.log", "--", "true"], "--cfg"),
    (["slurm", "--cfg", ".", "--output-file", "t.log", "--", "true"], "--cfg"),
    (["slurm", "--cfg", "", "--output-file", "t.log", "--", "true"], "--cfg"),
], ids=["unknown-backend", "missing-cfg", "cfg-not-found", "cfg-is-a-directory", "cfg-empty-path"])
def test_bad_backend_or_cfg(tmp_path, cli_env, argv, field):
    result = run_cli("hyperion-submit", *argv, cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, field)


def test_unquoted_time_message_says_to_quote_it(tmp_path, cli_env):
    site = tmp_path / "site.yaml"
    site.write_text(TEST_SITE.read_text().replace('"00:10:00"', "168:00:00"))
    result = run_cli("hyperion-submit", "local", "--cfg", str(site), "--output-file", "t.log",
                     "--", "true", cwd=tmp_path, env=cli_env)
    assert result.returncode == 2
    assert "604800" in result.stderr and "quote" in result.stderr


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_output_file_that_is_an_existing_directory(tmp_path, cli_env, backend):
    (tmp_path / "exp" / "train").mkdir(parents=True)
    result = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), "--output-file", "exp/train",
                     "--", "true", cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, "--output-file")
    assert "is a directory" in result.stderr
