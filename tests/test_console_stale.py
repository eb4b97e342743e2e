"""A live view never shows old information without saying so: what a stopped watch recorded, a
derived view overtaken by an older computation."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from test_console_fixtures import FIXED_ISO, build_history, table_column, wait_for

from backends.records.attempts import FinalState, append_entries, ledger_path
from backends.records.history import load_history
from backends.states import JobState, TaskState
from hyperion_console.app import make_app
from hyperion_console.widgets.summary import PollStatus

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
SITE = CONF / "submit_test_cluster.yaml"
USED = {"alloc_cpus": 1, "cpu_seconds": 0.03, "elapsed_seconds": 1.0, "max_rss_bytes": 14209024,
        "req_mem_bytes": 104857600, "time_limit_seconds": 360.0}


def _with_usage(record: Path) -> None:
    """Every end the ledger holds has its usage: nothing is left to ask accounting."""
    ledger = ledger_path(record)
    used = ",".join(f'"{k}":{v}' for k, v in USED.items())
    ledger.write_text(ledger.read_text().replace('"usage":null', "\"usage\":{" + used + "}"))


def test_ends_a_stopped_watch_recorded_are_shown_when_the_watch_restarts(tmp_path: Path) -> None:
    """A cancel restarts the watch. The old watch wrote the cancelled tasks' ends into the ledger
    and its answer was dropped with it (its stop was set); the new watch, finding every end in the
    ledger, asked nothing and told nothing: the table said RUNNING for ever under `every task
    ended: final states from the attempt history`."""
    record = build_history(tmp_path, SITE, n=3, unfinished=(2, 3), failures={})
    _with_usage(record)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path / "elsewhere"])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(load_history(str(record)))       # shown, not watched: no Slurm is asked
            table = jobs.query_one("#tasks")
            running = [TaskState("4242", i, JobState.RUNNING, None, None, 5.0, "node01") for i in (2, 3)]
            jobs.apply_states(running, time.time())           # the first watch's answer
            await pilot.pause()
            assert table_column(table, "state") == ["COMPLETED", "RUNNING", "RUNNING"]
            # the old watch records the ends scancel caused, then is stopped before its answer is shown
            append_entries(str(record), [FinalState(1, i, "4242", i, "CANCELLED", 0, 15, 6.0, "node01", 0,
                                                    usage=USED, time=FIXED_ISO) for i in (2, 3)])
            jobs.restart_watching()                           # what a cancel does once scancel is done
            status = jobs.query_one("#poll-status", PollStatus)
            await wait_for(pilot, lambda: status.final, 10)
            await pilot.pause()
            assert status.line().plain == "every task ended: final states from the attempt history"
            assert table_column(table, "state") == ["COMPLETED", "CANCELLED", "CANCELLED"]
            assert jobs.query_one("#jobs-summary").counts == {"COMPLETED": 1, "CANCELLED": 2}

    asyncio.run(scenario())


def test_failure_groups_computed_from_older_rows_never_replace_newer_ones(tmp_path: Path, monkeypatch) -> None:
    """The failure groups are computed in a thread, a second or more for a big array. A computation
    started before a task failed, and finishing after the one started since, put its groups on
    screen last: the failures view said `UNKNOWN 2-3` while the table said FAILED, and with the
    run over nothing computed them again."""
    import threading

    import hyperion_console.widgets.failures as failures_module
    from hyperion_console.messages import FailureGroupsListed

    record = build_history(tmp_path, SITE, n=3, unfinished=(2, 3), failures={})
    _with_usage(record)
    real, calls, released = failures_module.failure_groups, [], threading.Event()

    def first_one_slow(rows):
        groups = real(rows)
        calls.append(len(groups))
        if len(calls) == 1:          # the computation from before the failure ends last
            released.wait(20)
        return groups

    monkeypatch.setattr(failures_module, "failure_groups", first_one_slow)

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path / "elsewhere"])
        async with app.run_test(size=(100, 30), message_hook=seen.append) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(load_history(str(record)))
            await pilot.press("t")                               # the failure groups: none yet
            await wait_for(pilot, lambda: len(calls) == 1, 10)
            jobs.apply_states([TaskState("4242", 2, JobState.FAILED, 3, None, 6.0, "node01")], time.time())
            listed = lambda: [m.groups for m in seen if isinstance(m, FailureGroupsListed)]   # noqa: E731
            await wait_for(pilot, lambda: len(calls) == 2 and listed(), 10)
            newer = [(g[0], g[-1]) for g in listed()[-1]]
            assert newer == [("FAILED", "2"), ("UNKNOWN", "3")]
            released.set()                                       # the older computation ends now
            await pilot.pause(0.5)
            await pilot.pause()
            # the older groups (`UNKNOWN 2-3`) are not shown over the newer ones
            assert [(g[0], g[-1]) for g in listed()[-1]] == newer
            assert jobs.failures_view.selected_group().state == "FAILED"

    asyncio.run(scenario())


def test_a_log_left_and_shown_again_keeps_the_lines_its_new_reader_showed(tmp_path: Path, monkeypatch) -> None:
    """Down then up in the task table while a big log's first read is slow (NFS): the pane's first
    reader of that log, left behind, ended its read after the new reader had shown the lines added
    since, and cleared them: the pane said `following` over a log missing its newest lines."""
    import threading

    import hyperion_console.widgets.log_pane as log_pane_module
    from backends.records.record import TaskRecord

    logs = tmp_path / "log"
    logs.mkdir()
    (logs / "a.log").write_text("".join(f"a {i}\n" for i in range(1, 6)))
    (logs / "b.log").write_text("b 1\n")
    a, b = (TaskRecord(v, "4242", v, str(logs / f"{n}.log"), None, None) for v, n in ((1, "a"), (2, "b")))
    real, reads, released = log_pane_module.last_lines_read, [], threading.Event()

    def first_read_slow(path, count, end=None):
        read = real(path, count, end=end)
        reads.append(path)
        if len(reads) == 1:
            released.wait(20)
        return read

    monkeypatch.setattr(log_pane_module, "last_lines_read", first_read_slow)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path / "elsewhere"])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("escape", "2")
            pane = app.jobs_screen.log_pane
            pane.show_task(a)
            await wait_for(pilot, lambda: len(reads) == 1, 10)
            pane.show_task(b)
            pane.show_task(a)                     # back on a: a new reader
            await wait_for(pilot, lambda: pane.view.lines[-1:] == ["a 5"], 10)
            with (logs / "a.log").open("a") as log:
                log.write("a 6\na 7\n")
            await wait_for(pilot, lambda: pane.view.lines[-1:] == ["a 7"], 10)
            released.set()                        # the first reader's read ends now
            await pilot.pause(1.0)
            assert pane.view.lines == [f"a {i}" for i in range(1, 8)]
            with (logs / "a.log").open("a") as log:
                log.write("a 8\n")
            await wait_for(pilot, lambda: pane.view.lines[-1:] == ["a 8"], 10)
            assert pane.view.lines == [f"a {i}" for i in range(1, 9)]

    asyncio.run(scenario())


def test_a_record_replaced_at_the_same_size_within_the_same_second_is_read_again(tmp_path: Path) -> None:
    """The console keeps the last record read (and each listed record's label) while its file's
    mtime and size are unchanged. On a file system whose times are coarse (1 s on some NFS
    servers) a record rewritten in the same second at the same size kept both: the list went on
    showing the record as first read."""
    import os

    from test_console_fixtures import build_local_record

    from backends.records.record import load_record

    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("COMPLETED", 0)})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            jobs = app.jobs_screen
            records = jobs.query_one("#records")
            label = lambda: str(records.get_option_at_index(0).prompt)   # noqa: E731
            await wait_for(pilot, lambda: records.option_count == 1 and "09-21 12:00" in label(), 10)
            before = os.stat(record)
            text = record.read_text().replace("2026-09-21T12:00:00", "2026-09-21T13:00:00", 1)
            fresh = record.with_name(".fresh.tmp")
            fresh.write_text(text)
            os.utime(fresh, ns=(before.st_atime_ns, before.st_mtime_ns))   # the same second, coarse times
            os.replace(fresh, record)                                      # as every record is written
            assert (os.stat(record).st_mtime_ns, os.stat(record).st_size) == (before.st_mtime_ns, before.st_size)
            assert load_record(record).submitted_at == "2026-09-21T13:00:00"
            await pilot.press("r")
            await wait_for(pilot, lambda: "09-21 13:00" in label(), 10)

    asyncio.run(scenario())


def test_the_checkpoint_screen_says_when_the_checkpoint_changed_since_it_was_read(tmp_path: Path) -> None:
    """The Checkpoint screen shows one read. Shards completing while it was shown left its counts
    and retry plan as read, without a word: `incomplete 1` and a plan to rerun a shard that had
    completed meanwhile. A line now says the checkpoint changed and that r reads it again."""
    import re

    from test_console_fixtures import Frames, build_checkpoint, checkpoint_read, screen_lines, text_of

    from sharding.store import Checkpoint, RunConfig

    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            said = lambda: [line.strip() for line in screen_lines(app) if "changed since" in line]   # noqa: E731
            await pilot.pause(2.5)                      # looked at, unchanged: nothing said
            assert said() == []
            assert "complete 6" in text_of(screen.query_one("#ckpt-map"))
            Checkpoint(checkpoint).write_completion(8, RunConfig(minimum_shard_index=1, total_shards=8))
            await wait_for(pilot, said, 10)
            assert re.fullmatch(r"⚠ the checkpoint changed since it was read at \d\d:\d\d:\d\d: r reads it again",
                                said()[0]), said()
            await pilot.pause(0.5)
            frames = Frames(app)                        # said once: a screen left open draws nothing more
            await pilot.pause(4.5)                      # (it redrew the line every 2 s until r)
            assert frames.count == 0, frames.count
            await pilot.press("r")
            await checkpoint_read(pilot)
            assert said() == []
            assert "complete 7" in text_of(screen.query_one("#ckpt-map"))

    asyncio.run(scenario())


def test_a_slow_look_for_a_checkpoint_change_spaces_the_next_ones(tmp_path: Path, monkeypatch) -> None:
    """A failed-task tree that takes a while to stat (20k records: 0.34 s) was looked at every 2 s for
    as long as the screen showed: the next look now waits nine times as long as the last took."""
    import time

    from test_console_fixtures import build_checkpoint, checkpoint_read

    import hyperion_console.screens.checkpoint as screen_module

    checkpoint = build_checkpoint(tmp_path, total=4, complete=(1, 2), failed=(3,))
    looks = []
    stamp = screen_module.change_stamp

    def slow_stamp(path):
        looks.append(time.monotonic())
        time.sleep(0.6)
        return stamp(path)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            monkeypatch.setattr(screen_module, "change_stamp", slow_stamp)
            await pilot.pause(7.0)          # unspaced: a look every 2 s, 3 or 4 of them
            assert 1 <= len(looks) <= 2, looks

    asyncio.run(scenario())


def test_a_failed_ask_for_usage_is_no_longer_said_once_nothing_lacks_it(tmp_path: Path, monkeypatch) -> None:
    """The ask for what ended tasks used failed (sacct down): the status line kept `sacct: error
    ...; shown as last recorded`. Once another writer (a `hyperion-jobs usage` in another
    terminal, the watch's own sacct) put every figure into the ledger, the next look found
    nothing missing and said nothing, so the line went on saying the figures were missing
    while the usage columns showed them."""
    import threading

    import hyperion_console.watch as console_watch
    from backends.watch.slurm.accounting import CommandResult
    from hyperion_console.watch import watch_slurm

    monkeypatch.setattr(console_watch, "USAGE_BESIDE_WATCH", 0.3)
    record = build_history(tmp_path, SITE, n=2, unfinished=(2,), failures={})
    asked: list[str] = []

    def query(argv) -> CommandResult:
        """squeue: task 2 runs on; accounting is down."""
        asked.append(argv[0])
        if argv[0] == "squeue":
            return CommandResult(0, "4242_2|RUNNING|0|0:05|node01|None|0|\n", "")
        return CommandResult(1, "", "sacct: error: Problem talking to the database: Connection refused")

    seen: list = []
    stop = threading.Event()

    def deliver(answer) -> None:
        seen.append(answer)
        if answer.usage_asked and answer.behind:      # said; then another writer records the usage
            _with_usage(record)
        elif answer.usage_asked:
            stop.set()

    watching = threading.Thread(target=watch_slurm, args=(load_history(str(record)), deliver, stop),
                                kwargs={"runner": query}, daemon=True)
    watching.start()
    watching.join(10)
    stop.set()
    asks = [(answer.rows_only, answer.behind) for answer in seen if answer.usage_asked]
    assert asks[0][1] is not None and "Problem talking to the database" in asks[0][1], asks
    assert asks[-1] == (True, None), (asks, asked)       # the line's note goes: nothing lacks usage now
    status = PollStatus()
    status.start("Slurm")
    status.report(time.time(), None)
    for answer in seen:
        if answer.usage_asked:
            status.note("usage", answer.behind)
    assert status.line().plain == "states from Slurm 0 s ago"


@pytest.mark.slurm
def test_shards_a_running_array_completes_are_said_on_the_checkpoint_screen(slurm_cluster, tmp_path: Path) -> None:
    """A session: the Checkpoint screen open on the checkpoint of a real array still running. Its
    second shard completes after the read on screen: the screen says so, and r shows it complete."""
    import re
    import subprocess
    import sys

    from conftest import submit_real_array
    from test_console_fixtures import checkpoint_read, screen_lines, text_of

    checkpoint, go = tmp_path / "ck", tmp_path / "go"
    shard = ("import os, sys, time; from sharding.store import Checkpoint, RunConfig; "
             "shard = int(sys.argv[1]); run = RunConfig(1, 2); store = Checkpoint(sys.argv[2]); "
             "store.ensure_run(run); deadline = time.time() + 100\n"
             "while shard == 2 and not os.path.exists(sys.argv[3]) and time.time() < deadline: time.sleep(0.2)\n"
             "store.write_completion(shard, run)")
    record = submit_real_array(tmp_path / "log" / "s.SHARD.log", "SHARD=1:2", sys.executable, "-c", shard,
                               "SHARD", str(checkpoint), str(go))
    jobs = sorted({job.job_id for job in record.jobs})
    first = checkpoint / ".nemo_curator_metadata" / ".slurm_array_completion"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: any(p.name.startswith("completed_") for p in first.glob("*.json")), 120)
            await pilot.press("r")
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            assert "complete 1" in text_of(screen.query_one("#ckpt-map"))
            said = lambda: [line.strip() for line in screen_lines(app) if "changed since" in line]   # noqa: E731
            assert said() == []
            go.touch()                                   # shard 2 completes now, the read stays on screen
            await wait_for(pilot, said, 60)
            assert re.fullmatch(r"⚠ the checkpoint changed since it was read at \d\d:\d\d:\d\d: r reads it again",
                                said()[0]), said()
            await pilot.press("r")
            await checkpoint_read(pilot)
            assert said() == [] and "complete 2" in text_of(screen.query_one("#ckpt-map"))

    try:
        asyncio.run(scenario())
    finally:
        subprocess.run(["scancel", *jobs], check=False)


def test_the_change_stamp_sees_a_failed_record_added_inside_a_job_folder_that_exists(tmp_path: Path) -> None:
    """A failed-task record sits four folders down (slurm_job_J/array_task_A/restart_R/shard_i): a
    second array task of job 500 failing added array_task_8/ inside slurm_job_500/, and the stamp,
    which stat'ed the failed-task folder alone, stayed as it was. A record rewritten in place changes
    it too; nothing changed, the same stamp; a folder deeper than the read searches is not looked at."""
    from test_console_fixtures import build_checkpoint

    from hyperion_console.checkpoint_read import change_stamp
    from sharding.store import MAX_FAILED_DEPTH, Attempt, Checkpoint

    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))
    store = Checkpoint(checkpoint)
    before = change_stamp(checkpoint)
    assert change_stamp(checkpoint) == before
    failed_dir_stat = store.failed_dir.stat().st_mtime_ns
    record = store.write_failed(8, Attempt(job="500", array_task="8", restart="0"), {"error": "boom"})
    assert store.failed_dir.stat().st_mtime_ns == failed_dir_stat    # the folder's own stat: no change
    added = change_stamp(checkpoint)
    assert added != before
    record.write_text('{"error": "boom, again"}')                      # rewritten in place
    assert change_stamp(checkpoint) != added
    rewritten = change_stamp(checkpoint)
    deep = store.failed_dir.joinpath(*(f"d{i}" for i in range(MAX_FAILED_DEPTH + 1)))   # not entered
    deep.mkdir(parents=True)
    nested = change_stamp(checkpoint)
    assert nested != rewritten                                          # a folder added where the read looks
    (deep / "failed_tasks.json").write_text("{}")                       # below where the read searches
    assert change_stamp(checkpoint) == nested


def test_the_checkpoint_screen_says_when_a_failed_record_was_added_to_a_job_folder(tmp_path: Path) -> None:
    """The change notice for a failed-task record written inside an existing job's folder (another
    array task of the same job failing): it went unsaid, the Failed tab listing one record of two."""
    from test_console_fixtures import build_checkpoint, checkpoint_read, screen_lines, text_of

    from sharding.store import Attempt, Checkpoint

    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            said = lambda: [line.strip() for line in screen_lines(app) if "changed since" in line]   # noqa: E731
            await pilot.pause(2.5)
            assert said() == []
            Checkpoint(checkpoint).write_failed(8, Attempt(job="500", array_task="8", restart="0"),
                                                {"task_ids": ["p000009"], "error": "InjectedFailure: boom"})
            await wait_for(pilot, said, 10)
            await pilot.press("r")
            await checkpoint_read(pilot)
            assert said() == []
            assert "failed 2" in text_of(screen.query_one("#ckpt-map"))

    asyncio.run(scenario())
