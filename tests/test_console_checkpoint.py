"""Checkpoint screen on a checkpoint built with sharding.store: coverage, failures, retry preview."""
from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import pytest
from test_console_fixtures import (
    FIXED_TIME,
    build_checkpoint,
    build_history,
    checkpoint_read,
    confirmation,
    notifications,
    one_read,
    posted,
    rendered,
    screen_lines,
    table_column,
    text_of,
    wait_for,
)
from conftest import run_cli, submit_real_array
from textual.geometry import Region

from backends.launch_slurm import submit
from backends.records.record import load_record
from backends.submit.commandline import parse_submit_argv
from backends.submit.plan import build_plan
from backends.watch.wait import wait
from hyperion_console.app import make_app
from hyperion_console.messages import ResubmitRequested
from hyperion_console.screens.confirm import ConfirmScreen
from sharding.assign import shard_for
from sharding.example import make_input
from sharding.listing import list_sources
from sharding.retry import format_fields, plan_retry
from sharding.retry import retry_from_coverage
from sharding.store import Checkpoint, RunConfig, manifest_name

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def test_coverage_map_run_json_and_failed_records(tmp_path: Path) -> None:
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            run = text_of(screen.query_one("#ckpt-run"))
            assert '{"minimum_shard_index":1,"total_shards":8}' in run and "1..8 (8)" in run
            legend = text_of(screen.query_one("#ckpt-map"))
            assert "complete 6" in legend and "incomplete 1" in legend and "failed 1" in legend
            assert " 1 2 3 4 5 6 7 8" in " " + legend.splitlines()[1]
            failed = screen.query_one("#ckpt-failed")
            assert table_column(failed, "shard") == ["6"] and table_column(failed, "job") == ["500"]
            cell = table_column(failed, "details")[0]           # whole at 80 columns ("tasks p000003  In…")
            assert cell == "tasks p000003  InjectedFailure: boom"
            detail = text_of(screen.query_one("#ckpt-failed-detail"))
            assert "slurm_job_500/array_task_6/restart_0/shard_6/failed_tasks.json" in detail
            assert '"error": "InjectedFailure: boom"' in detail   # the raw JSON, still there below
    asyncio.run(scenario())


def test_failed_record_details_say_what_hyperion_checkpoint_failed_says(tmp_path: Path, cli_env) -> None:
    """The details cell began with the raw JSON ('{"error": "Inject…'), the box under the table was the
    JSON too; `hyperion-checkpoint failed` says 'tasks p000003  InjectedFailure: boom'. Now the cell
    holds the CLI's summary and the box its whole line, the raw JSON below it."""
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))
    (cli_line, path_line) = run_cli("hyperion-checkpoint", "failed", str(checkpoint), env=cli_env).stdout.splitlines()

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 30)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-failed")
            screen = app.checkpoint_screen
            failed = screen.query_one("#ckpt-failed")
            assert table_column(failed, "details") == ["tasks p000003  InjectedFailure: boom"]
            failed.focus()
            await pilot.pause()
            detail = text_of(screen.query_one("#ckpt-failed-detail")).splitlines()
            assert detail[:2] == [path_line.strip(), cli_line]
            assert detail[3] == "raw JSON" and '"error": "InjectedFailure: boom"' in detail[4]

    asyncio.run(scenario())


def test_a_record_in_a_users_own_failed_task_folder_is_listed_with_dashes(tmp_path: Path) -> None:
    """NEMO_CURATOR_FAILED_TASKS_DIR set by hand to .failed_tasks/my_attempt: a failure, of no shard the
    folder names; the table says '-' for what it does not know, the map counts it for no shard."""
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))
    own = Checkpoint(checkpoint).failed_dir / "my_attempt" / "failed_tasks.json"
    own.parent.mkdir(parents=True)
    own.write_text("")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 24)) as pilot:    # wide enough for the restart column
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            failed = screen.query_one("#ckpt-failed")
            assert sorted(table_column(failed, "shard")) == ["-", "6"]
            assert sorted(table_column(failed, "restart")) == ["-", "0"]
            legend = text_of(screen.query_one("#ckpt-map"))
            assert "failed 1" in legend and "incomplete 1" in legend
            assert "skipped" not in text_of(screen.query_one("#ckpt-run"))

    asyncio.run(scenario())


def test_skipped_files_are_counted_above_a_map_that_fills_the_screen(tmp_path: Path) -> None:
    """A thousand shards fill 80x24 with the map; the skipped files below it were out of sight."""
    checkpoint = build_checkpoint(tmp_path, total=1000, complete=tuple(range(1, 900)), failed=(950,))
    stray = Checkpoint(checkpoint).failed_dir / "slurm_job_1" / "array_task_1" / "restart_0" / "shard_x" / "failed_tasks.json"
    stray.parent.mkdir(parents=True)
    stray.write_text("{}")
    fifo = stray.parents[1] / "shard_7" / "failed_tasks.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            run = text_of(screen.query_one("#ckpt-run"))
            assert "skipped    1 file that did not fit the layout (listed below the map)" in run, run
            assert "no shard   1 failed-task record in folders naming no shard (the Failed tab lists them)" \
                in run, run
            below = text_of(screen.query_one("#ckpt-problems"))
            assert "shard_x/failed_tasks.json" in below
            assert "shard 'x' is not an integer: listed under no shard" in below
            assert screen.query_one("#ckpt-problems").region.y >= 24      # below the screen, as said

    asyncio.run(scenario())



def test_an_indented_run_json_reads_as_one_line_of_json(tmp_path: Path) -> None:
    """A run.json rewritten by hand with indentation (`python -m json.tool`): the screen showed
    `{\\x0a  "minimum_shard_index": 1,\\x0a ...` (its newlines spelled out); it shows the JSON."""
    checkpoint = build_checkpoint(tmp_path, total=10, complete=(1, 2))
    run_path = Checkpoint(checkpoint).run_path
    payload = json.loads(run_path.read_text())
    run_path.write_text(json.dumps(payload, indent=2) + "\n")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(200, 40)) as pilot:
            await checkpoint_read(pilot)
            run = text_of(app.checkpoint_screen.query_one("#ckpt-run")).split("\n")
            said = next(line for line in run if line.startswith("run.json"))
            assert said == "run.json   " + json.dumps(payload, separators=(",", ":")), run
            assert "\\x0a" not in "".join(run)

    asyncio.run(scenario())


def test_a_counted_record_without_readable_details_is_not_called_skipped(tmp_path: Path) -> None:
    """A failed-task record that is not JSON marks its shard failed; the screen said "skipped" of it."""
    checkpoint = build_checkpoint(tmp_path, total=10, complete=(1, 2), failed=(5,))
    record = next(Checkpoint(checkpoint).failed_dir.rglob("failed_tasks.json"))
    record.write_text("Traceback (most recent call last) ...\n")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            run = text_of(screen.query_one("#ckpt-run"))
            assert "skipped" not in run, run
            assert "details    1 failed-task record whose details cannot be read (listed below the map)" in run, run
            below = text_of(screen.query_one("#ckpt-problems"))
            assert "skipped" not in below and "failed_tasks.json: failed-task record is not JSON" in below

    asyncio.run(scenario())


def test_a_record_without_details_says_why_in_its_row_as_failed_does(tmp_path: Path) -> None:
    """Curator's empty marker (and a record too big to read) had an empty details cell, where
    `hyperion-checkpoint failed` says "(empty marker, as NeMo Curator writes it)"."""
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2), failed=(5, 6))
    records = sorted(Checkpoint(checkpoint).failed_dir.rglob("failed_tasks.json"))
    records[0].write_text("")
    records[1].write_bytes(b"{" + b" " * (2 << 20) + b"}")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(160, 24)) as pilot:
            await checkpoint_read(pilot)
            failed = app.checkpoint_screen.query_one("#ckpt-failed")
            cells = dict(zip(table_column(failed, "shard"), table_column(failed, "details")))
            assert cells["5"].startswith("tasks -  (empty marker"), cells   # as `failed` prints it
            assert cells["6"].startswith("tasks -  (2.1 MiB, larger"), cells

    asyncio.run(scenario())


def test_retry_preview_follows_the_max_array_size_field(tmp_path: Path) -> None:
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4, 5, 6, 7), failed=(3, 9))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            windows = screen.query_one("#retry-windows")
            assert [" ".join(table_column(windows, c)[0] for c in ("array", "offset", "minimum", "total"))] \
                == format_fields(plan_retry(checkpoint))
            screen.query_one("#max-array-size").value = "4"
            await pilot.pause()
            rows = [" ".join(table_column(windows, c)[i] for c in ("array", "offset", "minimum", "total"))
                    for i in range(windows.row_count)]
            assert rows == format_fields(plan_retry(checkpoint, 4)) and len(rows) == 3
            commands = text_of(screen.query_one("#retry-commands"))
            assert all(line in commands for line in rows)
            assert "no submit record" in commands
            assert not screen.query_one("#max-array-size").has_class("invalid")
            screen.query_one("#max-array-size").value = "0"
            await pilot.pause()
            assert text_of(screen.query_one("#retry-summary")).startswith("--max-array-size: ")
            assert screen.query_one("#max-array-size").has_class("invalid")
            await pilot.press("ctrl+r")                    # no plan: told, nothing asked
            await checkpoint_read(pilot)
            assert not isinstance(app.screen, ConfirmScreen)
            assert "no retry plan (see the Retry tab)" in notifications(app)

    asyncio.run(scenario())


def test_missing_run_json_is_shown_not_raised(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "nowhere", search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            shown = text_of(app.checkpoint_screen.query_one("#ckpt-run"))
            assert shown.startswith("run.json: not found at ")
            assert any(m.startswith("run.json: ") for m in notifications(app))
            await pilot.press("r")
            await checkpoint_read(pilot)
            assert app.is_running

    asyncio.run(scenario())


@pytest.mark.slurm
def test_resubmit_on_slurm_lands_on_jobs_and_completes_the_run(slurm_cluster, tmp_path: Path) -> None:
    """A 4-shard Slurm run whose shard 3 fails once; Resubmit sends only shard 3 to Slurm."""
    make_input(tmp_path / "input", 8, 3)
    fail_id = next(json.loads(t.files[0].read_text().splitlines()[0])["id"]
                   for t in list_sources(tmp_path / "input") if shard_for(t.task_id, 4, 1) == 3)
    site, options = parse_submit_argv([
        "slurm", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--array", "SHARD=1:4",
        "--time", "00:02:00", "--output-file", str(tmp_path / "log" / "s.SHARD.log"), "--",
        sys.executable, "-m", "sharding.example", "--input", str(tmp_path / "input"),
        "--output", str(tmp_path / "output"), "--checkpoint", str(tmp_path / "ckpt"),
        "--shard-index", "SHARD", "--total-shards", "4", "--minimum-shard-index", "1",
        "--fail-record", fail_id, "--fail-once"])
    first = submit(build_plan(site, options))
    assert not wait(first).ok                       # shard 3 failed: that is the point

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "ckpt", record=first.path,
                       search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            assert table_column(screen.query_one("#retry-windows"), "array") == ["3"]
            assert "hyperion-submit slurm" in text_of(screen.query_one("#retry-commands"))
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: app.screen is app.jobs_screen
                           and app.jobs_screen.record is not None
                           and app.jobs_screen.record.jobs[0].job_id != first.jobs[0].job_id, 60)
            table = app.jobs_screen.query_one("#tasks")       # the newest run of every shard
            assert table_column(table, "value") == ["1", "2", "3", "4"]
            assert table_column(table, "attempt") == ["1", "1", "2", "1"]
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED"] * 4, 180)
            await pilot.press("3", "r")
            await wait_for(pilot, lambda: "every shard is complete"
                           in text_of(screen.query_one("#retry-summary")), 10)

    asyncio.run(scenario())


def _gated_run(tmp_path: Path, shards: int, fail: bool = False):
    """A sharded run submitted to Slurm (`--array SHARD=1:shards`) whose shard 1 completes while the
    others wait for the file tmp_path/go; then they run, or with `fail` exit 3 (no manifest, no
    failed-task record: the checkpoint does not change). Returns (record, job id, go) once shard 1's
    manifest is written; nothing watches the job."""
    import subprocess
    import time

    make_input(tmp_path / "input", shards, 1)
    go = tmp_path / "go"
    fails = '[ "$s" = 1 ] || exit 3; ' if fail else ""
    gate = (f's=$1; shift; [ "$s" = 1 ] || until [ -e {go} ]; do sleep 0.5; done; {fails}'
            'exec "$@" --shard-index "$s"')
    site, options = parse_submit_argv([
        "slurm", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--array", f"SHARD=1:{shards}",
        "--time", "00:02:00", "--output-file", str(tmp_path / "log" / "s.SHARD.log"), "--",
        "sh", "-c", gate, "gate", "SHARD", sys.executable, "-m", "sharding.example",
        "--input", str(tmp_path / "input"), "--output", str(tmp_path / "output"),
        "--checkpoint", str(tmp_path / "ckpt"), "--total-shards", str(shards), "--minimum-shard-index", "1"])
    record = submit(build_plan(site, options))
    job = record.jobs[0].job_id
    try:
        deadline = time.monotonic() + 240
        while not (Checkpoint(tmp_path / "ckpt").run_path.is_file()
                   and plan_retry(tmp_path / "ckpt").expression == f"2-{shards}"):
            assert time.monotonic() < deadline, "shard 1 never completed"
            time.sleep(1)
    except BaseException:
        go.touch()
        subprocess.run(["scancel", job], check=False)
        raise
    return record, job, go


def test_resubmit_is_refused_while_the_records_shards_still_run(slurm_cluster, tmp_path: Path) -> None:
    """Shards still running have no manifest yet and were planned as missing: Resubmit asked, and ran
    them a second time. The Retry tab says which still run, and Resubmit is refused with the line
    `hyperion-checkpoint retry --submit` prints, before any question; nothing is submitted."""
    import subprocess

    first, job, go = _gated_run(tmp_path, 4)
    try:
        async def scenario() -> None:
            app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "ckpt", record=first.path, search_dirs=[tmp_path])
            async with app.run_test(size=(240, 50)) as pilot:
                await checkpoint_read(pilot)
                screen = app.checkpoint_screen
                said = f"shard(s) 2-4 (3 of the 3 listed missing) still running in job(s) {job} of {first.path}"
                await _show_tab(pilot, "tab-retry")          # the tab that says it asks Slurm
                await wait_for(pilot, lambda: said in text_of(screen.query_one("#retry-commands")).replace("\n", " "),
                               20)
                commands = text_of(screen.query_one("#retry-commands")).replace("\n", " ")
                assert f"{said}: Resubmit refuses until they end" in commands, commands
                await _show_tab(pilot, "tab-coverage")       # ctrl+r asks from any tab
                await pilot.press("ctrl+r")
                await wait_for(pilot, lambda: any(said in m for m in notifications(app)), 20)
                await pilot.pause(0.5)
                assert not isinstance(app.screen, ConfirmScreen)
                refusal = next(m for m in notifications(app) if said in m)
                assert refusal.endswith(f"or cancel them (hyperion-jobs cancel {job}), then retry; nothing resubmitted")

        asyncio.run(scenario())
        assert [j.job_id for j in load_record(first.path).jobs] == [job]      # no second submission
    finally:
        go.touch()
        wait(load_record(first.path))
        subprocess.run(["scancel", job], check=False)


def _retry_text(screen) -> str:
    return text_of(screen.query_one("#retry-commands")).replace("\n", " ")


def _on_the_retry_tab_saying_still_running(tmp_path: Path, then) -> None:
    """A gated run (`_gated_run(tmp_path, 3, fail=True)`) on the Checkpoint screen, its Retry tab
    saying shards 2-3 still run; then `await then(pilot, said, record, go)` (`said`: the line's start),
    and the job cancelled whatever happened."""
    import subprocess

    first, job, go = _gated_run(tmp_path, 3, fail=True)
    try:
        async def scenario() -> None:
            app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "ckpt", record=first.path, search_dirs=[tmp_path])
            async with app.run_test(size=(240, 50)) as pilot:
                await checkpoint_read(pilot)
                said = f"shard(s) 2-3 (2 of the 2 listed missing) still running in job(s) {job}"
                await _show_tab(pilot, "tab-retry")
                await wait_for(pilot, lambda: said in _retry_text(app.checkpoint_screen), 20)
                await then(pilot, said, first, go)

        asyncio.run(scenario())
    finally:
        go.touch()
        subprocess.run(["scancel", job], check=False)


def test_the_retry_tabs_still_running_line_goes_once_the_tasks_end(slurm_cluster, tmp_path: Path) -> None:
    """The Retry tab said `shard(s) 2-3 ... still running in job(s) J ...: Resubmit refuses until they
    end` after they had ended (TIMEOUT, FAILED: no manifest, no failed-task record, so the checkpoint
    did not change): the Jobs screen and hyperion-submit said the tasks ended, the tab kept the line
    until `r` or another screen. An end written to the record's ledger (by the Jobs screen's watch,
    hyperion-submit's wait, `hyperion-jobs status`) makes the tab ask again, and the line goes."""
    async def then(pilot, said: str, first, go: Path) -> None:
        screen = pilot.app.checkpoint_screen
        go.touch()          # both fail (exit 3): no manifest, no failed-task record
        await asyncio.to_thread(wait, load_record(first.path))     # hyperion-submit's wait: ends in the ledger
        await wait_for(pilot, lambda: "still running" not in _retry_text(screen), 120)
        assert screen.running is None

    _on_the_retry_tab_saying_still_running(tmp_path, then)


def test_a_ledger_change_seen_during_a_read_asks_nothing_beside_the_reads_ask(tmp_path: Path, monkeypatch) -> None:
    """The Retry tab's look at the record's ledger (tasks said to still run) that ended while an `r`
    was reading started a second ask of Slurm beside the read's own (two more sacct+squeue of the
    console's budget, and "asking Slurm..." under a read that was about to answer). A look that ends
    during a read asks nothing: the read asks when its answer is needed."""
    import threading

    import hyperion_console.screens.checkpoint as screen_module
    from sharding.resubmit import StillRunning

    async def scenario() -> None:
        app = _demo_app(tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            await _show_tab(pilot, "tab-retry")
            await wait_for(pilot, lambda: screen._asking is None and screen._running_asked, 10)
            record = screen.query_one("#record-path").value
            looking, seen = threading.Event(), threading.Event()
            real_stamp = screen_module.ledger_stamp

            def held_stamp(path):                  # the look's stat, held until the read is under way
                if not looking.is_set():
                    looking.set()
                    seen.wait(10)
                    return ("a", "changed", "ledger")
                return real_stamp(path)

            asks = []
            monkeypatch.setattr(screen_module, "ledger_stamp", held_stamp)
            monkeypatch.setattr(screen_module, "running_of", lambda *a, **k: asks.append(a) or (None, None, None))
            screen._running_stamp = ("the", "ledger", "asked")
            screen.running = StillRunning(record, (11,), ("local",), 1)      # as an ask said
            screen.refresh_retry()
            await wait_for(pilot, looking.is_set, 5)      # the 2 s look has begun
            slow = SlowReads(monkeypatch, holds=1)
            try:
                await pilot.press("r")
                await wait_for(pilot, lambda: screen.query_one("#ckpt-reading").display, 3)
                seen.set()                                # the look ends: the ledger changed
                await pilot.pause(0.5)
                assert screen.reading
                assert asks == [] and screen._asking is None
                assert "asking Slurm" not in text_of(screen.query_one("#retry-commands"))
            finally:
                seen.set()
                slow.release()
            await checkpoint_read(pilot)

    asyncio.run(scenario())


def test_the_retry_tabs_still_running_line_goes_when_tasks_end_with_nobody_watching(slurm_cluster,
                                                                                   tmp_path: Path) -> None:
    """hyperion-submit stopped by a hangup ("job(s) left queued") and no Jobs screen on the record:
    nothing writes the tasks' ends to the ledger, so the Retry tab's look at it never saw them, and
    `shard(s) 2-3 ... still running ...: Resubmit refuses until they end` stayed after both had
    ended FAILED, until `r`. The tab now asks Slurm again while it shows that line, every
    RUNNING_RECHECK_SECONDS (30 s), charged to the console's query budget: the line goes."""
    import time

    from hyperion_console.checkpoint_read import RUNNING_QUERIES, ledger_stamp
    from hyperion_console.screens.checkpoint import CHANGE_CHECK_SECONDS

    async def then(pilot, said: str, first, go: Path) -> None:
        app, screen = pilot.app, pilot.app.checkpoint_screen
        # the first ask wrote shard 1's end to the ledger (no news: its stamp is the ledger's after it)
        await wait_for(pilot, lambda: screen._asking is None
                       and ledger_stamp(str(first.path)) == screen._running_stamp, 20)
        await pilot.pause(2 * CHANGE_CHECK_SECONDS + 1)
        assert said in _retry_text(screen)
        go.touch()          # both fail (exit 3): no manifest, no failed-task record, no watch
        began = time.monotonic()
        await wait_for(pilot, lambda: "still running" not in _retry_text(screen), 90)
        assert screen.running is None and screen.running_problem is None
        assert time.monotonic() - began < 30 + 15
        assert app.query_budget.used() >= 2 * RUNNING_QUERIES    # the first ask and the one again
        assert not app.jobs_screen.is_mounted                    # no Jobs screen watched meanwhile

    _on_the_retry_tab_saying_still_running(tmp_path, then)


@pytest.mark.slurm
def test_the_checkpoint_screen_asks_slurm_only_for_the_retry_tab_within_the_consoles_budget(
        slurm_cluster, tmp_path: Path, monkeypatch) -> None:
    """Every read of the checkpoint, each `r` on the Coverage tab too, sent an sacct+squeue pair about
    the record's tasks, whose answer only the Retry tab shows (and Resubmit acts on). Now the Coverage
    tab's reads ask nothing; opening the Retry tab asks once, charged to the console's query budget."""
    import subprocess
    import time

    from test_checkpoint_queries_slurm import calls, counting_path

    go = tmp_path / "go"
    job_text = ("import pathlib, sys, time; from sharding.store import Checkpoint, RunConfig; shard = int(sys.argv[1]); "
                "store = Checkpoint('ckpt'); store.ensure_run(RunConfig(1, 3)); "
                f"shard == 1 or [time.sleep(0.5) for _ in iter(lambda: pathlib.Path({str(go)!r}).exists(), True)]; "
                "store.write_completion(shard, RunConfig(1, 3))")
    first = submit_real_array(tmp_path / "log" / "s.SHARD.log", "SHARD=1:3", sys.executable, "-c", job_text, "SHARD",
                              cwd=tmp_path)
    job = first.jobs[0].job_id
    try:
        deadline = time.monotonic() + 240
        while not (Checkpoint(tmp_path / "ckpt").run_path.is_file()
                   and plan_retry(tmp_path / "ckpt").expression == "2-3"):
            assert time.monotonic() < deadline, "shard 1 never completed"
            time.sleep(1)
        env, log = counting_path(tmp_path, dict(os.environ))
        monkeypatch.setenv("PATH", env["PATH"])

        async def scenario() -> None:
            app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "ckpt", record=first.path, search_dirs=[tmp_path])
            async with app.run_test(size=(240, 50)) as pilot:
                await checkpoint_read(pilot)
                screen = app.checkpoint_screen
                for _ in range(2):
                    await pilot.press("r")
                    await checkpoint_read(pilot)
                assert calls(log) == []
                await _show_tab(pilot, "tab-retry")
                said = f"shard(s) 2-3 (2 of the 2 listed missing) still running in job(s) {job}"
                await wait_for(pilot, lambda: said in text_of(screen.query_one("#retry-commands")), 20)
                assert calls(log) == ["sacct", "squeue"]
                assert app.query_budget.used() == 2
                await _show_tab(pilot, "tab-coverage")
                await _show_tab(pilot, "tab-retry")      # the read on screen has its answer
                await pilot.pause(0.5)
                assert calls(log) == ["sacct", "squeue"]

        asyncio.run(scenario())
    finally:
        go.touch()
        subprocess.run(["scancel", job], check=False)


def _task_ended(job: str, task: int, env: dict[str, str]) -> bool:
    """Whether accounting says the array task ended (what the console's sacct will be told); `env`:
    the test's own, whose sacct is not one a test counts."""
    import subprocess

    state = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", f"{job}_{task}"],
                           capture_output=True, text=True, env=env).stdout.split()
    return bool(state) and state[0].split()[0] in ("COMPLETED", "CANCELLED", "FAILED")


@pytest.mark.slurm
def test_an_ask_that_records_an_end_is_not_followed_by_a_second_ask(slurm_cluster, tmp_path: Path,
                                                                    monkeypatch) -> None:
    """The Retry tab stamped the record's ledger before asking Slurm, and the ask writes there the
    ends it learns: the look 2 s later saw that write as news and asked Slurm again (sacct+squeue,
    two more calls of the console's budget) after every ask that learned an end while other shards
    still ran. Counted on the real cluster: the tab's ask that records shard 1's end, and `r`'s ask
    that records shard 2's (cancelled), are each one sacct+squeue, with no second pair after them."""
    import subprocess
    import time

    from test_checkpoint_queries_slurm import calls, counting_path

    from backends.records.history import load_history
    from hyperion_console.checkpoint_read import ledger_stamp
    from hyperion_console.screens.checkpoint import CHANGE_CHECK_SECONDS

    first, job, go = _gated_run(tmp_path, 3)
    try:
        own = dict(os.environ)
        deadline = time.monotonic() + 60
        while not _task_ended(job, 1, own):           # so that the tab's ask learns its end
            assert time.monotonic() < deadline, "shard 1's task never ended"
            time.sleep(0.5)
        env, log = counting_path(tmp_path, own)
        monkeypatch.setenv("PATH", env["PATH"])

        def ended() -> set:
            return {key[1] for key in load_history(str(first.path)).ledger.finals}

        async def scenario() -> None:
            app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "ckpt", record=first.path, search_dirs=[tmp_path])
            async with app.run_test(size=(240, 50)) as pilot:
                await checkpoint_read(pilot)
                screen = app.checkpoint_screen
                assert ended() == set()
                await _show_tab(pilot, "tab-retry")
                said = f"shard(s) 2-3 (2 of the 2 listed missing) still running in job(s) {job}"
                await wait_for(pilot, lambda: said in _retry_text(screen), 20)
                assert ended() == {1}                          # the ask wrote shard 1's end
                await pilot.pause(2 * CHANGE_CHECK_SECONDS + 1)    # the ledger looked at, twice
                assert calls(log) == ["sacct", "squeue"] and app.query_budget.used() == 2
                assert screen._running_stamp == ledger_stamp(str(first.path))

                subprocess.run(["scancel", f"{job}_2"], check=True)
                deadline = time.monotonic() + 60
                while not _task_ended(job, 2, own):
                    assert time.monotonic() < deadline, "shard 2's task never ended"
                    await pilot.pause(0.5)
                await pilot.press("r")                         # the read asks itself: the Retry tab shows
                said = f"shard(s) 3 (1 of the 2 listed missing) still running in job(s) {job}"
                await wait_for(pilot, lambda: said in _retry_text(screen), 20)
                assert ended() == {1, 2}
                await pilot.pause(2 * CHANGE_CHECK_SECONDS + 1)
                assert calls(log) == ["sacct", "squeue"] * 2 and app.query_budget.used() == 4

        asyncio.run(scenario())
    finally:
        go.touch()
        subprocess.run(["scancel", job], check=False)


def test_asking_whether_a_records_tasks_run_parses_the_record_once(tmp_path: Path, monkeypatch) -> None:
    """The ask parsed the record twice (the preview's cached copy, then again for its history): a
    100,000-task record is half a second of parsing at every read. Once, and not again while unchanged."""
    import backends.records.history as history_module
    import hyperion_console.record_cache as record_cache
    from hyperion_console.checkpoint_read import running_of

    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")    # every end in the ledger: no Slurm
    loads = []
    for module in (history_module, record_cache):
        monkeypatch.setattr(module, "load_record",
                            lambda path, *args, real=module.load_record: loads.append(path) or real(path, *args))
    assert running_of(str(record))[:2] == (None, None)
    assert running_of(str(record))[:2] == (None, None)
    assert loads == [str(record)]


def test_quitting_during_a_resubmission_names_hyperion_checkpoint_retry_for_the_rest(tmp_path: Path, cli_env) -> None:
    """The quit dialog of a local run said `hyperion-jobs retry RECORD runs them again`, also for a run
    Resubmit launched, where that reruns the attempt's shard windows as they were. It names the
    command hyperion-submit's own last line names for such a run: the checkpoint retry."""
    make_input(tmp_path / "in", files=4, records=1)
    # the first run fails at once (shard 1); its resubmission sleeps in shard 1 until the console quits
    gate = f'[ -e {tmp_path}/armed ] && echo $$ > {tmp_path}/pid && sleep 30; exec "$@"'
    first = run_cli("hyperion-submit", "local", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--array",
                    "SHARD=1:4", "--output-file", str(tmp_path / "log" / "s.SHARD.log"), "--", "sh", "-c", gate,
                    "gate", sys.executable, "-m", "sharding.example", "--input", "in", "--output", "out",
                    "--checkpoint", "ck", "--shard-index", "SHARD", "--total-shards", "4",
                    "--minimum-shard-index", "1", "--fail-record", "doc-0001-0000",
                    cwd=tmp_path, env=cli_env, timeout=60)
    assert first.returncode == 1, first.stderr
    (tmp_path / "armed").touch()
    record = tmp_path / "log" / "q" / "s.SHARD.submit.json"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "ck", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(200, 50)) as pilot:
            await checkpoint_read(pilot)
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: (tmp_path / "pid").exists() and app.local_runs.active(), 20)
            await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("escape", "q")
            await confirmation(pilot, "#confirm-detail Static")
            detail = text_of(app.screen.query_one("#confirm-detail Static"))
            assert f"{record}\n  hyperion-checkpoint retry {tmp_path / 'ck'} --submit {record}" in detail, detail
            assert "hyperion-jobs retry" not in detail
            await pilot.press("y")
            await wait_for(pilot, lambda: not app.local_runs.active(), 20)

    asyncio.run(scenario())


# --- Resubmit shows what runs and whose record says so, and runs nothing else (issue 13) -------------

def _demo_app(tmp_path: Path):
    return make_app(cfg_dir=CONF, demo=True, demo_dir=tmp_path / "demo", search_dirs=[])


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_resubmit_confirmation_names_the_command_its_directory_and_a_foreign_owner(tmp_path: Path) -> None:
    async def scenario() -> None:
        seen: list = []
        app = _demo_app(tmp_path)
        async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            record = Path(screen.query_one("#record-path").value).absolute()
            os.chown(record, 65534, 65534)
            await pilot.press("ctrl+r")
            await confirmation(pilot, "#confirm-detail Static")
            assert isinstance(app.screen, ConfirmScreen)
            detail = text_of(app.screen.query_one("#confirm-detail Static"))
            lines = detail.splitlines()
            assert lines[0] == f"WARNING: the record {record} is owned by nobody (uid 65534), not by you."
            assert f"runs in: {load_record(record).cwd}" in lines
            command = next(line for line in lines if line.startswith("command: "))
            assert command.startswith("command: hyperion-submit local --cfg ") and "--array SHARD=11:12" in command
            await pilot.press("n")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
            assert not posted(seen, ResubmitRequested)
            assert plan_retry(screen.checkpoint).expression == "11-12"      # nothing ran

    asyncio.run(scenario())


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_resubmit_runs_nothing_if_the_record_changed_owner_after_the_confirmation(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = _demo_app(tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            record = Path(screen.query_one("#record-path").value).absolute()
            await pilot.press("ctrl+r")
            await confirmation(pilot, "#confirm-detail Static")
            detail = text_of(app.screen.query_one("#confirm-detail Static"))
            assert "WARNING" not in detail and detail.splitlines()[0] == f"record:  {record}"
            os.chown(record, 65534, 65534)          # swapped between the question and the answer
            await pilot.press("y")
            await wait_for(pilot, lambda: any("changed since it was confirmed" in m for m in notifications(app)), 20)
            assert plan_retry(screen.checkpoint).expression == "11-12"
            assert not isinstance(app.screen, ConfirmScreen)

    asyncio.run(scenario())


def test_a_trillion_shard_checkpoint_opens_with_a_bucketed_map(tmp_path: Path) -> None:
    """Coverage and retry of 10**12 shards cost what the manifests cost: the screen opens at once."""
    store = Checkpoint(tmp_path / "ck")
    run = RunConfig(1, 10 ** 12)
    store.ensure_run(run)
    for shard in (1, 2, 5 * 10 ** 11):
        store.write_completion(shard, run)

    no_sites = tmp_path / "no-sites"    # no site file's max_array_size: one window, as the CLI plans it
    no_sites.mkdir()

    async def scenario() -> None:
        app = make_app(cfg_dir=no_sites, checkpoint=store.path, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            legend = text_of(screen.query_one("#ckpt-map"))
            assert "complete 3" in legend and "incomplete 999999999997" in legend
            assert "each block: 500000000 shards" in legend
            summary = text_of(screen.query_one("#retry-summary"))
            assert summary.startswith("missing 3-499999999999,500000000001-1000000000000")
            assert "(999999999997 shards, 1 window)" in summary
            screen.query_one("#max-array-size").value = "10"
            await pilot.pause()
            assert text_of(screen.query_one("#retry-summary")).startswith("--max-array-size: the 999999999997 missing")

    asyncio.run(scenario())


def test_every_tab_follows_the_checkpoint_as_it_is_now(tmp_path: Path) -> None:
    """ctrl+r re-planned the Retry tab only, so Coverage still said "complete 8" beside "missing 5-6";
    after the checkpoint was removed, r left every tab showing the old run under the error."""
    import shutil

    checkpoint = build_checkpoint(tmp_path, total=8, complete=tuple(range(1, 9)), failed=())

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            assert "complete 8" in text_of(screen.query_one("#ckpt-map"))
            for manifest in Checkpoint(checkpoint).completion_dir.glob("completed_slurm_array_*.json"):
                if json.loads(manifest.read_text())["shard_index"] in (5, 6):
                    manifest.unlink()
            await pilot.press("ctrl+r")          # no record: refused, but with the checkpoint as it is
            await checkpoint_read(pilot)
            assert "missing 5-6" in text_of(screen.query_one("#retry-summary"))
            legend = text_of(screen.query_one("#ckpt-map"))
            assert "complete 6" in legend and "incomplete 2" in legend
            shutil.rmtree(checkpoint)
            await pilot.press("r")
            await checkpoint_read(pilot)
            assert "run.json" in text_of(screen.query_one("#ckpt-run"))
            assert text_of(screen.query_one("#ckpt-map")).strip() == ""
            assert table_column(screen.query_one("#ckpt-failed"), "shard") == []
            assert screen.query_one("#retry-windows").row_count == 0 and screen.plan is None
            assert "missing" not in text_of(screen.query_one("#retry-summary"))

    asyncio.run(scenario())


def test_at_80_columns_windows_and_failed_records_stay_readable(tmp_path: Path) -> None:
    """A 5000-shard plan's array column kept its 200-character width for every plan after it, so offsets
    were off screen; a long job id pushed the details off; a long record was cut at 8 lines."""
    from sharding.store import Attempt

    checkpoint = tmp_path / "checkpoint"
    store = Checkpoint(checkpoint)
    run = RunConfig(1, 5000)
    store.ensure_run(run)
    for shard in range(2, 5001, 2):
        store.write_completion(shard, run)
    store.write_failed(7, Attempt("9" * 40, "7", "0"),
                       {"task_ids": [f"p{i:06d}" for i in range(400)], "error": "ValueError: last words"})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            screen.query_one("#ckpt-tabs").active = "tab-retry"
            screen.query_one("#max-array-size").value = "1000"
            await pilot.pause()
            windows = screen.query_one("#retry-windows")
            assert table_column(windows, "offset") == ["0", "1000", "2000", "3000", "4000"]
            drawn = "\n".join(rendered(windows))
            assert "1000" in drawn and "5000" in drawn and "…" in drawn
            screen.query_one("#max-array-size").value = ""
            await pilot.pause()
            assert " 0 " in rendered(windows)[1] and "5000" in rendered(windows)[1]

            screen.query_one("#ckpt-tabs").active = "tab-failed"
            await pilot.pause()
            failed = screen.query_one("#ckpt-failed")
            assert table_column(failed, "job") == ["9" * 17 + "…"]     # 12345678_1000 and longer tasks show whole
            assert "details" in rendered(failed)[0]
            box = screen.query_one("#ckpt-failed-detail-box")
            assert box.max_scroll_y > 0           # the rest of the record is there to scroll to
            box.scroll_end(animate=False)
            await pilot.pause()
            assert "last words" in "\n".join(rendered(screen.query_one("#ckpt-failed-detail")))

    asyncio.run(scenario())


def test_resubmit_preview_says_which_sbatch_variables_of_the_environment_are_not_passed(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    """A Slurm resubmit's sbatch drops SBATCH_GRES as a submission's does, and `hyperion-checkpoint
    resubmit` says so on stderr; the Submit preview said it, the Resubmit preview and its
    confirmation did not."""
    from backends.submit.site_options import ignored_inputs_line

    monkeypatch.setenv("SBATCH_GRES", "gpu:v100:1")
    checkpoint = build_checkpoint(tmp_path)
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml", failures={})
    line = "# hyperion-submit: " + ignored_inputs_line({"SBATCH_GRES": "gpu:v100:1"})

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
            await pilot.press("3")
            await checkpoint_read(pilot)
            commands = text_of(app.checkpoint_screen.query_one("#retry-commands")).splitlines()
            runs = commands.index("resubmit runs (slurm):")
            assert commands[runs + 1] == f"  {line}", commands
            await pilot.press("ctrl+r")
            await confirmation(pilot, "#confirm-detail Static")
            assert line in text_of(app.screen.query_one("#confirm-detail Static")).splitlines()
            await pilot.press("n")
            await pilot.pause()
            assert not posted(seen, ResubmitRequested)

    asyncio.run(scenario())


# --- the screen reads the checkpoint once per reload, never per keystroke -------------------------

def test_typing_a_max_array_size_plans_from_the_checkpoint_on_screen(tmp_path: Path, monkeypatch) -> None:
    """Every keystroke in max array size listed and parsed every manifest again (10,000 on NFS: 10 s
    of a frozen screen per digit). Now the plan comes from the coverage shown: manifests removed
    after it was read change nothing until r reads the checkpoint again."""
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4, 5, 6, 7), failed=(3, 9))
    expected = format_fields(plan_retry(checkpoint, 24))
    reads: list[object] = []
    completed = Checkpoint.completion_times      # what `completed` and the coverage read both call

    def counted(self, *args, **kwargs):
        reads.append(self.path)
        return completed(self, *args, **kwargs)

    monkeypatch.setattr(Checkpoint, "completion_times", counted)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.checkpoint_screen
            summary = screen.query_one("#retry-summary")
            await wait_for(pilot, lambda: text_of(summary).startswith("missing 3,8-12"), 10)
            before = len(reads)
            for manifest in Checkpoint(checkpoint).completion_dir.glob("completed_slurm_array_*.json"):
                manifest.unlink()
            screen.query_one("#ckpt-tabs").active = "tab-retry"
            screen.query_one("#max-array-size").focus()
            await pilot.press("2", "4")
            windows = screen.query_one("#retry-windows")
            rows = [" ".join(table_column(windows, c)[i] for c in ("array", "offset", "minimum", "total"))
                    for i in range(windows.row_count)]
            assert rows == expected and text_of(summary).startswith("missing 3,8-12")
            assert len(reads) == before, "a keystroke read the checkpoint"
            await pilot.press("escape", "r")
            await wait_for(pilot, lambda: text_of(summary).startswith("missing 1-12"), 10)
            assert len(reads) == before + 1

    asyncio.run(scenario())


class SlowReads:
    """Checkpoint.completion_times (the coverage's read of the manifests) made as slow as a test
    wants: the n-th call reads the manifests, then returns only once gates[n] is set (a call beyond
    the gates returns at once). The gate comes after the reading, so a held read holds the
    checkpoint as it was when it read it."""

    def __init__(self, monkeypatch, holds: int) -> None:
        import threading

        self.gates = [threading.Event() for _ in range(holds)]
        self.calls = 0
        completed = Checkpoint.completion_times

        def slow(store, *args, **kwargs):
            found = completed(store, *args, **kwargs)
            self.calls += 1
            if self.calls <= len(self.gates):
                self.gates[self.calls - 1].wait(5)    # the old console waited here on its own thread
            return found

        monkeypatch.setattr(Checkpoint, "completion_times", slow)

    def release(self) -> None:
        for gate in self.gates:
            gate.set()


def test_a_slow_read_says_so_and_keys_work_meanwhile(tmp_path: Path, monkeypatch) -> None:
    """Reading 10,000 manifests on NFS froze the whole console for 10 s, on opening the screen and on
    every r or return to it, with nothing said. Now a line says the checkpoint is being read and for
    how long, and the keys (here: to the Jobs screen and back, which does not read it twice) work."""
    from test_console_fixtures import screen_lines

    from hyperion_console.messages import CheckpointLoaded
    from hyperion_console.screens.jobs import JobsScreen

    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))
    slow = SlowReads(monkeypatch, holds=1)

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        try:
            async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
                screen = app.checkpoint_screen
                await wait_for(pilot, lambda: "reading the checkpoint…" in screen_lines(app)[1], 3)
                await pilot.press("2")
                assert isinstance(app.screen, JobsScreen)
                await pilot.press("3")
                assert app.screen is screen
                await wait_for(pilot, lambda: "reading the checkpoint… 1 s" in screen_lines(app)[1], 3)
                assert not posted(seen, CheckpointLoaded) and slow.calls == 1
                slow.release()
                await checkpoint_read(pilot)
                assert not any("reading" in line for line in screen_lines(app))
                assert "complete 6" in text_of(screen.query_one("#ckpt-map"))
                assert [m.missing for m in posted(seen, CheckpointLoaded)] == [(6, 8)] and slow.calls == 1
        finally:
            slow.release()

    asyncio.run(scenario())


def test_a_read_superseded_by_r_is_not_shown_over_the_newer_one(tmp_path: Path, monkeypatch) -> None:
    """A slow read overtaken by r (or by opening another checkpoint) ends later with what the
    checkpoint held before: its result is dropped, the screen keeps the newer read."""
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))
    slow = SlowReads(monkeypatch, holds=1)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                screen = app.checkpoint_screen
                await wait_for(pilot, lambda: slow.calls == 1, 3)       # read complete 6, held
                for manifest in Checkpoint(checkpoint).completion_dir.glob("completed_slurm_array_*.json"):
                    manifest.unlink()
                await pilot.press("r")
                await checkpoint_read(pilot)
                assert "complete 0" in text_of(screen.query_one("#ckpt-map"))
                slow.release()                                           # the old read ends now
                await pilot.pause(0.3)
                assert "complete 0" in text_of(screen.query_one("#ckpt-map"))
                assert text_of(screen.query_one("#retry-summary")).startswith("missing 1-8")
        finally:
            slow.release()

    asyncio.run(scenario())


def test_ctrl_r_asks_about_the_checkpoint_as_read_after_the_key(tmp_path: Path, monkeypatch) -> None:
    """ctrl+r reads the checkpoint again before asking (in a worker now: nothing is asked until the
    read is shown), and the question is about that read: a shard completed since the screen last
    read it is not resubmitted."""
    async def scenario() -> None:
        app = _demo_app(tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            assert text_of(screen.query_one("#retry-summary")).startswith("missing 11-12")
            store = Checkpoint(screen.checkpoint)
            store.write_completion(11, store.require_run())       # the failed shard, run again by hand
            slow = SlowReads(monkeypatch, holds=1)
            try:
                await pilot.press("ctrl+r")
                await wait_for(pilot, lambda: screen.query_one("#ckpt-reading").display, 3)
                assert not isinstance(app.screen, ConfirmScreen)
                assert "reading the checkpoint… (the tabs show the previous read)" \
                    in text_of(screen.query_one("#ckpt-reading"))
            finally:
                slow.release()
            await confirmation(pilot, "#confirm-title", "#confirm-detail Static")
            assert text_of(app.screen.query_one("#confirm-title")) == \
                "Resubmit 1 shard(s) to local, run here?"
            assert " --array SHARD=12 " in text_of(app.screen.query_one("#confirm-detail Static"))
            assert text_of(screen.query_one("#retry-summary")).startswith("missing 12 ")
            await pilot.press("n")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)

    asyncio.run(scenario())


def test_q_during_a_slow_read_quits_at_once(tmp_path: Path, monkeypatch) -> None:
    """10 s of manifests on NFS: q was not even seen until the read ended; then, with the read in a
    worker, the console closed but the process waited for the read's thread. The read stops at its
    next manifest once the worker is cancelled."""
    import time

    checkpoint = build_checkpoint(tmp_path, total=1000, complete=tuple(range(1, 1001)), failed=())
    read_manifest = Checkpoint._read_manifest

    def slow(path, run):
        time.sleep(0.01)                                  # 1000 manifests: 10 s, as on NFS
        return read_manifest(path, run)

    monkeypatch.setattr(Checkpoint, "_read_manifest", staticmethod(slow))
    quit_at: list[float] = []

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.checkpoint_screen.query_one("#ckpt-reading").display, 3)
            await pilot.pause(0.3)
            quit_at.append(time.monotonic())
            await pilot.press("q")

    asyncio.run(scenario())          # returns once the read's thread has ended too
    assert time.monotonic() - quit_at[0] < 2.0


def test_a_read_that_fails_unexpectedly_is_told_and_not_said_to_go_on(tmp_path: Path, monkeypatch) -> None:
    """An error escaping the read (a bug, memory) ended its worker; the screen said "reading the
    checkpoint…" for ever after. Now it is told, the line goes, and r reads again."""
    import hyperion_console.screens.checkpoint as screen_module

    checkpoint = build_checkpoint(tmp_path)
    real = screen_module.read_checkpoint
    calls: list[int] = []

    def broken(path, stop=None):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("no room for the manifests")
        return real(path, stop)

    monkeypatch.setattr(screen_module, "read_checkpoint", broken)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.checkpoint_screen
            await wait_for(pilot, lambda: any("no room for the manifests" in m for m in notifications(app)), 5)
            await wait_for(pilot, lambda: not screen.query_one("#ckpt-reading").display, 3)
            await pilot.pause(0.3)
            # told once: the screen's handler called its base's, which Textual runs as well
            assert len([m for m in notifications(app) if "no room for the manifests" in m]) == 1, notifications(app)
            await pilot.press("r")
            await checkpoint_read(pilot)
            assert "complete 6" in text_of(screen.query_one("#ckpt-map"))

    asyncio.run(scenario())


def test_ctrl_r_asks_without_parsing_the_record_the_preview_parsed(tmp_path: Path, monkeypatch) -> None:
    """A 100,000-task record takes load_record half a second: the preview parsed it once per
    change of its file, and ctrl+r parsed it again on the interface thread before asking."""
    import sharding.resubmit as resubmit_module

    parsed: list[str] = []
    load_record_of_the_bridge = resubmit_module.load_record

    def counted(path, *args, **kwargs):
        parsed.append(str(path))
        return load_record_of_the_bridge(path, *args, **kwargs)

    async def scenario() -> None:
        app = _demo_app(tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            assert "resubmit runs (local):" in text_of(app.checkpoint_screen.query_one("#retry-commands"))
            monkeypatch.setattr(resubmit_module, "load_record", counted)
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            assert parsed == []
            await pilot.press("n")

    asyncio.run(scenario())


# --- A split tmux pane (60x20): the failed records' details and the Resubmit button on screen ---------

PANE_SIZES = [(60, 20), (80, 24), (120, 40)]


async def _show_tab(pilot, tab: str) -> None:
    pilot.app.checkpoint_screen.query_one("#ckpt-tabs").active = tab
    await pilot.pause()


@pytest.mark.parametrize("size", PANE_SIZES)
def test_failed_records_details_column_is_on_screen_in_a_split_pane(tmp_path: Path, size: tuple[int, int]) -> None:
    """At 60 columns the six columns pushed the details past the pane's edge: two characters of them
    showed; the array task and restart, which the record's path below the table names, give way
    (at 80 too: beside them the details were `tasks p000003  In…`)."""
    checkpoint = build_checkpoint(tmp_path, total=40, complete=tuple(i for i in range(1, 41) if i not in (6, 33)),
                                  failed=(6, 33))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=size) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-failed")
            screen = app.checkpoint_screen
            table = screen.query_one("#ckpt-failed")
            assert Region(0, 0, *app.size).contains_region(table.region), (table.region, app.size)
            assert table.max_scroll_x == 0, table.virtual_size        # no column past the pane's edge
            lines = screen_lines(app)
            header = next(line for line in lines if line.split()[:2] == ["shard", "job"])
            assert "recorded" in header and "details" in header, lines
            assert ("array task" in header and "restart" in header) == (size[0] > 80), header
            row = next(line for line in lines if line.split()[:2] == ["6", "500"])
            assert "tasks p000003  In" in row, lines             # the start of the details
            # the cell takes what the other columns leave: whole from 80 columns (at 120 half the line
            # stayed empty right of a cell cut at 58 characters; at 80 it was cut at 18)
            assert ("tasks p000003  InjectedFailure: boom" in row) == (size[0] >= 80), row
            assert "InjectedFailure: boom" in "\n".join(lines[lines.index(row) + 1:])   # and the record below
            assert "array_task_6/restart_0" in "".join(line.strip() for line in lines)

    asyncio.run(scenario())


def test_at_80_columns_the_failed_tab_shows_the_exception_of_a_slurm_record(tmp_path: Path) -> None:
    """An 80-column terminal showed six columns and 18 characters of details, `tasks p000003  Va…`,
    the rest of the line empty to its right; the README has the array task and restart give way
    to the details. Now they do, and the record's path below the table names them."""
    from sharding.store import Attempt

    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=())
    error = "ValueError: could not convert string to float: 'n/a'"
    Checkpoint(checkpoint).write_failed(6, Attempt("4865123", "6", "0"), {"task_ids": ["p000003"], "error": error})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-failed")
            lines = screen_lines(app)
            header = next(line for line in lines if line.split()[:2] == ["shard", "job"])
            assert header.split() == ["shard", "job", "recorded", "details"], header
            row = next(line for line in lines if line.split()[:2] == ["6", "4865123"])
            assert "tasks p000003  ValueError: could not conver" in row, row
            assert app.checkpoint_screen.query_one("#ckpt-failed").max_scroll_x == 0
            assert "array_task_6/restart_0" in "".join(line.strip() for line in lines)

    asyncio.run(scenario())


def test_the_array_task_and_restart_give_way_while_they_would_cut_the_details_below_readable() -> None:
    """Every column only while the details beside them keep READABLE_DETAILS characters, or every
    record's whole; the details cell takes what the other columns leave at every width."""
    from hyperion_console.screens.checkpoint import (FAILED_COLUMNS, NARROW_FAILED_COLUMNS, READABLE_DETAILS,
                                                     FailedFit, failed_layout)

    fit = FailedFit({FAILED_COLUMNS: 47, NARROW_FAILED_COLUMNS: 26}, longest=60)
    assert failed_layout(80, fit) == (NARROW_FAILED_COLUMNS, 48)
    assert failed_layout(79, fit) == (NARROW_FAILED_COLUMNS, 47)
    assert failed_layout(47 + 6 + READABLE_DETAILS, fit) == (FAILED_COLUMNS, READABLE_DETAILS)
    assert failed_layout(120, fit) == (FAILED_COLUMNS, 67)
    short = fit._replace(longest=23)               # `tasks p1  ValueError: x`: whole beside every column
    assert failed_layout(80, short) == (FAILED_COLUMNS, 27)
    assert failed_layout(60, short)[0] == NARROW_FAILED_COLUMNS
    # an empty table (no records yet, or none read): its 7-wide heading fits the 8 the cell never goes
    # under, and the six columns of a 50-column pane scrolled sideways
    from hyperion_console.screens.checkpoint import measure_failed
    assert failed_layout(50, measure_failed([]))[0] == NARROW_FAILED_COLUMNS


def test_the_failed_table_follows_the_pane_width_and_keeps_the_highlighted_record(tmp_path: Path) -> None:
    checkpoint = build_checkpoint(tmp_path, total=40, complete=tuple(i for i in range(1, 41) if i not in (6, 33)),
                                  failed=(6, 33))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-failed")
            screen = app.checkpoint_screen
            table = screen.query_one("#ckpt-failed")
            table.focus()
            await pilot.press("down")
            assert table_column(table, "shard")[table.cursor_row] == "33"
            await pilot.resize_terminal(60, 20)
            await pilot.pause()
            assert [key.value for key in table.columns] == ["shard", "job", "recorded", "details"]
            assert table_column(table, "shard")[table.cursor_row] == "33" and table.max_scroll_x == 0
            assert "shard_33" in text_of(screen.query_one("#ckpt-failed-detail"))
            await pilot.resize_terminal(100, 30)
            await pilot.pause()
            assert "array task" in [key.value for key in table.columns]
            assert table_column(table, "shard")[table.cursor_row] == "33"

    asyncio.run(scenario())


@pytest.mark.parametrize("size", PANE_SIZES)
def test_resubmit_button_is_on_screen_with_a_records_command_line(tmp_path: Path, size: tuple[int, int]) -> None:
    """The button came after the plan, whose command line, wrapped, pushed it below the screen at 60x20
    and at 80x24 too: only who knew ctrl+r could resubmit. The plan still scrolls to its end above it."""
    async def scenario() -> None:
        app = _demo_app(tmp_path)
        async with app.run_test(size=size) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            commands = screen.query_one("#retry-commands")
            assert "resubmit runs (local):" in text_of(commands)
            button, above_footer = screen.query_one("#resubmit"), Region(0, 0, size[0], size[1] - 1)

            def button_shown() -> None:
                assert above_footer.contains_region(button.region), (button.region, size)
                assert any("Resubmit missing shards" in line for line in screen_lines(app)), screen_lines(app)

            button_shown()                        # as the tab opens, nothing scrolled
            last = [line.strip() for line in rendered(commands) if line.strip()][-1]
            commands.parent.scroll_end(animate=False)
            await pilot.pause()
            assert any(last in line for line in screen_lines(app)), (last, screen_lines(app))
            button_shown()                        # and with the plan's last line, not over it
            await pilot.click("#resubmit")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("n")

    asyncio.run(scenario())


# --- the Retry tab's max array size: the site file's, and reached by the first Tab ----------------

def _window_rows(windows) -> list[str]:
    return [" ".join(table_column(windows, c)[i] for c in ("array", "offset", "minimum", "total"))
            for i in range(windows.row_count)]


def _site_with_limit(tmp_path: Path, limit: int) -> Path:
    """The test cluster's site file with `max_array_size: limit` (a small limit: few shards, many windows)."""
    site = tmp_path / "site.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text().replace("max_array_size: 1001",
                                                                            f"max_array_size: {limit}"))
    return site


def test_retry_tab_starts_from_the_records_site_limit_and_says_where_it_came_from(tmp_path: Path) -> None:
    """The field said "none" though the record's site file sets max_array_size (the test cluster's
    1001): the retry fields named array indices the cluster refuses while the sbatch commands under
    them were windowed. Now the fields start from the site's limit, the field says whose it is, and
    a size typed below it wins, one above it is capped as Resubmit caps it."""
    site = _site_with_limit(tmp_path, 4)
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4, 5, 6, 7), failed=(3, 9))
    record = build_history(tmp_path, site, n=12, failures={})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            windows, field = screen.query_one("#retry-windows"), screen.query_one("#max-array-size")
            assert f" max array size  4 (site file {site})" in "\n".join(screen_lines(app))
            assert _window_rows(windows) == format_fields(plan_retry(checkpoint, 4)) == \
                ["3 0 1 12", "0-3 8 1 12", "0 12 1 12"]
            commands = text_of(screen.query_one("#retry-commands")).splitlines()
            assert commands[0] == f"retry fields (hyperion-checkpoint retry --format fields --cfg {site}):"
            sbatch_arrays = [word for line in commands for word in line.split() if word.startswith("--array=")]
            assert sbatch_arrays == ["--array=3", "--array=0-3", "--array=0"]   # the fields' windows
            field.focus()
            await pilot.press("3")                                   # below the site's: taken
            assert _window_rows(windows) == format_fields(plan_retry(checkpoint, 3))
            await pilot.press("backspace", "9")                      # above it: capped, and told
            assert _window_rows(windows) == format_fields(plan_retry(checkpoint, 4))
            assert f"max array size 4: the site file {site} caps 9" in text_of(screen.query_one("#retry-summary"))
            await pilot.press("backspace")
            assert field.value == "" and _window_rows(windows) == format_fields(plan_retry(checkpoint, 4))

    asyncio.run(scenario())


def test_a_retry_planned_again_draws_its_windows_whole_in_the_first_frame(tmp_path: Path) -> None:
    """The same plan planned again (a second read of an unchanged checkpoint) showed `1,3-6` for
    `1,3-6,8-9`, cut to the width of the `array` header without a mark, until `r`: the table sized
    its columns only when next idle, and a frame drawn before that was never redrawn (the table's
    size was the same). Every frame, the first one included, draws each window whole."""
    checkpoint = build_checkpoint(tmp_path, total=40, complete=(2, 5, 7, 12, 15, 17, 22, 25, 27, 32, 35, 37))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            windows = screen.query_one("#retry-windows")
            expected = [line.split(" ")[0] for line in format_fields(plan_retry(checkpoint, 10))]
            assert len(expected) == 5 and all(len(e) > len("array") for e in expected[:4]), expected
            screen.query_one("#max-array-size").value = "10"
            await pilot.pause()
            screen._plan_retry()                      # planned again: drawn before the table is idle
            drawn = ["".join(segment.text for segment in windows.render_line(y)) for y in range(1, 1 + len(expected))]
            assert [line.split()[0] for line in drawn] == expected, drawn

    asyncio.run(scenario())


def test_first_tab_from_the_tab_bar_lands_in_the_max_array_size_field(tmp_path: Path) -> None:
    """Right, Right, Tab, 500 typed nothing: the first Tab stopped on the plan's scroll around the
    fields. Without a record nor a site file on the Submit screen no limit is known, and the field
    says so."""
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4, 5, 6, 7), failed=(3, 9))
    no_sites = tmp_path / "no-sites"
    no_sites.mkdir()

    async def scenario() -> None:
        app = make_app(cfg_dir=no_sites, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            await pilot.press("right", "right")
            assert screen.query_one("#ckpt-tabs").active == "tab-retry"
            assert " max array size  none " in "\n".join(screen_lines(app))
            await pilot.press("tab", "5", "0", "0")
            await pilot.pause()
            assert screen.query_one("#max-array-size").value == "500"
            assert " max array size  500 " in "\n".join(screen_lines(app))
            assert _window_rows(screen.query_one("#retry-windows")) == format_fields(plan_retry(checkpoint, 500))

    asyncio.run(scenario())


def test_failed_records_of_shards_a_later_attempt_completed_are_marked(tmp_path: Path) -> None:
    """After a retry most records are old failures of shards complete since; they looked the same
    as the shard still failing (the CLI's `failed` says "(shard complete since)")."""
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6, 8))
    Checkpoint(checkpoint).write_completion(6)      # the retry completed shard 6; 8 failed again

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-failed")
            screen = app.checkpoint_screen
            table = screen.query_one("#ckpt-failed")
            assert table_column(table, "shard") == ["6 ✓", "8"]
            table.focus()
            await pilot.pause()
            assert "shard 6 ✓ complete since" in text_of(screen.query_one("#ckpt-failed-detail"))
            await pilot.press("down")
            await pilot.pause()
            detail = text_of(screen.query_one("#ckpt-failed-detail"))
            assert "complete since" not in detail and "shard_8" in detail

    asyncio.run(scenario())


def test_a_failure_newer_than_its_shards_completion_is_not_marked_complete_since(tmp_path: Path) -> None:
    """Shard 7 completed, then a rerun of it failed (its record is newer than its manifest): it was
    dimmed and marked "✓ complete since" like shard 6's old failure, as if a later attempt had
    completed it. It is marked ✓! and not dimmed, and the box says what `failed` says; its manifest
    stands, so the Retry tab plans nothing for it."""
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 6, 7, 8), failed=(6, 7))
    store = Checkpoint(checkpoint)
    run = store.require_run()
    os.utime(store.completion_dir / manifest_name(run, 7), (FIXED_TIME - 3600, FIXED_TIME - 3600))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-failed")
            screen = app.checkpoint_screen
            table = screen.query_one("#ckpt-failed")
            assert table_column(table, "shard") == ["6 ✓", "7 ✓!"]
            styles = [str(table.get_cell(row.key, "details").style) for row in table.ordered_rows]
            assert styles[0] == "dim" and "dim" not in styles[1]
            table.focus()
            await pilot.press("down")
            await pilot.pause()
            detail = text_of(screen.query_one("#ckpt-failed-detail"))
            assert "complete since" not in detail
            assert "shard 7 ✓! completed before, failed after" in detail
            assert "(failed after its shard completed; retry skips the shard)" in detail
            assert screen.coverage is not None and retry_from_coverage(screen.coverage).complete

    asyncio.run(scenario())


def test_retry_tab_says_which_complete_shards_a_rerun_failed_and_how_to_rerun_one(tmp_path: Path) -> None:
    """Every shard completed, then a rerun of shard 7 failed (its record is newer than its manifest).
    The Failed tab said "retry skips the shard", but the Retry tab and ctrl+r said only "every shard
    is complete: nothing to resubmit". Both now add `hyperion-checkpoint retry`'s note: the shard,
    that retry skips it because its manifest says complete, and the manifest to remove to rerun it;
    the Coverage tab counts it. The plan is unchanged: nothing to resubmit."""
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 6, 7, 8), failed=(7,))
    store = Checkpoint(checkpoint)
    run = store.require_run()
    os.utime(store.completion_dir / manifest_name(run, 7), (FIXED_TIME - 3600, FIXED_TIME - 3600))
    note = ("1 shard (7) has a failure newer than its completion manifest (a rerun failed after it completed): "
            f"retry skips it because the manifest says complete; to rerun it, remove "
            f"{store.completion_dir / manifest_name(run, 7)}, then retry again")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            run_lines = text_of(screen.query_one("#ckpt-run")).split("\n")
            assert any(line.startswith("✓! shards  1 complete, then failed in a rerun (7): retry skips it")
                       for line in run_lines), run_lines
            assert not any("\\x0a" in line for line in run_lines), run_lines
            await _show_tab(pilot, "tab-retry")
            assert text_of(screen.query_one("#retry-summary")).split("\n") == [
                "every shard is complete: nothing to resubmit", note]
            await pilot.press("ctrl+r")
            await checkpoint_read(pilot)
            await wait_for(pilot, lambda: any("nothing to resubmit" in n for n in notifications(app)), 10)
            assert f"every shard is complete: nothing to resubmit. {note}" in notifications(app)
            assert retry_from_coverage(screen.coverage).complete

    asyncio.run(scenario())


def test_retry_tab_without_a_record_starts_from_the_submit_screens_site_file(tmp_path: Path, monkeypatch) -> None:
    """Without a record the field said "none" while the Submit screen had a site file selected whose
    max_array_size the cluster enforces: the retry fields named indices sbatch refuses. Now it starts
    from that site file's limit, says so, and follows the site chosen on the Submit screen."""
    sites = tmp_path / "sites"
    sites.mkdir()
    _site_with_limit(tmp_path, 4).rename(sites / "a_small.yaml")
    large = sites / "b_large.yaml"
    large.write_text((CONF / "submit_test_cluster.yaml").read_text())
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4, 5, 6, 7), failed=(3, 9))
    monkeypatch.chdir(tmp_path)        # paths shown as typed: relative to the working directory

    async def scenario() -> None:
        app = make_app(cfg_dir=sites, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            windows, field = screen.query_one("#retry-windows"), screen.query_one("#max-array-size")
            assert field.placeholder == "4 (Submit screen's site file sites/a_small.yaml)"
            assert " max array size  4 (Submit screen's site file sites/a_small.yaml) " in "\n".join(screen_lines(app))
            assert _window_rows(windows) == format_fields(plan_retry(checkpoint, 4))
            commands = text_of(screen.query_one("#retry-commands")).splitlines()
            assert commands[0] == "retry fields (hyperion-checkpoint retry --format fields --cfg sites/a_small.yaml):"
            await pilot.press("1")
            app.submit_screen.set_field("cfg", str(large))      # another site picked on the Submit screen
            await pilot.press("3")
            await checkpoint_read(pilot)
            await wait_for(pilot, lambda: field.placeholder == "1001 (Submit screen's site file sites/b_large.yaml)", 5)
            assert _window_rows(windows) == format_fields(plan_retry(checkpoint, 1001))

    asyncio.run(scenario())


@pytest.mark.parametrize("width", [120, 80])
def test_a_long_site_path_in_the_max_array_size_field_keeps_its_file_name(tmp_path: Path, monkeypatch,
                                                                           width: int) -> None:
    """A site file under a long absolute path: the field's hint was cut at its end, so it read
    `1001 (Submit screen's site file /tmp/…` and never said which file. The path now gives way
    from its start, so the file name shows."""
    sites = tmp_path.joinpath(*["a_directory_with_a_rather_long_name"] * 3, "sites")
    sites.mkdir(parents=True)
    (sites / "cluster_site.yaml").write_text((CONF / "submit_test_cluster.yaml").read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)        # not under the working directory: shown absolute
    checkpoint = build_checkpoint(tmp_path)

    async def scenario() -> tuple[str, list[str]]:
        app = make_app(cfg_dir=sites, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(width, 40)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            field = app.checkpoint_screen.query_one("#max-array-size")
            await wait_for(pilot, lambda: "1001" in field.placeholder, 5)
            await pilot.pause()
            shown = [screen_lines(app)]
            await pilot.resize_terminal(60, 20)          # narrower: the path gives up more of its start
            await pilot.pause()
            shown.append(screen_lines(app))
            return field.placeholder, shown

    placeholder, shown = asyncio.run(scenario())
    assert placeholder == "1001 (Submit screen's…/cluster_site.yaml)"        # at 60 columns
    wide, narrow = (next(line for line in lines if " max array size " in line) for lines in shown)
    assert wide.rstrip().endswith("/cluster_site.yaml)"), wide
    assert " max array size  1001 (Submit screen's site file …/" in wide, wide
    assert narrow.rstrip().endswith("…/cluster_site.yaml)") and " max array size  1001 (" in narrow, narrow


def test_fit_path_gives_up_the_start_of_the_path_from_a_folder() -> None:
    from hyperion_console.widgets.field import fit_path

    path = "/very/long/folder/conf/site.yaml"
    text = f"1001 (site file {path})"
    assert fit_path(text, path, 0) == text == fit_path(text, path, len(text))   # unknown width, fits
    assert fit_path(text, path, len(text) - 1) == "1001 (site file …/long/folder/conf/site.yaml)"
    assert fit_path(text, path, 30) == "1001 (site file …/site.yaml)"
    assert fit_path(text, path, 20) == "1001…/site.yaml)"        # then the words before it, whole words
    assert fit_path(text, path, 5) == "1001…/site.yaml)"         # the name and the limit stay whole
    assert fit_path("none", "", 2) == "none"


def test_a_narrow_max_array_size_hint_never_cuts_the_limit_itself() -> None:
    """The words before a site path gave way a character at a time, the limit too: in a field 30
    wide, `1001 (Submit screen's site file conf/submit_test_cluster.yaml)` read
    `100…/submit_test_cluster.yaml)`, a limit of 100. They give way a whole word at a time now, and
    the limit stays."""
    from hyperion_console.widgets.field import fit_path

    path = "conf/submit_test_cluster.yaml"
    text = f"1001 (Submit screen's site file {path})"
    assert fit_path(text, path, 30) == "1001…/submit_test_cluster.yaml)"
    assert fit_path(text, path, 42) == "1001 (Submit…/submit_test_cluster.yaml)"
    assert fit_path(text, path, 48) == "1001 (Submit screen's…/submit_test_cluster.yaml)"


def test_retry_field_names_the_submit_screens_limit_with_no_checkpoint_either(tmp_path: Path, monkeypatch) -> None:
    """Started with no checkpoint, the field still says the limit a retry would start from."""
    sites = tmp_path / "sites"
    sites.mkdir()
    (sites / "site.yaml").write_text((CONF / "submit_test_cluster.yaml").read_text())
    monkeypatch.chdir(tmp_path)

    async def scenario() -> str:
        app = make_app(cfg_dir=sites, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("3")
            await pilot.pause()
            return app.checkpoint_screen.query_one("#max-array-size").placeholder

    assert asyncio.run(scenario()) == "1001 (Submit screen's site file sites/site.yaml)"


def test_retry_field_without_a_record_or_a_site_file_says_why_no_limit_is_known(tmp_path: Path, monkeypatch,
                                                                              cli_env: dict[str, str]) -> None:
    """Started from an experiment folder with no site file, the field beside "max array size" read
    `none`, like a limit called none. It says no limit is known and where one is taken from; the
    windows and the command under them are `hyperion-checkpoint retry`'s without --cfg."""
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4, 5, 6, 7), failed=(3, 9))
    monkeypatch.chdir(tmp_path)         # no conf/ here

    async def scenario() -> tuple[str, list[str], list[str]]:
        app = make_app(cfg_dir="conf", checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            return (screen_lines(app)[3], _window_rows(screen.query_one("#retry-windows")),
                    text_of(screen.query_one("#retry-commands")).splitlines())

    line, windows, commands = asyncio.run(scenario())
    assert line.rstrip() == " max array size  none (no submit record, no site file on the Submit screen)"
    assert commands[0] == "retry fields (hyperion-checkpoint retry --format fields):"
    cli = run_cli("hyperion-checkpoint", "retry", str(checkpoint), "--format", "fields", env=cli_env, cwd=tmp_path)
    assert cli.returncode == 0 and windows == cli.stdout.splitlines() == [commands[1].strip()] == ["3,8-12 0 1 12"]


def test_a_submit_site_become_a_fifo_never_freezes_the_checkpoint_screen(tmp_path: Path, monkeypatch) -> None:
    """The Submit screen keeps its chosen site listed once the file is gone; replaced by a FIFO a
    writer holds open and sends nothing to, the Checkpoint screen read it as a pipe for the retry
    limit: the console froze 10 s on entering the screen and at every key in max array size. It is
    refused at once, as the Submit preview refuses it, and the field says none."""
    import subprocess
    import time

    sites = tmp_path / "sites"
    sites.mkdir()
    site = sites / "site.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    writer = None

    async def scenario() -> tuple[float, str]:
        nonlocal writer
        app = make_app(cfg_dir=sites, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            site.unlink()
            os.mkfifo(site)
            writer = subprocess.Popen(["sh", "-c", f"exec sleep 60 > '{site}'"])
            started = time.monotonic()
            await pilot.press("3")
            await pilot.pause()
            app.checkpoint_screen.query_one("#max-array-size").focus()
            await pilot.press("5")
            await pilot.pause()
            return time.monotonic() - started, app.checkpoint_screen.query_one("#max-array-size").placeholder

    try:
        took, placeholder = asyncio.run(scenario())
    finally:
        if writer is not None:
            writer.kill()
            writer.wait()
    assert took < 8, f"the screen and one key took {took:.1f} s"   # a read of the FIFO alone waits 10 s
    assert placeholder == "none"


def test_typing_a_max_array_size_at_a_slow_plan_shows_keys_at_once_and_ends_with_the_final_plan(
        tmp_path: Path, monkeypatch) -> None:
    """At 100,000 shards every digit in max array size waited for the retry to be planned (80 ms a
    key). A slow plan now waits for the keys to pause, the tab saying so meanwhile; then its windows
    are the plan of the value typed last; ctrl+r right after the keys asks about that value."""
    import hyperion_console.screens.checkpoint as checkpoint_module

    monkeypatch.setattr(checkpoint_module, "SLOW_RETRY", 0.0, raising=False)   # as a 100,000-shard plan
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4, 5, 6, 7), failed=(3, 9))

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            screen = app.checkpoint_screen
            summary = screen.query_one("#retry-summary")
            await wait_for(pilot, lambda: text_of(summary).startswith("missing 3,8-12"), 10)
            screen.query_one("#ckpt-tabs").active = "tab-retry"
            screen.query_one("#max-array-size").focus()
            await pilot.press("1", "2")
            assert text_of(summary).startswith("updating…") and screen.plan is None
            await wait_for(pilot, lambda: not screen.updating, 10)
            windows = screen.query_one("#retry-windows")
            rows = [" ".join(table_column(windows, c)[i] for c in ("array", "offset", "minimum", "total"))
                    for i in range(windows.row_count)]
            assert rows == format_fields(plan_retry(checkpoint, 12))
            assert text_of(summary).startswith("missing 3,8-12") and screen.plan.max_array_size == 12
            await pilot.press("backspace", "ctrl+r")            # 1, asked before any pause
            await wait_for(pilot, lambda: any("original submit record" in n for n in notifications(app)), 10)
            assert screen.plan.max_array_size == 1 and not screen.updating      # planned at the key
            assert text_of(summary).startswith("missing 3,8-12")
            assert format_fields(plan_retry(checkpoint, 1)) != rows

    asyncio.run(scenario())


def test_without_checkpoint_a_submission_whose_command_names_none_says_so(tmp_path: Path) -> None:
    """Started with --record alone, the Checkpoint screen looks in the record's command for its checkpoint;
    `python3 extract.py --part JOB` names none, which the screen says instead of a bare 'No checkpoint'."""
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("3")
            run = app.checkpoint_screen.query_one("#ckpt-run")
            await wait_for(pilot, lambda: "names none" in text_of(run), 10)
            assert text_of(run).startswith(f"No checkpoint: the command of {record} names none")

    asyncio.run(scenario())


def test_r_that_finds_no_checkpoint_again_says_it_looked(tmp_path: Path) -> None:
    """`r` on the Checkpoint screen when the open record names no checkpoint redrew the same message:
    nothing told the user it had read again. Each `r` now says it looked (the time) and found none; the
    first showing says nothing more than the message. So with no submission at all."""
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")
    looked = re.compile(r"looked again at \d\d:\d\d:\d\d: still no checkpoint")

    def told(app) -> list[str]:
        return [note for note in notifications(app) if looked.search(note)]

    async def scenario(record: Path | None, words: str) -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path / "empty"])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("3")
            run = app.checkpoint_screen.query_one("#ckpt-run")
            await wait_for(pilot, lambda: words in text_of(run), 10)
            before = text_of(run)
            await pilot.pause(0.3)
            assert told(app) == []
            await pilot.press("r")
            await wait_for(pilot, lambda: len(told(app)) == 1, 10)
            await pilot.press("r")
            await wait_for(pilot, lambda: len(told(app)) == 2, 10)
            assert text_of(run) == before

    (tmp_path / "empty").mkdir()
    asyncio.run(scenario(record, "names none"))
    asyncio.run(scenario(None, "No checkpoint: start with --checkpoint PATH"))


def test_resubmit_of_a_submission_whose_command_names_no_checkpoint_says_why(tmp_path: Path) -> None:
    """A recipe script that keeps its checkpoint inside (`./recipe.sh JOB`): on the Checkpoint screen
    the Retry tab stayed blank and ctrl+r (or the Resubmit button) did nothing at all, not a word. The
    Retry tab now says what the Coverage tab says, and ctrl+r that there is no retry plan."""
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("3")
            screen = app.checkpoint_screen
            run = screen.query_one("#ckpt-run")
            await wait_for(pilot, lambda: "names none" in text_of(run), 10)
            summary = screen.query_one("#retry-summary")
            assert text_of(summary).startswith(f"No checkpoint: the command of {record} names none")
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: "no retry plan (see the Retry tab)" in notifications(app), 10)

    asyncio.run(scenario())


def test_without_checkpoint_a_record_typed_that_cannot_be_read_is_said_so_not_to_name_none(tmp_path: Path) -> None:
    """Started without --checkpoint, a record path typed in the Retry tab (then r) that is no file was
    said to name no checkpoint, 'No checkpoint: the command of PATH names none', as if it had been
    read; nothing else said the path was wrong. The screen says why the record cannot be read."""
    typo = tmp_path / "log" / "q" / "typo.JOB.submit.json"

    async def scenario() -> str:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("3")
            screen = app.checkpoint_screen
            await _show_tab(pilot, "tab-retry")
            screen.query_one("#record-path").value = str(typo)
            screen.query_one("#ckpt-tabs").focus()
            await pilot.press("r")
            run = screen.query_one("#ckpt-run")
            await wait_for(pilot, lambda: str(typo) in text_of(run), 10)
            return text_of(run)

    shown = asyncio.run(scenario())
    assert shown.startswith(f"No checkpoint: --record: cannot read {typo}: No such file or directory"), shown
    assert "names none" not in shown


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_a_checkpoint_folder_that_is_a_fifo_is_named_so_not_a_missing_run_json(tmp_path: Path, kind: str) -> None:
    """The checkpoint itself a FIFO (or a file): the screen said "run.json: not found at ...; use the
    checkpoint path of the original array run", sending the user to look for another checkpoint, when
    the path given is no folder at all. Nothing hangs on the FIFO."""
    ck = tmp_path / "ck"
    if kind == "fifo":
        os.mkfifo(ck)
    else:
        ck.write_text("")
    what = "a FIFO" if kind == "fifo" else "a file"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=ck, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await checkpoint_read(pilot)
            shown = text_of(app.checkpoint_screen.query_one("#ckpt-run"))
            assert f"{ck} is {what}, not a folder" in shown, shown
            assert "not found" not in shown
            assert any(m.startswith("run.json: ") and f"{ck} is {what}" in m for m in notifications(app))
            assert app.is_running

    asyncio.run(scenario())


@pytest.mark.parametrize("width", [50, 54, 60, 79])
def test_the_narrow_failed_table_fits_a_pane_with_a_local_runs_job_ids(tmp_path: Path, width: int) -> None:
    """A local run's records name jobs `local_23846`: the narrow columns (shard, job, recorded) and
    an 18-character details cell pushed the details past the edge of a pane under ~59 columns (at 54:
    `tasks p000016  In` cut with no mark, the table scrolling sideways). The details cell takes what
    the other columns leave: on screen, its cut marked, down to 50 columns; wider panes show more."""
    from sharding.store import Attempt

    path = tmp_path / "checkpoint"
    store = Checkpoint(path)
    run = RunConfig(minimum_shard_index=1, total_shards=12)
    store.ensure_run(run)
    for shard in range(1, 11):
        store.write_completion(shard, run)
    store.write_failed(11, Attempt(job="local_23846", array_task="local", restart="0"),
                       {"task_ids": ["p000016"], "error": "InjectedFailure: record 'doc-0016-0000' failed"})

    lines, scroll_x, details = _failed_tab(path, tmp_path, (width, 20))
    row = next(line for line in lines if line.split()[:2] == ["11", "local_23846"])
    assert scroll_x == 0, row
    assert details[0].startswith("tasks p") and details[0].endswith("…"), details
    assert details[0] in row, (details, row)
    assert len(details[0]) >= width - 41, details           # what the other columns leave goes to it


def _failed_tab(path: Path, search: Path, size: tuple[int, int]) -> tuple[list[str], int, list[str]]:
    """The console opened on the checkpoint `path`, its Failed tab shown: the screen's lines, how far
    the tab's table scrolls sideways, and its details column."""
    async def scenario() -> tuple[list[str], int, list[str]]:
        app = make_app(cfg_dir=CONF, checkpoint=path, search_dirs=[search])
        async with app.run_test(size=size) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-failed")
            table = app.checkpoint_screen.query_one("#ckpt-failed")
            return screen_lines(app), table.max_scroll_x, table_column(table, "details")

    return asyncio.run(scenario())


@pytest.mark.parametrize("width", [80, 100])
def test_a_details_cell_holding_escapes_or_wide_characters_is_cut_to_its_column(tmp_path: Path, width: int) -> None:
    """A record whose error holds ESC sequences was cut to the column first and escaped after (each
    ESC then 4 cells, `\\x1b`), so at 100 columns its row ran 3 cells past the others, off the screen,
    cut by the edge with no `…` (`tasks p\\x1b[1mX,[red]id[/red]  \\x1b[31mRED\\x1b[0m`); a CJK
    error (2 cells a character) did the same. Escaped first and cut in cells, each cell ends in `…`
    on screen, the table not scrolling sideways, the brackets still shown as they are."""
    from rich.cells import cell_len

    from sharding.store import Attempt

    path = tmp_path / "checkpoint"
    store = Checkpoint(path)
    run = RunConfig(minimum_shard_index=1, total_shards=4)
    store.ensure_run(run)
    store.write_completion(1, run)
    hostile = ("\x1b[31mRED\x1b[0m \x1b]0;title\x07 [bold red]markup[/bold red] " * 4).strip()
    store.write_failed(2, Attempt(job="9001", array_task="2", restart="0"),
                       {"task_ids": ["p\x1b[1mX", "[red]id[/red]"], "error": hostile})
    store.write_failed(3, Attempt(job="9002", array_task="3", restart="0"),
                       {"task_ids": ["p000003"], "error": "错误：" + "记录无法读取" * 20})

    lines, scroll_x, details = _failed_tab(path, tmp_path, (width, 24))
    assert scroll_x == 0, details
    rows = {line.split()[0]: line for line in lines if line.split()[:1] in (["2"], ["3"]) and "tasks" in line}
    assert set(rows) == {"2", "3"}, lines
    assert "\x1b" not in "".join(lines) and "\\x1b[31mRED" in rows["2"], rows
    for cell in details:
        assert cell.endswith("…"), details
    for shard, cell in zip(("2", "3"), details):
        assert cell.rstrip(" …") in rows[shard], (cell, rows[shard])
        assert rows[shard].rstrip().endswith("…"), rows[shard]      # the mark is on screen, not cut by the edge
        assert cell_len(rows[shard].rstrip()) <= width - 2, rows[shard]


@pytest.mark.parametrize("size", [(120, 40), (80, 50)])
def test_the_resubmit_button_follows_a_short_plan_without_a_gap(tmp_path: Path, size: tuple[int, int]) -> None:
    """The plan's scroll filled the tab, so at 120x40 a screenful of blank lines stood between the
    plan's command and the Resubmit button at the bottom. The button now comes right under the plan
    (the plan scrolls only once it would push the button off the screen)."""
    async def scenario() -> list[str]:
        app = _demo_app(tmp_path)
        async with app.run_test(size=size) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            await pilot.pause()
            return screen_lines(app)

    lines = asyncio.run(scenario())
    button = next(i for i, line in enumerate(lines) if "Resubmit missing shards" in line)
    last = max(i for i, line in enumerate(lines[:button]) if line.strip())
    assert "--fail-once" in lines[last], lines                  # the plan's last line, whole, above it
    assert button - last <= 3, lines


def test_keys_typed_behind_ctrl_r_never_reach_the_max_array_size_field(tmp_path: Path) -> None:
    """`ctrl+r n` in one burst, the cursor in the max array size field: ctrl+r reads the checkpoint
    before it asks, and the `n` was typed into the field meanwhile; the plan asked about became
    `no retry plan (see the Retry tab)`. The focus leaves the field for the Resubmit button: the
    field keeps its value, the read plan is asked about (or the `n` answers that question)."""
    async def scenario() -> tuple[str, list[str]]:
        app = _demo_app(tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            field = screen.query_one("#max-array-size")
            field.focus()
            await pilot.pause()
            one_read(app, "\x12n")
            await wait_for(pilot, lambda: not screen.reading and not screen._confirm_after_read, 30)
            await pilot.pause(0.5)
            if isinstance(app.screen, ConfirmScreen):
                await pilot.press("n")
            return field.value, notifications(app)

    value, said = asyncio.run(scenario())
    assert value == ""
    assert not any("no retry plan" in n for n in said), said


# --- The Checkpoint screen finds the run's submit record as `hyperion-checkpoint retry CKPT` does ---------

def _demo_without_record(tmp_path: Path):
    """The demo's run (local backend, shards 11-12 missing), opened as `hyperion-console --checkpoint
    CKPT` from its folder: no record given."""
    from hyperion_console.demo import prepare_demo

    paths = prepare_demo(tmp_path / "demo", CONF)
    return paths, make_app(cfg_dir=CONF, checkpoint=paths.checkpoint, search_dirs=[paths.root])


def test_the_checkpoint_screen_finds_the_runs_record_and_resubmit_uses_it(tmp_path: Path) -> None:
    """Opened with --checkpoint alone, the Retry tab said `no submit record: give one above` while
    `hyperion-checkpoint retry CKPT` finds the records naming the checkpoint by itself. The screen
    finds it with the same core (`records_naming`), says which it found, and ctrl+r resubmits with it
    as with a typed record."""
    from hyperion_console.screens.jobs import JobsScreen

    paths, app = _demo_without_record(tmp_path)

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            assert screen.query_one("#record-path").value == str(paths.record)
            commands = text_of(screen.query_one("#retry-commands"))
            assert (f"submit record found: {paths.record}, the one under {paths.root} whose command names "
                    "this checkpoint") in commands, commands
            assert "no submit record" not in commands and "resubmit runs (local):" in commands
            assert "--array SHARD=11:12" in commands
            await pilot.press("ctrl+r")
            await confirmation(pilot, "#confirm-detail Static")
            detail = text_of(app.screen.query_one("#confirm-detail Static"))
            assert detail.splitlines()[0] == f"record:  {paths.record}"
            await pilot.press("y")
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 20)
            await wait_for(pilot, lambda: table_column(app.screen.query_one("#tasks"), "state")
                           == ["COMPLETED"] * 12, 30)
            await pilot.press("3")
            await wait_for(pilot, lambda: "every shard is complete"
                           in str(screen.query_one("#retry-summary").content), 10)

    asyncio.run(scenario())
    assert plan_retry(paths.checkpoint).complete


def test_several_records_naming_the_checkpoint_are_listed_and_none_is_chosen(tmp_path: Path) -> None:
    """Two records name the checkpoint: `retry --submit` resubmits only with the record it is given,
    so the screen chooses none, lists them (their paths escaped: a folder's name may hold a
    terminal escape) and ctrl+r asks for one. A record typed is left as typed, and Resubmit uses it."""
    paths, app = _demo_without_record(tmp_path)
    other = paths.root / "evil\x1b]0;owned\x07" / "q" / "copy.SHARD.submit.json"
    other.parent.mkdir(parents=True)
    other.write_bytes(paths.record.read_bytes())
    os.utime(paths.record, (1, 1))                  # the copy is the newest

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            field = screen.query_one("#record-path")
            assert field.value == ""
            commands = text_of(screen.query_one("#retry-commands"))
            escaped = str(other).replace("\x1b", "\\x1b").replace("\x07", "\\x07")
            assert (f"no submit record: 2 under {paths.root} name this checkpoint, newest first: {escaped}, "
                    f"{paths.record}; give the run's one above (or --record FILE) to resubmit") in commands, commands
            assert "\x1b" not in commands and "\x07" not in commands
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: "resubmit: give the original submit record (--record FILE)"
                           in notifications(app), 10)
            assert not isinstance(app.screen, ConfirmScreen)
            field.value = str(paths.record)              # the user names the run's record
            await pilot.press("r")
            await checkpoint_read(pilot)
            assert field.value == str(paths.record)
            commands = text_of(screen.query_one("#retry-commands"))
            assert "submit record found" not in commands and "no submit record" not in commands
            assert "resubmit runs (local):" in commands
            await pilot.press("ctrl+r")
            await confirmation(pilot, "#confirm-detail Static")
            assert text_of(app.screen.query_one("#confirm-detail Static")).splitlines()[0] \
                == f"record:  {paths.record}"
            await pilot.press("n")

    asyncio.run(scenario())


def test_no_record_naming_the_checkpoint_is_said_with_where_the_screen_looked(tmp_path: Path) -> None:
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4), failed=(3,))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            commands = text_of(app.checkpoint_screen.query_one("#retry-commands"))
            assert (f"no submit record: none under {tmp_path} names this checkpoint (its command's "
                    "--checkpoint DIR, --ckpt DIR); give one above (or --record FILE) to resubmit") in commands

    asyncio.run(scenario())


@pytest.mark.slurm
def test_a_slurm_run_opened_by_its_checkpoint_alone_is_resubmitted_with_the_record_found(
        slurm_cluster, tmp_path: Path) -> None:
    """`hyperion-submit slurm ... --checkpoint ckpt` from a folder, a shard fails once; then
    `hyperion-console --checkpoint ckpt` from the same folder: the Retry tab finds the run's record
    (log/q/), and ctrl+r sends only the failed shard to Slurm, as with the record typed."""
    make_input(tmp_path / "input", 4, 2)
    fail_id = next(json.loads(t.files[0].read_text().splitlines()[0])["id"]
                   for t in list_sources(tmp_path / "input") if shard_for(t.task_id, 2, 1) == 2)
    site, options = parse_submit_argv([
        "slurm", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--array", "SHARD=1:2",
        "--time", "00:02:00", "--output-file", str(tmp_path / "log" / "s.SHARD.log"), "--",
        sys.executable, "-m", "sharding.example", "--input", str(tmp_path / "input"),
        "--output", str(tmp_path / "output"), "--checkpoint", str(tmp_path / "ckpt"),
        "--shard-index", "SHARD", "--total-shards", "2", "--minimum-shard-index", "1",
        "--fail-record", fail_id, "--fail-once"])
    first = submit(build_plan(site, options))
    assert not wait(first).ok                       # shard 2 failed: that is the point

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "ckpt", search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            await _show_tab(pilot, "tab-retry")
            screen = app.checkpoint_screen
            assert screen.query_one("#record-path").value == first.path
            await wait_for(pilot, lambda: "hyperion-submit slurm" in text_of(screen.query_one("#retry-commands"))
                           and "asking Slurm" not in text_of(screen.query_one("#retry-commands")), 20)
            assert f"submit record found: {first.path}" in text_of(screen.query_one("#retry-commands"))
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: app.screen is app.jobs_screen
                           and app.jobs_screen.record is not None
                           and app.jobs_screen.record.jobs[0].job_id != first.jobs[0].job_id, 60)
            table = app.jobs_screen.query_one("#tasks")
            assert table_column(table, "attempt") == ["1", "2"]
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED"] * 2, 180)
            await pilot.press("3", "r")
            await wait_for(pilot, lambda: "every shard is complete"
                           in text_of(screen.query_one("#retry-summary")), 10)

    asyncio.run(scenario())


def test_resubmit_confirmation_counts_shards_and_sbatch_calls_and_says_the_memory_they_ran_out_of(
        tmp_path: Path, cli_env) -> None:
    """The title was `Resubmit shards 20,48,50,...,1... (46 characters)?`: the shards cut to 40
    characters and the length of the list. It now counts shards and sbatch calls as the Submit
    screen does, and the dialog and the Retry tab say, in `hyperion-checkpoint retry --dry-run`'s
    words, that the shard ran OUT_OF_MEMORY and what --mem auto would ask for. The dialog offered
    no way to ask for it (only the record's --mem 100M, which ran out): it offers Resubmit with
    proposed sizes, named as the `hyperion-checkpoint retry ... --mem auto` whose command it shows."""
    import shlex

    from textual.widgets import Button
    from test_checkpoint_retry_sizes import oom_run

    ck, record = oom_run(tmp_path)
    advice = ("sizes: as before; --mem auto would ask for --mem 200M: 1 task(s) OUT_OF_MEMORY; "
              "2x the request 100M (1.5x the largest MaxRSS 90M is less)")
    cli = ("hyperion-checkpoint", "retry", str(ck), "--submit", str(record), "--max-array-size", "1001", "--mem", "auto")
    would = run_cli(*cli, "--dry-run", env=cli_env)
    assert would.returncode == 0, would.stderr
    command = (would.stdout.splitlines()[0].split(f" in {tmp_path}: ", 1)[1]      # `would resubmit ... in DIR: CMD`
               .removesuffix(", in windows of at most 1001 tasks (--max-array-size)"))
    assert "--mem 200M" in command

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, checkpoint=ck, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(200, 50), message_hook=seen.append) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            await _show_tab(pilot, "tab-retry")
            await wait_for(pilot, lambda: advice in text_of(screen.query_one("#retry-commands")), 10)
            await pilot.press("ctrl+r")
            await confirmation(pilot, "#confirm-title", "#confirm-detail Static", "#confirm-no")
            assert text_of(app.screen.query_one("#confirm-title")) == "Resubmit 1 shard(s) to slurm in 1 sbatch call?"
            detail = text_of(app.screen.query_one("#confirm-detail Static")).splitlines()
            assert "shards:  2" in detail and advice in detail, detail
            # the record's command (`extract.py --part JOB`) names no checkpoint: said first, as the CLI says it
            assert detail[0].startswith(f"warning: the command of {record} names no checkpoint"), detail
            assert "--mem 100M" in next(line for line in detail if line.startswith("command: "))
            assert str(app.screen.query_one("#confirm-other", Button).label) == "Resubmit with proposed sizes"
            proposed = detail[detail.index(advice) + 1:]
            assert proposed[:4] == ["", f"Resubmit with proposed sizes (s) runs as: {shlex.join(cli)}",
                                    "sizes: --mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request 100M (1.5x the "
                                    "largest MaxRSS 90M is less)", f"command: {command}"], proposed
            assert "--mem=200M" in proposed[4] and proposed[4].startswith("sbatch:  "), proposed
            await pilot.press("n")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen) and not posted(seen, ResubmitRequested)

    asyncio.run(scenario())


def test_a_resubmit_whose_shards_another_terminal_completed_meanwhile_runs_nothing(tmp_path: Path, cli_env,
                                                                                     monkeypatch) -> None:
    """The console's Resubmit read the checkpoint, then asked whether the record's tasks still ran: a
    `hyperion-checkpoint retry --submit` from a shell that ran the same shards in between left them
    complete, and the console ran them again as one more attempt. Under the lock it is refused."""
    import hyperion_console.screens.checkpoint as checkpoint_screen

    make_input(tmp_path / "in", files=4, records=1)
    first = run_cli("hyperion-submit", "local", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--array",
                    "SHARD=1:4", "--output-file", str(tmp_path / "log" / "s.SHARD.log"), "--", sys.executable,
                    "-m", "sharding.example", "--input", "in", "--output", "out", "--checkpoint", "ck",
                    "--shard-index", "SHARD", "--total-shards", "4", "--minimum-shard-index", "1",
                    "--fail-record", "doc-0001-0000", "--fail-once", cwd=tmp_path, env=cli_env, timeout=60)
    assert first.returncode == 1, first.stderr
    record = tmp_path / "log" / "q" / "s.SHARD.submit.json"
    asked, other = checkpoint_screen.check_not_running, []

    def the_shell_retries_first(record_path, retry=None, runner=None):
        other.append(run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record),
                             cwd=tmp_path, env=cli_env, timeout=60))
        return asked(record_path, retry, runner)

    monkeypatch.setattr(checkpoint_screen, "check_not_running", the_shell_retries_first)

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "ck", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(200, 50), message_hook=seen.append) as pilot:
            await checkpoint_read(pilot)
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: any("completed after this retry read" in m for m in notifications(app)), 30)
            refusal = next(m for m in notifications(app) if "completed after this retry read" in m)
            assert refusal.endswith("nothing resubmitted: press ctrl+r again to plan from what is missing now")
        assert other and other[0].returncode == 0, other[0].stderr if other else "the shell never retried"

    asyncio.run(scenario())
    history = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
    assert [(a["attempt"], a["kind"]) for a in history["attempts"]] == [(1, "submit"), (2, "resubmit")]


@pytest.mark.slurm
def test_resubmit_with_proposed_sizes_reruns_a_shard_out_of_memory_with_mem_auto(enforced_memory, tmp_path: Path,
                                                                                 cli_env) -> None:
    """A shard ended OUT_OF_MEMORY under --mem 100M. The Retry tab and the confirmation said what
    --mem auto would ask for, but Resubmit could only rerun it with the record's --mem 100M, and it
    ran out again. The confirmation offers Resubmit with proposed sizes: it runs what
    `hyperion-checkpoint retry CKPT --submit RECORD --mem auto` runs (its dry run's command), sbatch
    asks for 200M, and the shard, which needs 150 MB, completes. (The cluster kills a task at its
    --mem within seconds; a TIMEOUT took minutes, and Slurm checks the time limit coarsely.)"""
    import shlex
    import subprocess
    import time

    from textual.widgets import Button

    from backends.launch import working_dir

    make_input(tmp_path / "input", 2, 1)
    # shard 2 needs 150 MB before it runs: more than --mem 100M, less than the 200M auto asks for
    # (the cgroup kills it as it reaches 100M, so its MaxRSS stays small and 2x the request wins)
    need = shlex.quote(sys.executable) + " -c " + shlex.quote("x = b'\\1' * (150 << 20)")
    gate = f's=$1; shift; if [ "$s" = 2 ]; then {need} || exit 1; fi; exec "$@" --shard-index "$s"'
    site, options = parse_submit_argv([
        "slurm", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--array", "SHARD=1:2", "--mem", "100M",
        "--output-file", str(tmp_path / "log" / "s.SHARD.log"), "--", "sh", "-c", gate, "gate", "SHARD",
        sys.executable, "-m", "sharding.example", "--input", str(tmp_path / "input"),
        "--output", str(tmp_path / "output"), "--checkpoint", str(tmp_path / "ckpt"),
        "--total-shards", "2", "--minimum-shard-index", "1"])
    with working_dir(str(tmp_path)):         # the run's directory, which the commands name
        first = submit(build_plan(site, options))
    ended = wait(first)
    assert [(task.value, state.state.value) for task, state in ended.bad] == [(2, "OUT_OF_MEMORY")]
    ck, record = tmp_path / "ckpt", Path(first.path)
    # sacct has the task's MaxRSS a little after it ended, and may raise it once more as the last of
    # its steps is accounted; the dry runs below and the console's read name it (`1.5x the largest
    # MaxRSS 1.2M is less`), so all of them wait until two reads 2 s apart agree on it
    deadline, seen = time.monotonic() + 60, None
    while True:
        shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
        rss = shown["tasks"][1]["max_rss_bytes"]
        if (rss is not None and rss == seen) or time.monotonic() > deadline:
            break
        seen = rss
        time.sleep(2)
    assert shown["tasks"][1]["max_rss_bytes"] is not None, shown
    cli = ("hyperion-checkpoint", "retry", str(ck), "--submit", str(record), "--max-array-size", "1001")
    plain = run_cli(*cli, "--dry-run", env=cli_env)     # the advice, in the CLI's words
    assert plain.returncode == 0, plain.stderr
    advice = plain.stdout.splitlines()[1].strip()
    assert advice.startswith("sizes: as before; --mem auto would ask for --mem 200M: 1 task(s) OUT_OF_MEMORY; "
                             "2x the request 100M"), plain.stdout
    cli += ("--mem", "auto")
    would = run_cli(*cli, "--dry-run", env=cli_env)
    assert would.returncode == 0, would.stderr
    command = (would.stdout.splitlines()[0].split(f" in {tmp_path}: ", 1)[1]
               .removesuffix(", in windows of at most 1001 tasks (--max-array-size)"))
    assert "--mem 200M" in command and "100M" not in command, command
    sizes = would.stdout.splitlines()[1].strip()
    assert sizes == advice.replace("sizes: as before; --mem auto would ask for ", "sizes: "), would.stdout
    new_job: list[str] = []

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=ck, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            await _show_tab(pilot, "tab-retry")
            await wait_for(pilot, lambda: advice in text_of(screen.query_one("#retry-commands")), 20)
            await pilot.press("ctrl+r")
            await confirmation(pilot, "#confirm-detail Static", "#confirm-no", timeout=20)
            detail = text_of(app.screen.query_one("#confirm-detail Static")).splitlines()
            assert "--mem 100M " in next(line for line in detail if line.startswith("command: ")), detail
            assert str(app.screen.query_one("#confirm-other", Button).label) == "Resubmit with proposed sizes"
            proposed = detail[detail.index(advice) + 1:]
            assert proposed[:4] == ["", f"Resubmit with proposed sizes (s) runs as: {shlex.join(cli)}",
                                    sizes, f"command: {command}"], proposed
            assert "--mem=200M" in proposed[4] and proposed[4].startswith("sbatch:  "), proposed
            await pilot.press("s")
            await wait_for(pilot, lambda: app.screen is app.jobs_screen and app.jobs_screen.record is not None
                           and app.jobs_screen.record.jobs[0].job_id != first.jobs[0].job_id, 60)
            new_job.append(app.jobs_screen.record.jobs[0].job_id)
            table = app.jobs_screen.query_one("#tasks")
            assert table_column(table, "attempt") == ["1", "2"]
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED"] * 2, 60)

    asyncio.run(scenario())
    # the console may see the end from squeue before slurmdbd has the array task's own row
    deadline = time.monotonic() + 60
    while True:
        asked = subprocess.run(["sacct", "-j", new_job[0], "-X", "-n", "-P", "-o", "JobID,ReqMem,State"],
                               capture_output=True, text=True, check=True).stdout.split()
        if asked == [f"{new_job[0]}_2|200M|COMPLETED"] or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert asked == [f"{new_job[0]}_2|200M|COMPLETED"], asked
    assert plan_retry(ck).complete


def test_started_with_a_record_the_checkpoint_screen_follows_the_submission_opened_on_the_jobs_screen(
        tmp_path: Path) -> None:
    """`hyperion-console --record A` (no --checkpoint): the Checkpoint screen showed A's checkpoint, and
    kept showing it once the Jobs screen opened B, whose command names another checkpoint: the record
    field held A as the console was started with it, which counted as a record the user typed. Coverage,
    failed records and Resubmit were A's while Jobs showed B. The record the console was started with is
    the screen's own filling, followed as the Jobs screen changes; one typed in the field still wins."""
    from hyperion_console.demo import prepare_demo

    first = prepare_demo(tmp_path / "a", CONF)
    second = prepare_demo(tmp_path / "b", CONF)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=first.record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.checkpoint_screen
            await pilot.press("3")
            await wait_for(pilot, lambda: screen.coverage is not None, 20)
            assert str(screen.checkpoint) == str(first.checkpoint)
            await pilot.press("2")
            app.jobs_screen.open_record(second.record)
            await wait_for(pilot, lambda: str(app.jobs_screen.record_path) == str(second.record), 10)
            await pilot.press("3")
            await wait_for(pilot, lambda: screen.coverage is not None
                           and str(screen.coverage.checkpoint) == str(second.checkpoint), 20)
            assert str(screen.checkpoint) == str(second.checkpoint)
            assert screen.query_one("#record-path").value == str(second.record)
            assert str(second.checkpoint) in text_of(screen.query_one("#ckpt-run"))

    asyncio.run(scenario())
