"""Jobs screen: per-task table from the core, state filter, live log pane, cancel."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from conftest import submit_real_array
from test_console_fixtures import (
    build_history,
    build_local_record,
    console_on,
    notifications,
    posted,
    screen_lines,
    table_column,
    wait_for,
)

from backends.records.record import JobRecord, SubmitRecord, TaskRecord
from backends.states import JobState, TaskState
from hyperion_console.app import make_app
from hyperion_console.messages import CancelRequested, JobsUpdated, RecordOpened, RecordsListed
from hyperion_console.screens.confirm import ConfirmScreen
from hyperion_console.widgets.record_list import distinct_names

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
RESULTS = {1: ("COMPLETED", 0), 2: ("COMPLETED", 0), 3: ("FAILED", 3), 4: ("COMPLETED", 0)}


def test_a_local_run_that_stopped_at_a_failure_shows_a_full_progress_bar(tmp_path: Path, cli_env, test_site) -> None:
    """A real local run stopped at value 2 of 4: the summary said every task ended, the bar 25%
    (the values never reached, NOT_RUN, are final but were not counted as done)."""
    import subprocess

    (tmp_path / "task.sh").write_text('[ "$IDX" = 2 ] && exit 4; exit 0\n')
    subprocess.run(["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:4", "--output-file",
                    "log/r.IDX.log", "--", "bash", "task.sh"], cwd=tmp_path, env=cli_env, capture_output=True,
                   timeout=60)
    record = tmp_path / "log" / "q" / "r.IDX.submit.json"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: "NOT_RUN" in table_column(table, "state"), 10)
            assert table_column(table, "state") == ["COMPLETED", "FAILED", "NOT_RUN", "NOT_RUN"]
            assert jobs.query_one("#jobs-progress").percentage == 1.0

    asyncio.run(scenario())


def test_table_counts_and_filter_follow_the_local_results(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, RESULTS)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: "FAILED" in table_column(table, "state"), 10)
            assert table_column(table, "state") == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED"]
            assert table_column(table, "exit") == ["0", "0", "3", "0"]
            summary = str(jobs.query_one("#jobs-summary").content)
            assert "COMPLETED 3" in summary and "FAILED 1" in summary
            assert jobs.query_one("#jobs-progress").percentage == 1.0
            options = jobs.query_one("#records")
            await wait_for(pilot, lambda: options.option_count == 1, 10)
            assert options.option_count == 1 and options.get_option_at_index(0).id == str(record)
            while jobs.filter != "FAILED":
                await pilot.press("f")
            assert table_column(table, "value") == ["3"]
            await pilot.press("f")                       # CANCELLED: none
            assert table.row_count == 0
            jobs.set_filter("all")
            await pilot.pause()
            assert table_column(table, "value") == ["1", "2", "3", "4"]

    asyncio.run(scenario())


def test_a_single_task_reads_1_task_in_the_summary_and_the_record_list(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, {1: ("COMPLETED", 0)})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            summary = jobs.query_one("#jobs-summary")
            await wait_for(pilot, lambda: "COMPLETED" in str(summary.content), 10)
            assert str(summary.content) == "1 task  COMPLETED 1"
            options = jobs.query_one("#records")
            await wait_for(pilot, lambda: options.option_count == 1, 10)
            label = str(options.get_option_at_index(0).prompt)
            assert "    1 task   " in label and "tasks" not in label

    asyncio.run(scenario())


def test_log_pane_follows_the_selected_task_live(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, RESULTS)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            log = jobs.query_one("#log")
            await wait_for(pilot, lambda: "working on part 1" in log.lines, 10)
            await pilot.press("down", "down")             # the opened record's tasks have the focus
            await wait_for(pilot, lambda: "working on part 3" in log.lines, 10)
            assert "task.3.log" in str(jobs.query_one("#log-title").content)
            with open(tmp_path / "exp" / "log" / "task.3.log", "a") as handle:
                handle.write("a line written while watching\n")
            await wait_for(pilot, lambda: log.lines[-1:] == ["a line written while watching"], 10)
            await pilot.press("l")                        # local tasks have no q/ .err
            assert "none for this task" in str(jobs.query_one("#log-title").content)

    asyncio.run(scenario())


@pytest.mark.usefixtures("slurm_knows_none_of_these_jobs")
def test_an_empty_log_says_so_in_the_pane_as_hyperion_jobs_logs_does(tmp_path: Path) -> None:
    """`l` on a task whose q/slurm-*.err is empty showed an empty pane under the title: a user could
    not tell an empty file from a pane that failed to load. It says it is empty, in `logs`'s words."""
    from backends.records.record import load_record

    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")
    err = Path(load_record(record).tasks[0].slurm_err)
    err.parent.mkdir(parents=True, exist_ok=True)
    err.write_text("")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            log, title = jobs.query_one("#log"), jobs.query_one("#log-title")
            await wait_for(pilot, lambda: "extract.1.log" in str(title.content) and log.lines, 10)
            await pilot.press("l")                       # Slurm's .err of task 1: 0 bytes
            empty = "(empty: 0 bytes, nothing written to the task's Slurm stderr file)"
            await wait_for(pilot, lambda: any(line.startswith(empty) for line in screen_lines(app)), 10)
            assert str(err) in str(title.content) and log.lines == []
            with open(err, "a") as handle:                # written to: the note gives way to the line
                handle.write("slurmstepd: error: something\n")
            await wait_for(pilot, lambda: log.lines == ["slurmstepd: error: something"], 10)
            assert not any(empty in line for line in screen_lines(app))

    asyncio.run(scenario())


def test_log_pane_never_shows_a_log_under_another_title(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, RESULTS)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            log, title = jobs.query_one("#log"), jobs.query_one("#log-title")
            await wait_for(pilot, lambda: "working on part 1" in log.lines, 10)
            for source in ("err", "out"):                 # local tasks have neither
                await pilot.press("l")
                assert str(title.content) == f"log [{source}]: none for this task"
                assert log.lines == []
            await pilot.press("l")                        # back to the program log
            assert "task.1.log" in str(title.content) and str(title.content).startswith("log [log]")
            await wait_for(pilot, lambda: "working on part 1" in log.lines, 10)
            jobs.set_filter("CANCELLED")                  # hides every task
            await pilot.pause()
            assert str(title.content) == "log [log]: (select a task)" and log.lines == []
            jobs.set_filter("FAILED")
            await wait_for(pilot, lambda: "working on part 3" in log.lines, 10)
            assert "task.3.log" in str(title.content)

    asyncio.run(scenario())


def test_cancel_of_a_local_record_is_refused_with_a_notification(tmp_path: Path) -> None:
    """Refused as `hyperion-jobs cancel` refuses it, in its words: nothing of an ended run runs (while
    one runs, they name its runner's pid to stop; tests/test_jobs_local.py)."""
    record = build_local_record(tmp_path, RESULTS)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("X")
            assert not isinstance(app.screen, ConfirmScreen)
            assert (f"cancel: {app.jobs_screen.record_path} is a local run and nothing of it runs; nothing to cancel"
                    in notifications(app)), notifications(app)

    asyncio.run(scenario())


def _slurm_record(tmp_path: Path, n: int) -> SubmitRecord:
    tasks = tuple(TaskRecord(value=i, job_id="4242", array_task_id=i, log=str(tmp_path / f"t.{i}.log"),
                             slurm_out=None, slurm_err=None) for i in range(1, n + 1))
    return SubmitRecord(path=str(tmp_path / "q" / "t.JOB.submit.json"), backend="slurm",
                        argv=("hyperion-submit",), cfg=str(CONF / "submit_test_cluster.yaml"), options={},
                        script=None, array_name="JOB", jobs=(JobRecord("4242", 0, f"1-{n}"),), tasks=tasks,
                        submitted_at="2026-01-01T00:00:00", cwd=str(tmp_path))


def test_cancel_of_finished_slurm_tasks_is_refused_not_confirmed(tmp_path: Path) -> None:
    """scancel exits 0 on a finished job, so the console must not offer it and then say "cancelled"."""
    record = _slurm_record(tmp_path, 2)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, (
                TaskState("4242", 1, JobState.COMPLETED, 0, None, 3.0, "vm"),
                TaskState("4242", 2, JobState.RUNNING, None, None, 3.0, "vm"))))
            await pilot.pause()
            jobs.query_one("#tasks").focus()
            await pilot.press("x")                       # task 1: COMPLETED
            assert not isinstance(app.screen, ConfirmScreen)
            assert "4242_1 already ended (COMPLETED): nothing to cancel" in notifications(app)
            await pilot.press("X")                       # task 2 still runs: the job may be cancelled
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            jobs.post_message(JobsUpdated(record.path, (
                TaskState("4242", 2, JobState.FAILED, 1, None, 4.0, "vm"),)))
            await pilot.pause()
            await pilot.press("X")
            assert not isinstance(app.screen, ConfirmScreen)
            assert "every task already ended: nothing to cancel" in notifications(app)

    asyncio.run(scenario())


def test_filtered_table_follows_live_updates_in_record_order(tmp_path: Path) -> None:
    record = _slurm_record(tmp_path, 6)

    def update(*pairs):
        return JobsUpdated(record.path, tuple(TaskState("4242", i, state, None, None, 1.0, "vm")
                                              for i, state in pairs))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            jobs.show_record(record)
            jobs.post_message(update(*((i, JobState.PENDING) for i in range(1, 7))))
            jobs.set_filter("RUNNING")
            await pilot.pause()
            assert table.row_count == 0
            jobs.post_message(update((5, JobState.RUNNING), (2, JobState.RUNNING)))
            await pilot.pause()
            assert table_column(table, "value") == ["2", "5"]
            jobs.post_message(update((2, JobState.COMPLETED), (4, JobState.RUNNING), (1, JobState.RUNNING)))
            await pilot.pause()
            assert table_column(table, "value") == ["1", "4", "5"]
            assert table_column(table, "state") == ["RUNNING"] * 3
            assert "COMPLETED 1" in str(jobs.query_one("#jobs-summary").content)
            jobs.post_message(update((4, JobState.FAILED)))
            await pilot.pause()
            assert table_column(table, "value") == ["1", "5"]
            jobs.set_filter("all")
            await pilot.pause()
            assert table_column(table, "state") == ["RUNNING", "COMPLETED", "PENDING", "FAILED",
                                                    "RUNNING", "PENDING"]

    asyncio.run(scenario())


@pytest.mark.slurm
def test_cancel_one_task_of_a_slurm_array_after_confirmation(slurm_cluster, tmp_path: Path) -> None:
    record = submit_real_array(tmp_path / "log" / "c.JOB.log", "JOB=1:2", "sleep", "90")

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state") == ["RUNNING", "RUNNING"], 60)
            jobs.query_one("#tasks").focus()
            await pilot.press("x")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await wait_for(pilot, lambda: table_column(table, "state")[0] == "CANCELLED", 60)
            assert table_column(table, "state")[1] == "RUNNING"
            await pilot.press("X", "y")                  # the whole job
            await wait_for(pilot, lambda: table_column(table, "state") == ["CANCELLED"] * 2, 60)
        targets = [m.targets for m in posted(seen, CancelRequested)]
        job = record.jobs[0].job_id
        assert targets == [(f"{job}_1",), (job,)]
        assert posted(seen, RecordOpened)[0].tasks == 2

    asyncio.run(scenario())


def test_choosing_a_recent_submission_opens_it(tmp_path: Path) -> None:
    import os

    first = build_local_record(tmp_path / "a", {1: ("COMPLETED", 0)})
    second = build_local_record(tmp_path / "b", {1: ("FAILED", 1), 2: ("COMPLETED", 0)})
    os.utime(first, (1_790_000_000, 1_790_000_000))
    os.utime(second, (1_790_000_100, 1_790_000_100))

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await pilot.press("escape", "2")
            records = app.jobs_screen.query_one("#records")
            await wait_for(pilot, lambda: records.option_count == 2, 10)
            assert {records.get_option_at_index(i).id for i in range(2)} == {str(first), str(second)}
            # Both are task.JOB.submit.json: each line names the folder that tells them apart (and
            # not the `.submit.json` both end with).
            labels = {records.get_option_at_index(i).id: records.get_option_at_index(i).prompt.plain
                      for i in range(2)}
            assert labels[str(first)].endswith("a/exp/log/q/task.JOB")
            assert labels[str(second)].endswith("b/exp/log/q/task.JOB")
            table = app.jobs_screen.query_one("#tasks")
            # none given: the newest is open, and highlighted (Enter did nothing until an arrow key
            # had highlighted one)
            await wait_for(pilot, lambda: table_column(table, "state") == ["FAILED", "COMPLETED"], 10)
            assert records.current == str(second) and records.highlighted == 0
            records.focus()
            await pilot.press("down", "enter")
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED"], 10)
        assert [m.record_path for m in posted(seen, RecordOpened)] == [str(second), str(first)]

    asyncio.run(scenario())


def test_record_may_be_named_by_its_q_directory(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, RESULTS)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record.parent, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: posted(seen, RecordOpened), 10)
        assert posted(seen, RecordOpened)[0].record_path == str(record)

    asyncio.run(scenario())


def test_at_80_columns_the_record_list_shows_what_tells_records_apart_not_their_shared_suffix(tmp_path: Path) -> None:
    """At 80 columns the name column holds about 24 cells: `a/exp/log/q/task.JOB.sub…` and
    `b/exp/log/q/task.JOB.sub…`, half of it the `.submit.json` every record ends with. Shown without
    it, the names read whole; the record opened is still the file itself."""
    first = build_local_record(tmp_path / "a", {1: ("COMPLETED", 0)})
    second = build_local_record(tmp_path / "b", {1: ("FAILED", 1)})

    async def scenario() -> list:
        async with console_on(first, [tmp_path]) as (app, pilot, seen):
            jobs = app.jobs_screen
            records = jobs.query_one("#records")
            await wait_for(pilot, lambda: records.option_count == 2, 10)
            await pilot.pause(0.3)
            lines = [line.rstrip() for line in screen_lines(app)[1:3]]
            assert sorted(line[-21:] for line in lines) == [" a/exp/log/q/task.JOB", " b/exp/log/q/task.JOB"], lines
            assert not any("…" in line or ".submit" in line for line in lines), lines
            await pilot.press("o")
            await pilot.press("down" if records.paths.index(str(second)) == 1 else "up", "enter")
            await wait_for(pilot, lambda: jobs.record_path == str(second), 10)
        return seen

    seen = asyncio.run(scenario())
    assert [m.record_path for m in posted(seen, RecordOpened)] == [str(first), str(second)]


def test_record_names_grow_only_as_far_as_they_clash() -> None:
    paths = ["/x/a/log/q/t.JOB.submit.json", "/x/b/log/q/t.JOB.submit.json", "/x/a/log/q/u.submit.json",
             "/q/t.JOB.submit.json"]
    assert distinct_names(paths) == {
        "/x/a/log/q/t.JOB.submit.json": "a/log/q/t.JOB.submit.json",
        "/x/b/log/q/t.JOB.submit.json": "b/log/q/t.JOB.submit.json",
        "/x/a/log/q/u.submit.json": "u.submit.json",
        "/q/t.JOB.submit.json": "/q/t.JOB.submit.json",   # nothing left to add: the whole path
    }


def test_small_terminals_keep_task_rows_or_say_the_size_needed(tmp_path: Path) -> None:
    """A split tmux pane: the record list and the log pane give way first, so the table keeps
    rows; when even that leaves too few, one line says how many lines are needed."""
    record = build_local_record(tmp_path, {v: ("COMPLETED", 0) for v in range(1, 11)})

    def task_rows(app) -> list[str]:
        return [line for line in screen_lines(app) if "localhost" in line]     # the node column

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(60, 15)) as pilot:
            await wait_for(pilot, lambda: len(task_rows(app)) >= 3, 10)
            await pilot.pause()
            assert not any("too small" in line for line in screen_lines(app))
            assert any(line.startswith("log [log]") for line in screen_lines(app))   # log pane shrunk, kept
            await pilot.resize_terminal(60, 10)          # log pane hidden
            await pilot.pause()
            assert len(task_rows(app)) >= 3 and not any("too small" in line for line in screen_lines(app))
            await pilot.resize_terminal(60, 8)
            await pilot.pause()
            assert screen_lines(app)[4].startswith("terminal too small (60x8): needs 9+ lines (80x24 shows")
            assert len(task_rows(app)) == 2          # the line covers the header row, not a task row
            await pilot.resize_terminal(80, 24)
            await pilot.pause()
            assert len(task_rows(app)) == 10 and not any("too small" in line for line in screen_lines(app))
            await pilot.resize_terminal(60, 15)
            await pilot.pause()
            await pilot.resize_terminal(60, 8)     # at once, the log pane shown before: it was not said
            await pilot.pause()
            assert screen_lines(app)[4].startswith("terminal too small (60x8): needs 9+ lines"), screen_lines(app)

    asyncio.run(scenario())


def test_a_resize_while_a_dialog_or_another_screen_is_on_top_reaches_the_jobs_screen(tmp_path: Path) -> None:
    """Textual resizes only the screen on top: the Jobs screen kept the layout of the size it
    last saw (its log pane at 60x10, no too-small line at 60x8) once the help was closed."""
    record = build_local_record(tmp_path, {v: ("COMPLETED", 0) for v in range(1, 11)})

    def task_rows(app) -> list[str]:
        return [line for line in screen_lines(app) if "localhost" in line]

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: len(task_rows(app)) >= 3, 10)
            await pilot.press("question_mark")
            await pilot.resize_terminal(60, 10)
            await pilot.pause()
            await pilot.press("escape")              # the help closed: the Jobs screen at 60x10
            await wait_for(pilot, lambda: not any(line.startswith("log [log]") for line in screen_lines(app)), 5)
            assert len(task_rows(app)) >= 3
            await pilot.press("1")                   # the Submit screen on top
            await pilot.resize_terminal(60, 8)
            await pilot.pause()
            await pilot.press("2")
            await wait_for(pilot, lambda: screen_lines(app)[4].startswith("terminal too small (60x8)"), 5)
            await pilot.press("1")
            await pilot.resize_terminal(80, 24)
            await pilot.pause()
            await pilot.press("2")
            await wait_for(pilot, lambda: len(task_rows(app)) == 10, 5)   # one record: one line, all ten tasks fit
            assert not any("too small" in line for line in screen_lines(app))
            assert any(line.startswith("log [log]") for line in screen_lines(app))

    asyncio.run(scenario())


def test_the_jobs_screen_opened_without_a_record_shows_the_newest_submission(tmp_path: Path) -> None:
    """Started without --record, the Jobs screen said "no submission selected" over a list of recent
    submissions until one was chosen; it now opens the newest (marked ▸), and still says "no submission
    selected" where there is none."""
    import os

    older = build_local_record(tmp_path / "older", {1: ("COMPLETED", 0)})
    newer = build_local_record(tmp_path / "newer", {1: ("COMPLETED", 0), 2: ("FAILED", 3)})
    os.utime(older, (1_790_000_000, 1_790_000_000))
    os.utime(newer, (1_790_000_100, 1_790_000_100))

    async def scenario(search: Path) -> tuple[str | None, str, list[str]]:
        seen: list = []
        app = make_app(cfg_dir=CONF, search_dirs=[search])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await pilot.press("2")
            jobs = app.jobs_screen
            if search == tmp_path:
                await wait_for(pilot, lambda: table_column(jobs.query_one("#tasks"), "state")
                               == ["COMPLETED", "FAILED"], 10)
            else:
                await wait_for(pilot, lambda: posted(seen, RecordsListed), 10)     # the search ended
                await pilot.pause(0.5)
            return jobs.record_path, str(jobs.query_one("#jobs-summary").content), screen_lines(app)

    path, summary, lines = asyncio.run(scenario(tmp_path))
    assert path == str(newer) and summary.startswith("2 tasks")
    assert any(line.startswith(" ▸ local") and "2 tasks" in line for line in lines), lines
    empty = tmp_path / "empty"
    empty.mkdir()
    path, summary, _ = asyncio.run(scenario(empty))
    assert path is None and summary == "no submission selected"


def test_the_record_list_is_as_high_as_its_records_up_to_four_lines(tmp_path: Path) -> None:
    """One record took a 4-line list (3 blank lines the task table could have used): the list is now
    one line a record, four at most (more scroll), and the summary follows right under it."""
    import os

    one = build_local_record(tmp_path / "one", {1: ("COMPLETED", 0)})
    many = [build_local_record(tmp_path / "many" / f"e{i}", {1: ("COMPLETED", 0)}) for i in range(6)]
    for i, path in enumerate(many):
        os.utime(path, (1_790_000_000 + i, 1_790_000_000 + i))

    async def scenario(record: Path, search: Path, count: int) -> tuple[int, list[str]]:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[search])
        async with app.run_test(size=(80, 24)) as pilot:
            options = app.jobs_screen.query_one("#records")
            await wait_for(pilot, lambda: options.option_count == count, 10)
            await pilot.pause()
            return options.region.height, screen_lines(app)

    height, lines = asyncio.run(scenario(one, tmp_path / "one", 1))
    assert height == 1
    assert "local" in lines[1] and lines[2].startswith("1 task"), lines[:4]
    height, lines = asyncio.run(scenario(many[0], tmp_path / "many", 6))
    assert height == 4
    assert lines[5].startswith("1 task"), lines[:7]


def test_the_record_list_says_what_list_says_of_each_record_in_fixed_columns(tmp_path: Path, cli_env) -> None:
    """A retried record's line said `4243   3 rerun  att 2`: the newest attempt's job and tasks only,
    where `hyperion-jobs list` and the task table beside it said 8 tasks of jobs 4242,4243; and `att 2`
    was put in before the date, so the dates of a retried and a plain record sat at different
    columns, and a long job list pushed the name off an 80-column screen. Each line now says the
    jobs, tasks and attempts `list` says, a long job list cut after whole ids with `…`, the dates in
    one column and the folder that tells two same-named records apart on screen."""
    import json

    from conftest import run_cli
    from test_console_fixtures import build_history

    site = CONF / "submit_test_cluster.yaml"
    retried = build_history(tmp_path / "a", site, retried={3: ("COMPLETED", 0), 5: ("COMPLETED", 0),
                                                            6: ("FAILED", 1)})
    plain = build_history(tmp_path / "b", site)
    long_ids = build_history(tmp_path / "c", site, retried={3: ("COMPLETED", 0)}, job="104748", retry_job="104782")
    listed = run_cli("hyperion-jobs", "list", "--json", str(tmp_path), env=cli_env)
    said = {r["record"]: r for r in json.loads(listed.stdout)["records"]}
    assert {said[str(p)]["tasks"] for p in (retried, plain, long_ids)} == {8}, listed.stdout

    async def scenario() -> tuple[dict[str, str], list[str]]:
        app = make_app(cfg_dir=CONF, record=retried, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            records = app.jobs_screen.query_one("#records")
            await wait_for(pilot, lambda: records.option_count == 3, 10)
            await pilot.pause()
            return ({records.get_option_at_index(i).id: records.get_option_at_index(i).prompt.plain
                     for i in range(3)}, screen_lines(app))

    labels, lines = asyncio.run(scenario())
    for path, jobs in ((retried, "4242,4243"), (plain, "4242"), (long_ids, "104748…")):
        summary = said[str(path)]
        attempts = f"att {summary['attempts']}" if summary["attempts"] > 1 else ""
        assert f"slurm {jobs:<12} {summary['tasks']:>5} tasks {attempts:<6} 09-21 " in labels[str(path)], labels
    assert ",".join(said[str(retried)]["jobs"]) == "4242,4243" and said[str(retried)]["attempts"] == 2
    assert len({label.index("09-21") for label in labels.values()}) == 1, labels
    shown = [line for line in lines if "extract.JOB" in line]
    # the whole name: without the .submit.json all three share, it fits (it was `a/exp/log/q/extract.JOB.…`)
    assert len(shown) == 3 and all(line.rstrip().endswith("/exp/log/q/extract.JOB") for line in shown), lines[:5]
    assert sorted(line.rstrip().split("  ")[-1].split("/")[0].strip() for line in shown) == ["a", "b", "c"], shown


def test_a_record_whose_later_window_sbatch_refused_says_the_values_left_out(tmp_path: Path) -> None:
    """Opened later (--record, the list, a restart), a record sbatch refused a window of showed
    `COMPLETED 2` and nothing else, as if whole: the status line now keeps what `hyperion-jobs status`
    says of it (the values left out, sbatch's line, the retry that submits them), and it is told once."""
    import json

    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("COMPLETED", 0)})
    data = json.loads(record.read_text())
    data.update(unsubmitted=[3, 4], refused="sbatch failed (exit 1): Invalid job array specification")
    record.write_text(json.dumps(data))
    said = (f"JOB=3-4 of attempt 1 not submitted: sbatch failed (exit 1): Invalid job array specification; "
            f"submit them with: hyperion-jobs retry {record}")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            jobs = app.jobs_screen
            status = jobs.query_one("#poll-status")
            await wait_for(pilot, lambda: "COMPLETED" in str(jobs.query_one("#jobs-summary").content), 10)
            await wait_for(pilot, lambda: status.final, 10)
            assert said in status.line().plain
            assert said in notifications(app)
            shown = " ".join(" ".join(line.split()) for line in screen_lines(app))    # wrapped in sight
            assert "COMPLETED 2" in shown and "JOB=3-4 of attempt 1 not submitted: sbatch failed" in shown

    asyncio.run(scenario())


def test_the_progress_label_says_100_only_once_every_task_ended(tmp_path: Path) -> None:
    """199 of 200 tasks ended read `100%` (the bar's label rounds) beside a task still pending."""
    from test_console_fixtures import build_history
    from textual.widgets._progress_bar import PercentageStatus

    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", n=200, unfinished=(200,), failures={})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            await wait_for(pilot, lambda: jobs.table.row_count == 200, 10)
            await pilot.pause(0.3)
            assert str(jobs.query_one("#jobs-progress").query_one(PercentageStatus).render()) == "99%"

    asyncio.run(scenario())


def test_a_later_windows_short_task_ids_do_not_cut_the_job_of_an_earlier_windows_last(tmp_path: Path) -> None:
    """`--array JOB=995:1008` with max_array_size 1001 is two windows: 912636_995..912636_1000, then
    912637_0..912637_7. The job column was as wide as the first and last task (912636_995, 912637_7),
    so value 1000 read `912636_10…` at 80 and at 120 columns, where `hyperion-jobs status` says
    912636_1000."""
    windows = {"912636": (0, range(995, 1001)), "912637": (1001, range(1001, 1009))}
    tasks = tuple(TaskRecord(value=v, job_id=job, array_task_id=v - offset, log=str(tmp_path / f"t.{v}.log"),
                             slurm_out=None, slurm_err=None)
                  for job, (offset, values) in windows.items() for v in values)
    record = SubmitRecord(path=str(tmp_path / "q" / "t.JOB.submit.json"), backend="slurm",
                          argv=("hyperion-submit",), cfg=str(CONF / "submit_test_cluster.yaml"), options={},
                          script=None, array_name="JOB",
                          jobs=(JobRecord("912636", 0, "995-1000"), JobRecord("912637", 1001, "0-7")),
                          tasks=tasks, submitted_at="2026-01-01T00:00:00", cwd=str(tmp_path))

    async def scenario(size: tuple[int, int]) -> list[str]:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=size) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, (
                TaskState("912636", 1000, JobState.PENDING, None, None, None, None, reason="JobArrayTaskLimit"),
                TaskState("912637", 7, JobState.PENDING, None, None, None, None, reason="JobHeldUser"))))
            await pilot.pause()
            return screen_lines(app)

    for size in ((80, 24), (120, 40)):
        lines = asyncio.run(scenario(size))
        rows = {line.split()[0]: line for line in lines if line.split() and line.split()[0] in {"1000", "1008"}}
        assert " 912636_1000 " in rows["1000"] and "JobArrayTaskLimit" in rows["1000"], (size, rows)
        if size[1] >= 40:                                  # below the fold at 24 lines
            assert " 912637_7 " in rows["1008"] and "JobHeldUser" in rows["1008"], (size, rows)
        assert not any("912636_10…" in line for line in lines), (size, lines)


@pytest.mark.slurm
def test_a_windowed_array_on_the_cluster_shows_every_job_task_whole(slurm_cluster, tmp_path: Path) -> None:
    """The speech engineer's run: `--array JOB=998:1003 --max-jobs-run 2` on a site whose
    max_array_size is 1001 goes out as two sbatch windows (J_998..J_1000, then K_0..K_2); the
    console watching it showed value 1000 as `J_10…`."""
    record = submit_real_array(tmp_path / "log" / "w.JOB.log", "JOB=998:1003", "true",
                               extra=("--max-jobs-run", "2"))
    first, second = (job.job_id for job in record.jobs)

    async def scenario() -> list[str]:
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED"] * 6, 90)
            return screen_lines(app)

    lines = asyncio.run(scenario())
    rows = {line.split()[0]: line.split()[1] for line in lines if line.split() and line.split()[0].isdigit()}
    assert rows["1000"] == f"{first}_1000" and rows["1003"] == f"{second}_2", rows


def test_slurm_reasons_show_whole_at_80_columns_beside_an_att_column(tmp_path: Path) -> None:
    """A retried record (att column) of JOB=1:1000 under job 912636: at 80 columns the 11-cell job
    ids left the reason 15 cells, and value 1000 read `JobArrayTaskLi…`. The state and node columns
    now give the cells their texts leave unused (no state here is wider than COMPLETED, no node than
    node01), and nothing else is cut."""
    from test_console_fixtures import build_history

    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", n=1000, failures={},
                           retried={1: ("COMPLETED", 0)}, job="912636", retry_job="912637")
    reasons = {997: "JobHeldUser", 998: "Dependency", 999: "BeginTime", 1000: "JobArrayTaskLimit"}

    async def scenario() -> list[str]:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            await wait_for(pilot, lambda: jobs.table.row_count == 1000, 10)
            jobs.post_message(JobsUpdated(jobs.record_path, tuple(
                TaskState("912636", value, JobState.PENDING, None, None, None, None, reason=reason)
                for value, reason in reasons.items())))
            await wait_for(pilot, lambda: table_column(jobs.table, "state")[-1] == "PENDING", 10)
            assert [c.title for c in jobs.table.columns][:2] == ["value", "att"]
            jobs.table.action_last()
            await pilot.pause()
            return screen_lines(app)

    lines = asyncio.run(scenario())
    rows = {line.split()[0]: line for line in lines if line.split() and line.split()[0].isdigit()}
    for value, reason in reasons.items():
        assert f" 912636_{value} " in rows[str(value)] and f" {reason}" in rows[str(value)], rows
    assert "COMPLETED" in rows["996"] and " node01 " in rows["996"], rows
    assert not any("…" in line for line in lines if line.split() and line.split()[0].isdigit()), lines


def _two_windows(tmp_path: Path, held: bool = False) -> SubmitRecord:
    """`--array JOB=995:1008` under max_array_size 1001: 912636_995..1000, then 912637_0..7."""
    windows = {"912636": (0, range(995, 1001)), "912637": (1001, range(1001, 1009))}
    tasks = tuple(TaskRecord(value=v, job_id=job, array_task_id=v - offset, log=str(tmp_path / f"t.{v}.log"),
                             slurm_out=None, slurm_err=None)
                  for job, (offset, values) in windows.items() for v in values)
    return SubmitRecord(path=str(tmp_path / "q" / "t.JOB.submit.json"), backend="slurm",
                        argv=("hyperion-submit",), cfg=str(CONF / "submit_test_cluster.yaml"), options={},
                        script=None, array_name="JOB",
                        jobs=(JobRecord("912636", 0, "995-1000"), JobRecord("912637", 1001, "0-7", held=held)),
                        tasks=tasks, submitted_at="2026-01-01T00:00:00", cwd=str(tmp_path))


def _first_done_second(reason: str) -> tuple[TaskState, ...]:
    return (*(TaskState("912636", t, JobState.COMPLETED, 0, None, 3, "vm") for t in range(995, 1001)),
            *(TaskState("912637", t, JobState.PENDING, None, None, None, None, reason=reason) for t in range(8)))


def test_held_line_says_a_paused_window_is_all_that_is_left() -> None:
    """The core's line, for the console's status line and `hyperion-jobs status`."""
    from backends.watch.throttle import held_line

    def states(reason: str, record: SubmitRecord) -> dict:
        return {(s.job_id, s.task_id): s for s in _first_done_second(reason)}

    record = _two_windows(Path("/nowhere"))
    assert held_line(record, states("JobHeldUser", record)) == "8 tasks held by you (scontrol release 912637)"
    assert "held by an administrator (JobHeldAdmin" in held_line(record, states("JobHeldAdmin", record))
    assert held_line(record, states("Priority", record)) is None          # the cluster's to start
    running = states("JobHeldUser", record)
    running[("912636", 1000)] = TaskState("912636", 1000, JobState.RUNNING, None, None, 3, "vm")
    assert held_line(record, running) is None                             # something still runs
    # held while one of its own tasks ran (`scontrol hold J` after it started): said "8 tasks held"
    # of a window whose task 0 ran, and `status` printed it beside RUNNING 1
    own = states("JobHeldUser", record)
    own[("912637", 0)] = TaskState("912637", 0, JobState.RUNNING, None, None, 3, "vm")
    assert held_line(record, own) is None
    own[("912637", 0)] = TaskState("912637", 0, JobState.COMPLETED, 0, None, 3, "vm")     # it ended: 7 left
    # by its held tasks: `scontrol release 912637` would say "Job has already finished" of 0, exit 1
    assert held_line(record, own) == "7 tasks held by you (scontrol release '912637_[1-7]')"
    planned = _two_windows(Path("/nowhere"), held=True)                   # the plan's hold: a watcher's to lift
    assert held_line(planned, states("JobHeldUser", planned)) is None
    # some held by you, some by an administrator: it said "2 tasks held by you and an administrator
    # (JobHeldAdmin: only an administrator's scontrol release ...)" of tasks you may release yourself
    mixed = states("JobHeldUser", record)
    for task in (5, 6):
        mixed[("912637", task)] = TaskState("912637", task, JobState.PENDING, None, None, None, None,
                                            reason="JobHeldAdmin")
    assert held_line(record, mixed) == (
        "8 tasks held: 6 by you (scontrol release '912637_[0-4,7]'), 2 by an administrator (JobHeldAdmin: "
        "only an administrator's scontrol release '912637_[5-6]' lets them run)")
    # a job asked for by id (`status 912637`): its rows alone, the other window's weighed no more
    alone = {key: s for key, s in states("JobHeldUser", record).items() if key[0] == "912637"}
    assert held_line(record, alone) is None                               # 912636 reads as not reported
    assert held_line(record, alone, jobs=("912637",)) == "8 tasks held by you (scontrol release 912637)"
    assert held_line(record, states("JobHeldUser", record), jobs=("912636",)) is None   # that one ended


def test_the_status_line_says_a_window_you_paused_is_all_that_is_left(tmp_path: Path) -> None:
    """The first window ended, the second paused with `scontrol uhold 912637`: the status line said
    `states from Slurm 1 s ago` and nothing of the hold the run now waits on, for ever."""
    record = _two_windows(tmp_path)

    async def scenario(reason: str) -> str:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, _first_done_second(reason), as_of=time.time()))
            await pilot.pause()
            return " ".join(" ".join(line.split()) for line in screen_lines(app))

    shown = asyncio.run(scenario("JobHeldUser"))
    assert "8 tasks held by you (scontrol release 912637)" in shown, shown
    assert "held by" not in asyncio.run(scenario("Priority"))


def test_the_err_hint_of_a_task_slurm_ended_is_given_only_where_slurm_wrote_one(tmp_path: Path) -> None:
    """`ended CANCELLED by Slurm (l: its .err)` pointed at an .err a task cancelled while pending never
    wrote; the row tells it (no node, no time), with no look at the file from the UI thread."""
    tasks = tuple(TaskRecord(value=i, job_id="4242", array_task_id=i, log=str(tmp_path / f"t.{i}.log"),
                             slurm_out=str(tmp_path / f"slurm-4242_{i}.out"),
                             slurm_err=str(tmp_path / f"slurm-4242_{i}.err")) for i in (1, 2))
    record = SubmitRecord(path=str(tmp_path / "q" / "t.JOB.submit.json"), backend="slurm",
                          argv=("hyperion-submit",), cfg="conf/submit_test_cluster.yaml", options={},
                          script=None, array_name="JOB", jobs=(JobRecord("4242", 0, "1-2"),), tasks=tasks,
                          submitted_at="2026-01-01T00:00:00", cwd=str(tmp_path))

    async def scenario() -> list[str]:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, (
                TaskState("4242", 1, JobState.CANCELLED, None, None, 5.0, "vm"),      # ran, then cancelled
                TaskState("4242", 2, JobState.CANCELLED, None, None, 0.0, None))))    # cancelled while pending
            await pilot.pause()
            jobs.query_one("#tasks").focus()
            titles = []
            for key in ("home", "down"):
                await pilot.press(key)
                await pilot.pause(0.3)
                titles.append(str(jobs.query_one("#log-title").content))
            return titles

    ran, pending = asyncio.run(scenario())
    assert "t.1.log · ended CANCELLED by Slurm (l: its .err)" in ran, ran
    assert "CANCELLED" in pending and "(l: its .err)" not in pending, pending


@pytest.mark.parametrize("width", [80, 100])
def test_the_log_title_says_the_program_ended_and_a_process_was_oom_killed_at_80_columns(tmp_path: Path,
                                                                                         width: int) -> None:
    """A task whose program ended with code 0 (its log's footer) while Slurm counted an OOM kill of
    one child process: at 80 to 100 columns the log pane's title was cut at its end, `… · ended
    OUT_OF_MEMORY: the program ended…` (with a longer path, `…/experi…`: nothing of the end at all),
    hiding the code and the kill it is about. The title now says both in shorter words (the .err
    hint too where it fits), and gives up the start of the path first."""
    from backends.logheader import ended_line

    log_dir = tmp_path / "experiments" / "curation-run-2026-01" / "log"
    tasks = tuple(TaskRecord(value=i, job_id="4242", array_task_id=i, log=str(log_dir / f"t.{i}.log"),
                             slurm_out=str(log_dir / f"slurm-4242_{i}.out"),
                             slurm_err=str(log_dir / f"slurm-4242_{i}.err")) for i in (1,))
    log_dir.mkdir(parents=True)
    (log_dir / "t.1.log").write_text(f"shard 1 complete\n{ended_line(0, '2026-01-01T00:05:00', 300)}\n")
    record = SubmitRecord(path=str(log_dir / "q" / "t.JOB.submit.json"), backend="slurm",
                          argv=("hyperion-submit",), cfg="conf/submit_test_cluster.yaml", options={},
                          script=None, array_name="JOB", jobs=(JobRecord("4242", 0, "1"),), tasks=tasks,
                          submitted_at="2026-01-01T00:00:00", cwd=str(tmp_path))

    async def scenario() -> str:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(width, 30)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, (
                TaskState("4242", 1, JobState.OUT_OF_MEMORY, 0, 125, 300.0, "vm"),)))
            await pilot.pause()
            jobs.query_one("#tasks").focus()
            await pilot.press("home")
            await wait_for(pilot, lambda: "(code 0)" in str(jobs.query_one("#log-title").content), 10)
            region = jobs.query_one("#log-title").region
            return screen_lines(app)[region.y][region.x:region.right]

    title = asyncio.run(scenario())
    assert "/t.1.log · ended OUT_OF_MEMORY: program exit 0, a process OOM-killed" in title, title
    assert title.startswith("log [log]: …") and title.endswith(" (l: its .err)") == (width >= 100), title
