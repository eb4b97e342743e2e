"""The morning after: an array whose submitter's terminal closed mid-run, the same command line rerun
by accident (attempt 2), then read back in the console, earlier attempts' logs beside the newest."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

from test_console_fixtures import posted, table_column, wait_for

from hyperion_console.app import make_app
from hyperion_console.messages import AttemptShown

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
SCRIPT = """#!/bin/bash
sleep 1
echo "task $1 of attempt $(cat "$(dirname "$0")/attempt")"
[ "$1" = 3 ] && { echo "ValueError: value $1 is bad"; exit 3; }
exit 0
"""


def submit_argv(root: Path) -> list[str]:
    return ["hyperion-submit", "slurm", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--time", "00:02:00",
            "--array", "JOB=1:4", "--output-file", "log/run.JOB.log", "--", str(root / "run.sh"), "JOB"]


def wait_until_slurm_is_done(record: Path, timeout: float = 180) -> None:
    """The array's tasks all left the queue (nobody watching them end)."""
    job = next(line for line in record.read_text().split('"job_id"')[1:2])
    job_id = job.split('"')[1]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = subprocess.run(["squeue", "-h", "-j", job_id], capture_output=True, text=True).stdout
        if not left.strip():
            return
        time.sleep(1)
    raise AssertionError(f"job {job_id} still queued after {timeout} s")


def submit_and_hang_up(root: Path, env: dict[str, str], script: str = SCRIPT) -> Path:
    """Attempt 1 submitted and its hyperion-submit hung up on mid-run (ssh dropped), its tasks left to
    end unwatched: the record, once Slurm is done with them."""
    (root / "run.sh").write_text(script)
    (root / "run.sh").chmod(0o755)
    (root / "attempt").write_text("1")
    record = root / "log" / "q" / "run.JOB.submit.json"
    evening = subprocess.Popen(submit_argv(root), cwd=root, env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert record.exists(), "hyperion-submit wrote no record"
    finally:
        os.killpg(evening.pid, signal.SIGHUP)              # the terminal went away
        evening.wait(30)
    wait_until_slurm_is_done(record)
    return record


def run_the_evening_and_the_accidental_rerun(root: Path, env: dict[str, str]) -> Path:
    """Attempt 1 submitted, its hyperion-submit hung up on mid-run (ssh dropped) and its tasks ending
    unwatched; attempt 2 the same command line, waited for to the end."""
    record = submit_and_hang_up(root, env)
    (root / "attempt").write_text("2")
    rerun = subprocess.run(submit_argv(root), cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 1, rerun.stderr                  # value 3 failed again
    assert (root / "log" / "q" / "attempts" / "1" / "run.2.log").read_text().count("task 2 of attempt 1") == 1
    return record


def test_going_to_a_value_from_an_earlier_attempts_tasks_shows_the_newest_runs_log(
        slurm_cluster, tmp_path: Path, cli_env) -> None:
    """From attempt 1's tasks (its moved log of value 2 in the pane), `:2` shows the table of newest runs with
    value 2 (attempt 2) selected: the pane kept showing attempt 1's log under it, the path in its title the
    only sign, when the table's cursor was already on value 2."""
    run_the_evening_and_the_accidental_rerun(tmp_path, cli_env)
    moved = tmp_path / "log" / "q" / "attempts" / "1" / "run.2.log"
    newest = tmp_path / "log" / "run.2.log"

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])        # no --record: the newest is opened
        async with app.run_test(size=(100, 30), message_hook=seen.append) as pilot:
            await pilot.press("2")
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state")
                           == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED"], 60)
            log = jobs.log_pane.view
            await pilot.press("colon", "2", "enter")
            await wait_for(pilot, lambda: "task 2 of attempt 2" in log.lines, 10)
            await pilot.press("a")
            await wait_for(pilot, lambda: posted(seen, AttemptShown), 10)
            await pilot.press("up")                                  # attempt 1
            await wait_for(pilot, lambda: posted(seen, AttemptShown)[-1].number == 1, 10)
            await pilot.press("enter", "down")                       # its value 2: the log the rerun moved
            await wait_for(pilot, lambda: "task 2 of attempt 1" in log.lines, 10)
            assert str(moved) in str(jobs.query_one("#log-title").content)
            await pilot.press("colon", "2", "enter")                 # the newest run of value 2
            assert jobs.view == "tasks-view" and table.selected_task().value == 2
            assert table_column(table, "attempt")[1] == "2"
            await wait_for(pilot, lambda: "task 2 of attempt 2" in log.lines, 10)
            title = str(jobs.query_one("#log-title").content)
            assert str(newest) in title and str(moved) not in title

    asyncio.run(scenario())


def test_the_same_command_line_rerun_says_it_is_attempt_2_and_where_attempt_1s_logs_went(
        slurm_cluster, tmp_path: Path, cli_env) -> None:
    """The accidental rerun printed only `submitted job(s) ...`: yesterday's logs were rewritten
    with nothing saying they were kept, nor where."""
    record = run_the_evening_and_the_accidental_rerun(tmp_path, cli_env)
    first = subprocess.run(["hyperion-jobs", "history", str(record)], cwd=tmp_path, env=cli_env,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and len(first.stdout.splitlines()) == 3, first.stdout   # header + 2 attempts
    (tmp_path / "attempt").write_text("3")
    third = subprocess.run(submit_argv(tmp_path), cwd=tmp_path, env=cli_env, capture_output=True, text=True,
                           timeout=300)
    said = [line for line in third.stderr.splitlines() if "attempt 3" in line]
    assert said == [f"hyperion-submit: attempt 3 of this --output-file (it ran before): the earlier logs it "
                    f"rewrites were moved to {record.parent / 'attempts'}/ first; hyperion-jobs history {record}; "
                    f"hyperion-jobs logs {record}:VALUE --attempt 2"], third.stderr
    # before the submission, as locally before the first task: a task may run before sbatch answers
    lines = third.stderr.splitlines()
    assert lines.index(said[0]) < next(i for i, line in enumerate(lines) if "submitted job(s)" in line), lines
    told = subprocess.run(["hyperion-jobs", "logs", f"{record}:2", "--attempt", "2"], cwd=tmp_path, env=cli_env,
                          capture_output=True, text=True, timeout=60)
    assert told.returncode == 0 and "task 2 of attempt 2" in told.stdout, told.stderr


def test_a_local_array_hung_up_mid_run_then_rerun_says_so_and_keeps_the_hung_up_runs_log(
        tmp_path: Path, cli_env) -> None:
    """`hyperion-submit local` in a terminal that closed (SIGHUP) mid-array, then the same line again."""
    (tmp_path / "run.sh").write_text(SCRIPT.replace("sleep 1", 'echo "started $1"; sleep 3'))
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "attempt").write_text("1")
    argv = ["hyperion-submit", "local", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--array", "JOB=1:3",
            "--output-file", "log/l.JOB.log", "--", str(tmp_path / "run.sh"), "JOB"]
    evening = subprocess.Popen(argv, cwd=tmp_path, env=cli_env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log2 = tmp_path / "log" / "l.2.log"
    deadline = time.monotonic() + 30
    while not (log2.exists() and "started 2" in log2.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(evening.pid, signal.SIGHUP)                       # the terminal closed while value 2 ran
    assert evening.wait(30) == 129 and "hyperion-submit: hangup" in evening.stderr.read()
    (tmp_path / "attempt").write_text("2")
    rerun = subprocess.run(argv, cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=120)
    record = tmp_path / "log" / "q" / "l.JOB.submit.json"
    assert rerun.returncode == 1                                # value 3 fails, as every time
    assert (f"hyperion-submit: attempt 2 of this --output-file (it ran before): the earlier logs it rewrites "
            f"were moved to {record.parent / 'attempts'}/ first; hyperion-jobs history {record}; "
            f"hyperion-jobs logs {record}:VALUE --attempt 1") in rerun.stderr.splitlines()
    old = subprocess.run(["hyperion-jobs", "logs", f"{record}:2", "--attempt", "1"], cwd=tmp_path, env=cli_env,
                         capture_output=True, text=True, timeout=60)
    assert old.returncode == 0 and "started 2" in old.stdout and "task 2 of attempt" not in old.stdout, old


def test_reopened_after_status_recorded_every_end_the_status_line_says_the_states_are_the_historys(
        tmp_path: Path, cli_env, monkeypatch) -> None:
    """The evening's tasks ended unwatched; `hyperion-jobs status` recorded their ends. Reopened in the
    console (its jobs still in the window Slurm may requeue them, so squeue is asked once), the status
    line said "every task ended: final states from Slurm": every state shown was the ledger's, and
    Slurm's answer only said that it ran none of them again."""
    record = submit_and_hang_up(tmp_path, cli_env, SCRIPT.replace("sleep 1", "true"))
    looked = subprocess.run(["hyperion-jobs", "status", str(record)], env=cli_env, capture_output=True,
                            text=True, timeout=120)
    assert looked.returncode == 0, looked.stderr
    ledger = (record.parent / "run.JOB.attempts.jsonl").read_text()
    assert ledger.count('"type":"final"') == 4, ledger      # status recorded every end
    monkeypatch.setenv("PATH", cli_env["PATH"])

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.jobs_screen.query_one("#poll-status")
            await wait_for(pilot, lambda: status.line().plain.startswith("every task ended"), 60)
            await pilot.pause(0.5)
            assert status.line().plain == "every task ended: final states from the attempt history"
            assert table_column(app.jobs_screen.query_one("#tasks"), "state") == [
                "COMPLETED", "COMPLETED", "FAILED", "COMPLETED"]

    asyncio.run(scenario())
