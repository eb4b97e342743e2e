"""Ctrl-C (and the other signals `hyperion-submit slurm` stops on) while it asks Slurm, before sbatch.

Before anything is moved or submitted, `begin_attempt` asks Slurm whether the earlier attempt's tasks
still run (sacct, then squeue) and whether a job still runs one of the pattern's batch scripts
(`squeue -u USER -o %F|%T|%o`). With the controller hung, a Ctrl-C there waited those queries'
timeouts out (30 s each, or 10 s), then ran sbatch anyway and cancelled what it queued. It now ends
them at once: one line says nothing was submitted. An sbatch already started is never stopped: what
it queues is recorded and then cancelled, as after a Ctrl-C during the wait.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import TEST_SITE, kill_noted_groups
from test_console_fixtures import build_history

from backends.records.history import load_history
from backends.records.record import load_record


def _wrap(bin_dir: Path, name: str, text: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / name).write_text(text)
    (bin_dir / name).chmod(0o755)


def _hung_slurm(bin_dir: Path, calls: Path, hang_on: str, marker: Path) -> None:
    """sacct and squeue hang (each call's pid appended to `calls`) when their arguments match the
    shell pattern `hang_on`, else answer nothing; sbatch only leaves `marker` and refuses (nothing
    ever reaches the real cluster)."""
    for name in ("sacct", "squeue"):
        _wrap(bin_dir, name, f"#!/bin/sh\ncase \"$*\" in {hang_on}) echo $$ >> {calls}; exec sleep 120;; esac\n"
                             "exit 0\n")
    _wrap(bin_dir, "sbatch", f"#!/bin/sh\necho \"$@\" >> {marker}\necho 'sbatch: error: not on this test' >&2; exit 1\n")


def _live(calls: Path) -> list[int]:
    pids = [int(pid) for pid in calls.read_text().split()] if calls.exists() else []
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()
            and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]


def _wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _logs(log_dir: Path) -> list[str]:
    return sorted(p.name for p in log_dir.glob("extract.*.log"))


@pytest.mark.parametrize("hung, signum, status, why", [
    ("live-tasks", signal.SIGINT, 130, "interrupted"),
    ("script-jobs", signal.SIGINT, 130, "interrupted"),
    ("script-jobs", signal.SIGTERM, 130, "interrupted"),
    ("script-jobs", signal.SIGQUIT, 131, "quit"),
    ("script-jobs", signal.SIGHUP, 129, "hangup"),
], ids=["live-tasks-SIGINT", "script-jobs-SIGINT", "script-jobs-SIGTERM", "script-jobs-SIGQUIT",
        "script-jobs-SIGHUP"])
def test_a_signal_while_the_checks_wait_on_a_hung_slurm_ends_at_once_and_submits_nothing(
        tmp_path: Path, cli_env: dict[str, str], hung: str, signum: int, status: int, why: str) -> None:
    """The speech engineer submits again to yesterday's --output-file and the controller hangs.
    live-tasks: its task 7 has no recorded end, so sacct and then squeue are asked whether it still
    runs: Ctrl-C waited a minute (30 s each). script-jobs: every task ended, and the look for a job
    still running its batch script hangs: Ctrl-C waited its 10 s, then sbatch ran all the same."""
    record = build_history(tmp_path, TEST_SITE, unfinished=(7,) if hung == "live-tasks" else ())
    if hung == "script-jobs":
        (record.parent / "extract.JOB.sh").write_text("#!/bin/bash\n")     # the batch script it submitted
    calls, marker = tmp_path / "calls", tmp_path / "sbatch-called"
    _hung_slurm(tmp_path / "bin", calls, "*" if hung == "live-tasks" else "*%o*", marker)
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    log_dir = record.parent.parent
    before = _logs(log_dir)
    proc = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:8",
                             "--mem", "100M", "--time", "00:06:00", "--output-file", str(log_dir / "extract.JOB.log"),
                             "--", "python3", "extract.py", "--part", "JOB"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_until(lambda: bool(_live(calls)) or proc.poll() is not None, 60, "the hung Slurm query")
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.3)           # the signal comes while it waits on the query, not as it starts it
        proc.send_signal(signum)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=90)
        took = time.monotonic() - sent
    finally:
        proc.kill()
        kill_noted_groups(calls)
    assert took < 5, f"the {why} waited {took:.0f} s on the hung Slurm query; stderr: {stderr}"
    assert (proc.returncode, stderr) == (status, f"hyperion-submit: {why}; nothing was submitted\n")
    _wait_until(lambda: not _live(calls), 3, "the hung query to be ended")
    assert not marker.exists(), "sbatch ran after the signal"
    assert load_history(str(record)).numbers == (1,)            # no attempt 2, half begun or whole
    assert _logs(log_dir) == before                               # nothing moved aside


@pytest.mark.slurm
def test_ctrl_c_while_sbatch_runs_does_not_stop_it_and_what_it_queued_is_cancelled(
        slurm_cluster, tmp_path: Path, cli_env: dict[str, str]) -> None:
    """The stop that ends the checks is never given to sbatch: a job it queues must get its record
    (and is then cancelled, as after a Ctrl-C during the wait), never be left running unseen."""
    real = shutil.which("sbatch", path=cli_env["PATH"])
    assert real is not None
    started = tmp_path / "sbatch-started"
    _wrap(tmp_path / "bin", "sbatch", f"#!/bin/sh\ntouch {started}\nsleep 2\nexec {real} \"$@\"\n")
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    proc = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--time", "00:02:00",
                             "--output-file", "log/s.log", "--", "sleep", "60"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record_file = tmp_path / "log/q/s.submit.json"
    try:
        _wait_until(lambda: started.exists() or proc.poll() is not None, 60, "sbatch to start")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=90)
    finally:
        proc.kill()
        if record_file.exists():
            subprocess.run(["scancel", *(job.job_id for job in load_record(record_file).jobs)], check=False)
    assert proc.returncode == 130, stderr
    job = load_record(record_file).jobs[0].job_id
    assert f"hyperion-submit: interrupted; cancelled job(s) {job} (" in stderr, stderr
    assert "nothing was submitted" not in stderr
