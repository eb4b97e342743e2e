"""Bad input through the real hyperion-submit: one line naming the field, exit 2, nothing run.

Every case runs with both backends (the checks happen before either runs
anything): no traceback, no q/ directory, no log file.
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import TEST_SITE, make_fifo, make_sparse, make_symlink_loop, run_cli, without_rights

BASE = yaml.safe_load(TEST_SITE.read_text())


def _site(**changes: object) -> str:
    data = {**BASE, **changes}
    return yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False)


def _gpu(options: list[str]) -> str:
    return _site(gpu_types={"v100": {"options": options}})


# (id, site YAML text or None for the test site, submitter args, command, expected field)
ARRAY_LOG = "log/t.JOB.log"
YAML_CASES = [
    ("option-without-a-name", _site(base_options=["--=x"]), "base_options"),   # said it 'sets --array'
    ("merge-key", _site() + "<<: [{num_threads: 4}, {num_threads: 7}]\n", "<<"),
    ("merge-key-alone", _site() + "<<: {mem: 4G}\n", "<<"),
    ("empty-gres", _site(base_options=["--gres="]), "base_options"),        # sbatch: invalid generic resource
    ("comma-gres", _site(cpu_options=["--gres=,"]), "cpu_options"),
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
    # a feature expression may use & | ( ) but nothing else a shell reads
    ("shell-in-constraint", _site(base_options=["--constraint=v100|a100;id"]), "base_options"),
    ("space-in-constraint", _site(base_options=["--constraint", "v100 a100"]), "base_options"),
    ("pipe-in-account", _site(base_options=["--account=a|b"]), "base_options"),
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
    # hostile files (issue 13): refused before PyYAML builds anything, naming the field
    ("duplicate-key", TEST_SITE.read_text() + "num_threads: 2\n", "num_threads"),
    ("duplicate-nested-key", _site(gpu_types={"v100": {"options": ["--partition=gpu"]}})
     + "    options: [--partition=cpu]\n", "gpu_types.v100.options"),
    ("anchor-and-alias", TEST_SITE.read_text().replace("cpu_options:", "cpu_options: &o")
     + "extra: *o\n", "cpu_options"),
    ("alias-bomb", "a: &a [x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)), "a"),
    ("deep-nesting", "gpu_types: " + "[" * 5000 + "]" * 5000 + "\n", "gpu_types"),
    ("deep-mapping", "gpu_types:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(20)), "gpu_types.k0.k1.k2.k3.k4.k5.k6"),
    ("number-of-5000-digits", "num_threads: " + "9" * 5000 + "\n", "num_threads"),
    ("quoted-number-of-5000-digits", 'num_threads: "' + "9" * 5000 + '"\n', "num_threads"),
    # a tag whose value does not read as the tag says was a traceback (KeyError, IndexError, AttributeError)
    # or '--cfg: site.yaml cannot be read as a site file (ValueError)'
    ("tagged-bool-not-a-bool", "num_threads: !!bool maybe\n", "num_threads"),
    ("tagged-int-empty", 'num_threads: !!int ""\n', "num_threads"),
    ("tagged-float-empty", "poll_interval: !!float ''\n", "poll_interval"),
    ("tagged-timestamp-not-a-date", "time: !!timestamp x\n", "time"),
    ("tagged-int-not-a-number", "num_threads: !!int abc\n", "num_threads"),
    ("tagged-int-in-a-list", "base_options: [--qos=x, !!int '']\n", "base_options"),
    ("hex-without-digits", "num_threads: 0x_\n", "num_threads"),
    ("threads-beyond-bound", _site(num_threads=10 ** 9), "num_threads"),
    ("gpus-beyond-bound", _site(num_gpus=5000), "num_gpus"),
    ("max-array-size-2-63", _site(max_array_size=2 ** 63), "max_array_size"),
    ("max-array-size-beyond-slurm", _site(max_array_size=4_000_002), "max_array_size"),
    ("mem-beyond-bound", _site(mem="99999999T"), "mem"),
    ("mem-of-30-digits", _site(mem="9" * 30 + "G"), "mem"),
    ("time-beyond-bound", _site(time="99999999-00:00:00"), "time"),
    ("esc-in-option", _site(base_options=["--comment=\x1b]0;owned\x07"]), "base_options"),
    ("csi-in-option", _site(cpu_options=["--partition=cpu\x1b[2J"]), "cpu_options"),
    ("bidi-in-option", _site(cpu_options=["--comment=abc\u202edef"]), "cpu_options"),
    ("bidi-in-gpu-option", _gpu(["--partition=gpu\u2066", "--gres=gpu:v100:{num_gpus}"]), "gpu_types.v100.options"),
    ("esc-in-key", _site(**{"num\x1bgpus": 1}), "num\\x1bgpus"),
    ("bidi-in-value", _site(default_gpu_type="v100\u202e"), "default_gpu_type"),
    ("nel-in-value", _site(sbatch_command="sbatch\x85"), "sbatch_command"),
    ("oversized-file", "# padding\n" * 7000, "--cfg"),
    # a value near the 64 KiB limit: the one line quoted all of it, 60 KB of 'aaa...'
    ("shell-fragment-of-60000-characters", _site(base_options=["--comment=" + "a" * 60000 + ";"]), "base_options"),
    ("placeholder-of-50000-characters", _site(cpu_options=["--comment={" + "a" * 50000 + "}"]), "cpu_options"),
    ("gpu-type-of-60000-characters", _site(default_gpu_type="a" * 60000), "default_gpu_type"),
    ("sbatch-command-of-60000-characters", _site(sbatch_command="a b" * 20000), "sbatch_command"),
    ("unknown-key-of-60000-characters", _site(**{"k" * 60000: 1}), "k" * 40 + "..."),
]
CLI_CASES = [
    ("both-mem-on-cli", ["--mem", "1G", "--mem-per-cpu", "1G", "--output-file", "log/t.log"], ["true"], "--mem-per-cpu"),
    ("missing-output-file", [], ["true"], "--output-file"),
    # a second use replaced the first without a word (3-4 ran alone; the logs went to b.log)
    ("array-twice", ["--array", "JOB=1:2", "--array=JOB=3:4", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("output-file-twice", ["--output-file", "log/a.log", "--output-file", "log/b.log"], ["true"], "--output-file"),
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
    # NAME is in the text, but the '..' after it leaves its folder: every task wrote log/t.log at once
    ("array-name-undone-by-dotdot", ["--array", "JOB=1:3", "--output-file", "log/JOB/../t.log"], ["true"],
     "--output-file"),
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
    # jsonargparse's own flag: it printed a config dump, then "error: arguments: 0"
    ("print-config", ["--print_config", "--output-file", "log/t.log"], ["true"], "--print_config"),
    ("print-config-dry-run", ["--dry-run", "--print_config=skip_null", "--output-file", "log/t.log"], ["true"],
     "--print_config=skip_null"),
    ("site-key-on-cli", ["--base_options", "--nodes=1", "--output-file", "log/t.log"], ["true"], "--base_options"),
    ("option-without-value", ["--output-file"], ["true"], "--output-file"),
    # numbers beyond sane bounds, environment names, values that would wrap (issue 13)
    ("threads-5000-digits", ["--num-threads", "9" * 5000, "--output-file", "log/t.log"], ["true"], "--num-threads"),
    ("threads-beyond-bound", ["--num-threads", "1000000", "--output-file", "log/t.log"], ["true"], "--num-threads"),
    ("gpus-5000-digits", ["--num-gpus", "9" * 5000, "--output-file", "log/t.log"], ["true"], "--num-gpus"),
    ("max-jobs-beyond-bound", ["--array", "JOB=1:3", "--max-jobs-run", "9" * 40, "--output-file", ARRAY_LOG],
     ["true"], "--max-jobs-run"),
    ("mem-beyond-bound", ["--mem", "9999999999T", "--output-file", "log/t.log"], ["true"], "--mem"),
    ("mem-5000-digits", ["--mem", "9" * 5000, "--output-file", "log/t.log"], ["true"], "--mem"),
    ("time-beyond-bound", ["--time", "9999999999", "--output-file", "log/t.log"], ["true"], "--time"),
    ("time-5000-digits", ["--time", "1-" + "9" * 5000, "--output-file", "log/t.log"], ["true"], "--time"),
    ("array-name-path", ["--array", "PATH=1:2", "--output-file", "log/t.PATH.log"], ["true"], "--array"),
    ("array-name-home", ["--array", "HOME=1:2", "--output-file", "log/t.HOME.log"], ["true"], "--array"),
    ("array-name-ifs", ["--array", "IFS=1:2", "--output-file", "log/t.IFS.log"], ["true"], "--array"),
    ("array-name-ld", ["--array", "LD_PRELOAD=1:2", "--output-file", "log/t.LD_PRELOAD.log"], ["true"], "--array"),
    ("array-name-python", ["--array", "PYTHONPATH=1:2", "--output-file", "log/t.PYTHONPATH.log"], ["true"], "--array"),
    ("array-name-slurm", ["--array", "SLURM_ARRAY_TASK_ID=1:2", "--output-file", "log/t.SLURM_ARRAY_TASK_ID.log"],
     ["true"], "--array"),
    ("array-name-cuda", ["--array", "CUDA_VISIBLE_DEVICES=1:2", "--output-file", "log/t.CUDA_VISIBLE_DEVICES.log"],
     ["true"], "--array"),
    ("array-name-locale", ["--array", "LC_ALL=1:2", "--output-file", "log/t.LC_ALL.log"], ["true"], "--array"),
    # bash sets these itself in the batch script: tasks got a timestamp, a random number or the log path
    *[(f"array-name-{name.lower()}", ["--array", f"{name}=1:2", "--output-file", f"log/t.{name}.log"], ["true"],
       "--array") for name in ("EPOCHSECONDS", "SRANDOM", "FUNCNAME", "DIRSTACK", "_hyperion_log", "_hyperion_start")],
    # bash sets $_ to the last argument of every command: on Slurm both tasks wrote one log, log/t._.log,
    # and ran with the batch script's own words as NAME (the local backend ran them right)
    ("array-name-underscore", ["--array", "_=1:2", "--output-file", "log/t._.log"], ["true"], "--array"),
    # --env NAME bash sets, resets or refuses in the batch script: on Slurm the task got bash's value
    # ($_ the script's last command, SECONDS a count, UID read-only), locally the typed one
    *[(f"env-name-{name.lower()}", ["--env", f"{name}=5", "--output-file", "log/t.log"], ["true"], "--env")
      for name in ("_", "SECONDS", "RANDOM", "LINENO", "BASHPID", "EPOCHSECONDS", "UID", "SHELLOPTS", "IFS",
                   "POSIXLY_CORRECT", "SLURM_RESTART_COUNT", "HYPERION_SUBMIT_ARRAY_OFFSET", "_hyperion_log")],
    ("log-named-q", ["--output-file", "log/q"], ["true"], "--output-file"),
    ("array-value-2-63", ["--array", f"JOB={2 ** 63}", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-value-beyond-bound", ["--array", "JOB=1000000001", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-endpoint-5000-digits", ["--array", "JOB=1:" + "9" * 5000, "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("array-esc-in-name", ["--array", "J\x1b[2JOB=1:2", "--output-file", ARRAY_LOG], ["true"], "--array"),
    ("log-under-a-regular-file", ["--output-file", "A_FILE/log/t.log"], ["true"], "--output-file"),
    ("array-log-under-a-regular-file", ["--array", "JOB=1:2", "--output-file", "A_FILE/JOB/t.log"], ["true"],
     "--output-file"),
    ("log-name-too-long", ["--output-file", "log/" + "b" * 250 + ".log"], ["true"], "--output-file"),
    ("log-stem-too-long-for-q", ["--output-file", "log/" + "b" * 230 + ".log"], ["true"], "--output-file"),
    ("array-log-name-too-long", ["--array", "JOB=1:2", "--output-file", "log/JOB." + "b" * 240], ["true"],
     "--output-file"),
    ("log-path-too-long", ["--output-file", "/".join(["d" * 200] * 21) + "/t.log"], ["true"], "--output-file"),
    ("log-with-escape", ["--output-file", "t/\x1b]0;owned\x07.log"], ["true"], "--output-file"),
    ("log-with-newline", ["--output-file", "t/a\nb.log"], ["true"], "--output-file"),
    ("log-with-bidi", ["--output-file", "t/\u202egol.exe"], ["true"], "--output-file"),
    # a 60000-character word on the command line was repeated whole in the error line
    ("array-name-of-60000-characters", ["--array", "J" * 60000 + "=1:2", "--output-file", ARRAY_LOG], ["true"],
     "--output-file"),
    ("array-name-of-60000-characters-undone-by-dotdot", ["--array", "J" * 60000 + "=1:2", "--output-file",
     "log/" + "J" * 60000 + "/../t.log"], ["true"], "--output-file"),
    ("unknown-option-of-60000-characters", ["--" + "x" * 60000, "--output-file", "log/t.log"], ["true"],
     "--" + "x" * 38 + "..."),
    ("dash-value-of-60000-characters", ["--mem", "-" + "G" * 60000, "--output-file", "log/t.log"], ["true"],
     "--mem"),
]


def _check_rejected(result, tmp_path: Path, field: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"hyperion-submit: error: {field}: "), lines[0]
    assert lines[0].isprintable(), lines[0]          # no control or bidi character reaches the terminal
    assert len(lines[0]) < 1000, "the error repeats a huge value"
    assert "Traceback" not in result.stderr + result.stdout
    assert not list(tmp_path.rglob("q")), "a q/ directory was created (nothing may be submitted or written)"
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
    (tmp_path / "A_FILE").write_text("a regular file where a directory would be\n")
    tail = [] if command is None else ["--", *command]
    result = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), *args, *tail,
                     cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, field)


def test_a_backend_word_of_60000_characters_is_not_repeated_whole(tmp_path, cli_env):
    result = run_cli("hyperion-submit", "s" * 60000, "--cfg", str(TEST_SITE), "--output-file", "log/t.log",
                     "--", "true", cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, "backend")


def test_a_backend_word_that_is_not_utf8_is_shown_as_its_byte(tmp_path, cli_env):
    """A byte 0xff typed as the backend was shown as Python's '\\udcff', not as the byte it is."""
    result = run_cli("hyperion-submit", "sl\udcff", "--cfg", str(TEST_SITE), "--output-file", "log/t.log",
                     "--", "true", cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, "backend")
    assert "got 'sl\\xff'" in result.stderr


def test_a_value_that_starts_with_a_dash_is_told_how_to_be_given(tmp_path, cli_env):
    """`--mem -1G` said '--mem: expected one argument', though the user gave one."""
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--mem", "-1G", "--output-file",
                     "log/t.log", "--", "true", cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, "--mem")
    assert "'-1G' reads as an option; a value starting with '-' is given as --mem=-1G" in result.stderr


def test_a_backslash_in_the_log_folder_is_refused_for_slurm_and_runs_locally(tmp_path, cli_env):
    """sbatch drops a backslash from --output and then reads no %j: every task failed without running."""
    args = ["--cfg", str(TEST_SITE), "--output-file", "b\\s/log/t.log", "--", "true"]
    result = run_cli("hyperion-submit", "slurm", *args, cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, "--output-file")
    assert "holds a backslash" in result.stderr
    local = run_cli("hyperion-submit", "local", *args, cwd=tmp_path, env=cli_env, timeout=60)
    assert local.returncode == 0, local.stderr
    assert (tmp_path / "b\\s" / "log" / "t.log").is_file()


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_gpus_without_a_defined_default_gpu_type(tmp_path, cli_env, backend):
    site = tmp_path / "site.yaml"
    site.write_text(_site(default_gpu_type="a100"))
    result = run_cli("hyperion-submit", backend, "--cfg", str(site), "--num-gpus", "1",
                     "--output-file", "log/t.log", "--", "true", cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, "default_gpu_type")
    assert "a100" in result.stderr


@pytest.mark.parametrize("backend", ["local", "slurm"])
@pytest.mark.parametrize("options", [["--partition=gpu"], []], ids=["gpu-type-asking-no-gpus", "gpu-type-with-no-options"])
def test_a_gpu_type_asking_slurm_for_no_gpus_is_refused_for_gpu_runs_only(tmp_path, cli_env, backend, options):
    """torchrun for N processes and no GPU asked of Slurm (the audit's `gpu_types: {v: {options: []}}`) is
    refused when GPUs are asked for; a CPU-only run never uses gpu_types and was refused for it too."""
    site = tmp_path / "site.yaml"
    site.write_text(_gpu(options))
    args = ["--cfg", str(site), "--output-file", "log/t.log", "--", "true"]
    result = run_cli("hyperion-submit", backend, "--num-gpus", "1", *args, cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, "gpu_types.v100.options")
    assert "no option holds {num_gpus}" in result.stderr
    assert result.stderr.rstrip().endswith(f"(in the site file {site})"), result.stderr   # as errors at load say
    cpu = run_cli("hyperion-submit", backend, "--dry-run", "--num-gpus", "0", *args, cwd=tmp_path, env=cli_env)
    assert cpu.returncode == 0 and cpu.stderr == "", cpu.stderr
    assert "nothing was submitted" in cpu.stdout


@pytest.mark.parametrize("argv,field", [
    (["sge", "--cfg", str(TEST_SITE), "--output-file", "t.log", "--", "true"], "backend"),
    (["local", "--output-file", "t.log", "--", "true"], "--cfg"),
    (["local", "--cfg", "does-not-exist.yaml", "--output-file", "t.log", "--", "true"], "--cfg"),
    (["slurm", "--cfg", ".", "--output-file", "t.log", "--", "true"], "--cfg"),
    (["slurm", "--cfg", "", "--output-file", "t.log", "--", "true"], "--cfg"),
    (["local", "--cfg", str(TEST_SITE), "--cfg", str(TEST_SITE), "--output-file", "t.log", "--", "true"], "--cfg"),
    (["slurm", "--cfg", "/dev/zero", "--output-file", "t.log", "--", "true"], "--cfg"),
    (["local", "--cfg", "/dev/null", "--output-file", "t.log", "--", "true"], "--cfg"),
], ids=["unknown-backend", "missing-cfg", "cfg-not-found", "cfg-is-a-directory", "cfg-empty-path", "cfg-twice",
        "cfg-dev-zero", "cfg-dev-null"])
def test_bad_backend_or_cfg(tmp_path, cli_env, argv, field):
    result = run_cli("hyperion-submit", *argv, cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, field)


def test_unquoted_time_message_says_to_quote_it(tmp_path, cli_env):
    site = tmp_path / "site.yaml"
    site.write_text(TEST_SITE.read_text().replace('"00:10:00"', "168:00:00"))
    result = run_cli("hyperion-submit", "local", "--cfg", str(site), "--output-file", "t.log",
                     "--", "true", cwd=tmp_path, env=cli_env)
    assert result.returncode == 2
    assert "604800" in result.stderr and 'time: "168:00:00"' in result.stderr
    # A plain number may have been meant as minutes: both readings are offered.
    site.write_text(TEST_SITE.read_text().replace('"00:10:00"', "600"))
    minutes = run_cli("hyperion-submit", "local", "--cfg", str(site), "--output-file", "t.log",
                      "--", "true", cwd=tmp_path, env=cli_env)
    assert minutes.returncode == 2 and len(minutes.stderr.splitlines()) == 1
    assert 'time: "600" for 600 minutes' in minutes.stderr
    site.write_text(TEST_SITE.read_text().replace('"00:10:00"', "0"))   # no limit Slurm would take
    zero = run_cli("hyperion-submit", "local", "--cfg", str(site), "--output-file", "t.log",
                   "--", "true", cwd=tmp_path, env=cli_env)
    assert zero.returncode == 2 and "minutes" not in zero.stderr and 'time: "168:00:00"' in zero.stderr


@pytest.mark.parametrize("line,field,reading", [
    ("mem: 0100", "mem", "as the octal number 64"),
    ("num_threads: 010", "num_threads", "as the octal number 8"),
    ("num_threads: 0x10", "num_threads", "as the hexadecimal number 16"),
    ("max_array_size: 0b11", "max_array_size", "as the binary number 3"),
    ("mem: 1:00", "mem", "as the base-60 number 60"),
    ("poll_interval: 1:30.5", "poll_interval", "as the base-60 number 90.5"),
    ("poll_interval: 0:30.", "poll_interval", "as the base-60 number 30.0"),
], ids=["octal-mem", "octal-threads", "hex", "binary", "base-60", "base-60-float", "base-60-float-dot"])
def test_a_site_number_yaml_reads_in_another_base_is_refused_not_changed(tmp_path, cli_env, line, field, reading):
    """YAML 1.1 reads `mem: 0100` as octal: the dry run showed --mem=64 (MB) where 100 was written,
    `num_threads: 010` asked Slurm for 8 CPUs, without a word."""
    key = line.split(":")[0]
    site = tmp_path / "site.yaml"
    site.write_text("".join(row for row in TEST_SITE.read_text().splitlines(keepends=True)
                            if not row.startswith(f"{key}:")) + line + "\n")
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(site), "--dry-run", "--output-file", "log/t.log",
                     "--", "true", cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, field)
    assert f"YAML reads {line.split(': ')[1]} " in result.stderr and reading in result.stderr
    assert "write the number in plain decimal digits" in result.stderr


@pytest.mark.parametrize("number,digits", [("0x" + "f" * 50000, 50000), ("0b" + "1" * 19, 19)],
                         ids=["hex-50000-digits", "binary-19-digits"])
def test_a_site_number_of_too_many_digits_in_another_base_names_its_field(tmp_path, cli_env, number, digits):
    """`num_threads: 0xfff...` (50000 f) was `--cfg: site.yaml cannot be read as a site file (ValueError)`:
    no field, line or reason, where 50000 decimal digits said all three."""
    site = tmp_path / "site.yaml"
    site.write_text("".join(row for row in TEST_SITE.read_text().splitlines(keepends=True)
                            if not row.startswith("num_threads:")) + f"num_threads: {number}\n")
    line = len(site.read_text().splitlines())
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(site), "--dry-run", "--output-file", "log/t.log",
                     "--", "true", cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, "num_threads")
    assert f"a number of {digits} digits (line {line}, column 14); site numbers have at most 18" in result.stderr


def _special_files(tmp_path: Path) -> dict[str, Path]:
    log = tmp_path / "log"
    log.mkdir()
    make_fifo(log / "fifo.out")
    (log / "target.txt").write_text("a file someone else keeps\n")
    (log / "link.out").symlink_to("target.txt")
    made = {"fifo": log / "fifo.out", "symlink": log / "link.out"}
    try:   # a copy of /dev/null (root only): if the check failed, the move would hit this one
        os.mknod(log / "null.out", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        made["device"] = log / "null.out"
    except PermissionError:
        pass
    return made


@pytest.mark.parametrize("backend", ["local", "slurm"])
@pytest.mark.parametrize("kind,expected", [("fifo", "FIFO"), ("symlink", "symlink"),
                                           ("device", "character device")])
def test_output_file_that_is_not_a_regular_file_is_left_where_it_is(tmp_path, cli_env, backend, kind, expected):
    """A FIFO, link or device at a log's path is refused: moved aside, root's /dev/null would be gone."""
    special = _special_files(tmp_path)
    if kind not in special:
        pytest.skip("making a device node needs root")
    before = {name: os.lstat(path) for name, path in special.items()}
    result = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), "--output-file", str(special[kind]),
                     "--", "true", cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, "--output-file")
    assert f"is a {expected}, not a regular file" in result.stderr
    after = {name: os.lstat(path) for name, path in special.items()}
    assert {n: (s.st_ino, s.st_mode) for n, s in after.items()} == \
        {n: (s.st_ino, s.st_mode) for n, s in before.items()}
    assert (tmp_path / "log" / "target.txt").read_text() == "a file someone else keeps\n"


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_a_directory_named_with_escape_codes_is_refused(tmp_path, cli_env, backend):
    """The cwd is part of every path the record keeps and every line prints: an OSC 0 there would
    retitle the terminal, and the console refuses such a record. Refused, and shown escaped."""
    run = tmp_path / "exp\x1b]0;owned\x07"
    run.mkdir()
    result = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                     "--output-file", "log/t.JOB.log", "--", "true", cwd=run, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, "--output-file")
    assert "/exp\\x1b]0;owned\\x07/log/t.JOB.log holds a control, bidi or invisible character" in result.stderr


def test_an_array_whose_later_task_log_is_a_fifo_runs_nothing(tmp_path, cli_env):
    """Checked for every task before the first runs: not found at task 3 after tasks 1 and 2 ran."""
    make_fifo(tmp_path / "log" / "t.3.out")
    result = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:3",
                     "--output-file", "log/t.JOB.out", "--", "true", cwd=tmp_path, env=cli_env, timeout=60)
    _check_rejected(result, tmp_path, "--output-file")
    assert "t.3.out is a FIFO, not a regular file" in result.stderr
    assert not (tmp_path / "log" / "t.1.out").exists()


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_output_file_that_is_an_existing_directory(tmp_path, cli_env, backend):
    (tmp_path / "exp" / "train").mkdir(parents=True)
    result = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), "--output-file", "exp/train",
                     "--", "true", cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, "--output-file")
    assert "is a directory" in result.stderr


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_output_file_where_no_directory_can_be_made_even_by_root(tmp_path, cli_env, backend):
    """access() lets root "write" /proc, whose filesystem still refuses a new directory."""
    result = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), "--output-file",
                     "/proc/hyperion-no-such-dir/t.log", "--", "true", cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, "--output-file")
    assert "/proc/hyperion-no-such-dir" in result.stderr


# --- where --cfg points (issue 13): never a hang, never an unbounded read -------------------------

SPECIAL_CFG = {
    "fifo-without-writer": lambda d: make_fifo(d / "site.yaml"),
    "sparse-1-gb": lambda d: make_sparse(d / "site.yaml"),
    "symlink-loop": lambda d: make_symlink_loop(d / "site.yaml"),
    "symlink-to-dev-zero": lambda d: (d / "site.yaml").symlink_to("/dev/zero") or d / "site.yaml",
    "directory": lambda d: (d / "site.yaml").mkdir() or d / "site.yaml",
}


@pytest.mark.parametrize("backend", ["local", "slurm"])
@pytest.mark.parametrize("kind", sorted(SPECIAL_CFG))
def test_cfg_that_is_not_a_regular_file_is_one_line_not_a_hang(tmp_path, cli_env, backend, kind):
    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir()
    site = SPECIAL_CFG[kind](cfg_dir)
    started = time.monotonic()
    result = run_cli("hyperion-submit", backend, "--cfg", str(site), "--output-file", "log/t.log", "--", "true",
                     cwd=tmp_path, env=cli_env, timeout=60)
    assert time.monotonic() - started < 20
    _check_rejected(result, tmp_path, "--cfg")


def test_cfg_from_process_substitution_still_works(tmp_path, cli_env):
    """``--cfg <(...)`` is a pipe: read once, to its end (jsonargparse gets the text, not the path)."""
    script = (f'hyperion-submit local --cfg <(cat {TEST_SITE}) --num-threads 2 --output-file log/t.log '
              '-- python3 -c "print(\'ok\')"')
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=cli_env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ok" in (tmp_path / "log" / "t.log").read_text()
    record = (tmp_path / "log" / "q" / "t.submit.json").read_text()
    assert '"num_threads": 2' in record and "/dev/fd/" in record


def test_alias_bomb_is_refused_at_once(tmp_path, cli_env):
    """Nine levels of nine aliases would expand to 387 million items (a 663 MB error after 16 s)."""
    bomb = dict(YAML_CASES_BY_ID)["alias-bomb"]
    (tmp_path / "site.yaml").write_text(bomb)
    started = time.monotonic()
    result = run_cli("hyperion-submit", "local", "--cfg", "site.yaml", "--output-file", "t.log", "--", "true",
                     cwd=tmp_path, env=cli_env, timeout=60)
    assert time.monotonic() - started < 10 and len(result.stderr) < 300
    _check_rejected(result, tmp_path, "a")


YAML_CASES_BY_ID = [(c[0], c[1]) for c in YAML_CASES]


# --- log directories that cannot be written, seen by a user without rights -------------------------

@pytest.mark.parametrize("backend", ["local", "slurm"])
@pytest.mark.parametrize("where,field_text", [
    ("ro/log/t.log", "/ro is not writable by you"),          # must create log/ under a read-only directory
    ("ro/t.log", "/ro is not writable by you"),              # the log directory itself is read-only
    ("afile/log/t.log", "/afile is not a directory"),        # a regular file is in the way
])
def test_unwritable_log_directory_is_refused_before_anything_runs(rightless_dir, backend, where, field_text):
    (rightless_dir / "ro").mkdir()
    (rightless_dir / "afile").write_text("")
    (rightless_dir / "ro").chmod(0o555)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HOME": str(rightless_dir)}
    before = sorted(rightless_dir.rglob("*"))
    result = subprocess.run(without_rights("hyperion-submit", backend, "--cfg", str(TEST_SITE), "--output-file",
                                           where, "--", "true"),
                            cwd=rightless_dir, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hyperion-submit: error: --output-file: cannot write logs in ")
    assert lines[0].endswith(field_text), lines[0]
    assert sorted(rightless_dir.rglob("*")) == before          # no record, no q/: nothing submitted


@pytest.mark.parametrize("argv", [
    ["hyperion-jobs", "list"], ["hyperion-jobs", "status", "123"], ["hyperion-checkpoint", "show", "ckpt"],
    ["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--output-file", "/tmp/none/s.log", "--dry-run", "--",
     "true"],
    ["hyperion-console", "--demo"],
    ["hyperion-shard-example", "make-input", "data/in"],
    ["hyperion-shard-example", "--input", "/nonexistent/in", "--output", "out", "--checkpoint", "ckpt",
     "--shard-index", "1", "--total-shards", "2"],
])
def test_a_working_directory_deleted_under_the_shell_is_one_line_exit_2(tmp_path, cli_env, argv):
    """list and status tracebacked in os.getcwd; hyperion-submit said 'cannot write', even a dry run;
    the README's example program blamed its argument ('DIRECTORY: cannot write data/in', '--checkpoint:
    cannot write a file')."""
    import shlex

    script = f"mkdir gone && cd gone && rmdir ../gone && exec {shlex.join(argv)}"
    result = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=cli_env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (f"{argv[0]}: error: working directory: cannot be reached (No such file or "
                             "directory): it was deleted or moved; cd to a folder that exists\n")


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_gpus_the_site_file_asks_for_are_said_to_come_from_it(tmp_path, cli_env, backend):
    """`num_gpus: 1` in a site file without default_gpu_type was said as "(--num-gpus 1)", an option
    the user never gave."""
    site = tmp_path / "site.yaml"
    site.write_text(_site(num_gpus=1, default_gpu_type=None))
    args = ["--cfg", str(site), "--output-file", "log/t.log", "--", "true"]
    result = run_cli("hyperion-submit", backend, *args, cwd=tmp_path, env=cli_env)
    _check_rejected(result, tmp_path, "default_gpu_type")
    assert "GPUs were requested (num_gpus: 1 in the site file) but " in result.stderr, result.stderr
    given = run_cli("hyperion-submit", backend, "--num-gpus", "2", *args, cwd=tmp_path, env=cli_env)
    _check_rejected(given, tmp_path, "default_gpu_type")
    assert "GPUs were requested (--num-gpus 2) but " in given.stderr, given.stderr


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_site_file_errors_name_the_file_as_typed(tmp_path, cli_env, backend):
    """An unknown key named the file resolved and then, typed as ./site.yaml, again as typed; a GPU
    policy problem found at run time named it resolved, one found at load as typed."""
    (tmp_path / "site.yaml").write_text(_site(bogus=1))
    args = ["--output-file", "log/t.log", "--", "true"]
    unknown = run_cli("hyperion-submit", backend, "--cfg", "./site.yaml", *args, cwd=tmp_path, env=cli_env)
    _check_rejected(unknown, tmp_path, "bogus")
    assert unknown.stderr.endswith(") (in the site file ./site.yaml)\n") and str(tmp_path) not in unknown.stderr
    (tmp_path / "site.yaml").write_text(_site(num_gpus=1, default_gpu_type=None))
    no_type = run_cli("hyperion-submit", backend, "--cfg", "./site.yaml", *args, cwd=tmp_path, env=cli_env)
    _check_rejected(no_type, tmp_path, "default_gpu_type")
    assert no_type.stderr.endswith(" but ./site.yaml sets no default_gpu_type\n"), no_type.stderr
    (tmp_path / "site.yaml").write_text(_site(default_gpu_type="a100"))
    undefined = run_cli("hyperion-submit", backend, "--cfg", "./site.yaml", "--num-gpus", "1", *args,
                        cwd=tmp_path, env=cli_env)
    _check_rejected(undefined, tmp_path, "default_gpu_type")
    assert undefined.stderr.endswith(" (in the site file ./site.yaml)\n"), undefined.stderr
