"""What the console says while Slurm does not answer: the same words as `hyperion-jobs`. (Slurm's
daemons on the shared test cluster are not stopped for this: sacct and squeue on PATH fail as they
do then, as in test_jobs_slurm_down.py.)"""
from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import run_cli
from test_console_fixtures import build_history, notifications, screen_lines, table_column, wait_for
from test_jobs_slurm_down import CONF, SACCT_DOWN, slurm_down

from hyperion_console.app import make_app

REPO = Path(__file__).resolve().parents[1]


def test_usage_accounting_does_not_tell_is_said_as_hyperion_jobs_says_it(tmp_path, cli_env, monkeypatch) -> None:
    """Every end recorded, no usage yet, sacct failing: `hyperion-jobs usage` says "sacct failed
    (rc 1): ...; shown as last recorded" on stderr; the console showed every usage cell `-` and
    "every task ended: final states from the attempt history" without a word."""
    record = build_history(tmp_path, CONF)
    env = slurm_down(tmp_path, cli_env)
    cli = run_cli("hyperion-jobs", "usage", str(record), env=env, timeout=60)
    said = cli.stderr.strip().removeprefix("hyperion-jobs: ")
    assert said == f"sacct failed (rc 1): {SACCT_DOWN}; shown as last recorded", cli.stderr
    monkeypatch.setenv("PATH", env["PATH"])

    async def scenario() -> None:
        app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            jobs = app.jobs_screen
            status = jobs.query_one("#poll-status")
            await wait_for(pilot, lambda: "shown as last recorded" in status.line().plain, 20)
            assert status.line().plain == f"⚠ every task ended: final states from the attempt history · {said}"
            await wait_for(pilot, lambda: said in notifications(app), 5)
            await pilot.press("u")
            await pilot.pause()
            assert set(table_column(jobs.query_one("#tasks"), "memory")) == {"-"}
            assert any("⚠ every task ended" in line and "sacct failed (rc 1)" in line for line in screen_lines(app))

    asyncio.run(scenario())


class AlternatingPoller:
    """Stands in for the core's Poller during an outage as the real one behaves: the squeue alone
    fails, then the squeue and the sacct asked after it, then the squeue alone again, ..."""

    def __init__(self, errors: list[str]) -> None:
        from backends.watch.budget import QueryBudget

        self.errors = errors
        self.budget = QueryBudget()     # the console's other asks are charged to it

    def run(self, observer, stop, waiting=None):
        from backends.watch.poller import PollUpdate

        for n, error in enumerate(self.errors):
            observer(PollUpdate({}, (), error, False, float(n), f"controller (squeue) not answering: {error}", None))
        stop.wait(30)


def test_an_outage_is_told_once_not_at_every_poll_its_error_alternates(tmp_path, monkeypatch) -> None:
    """At 80x24, while Slurm was down, a 'poll error (retrying)' toast came at every poll (the error
    alternates between squeue's alone and squeue's with sacct's), so toasts covered the task table
    the whole outage; the status line says the outage already."""
    import hyperion_console.watch as console_watch

    squeue = "squeue failed (rc 1): slurm_load_jobs error: Unable to contact slurm controller"
    both = f"{squeue}; sacct failed (rc 1): sacct: error: Problem talking to the database"
    record = build_history(tmp_path, CONF, unfinished=(7, 8))
    monkeypatch.setattr(console_watch, "watcher",
                        lambda *a, **k: (AlternatingPoller([squeue, both] * 5), None))

    async def scenario() -> None:
        app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            status = app.jobs_screen.query_one("#poll-status")
            await wait_for(pilot, lambda: "retrying" in status.line().plain, 10)
            await pilot.pause(0.5)
            told = [n for n in notifications(app) if "failed (rc 1)" in n]
            assert told == [squeue, both], told

    asyncio.run(scenario())


def test_a_run_that_just_ended_reopened_while_slurm_is_down_does_not_say_its_states_are_slurms(
        tmp_path, cli_env, monkeypatch) -> None:
    """Ends recorded minutes ago: their job is asked again in case Slurm requeued a task. With squeue
    failing, `hyperion-jobs status` says "squeue failed (rc 1): ...; shown as last recorded"; the
    console said "every task ended: final states from Slurm", nothing from Slurm and no word."""
    from test_console_fixtures import ended_just_now
    from test_jobs_slurm_down import SQUEUE_DOWN

    record = build_history(tmp_path, CONF)
    ended_just_now(record)
    env = slurm_down(tmp_path, cli_env)
    cli = run_cli("hyperion-jobs", "status", str(record), env=env, timeout=60)
    said = cli.stderr.strip().removeprefix("hyperion-jobs: ")
    assert said == f"squeue failed (rc 1): {SQUEUE_DOWN}; shown as last recorded", cli.stderr
    monkeypatch.setenv("PATH", env["PATH"])

    async def scenario() -> None:
        app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.jobs_screen.query_one("#poll-status")
            await wait_for(pilot, lambda: "every task ended" in status.line().plain, 20)
            await pilot.pause(0.5)
            assert status.line().plain == f"⚠ every task ended: final states from the attempt history · {said}"
            await wait_for(pilot, lambda: [n.title for n in app._notifications if n.message == said]
                           == ["look for requeues"], 5)

    asyncio.run(scenario())


def test_what_ended_tasks_used_is_asked_for_while_the_run_goes_on(tmp_path, monkeypatch) -> None:
    """A task's end comes from squeue, which tells no peak nor CPU time, and accounting was asked
    only once at opening and after the last end: during a 40-task run the console's summary said
    'MaxRSS ... (0 of 39)' while `hyperion-jobs usage` said '(35 of 39 tasks)'. Asked again beside
    the watch while it goes on, as `usage` asks it."""
    import hyperion_console.watch as console_watch
    from backends.states import JobState, TaskState
    from backends.watch.budget import QueryBudget
    from backends.watch.poller import PollUpdate
    from backends.watch.usage import Usage

    record = build_history(tmp_path, CONF, unfinished=(7, 8))
    done = TaskState("4242", 7, JobState.COMPLETED, 0, None, 12.0, "node01", "squeue")
    running = TaskState("4242", 8, JobState.RUNNING, None, None, 5.0, "node01", "squeue")

    class OneEnd:
        budget = QueryBudget()          # the console's other asks are charged to it

        def run(self, observer, stop, waiting=None):
            states = {done.key: done, running.key: running}
            observer(PollUpdate(states, (done, running), None, False, 1.0, None, None))
            stop.wait(60)

    def accounting(history, runner):    # what sacct tells of the ended tasks the ledger lacks usage of
        from backends.watch.rows import usage_missing
        return {key: Usage(300 * 2 ** 20, 6.0, 12.0, 360.0, 100 * 2 ** 20, 1) for key in usage_missing(history)}

    monkeypatch.setattr(console_watch, "watcher", lambda *a, **k: (OneEnd(), None))
    monkeypatch.setattr(console_watch, "fill_missing_usage", accounting)
    monkeypatch.setattr(console_watch, "USAGE_BESIDE_WATCH", 0.3, raising=False)

    async def scenario() -> None:
        app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await pilot.press("u")
            await wait_for(pilot, lambda: table_column(table, "state")[6:] == ["COMPLETED", "RUNNING"], 10)
            await wait_for(pilot, lambda: table_column(table, "memory")[6] == "300M/100M", 10)
            assert table_column(table, "state")[7] == "RUNNING"

    asyncio.run(scenario())


def test_an_outage_said_on_the_status_line_is_read_whole_at_80_columns(tmp_path, monkeypatch) -> None:
    """Beside the progress bar at 80 columns the status line cut squeue's error after
    `retrying: controller (squeue) not answer…`: what failed was out of sight once its toast went.
    It wraps onto the lines below now, the task table right under it."""
    import hyperion_console.watch as console_watch

    squeue = "squeue failed (rc 1): slurm_load_jobs error: Unable to contact slurm controller"
    record = build_history(tmp_path, CONF, unfinished=(7, 8))
    monkeypatch.setattr(console_watch, "watcher", lambda *a, **k: (AlternatingPoller([squeue]), None))

    async def scenario() -> list[str]:
        app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            status = app.jobs_screen.query_one("#poll-status")
            await wait_for(pilot, lambda: "retrying" in status.line().plain, 10)
            await pilot.pause(0.5)
            return screen_lines(app)

    lines = asyncio.run(scenario())
    at = next(i for i, line in enumerate(lines) if "retrying" in line)
    said = " ".join(line[22:].strip() for line in lines[at:at + 3])
    assert "…" not in said, lines[at:at + 3]
    assert f"controller (squeue) not answering: {squeue}" in said, lines[at:at + 3]
    assert any(line.startswith("value ") for line in lines[at + 1:at + 5]), lines
