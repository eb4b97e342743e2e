"""A live view you can trust: the log pane follows a growing log, elapsed ticks, outages show."""
from __future__ import annotations

import asyncio
import math
import json
import re
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import run_cli, submit_real_array
from test_console_fixtures import (
    build_local_record,
    posted,
    rendered,
    screen_lines,
    slurm_like_record,
    table_column,
    wait_for,
)

from backends.states import JobState, TaskState
from hyperion_console.app import make_app
from hyperion_console.messages import JobsUpdated, LogAppended

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
DERIVED_PAUSE = 1.5      # the usage summary follows updates this late (DERIVED_DELAY) and more


def test_log_pane_follows_a_growing_log_and_stays_where_the_user_scrolled(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    log_file = tmp_path / "exp" / "log" / "task.1.log"

    def write(first: int, last: int) -> None:
        with open(log_file, "a") as handle:
            handle.writelines(f"progress {i}/400\n" for i in range(first, last + 1))

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            pane = app.jobs_screen.log_pane
            view, title = pane.view, pane.query_one("#log-title")
            await wait_for(pilot, lambda: "done with part 1" in view.lines, 10)
            for chunk in range(4):                       # far more than a screenful, in bursts
                write(chunk * 100 + 1, chunk * 100 + 100)
                await wait_for(pilot, lambda: view.lines[-1:] == [f"progress {chunk * 100 + 100}/400"], 10)
                assert view.following and view.scroll_y == view.max_scroll_y
                assert rendered(view)[-1].rstrip() == f"progress {chunk * 100 + 100}/400"
            assert str(title.content).endswith(" · following")
            view.focus()
            await pilot.press("up", "up", "up")          # the user reads something above
            assert not view.following
            top = view.scroll_y
            shown_before = rendered(view)
            write(401, 450)
            await wait_for(pilot, lambda: view.lines[-1:] == ["progress 450/400"], 10)
            assert view.scroll_y == top and rendered(view) == shown_before
            assert "scrolled (End: follow)" in str(title.content)
            await pilot.press("end")                     # back to following
            assert view.following
            assert rendered(view)[-1].rstrip() == "progress 450/400"
            write(451, 452)
            await wait_for(pilot, lambda: rendered(view)[-1].rstrip() == "progress 452/400", 10)
        appended = posted(seen, LogAppended)
        assert sum(m.lines for m in appended) == 3 + 452     # every line once: only what is new
        assert any(not m.following for m in appended) and appended[-1].following

    asyncio.run(scenario())


def test_log_pane_starts_over_when_the_file_is_replaced(tmp_path: Path) -> None:
    """A rerun moves the earlier log aside and writes a new file: the pane shows the new one."""
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    log_file = tmp_path / "exp" / "log" / "task.1.log"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: "done with part 1" in view.lines, 10)
            log_file.rename(log_file.with_suffix(".log.1"))
            log_file.write_text("attempt 2 starts\n")
            await wait_for(pilot, lambda: view.lines == ["attempt 2 starts"], 10)

    asyncio.run(scenario())


def test_log_pane_starts_over_when_the_log_is_replaced_just_as_it_is_opened(tmp_path: Path, monkeypatch) -> None:
    """A rerun moved the log aside just after the pane read its last lines, and wrote the new one a
    moment later: the pane's follower, made after that read, found no file, and showed the new
    log's lines as if appended to the old one's."""
    from hyperion_console.widgets import log_pane

    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    log_file = tmp_path / "exp" / "log" / "task.1.log"
    read_last = log_pane.last_lines_read

    def read_then_moved_aside(path, *args, **kwargs):
        lines = read_last(path, *args, **kwargs)
        if Path(path) == log_file and log_file.exists():
            log_file.rename(log_file.with_suffix(".log.1"))
        return lines

    monkeypatch.setattr(log_pane, "last_lines_read", read_then_moved_aside)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: "done with part 1" in view.lines, 10)
            await pilot.pause(0.5)                    # the follower has looked: no file
            log_file.write_text("attempt 2 starts\n")
            await wait_for(pilot, lambda: "attempt 2 starts" in view.lines, 10)
            assert view.lines == ["attempt 2 starts"]

    asyncio.run(scenario())


def test_log_pane_shows_the_end_of_20_mb_of_short_lines_written_at_once(tmp_path: Path) -> None:
    """`seq 1 3000000` (22 MB in a second): the pane read it all through, 4 MiB a poll split line by
    line, and showed lines 10 s old under `ended COMPLETED` (a 100 MB `yes`: 3 minutes, a core busy)."""
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    log_file = tmp_path / "exp" / "log" / "task.1.log"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            pane = app.jobs_screen.log_pane
            view = pane.view
            await wait_for(pilot, lambda: "done with part 1" in view.lines, 10)
            with open(log_file, "a") as handle:
                handle.write("y\n" * 10_000_000 + "last line\n")
            await wait_for(pilot, lambda: view.lines[-1:] == ["last line"], 10)     # minutes before
            assert view.following and rendered(view)[-1].rstrip() == "last line"
            assert str(pane.query_one("#log-title").content).endswith(" · following")
            # what was left out is said, not hidden
            assert view.lines[0].startswith("… 20.0 MB") and view.lines[0].endswith(
                " MB of the log not shown (written faster than shown): hyperion-jobs logs shows every line")
            with open(log_file, "a") as handle:                  # then followed as before
                handle.write("one more\n")
            await wait_for(pilot, lambda: view.lines[-2:] == ["last line", "one more"], 10)
            view.scroll_home(animate=False)                     # scrolled back: a burst does not move it
            await wait_for(pilot, lambda: not view.following, 5)
            with open(log_file, "a") as handle:
                handle.write("n\n" * 1_000_000 + "end of the second burst\n")
            await pilot.pause(1.5)
            assert view.lines[-2:] == ["last line", "one more"] and not view.following
            view.scroll_end(animate=False)                      # End: followed again, at the end
            await wait_for(pilot, lambda: view.lines[-1:] == ["end of the second burst"], 10)
            # what is left out is all above the lines shown: both bursts (it said the second's 2.0 MB)
            assert view.lines[0].startswith("… 22.0 MB of the log not shown"), view.lines[0]

    asyncio.run(scenario())


def test_log_pane_search_finds_highlights_and_stops_following(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    with open(tmp_path / "exp" / "log" / "task.1.log", "a") as handle:
        handle.writelines(f"step {i}{' WARNING disk' if i in (30, 70) else ''}\n" for i in range(100))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: "step 99" in view.lines, 10)
            view.focus()
            await pilot.press("home", "slash", *"warning", "enter")
            assert view.lines[view.match_line] == "step 30 WARNING disk" and not view.following
            assert any("step 30 WARNING disk" in line for line in rendered(view))
            await pilot.press("n")
            assert view.lines[view.match_line] == "step 70 WARNING disk"
            await pilot.press("N")
            assert view.lines[view.match_line] == "step 30 WARNING disk"
            assert view.has_focus                         # the find bar gave the focus back

    asyncio.run(scenario())


TRACEBACK = ["Traceback (most recent call last):", '  File "extract.py", line 12, in <module>',
             "    main()", "ValueError: corrupt input file"]


def _zoom_log(tmp_path: Path) -> tuple[Path, Path]:
    """A running task whose log ends in a traceback below 200 lines of progress."""
    record = build_local_record(tmp_path, {1: ("RUNNING", None), 2: ("COMPLETED", 0)})
    log_file = tmp_path / "exp" / "log" / "task.1.log"
    with open(log_file, "a") as handle:
        handle.writelines([*(f"step {i}/200\n" for i in range(1, 201)), *(f"{line}\n" for line in TRACEBACK)])
    return record, log_file


def _log_text(app) -> list[str]:
    """The frame's lines as plain text, less the last column (the log's scrollbar)."""
    return [line[:-1].rstrip() for line in screen_lines(app)]


def _layout(jobs) -> dict:
    return {name: jobs.query_one(name).region for name in ("#records", "#tasks", "#log-pane")}


@pytest.mark.parametrize("size", [(80, 24), (60, 20), (80, 14)])   # 80x14: the layout hides the pane
def test_z_zooms_the_log_over_the_screen_following_it_and_escape_gives_the_layout_back(
        tmp_path: Path, size: tuple[int, int]) -> None:
    record, log_file = _zoom_log(tmp_path)
    width, height = size

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=size) as pilot:
            jobs = app.jobs_screen
            pane, view = jobs.log_pane, jobs.log_pane.view
            await wait_for(pilot, lambda: view.lines[-1:] == TRACEBACK[-1:], 10)
            await pilot.pause()
            before, table = _layout(jobs), jobs.query_one("#tasks")
            assert app.focused is table
            assert before["#log-pane"].height < 8 and (before["#log-pane"].height == 0) == (height < 15)
            await pilot.press("z")
            await pilot.pause()
            assert pane.region.x == pane.region.y == 0 and pane.region.size == (width, height - 1)
            assert app.focused is view
            lines = _log_text(app)
            title = screen_lines(app)[0].rstrip()
            assert title.startswith("log [log]: ") and title.endswith("task.1.log · following")
            assert lines[-1].startswith("f Filter")                        # the footer stays
            assert lines[1:height - 1] == [*(f"step {i}/200" for i in range(207 - height, 201)), *TRACEBACK]
            with open(log_file, "a") as handle:
                handle.write("# Ended (code 1)\n")
            await wait_for(pilot, lambda: _log_text(app)[height - 2] == "# Ended (code 1)", 10)
            assert _log_text(app)[height - 3] == TRACEBACK[-1]
            await pilot.press("escape")
            await pilot.pause()
            assert _layout(jobs) == before and app.focused is table
            text = screen_lines(app)
            assert not any(line.startswith("step ") or "terminal too small" in line for line in text[:height - 8])

    asyncio.run(scenario())


def test_zoomed_log_keeps_its_scroll_position_and_z_or_escape_leaves_it_in_order(tmp_path: Path) -> None:
    """The zoomed log obeys the pane's rules (scrolled up: it stays put; `/` searches it); escape closes
    an open find bar before the zoom, `z` toggles, and a key that changes the layout leaves the zoom."""
    record, log_file = _zoom_log(tmp_path)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            pane, view = jobs.log_pane, jobs.log_pane.view
            await wait_for(pilot, lambda: view.lines[-1:] == TRACEBACK[-1:], 10)
            view.focus()
            await pilot.press("z", "pageup")
            assert jobs.maximized is pane and not view.following
            shown = _log_text(app)
            assert screen_lines(app)[0].rstrip().endswith(" · scrolled (End: follow)")
            with open(log_file, "a") as handle:
                handle.write("one more line\n")
            await wait_for(pilot, lambda: view.lines[-1:] == ["one more line"], 10)
            await pilot.pause()
            assert _log_text(app)[1:23] == shown[1:23]                     # the user's lines stay put
            await pilot.press("slash", *"step 150", "enter")
            assert view.lines[view.match_line] == "step 150/200"
            assert "step 150/200" in _log_text(app)[1:23]
            await pilot.press("slash")
            await pilot.press("escape")                                   # the find bar closes first
            assert jobs.maximized is pane and app.focused is view
            await pilot.press("z")                                        # z again: the layout back
            assert jobs.maximized is None and app.focused is view
            await pilot.press("z", "v")                                   # a view key: seen in the layout
            assert jobs.maximized is None and jobs.view == "map-view" and app.focused is jobs.state_map

    asyncio.run(scenario())


@pytest.mark.slurm
def test_log_pane_follows_a_running_slurm_task_and_its_progress_bar_to_the_end(slurm_cluster, tmp_path: Path) -> None:
    """A tqdm-style bar redraws itself with `\\r`: the pane showed nothing of it until its newline."""
    script = ("import sys, time\nprint('epoch 1', flush=True)\nfor i in range(1, 41):\n"
              "    sys.stdout.write(f'\\rprogress {i}/40'); sys.stdout.flush(); time.sleep(0.3)\n"
              "print(' done', flush=True)\n")
    record = submit_real_array(tmp_path / "log" / "f.JOB.log", "JOB=1:1", sys.executable, "-c", script)

    def moving(lines: list[str]) -> bool:
        return bool(lines) and lines[-1].startswith("progress ") and lines[-1] != "progress 40/40"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: moving(view.lines), 90)
            assert view.lines[-2] == "epoch 1"
            await wait_for(pilot, lambda: view.lines[-1:] == ["progress 40/40 done"]
                           or view.lines[-2:-1] == ["progress 40/40 done"], 90)
            assert view.following
            assert "progress 40/40 done" in "\n".join(rendered(view))

    asyncio.run(scenario())


@pytest.mark.slurm
def test_usage_of_running_slurm_tasks_is_what_status_and_usage_show(slurm_cluster, tmp_path: Path, cli_env) -> None:
    """`u` while an array runs: each task's request, limit and time used so far, and the summary's
    elapsed, as `hyperion-jobs status` and `usage` give them. The console showed `-` and "usage of 0
    of 3 task(s)" (its poll asks only squeue while the controller names every task), or the figures
    of an early sacct ("max 00:00:02" after 1:40) where `status` said 00:01:49."""
    record = submit_real_array(tmp_path / "log" / "u.T.log", "T=1:3", "sleep", "120", time_limit="00:05:00",
                               extra=("--mem", "100M"))
    shown: dict[str, object] = {}

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state") == ["RUNNING"] * 3, 120)
            await pilot.press("u")

            def told() -> bool:
                """every running task's request and a time used of 12 s or more in the usage columns"""
                times = table_column(table, "time")
                return (table_column(table, "memory") == ["-/100M"] * 3 and len(times) == 3
                        and all(t.endswith("/5m") and t[:-3].endswith("s") and int(t[:-4]) >= 12 for t in times))

            await wait_for(pilot, told, 60)
            await pilot.pause(DERIVED_PAUSE)
            shown["times"] = table_column(table, "time")
            shown["summary"] = [str(line.content) for line in jobs.query("#usage-summary FitLine")]

    try:
        asyncio.run(scenario())
        status = json.loads(run_cli("hyperion-jobs", "status", str(record.path), "--json", env=cli_env).stdout)
        usage = run_cli("hyperion-jobs", "usage", str(record.path), env=cli_env).stdout
    finally:
        subprocess.run(["scancel", *(job.job_id for job in record.jobs)], capture_output=True)
    tasks = status["tasks"]
    assert [t["state"] for t in tasks] == ["RUNNING"] * 3
    assert {(t["req_mem_bytes"], t["time_limit_seconds"]) for t in tasks} == {(100 << 20, 300)}
    console_elapsed = [int(t.split("/")[0][:-1]) for t in shown["times"]]
    for cli, console in zip(tasks, console_elapsed):      # status ran a moment after the console looked
        assert 0 <= cli["elapsed_seconds"] - console <= 40, (tasks, shown)
    summary = " ".join(shown["summary"])
    assert "(0 of 3)" in summary and "accounting has not reported" not in summary, summary
    console_max, cli_max = _max_elapsed(summary), _max_elapsed(usage)
    assert console_max >= max(console_elapsed) >= 12, (summary, shown)   # the summary of the rows shown
    assert 0 <= cli_max - console_max <= 40, (summary, usage)
    assert "usage of 3 of 3 task(s)" in usage


def _max_elapsed(text: str) -> int:
    """The seconds of the first ``max HH:MM:SS`` after "elapsed" in a usage summary (console or CLI)."""
    import re

    found = re.search(r"elapsed.*?max (\d\d):(\d\d):(\d\d)", text, re.S)
    assert found, text
    hours, minutes, seconds = map(int, found.groups())
    return hours * 3600 + minutes * 60 + seconds


async def _jobs_on(app, pilot, record):
    """The Jobs screen showing `record` (opened as a user opens it: escape, then 2)."""
    await pilot.press("escape", "2")
    jobs = app.jobs_screen
    jobs.show_record(record)
    return jobs


def _running(task: int, elapsed: float, state: JobState = JobState.RUNNING) -> TaskState:
    return TaskState("4242", task, state, None if not state.is_terminal else 0, None, elapsed, "node01")


def test_elapsed_of_running_tasks_ticks_between_polls(tmp_path: Path) -> None:
    record = slurm_like_record(tmp_path, 3)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = await _jobs_on(app, pilot, record)
            as_of = time.time()
            jobs.post_message(JobsUpdated(record.path, (
                _running(1, 34.0), _running(2, 12.0, JobState.COMPLETED),
                TaskState("4242", 3, JobState.PENDING)), as_of=as_of))
            await pilot.pause()
            table = jobs.query_one("#tasks")
            assert table_column(table, "elapsed") == ["0:00:34", "0:00:12", ""]
            await pilot.pause(2.3)                        # no poll meanwhile
            # a loaded machine may sleep longer than asked: the bound is the time that really passed
            latest = 34 + math.ceil(time.time() - as_of)
            ticked = table_column(table, "elapsed")
            assert ticked[0] in {f"0:00:{s}" for s in range(36, latest + 1)}, ticked
            assert ticked[1:] == ["0:00:12", ""]
            on_screen = rendered(table)[1]                # drawn at the last once-a-second tick
            assert any(f"0:00:{s}" in on_screen for s in range(35, latest + 1)), on_screen

    asyncio.run(scenario())


def test_elapsed_is_blank_for_tasks_that_never_started_as_status_shows_them(tmp_path: Path) -> None:
    """A task cancelled while pending (sacct: Elapsed 00:00:00, no node) read 0:00:00 in the console,
    where `hyperion-jobs status` says - as it does for a pending one; tasks that ran show their time."""
    from backends.cli.jobs.table import STATUS_HEADER, status_cells
    from backends.watch.rows import job_rows

    record = slurm_like_record(tmp_path, 4)
    states = (_running(1, 34.0), _running(2, 40.0, JobState.CANCELLED),
              TaskState("4242", 3, JobState.CANCELLED, 0, None, 0.0, None),
              TaskState("4242", 4, JobState.PENDING, None, None, 0.0, None, source="squeue", reason="Priority"))
    status = [status_cells(row)[STATUS_HEADER.index("ELAPSED")] for row in job_rows({s.key: s for s in states})]
    assert status == ["0:00:34", "0:00:40", "-", "-"]

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = await _jobs_on(app, pilot, record)
            jobs.post_message(JobsUpdated(record.path, states, as_of=time.time()))
            await pilot.pause()
            table = jobs.query_one("#tasks")
            shown = table_column(table, "elapsed")
            assert shown[0] in ("0:00:34", "0:00:35") and shown[1:] == ["0:00:40", "", ""], shown
            await pilot.pause(1.3)                        # the running task still ticks, no poll meanwhile
            assert table_column(table, "elapsed")[0] in ("0:00:35", "0:00:36")

    asyncio.run(scenario())


def test_status_line_shows_the_age_of_the_states_and_an_outage_while_it_lasts(tmp_path: Path) -> None:
    record = slurm_like_record(tmp_path, 2)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = await _jobs_on(app, pilot, record)
            status = jobs.query_one("#poll-status")
            await pilot.pause()
            assert status.line().plain == "asking Slurm…"
            jobs.post_message(JobsUpdated(record.path, (_running(1, 5.0),), as_of=time.time() - 5))
            await pilot.pause()
            assert status.line().plain == "states from Slurm 5 s ago"
            problem = "sacct: error: Problem talking to the database: Connection refused"
            jobs.post_message(JobsUpdated(record.path, (), error=problem, problem=problem))
            await pilot.pause()
            assert status.line().plain == f"⚠ states 5 s old, retrying: {problem}"
            drawn = [line.strip() for line in rendered(status)]
            assert drawn[0].startswith("⚠ states 5 s old, retrying: sacct: error")
            # wider than 80 columns: wrapped onto the lines below, whole (it was cut there)
            assert len(drawn) == 2 and " ".join(drawn) == status.line().plain, drawn
            await pilot.pause(1.2)                                 # the age goes on while it lasts
            assert status.line().plain.startswith("⚠ states 6 s old")
            jobs.post_message(JobsUpdated(record.path, (), as_of=time.time()))
            await pilot.pause()
            assert status.line().plain == "states from Slurm 0 s ago"
            jobs.post_message(JobsUpdated(record.path, (), error=problem, problem=problem))
            jobs.post_message(JobsUpdated(record.path, (), as_of=time.time(), all_terminal=True,
                                          problem="controller (squeue) not answering for 5 s: squeue failed (rc 127)"))
            await pilot.pause(1.2)
            # sacct gave every final state while squeue still failed: nothing is retried any more
            assert status.line().plain == "every task ended: final states from Slurm"
            # usage asked beside the watch comes after its end: rows only, the line stays
            jobs.post_message(JobsUpdated(record.path, (_running(1, 5.0),), rows_only=True))
            await pilot.pause(1.2)
            assert status.line().plain == "every task ended: final states from Slurm"

    asyncio.run(scenario())


def test_a_poll_error_is_told_once_while_slurm_hangs_between_the_polls(tmp_path: Path) -> None:
    """While a query hangs, the status line hears of it every second between two failed polls:
    the failure's notification comes once, not again after every such hang."""
    from test_console_fixtures import notifications

    record = slurm_like_record(tmp_path, 2)
    error = "squeue failed (rc 124): squeue timed out after 30 s"
    failing = f"controller (squeue) not answering for 30 s: {error}"
    waiting = f"controller (squeue) not answering for 35 s: {error}"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = await _jobs_on(app, pilot, record)
            for message in (JobsUpdated(record.path, (), error=error, problem=failing),
                            JobsUpdated(record.path, (), problem=waiting),      # the next query hangs
                            JobsUpdated(record.path, (), error=error, problem=failing)):
                jobs.post_message(message)
                await pilot.pause()
            assert sum(error in note for note in notifications(app)) == 1, notifications(app)

    asyncio.run(scenario())


def test_pending_tasks_show_why_they_wait_and_requeued_tasks_their_restarts(tmp_path: Path) -> None:
    """TaskState.reason (squeue %r) and restart_count, in the reason column."""
    record = slurm_like_record(tmp_path, 4)

    def state(task: int, name: JobState, reason: str | None, restarts: int | None = None) -> SimpleNamespace:
        return SimpleNamespace(job_id="4242", task_id=task, state=name, exit_code=None, signal=None,
                               elapsed=None, node=None, reason=reason, restart_count=restarts)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = await _jobs_on(app, pilot, record)
            jobs.post_message(JobsUpdated(record.path, (
                state(1, JobState.RUNNING, "None"), state(2, JobState.PENDING, "JobArrayTaskLimit"),
                state(3, JobState.PENDING, None), state(4, JobState.RUNNING, None, 2))))
            await pilot.pause()
            table = jobs.query_one("#tasks")
            assert table_column(table, "reason") == ["", "JobArrayTaskLimit", "", "restart 2"]
            assert rendered(table)[0].rstrip().endswith("reason")
            assert rendered(table)[2].rstrip().endswith("JobArrayTaskLimit")
            assert rendered(table)[4].rstrip().endswith("restart 2")

    asyncio.run(scenario())


def test_a_local_history_that_becomes_unreadable_is_said_and_read_again(tmp_path: Path) -> None:
    """A ledger replaced by a FIFO while the Jobs screen watches: the status line says the history
    cannot be read (the view would otherwise stop updating without a word), and it recovers."""
    from backends.records.attempts import ledger_path
    from hyperion_console.widgets.summary import PollStatus

    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    ledger = ledger_path(record)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 24), message_hook=seen.append) as pilot:
            status = app.jobs_screen.query_one("#poll-status", PollStatus)
            await wait_for(pilot, lambda: posted(seen, JobsUpdated), 10)
            os.mkfifo(ledger)
            await wait_for(pilot, lambda: "cannot be read" in str(status.line()), 10)
            assert "retrying" in str(status.line()) and "a FIFO, not a regular file" in str(status.line())
            ledger.unlink()
            await wait_for(pilot, lambda: "cannot be read" not in str(status.line()), 10)
            assert app.is_running

    asyncio.run(scenario())


def _fake_slurm(tmp_path: Path, monkeypatch, **tools: str) -> None:
    """The scripts of `tools` (squeue=..., sacct=...) first on PATH, from tmp_path/bin: Slurm's commands
    answering (or hanging) as the test needs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, script in tools.items():
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@asynccontextmanager
async def _console_once_slurm_fails(record: Path, tmp_path: Path, flag: Path):
    """The console on `record` once its status line shows Slurm's states, then `flag` touched: the
    fake Slurm commands (`_fake_slurm`) fail from then on. Yields the app, its pilot and the status line."""
    from hyperion_console.widgets.summary import PollStatus

    app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
    async with app.run_test(size=(120, 24)) as pilot:
        status = app.jobs_screen.query_one("#poll-status", PollStatus)
        await wait_for(pilot, lambda: status.line().plain.startswith("states from Slurm"), 15)
        flag.touch()
        yield app, pilot, status


FAKE_SQUEUE = """#!/bin/sh
# squeue of job 4242: tasks 7 and 8 run, until {flag} exists: then it hangs as a dead controller does
if [ -e {flag} ]; then echo $$ >> {pids}; sleep 3600; fi
echo '4242_7|RUNNING|0|0:05|node01|None|0|'
echo '4242_8|RUNNING|0|0:05|node01|None|0|'
"""


def test_a_hanging_slurm_is_said_on_the_status_line_and_quitting_does_not_wait_for_it(
        tmp_path: Path, monkeypatch) -> None:
    """squeue stops answering (it hangs, 30 s before its timeout): the status line turns to the
    ⚠ within seconds, saying the controller has not answered for N s, N growing (it stayed
    'states from Slurm 48 s ago' for a minute, then said 'not answering for 0 s'); quitting
    then ends at once and kills the hung squeue (it took 40-53 s)."""
    import backends.watch.poller as poller_module
    from test_console_fixtures import build_history

    flag, pids = tmp_path / "hang", tmp_path / "pids"
    _fake_slurm(tmp_path, monkeypatch, squeue=FAKE_SQUEUE.format(flag=flag, pids=pids), sacct="#!/bin/sh\nexit 0\n")
    monkeypatch.setattr(poller_module, "SLOW_QUERY", 1.0, raising=False)   # told after 1 s, not 5
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", unfinished=(7, 8))
    quit_at: list[float] = []

    async def scenario() -> None:
        async with _console_once_slurm_fails(record, tmp_path, flag) as (app, pilot, status):
            await wait_for(pilot, lambda: "has not returned yet" in status.line().plain, 20)
            first = status.line().plain
            assert first.startswith("⚠ states ") and "controller (squeue) not answering for " in first
            await pilot.pause(2.2)
            later = status.line().plain
            assert _not_answering(later) >= _not_answering(first) + 2, (first, later)
            assert _states_age(later) >= _not_answering(later)
            quit_at.append(time.monotonic())
            await pilot.press("q")

    asyncio.run(scenario())         # returns once the poll thread has ended too
    assert time.monotonic() - quit_at[0] < 2.0
    assert not _runs(int(pids.read_text().split()[0]))


GARBLED_SQUEUE = """#!/bin/sh
# squeue of job 4242: tasks 7 and 8 run, until {flag} exists: then it answers what hyperion cannot read
if [ -e {flag} ]; then echo 'this is not what squeue prints'; exit 0; fi
echo '4242_7|RUNNING|0|0:05|node01|None|0|'
echo '4242_8|RUNNING|0|0:05|node01|None|0|'
"""


def test_an_outage_s_age_on_the_status_line_grows_between_polls(tmp_path: Path, monkeypatch) -> None:
    """squeue and sacct answering what hyperion cannot read: the status line said `... cannot read
    (for 1 s)` until the next poll (20 s later) beside `states 11 s old`, which grew each second.
    Both grow each second while the problem lasts, and in one format (`1 min 05 s` beside `92 s`)."""
    from test_console_fixtures import build_history

    flag = tmp_path / "garble"
    _fake_slurm(tmp_path, monkeypatch, squeue=GARBLED_SQUEUE.format(flag=flag),
                sacct=f"#!/bin/sh\nif [ -e {flag} ]; then echo 'this is not what sacct prints'; fi\n")
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", unfinished=(7, 8))
    said = "controller (squeue) answers in a form hyperion cannot read (for "

    async def scenario() -> None:
        async with _console_once_slurm_fails(record, tmp_path, flag) as (app, pilot, status):
            app.jobs_screen.restart_watching()        # the next poll now, not at the idle pace
            await wait_for(pilot, lambda: said in status.line().plain, 15)
            first = status.line().plain
            await pilot.pause(2.2)                    # no poll meanwhile: the next is 20 s away
            later = status.line().plain
            assert _cannot_read(later) >= _cannot_read(first) + 2, (first, later)
            assert _states_age(later) >= _states_age(first) + 2, (first, later)
            at = time.time() + 70                     # drawn a minute on: both ages in one format
            assert re.search(r"states 1 min \d\d s old, .* cannot read \(for 1 min \d\d s\)",
                             status.line(at).plain), status.line(at).plain
            await pilot.press("q")

    asyncio.run(scenario())


def _cannot_read(line: str) -> int:
    return int(line.split("cannot read (for ")[1].split(" s)")[0])


def test_tasks_the_controller_says_ended_are_shown_ended_while_the_final_sacct_hangs(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    """The controller said both running tasks COMPLETED; the watch's final sacct then hung, and for its
    30 s the table still said RUNNING with elapsed ticking, and the status line said nothing wrong."""
    from test_console_fixtures import build_history, table_column

    import backends.watch.poller as poller_module
    from hyperion_console.widgets.summary import PollStatus

    _fake_slurm(tmp_path, monkeypatch, squeue="#!/bin/sh\nprintf '4242_7|COMPLETED|0|0:03|vm|None|0|\\n"
                                              "4242_8|COMPLETED|0|0:03|vm|None|0|\\n'\n",
                sacct="#!/bin/sh\nsleep 3600\n")
    monkeypatch.setattr(poller_module, "SLOW_QUERY", 1.0, raising=False)
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", unfinished=(7, 8))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 24)) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state")[6:] == ["COMPLETED", "COMPLETED"], 10)
            status = app.jobs_screen.query_one("#poll-status", PollStatus)
            await wait_for(pilot, lambda: "accounting (sacct) not answering for" in status.line().plain, 10)
            await pilot.press("q")

    asyncio.run(scenario())


def test_an_ended_task_slurm_runs_again_is_shown_running_and_its_first_end_kept(tmp_path: Path,
                                                                                monkeypatch) -> None:
    """Value 3 failed and the ledger holds its end; the user requeued it (scontrol requeue) while 7 and 8
    ran. The console polled only 7 and 8 and showed 3 FAILED for ever."""
    from test_console_fixtures import build_history, table_column

    from backends.records.attempts import read_ledger

    rows = "".join(f"4242_{task}|COMPLETED|0|0:31|vm|None|0|\\n" for task in (1, 2, 4, 5, 6))
    _fake_slurm(tmp_path, monkeypatch,
                squeue=f"#!/bin/sh\nprintf '{rows}4242_3|RUNNING|0|0:02|vm|None|1|\\n"
                       "4242_7|RUNNING|0|0:03|vm|None|0|\\n4242_8|RUNNING|0|0:03|vm|None|0|\\n'\n",
                sacct="#!/bin/sh\nexit 0\n")
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", unfinished=(7, 8))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 24)) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state")[2] == "RUNNING", 10)
            assert table_column(table, "state")[4:6] == ["FAILED", "OUT_OF_MEMORY"]   # not run again
            await pilot.press("q")

    asyncio.run(scenario())
    assert read_ledger(record).finals[(1, 3)].state == "FAILED"     # still running: its first end stands


def test_quitting_does_not_wait_for_a_hanging_sacct_asked_for_missing_usage(tmp_path: Path, monkeypatch) -> None:
    """Opening a record whose ended tasks lack usage asks sacct once; while it hung, quitting the
    console waited for it (up to its 30 s timeout) and left it running."""
    from test_console_fixtures import build_history

    pids = tmp_path / "pids"
    _fake_slurm(tmp_path, monkeypatch, sacct=f"#!/bin/sh\necho $$ >> {pids}\nsleep 3600\n")
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")     # every task ended, no usage
    quit_at: list[float] = []

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 24)) as pilot:
            await wait_for(pilot, lambda: pids.exists() and pids.read_text().strip(), 15)
            quit_at.append(time.monotonic())
            await pilot.press("q")

    asyncio.run(scenario())
    assert time.monotonic() - quit_at[0] < 2.0
    assert not _runs(int(pids.read_text().split()[0]))


def test_quitting_does_not_wait_for_a_hanging_scancel(tmp_path: Path, monkeypatch) -> None:
    """A cancel confirmed while the controller hangs: quitting the console waited for scancel's
    30 s timeout and left it running."""
    from test_console_fixtures import build_history

    pids = tmp_path / "pids"
    _fake_slurm(tmp_path, monkeypatch, scancel=f"#!/bin/sh\necho $$ >> {pids}\nsleep 3600\n",
                squeue="#!/bin/sh\nexit 0\n", sacct="#!/bin/sh\nexit 0\n")   # the watch hears nothing new
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", unfinished=(7, 8))
    quit_at: list[float] = []

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 24)) as pilot:
            jobs = app.jobs_screen
            await wait_for(pilot, lambda: jobs.history is not None, 15)
            jobs.post_message(JobsUpdated(str(record), (TaskState("4242", 7, JobState.RUNNING, None, None,
                                                                  1.0, "vm"),)))
            await pilot.pause()
            jobs.query_one("#tasks").focus()
            await pilot.press("X", "y")
            await wait_for(pilot, lambda: pids.exists() and pids.read_text().strip(), 15)
            quit_at.append(time.monotonic())
            await pilot.press("q")

    asyncio.run(scenario())
    assert time.monotonic() - quit_at[0] < 2.0
    assert not _runs(int(pids.read_text().split()[0]))


def _not_answering(line: str) -> int:
    return int(line.split("not answering for ")[1].split(" s")[0])


def _states_age(line: str) -> int:
    return int(line.split("⚠ states ")[1].split(" s old")[0])


def _runs(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (zombies left to init do not), after a moment."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        alive = False
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            alive = alive or (int(fields[2]) == pgid and fields[0] != "Z")
        if not alive:
            return False
        time.sleep(0.05)
    return True


def test_a_timed_out_sacct_is_no_longer_said_once_the_next_poll_answers(tmp_path: Path) -> None:
    """Task 1 was COMPLETING, so accounting was asked and timed out; the next poll's squeue named
    both tasks (1 COMPLETED, 2 RUNNING), nothing needed accounting any more, yet the status line
    kept saying 'accounting (sacct) not answering for N s: ... timed out', N growing."""
    import threading

    from test_console_fixtures import build_history

    from backends.records.history import load_history
    from backends.watch.slurm.accounting import CommandResult
    from hyperion_console.watch import watch_slurm
    from hyperion_console.widgets.summary import PollStatus

    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", n=2, unfinished=(1, 2))
    squeue = ["4242_1|COMPLETING|0|0:05|node01|None|0|\n4242_2|RUNNING|0|0:05|node01|None|0|\n",
              "4242_1|COMPLETED|0|0:05|node01|None|0|\n4242_2|RUNNING|0|0:06|node01|None|0|\n"]
    asked: list[str] = []

    def query(argv) -> CommandResult:
        """squeue answers; the first sacct times out, as run_command reports it."""
        asked.append(argv[0])
        if argv[0] == "squeue":
            return CommandResult(0, squeue[min(asked.count("squeue"), len(squeue)) - 1], "")
        if asked.count("sacct") == 1:
            return CommandResult(124, "", "sacct timed out after 30 s")
        return CommandResult(0, "", "")

    seen: list = []
    stop = threading.Event()

    def deliver(answer) -> None:
        seen.append(answer)
        if asked.count("squeue") >= 2:
            stop.set()

    watch_slurm(load_history(str(record)), deliver, stop, runner=query)
    status = PollStatus()
    status.start("Slurm")
    status.report(seen[0].as_of, seen[0].problem)
    assert "accounting (sacct) not answering" in status.line().plain and "timed out" in status.line().plain
    status.report(seen[-1].as_of, seen[-1].problem)
    assert status.line().plain.startswith("states from Slurm "), (asked, status.line().plain)


def test_opening_a_record_that_ended_lately_asks_accounting_for_usage_once(tmp_path: Path) -> None:
    """A record whose tasks ended minutes ago, and whose usage accounting never gives (cancelled while
    pending): opening it asked sacct once; once its ended tasks were watched for a requeue, the
    follow-up after the watch asked again at 3, 13, 33 s... for four minutes at every opening."""
    import threading

    from test_console_fixtures import FIXED_ISO, build_history

    from backends.logheader import iso_now
    from backends.records.attempts import ledger_path
    from backends.records.history import load_history
    from backends.watch.slurm.accounting import CommandResult
    from hyperion_console.watch import watch_slurm

    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")
    ledger = ledger_path(record)
    ledger.write_text(ledger.read_text().replace(FIXED_ISO, iso_now()))     # ended a moment ago
    asked: list[str] = []

    def query(argv) -> CommandResult:
        asked.append(argv[0])
        return CommandResult(0, "", "")          # the controller forgot the job; no usage rows

    stop = threading.Event()
    watching = threading.Thread(target=watch_slurm, args=(load_history(str(record)), lambda seen: None, stop),
                                kwargs={"runner": query}, daemon=True)
    watching.start()
    watching.join(5)
    stop.set()
    assert not watching.is_alive(), asked           # no follow-up: nothing ended while it watched
    assert asked.count("sacct") == 1 and asked.count("squeue") == 1, asked


def test_the_ask_for_usage_beside_a_watch_waits_when_the_watch_spent_its_minute(tmp_path: Path,
                                                                                monkeypatch) -> None:
    """The console's ask for what ended tasks used, beside its watch, had its own pace and no
    budget: bench_queries counted 31 calls in a minute (29 squeue of the watch and 2 such sacct),
    budget 30. Charged to the watch's budget, a spent minute holds it back too."""
    import threading
    import time

    from test_console_fixtures import build_history

    import backends.watch.poller as poller_module
    from backends.records.history import load_history
    from backends.watch.budget import QueryBudget
    from backends.watch.slurm.accounting import CommandResult
    from hyperion_console.watch import watch_slurm

    def spent(clock=time.monotonic) -> QueryBudget:
        budget = QueryBudget(clock=clock)
        budget.charge(30)              # the watch's minute is spent: its next call is a minute away
        return budget

    monkeypatch.setattr(poller_module, "QueryBudget", spent)
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", n=3, unfinished=(3,))
    asked: list[str] = []

    def query(argv) -> CommandResult:
        asked.append(argv[0])
        return CommandResult(0, "", "")

    stop = threading.Event()
    watching = threading.Thread(target=watch_slurm, args=(load_history(str(record)), lambda seen: None, stop),
                                kwargs={"runner": query}, daemon=True)
    watching.start()
    time.sleep(1.5)
    stop.set()
    watching.join(5)
    assert not watching.is_alive()
    assert asked == ["squeue"], asked       # the watch's first poll, which every face makes at once


@pytest.mark.slurm
def test_the_log_title_of_a_task_slurm_cancels_says_so_not_just_following(slurm_cluster, tmp_path: Path) -> None:
    """The log of a task Slurm ends stops mid-run without its `# Ended` line; titled `following`
    alone it read like a task still running. Cancelled while shown, the title says who ended it and
    where the reason is; Slurm's .err itself (`l`) needs no such note."""
    script = "import sys, time\nprint('working on', sys.argv[1], flush=True)\ntime.sleep(60)\n"
    record = submit_real_array(tmp_path / "log" / "k.JOB.log", "JOB=1:1", sys.executable, "-c", script, "JOB")
    job = record.jobs[0].job_id

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 30)) as pilot:
            jobs = app.jobs_screen
            pane = jobs.log_pane
            title = lambda: str(jobs.query_one("#log-title").content)   # noqa: E731
            await wait_for(pilot, lambda: pane.view.lines[-1:] == ["working on 1"], 90)
            assert title().endswith("k.1.log · following"), title()
            subprocess.run(["scancel", f"{job}_1"], check=True)
            await wait_for(pilot, lambda: "CANCELLED by Slurm (l: its .err)" in title(), 60)
            # ended, as `logs -f` says it: no longer `following` (it said both)
            assert title().endswith("k.1.log · ended CANCELLED by Slurm (l: its .err)"), title()
            await pilot.press("l")
            await wait_for(pilot, lambda: "[err]" in title(), 5)
            assert "by Slurm" not in title() and title().endswith(" · ended CANCELLED"), title()

    try:
        asyncio.run(scenario())
    finally:
        subprocess.run(["scancel", job], check=False)


def test_usage_another_writer_recorded_without_a_peak_keeps_the_peak_the_console_shows(tmp_path: Path) -> None:
    """Beside a watch, the usage another writer recorded first replaces the usage shown: a record of
    it made before accounting told the peak (hyperion-submit's wait, at the task's end) took away the
    peak the console's own sacct had shown. The ledger's figures win; a figure it lacks stays."""
    from dataclasses import replace

    from backends.records.attempts import TaskUsage, append_entries
    from backends.records.history import load_history
    from backends.watch.rows import task_row
    from backends.watch.usage import Usage
    from hyperion_console.watch import Shown, ledger_rows
    from test_console_fixtures import build_history

    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", n=2, failures={})
    history = load_history(record)
    task = history.current.tasks[0]
    key = (task.job_id, task.array_task_id)
    peak = Usage(max_rss_bytes=50 << 20, elapsed_seconds=10.0, req_mem_bytes=100 << 20)
    shown = Shown({key: replace(task_row(history, task, {}), usage=peak)}, {key: None})
    append_entries(str(record), [TaskUsage(1, task.value, Usage(cpu_seconds=3.0, elapsed_seconds=12.0).to_json())])
    told = ledger_rows(load_history(record), {key: task}, shown)
    assert [row.usage for row in told] == [Usage(max_rss_bytes=50 << 20, cpu_seconds=3.0, elapsed_seconds=12.0,
                                                 req_mem_bytes=100 << 20)]
    assert shown.rows[key].usage == told[0].usage


@pytest.mark.slurm
def test_the_watch_of_a_job_the_controller_forgot_says_why_its_tasks_are_unknown(slurm_cluster, tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """A job the controller forgot (`squeue -j J`: 'Invalid job id specified') while accounting has
    it running (slurmdbd missed its end: its COMPLETED rows read RUNNING): the console's watch ended
    with its tasks UNKNOWN and not a word why (`every task ended: final states from Slurm`), where
    `status` and `watch` say it. The status line keeps `status`'s line."""
    import shutil

    from hyperion_console.widgets.summary import PollStatus

    record = submit_real_array(tmp_path / "log" / "g.JOB.log", "JOB=1:2", "true")
    job = record.jobs[0].job_id
    deadline = time.monotonic() + 120
    while subprocess.run(["sacct", "-X", "-n", "-P", "-j", job, "-o", "State"], capture_output=True, text=True,
                         check=False).stdout.split() != ["COMPLETED", "COMPLETED"]:
        assert time.monotonic() < deadline, "the array did not end in accounting"
        time.sleep(1)
    squeue, sacct = shutil.which("squeue"), shutil.which("sacct")
    _fake_slurm(tmp_path, monkeypatch,
                squeue=('#!/bin/sh\ncase " $* " in *" -j "*) echo "slurm_load_jobs error: Invalid job id '
                        f'specified" >&2; exit 1;; esac\nexec {squeue} "$@"\n'),
                sacct=f'#!/bin/sh\n{sacct} "$@" | sed s/COMPLETED/RUNNING/g\n')
    line = (f"controller (squeue) knows no job(s) {job}, which accounting (sacct) still has running or waiting: "
            f"it ended and accounting never filed how (slurmdbd missed its end): squeue -j {job} said 'Invalid job "
            "id specified'; the 2 task(s) with no recorded end are not known (UNKNOWN)")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 30)) as pilot:
            status = app.jobs_screen.query_one("#poll-status", PollStatus)
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: status.final, 30)
            await pilot.pause(0.5)
            assert table_column(table, "state") == ["UNKNOWN", "UNKNOWN"]
            shown_line = status.line().plain
            assert shown_line.startswith("⚠ every task ended: final states from Slurm · "), shown_line
            assert line in shown_line, shown_line

    asyncio.run(scenario())


@pytest.mark.slurm
def test_the_watch_of_a_record_whose_attempt_1_job_slurm_does_not_know_ends_when_attempt_2_s_job_ends(
        slurm_cluster, tmp_path: Path) -> None:
    """A record waiting on attempt 1's job, which Slurm knows nothing of (purged from accounting:
    values 1-2 with no recorded end), and attempt 2's, a real array rerunning values 3 and 5: the
    Jobs screen showed `states from Slurm 4 s ago` for ever after attempt 2 ended (and `asking
    Slurm…` for ever of a record whose only job Slurm does not know), polling Slurm, with no word
    why values 1-2 were UNKNOWN. It ends once attempt 2's job ended, those two UNKNOWN, the status
    line keeping `watch`'s line. (Attempt 1's job id: above MaxJobId.)"""
    from test_console_fixtures import build_history

    from hyperion_console.widgets.summary import PollStatus

    job = subprocess.run(["sbatch", "--parsable", "--array=3,5", "-o", str(tmp_path / "slurm-%A_%a.out"),
                          "--wrap", "sleep 5"], capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", n=8, job="99999999", unfinished=(1, 2),
                           retry_job=job, retried={3: ("COMPLETED", 0), 5: ("COMPLETED", 0)})
    ledger = Path(str(record).replace(".submit.json", ".attempts.jsonl"))
    ledger.write_text("".join(line + "\n" for line in ledger.read_text().splitlines()    # attempt 2 runs
                              if json.loads(line).get("job_id") != job or json.loads(line)["type"] != "final"))
    line = (f"Slurm knows no job 99999999, which {record} submitted; "
            "the 2 task(s) with no recorded end are not known (UNKNOWN)")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(160, 30)) as pilot:
            status = app.jobs_screen.query_one("#poll-status", PollStatus)
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: status.final, 90)
            await pilot.pause(0.5)
            assert table_column(table, "state") == ["UNKNOWN", "UNKNOWN", "COMPLETED", "COMPLETED", "COMPLETED",
                                                    "OUT_OF_MEMORY", "COMPLETED", "COMPLETED"]
            shown_line = status.line().plain
            assert shown_line.startswith("⚠ every task ended: final states from Slurm · "), shown_line
            assert line in shown_line, shown_line

    try:
        asyncio.run(scenario())
    finally:
        subprocess.run(["scancel", job], check=False)
