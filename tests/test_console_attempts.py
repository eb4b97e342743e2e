"""Jobs screen over a submission's attempts: the newest run of each value, the ledger's final states
without Slurm, only unfinished tasks polled, failure groups, the attempts and their logs, usage."""
from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from types import SimpleNamespace

from test_console_fixtures import (
    build_history,
    console_on,
    posted,
    rendered,
    screen_lines,
    slurm_like_record,
    table_column,
    text_of,
    wait_for,
)

import hyperion_console.watch as console_watch
from backends.records.attempts import read_ledger
from backends.states import JobState, TaskState
from backends.watch.budget import QueryBudget
from backends.watch.poller import PollUpdate
from backends.watch.usage import Usage
from hyperion_console.app import make_app
from hyperion_console.messages import (
    AttemptShown,
    AttemptsListed,
    FailureGroupChosen,
    FailureGroupsListed,
    JobsUpdated,
    RecordOpened,
    RetryPreviewed,
    WatchStarted,
)
from hyperion_console.screens.retry import RetryScreen

# its fixture records name jobs 4242 and 4243, which a test cluster's own ids pass: a real job 4242's
# usage, asked for beside the watch, went into a fixture ledger (CI on this machine)
pytestmark = pytest.mark.usefixtures("slurm_knows_none_of_these_jobs")

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
SITE = CONF / "submit_test_cluster.yaml"
RETRIED = {3: ("COMPLETED", 0), 6: ("FAILED", 1)}


def refuse_slurm(monkeypatch) -> None:
    """Any poller the console would start fails the test: the states must come from the ledger."""
    def no_watcher(*args, **kwargs):
        raise AssertionError("the console asked Slurm about tasks whose final state the ledger holds")

    monkeypatch.setattr(console_watch, "watcher", no_watcher)


def test_a_reopened_history_shows_every_attempts_final_states_without_asking_slurm(tmp_path, monkeypatch) -> None:
    record = build_history(tmp_path, SITE, retried=RETRIED)
    refuse_slurm(monkeypatch)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: posted(seen, WatchStarted), 10)
            assert posted(seen, WatchStarted)[0].polled == 0
            assert table_column(table, "value") == [str(v) for v in range(1, 9)]
            assert table_column(table, "attempt") == ["1", "1", "2", "1", "1", "2", "1", "1"]
            assert table_column(table, "job") == ["4242_1", "4242_2", "4243_3", "4242_4", "4242_5",
                                                  "4243_6", "4242_7", "4242_8"]
            assert table_column(table, "state") == ["COMPLETED"] * 4 + ["FAILED", "FAILED"] + ["COMPLETED"] * 2
            assert rendered(table)[0].startswith("value att job")
            await wait_for(pilot, lambda: jobs.query_one("#poll-status").line().plain
                           == "every task ended: final states from the attempt history", 5)
            assert "COMPLETED 6" in str(jobs.query_one("#jobs-summary").content)
        opened = posted(seen, RecordOpened)[0]
        assert (opened.record_path, opened.tasks, opened.attempts) == (str(record), 8, 2)

    asyncio.run(scenario())


class FakePoller:
    """Stands in for the core's Poller: two answers, the second while accounting is down."""

    def __init__(self, updates) -> None:
        self.updates = updates
        self.budget = QueryBudget()     # the console's other asks are charged to it

    def run(self, observer, stop, waiting=None):
        for update in self.updates:
            observer(update)
        stop.wait(30)
        return self.updates[-1]


def test_unfinished_tasks_are_polled_with_their_jobs_ended_ones_and_final_states_go_into_the_ledger(
        tmp_path, monkeypatch) -> None:
    record = build_history(tmp_path, SITE, unfinished=(7, 8))
    asked: list = []
    now = time.time()
    problem = "accounting (sacct) not answering for 40 s: sacct: error: Problem talking to the database"
    done = TaskState("4242", 7, JobState.COMPLETED, 0, None, 12.0, "node01", "sacct")
    running = TaskState("4242", 8, JobState.RUNNING, None, None, 5.0, "node01", "squeue", restart_count=1)
    updates = [PollUpdate({done.key: done, running.key: running}, (done, running), None, False, 1.0, None, now - 5),
               PollUpdate({done.key: done, running.key: running}, (), "sacct: error", False, 2.0, problem, now - 5)]

    def fake_watcher(record, *, tasks, floor=None, cap=60.0, **kwargs):
        asked.append(([t.value for t in tasks], cap))
        return FakePoller(updates), None

    monkeypatch.setattr(console_watch, "watcher", fake_watcher)
    before = dict(read_ledger(record).finals)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: len([m for m in posted(seen, JobsUpdated) if not m.usage_asked]) >= 2, 10)
            await pilot.pause()
            assert table_column(table, "state")[6:] == ["COMPLETED", "RUNNING"]
            assert table_column(table, "reason")[7] == "restart 1"
            status = jobs.query_one("#poll-status").line().plain
            # 5 s old when answered, and a loaded machine takes a second or more to show it
            assert re.match(r"⚠ states [5-9] s old, retrying: accounting \(sacct\) not answering for 40 s", status), status
            # the watch's own answers (the ask for usage beside it answers in between, or not)
            updated = [m for m in posted(seen, JobsUpdated) if not m.usage_asked]
            assert updated[0].problem is None and updated[0].as_of == now - 5
            assert updated[1].problem == problem and updated[1].changed == ()
        # values 1-6 are final in the ledger: watched only in case Slurm requeues them, in the squeue
        # of their job that 7 and 8 need anyway; their ends are not written again
        assert asked == [([7, 8, 1, 2, 3, 4, 5, 6], 30.0)]
        assert posted(seen, WatchStarted)[0].polled == 8
        finals = read_ledger(record).finals
        assert finals[(1, 7)].state == "COMPLETED" and (1, 8) not in finals
        assert read_ledger(record).finals == {**before, (1, 7): finals[(1, 7)]}

    asyncio.run(scenario())



BREAKDOWNS = {
    "failed, out-of-memory": (None, "3 of 8 task(s) did not succeed (failed 2, out-of-memory 1), in 2 group(s)"),
    "failed, timeout, cancelled": ({3: ("FAILED", 3, "ValueError: corrupt input file"), 5: ("TIMEOUT", None, "step 18"),
                                    7: ("FAILED", 3, "ValueError: corrupt input file"), 8: ("CANCELLED", None, "waiting")},
                                   "4 of 10 task(s) did not succeed (failed 2, timeout 1, cancelled 1), in 3 group(s)"),
}


def shown_after_key(record: Path, tmp_path: Path, size: tuple[int, int], key: str, message: type,
                    read: Callable[[Any], Any]) -> Any:
    """Open `record` at `size`, press `key`, and once the app has posted `message`, what `read` takes
    from the app: how a line of the Jobs screen is drawn after the key that shows it."""
    async def scenario() -> Any:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=size, message_hook=seen.append) as pilot:
            await pilot.pause(0.3)
            await pilot.press(key)
            await wait_for(pilot, lambda: posted(seen, message), 10)
            await pilot.pause()
            return read(app)

    return asyncio.run(scenario())


@pytest.mark.parametrize("size, breakdown, lines", [
    ((80, 24), "failed, out-of-memory", 2), ((120, 30), "failed, out-of-memory", 1),
    ((60, 20), "failed, out-of-memory", 2), ((80, 24), "failed, timeout, cancelled", 2),
    ((120, 40), "failed, timeout, cancelled", 1)])
def test_the_failure_groups_head_and_keys_stay_whole(tmp_path: Path, size: tuple[int, int], breakdown: str,
                                                     lines: int) -> None:
    """With the breakdown of states the head took 73 columns and its keys after it were cut to
    `· ent…` at 80x24; once the keys had a line of their own, a head wider than the screen (a real
    array's failed, timeout and cancelled at 80 columns: 81 characters) was cut, its group count lost.
    Now the head wraps at its spaces and the keys follow its last line when both fit, else have a
    line of their own: neither is ever cut."""
    failures, head = BREAKDOWNS[breakdown]
    record = build_history(tmp_path, SITE, n=int(head.split(" of ")[1].split()[0]), failures=failures)
    keys = "enter: its tasks · R: retry it"

    height, shown = shown_after_key(record, tmp_path, size, "t", FailureGroupsListed, lambda app: (
        app.jobs_screen.query_one("#failures-head").size.height, screen_lines(app)))
    assert height == lines
    at = next(i for i, line in enumerate(shown) if line.lstrip().startswith(head.split(" (")[0]))
    drawn = [line.strip() for line in shown[at:at + lines]]
    assert "…" not in "".join(drawn), drawn
    assert " ".join(drawn).startswith(head), drawn
    assert drawn[-1].endswith(keys), drawn
    assert shown[at + lines].strip()[1:].lstrip().startswith("FAILED exit 3")     # the groups follow


def test_failure_groups_list_the_causes_and_select_their_tasks(tmp_path: Path) -> None:
    record = build_history(tmp_path, SITE)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await pilot.pause(0.3)
            await pilot.press("t")
            await wait_for(pilot, lambda: posted(seen, FailureGroupsListed), 10)
            groups = posted(seen, FailureGroupsListed)[-1].groups
            assert groups == (("FAILED", 3, None, "ValueError: corrupt input file", 2, "3,5"),
                              ("OUT_OF_MEMORY", None, None, "loading 2.1G of features", 1, "6"))
            head = rendered(jobs.query_one("#failures-head"))[0]
            assert head.startswith("3 of 8 task(s) did not succeed (failed 2, out-of-memory 1), in 2 group(s)")
            lines = [line.rstrip() for line in rendered(jobs.query_one("#failure-list"))]
            assert lines[:4] == ["    2 FAILED exit 3 · values 3,5", "      last line: ValueError: corrupt input file",
                                 "    1 OUT_OF_MEMORY · values 6", "      last line: loading 2.1G of features"]
            assert "extract.3.log" in str(jobs.query_one("#log-title").content)   # the group's example
            await pilot.press("enter")
            assert jobs.view == "tasks-view" and table.has_focus
            assert table_column(table, "value") == ["3", "5"]
            assert rendered(jobs.query_one("#selection-line"))[0].startswith(
                "failure group FAILED exit 3 · 2 task(s) · values 3,5 · escape: every task")
            await pilot.press("escape")
            assert table.row_count == 8 and not jobs.query_one("#selection-line").display
            await pilot.press("v", "v")                          # map, then failure groups again
            assert jobs.view == "failures-view"
            await pilot.press("down", "R")                       # retry the OUT_OF_MEMORY group
            await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 10)
            await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
            assert posted(seen, RetryPreviewed)[-1].values == "6"
        chosen = posted(seen, FailureGroupChosen)
        assert [(m.state, m.values, m.shown) for m in chosen] == [("FAILED", "3,5", 2)]

    asyncio.run(scenario())


def test_attempts_are_listed_and_each_ones_tasks_and_logs_can_be_read(tmp_path: Path) -> None:
    record = build_history(tmp_path, SITE, retried=RETRIED)
    moved = record.parent / "attempts" / "1" / "extract.3.log"

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            await pilot.pause(0.3)
            await pilot.press("a")
            await wait_for(pilot, lambda: posted(seen, AttemptsListed) and posted(seen, AttemptShown), 10)
            listed = posted(seen, AttemptsListed)[-1].attempts
            assert listed == (
                (1, "submit", "2026-09-21T12:00:00+00:00", ("4242",), 8,
                 {"COMPLETED": 5, "FAILED": 2, "OUT_OF_MEMORY": 1}),
                (2, "retry", "2026-09-21T12:30:00+00:00", ("4243",), 2, {"COMPLETED": 1, "FAILED": 1}))
            lines = [line.rstrip() for line in rendered(jobs.query_one("#attempt-list"))]
            assert lines[0] == "  1 submit   09-21 12:00 4242              8  CD 5 F 2 OOM 1"
            assert lines[1] == "  2 retry    09-21 12:30 4243              2  CD 1 F 1 · mem=300M"
            attempt_table = jobs.query_one("#attempt-tasks")
            assert posted(seen, AttemptShown)[-1].number == 2       # the newest first
            assert table_column(attempt_table, "value") == ["3", "6"]
            await wait_for(pilot, lambda: "attempt 2" in rendered(jobs.query_one("#attempt-detail"))[0], 5)
            assert ", changed mem=300M, 2 task(s)" in rendered(jobs.query_one("#attempt-detail"))[0]
            await pilot.press("up")                                # attempt 1: every value, as it ended
            await wait_for(pilot, lambda: posted(seen, AttemptShown)[-1].number == 1, 5)
            assert table_column(attempt_table, "state") == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED",
                                                            "FAILED", "OUT_OF_MEMORY", "COMPLETED", "COMPLETED"]
            assert rendered(jobs.query_one("#attempt-detail"))[0].startswith(
                "▸ attempt 1 (submit): values 1-8, first submission, 8 task(s)")   # nothing before it to change
            await pilot.press("enter", "down", "down")             # attempt 1's value 3: its moved log
            assert attempt_table.has_focus and attempt_table.selected_task().value == 3
            log = jobs.log_pane.view
            await wait_for(pilot, lambda: "attempt 1: working on part 3" in log.lines, 10)
            assert str(moved) in str(jobs.query_one("#log-title").content)
            assert log.lines[-1] == "ValueError: corrupt input file"
            await pilot.press("escape")                             # back to the newest runs
            assert jobs.view == "tasks-view"
            await wait_for(pilot, lambda: "attempt 2: working on part 1" not in log.lines
                           and "attempt 1: working on part 1" in log.lines, 10)

    asyncio.run(scenario())


def test_j_k_g_and_G_move_in_the_attempts_failure_groups_and_record_lists_as_in_the_task_table(
        tmp_path: Path) -> None:
    """`a` then j/k did nothing (only up/down moved) while the task table under the list, and the log,
    take j/k; g/G (first/last row) likewise moved the task table, the state map and the log but not
    the attempts list, the failure groups nor the record list: every list of the Jobs screen takes them."""
    record = build_history(tmp_path / "a", SITE, retried=RETRIED)
    for name in ("b", "c"):
        build_history(tmp_path / name, SITE)

    async def scenario() -> None:
        async with console_on(record, [tmp_path]) as (app, pilot, seen):
            jobs = app.jobs_screen
            await pilot.pause(0.3)
            await pilot.press("a")
            await wait_for(pilot, lambda: posted(seen, AttemptShown), 10)
            listing = jobs.query_one("#attempt-list")
            assert listing.has_focus and posted(seen, AttemptShown)[-1].number == 2
            for first, last in (("k", "j"), ("g", "G")):
                await pilot.press(first)
                await wait_for(pilot, lambda: posted(seen, AttemptShown)[-1].number == 1, 5)
                assert rendered(jobs.query_one("#attempt-detail"))[0].startswith("▸ attempt 1 (submit)")
                await pilot.press(last)
                await wait_for(pilot, lambda: posted(seen, AttemptShown)[-1].number == 2, 5)
            await pilot.press("t")
            await wait_for(pilot, lambda: posted(seen, FailureGroupsListed), 10)
            groups = jobs.query_one("#failure-list")
            assert groups.has_focus and groups.highlighted == 0 and groups.option_count >= 2
            await pilot.press("j")
            assert groups.highlighted == 1
            await pilot.press("k")
            assert groups.highlighted == 0
            await pilot.press("G")
            assert groups.highlighted == groups.option_count - 1
            await pilot.press("g")
            assert groups.highlighted == 0
            records = jobs.query_one("#records")
            await wait_for(pilot, lambda: records.option_count == 3, 10)
            await pilot.press("escape", "o")
            assert records.has_focus
            await pilot.press("G")
            assert records.highlighted == 2
            await pilot.press("g")
            assert records.highlighted == 0
            await pilot.press("G", "enter")
            await wait_for(pilot, lambda: jobs.record_path == records.paths[2], 10)

    asyncio.run(scenario())


def usage_row(task: int, state: JobState, usage: Usage | None) -> SimpleNamespace:
    """A row as the core's usage wiring makes it (TaskRow.usage)."""
    return SimpleNamespace(job_id="4242", task_id=task, state=state, exit_code=0, signal=None, elapsed=60.0,
                           node="node01", reason=None, restart_count=None, usage=usage)


def test_usage_columns_and_summary_fit_80_columns_and_show_a_dash_until_known(tmp_path: Path) -> None:
    record = slurm_like_record(tmp_path, 3)
    mib = 1024 ** 2

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, (
                usage_row(1, JobState.COMPLETED, Usage(314 * mib, 50.0, 60.0, 360.0, 1024 * mib, 1)),
                usage_row(2, JobState.OUT_OF_MEMORY, Usage(100 * mib, 12.0, 30.0, 360.0, 100 * mib, 2)),
                usage_row(3, JobState.RUNNING, None))))
            await pilot.pause()
            await pilot.press("u")
            table = jobs.query_one("#tasks")
            summary = jobs.query_one("#usage-summary")
            await wait_for(pilot, lambda: "MaxRSS" in text_of(summary.query_one("#usage-line-1")), 10)
            assert table_column(table, "memory") == ["314M/1G", "100M/100M", "-"]
            assert table_column(table, "cpu") == ["83%", "20%", "-"]
            assert table_column(table, "time") == ["60s/6m", "30s/6m", "-"]
            assert rendered(table)[0].startswith("value job      state             mem/req  cpu time/limit")
            heading = rendered(summary.query_one("#usage-heading"))[0].rstrip()
            first = rendered(summary.query_one("#usage-line-1"))[0].rstrip()
            second = rendered(summary.query_one("#usage-line-2"))[0].rstrip()
            # as `hyperion-jobs usage`: MaxRSS of the 2 tasks summarized (it said "of 3": every task)
            assert heading == "usage of 2 of 3 task(s) (2 ended, 1 running; accounting measured 2)"
            assert first == "MaxRSS med 207M p95 314M max 314M (2 of 2) · CPU 52%"
            assert second == "elapsed med 00:00:45 p95 00:01:00 max 00:01:00 · >90% of --mem 1, of --time 0"
            assert all(len(line) <= 80 for line in rendered(table))
            await pilot.press("u")                               # back to exit, elapsed, node
            assert "exit" in rendered(table)[0] and not summary.display

    asyncio.run(scenario())


def test_usage_summary_counts_the_tasks_hyperion_jobs_usage_counts(tmp_path: Path, cli_env) -> None:
    """A local run that stopped at its failed value 2 (value 3 never ran): `hyperion-jobs usage` says
    "usage of 2 of 3 task(s) (2 ended; run locally: elapsed time only)" above "(0 of 2 tasks)"; the
    console said "MaxRSS ... (0 of 3)", its MaxRSS counted against every task, and no heading. Neither
    compares the tasks with a --mem or --time limit they did not have."""
    from conftest import run_cli

    (tmp_path / "fail.2").write_text("")
    run = run_cli("hyperion-submit", "local", "--cfg", str(SITE), "--array", "JOB=1:3", "--output-file",
                  "log/t.JOB.log", "--", "bash", "-c", "[ ! -e fail.JOB ]", cwd=tmp_path, env=cli_env)
    assert run.returncode == 1, run.stderr
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    cli = run_cli("hyperion-jobs", "usage", str(record), env=cli_env).stdout.splitlines()
    assert cli[0] == f"{record}: usage of 2 of 3 task(s) (2 ended; run locally: elapsed time only)", cli
    assert cli[1].endswith("(0 of 2 tasks)"), cli
    shown: list[str] = []

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            await wait_for(pilot, lambda: table_column(jobs.query_one("#tasks"), "state")
                           == ["COMPLETED", "FAILED", "NOT_RUN"], 10)
            await pilot.press("u")
            summary = jobs.query_one("#usage-summary")
            await wait_for(pilot, lambda: "MaxRSS" in text_of(summary.query_one("#usage-line-1")), 10)
            await pilot.pause(1.5)                              # the summary follows updates (DERIVED_DELAY)
            shown.extend(rendered(summary.query_one(f"#{line}"))[0].rstrip()
                         for line in ("usage-line-1", "usage-line-2"))
            shown.extend(rendered(heading)[0].rstrip() for heading in summary.query("#usage-heading"))
            times.extend(table_column(jobs.query_one("#tasks"), "time"))

    times: list[str] = []
    asyncio.run(scenario())
    assert shown[0] == "MaxRSS med - p95 - max - (0 of 2) · CPU -", shown
    median, p95, top = cli[2].split()[2::2]                  # elapsed  median X  p95 Y  max Z
    # a run under half a second: the ledger's 0.0x s is no 0 (`00:00:00` read as not measured), and the
    # rows show the times the summary is of (their `-` sat under a summary of elapsed times)
    assert (median, top) == ("<00:00:01", "<00:00:01"), cli
    assert [t.strip() for t in times] == ["<1s/-", "<1s/-", "-"], times
    assert shown[1].startswith(f"elapsed med {median} p95 {p95} max {top} · "), (shown, cli)
    assert shown[2:] == [cli[0].removeprefix(f"{record}: ")], (shown, cli)
    # a local run has no --mem or --time: nothing was near one (it said "none" and "0", as if measured)
    assert cli[-2:] == ["over 90% of --mem: - (no limit enforced)", "over 90% of --time: - (no limit enforced)"], cli
    assert shown[1].endswith("· >90% of --mem -, of --time -"), shown


def test_a_value_an_earlier_local_attempt_never_ran_shows_no_log_not_the_rerun_s(tmp_path: Path, cli_env) -> None:
    """Attempt 1 stops at value 2; attempt 2 runs 2-3. Attempt 1's value 3 has no log of its own."""
    from conftest import run_cli

    (tmp_path / "fail.2").write_text("")
    first = run_cli("hyperion-submit", "local", "--cfg", str(SITE), "--array", "JOB=1:3", "--output-file",
                    "log/t.JOB.log", "--", "bash", "-c", "echo run of JOB; [ ! -e fail.JOB ]", cwd=tmp_path,
                    env=cli_env)
    assert first.returncode == 1
    (tmp_path / "fail.2").unlink()
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    assert run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env).returncode == 0

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            await pilot.pause(0.3)
            await pilot.press("a")
            await wait_for(pilot, lambda: posted(seen, AttemptShown), 10)
            await pilot.press("up")
            await wait_for(pilot, lambda: posted(seen, AttemptShown)[-1].number == 1, 5)
            table = jobs.query_one("#attempt-tasks")
            assert table_column(table, "state") == ["COMPLETED", "FAILED", "NOT_RUN"]
            await pilot.press("enter", "down")                   # value 2: attempt 1's own log, moved aside
            await wait_for(pilot, lambda: "run of 2" in jobs.log_pane.view.lines, 10)
            assert "attempts/1/t.2.log" in str(jobs.query_one("#log-title").content)
            await pilot.press("down")                            # value 3: never ran in attempt 1
            assert table.selected_task().value == 3
            # why, as `logs RECORD:3 --attempt 1` says it (it said `none for this task`)
            await wait_for(pilot, lambda: "none: did not run in attempt 1: it left no log (" in
                           str(jobs.query_one("#log-title").content), 5)
            assert "run of 3" not in jobs.log_pane.view.lines

    asyncio.run(scenario())


def test_the_newest_of_more_attempts_than_the_list_shows_is_highlighted_in_sight(tmp_path: Path, cli_env) -> None:
    """Four runs of one command: the 3-row list showed attempts 1-3, no highlight, while the detail line
    and the table showed attempt 4 (highlighted below, out of sight)."""
    from conftest import run_cli

    for _ in range(4):
        done = run_cli("hyperion-submit", "local", "--cfg", str(SITE), "--array", "JOB=1:2", "--output-file",
                       "log/t.JOB.log", "--", "true", cwd=tmp_path, env=cli_env)
        assert done.returncode == 0, done.stderr
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"

    async def scenario() -> None:
        async with console_on(record, [tmp_path], size=(120, 40)) as (app, pilot, seen):
            await pilot.pause(0.3)
            await pilot.press("a")
            await wait_for(pilot, lambda: posted(seen, AttemptShown), 10)
            listing = app.jobs_screen.query_one("#attempt-list")
            # a loaded CI box lays the list out later than the message: the highlight must come into sight
            await wait_for(pilot, lambda: posted(seen, AttemptShown)[-1].number == 4 and listing.highlighted == 3
                           and [line.rstrip() for line in rendered(listing)][-1].startswith("  4 submit"), 10)
            assert posted(seen, AttemptShown)[-1].number == 4 and listing.highlighted == 3
            lines = [line.rstrip() for line in rendered(listing)]
            assert len(lines) == 3 and lines[-1].startswith("  4 submit")
            await pilot.press("up")
            await wait_for(pilot, lambda: posted(seen, AttemptShown)[-1].number == 3
                           and [line.rstrip()[:3] for line in rendered(listing)] == ["  2", "  3", "  4"], 5)

    asyncio.run(scenario())


def test_a_value_the_newest_local_run_never_reached_says_so_and_names_the_attempt_that_ran_it(
        tmp_path: Path, cli_env) -> None:
    """Attempt 1 runs 1-3; a rerun stops at value 1, so 2-3 are NOT_RUN in attempt 2. The log pane
    waited on value 3's path with `no file yet` for a run that had ended, as if the log would come;
    `hyperion-jobs logs` refuses it and names attempt 1, whose log is kept. The pane says the same."""
    from conftest import run_cli

    argv = ("hyperion-submit", "local", "--cfg", str(SITE), "--array", "JOB=1:3", "--output-file",
            "log/t.JOB.log", "--", "bash", "-c", "echo run of JOB; [ JOB != 1 ] || [ ! -e rerun ]")
    assert run_cli(*argv, cwd=tmp_path, env=cli_env).returncode == 0
    (tmp_path / "rerun").write_text("")
    assert run_cli(*argv, cwd=tmp_path, env=cli_env).returncode == 1
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(140, 30)) as pilot:
            jobs = app.jobs_screen
            await wait_for(pilot, lambda: table_column(jobs.query_one("#tasks"), "state")
                           == ["FAILED", "NOT_RUN", "NOT_RUN"], 10)
            await pilot.press("end")
            assert jobs.selected_task().value == 3
            title = lambda: str(jobs.query_one("#log-title").content)   # noqa: E731
            await wait_for(pilot, lambda: "not run in attempt 2" in title(), 5)
            assert "attempt 1 ran it (COMPLETED)" in title() and "no file yet" not in title(), title()

    asyncio.run(scenario())


def test_the_not_run_group_and_its_map_cell_wait_for_no_log(tmp_path: Path, cli_env) -> None:
    """A local run stops at value 2, so 3 is NOT_RUN. The task table said so, but the failure groups
    (`t`, the NOT_RUN group highlighted) and the state map (`m`, its cell) pointed the log pane at
    value 3's path with `no file yet`, as if its log would come."""
    from conftest import run_cli

    argv = ("hyperion-submit", "local", "--cfg", str(SITE), "--array", "JOB=1:3", "--output-file",
            "log/n.JOB.log", "--", "bash", "-c", "echo run of JOB; [ JOB != 2 ]")
    assert run_cli(*argv, cwd=tmp_path, env=cli_env).returncode == 1
    record = tmp_path / "log" / "q" / "n.JOB.submit.json"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            jobs = app.jobs_screen
            await wait_for(pilot, lambda: table_column(jobs.query_one("#tasks"), "state")
                           == ["COMPLETED", "FAILED", "NOT_RUN"], 10)
            title = lambda: str(jobs.query_one("#log-title").content)   # noqa: E731
            await pilot.press("t")
            await wait_for(pilot, lambda: jobs.failures_view.selected_group() is not None, 5)
            for _ in range(3):
                if jobs.failures_view.selected_group().state == "NOT_RUN":
                    break
                await pilot.press("down")
                await pilot.pause()
            assert jobs.failures_view.selected_group().state == "NOT_RUN"
            await wait_for(pilot, lambda: "not run in attempt 1" in title(), 5)
            assert "no file yet" not in title(), title()
            await pilot.press("escape", "m", "end")
            await wait_for(pilot, lambda: "not run in attempt 1" in title(), 5)
            assert "no file yet" not in title(), title()
            await pilot.press("left")
            await wait_for(pilot, lambda: "n.2.log" in title(), 5)

    asyncio.run(scenario())


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_the_highlighted_attempts_line_and_its_keys_stay_whole(tmp_path: Path, size: tuple[int, int]) -> None:
    """`▸ attempt 2 (retry): values 5, changed nothing, 1 task(s), job(s) 7413, at 2026-12-05T17:20:54+00:00`
    and its keys made one line: at 120 columns the keys were cut (`· enter: its tasks…`), at 80 the
    attempt's own time too. The line wraps at its spaces and the keys follow it, whole."""
    record = build_history(tmp_path, SITE, retried=RETRIED, changed={})
    keys = "enter: its tasks · escape: back"

    drawn = [line.strip() for line in shown_after_key(record, tmp_path, size, "a", AttemptShown, lambda app: rendered(
        app.jobs_screen.query_one("#attempt-detail")))]
    assert "…" not in "".join(drawn), drawn
    assert " ".join(drawn).startswith("▸ attempt 2 (retry): values 3,6, changed nothing, 2 task(s), job(s) 4243, "
                                      "at 2026-09-21T12:30:00+00:00"), drawn
    assert drawn[-1].endswith(keys), drawn


def test_an_attempts_task_stopped_by_sighup_is_counted_in_its_failures_colour(tmp_path: Path) -> None:
    """`history` counts a local task hung up on apart, `FAILED (SIGHUP) 1`; the console's attempt list
    drew that count dim, as a state nobody reported, after LOST and unabbreviated (`CD 1 F 1 FAILED
    (SIGHUP) 1` at 80 columns). It reads `F (SIGHUP) 1` beside `F 1`, red as they are."""
    import json

    from test_console_fixtures import build_local_record

    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("FAILED", None), 3: ("FAILED", 3)})
    ends = {1: ("COMPLETED", 0, None), 2: ("FAILED", None, 1), 3: ("FAILED", 3, None)}
    lines = [{"type": "attempt", "number": 1, "kind": "submit", "time": "2026-09-21T12:00:00",
              "backend": "local", "job_ids": ["local"], "values": "1-3", "overrides": {}, "tasks": 3},
             *({"type": "final", "attempt": 1, "value": value, "job_id": "local", "task_id": None,
                "state": state, "exit_code": code, "signal": signal}
               for value, (state, code, signal) in ends.items()),
             {"type": "closed", "attempt": 1, "time": "2026-09-21T12:00:09"}]
    record.with_name("task.JOB.attempts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    def first_line(app) -> list:
        listing = app.jobs_screen.query_one("#attempt-list")
        return list(listing.render_lines(listing.size.region)[0])

    strip = shown_after_key(record, tmp_path, (80, 24), "a", AttemptsListed, first_line)
    line = "".join(segment.text for segment in strip).rstrip()
    assert line.endswith("3  CD 1 F 1 F (SIGHUP) 1"), line
    styles = {segment.text: segment.style for segment in strip}
    # the failures' red, bold; not the dim of a state never reported
    assert (styles["F (SIGHUP)"].color, styles["F (SIGHUP)"].bold) == (styles["F"].color, True)
    assert styles["F (SIGHUP)"].color != styles["CD"].color


def test_an_attempts_changed_env_and_command_read_as_hyperion_jobs_history_says_them(
        tmp_path: Path, cli_env) -> None:
    """A rerun with --env and another command: the attempts list showed `env=[["A", "1"], ["B", "x y"]]`
    and `command=["echo", ...]`, raw JSON, where `hyperion-jobs history` says `env=A=1,B=x y`."""
    from conftest import run_cli

    for extra in ([], ["--env", "A=1", "--env", "B=x y"]):
        words = ["echo", "JOB"] if not extra else ["echo", "two words", "JOB"]
        done = run_cli("hyperion-submit", "local", "--cfg", str(SITE), "--array", "JOB=1:2", "--output-file",
                       "log/e.JOB.log", *extra, "--", *words, cwd=tmp_path, env=cli_env)
        assert done.returncode == 0, done.stderr
    record = tmp_path / "log" / "q" / "e.JOB.submit.json"
    history = run_cli("hyperion-jobs", "history", str(record), cwd=tmp_path, env=cli_env)
    assert history.returncode == 0, history.stderr
    assert "env=A=1,B=x y" in history.stdout and "command=echo 'two words' JOB" in history.stdout

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(160, 40), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            await pilot.pause(0.3)
            await pilot.press("a")
            await wait_for(pilot, lambda: posted(seen, AttemptShown) and posted(seen, AttemptShown)[-1].number == 2, 10)
            listing = [line.rstrip() for line in rendered(jobs.query_one("#attempt-list"))]
            assert "command=echo 'two words' JOB env=A=1,B=x y" in listing[1], listing
            await wait_for(pilot, lambda: "attempt 2" in rendered(jobs.query_one("#attempt-detail"))[0], 5)
            detail = " ".join(line.strip() for line in rendered(jobs.query_one("#attempt-detail")))
            assert "changed command=echo 'two words' JOB env=A=1,B=x y," in detail, detail
            assert "[[" not in detail and '["echo"' not in detail

    asyncio.run(scenario())
