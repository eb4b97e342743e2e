"""hyperion-jobs on a record of a real local run (no Slurm needed)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

from conftest import run_cli

from backends.records.runner import runner_fields, runner_gone


def test_status_and_watch_of_a_local_array_that_stopped_at_a_failure(tmp_path, cli_env, test_site):
    (tmp_path / "task.sh").write_text('echo "value $IDX"; [ "$IDX" = 2 ] && exit 4; exit 0\n')
    submitted = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
                        "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", cwd=tmp_path, env=cli_env)
    assert submitted.returncode == 1, submitted.stderr
    record = tmp_path / "log" / "q" / "r.IDX.submit.json"

    status = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert [(t["value"], t["state"], t["exit_code"]) for t in shown["tasks"]] == [
        (1, "COMPLETED", 0), (2, "FAILED", 4), (3, "NOT_RUN", None)]
    assert shown["exit_status"] == 1

    watch = run_cli("hyperion-jobs", "watch", str(tmp_path / "log" / "q"), env=cli_env, timeout=30)
    assert watch.returncode == 1 and "3 tasks: COMPLETED 1, FAILED 1, NOT_RUN 1" in watch.stdout

    logs = run_cli("hyperion-jobs", "logs", f"{record}:2", env=cli_env)
    assert logs.returncode == 0 and "value 2" in logs.stdout


def test_local_run_whose_runner_was_killed_is_lost_not_running(tmp_path, cli_env, test_site):
    runner = subprocess.Popen(
        ["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:2",
         "--output-file", "log/k.IDX.log", "--", "sleep", "60"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        ledger = tmp_path / "log" / "q" / "k.IDX.attempts.jsonl"
        deadline = time.monotonic() + 30
        while not (ledger.exists() and '"type":"start"' in ledger.read_text()):
            assert time.monotonic() < deadline, "the local run never started its first task"
            time.sleep(0.1)
        entry = next(json.loads(line) for line in ledger.read_text().splitlines() if '"start"' in line)
        assert entry["pid"] == runner.pid and entry["host"] == socket.gethostname()
        record = tmp_path / "log" / "q" / "k.IDX.submit.json"

        running = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env)
        assert [t["state"] for t in json.loads(running.stdout)["tasks"]] == ["RUNNING", "NOT_RUN"]

        runner.send_signal(signal.SIGKILL)   # the runner only: its child sleeps on, orphaned
        runner.wait()
        status = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env)
        shown = json.loads(status.stdout)
        assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "LOST"), (2, "NOT_RUN")]
        assert shown["exit_status"] == 1

        watch = run_cli("hyperion-jobs", "watch", str(record), env=cli_env, timeout=20)
        assert watch.returncode == 1 and "2 tasks: LOST 1, NOT_RUN 1" in watch.stdout
    finally:
        try:
            os.killpg(runner.pid, signal.SIGKILL)   # the orphaned sleep (and the runner if still there)
        except ProcessLookupError:
            pass
        runner.wait()


def test_runner_gone_only_when_certain():
    me = runner_fields()
    assert not runner_gone(me)                                   # this very process
    assert runner_gone({**me, "pid_start": me["pid_start"] + 1})  # the pid was reused
    assert not runner_gone({**me, "host": me["host"] + "-elsewhere", "pid": 2 ** 22 + 1})
    assert not runner_gone({"state": "RUNNING"})                  # older file: cannot judge
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert runner_gone({**me, "pid": dead.pid, "pid_start": None})
