"""hyperion-submit as a command: help, --dry-run, and real submissions to the test cluster."""
from __future__ import annotations

import shlex
import sys

import pytest
import yaml
from conftest import TEST_SITE, run_cli

from backends.logheader import parse_ended
from backends.records.record import load_record
from backends.submit.commandline import parse_submit_argv

PY = sys.executable


def test_help_prints_usage(cli_env):
    result = run_cli("hyperion-submit", "--help", env=cli_env)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: hyperion-submit <local|slurm>")
    assert "--max-jobs-run" in result.stdout


def test_slurm_dry_run_prints_windows_and_scripts_and_touches_nothing(tmp_path, cli_env):
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--dry-run",
                     "--array", "JOB=1:2,1500", "--max-jobs-run", "2", "--output-file", "log/t.JOB.log",
                     "--", "prog", "--part", "JOB", cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    sbatch = [shlex.split(line.split(": ", 1)[1]) for line in out.splitlines() if line.startswith("sbatch argv:")]
    assert len(sbatch) == 2
    # --max-jobs-run 2 is shared by the two windows: one slot each, two in all
    assert "--array=1-2%1" in sbatch[0] and "--array=499%1" in sbatch[1]
    assert "--hold" not in sbatch[0] + sbatch[1]
    assert sbatch[0][-1] == str(tmp_path / "log" / "q" / "t.JOB.sh")
    assert sbatch[1][-1] == str(tmp_path / "log" / "q" / "t.JOB.offset1001.sh")
    assert "JOB=$(( SLURM_ARRAY_TASK_ID + 1001 ))" in out
    assert "--export=ALL" in sbatch[0] and "--partition=cpu" in sbatch[0]
    assert list(tmp_path.iterdir()) == []


def test_dry_run_holds_windows_beyond_the_shared_max_jobs_run(tmp_path, cli_env):
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--dry-run",
                     "--array", "JOB=1:3,1500,2500", "--max-jobs-run", "2", "--output-file", "log/t.JOB.log",
                     "--", "prog", "JOB", cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    sbatch = [shlex.split(line.split(": ", 1)[1]) for line in result.stdout.splitlines()
              if line.startswith("sbatch argv:")]
    assert [[a for a in argv if a.startswith("--array") or a == "--hold"] for argv in sbatch] == [
        ["--array=1-3%1"], ["--array=499%1"], ["--array=498%1", "--hold"]]
    assert "window 3/3: array 498%1, offset 2002, held until a slot frees" in result.stdout


def test_dry_run_command_line_reparses_to_the_same_options(tmp_path, cli_env):
    argv = ["slurm", "--cfg", str(TEST_SITE), "--num-threads", "3", "--mem-per-cpu", "1G",
            "--array", "JOB=1:4", "--output-file", "t.JOB.log", "--", "echo", "JOB"]
    result = run_cli("hyperion-submit", *argv[:1], "--dry-run", *argv[1:], cwd=tmp_path, env=cli_env)
    line = next(l for l in result.stdout.splitlines() if l.startswith("# command line: "))
    shown = shlex.split(line[len("# command line: "):])
    assert shown[0] == "hyperion-submit"
    assert parse_submit_argv(shown[1:]) == parse_submit_argv(argv)



def test_a_repeated_option_takes_its_last_value_as_a_recipe_override_does(tmp_path, cli_env):
    """``train_cmd="hyperion-submit slurm --cfg s.yaml --mem 4G"``, then ``$train_cmd --mem 8G ...``."""
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--mem", "100M", "--time", "5",
                     "--dry-run", "--mem", "200M", "--time", "7", "--env", "A=1", "--env", "B=2",
                     "--output-file", "t.log", "--", "true", cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    assert "--mem=200M" in result.stdout and "--mem=100M" not in result.stdout
    assert "--time=7" in result.stdout and "--time=5" not in result.stdout
    assert "A=1" in result.stdout and "B=2" in result.stdout


@pytest.mark.slurm
def test_slurm_array_failure_names_the_task_and_exits_1(slurm_cluster, tmp_path, cli_env):
    script = "import os, sys; print('value', os.environ['J' 'OB'], sys.argv[1]); sys.exit(5 if sys.argv[1] == '2' else 0)"
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:3",
                     "--output-file", "log/t.JOB.log", "--", PY, "-c", script, "JOB",
                     cwd=tmp_path, env=cli_env, timeout=120)
    assert result.returncode == 1, result.stderr
    assert str(tmp_path / "log" / "t.2.log") in result.stderr
    assert "Traceback" not in result.stderr
    record = load_record(tmp_path / "log" / "q" / "t.JOB.submit.json")
    assert record.backend == "slurm" and [t.value for t in record.tasks] == [1, 2, 3]
    for value in (1, 2, 3):
        lines = (tmp_path / "log" / f"t.{value}.log").read_text().splitlines()
        assert lines[2] == f"value {value} {value}"
        assert parse_ended(lines[-1])[0] == (5 if value == 2 else 0)


@pytest.mark.slurm
def test_slurm_windows_keep_logical_values(slurm_cluster, tmp_path, cli_env):
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1000:1002",
                     "--output-file", "t.JOB.log", "--", "echo", "task", "JOB",
                     cwd=tmp_path, env=cli_env, timeout=120)
    assert result.returncode == 0, result.stderr
    record = load_record(tmp_path / "q" / "t.JOB.submit.json")
    assert [(j.offset, j.array_expression) for j in record.jobs] == [(0, "1000"), (1001, "0-1")]
    for value in (1000, 1001, 1002):
        assert (tmp_path / f"t.{value}.log").read_text().splitlines()[2] == f"task {value}"


@pytest.mark.slurm
def test_sbatch_refusal_is_one_line_exit_1_with_script_kept(slurm_cluster, tmp_path, cli_env):
    site = yaml.safe_load(TEST_SITE.read_text())
    del site["max_array_size"]  # so the launcher does not split: Slurm refuses index 1500
    cfg = tmp_path / "site.yaml"
    cfg.write_text(yaml.safe_dump(site))
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(cfg), "--array", "JOB=1500:1501",
                     "--output-file", "t.JOB.log", "--", "true", cwd=tmp_path, env=cli_env, timeout=120)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert str(tmp_path / "q" / "t.JOB.sh") in lines[0]
    assert (tmp_path / "q" / "t.JOB.sh").exists()


@pytest.mark.parametrize("gpus, expanded", [("2", "--comment=gpus-2"), ("0", "--comment=gpus-0")])
def test_num_gpus_is_expanded_in_base_options_too(tmp_path, cli_env, gpus, expanded):
    """The contract permits its placeholder in site options; in base_options it reached sbatch as written."""
    site = yaml.safe_load(TEST_SITE.read_text())
    site["base_options"] = [*site["base_options"], "--comment=gpus-{num_gpus}"]
    site_file = tmp_path / "site.yaml"
    site_file.write_text(yaml.safe_dump(site))
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(site_file), "--dry-run", "--num-gpus", gpus,
                     "--output-file", "log/t.log", "--", "prog", cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    (argv,) = [shlex.split(line.split(": ", 1)[1]) for line in result.stdout.splitlines()
               if line.startswith("sbatch argv:")]
    assert expanded in argv and "--comment=gpus-{num_gpus}" not in argv


def test_the_command_line_a_dry_run_shows_reads_back_a_log_name_starting_with_a_dash(tmp_path, cli_env):
    """The console's form accepts --output-file=-x.JOB.log; the equivalent line it and the record show said
    "--output-file -x.JOB.log", which hyperion-submit reads as a missing value."""
    result = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--dry-run", "--array", "JOB=1:2",
                     "--output-file=-x.JOB.log", "--", "true", cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("# command line: ")]
    argv = shlex.split(line.removeprefix("# command line: "))
    assert "--output-file=-x.JOB.log" in argv
    assert parse_submit_argv(argv[1:])[1].output_file == "-x.JOB.log"


def _dry_run_argv(tmp_path, cli_env, site: dict, *args: str):
    site_file = tmp_path / "site.yaml"
    site_file.write_text(yaml.safe_dump(site))
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(site_file), "--dry-run", *args,
                     "--output-file", "log/t.log", "--", "true", cwd=tmp_path, env=cli_env)
    argv = [shlex.split(line.split(": ", 1)[1]) for line in result.stdout.splitlines()
            if line.startswith("sbatch argv:")]
    return result, argv


@pytest.mark.parametrize("base", [["--gres=lustre:1"], ["--gres", "lustre:1"], ["--gres=lustre:ost:2,scratch:1"]])
@pytest.mark.parametrize("gpus", ["0", "2"])
def test_a_generic_resource_that_is_not_a_gpu_is_site_policy(tmp_path, cli_env, base, gpus):
    """`--gres=lustre:1` in base_options was refused: 'GPU selection belongs in gpu_types'."""
    site = yaml.safe_load(TEST_SITE.read_text())
    site["base_options"] = [*site["base_options"], *base]
    site["gpu_types"] = {"v100": {"options": ["--partition=gpu", "--gpus={num_gpus}"]}}
    result, argv = _dry_run_argv(tmp_path, cli_env, site, "--num-gpus", gpus)
    assert result.returncode == 0, result.stderr
    (argv,) = argv
    start = argv.index(base[0])
    assert argv[start:start + len(base)] == base
    assert ("--gpus=2" in argv) == (gpus == "2")


@pytest.mark.parametrize("where", ["base_options", "cpu_options"])
@pytest.mark.parametrize("item", ["--gres=gpu:1", "--gres=lustre:1,gpu:v100:1", "--gres=mps:50", "--gres=GPU:1"])
def test_a_gpu_generic_resource_outside_gpu_types_is_still_refused(tmp_path, cli_env, where, item):
    site = yaml.safe_load(TEST_SITE.read_text())
    site[where] = [*site[where], item]
    result, _ = _dry_run_argv(tmp_path, cli_env, site)
    assert result.returncode == 2 and result.stderr.startswith(f"hyperion-submit: error: {where}: "), result.stderr
    assert "GPU selection belongs in gpu_types" in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_generic_resource_the_gpu_type_would_replace_is_refused_for_gpu_runs(tmp_path, cli_env):
    """sbatch keeps only its last --gres: the GPU type's --gres=gpu:v100:N would have silently dropped
    base_options' --gres=lustre:1. A CPU run (cpu_options has no --gres) keeps it."""
    site = yaml.safe_load(TEST_SITE.read_text())
    site["base_options"] = [*site["base_options"], "--gres=lustre:1"]
    result, _ = _dry_run_argv(tmp_path, cli_env, site, "--num-gpus", "1")
    assert result.returncode == 2 and not result.stdout, result.stdout
    assert result.stderr == (
        "hyperion-submit: error: base_options: '--gres=lustre:1' sets --gres and gpu_types.v100.options sets it "
        "again ('--gres=gpu:v100:{num_gpus}'); sbatch keeps only the last --gres, which would replace "
        "'--gres=lustre:1': give every generic resource in one --gres of gpu_types.v100.options, e.g. "
        f"'--gres=gpu:v100:{{num_gpus}},lustre:1' (in the site file {tmp_path / 'site.yaml'})\n")
    cpu, (argv,) = _dry_run_argv(tmp_path, cli_env, site, "--num-gpus", "0")
    assert cpu.returncode == 0 and "--gres=lustre:1" in argv, cpu.stderr
    site["base_options"].remove("--gres=lustre:1")
    site["gpu_types"]["v100"]["options"] = ["--partition=gpu", "--gres=gpu:v100:{num_gpus},lustre:1"]
    merged, (argv,) = _dry_run_argv(tmp_path, cli_env, site, "--num-gpus", "1")
    assert merged.returncode == 0 and "--gres=gpu:v100:1,lustre:1" in argv, merged.stderr


def test_two_gres_in_one_gpu_type_would_drop_the_gpus(tmp_path, cli_env):
    site = yaml.safe_load(TEST_SITE.read_text())
    site["gpu_types"]["v100"]["options"] = ["--partition=gpu", "--gres=gpu:v100:{num_gpus}", "--gres=lustre:1"]
    result, _ = _dry_run_argv(tmp_path, cli_env, site, "--num-gpus", "1")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("hyperion-submit: error: gpu_types.v100.options: '--gres=gpu:v100:{num_gpus}' "
                                    "sets --gres and that list sets it again ('--gres=lustre:1')"), result.stderr


def test_a_dry_run_of_an_output_file_that_ran_before_says_the_attempt_and_moves_nothing(tmp_path, cli_env):
    argv = ["local", "--cfg", str(TEST_SITE), "--output-file", "logs/t.log", "--", "echo", "hello"]
    first = run_cli("hyperion-submit", *argv, cwd=tmp_path, env=cli_env)
    assert first.returncode == 0, first.stderr
    files = sorted((tmp_path / "logs").rglob("*"))
    fresh = run_cli("hyperion-submit", "local", "--dry-run", *argv[1:-3], "--output-file", "other.log", "--", "true",
                    cwd=tmp_path, env=cli_env)
    assert "attempt" not in fresh.stdout
    again = run_cli("hyperion-submit", "local", "--dry-run", *argv[1:], cwd=tmp_path, env=cli_env)
    assert again.returncode == 0, again.stderr
    record = tmp_path / "logs" / "q" / "t.submit.json"
    assert (f"# attempt 2 of this --output-file (it ran before): the earlier logs it rewrites are moved to "
            f"{tmp_path / 'logs' / 'q' / 'attempts'}/ first; hyperion-jobs history {record}; "
            f"hyperion-jobs logs {record} --attempt 1\n") in again.stdout      # a plain job: no VALUE to name
    assert "\n# 1 task, run here\n" in again.stdout          # no "stopping at the first failure" of one task
    assert sorted((tmp_path / "logs").rglob("*")) == files
    assert (tmp_path / "logs" / "t.log").read_text().count("\nhello\n") == 1
