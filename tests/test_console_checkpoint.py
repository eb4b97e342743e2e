"""Checkpoint screen on a checkpoint built with sharding.store: coverage, failures, retry preview."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

from test_console_fixtures import build_checkpoint, notifications, table_column, text_of, wait_for
from hyperion_console.app import make_app
from hyperion_console.screens.confirm import ConfirmScreen
from sharding.retry import format_fields, plan_retry

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def test_coverage_map_run_json_and_failed_records(tmp_path: Path) -> None:
    checkpoint = build_checkpoint(tmp_path, total=8, complete=(1, 2, 3, 4, 5, 7), failed=(6,))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            screen = app.checkpoint_screen
            run = text_of(screen.query_one("#ckpt-run"))
            assert '{"minimum_shard_index":1,"total_shards":8}' in run and "1..8 (8)" in run
            legend = text_of(screen.query_one("#ckpt-map"))
            assert "complete 6" in legend and "incomplete 1" in legend and "failed 1" in legend
            assert " 1 2 3 4 5 6 7 8" in " " + legend.splitlines()[1]
            failed = screen.query_one("#ckpt-failed")
            assert table_column(failed, "shard") == ["6"] and table_column(failed, "job") == ["500"]
            assert "InjectedFailure: boom" in table_column(failed, "details")[0]
            detail = text_of(screen.query_one("#ckpt-failed-detail"))
            assert "slurm_job_500/array_task_6/restart_0/shard_6/failed_tasks.json" in detail
            assert '"error": "InjectedFailure: boom"' in detail

    asyncio.run(scenario())


def test_retry_preview_follows_the_max_array_size_field(tmp_path: Path) -> None:
    checkpoint = build_checkpoint(tmp_path, total=12, complete=(1, 2, 4, 5, 6, 7), failed=(3, 9))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
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
            screen.query_one("#max-array-size").value = "0"
            await pilot.pause()
            assert text_of(screen.query_one("#retry-summary")).startswith("--max-array-size: ")
            await pilot.press("ctrl+r")                    # no plan: told, nothing asked
            assert not isinstance(app.screen, ConfirmScreen)
            assert "no retry plan (see the Retry tab)" in notifications(app)

    asyncio.run(scenario())


def test_missing_run_json_is_shown_not_raised(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=tmp_path / "nowhere", search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            shown = text_of(app.checkpoint_screen.query_one("#ckpt-run"))
            assert shown.startswith("run.json: not found at ")
            assert any(m.startswith("run.json: ") for m in notifications(app))
            await pilot.press("r")
            assert app.is_running

    asyncio.run(scenario())
