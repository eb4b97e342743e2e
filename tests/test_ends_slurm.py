"""How tasks ended, as the summaries count them, on the real cluster: a program that failed, a task
Slurm timed out and one a user cancelled are three different things to read."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from conftest import TEST_SITE, run_cli

from backends.records.history import load_history

pytestmark = pytest.mark.slurm
# Value 1 succeeds, 2 fails (exit 3), 3 outruns its 1-minute limit, 4 sleeps until it is cancelled.
PROGRAM = ("import sys, time; v = sys.argv[1]; print('working on', v, flush=True); "
           "sys.exit(3) if v == '2' else time.sleep(600 if v in '34' else 0)")


def _running(job_id: str) -> set[str]:
    out = subprocess.run(["squeue", "-j", job_id, "-r", "-h", "-o", "%i %T"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.endswith(" RUNNING")}


def _until(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_timeout_and_a_cancel_are_not_counted_as_failed(slurm_cluster, tmp_path, cli_env):
    """`failed 3` counted the TIMEOUT and the CANCELLED task: the user read three failing programs."""
    proc = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:4",
                             "--time", "1", "--output-file", "log/e.JOB.log", "--", sys.executable, "-c", PROGRAM,
                             "JOB"], cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    record = tmp_path / "log/q/e.JOB.submit.json"
    try:
        _until(record.exists, 60, "the record")
        job_id = load_history(record).current.jobs[0].job_id
        _until(lambda: f"{job_id}_4" in _running(job_id), 120, "task 4 running")
        subprocess.run(["scancel", f"{job_id}_4"], check=True)
        _, stderr = proc.communicate(timeout=240)     # task 3 runs into its limit (1 min, plus Slurm's slack)
    finally:
        if proc.poll() is None:
            proc.kill()
            subprocess.run(["scancel", job_id], check=False)
    assert proc.returncode == 1, stderr
    progress = [line for line in stderr.splitlines() if line.startswith("done ")]
    assert progress[-1] == "done 1/4 failed 1 timeout 1 cancelled 1 running 0 pending 0", stderr
    assert stderr.splitlines()[-1].startswith(
        "hyperion-submit: 3 of 4 task(s) did not succeed (failed 1, timeout 1, cancelled 1); rerun only those with: ")
    assert stderr.splitlines()[-1].endswith(f"retry {record} --time auto"), stderr   # the same limit times out again

    shown = run_cli("hyperion-jobs", "status", str(record), "--failures", env=cli_env)
    assert shown.stdout.splitlines()[0] == (
        "3 of 4 task(s) did not succeed (failed 1, timeout 1, cancelled 1), in 3 group(s):"), shown.stdout
    data = json.loads(run_cli("hyperion-jobs", "status", str(record), "--failures", "--json", env=cli_env).stdout)
    assert data["failed"] == 3                      # kept: every task that did not succeed
    assert data["ends"] == {"failed": 1, "timeout": 1, "cancelled": 1}


def test_a_job_cancelled_while_most_of_it_waits_is_told_in_a_few_lines(slurm_cluster, tmp_path, cli_env):
    """A user cancelled a 40-task array while 2 ran and 38 waited: hyperion-submit ended with 40
    lines, 38 of them naming a log and two Slurm files as missing, as if logs had been lost."""
    proc = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:40",
                             "--max-jobs-run", "2", "--output-file", "log/c.JOB.log", "--", sys.executable, "-c",
                             PROGRAM, "4"], cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log/q/c.JOB.submit.json"
    try:
        _until(record.exists, 60, "the record")
        job_id = load_history(record).current.jobs[0].job_id
        _until(lambda: len(_running(job_id)) == 2, 120, "two tasks running")
        _until(lambda: all((tmp_path / f"log/c.{v}.log").exists() for v in (1, 2)), 30, "their logs")
        subprocess.run(["scancel", job_id], check=True)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            subprocess.run(["scancel", job_id], check=False)
    lines = [line for line in stderr.splitlines() if line.startswith("hyperion-submit: ")]
    ends = lines[lines.index(next(line for line in lines if "JOB=1 (job" in line)):]
    assert len(ends) == 4, stderr                              # two tasks, the 38 waiting, the last line
    assert ends[0].startswith(f"hyperion-submit: JOB=1 (job {job_id}_1): CANCELLED; log {tmp_path}/log/c.1.log;")
    assert ends[2] == ("hyperion-submit: JOB=3-40 (38 tasks): CANCELLED before writing a log or a Slurm file "
                       "(cancelled while pending)"), stderr
    assert ends[3].startswith("hyperion-submit: 40 of 40 task(s) did not succeed (cancelled 40); rerun only those")
    # the JSON says what the table does: a task that never started has no elapsed time and used no CPU
    # (sacct's 0.0 of the tasks cancelled while pending read as a run of no time beside the table's -)
    tasks = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)["tasks"]
    waited = [t for t in tasks if t["value"] > 2]
    assert len(waited) == 38 and all(t["state"] == "CANCELLED" for t in waited), tasks
    assert {(t["elapsed"], t["elapsed_seconds"], t["cpu_seconds"]) for t in waited} == {(None, None, None)}


def test_a_program_killed_by_a_signal_under_the_batch_script_says_which(slurm_cluster, tmp_path, cli_env):
    """A C extension's segfault under Slurm read `FAILED exit code 139` everywhere (the batch script's
    shell reports a signal's death as 128+N), with nothing saying a signal: now `(128+SIGSEGV)`."""
    crash = "import os, sys; print('loading model', flush=True); sys.argv[1] == '2' and os.kill(os.getpid(), 11)"
    ran = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:2", "--output-file",
                  "log/s.JOB.log", "--", sys.executable, "-c", crash, "JOB", cwd=tmp_path, env=cli_env, timeout=300)
    assert ran.returncode == 1
    assert "JOB=2 (job " in ran.stderr and "): FAILED exit code 139 (128+SIGSEGV); log " in ran.stderr, ran.stderr
    failures = run_cli("hyperion-jobs", "status", str(tmp_path / "log/q/s.JOB.submit.json"), "--failures",
                       env=cli_env)
    assert "1 FAILED exit 139 (128+SIGSEGV)  values 2  last line: loading model" in failures.stdout, failures.stdout
