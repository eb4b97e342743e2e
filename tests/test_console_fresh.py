"""Every screen shows fresh data after an action, without `r`."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

from test_console_fixtures import build_checkpoint, build_local_record, checkpoint_read, posted, text_of, wait_for

from backends.records.local_results import local_results_path
from backends.records.record import TaskRecord, load_record, save_record
from hyperion_console.app import make_app
from hyperion_console.messages import CheckpointLoaded, RecordsListed
from sharding.store import Checkpoint, RunConfig

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def test_checkpoint_screen_rereads_the_checkpoint_when_shown_again(tmp_path: Path) -> None:
    """Shards completed while the user watched the Jobs screen show at once on coming back."""
    checkpoint = build_checkpoint(tmp_path, total=6, complete=(1, 2, 3), failed=(4,))

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await checkpoint_read(pilot)                # in a worker: one pause may come before it
            screen = app.checkpoint_screen
            assert "complete 3" in text_of(screen.query_one("#ckpt-map"))
            await pilot.press("2")
            store, run = Checkpoint(checkpoint), RunConfig(minimum_shard_index=1, total_shards=6)
            for shard in (4, 5):                     # the resubmitted tasks finish meanwhile
                store.write_completion(shard, run)
            await pilot.press("3")
            await wait_for(pilot, lambda: "complete 5" in text_of(screen.query_one("#ckpt-map")), 5)
            assert str(screen.query_one("#retry-summary").content).startswith("missing 6")
        assert posted(seen, CheckpointLoaded)[-1].missing == (6,)

    asyncio.run(scenario())


def test_record_list_reads_the_records_again_when_the_screen_is_shown(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("FAILED", 1)})

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            records = app.jobs_screen.query_one("#records")
            await wait_for(pilot, lambda: records.option_count == 1, 10)
            assert "2 tasks" in str(records.get_option_at_index(0).prompt)
            old = load_record(record)                  # a retry rewrote the record with more tasks
            extra = TaskRecord(value=3, job_id="local", array_task_id=None, log=old.tasks[0].log,
                               slurm_out=None, slurm_err=None)
            save_record(type(old)(**{**old.__dict__, "tasks": old.tasks + (extra,)}))
            results = json.loads(local_results_path(record).read_text())
            results["tasks"]["3"] = {"state": "COMPLETED", "exit_code": 0, "start": "2026-09-21T12:00:00",
                                     "end": "2026-09-21T12:00:01"}
            local_results_path(record).write_text(json.dumps(results))
            await pilot.press("1", "2")
            await wait_for(pilot, lambda: "3 tasks" in str(records.get_option_at_index(0).prompt), 10)
        assert len(posted(seen, RecordsListed)) >= 2

    asyncio.run(scenario())
