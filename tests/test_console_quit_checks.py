"""Quitting while a confirmed Submit or Retry waits on Slurm under the pattern's lock.

`begin_attempt` asks Slurm (sacct, squeue) whether the earlier attempt's tasks still run and whether
a job runs one of the pattern's batch scripts, before anything is moved or submitted. With the
controller hung, q blanked the screen and the console lived on for those queries' timeouts (30 s
each, then 10 s), and then ran sbatch after the user had quit. The checks now stop with the
console: the quit returns at once, nothing is moved aside and sbatch is never started.
"""
from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from test_console_fixtures import build_checkpoint, build_history, checkpoint_read, posted, table_column, text_of, wait_for

from backends.records.history import load_history
from hyperion_console.app import make_app
from hyperion_console.messages import RetryPreviewed
from hyperion_console.screens.confirm import ConfirmScreen
from hyperion_console.screens.retry import RetryScreen

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
SITE = CONF / "submit_test_cluster.yaml"


def _hung_slurm(bin_dir: Path, monkeypatch, calls: Path, hang_on: str, marker: Path,
                from_flag: Path | None = None) -> None:
    """sacct and squeue hang (each call's pid appended to `calls`) when their arguments match the
    shell pattern `hang_on` (and, with `from_flag`, once that file exists), else answer nothing;
    sbatch only leaves `marker` and refuses (nothing ever reaches the real cluster)."""
    bin_dir.mkdir()
    gate = f"[ -e {from_flag} ] || exit 0\n" if from_flag is not None else ""
    for name in ("sacct", "squeue"):
        (bin_dir / name).write_text(f"#!/bin/sh\n{gate}case \"$*\" in {hang_on}) echo $$ >> {calls}; "
                                    "exec sleep 120;; esac\nexit 0\n")
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\n"
                                    "echo 'sbatch: error: not on this test' >&2; exit 1\n")
    for name in ("sacct", "squeue", "sbatch"):
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def _live(calls: Path) -> list[int]:
    pids = [int(pid) for pid in calls.read_text().split()] if calls.exists() else []
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()
            and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]


def _logs_in_place(record: Path) -> list[str]:
    return sorted(p.name for p in (record.parent.parent).glob("extract.*.log"))


def _assert_quit_left_nothing(quit_at: float, calls: Path, marker: Path, record: Path, before: list[str],
                              query: str) -> None:
    """The quit returned at once, its hung `query` did not outlive it, sbatch never ran, no attempt 2
    was begun (half or whole) and no log was moved aside."""
    quit_took = time.monotonic() - quit_at
    assert quit_took < 5, f"the quit waited {quit_took:.0f} s on {query}"
    deadline = time.monotonic() + 3
    while _live(calls) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _live(calls), f"{query} outlived the quit"
    time.sleep(1)
    assert not marker.exists(), "sbatch ran after the console quit"
    assert load_history(str(record)).numbers == (1,)
    assert _logs_in_place(record) == before


@pytest.mark.parametrize("hung", ["live-tasks", "script-jobs"])
def test_q_while_a_confirmed_submit_waits_on_a_hung_slurm_quits_at_once_and_submits_nothing(
        tmp_path: Path, monkeypatch, hung: str) -> None:
    """The speech engineer submits again to yesterday's --output-file. live-tasks: its task 7 has no
    recorded end, and the console asks sacct and squeue under the lock whether it still runs; with
    the controller hung, q left the terminal blank for a minute (30 s each). script-jobs: every task
    ended, and the look for a job still running its batch script (`squeue -u USER -o %F|%T|%o`)
    hangs: q waited its 10 s, and then sbatch ran, with nobody left to watch what it queued."""
    record = build_history(tmp_path / "runs", SITE, unfinished=(7,) if hung == "live-tasks" else ())
    calls, marker = tmp_path / "calls", tmp_path / "sbatch-called"
    if hung == "script-jobs":
        (record.parent / "extract.JOB.sh").write_text("#!/bin/bash\n")     # the batch script it submitted
    _hung_slurm(tmp_path / "bin", monkeypatch, calls, "*" if hung == "live-tasks" else "*%o*", marker)
    before = _logs_in_place(record)
    timings: dict[str, float] = {}

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path / "elsewhere"])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            for name, value in (("cfg", str(SITE)), ("output_file", str(record.parent.parent / "extract.JOB.log")),
                                ("array", "JOB=1:8"), ("command", "python3 extract.py --part JOB")):
                screen.set_field(name, value)
            await pilot.pause()
            assert str(screen.query_one("#submit-error").content) == "✓ valid"
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: bool(_live(calls)), 20)       # under the lock, asking Slurm
            await pilot.press("q")
            timings["q"] = time.monotonic()
            await wait_for(pilot, lambda: not app.is_running, 5)

    asyncio.run(scenario())
    _assert_quit_left_nothing(timings["q"], calls, marker, record, before, "the check's query to a hung Slurm")


def test_q_while_a_confirmed_retry_waits_on_a_hung_squeue_under_the_lock_quits_at_once(
        tmp_path: Path, monkeypatch) -> None:
    """The retry's own look at Slurm answers; under the lock, the look for jobs still running the
    pattern's batch script (`squeue -u USER -o %F|%T|%o`) hangs: q waited its 10 s, and the retry was
    then submitted after the quit."""
    record = build_history(tmp_path, SITE)
    (record.parent / "extract.JOB.sh").write_text("#!/bin/bash\n")     # the batch script it submitted
    calls, marker = tmp_path / "calls", tmp_path / "sbatch-called"
    _hung_slurm(tmp_path / "bin", monkeypatch, calls, "*%o*", marker)
    before = _logs_in_place(record)
    timings: dict[str, float] = {}

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: "FAILED" in table_column(app.jobs_screen.query_one("#tasks"), "state"), 10)
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 10)
            await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: bool(_live(calls)), 20)
            await pilot.press("q")
            timings["q"] = time.monotonic()
            await wait_for(pilot, lambda: not app.is_running, 5)

    asyncio.run(scenario())
    _assert_quit_left_nothing(timings["q"], calls, marker, record, before, "the check's squeue")


@pytest.mark.parametrize("hung", ["before-the-lock", "under-the-lock", "retry-tab"])
def test_q_while_the_checkpoint_screen_waits_on_a_hung_slurm_quits_at_once(
        tmp_path: Path, monkeypatch, hung: str) -> None:
    """Checkpoint screen, ctrl+r, y: before taking the pattern's lock the Resubmit asks Slurm again
    whether the record's tasks still run (its task 8 has no recorded end: sacct, then squeue). With
    the controller hung from then on, q blanked the screen and the console lived on for a minute
    (30 s each). under-the-lock: every task ended, and the look for a job running the pattern's
    batch script hangs (stoppable since begin_attempt took a stop): the quit is as quick.
    retry-tab: no Resubmit; the Retry tab's own read asks whether task 8 still runs, and its worker
    passed no stop to sacct and squeue: q waited out their timeouts, where the Jobs screen's watch
    is killed with the quit."""
    checkpoint = build_checkpoint(tmp_path)                  # shards 6 and 8 missing
    record = build_history(tmp_path, SITE, unfinished=() if hung == "under-the-lock" else (8,))
    if hung == "under-the-lock":
        (record.parent / "extract.JOB.sh").write_text("#!/bin/bash\n")
    calls, marker, flag = tmp_path / "calls", tmp_path / "sbatch-called", tmp_path / "hang-from-now"
    # the read's own look at Slurm (before the question) answers; Slurm hangs once the question is up
    _hung_slurm(tmp_path / "bin", monkeypatch, calls, "*%o*" if hung == "under-the-lock" else "*", marker, flag)
    before = _logs_in_place(record)
    timings: dict[str, float] = {}

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            if hung == "retry-tab":
                flag.touch()
                screen.query_one("#ckpt-tabs").active = "tab-retry"     # the tab that asks whether it runs
            else:
                await pilot.press("ctrl+r")
                await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 20)
                flag.touch()
                await pilot.press("y")
            await wait_for(pilot, lambda: bool(_live(calls)), 20)
            if hung == "retry-tab":
                assert "asking Slurm" in text_of(screen.query_one("#retry-commands"))
            await pilot.press("q")
            timings["q"] = time.monotonic()
            await wait_for(pilot, lambda: not app.is_running, 5)

    asyncio.run(scenario())
    _assert_quit_left_nothing(timings["q"], calls, marker, record, before, "the Checkpoint screen's query to a hung Slurm")
