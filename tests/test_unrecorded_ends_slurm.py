"""A watch that could not write the ends it saw says so as it ends, on the real cluster.

The ledger became unwritable while the tasks ran (a full disk, a teammate's
read-only history): the states were shown and the ends left to a later
`status`, which can record them only while Slurm still remembers the job.
Nothing told the user: `hyperion-submit slurm` and `hyperion-jobs watch`
ended as if the history held them.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import TEST_SITE, run_cli, submit_real_array, without_rights

from backends.records.attempts import ledger_path
from backends.records.history import load_history

pytestmark = pytest.mark.slurm


def _finals(record: Path) -> int:
    return sum(json.loads(line).get("type") == "final" for line in ledger_path(record).read_text().splitlines())


def _wait_for_attempt_line(record: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not (ledger_path(record).exists() and '"type":"attempt"' in ledger_path(record).read_text()):
        assert time.monotonic() < deadline, "the submission wrote no attempt line"
        time.sleep(0.1)


def _said_once_then_recorded(record: Path, stderr: str, cli_env: dict) -> None:
    warned = [line for line in stderr.splitlines() if "not recorded" in line]
    assert len(warned) == 1, stderr
    assert "the end of 2 task(s) it saw was not recorded" in warned[0]
    assert f"cannot write the history {record}: Permission denied" in warned[0]
    assert f"hyperion-jobs status {record} records them" in warned[0]
    assert _finals(record) == 0
    ledger_path(record).chmod(0o644)
    shown = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert _finals(record) == 2 and all(load_history(record).final(t) for t in load_history(record).latest_tasks())


def test_hyperion_submits_wait_says_the_ends_it_could_not_record(slurm_cluster, rightless_dir, cli_env):
    root = rightless_dir
    waiting = subprocess.Popen(without_rights("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array",
                                              "JOB=1:2", "--time", "00:02:00", "--output-file", "log/e.JOB.log",
                                              "--", "sleep", "6"),
                               cwd=root, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = root / "log" / "q" / "e.JOB.submit.json"
    try:
        _wait_for_attempt_line(record)
        ledger_path(record).chmod(0o444)          # before either task ends
        _, stderr = waiting.communicate(timeout=180)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, stderr        # the tasks completed: the exit status says so still
    assert "Traceback" not in stderr
    _said_once_then_recorded(record, stderr, cli_env)


def test_hyperion_jobs_watch_says_the_ends_it_could_not_record(slurm_cluster, rightless_dir, cli_env):
    root = rightless_dir
    submitted = submit_real_array(root / "log" / "w.JOB.log", "JOB=1:2", "sleep", "4", cwd=root)
    record = Path(submitted.path)
    ledger_path(record).chmod(0o444)
    watched = run_cli(*without_rights("hyperion-jobs", "watch", str(record)), env=cli_env, timeout=180)
    assert watched.returncode == 0, watched.stderr
    assert "Traceback" not in watched.stderr
    _said_once_then_recorded(record, watched.stderr, cli_env)


def test_a_wait_stopped_with_ctrl_c_still_says_the_ends_it_could_not_record(slurm_cluster, rightless_dir, cli_env):
    """The line came only when the wait ended by itself: stopped by Ctrl-C (or a hangup, a task that
    can never run) after a task's end was refused, the ends it saw were lost without a word."""
    import signal

    root = rightless_dir
    waiting = subprocess.Popen(without_rights("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array",
                                              "JOB=1:2", "--time", "00:02:00", "--output-file", "log/c.JOB.log",
                                              "--", "python3", "-c",
                                              "import sys, time; time.sleep(1 if sys.argv[1] == '1' else 90)", "JOB"),
                               cwd=root, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = root / "log" / "q" / "c.JOB.submit.json"
    try:
        _wait_for_attempt_line(record)
        ledger_path(record).chmod(0o444)          # before either task ends
        job = load_history(record).current.jobs[0].job_id
        deadline = time.monotonic() + 90
        while "COMPLETED" not in subprocess.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", f"{job}_1"],
                                                capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline, "task 1 never completed"
            time.sleep(0.5)
        time.sleep(12)                            # the wait's polls see it end (and refuse to record it)
        waiting.send_signal(signal.SIGINT)
        _, stderr = waiting.communicate(timeout=120)
    finally:
        if waiting.poll() is None:
            waiting.kill()
        subprocess.run(["scancel", job], capture_output=True)
    assert waiting.returncode == 130, stderr
    warned = [line for line in stderr.splitlines() if "not recorded" in line]
    assert len(warned) == 1 and "it saw was not recorded" in warned[0], stderr


def test_the_unrecorded_ends_are_counted_per_task_not_per_line(tmp_path, monkeypatch):
    """Two tasks ended on a full disk, then accounting told their peaks: 'the end of 4 task(s)' (two
    ends and two usage lines), growing with every usage update of a long array."""
    import errno

    import backends.watch.finals as finals_module
    from backends.records.history import load_history
    from backends.states import JobState, TaskState
    from backends.watch.usage import Usage
    from test_console_fixtures import build_history

    record = build_history(tmp_path, TEST_SITE, n=3, unfinished=(2, 3))
    tasks = [t for t in load_history(record).current.tasks if t.value in (2, 3)]

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(finals_module, "append_entries", full)
    recorder = finals_module.FinalsRecorder(str(record), tasks)
    ended = [TaskState(t.job_id, t.array_task_id, JobState.COMPLETED, 0, None, 5.0, "n1") for t in tasks]
    recorder.observe(ended, {s.key: Usage(elapsed_seconds=5.0) for s in ended})
    assert recorder.unrecorded.startswith("the end of 2 task(s) it saw was not recorded")
    recorder.observe(ended, {s.key: Usage(elapsed_seconds=5.0, max_rss_bytes=1 << 20) for s in ended})
    assert recorder.unrecorded.startswith("the end of 2 task(s) it saw was not recorded"), recorder.unrecorded
