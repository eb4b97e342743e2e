"""hyperion-submit slurm against the real single-node cluster, as a user runs it.

Each test runs the console script in its own tmp_path and checks what a user
sees: the exit status, stderr, the task logs, the record and what Slurm
accounting says about the jobs.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from backends.errors import InputError
from backends.records.record import load_record

pytestmark = pytest.mark.slurm

# The task program. It gets the substituted NAME as $1 and prints it next to
# the environment's value; a file cannot be substituted, so $JOB here is the
# variable the batch script exported.
TASK = """\
#!/bin/bash
echo "value=$1 env=${JOB-unset} custom=${HYPERION_TEST_CUSTOM-unset} cuda=${CUDA_VISIBLE_DEVICES-unset}"
sleep "${2:-1}"
[ "$1" = "${3:-none}" ] && exit 3
exit 0
"""
FAKE_TORCHRUN = """\
#!/bin/bash
# Records how it was called, then runs the program like torchrun --no-python would.
printf '%s\\n' "$@" > "$TORCHRUN_DIR/args"
printf '%s' "${CUDA_VISIBLE_DEVICES-unset}" > "$TORCHRUN_DIR/cuda"
while [[ $1 == --* ]]; do shift; done
exec "$@"
"""


@pytest.fixture
def task(tmp_path: Path) -> str:
    path = tmp_path / "task.sh"
    path.write_text(TASK)
    path.chmod(0o755)
    return str(path)


def submit(site: Path, *argv: str, cwd: Path, env: dict[str, str], timeout: float = 300):
    return run_cli("hyperion-submit", "slurm", "--cfg", str(site), *argv, cwd=cwd, env=env,
                   timeout=timeout)


def sacct(job_id: str, fields: str) -> list[list[str]]:
    out = subprocess.run(["sacct", "-j", job_id, "-X", "--parsable2", "--noheader", "-o", fields],
                         capture_output=True, text=True, check=True).stdout
    return [line.split("|") for line in out.splitlines() if line]


def wait_for(predicate, timeout: float = 60, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def running_tasks(job_id: str) -> set[str]:
    out = subprocess.run(["squeue", "-j", job_id, "-r", "-h", "-o", "%i %T"],
                         capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.endswith(" RUNNING")}


def start(site: Path, *argv: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(site), *argv], cwd=cwd,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def start_array(site: Path, tmp_path: Path, env: dict[str, str], task: str, stem: str,
                seconds: str) -> tuple[subprocess.Popen[str], str]:
    """hyperion-submit of JOB=1:3 running `task`, each value sleeping `seconds` (bash arithmetic of
    the value, $1), in the background; the process and its job id once the record is there."""
    proc = start(site, "--array", "JOB=1:3", "--output-file", f"log/{stem}.JOB.log", "--",
                 "bash", "-c", f'exec "$0" "$1" "$(( {seconds} ))"', task, "JOB", cwd=tmp_path, env=env)
    record_file = tmp_path / f"log/q/{stem}.JOB.submit.json"
    try:
        wait_for(record_file.exists, what="the record")
    except AssertionError:
        proc.kill()
        raise
    return proc, load_record(record_file).jobs[0].job_id


def test_single_job_succeeds_with_log_header_footer_and_record(slurm_cluster, test_site, cli_env,
                                                                tmp_path, task):
    result = submit(test_site, "--output-file", "exp/log/one.log", "--", task, "hello", "0",
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "exp/log/one.log").read_text().splitlines()
    assert lines[0] == f"# Running: {task} hello 0"
    assert lines[1].startswith("# Started at ") and lines[1].endswith(" on vm")
    assert lines[2] == "value=hello env=unset custom=unset cuda=unset"
    assert lines[-1].startswith("# Ended (code 0) at ")
    record = load_record(tmp_path / "exp/log/q/one.submit.json")
    (job,) = record.jobs
    assert record.backend == "slurm" and job.array_expression is None
    assert Path(record.tasks[0].slurm_out) == tmp_path / f"exp/log/q/slurm-{job.job_id}.out"
    assert (tmp_path / f"exp/log/q/slurm-{job.job_id}.out").exists()
    assert (tmp_path / "exp/log/q/one.sh").read_text().startswith("#!/bin/bash\n")
    assert sacct(job.job_id, "State,ExitCode") == [["COMPLETED", "0:0"]]


def test_percent_in_the_log_directory_is_not_a_slurm_pattern(slurm_cluster, test_site, cli_env,
                                                              tmp_path, task):
    result = submit(test_site, "--array", "JOB=1:2", "--output-file", "run%a/log/t.JOB.log", "--",
                    task, "JOB", "0", cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    record = load_record(tmp_path / "run%a/log/q/t.JOB.submit.json")
    for t in record.tasks:
        assert Path(t.slurm_out).parent == tmp_path / "run%a/log/q" and Path(t.slurm_out).exists()
    assert not (tmp_path / "run1").exists()


def test_env_a_user_may_export_arrives_and_one_bash_resets_is_refused(slurm_cluster, test_site, cli_env,
                                                                      tmp_path):
    """--env SECONDS=5 (or _, RANDOM...) was exported in the bash batch script, where bash keeps its
    own value: the task got another one than the local backend gave. It is refused before anything
    is written; PATH, HOME, LANG and the user's own names reach the task as typed."""
    log = tmp_path / "log" / "e.log"
    path = f"/opt/hyperion-test-bin:{cli_env['PATH']}"
    result = submit(test_site, "--output-file", str(log), "--env", f"PATH={path}", "--env", "HOME=/tmp/h-home",
                    "--env", "LANG=C.UTF-8", "--env", "SHARDS=12", "--",
                    "sh", "-c", 'printf "%s|%s|%s|%s\n" "$PATH" "$HOME" "$LANG" "$SHARDS"',
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    assert f"\n{path}|/tmp/h-home|C.UTF-8|12\n" in log.read_text()
    for name in ("SECONDS", "_", "RANDOM", "LINENO", "BASHPID"):
        refused = submit(test_site, "--output-file", str(tmp_path / "r" / "r.log"), "--env", f"{name}=5", "--",
                         "sh", "-c", f'echo "${name}"', cwd=tmp_path, env=cli_env)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith(f"hyperion-submit: error: --env: {name} is a variable bash sets")
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert not (tmp_path / "r").exists()


def test_env_cuda_visible_devices_is_refused_and_slurm_names_still_arrive(slurm_cluster, test_site, cli_env,
                                                                          tmp_path):
    """--env CUDA_VISIBLE_DEVICES=0 was exported over the value Slurm set for the GPUs it allocated
    (the contract: the script preserves Slurm's). Refused in one line, nothing written; names of
    Slurm's own prefixes a user may set (SLURM_*, SRUN_*) still reach the task as typed."""
    refused = submit(test_site, "--num-gpus", "1", "--output-file", str(tmp_path / "r" / "r.log"),
                     "--env", "CUDA_VISIBLE_DEVICES=0", "--", "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES"',
                     cwd=tmp_path, env=cli_env)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr == ("hyperion-submit: error: --env: CUDA_VISIBLE_DEVICES is set by Slurm to the GPUs "
                              "it allocated and the batch script keeps Slurm's value; ask for GPUs with "
                              "--num-gpus\n")
    assert not (tmp_path / "r").exists()
    log = tmp_path / "log" / "s.log"
    result = submit(test_site, "--num-gpus", "1", "--output-file", str(log), "--env", "SLURM_HYPERION_TAG=a b",
                    "--env", "SRUN_CPUS_PER_TASK=1", "--",
                    "sh", "-c", 'printf "%s|%s|%s\n" "$SLURM_HYPERION_TAG" "$SRUN_CPUS_PER_TASK" "$CUDA_VISIBLE_DEVICES"',
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    shown = log.read_text().splitlines()[-2]         # the task's line, above the footer
    tag, cpus, cuda = shown.split("|")
    assert (tag, cpus) == ("a b", "1") and cuda.isdigit(), shown   # Slurm's GPU, not a typed one


def test_bytes_that_are_not_utf8_reach_the_task_as_they_were_given(slurm_cluster, test_site, cli_env, tmp_path):
    """A latin-1 file name in an argument or an --env value gave a traceback (the batch script was
    written as strict UTF-8) after the earlier log had been moved aside; local ran it. Such a byte
    in the log's path is refused before anything moves: every face shows paths as plain text."""
    log = tmp_path / "log" / "r.log"
    log.parent.mkdir()
    log.write_text("an earlier run's log\n")
    result = submit(test_site, "--output-file", str(log), "--env", os.fsdecode(b"WHO=M\xfcller"), "--",
                    "sh", "-c", 'printf "%s|%s\\n" "$1" "$WHO"', "sh", os.fsdecode(b"caf\xe9.wav"),
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    assert b"\ncaf\xe9.wav|M\xfcller\n" in log.read_bytes()
    (earlier,) = (tmp_path / "log" / "q" / "attempts").rglob("r.log")
    assert earlier.read_text() == "an earlier run's log\n"
    latin = tmp_path / os.fsdecode(b"log/r\xe9sum\xe9.log")
    refused = submit(test_site, "--output-file", str(latin), "--", "true", cwd=tmp_path, env=cli_env)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "r\\xe9sum\\xe9.log holds a control, bidi or invisible character or a byte that is not UTF-8" in refused.stderr
    assert log.read_bytes().startswith(b"# Running: sh -c")          # the last run's log was not moved


def test_the_program_is_run_never_a_builtin_or_function_of_its_name(slurm_cluster, test_site, cli_env, tmp_path):
    """bash ran `eval ...` from the command and an exported function in place of the program,
    where the local backend (execvp) runs only programs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "prep").write_text("#!/bin/sh\necho program\n")
    (bin_dir / "prep").chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}:{cli_env['PATH']}", "BASH_FUNC_prep%%": "() {  echo function\n}"}
    result = submit(test_site, "--output-file", "log/p.log", "--", "prep", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "\nprogram\n" in (tmp_path / "log/p.log").read_text()
    result = submit(test_site, "--output-file", "log/e.log", "--", "eval", f"touch {tmp_path}/evaluated",
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 1 and "exit code 127" in result.stderr, result.stderr
    assert not (tmp_path / "evaluated").exists()


def test_array_with_a_failing_task_exits_non_zero_naming_its_log(slurm_cluster, test_site,
                                                                 cli_env, tmp_path, task):
    result = submit(test_site, "--array", "JOB=1:3", "--output-file", "log/t.JOB.log", "--",
                    task, "JOB", "1", "2", cwd=tmp_path, env=cli_env)
    assert result.returncode == 1
    bad = [line for line in result.stderr.splitlines() if "FAILED" in line]
    assert len(bad) == 1, result.stderr
    assert "JOB=2" in bad[0] and "exit code 3" in bad[0]
    assert str(tmp_path / "log/t.2.log") in bad[0]
    assert str(tmp_path / "log/t.1.log") not in result.stderr
    for value in (1, 2, 3):
        text = (tmp_path / f"log/t.{value}.log").read_text()
        assert f"value={value} env={value} " in text
    assert "# Ended (code 3)" in (tmp_path / "log/t.2.log").read_text()


def test_a_task_killed_by_sigkill_is_reported_137_as_its_log_footer_says(slurm_cluster, test_site, cli_env,
                                                                       tmp_path):
    """sacct files the script's 137 as 9:0; hyperion-submit's last sacct made the report say exit code 9."""
    result = submit(test_site, "--array", "JOB=1:2", "--output-file", "log/k.JOB.log", "--", "python3", "-c",
                    "import os, sys; sys.argv[1] == '2' and os.kill(os.getpid(), 9)", "JOB",
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 1
    assert "# Ended (code 137)" in (tmp_path / "log/k.2.log").read_text()
    (bad,) = [line for line in result.stderr.splitlines() if "FAILED" in line]
    assert "JOB=2" in bad and "exit code 137" in bad, result.stderr
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log/q/k.JOB.submit.json"), env=cli_env)
    assert [line.split()[3] for line in shown.stdout.splitlines()[1:3]] == ["0", "137"]


def test_timeout_is_reported_with_the_task_log(slurm_cluster, test_site, cli_env, tmp_path, task):
    result = submit(test_site, "--time", "1", "--output-file", "log/slow.log", "--",
                    task, "x", "120", cwd=tmp_path, env=cli_env)
    assert result.returncode == 1
    assert "TIMEOUT" in result.stderr and str(tmp_path / "log/slow.log") in result.stderr


def test_a_cancelled_task_fails_the_array_and_is_named(slurm_cluster, test_site, cli_env,
                                                       tmp_path, task):
    # Value 2 sleeps long enough to be cancelled
    proc, job_id = start_array(test_site, tmp_path, cli_env, task, "c", "$1 == 2 ? 60 : 1")
    try:
        wait_for(lambda: f"{job_id}_2" in running_tasks(job_id), what="task 2 running")
        subprocess.run(["scancel", f"{job_id}_2"], check=True)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1
    (line,) = [line for line in stderr.splitlines() if "CANCELLED" in line]
    assert f"JOB=2 (job {job_id}_2)" in line and str(tmp_path / "log/c.2.log") in line


def test_ctrl_c_says_how_many_tasks_it_cancelled_not_how_many_were_submitted(slurm_cluster, test_site, cli_env,
                                                                             tmp_path, task):
    """Stopped after 1 of 3 tasks completed, it said 'cancelled job(s) J (3 task(s))'."""
    proc, job_id = start_array(test_site, tmp_path, cli_env, task, "k", "$1 == 1 ? 0 : 60")
    try:
        wait_for(lambda: sacct(job_id, "JobID,State").count([f"{job_id}_1", "COMPLETED"]), what="task 1 done")
        wait_for(lambda: len(running_tasks(job_id)) == 2, what="tasks 2 and 3 running")
        time.sleep(3)           # the wait has seen task 1 end (it polls every second or two here)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert f"hyperion-submit: interrupted; cancelled job(s) {job_id} (2 of its 3 task(s) had not ended)" in stderr, \
        stderr


def test_gpu_job_gets_gres_cuda_devices_torchrun_and_exported_env(slurm_cluster, test_site, cli_env,
                                                     tmp_path, task):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchrun").write_text(FAKE_TORCHRUN)
    (bin_dir / "torchrun").chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}:{cli_env['PATH']}", "TORCHRUN_DIR": str(tmp_path),
           "HYPERION_TEST_CUSTOM": "carried by --export=ALL"}
    result = submit(test_site, "--num-gpus", "2", "--output-file", "log/gpu.log", "--",
                    task, "train", "0", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args == ["--standalone", "--nnodes=1", "--nproc-per-node=2", task, "train", "0"]
    cuda = (tmp_path / "cuda").read_text()
    assert len(cuda.split(",")) == 2 and all(d.isdigit() for d in cuda.split(",")), cuda
    log = (tmp_path / "log/gpu.log").read_text()
    assert f"custom=carried by --export=ALL cuda={cuda}" in log
    job_id = load_record(tmp_path / "log/q/gpu.submit.json").jobs[0].job_id
    # Accounting drops the GPU type; the controller still shows the job (MinJobAge 300 s).
    shown = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True).stdout.split()
    assert "Partition=gpu" in shown and "TresPerNode=gres:gpu:v100:2" in shown


def test_the_torchrun_prefix_is_never_substituted(slurm_cluster, test_site, cli_env, tmp_path, task):
    """An array NAME found inside the prefix's words ("nodes" in --nnodes, --nproc-per-node) turned them
    into --n1=1 and --nproc-per-1: NAME is substituted in the command's arguments only."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchrun").write_text(FAKE_TORCHRUN)
    (bin_dir / "torchrun").chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}:{cli_env['PATH']}", "TORCHRUN_DIR": str(tmp_path)}
    result = submit(test_site, "--num-gpus", "2", "--array", "nodes=1:1", "--output-file", "log/g.nodes.log",
                    "--", task, "nodes", "0", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args == ["--standalone", "--nnodes=1", "--nproc-per-node=2", task, "1", "0"]
    log = (tmp_path / "log" / "g.1.log").read_text()
    assert log.startswith(f"# Running: torchrun --standalone --nnodes=1 --nproc-per-node=2 {task} 1 0\n")


def test_a_chdir_in_base_options_keeps_the_log_where_it_was_asked(slurm_cluster, test_site, cli_env, tmp_path):
    """--chdir is a site policy option the contract allows; the script wrote a relative log path, so the
    log went under the --chdir directory and the run said "the log is missing"."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    site = yaml.safe_load(test_site.read_text())
    site["base_options"] = [*site["base_options"], f"--chdir={elsewhere}"]
    site_file = tmp_path / "site.yaml"
    site_file.write_text(yaml.safe_dump(site))
    result = submit(site_file, "--array", "JOB=1:2", "--output-file", "log/c.JOB.log", "--", "pwd",
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    for value in (1, 2):
        assert (tmp_path / "log" / f"c.{value}.log").read_text().splitlines()[2] == str(elsewhere)
    assert not (elsewhere / "log").exists()


def test_a_constraint_expression_in_the_site_file_reaches_slurm(slurm_cluster, test_site, cli_env, tmp_path):
    """A site asking for "v100 or a100 nodes" was refused as a shell fragment; Slurm reads | as OR."""
    site = yaml.safe_load(test_site.read_text())
    site["base_options"] = [*site["base_options"], "--constraint=(v100|ib)&ib"]
    site_file = tmp_path / "site.yaml"
    site_file.write_text(yaml.safe_dump(site))
    result = submit(site_file, "--output-file", "log/c.log", "--", "hostname", cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    (job,) = load_record(tmp_path / "log" / "q" / "c.submit.json").jobs
    shown = subprocess.run(["scontrol", "show", "job", job.job_id], capture_output=True, text=True).stdout
    assert "Features=(v100|ib)&ib" in shown, shown


def test_sbatch_variables_of_the_users_shell_do_not_change_the_job(slurm_cluster, test_site, cli_env, tmp_path):
    """SBATCH_ARRAY_INX and SBATCH_GRES in the environment made a one-task CPU job an array of three
    tasks with a GPU each, all writing one log, and the record knew of one task."""
    env = {**cli_env, "SBATCH_ARRAY_INX": "1-3", "SBATCH_GRES": "gpu:v100:1", "SBATCH_TIMELIMIT": "1",
           "SBATCH_NO_REQUEUE": "1"}     # not an option hyperion-submit owns: sbatch still reads it
    result = submit(test_site, "--output-file", "log/e.log", "--", "bash", "-c", "echo task=${SLURM_ARRAY_TASK_ID-none}",
                    cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        "hyperion-submit: not passing SBATCH_ARRAY_INX, SBATCH_GRES, SBATCH_TIMELIMIT from the environment to "
        "sbatch: hyperion-submit sets the array, logs, memory, time and GPUs itself")
    (job,) = load_record(tmp_path / "log" / "q" / "e.submit.json").jobs
    ((job_id, tres),) = sacct(job.job_id, "JobID,AllocTRES")   # one job, no array
    assert job_id == job.job_id and "gres/gpu" not in tres, tres
    shown = subprocess.run(["scontrol", "show", "job", job.job_id], capture_output=True, text=True).stdout
    assert "TimeLimit=00:10:00" in shown and "Requeue=0" in shown, shown
    assert (tmp_path / "log" / "e.log").read_text().splitlines()[2] == "task=none"


def test_a_log_the_task_removes_fails_the_run_and_is_not_made_again(slurm_cluster, test_site, cli_env, tmp_path):
    """The footer's >> made the log again with the footer alone, so the wait found a log and said 0."""
    result = submit(test_site, "--output-file", "log/r.log", "--", "bash", "-c", "echo hi; rm -f log/r.log",
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 1
    assert "COMPLETED but the log is missing" in result.stderr and str(tmp_path / "log" / "r.log") in result.stderr
    # counted as what Slurm said, the missing log apart (it read `did not succeed (no-log 1)`)
    assert result.stderr.splitlines()[-1].startswith(
        "hyperion-submit: 1 of 1 task(s) did not succeed (completed 1; 1 completed task's log is missing); ")
    assert not (tmp_path / "log" / "r.log").exists()


def test_max_jobs_run_limits_concurrent_tasks(slurm_cluster, test_site, cli_env, tmp_path, task):
    result = submit(test_site, "--array", "JOB=1:6", "--max-jobs-run", "2",
                    "--output-file", "log/m.JOB.log", "--", task, "JOB", "3",
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    record = load_record(tmp_path / "log/q/m.JOB.submit.json")
    assert record.jobs[0].array_expression == "1-6%2"
    # hyperion-submit may learn the end from squeue before sacct has every task's row.
    rows = wait_for(lambda: (found := sacct(record.jobs[0].job_id, "JobID,State,Start,End"))
                    and len(found) == 6 and found, timeout=30, what="six sacct rows")
    assert {r[1] for r in rows} == {"COMPLETED"}
    spans = [(datetime.fromisoformat(r[2]), datetime.fromisoformat(r[3])) for r in rows]
    # Whole seconds: a task that starts in the second another ends does not overlap it.
    most = max(sum(1 for s, e in spans if s <= moment < e) for moment, _ in spans)
    assert most <= 2


def test_array_beyond_max_array_size_is_windowed_with_offsets(slurm_cluster, test_site, cli_env,
                                                              tmp_path, task):
    site_file = _site_with(tmp_path, test_site, max_array_size=1001)
    result = submit(site_file, "--array", "JOB=999:1003", "--output-file", "log/w.JOB.log",
                    "--", task, "JOB", "0", cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    record = load_record(tmp_path / "log/q/w.JOB.submit.json")
    assert [(j.offset, j.array_expression) for j in record.jobs] == [(0, "999-1000"), (1001, "0-2")]
    assert [(t.value, t.array_task_id) for t in record.tasks] == [
        (999, 999), (1000, 1000), (1001, 0), (1002, 1), (1003, 2)]
    for value in range(999, 1004):
        assert f"value={value} env={value} " in (tmp_path / f"log/w.{value}.log").read_text()
    assert (tmp_path / "log/q/w.JOB.offset1001.sh").exists()


def _site_with(tmp_path: Path, test_site: Path, **changes) -> Path:
    site = {**yaml.safe_load(test_site.read_text()), **changes}
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(site))
    return path


def test_refused_submission_says_why_keeps_the_script_and_writes_no_record(
        slurm_cluster, test_site, cli_env, tmp_path, task):
    site = _site_with(tmp_path, test_site, cpu_options=["--partition=nosuch"])
    result = submit(site, "--output-file", "log/r.log", "--", task, "x", "0", cwd=tmp_path, env=cli_env)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert "sbatch failed" in line and "invalid partition" in line.lower()
    assert f"script kept at {tmp_path / 'log/q/r.sh'}" in line
    assert (tmp_path / "log/q/r.sh").exists()
    assert not (tmp_path / "log/q/r.submit.json").exists()


def test_an_array_reaching_the_clusters_max_array_size_names_the_site_key_that_splits_it(
        slurm_cluster, test_site, cli_env, tmp_path, task):
    """A site file without max_array_size and values reaching the cluster's MaxArraySize (1001): the
    user saw only sbatch's "Invalid job array specification". Now the one line also says the
    cluster's limit and the key to set; exit status, kept script and no record as before."""
    site_text = {k: v for k, v in yaml.safe_load(test_site.read_text()).items() if k != "max_array_size"}
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf/x.yaml").write_text(yaml.safe_dump(site_text))
    result = run_cli("hyperion-submit", "slurm", "--cfg", "conf/x.yaml", "--array", "JOB=1000:1002",
                     "--output-file", "log/m.JOB.log", "--", task, "JOB", "0", cwd=tmp_path, env=cli_env)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        f"hyperion-submit: error: sbatch failed (exit 1): sbatch: error: Batch job submission failed: "
        f"Invalid job array specification; script kept at {tmp_path / 'log/q/m.JOB.sh'}; the cluster's "
        f"MaxArraySize is 1001 (scontrol show config): set max_array_size: 1001 in conf/x.yaml to split "
        f"the values into windows\n")
    assert (tmp_path / "log/q/m.JOB.sh").exists()
    assert not (tmp_path / "log/q/m.JOB.submit.json").exists()


def test_what_a_successful_sbatch_warns_is_shown_once_per_call_escaped(slurm_cluster, test_site, cli_env,
                                                                      tmp_path, task):
    """An sbatch that queued the job but warned on stderr (an option ignored, a limit lowered): the
    warning was dropped and the job ran other than asked without a word. Now each call's warning is
    shown once, naming its job, its control characters escaped. The site's sbatch_command is a
    wrapper that warns and runs the real sbatch."""
    wrapper = tmp_path / "warning-sbatch"
    wrapper.write_text("#!/bin/bash\nprintf 'sbatch: warning: \\033]0;owned\\007memory lowered\\n' >&2\n"
                       'exec sbatch "$@"\n')
    wrapper.chmod(0o755)
    site = _site_with(tmp_path, test_site, sbatch_command=str(wrapper))
    result = submit(site, "--array", "JOB=5,1005", "--output-file", "log/v.JOB.log", "--", task, "JOB", "0",
                    cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    jobs = [job.job_id for job in load_record(tmp_path / "log/q/v.JOB.submit.json").jobs]
    assert len(jobs) == 2            # two windows: max_array_size 1001
    said = [line for line in result.stderr.splitlines() if "warning" in line]
    assert said == [f"hyperion-submit: sbatch said of job {job}: sbatch: warning: \\x1b]0;owned\\x07memory lowered"
                    for job in jobs]
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr


def test_a_mistyped_sbatch_command_names_the_site_key_and_file(test_site, cli_env, tmp_path, task):
    """`sbatch_command: sbach` said only `sbatch command not found: sbach`: the user looked for a
    program, not for the key of their site file that names it."""
    site = _site_with(tmp_path, test_site, sbatch_command="sbach-not-installed")
    result = submit(site, "--output-file", "log/m.log", "--", task, "1", "0", cwd=tmp_path, env=cli_env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (f"sbatch command not found: sbach-not-installed (the site key sbatch_command in {site}); "
            "script kept at") in result.stderr
    assert not (tmp_path / "log/q/m.submit.json").exists()


def _but_accounting_lag(stderr: str) -> str:
    """What status said on stderr but the line on accounting not having a task's usage yet (a task
    that ended a moment ago: said or not, as slurmdbd keeps up)."""
    return "".join(line for line in stderr.splitlines(keepends=True)
                   if not line.startswith("hyperion-jobs: Slurm's accounting has not given the usage"))


def test_a_refused_later_window_keeps_and_records_the_earlier_ones_and_a_retry_submits_the_rest(
        slurm_cluster, test_site, cli_env, tmp_path, task):
    """sbatch refusing window 2 after window 1 went in: the scripts were written, window 1 was
    cancelled (or, cancelled too late, ran) and no record was saved, so status, watch, retry and
    the console knew nothing of it. Now window 1 runs and is recorded, the refusal is said with
    the values left out, and the retry it names submits them."""
    # With max_array_size above the cluster's MaxArraySize (1001), value 2999 goes to
    # offset 1500 with physical index 1499, which Slurm refuses; value 5 was queued first.
    site = _site_with(tmp_path, test_site, max_array_size=1500)
    record = tmp_path / "log/q/l.JOB.submit.json"
    result = submit(site, "--array", "JOB=5,2999", "--output-file", "log/l.JOB.log", "--",
                    task, "JOB", "1", cwd=tmp_path, env=cli_env)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert record.exists()
    job = load_record(record).jobs[0].job_id
    retry = f"hyperion-jobs retry {record}"
    advice = ("; the cluster's MaxArraySize is 1001 (scontrol show config): set max_array_size: 1001 in "
              f"{site} to split the values into windows")
    assert lines[0] == (f"hyperion-submit: error: sbatch failed (exit 1): sbatch: error: Batch job submission failed: "
                        f"Invalid job array specification; script kept at {tmp_path / 'log/q/l.JOB.offset1500.sh'}"
                        f"{advice}; JOB=2999 not submitted; JOB=5 (job(s) {job}) submitted and recorded in {record}; "
                        f"once they end, submit JOB=2999 with: {retry}")
    assert lines[-1] == f"hyperion-submit: JOB=2999 not submitted (sbatch refused it, above); submit them with: {retry}"
    saved = load_record(record)
    assert [t.value for t in saved.tasks] == [5] and saved.unsubmitted == (2999,)
    assert saved.options["array"]["values"] == [5]
    assert "value=5 env=5 " in (tmp_path / "log/l.5.log").read_text()
    assert sacct(job, "State") == [["COMPLETED"]]

    status = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
    assert status.returncode == 0 and "COMPLETED" in status.stdout, status.stderr
    told = (f"hyperion-jobs: JOB=2999 of attempt 1 not submitted: sbatch failed (exit 1): sbatch: error: Batch job "
            f"submission failed: Invalid job array specification; script kept at "
            f"{tmp_path / 'log/q/l.JOB.offset1500.sh'}{advice}; submit them with: {retry}\n")
    assert _but_accounting_lag(status.stderr) == told
    watch = run_cli("hyperion-jobs", "watch", str(record), env=cli_env)   # the record's reattach command
    assert watch.returncode == 1 and watch.stderr == told, watch.stderr
    assert json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)[
        "unsubmitted"] == [2999]

    # a retry that leaves them out (of value 5 alone) does not make them forgotten
    rerun = run_cli("hyperion-jobs", "retry", str(record), "--values", "5", "--yes", env=cli_env, cwd=tmp_path)
    assert rerun.returncode == 0 and "(values 5)" in rerun.stderr, rerun.stderr
    assert load_record(record).attempt == 2
    status = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
    assert status.returncode == 0 and _but_accounting_lag(status.stderr) == told, status.stderr

    site.write_text(site.read_text().replace("max_array_size: 1500", "max_array_size: 1001"))   # the site fixed
    again = run_cli("hyperion-jobs", "retry", str(record), "--yes", env=cli_env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "retrying 1 task(s)" in again.stderr and "(values 2999)" in again.stderr
    assert "value=2999 env=2999 " in (tmp_path / "log/l.2999.log").read_text()
    after = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
    assert after.returncode == 0 and _but_accounting_lag(after.stderr) == "" and "2 tasks: COMPLETED 2" in after.stdout, \
        after


def test_a_refused_later_window_with_a_failed_task_names_the_retry_as_submitting_the_rest_too(
        slurm_cluster, test_site, cli_env, tmp_path, task):
    """Value 5 failed and 2999's window was refused: the line said `rerun only those with: hyperion-jobs
    retry RECORD`, but that retry submits 2999 too. Now it says so."""
    site = _site_with(tmp_path, test_site, max_array_size=1500)
    record = tmp_path / "log/q/l.JOB.submit.json"
    result = submit(site, "--array", "JOB=5,2999", "--output-file", "log/l.JOB.log", "--",
                    task, "JOB", "0", "5", cwd=tmp_path, env=cli_env)
    assert result.returncode == 1, result.stderr
    retry = f"hyperion-jobs retry {record}"
    assert result.stderr.splitlines()[-2:] == [
        f"hyperion-submit: 1 of 1 task(s) did not succeed (failed 1); rerun those and submit JOB=2999 "
        f"(not submitted, below) with: {retry}",
        f"hyperion-submit: JOB=2999 not submitted (sbatch refused it, above); submit them with: {retry}"]
    # a retry refused the same way names both values: the plain command reruns every value still failing
    again = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
    assert again.returncode == 1, again.stderr
    assert (f"hyperion-submit: 1 of 1 task(s) did not succeed (failed 1); rerun those and submit JOB=2999 "
            f"(not submitted, below) with: {retry} --values 5,2999") in again.stderr.splitlines(), again.stderr
    assert again.stderr.splitlines()[-1] == (f"hyperion-submit: JOB=2999 not submitted (sbatch refused it, above); "
                                             f"submit them with: {retry} --values 2999"), again.stderr


KILLED_AT = {   # the sbatch wrapper's body after counting its call n: where hyperion-submit is killed
    "before-window-3": 'if [ $n -ge 3 ]; then kill -9 $PPID; sleep 5; exit 1; fi\nexec sbatch "$@"\n',
    "window-2-answered": 'sbatch "$@"; rc=$?\nif [ $n -ge 2 ]; then kill -9 $PPID; sleep 5; fi\nexit $rc\n',
}


@pytest.mark.parametrize("killed_at", KILLED_AT)
def test_a_submission_killed_between_windows_leaves_no_job_to_run_unseen_under_a_new_attempt(
        slurm_cluster, test_site, cli_env, tmp_path, task, killed_at):
    """kill -9 between windows, before the record is written: the queued jobs ran unseen, and the next
    attempt was let in on top of them (their logs truncating its own). They are found by their batch
    scripts: the rerun is refused naming them, until they end or are cancelled."""
    counter, wrapper = tmp_path / "sbatch-calls", tmp_path / "sbatch-then-killed"
    wrapper.write_text(f"#!/bin/sh\nn=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 )); echo $n > {counter}\n"
                       + KILLED_AT[killed_at])
    wrapper.chmod(0o755)
    site = _site_with(tmp_path, test_site, max_array_size=5, sbatch_command=str(wrapper))
    killed = submit(site, "--array", "JOB=1:12", "--output-file", "log/k.JOB.log", "--", task, "JOB", "60",
                    cwd=tmp_path, env=cli_env)
    assert killed.returncode == -9, killed.stderr
    listed = subprocess.run(["squeue", "-h", "-n", "k.JOB", "-o", "%F|%o"], capture_output=True, text=True).stdout
    live = sorted({job for job, _, script in (line.partition("|") for line in listed.splitlines())
                   if script.startswith(str(tmp_path))}, key=int)
    try:
        assert len(live) == 2                                             # both windows queued
        assert not (tmp_path / "log/q/k.JOB.submit.json").exists()
        again = submit(test_site, "--array", "JOB=1:12", "--output-file", "log/k.JOB.log", "--", task, "JOB", "0",
                       cwd=tmp_path, env=cli_env)
        assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
        assert f"Slurm still runs job(s) {', '.join(live)} from a batch script of" in again.stderr
        assert not (tmp_path / "log/q/k.JOB.submit.json").exists()
    finally:
        subprocess.run(["scancel", *live])


def test_a_job_only_completing_after_a_cancel_does_not_hold_the_pattern(slurm_cluster, test_site, cli_env,
                                                                        tmp_path):
    """Cancel, then retry at once: squeue still lists the cancelled job as COMPLETING (its task traps
    SIGTERM), and the retry was refused as if a job no record knew still ran."""
    from backends.attempt import refuse_unrecorded_jobs

    proc = start(test_site, "--array", "JOB=1:2", "--output-file", "log/c.JOB.log", "--",
                 "bash", "-c", "trap 'sleep 20' TERM; echo armed; sleep 300 & wait", cwd=tmp_path, env=cli_env)
    record = tmp_path / "log/q/c.JOB.submit.json"
    try:
        wait_for(record.exists, what="the record")
        job = load_record(record).jobs[0].job_id
        wait_for(lambda: running_tasks(job), what="a running task")
        # RUNNING in squeue before bash has set its trap (a loaded node): the cancel's SIGTERM then
        # ended it at once, never COMPLETING (CI failed so once)
        wait_for(lambda: any("armed" in log.read_text(errors="replace").splitlines() for log in (tmp_path / "log").glob("c.*.log")),
                 what="the task's trap")
        with pytest.raises(InputError) as refused:          # running: it holds the pattern
            refuse_unrecorded_jobs(record, windowed=True)
        assert f"Slurm still runs job(s) {job} " in refused.value.problem
        cancelled = run_cli("hyperion-jobs", "cancel", str(record), "--yes", env=cli_env)
        assert cancelled.returncode == 0, cancelled.stderr
        wait_for(lambda: "COMPLETING" in subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True,
                                                        text=True).stdout, what="COMPLETING")
        refuse_unrecorded_jobs(record, windowed=True)
    finally:
        subprocess.run(["scancel", load_record(record).jobs[0].job_id]) if record.exists() else None
        proc.kill()
        proc.communicate()


def test_a_job_sbatch_queued_without_answering_in_time_is_found_and_cancelled(
        slurm_cluster, test_site, tmp_path, monkeypatch):
    """A busy controller: sbatch queued the job and answered after the timeout. The submission failed,
    but the job ran unseen, writing the pattern's logs; it is now found by its script and cancelled."""
    from backends import launch_slurm
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan
    from backends.submit.slurm import sbatch as sbatch_module
    from backends.submit.slurm.sbatch import SubmitError

    wrapper = tmp_path / "slow-sbatch"
    wrapper.write_text('#!/bin/sh\nsbatch "$@"\nexec sleep 30\n')
    wrapper.chmod(0o755)
    site = _site_with(tmp_path, test_site, sbatch_command=str(wrapper))
    monkeypatch.setattr(sbatch_module, "SBATCH_TIMEOUT", 3.0)
    monkeypatch.chdir(tmp_path)
    plan = build_plan(*parse_submit_argv(["slurm", "--cfg", str(site), "--array", "JOB=1:2", "--output-file",
                                          "log/late.JOB.log", "--", "sleep", "60"]))
    with pytest.raises(SubmitError) as refused:
        launch_slurm.submit(plan)
    said = str(refused.value)
    assert "did not answer within 3 s" in said and "cancelled the job it queued all the same: " in said, said
    job = said.rsplit(": ", 1)[1].strip()
    assert wait_for(lambda: (rows := sacct(job, "State")) and rows[0][0].startswith("CANCELLED"),
                    timeout=30, what="the late job CANCELLED")


def _late_rerun_plan(tmp_path: Path, test_site: Path, cli_env: dict, monkeypatch, tools: Path):
    """Attempt 1 of `log/late.log` ran; the plan of attempt 2, whose sbatch is `tools/slow-sbatch`
    (it answers after the 3 s timeout), with `tools` (made executable) first on PATH."""
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan
    from backends.submit.slurm import sbatch as sbatch_module

    first = run_cli("hyperion-submit", "slurm", "--cfg", str(test_site), "--output-file", "log/late.log", "--",
                    "true", cwd=tmp_path, env=cli_env, timeout=300)
    assert first.returncode == 0, first.stderr
    for tool in tools.iterdir():
        tool.chmod(0o755)
    site = _site_with(tmp_path, test_site, sbatch_command=str(tools / "slow-sbatch"))
    monkeypatch.setattr(sbatch_module, "SBATCH_TIMEOUT", 3.0)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    return build_plan(*parse_submit_argv(["slurm", "--cfg", str(site), "--output-file", "log/late.log", "--",
                                          "sleep", "60"]))


def test_a_late_job_scancel_refuses_is_not_said_to_be_unsubmitted(slurm_cluster, test_site, tmp_path, cli_env,
                                                                   monkeypatch):
    """A rerun whose sbatch queued the job and answered after the timeout, and scancel of that job
    failed: the user read `could not cancel ...` and then `nothing was submitted, so there is no
    attempt 2` while the job was queued, to write this --output-file's logs. Both lines now say the
    job may run and how to see and cancel it; the exit status stays 1."""
    import io

    from backends import launch_slurm

    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "slow-sbatch").write_text('#!/bin/sh\nsbatch "$@"\nexec sleep 30\n')
    (tools / "scancel").write_text('#!/bin/sh\necho "scancel: error: Kill job error on job id $1: Access/permission '
                                   'denied" >&2\nexit 1\n')
    plan = _late_rerun_plan(tmp_path, test_site, cli_env, monkeypatch, tools)
    err = io.StringIO()
    try:
        assert launch_slurm.run_slurm(plan, err=err) == 1
        lines = err.getvalue().splitlines()
        record = tmp_path / "log/q/late.submit.json"
        assert len(lines) == 3 and lines[0].startswith("hyperion-submit: attempt 2 of this --output-file"), lines
        job = lines[1].rsplit(" ", 1)[1].rstrip(")")
        assert lines[1].startswith(f"hyperion-submit: error: {tools / 'slow-sbatch'} did not answer within 3 s; "
                                   f"script kept at {tmp_path / 'log/q/late.sh'}; "), lines
        assert lines[1].endswith(f"; could not cancel the job it queued all the same ({job}): scancel: error: Kill "
                                 f"job error on job id {job}: Access/permission denied; it may run (see them with: "
                                 f"squeue --me -j {job}; cancel them with: scancel {job})"), lines
        assert lines[2] == (f"hyperion-submit: no attempt 2 is recorded, but job(s) {job} that sbatch queued all the "
                            f"same could not be cancelled: they may run, writing this --output-file's logs (see them "
                            f"with: squeue --me -j {job}; cancel them with: scancel {job}): the earlier logs stay in "
                            f"{record.parent / 'attempts'}/ (hyperion-jobs history {record}; hyperion-jobs logs "
                            f"{record} --attempt 1)"), lines
        assert "nothing was submitted" not in err.getvalue()
        queued = subprocess.run(["squeue", "-h", "-j", job, "-o", "%o"], capture_output=True, text=True).stdout
        assert queued.strip() == str(tmp_path / "log/q/late.sh")                  # it is queued indeed
    finally:
        listed = subprocess.run(["squeue", "--me", "-h", "-o", "%F|%o"], capture_output=True, text=True).stdout
        mine = {job for job, _, script in (line.partition("|") for line in listed.splitlines())
                if script.startswith(str(tmp_path))}
        if mine:
            subprocess.run(["/usr/bin/scancel", *mine], check=False)


def test_a_late_job_squeue_cannot_look_for_is_not_said_to_be_unsubmitted(slurm_cluster, test_site, tmp_path, cli_env,
                                                                       monkeypatch):
    """A rerun whose sbatch queued the job and answered after the timeout, and the squeue that looks for
    that job by its script failed too: the user read only the timeout and then `nothing was submitted,
    so there is no attempt 2` while the job was queued to write this --output-file's logs. Now the
    error says whether a job was queued cannot be told and why, how to check, and what the next
    submission does; the next line says no attempt is recorded though a job may be queued; exit 1.
    The next submission, squeue answering, is refused naming the job, as the line says."""
    import io

    from backends import launch_slurm

    tools, down = tmp_path / "bin", tmp_path / "down"
    tools.mkdir()
    # squeue fails only once sbatch has queued the job: the checks before it answer as usual
    (tools / "slow-sbatch").write_text(f'#!/bin/sh\nsbatch "$@"\ntouch {shlex.quote(str(down))}\nexec sleep 30\n')
    (tools / "squeue").write_text(f"#!/bin/sh\nif [ -e {shlex.quote(str(down))} ]; then echo 'squeue: error: Unable to contact "
                                  f"slurm controller (connect failure)' >&2; exit 1; fi\n"
                                  f'exec {shutil.which("squeue")} "$@"\n')
    plan = _late_rerun_plan(tmp_path, test_site, cli_env, monkeypatch, tools)
    err = io.StringIO()
    script = tmp_path / "log/q/late.sh"
    record = tmp_path / "log/q/late.submit.json"
    try:
        assert launch_slurm.run_slurm(plan, err=err) == 1
        lines = err.getvalue().splitlines()
        assert len(lines) == 3 and lines[0].startswith("hyperion-submit: attempt 2 of this --output-file"), lines
        assert lines[1] == (f"hyperion-submit: error: {tools / 'slow-sbatch'} did not answer within 3 s; script kept "
                            f"at {script}; whether it queued a job all the same cannot be told: squeue failed (rc 1): "
                            "squeue: error: Unable to contact slurm controller (connect failure); check with: squeue "
                            f"--me -o '%i %o' (a job whose command is {script} is it; scancel it if it should not "
                            "run); the next submission to this --output-file looks for such a job first and refuses "
                            "while one runs"), lines
        assert lines[2] == ("hyperion-submit: no attempt 2 is recorded, though sbatch may have queued a job all the "
                            "same, which would write this --output-file's logs (see the line above): the earlier logs "
                            f"stay in {record.parent / 'attempts'}/ (hyperion-jobs history {record}; hyperion-jobs "
                            f"logs {record} --attempt 1)"), lines
        assert "nothing was submitted" not in err.getvalue()
        listed = subprocess.run(["/usr/bin/squeue", "--me", "-h", "-o", "%F|%o"], capture_output=True,
                                text=True, check=False).stdout
        queued = [job for job, _, command in (line.partition("|") for line in listed.splitlines())
                  if command == str(script)]
        assert len(queued) == 1, listed                                   # a job was queued indeed
        down.unlink()
        again = run_cli("hyperion-submit", "slurm", "--cfg", str(test_site), "--output-file", "log/late.log", "--",
                        "true", cwd=tmp_path, env=cli_env, timeout=120)
        assert again.returncode == 2 and f"Slurm still runs job(s) {queued[0]} from a batch script" in again.stderr, \
            again.stderr
    finally:
        listed = subprocess.run(["/usr/bin/squeue", "--me", "-h", "-o", "%F|%o"], capture_output=True,
                                text=True, check=False).stdout
        mine = {job for job, _, command in (line.partition("|") for line in listed.splitlines())
                if command.startswith(str(tmp_path))}
        if mine:
            subprocess.run(["/usr/bin/scancel", *mine], check=False)


def test_an_sbatch_that_queues_the_job_then_prints_without_end_is_cut_and_its_job_cancelled(
        slurm_cluster, test_site, tmp_path, monkeypatch):
    """A site's sbatch wrapper queued the job, then a logger it started printed for ever: every byte
    was kept in memory until the 120 s timeout. Now 64 MiB at most is read, the wrapper's group is
    killed, and the job it queued is found by its script and cancelled, as after a timeout."""
    import resource

    from backends import launch_slurm
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan
    from backends.submit.slurm.sbatch import SubmitError

    wrapper = tmp_path / "chatty-sbatch"
    wrapper.write_text('#!/bin/sh\nsbatch "$@"\nexec yes "sbatch: debug: still here"\n')
    wrapper.chmod(0o755)
    site = _site_with(tmp_path, test_site, sbatch_command=str(wrapper))
    monkeypatch.chdir(tmp_path)
    plan = build_plan(*parse_submit_argv(["slurm", "--cfg", str(site), "--array", "JOB=1:2", "--output-file",
                                          "log/chatty.JOB.log", "--", "sleep", "60"]))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    with pytest.raises(SubmitError) as refused:
        launch_slurm.submit(plan)
    said = str(refused.value)
    assert time.monotonic() - started < 60
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 300
    assert f"{wrapper} printed more than 64 MiB, not read; script kept at " in said, said
    assert "cancelled the job it queued all the same: " in said, said
    job = said.rsplit(": ", 1)[1].strip()
    assert wait_for(lambda: (rows := sacct(job, "State")) and rows[0][0].startswith("CANCELLED"),
                    timeout=30, what="the chatty wrapper's job CANCELLED")


def test_a_refusal_of_thousands_of_lines_is_told_in_one_bounded_line(slurm_cluster, test_site, tmp_path, cli_env):
    """An sbatch wrapper that refused with a 5000-line error (a site's prolog dumping its config):
    all of it was joined into one error line of 150 kB."""
    wrapper = tmp_path / "refusing-sbatch"
    wrapper.write_text('#!/bin/sh\nfor i in $(seq 5000); do echo "sbatch: error: site check $i failed" >&2; done\n'
                       'exit 1\n')
    wrapper.chmod(0o755)
    site = _site_with(tmp_path, test_site, sbatch_command=str(wrapper))
    done = run_cli("hyperion-submit", "slurm", "--cfg", str(site), "--array", "JOB=1:2", "--output-file",
                   "log/r.JOB.log", "--", "true", cwd=tmp_path, env=cli_env)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 2600, (len(lines), len(lines[0]))
    assert "sbatch failed (exit 1): sbatch: error: site check 1 failed | sbatch: error: site check 2 failed" in lines[0]
    assert "characters); script kept at " in lines[0], lines[0]


@pytest.mark.parametrize("signum, status, why", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 130, "interrupted"),
                                                (signal.SIGQUIT, 131, "quit")],   # Ctrl-\\: was a core dump
                         ids=["SIGINT", "SIGTERM", "SIGQUIT"])
def test_signal_while_waiting_cancels_the_job_and_exits_130(slurm_cluster, test_site, cli_env,
                                                            tmp_path, task, signum, status, why):
    proc = start(test_site, "--array", "JOB=1:2", "--output-file", "log/i.JOB.log", "--",
                 task, "JOB", "60", cwd=tmp_path, env=cli_env)
    try:
        record_file = tmp_path / "log/q/i.JOB.submit.json"
        wait_for(record_file.exists, what="the record")
        job_id = load_record(record_file).jobs[0].job_id
        wait_for(lambda: running_tasks(job_id), what="a running task")
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == status
    assert f"hyperion-submit: {why}; cancelled job(s) {job_id}" in stderr
    states = wait_for(lambda: (rows := sacct(job_id, "JobID,State")) and len(rows) == 2
                      and all(r[1].startswith("CANCELLED") for r in rows) and rows,
                      timeout=30, what="CANCELLED in sacct")
    assert {r[0] for r in states} == {f"{job_id}_1", f"{job_id}_2"}


@pytest.mark.parametrize("umask,script_mode,file_mode", [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600)])
def test_batch_script_and_record_follow_the_umask(slurm_cluster, test_site, cli_env, tmp_path, task,
                                                  umask, script_mode, file_mode):
    """Both hold --env values: under umask 077 no other user may read them (the script was 0755 always)."""
    script = tmp_path / "exp/log/q/one.sh"
    script.parent.mkdir(parents=True)
    script.write_text("# an earlier run's script, world-writable\n")
    script.chmod(0o777)
    result = subprocess.run(["bash", "-c", f'umask {umask:03o}; exec "$@"', "bash", "hyperion-submit", "slurm",
                             "--cfg", str(test_site), "--env", "HYPERION_TEST_CUSTOM=s3cret-token",
                             "--output-file", "exp/log/one.log", "--", task, "x", "0"],
                            cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    record = tmp_path / "exp/log/q/one.submit.json"
    assert "s3cret-token" in script.read_text() and "s3cret-token" in record.read_text()
    assert oct(script.stat().st_mode & 0o777) == oct(script_mode)
    assert oct(record.stat().st_mode & 0o777) == oct(file_mode)
    assert "custom=s3cret-token" in (tmp_path / "exp/log/one.log").read_text()


def test_a_task_slurm_runs_again_keeps_the_log_of_the_run_before(slurm_cluster, test_site, cli_env, tmp_path):
    """A requeued or preempted task: the batch script's `>` emptied the log at the restart, so the first
    run's output was gone while `status` showed `(restart 1)`. Both runs are now in the log, and Slurm's
    q/slurm-JOB.err keeps its `CANCELLED ... DUE TO JOB REQUEUE` (sbatch's default truncated it). A run
    cut off mid-line does not swallow the restart's marker."""
    proc = start(test_site, "--output-file", "log/r.log", "--", "sh", "-c",
                 'echo "run ${SLURM_RESTART_COUNT:-0} output"; printf "step 3/9"; sleep 60', cwd=tmp_path,
                 env=cli_env)
    log = tmp_path / "log" / "r.log"
    record = tmp_path / "log" / "q" / "r.submit.json"
    try:
        wait_for(lambda: log.exists() and "run 0 output" in log.read_text(), what="the first run")
        job = load_record(record).jobs[0].job_id
        subprocess.run(["scontrol", "requeue", job], check=True)
        wait_for(lambda: subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True,
                                        text=True).stdout.strip() == "PENDING", what="the requeued job pending")
        subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True)   # not 120 s later
        wait_for(lambda: "run 1 output" in log.read_text(), what="the second run")
        lines = log.read_text().splitlines()
        slurm_err = (tmp_path / "log" / "q" / f"slurm-{job}.err").read_text()
    finally:
        if record.exists():
            subprocess.run(["scancel", load_record(record).jobs[0].job_id])
        proc.kill()
        proc.communicate()
    first = lines.index("run 0 output")
    restarted = next(i for i, line in enumerate(lines) if line.startswith("# Restarted by Slurm (restart 1)"))
    assert lines[0].startswith("# Running: sh -c ") and first < restarted < lines.index("run 1 output")
    # the first run was cut off mid-line (a progress line without its newline): the marker has its own
    assert lines[restarted - 1] == "step 3/9"
    assert lines[restarted + 1].startswith("# Running: ") and lines[restarted + 2].startswith("# Started at ")
    # Slurm's own file keeps why the first run ended: the restart reopened it, and it was emptied
    assert f"JOB {job} ON " in slurm_err and "DUE TO JOB REQUEUE" in slurm_err, slurm_err


def test_a_fifo_put_at_a_pending_tasks_log_does_not_hang_the_wait(slurm_cluster, test_site, cli_env, tmp_path):
    """The wait looks at a task's log for its footer: a FIFO appearing there held it in open() for ever,
    so hyperion-submit never saw the job cancelled."""
    site = tmp_path / "later.yaml"
    site.write_text(test_site.read_text().replace("  - --nodes=1\n", "  - --nodes=1\n  - --begin=now+3600\n"))
    proc = start(site, "--output-file", "log/x.log", "--", "true", cwd=tmp_path, env=cli_env)
    try:
        record = tmp_path / "log/q/x.submit.json"
        wait_for(record.exists, what="the record")
        time.sleep(2)                            # the wait has looked at the log once: not there yet
        os.mkfifo(tmp_path / "log/x.log")
        time.sleep(3)
        subprocess.run(["scancel", load_record(record).jobs[0].job_id], check=True)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1 and "CANCELLED" in stderr, stderr


def test_a_failed_array_ends_with_the_retry_that_reruns_only_the_failed_tasks(slurm_cluster, test_site, cli_env,
                                                                               tmp_path, task):
    """The last line is the command, pasted as is; it reruns value 2 alone as attempt 2."""
    result = submit(test_site, "--array", "JOB=1:3", "--output-file", "log/t.JOB.log", "--",
                    task, "JOB", "1", "2", cwd=tmp_path, env=cli_env)
    assert result.returncode == 1
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    last = result.stderr.splitlines()[-1]
    assert last == (f"hyperion-submit: 1 of 3 task(s) did not succeed (failed 1); rerun only those with: "
                    f"hyperion-jobs retry {record}")
    (tmp_path / "task_fixed.sh").write_text(TASK.replace("exit 3", "exit 0"))
    os.replace(tmp_path / "task_fixed.sh", task)
    os.chmod(task, 0o755)
    rerun = run_cli(*shlex.split(last.split(" with: ", 1)[1]), "--yes", cwd=tmp_path, env=cli_env, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert "(--array=2, offset 0)" in rerun.stderr, rerun.stderr
    assert "hyperion-jobs retry" not in rerun.stderr
    shown = run_cli("hyperion-jobs", "history", str(record), env=cli_env)
    assert [line.split()[:2] for line in shown.stdout.splitlines()[1:]] == [["1", "submit"], ["2", "retry"]]


def test_logs_of_a_task_slurm_cancelled_says_so_and_where_slurms_reason_is(slurm_cluster, test_site, cli_env,
                                                                           tmp_path, task):
    """The log of a cancelled task stops mid-run without its '# Ended' line: `logs` printed it alone,
    which reads like a task still running or hung."""
    proc, job_id = start_array(test_site, tmp_path, cli_env, task, "n", "$1 == 2 ? 60 : 1")
    try:
        wait_for(lambda: f"{job_id}_2" in running_tasks(job_id), what="task 2 running")
        time.sleep(1)
        subprocess.run(["scancel", f"{job_id}_2"], check=True)
        proc.communicate(timeout=120)
    finally:
        proc.kill()
    shown = run_cli("hyperion-jobs", "logs", f"{job_id}_2", cwd=tmp_path, env=cli_env)
    assert shown.returncode == 0 and "value=2 env=2" in shown.stdout and "# Ended" not in shown.stdout
    assert shown.stderr == (f"hyperion-jobs: {job_id}_2 ended CANCELLED (Slurm ended it, not the program); "
                            f"Slurm's reason: hyperion-jobs logs {job_id}_2 --err\n")
    reason = run_cli("hyperion-jobs", "logs", f"{job_id}_2", "--err", cwd=tmp_path, env=cli_env)
    assert "CANCELLED AT" in reason.stdout and reason.stderr == ""
    completed = run_cli("hyperion-jobs", "logs", f"{job_id}_1", cwd=tmp_path, env=cli_env)
    assert "# Ended (code 0)" in completed.stdout and completed.stderr == ""


def test_logs_err_of_an_empty_slurm_err_says_it_is_empty(slurm_cluster, test_site, cli_env, tmp_path):
    """`logs TASK --err` of a task that wrote nothing to stderr printed nothing at all, exit 0: it read
    as if the file was not found or the command failed. One stderr line says the file is empty."""
    submitted = run_cli("hyperion-submit", "slurm", "--cfg", str(test_site), "--output-file", "log/quiet.log",
                        "--", "true", cwd=tmp_path, env=cli_env, timeout=300)
    assert submitted.returncode == 0, submitted.stderr
    record = tmp_path / "log" / "q" / "quiet.submit.json"
    err_file = json.loads(record.read_text())["tasks"][0]["slurm_err"]
    assert os.path.getsize(err_file) == 0
    shown = run_cli("hyperion-jobs", "logs", str(record), "--err", env=cli_env)
    assert shown.returncode == 0 and shown.stdout == ""
    assert shown.stderr == (f"hyperion-jobs: {err_file} is empty (nothing written to {record}'s Slurm stderr "
                            "file)\n")


def test_a_rerun_sbatch_refuses_says_there_is_no_new_attempt_and_where_the_logs_stay(
        slurm_cluster, test_site, cli_env, tmp_path):
    """The same line run again with a request the cluster cannot meet: hyperion-submit said "attempt 2 of
    this --output-file ... the earlier logs ... were moved", then sbatch's refusal, and history listed
    no attempt 2. It now says, after the refusal, that none was made and where the earlier logs are."""
    argv = ("hyperion-submit", "slurm", "--cfg", str(test_site), "--output-file", "log/t.log")
    first = run_cli(*argv, "--", "echo", "the evening's run", cwd=tmp_path, env=cli_env, timeout=300)
    assert first.returncode == 0, first.stderr
    refused = run_cli(*argv, "--mem", "100T", "--", "echo", "again", cwd=tmp_path, env=cli_env, timeout=120)
    record = tmp_path / "log/q/t.submit.json"
    lines = refused.stderr.splitlines()
    assert refused.returncode == 1 and lines[1].startswith("hyperion-submit: error: sbatch failed"), lines
    assert lines[2] == (f"hyperion-submit: nothing was submitted, so there is no attempt 2: the earlier logs stay "
                        f"in {record.parent / 'attempts'}/ (hyperion-jobs history {record}; hyperion-jobs logs "
                        f"{record} --attempt 1)"), lines
    history = run_cli("hyperion-jobs", "history", str(record), cwd=tmp_path, env=cli_env, timeout=60)
    assert len(history.stdout.splitlines()) == 2, history.stdout          # the header and attempt 1
    logs = run_cli("hyperion-jobs", "logs", str(record), "--attempt", "1", cwd=tmp_path, env=cli_env, timeout=60)
    assert logs.returncode == 0 and "the evening's run" in logs.stdout, logs.stderr


def test_an_sbatch_that_queued_the_job_but_printed_no_job_id_has_its_job_found_and_cancelled(
        slurm_cluster, test_site, tmp_path, cli_env):
    """A site's sbatch wrapper queued the job, exited 0 and printed a banner after the id's line
    (or nothing): hyperion-submit said `sbatch failed (exit 0): ...` and recorded nothing, while
    the job ran unseen, writing the pattern's logs (seen with a wrapper, `squeue` showed it). Exit
    0 is sbatch's "queued": the job is found by its script and cancelled, as after a timeout."""
    wrapper = tmp_path / "banner-sbatch"
    wrapper.write_text('#!/bin/sh\nsbatch "$@" >/dev/null || exit\necho "sbatch: queued (site banner)"\n')
    wrapper.chmod(0o755)
    site = _site_with(tmp_path, test_site, sbatch_command=str(wrapper))
    done = run_cli("hyperion-submit", "slurm", "--cfg", str(site), "--array", "JOB=1:2", "--output-file",
                   "log/banner.JOB.log", "--", "sleep", "60", cwd=tmp_path, env=cli_env)
    said = done.stderr.strip()
    assert done.returncode != 0 and "Traceback" not in said, said
    assert f"{wrapper} exited 0 without a job id (sbatch: queued (site banner)); script kept at " in said, said
    assert "cancelled the job it queued all the same: " in said, said
    job = said.rsplit(": ", 1)[1].strip()
    assert wait_for(lambda: (rows := sacct(job, "State")) and rows[0][0].startswith("CANCELLED"),
                    timeout=30, what="the banner wrapper's job CANCELLED")
