"""Jobs screen with a big array: start-up, key-to-redraw, filter, live updates and memory;
Checkpoint screen on a big checkpoint: a keystroke in its max-array-size field.

Each size runs in its own process (so the peak RSS is that size's), opens a
synthetic Slurm record written with the core's save_record through
`hyperion-console --record`'s own path (make_app, load_record), and feeds
synthetic TaskStates through the same JobsUpdated message the poller worker
posts (no Slurm needed: the poller is not started). Times run from the event
to the next frame the screen renders (Textual's compositor update), not to
the end of Pilot's own idle waits. Figures are printed with bench/report.py's
`emit`, next to a small array measured on the same machine in the same run.

Checkpoint screen (--checkpoint-shards S, 0 leaves it out): a synthetic
checkpoint of S shards, every 10th without a manifest (as bench_sharding.py
makes it). Timed from a digit typed in the Retry tab's max-array-size field to
the first frame after the retry windows were re-planned, now (planned from the
coverage on screen) against the code before it (the same screen with its
planning patched back to `plan_retry`, which read the whole checkpoint per
keystroke), as `baseline`; and a key (to the Jobs screen) pressed while r reads
the checkpoint again in its worker thread, to the frame that shows that screen.

    python bench/bench_console.py --tasks 100000 [--tasks 10000 ...] [--baseline 10] [--checkpoint-shards 100000]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import emit  # noqa: E402
from tests.test_console_fixtures import Frames  # noqa: E402  (the idle tests count frames with it too)

JOB = "900001"
TARGETS = {"start_to_filled_table": 1.0, "key_to_redraw_median": 0.050, "key_to_redraw_max": 0.050,
           "filter_change_max": 0.100, "apply_1000_changed_states": 0.050, "peak_rss": 200.0}


def synthetic_record(n: int, root: Path):
    from backends.records.record import JobRecord, SubmitRecord, TaskRecord, save_record

    log_dir = root / "exp" / "log"
    tasks = tuple(TaskRecord(value=i, job_id=JOB, array_task_id=i, log=str(log_dir / f"t.{i}.log"),
                             slurm_out=str(log_dir / "q" / f"t.{i}.out"),
                             slurm_err=str(log_dir / "q" / f"t.{i}.err")) for i in range(1, n + 1))
    record = SubmitRecord(path=str(log_dir / "q" / "t.JOB.submit.json"), backend="slurm",
                          argv=("hyperion-submit",), cfg="conf/submit_test_cluster.yaml", options={},
                          script=None, array_name="JOB", jobs=(JobRecord(JOB, 0, f"1-{n}"),),
                          tasks=tasks, submitted_at="2026-01-01T00:00:00", cwd=str(root))
    save_record(record)
    return record


def states(values: range, state) -> list:
    from backends.states import TaskState
    terminal = state.is_terminal
    return [TaskState(JOB, i, state, 0 if terminal else None, None, 12.0, "node01") for i in values]


async def timed_key(app, frames: Frames, key: str) -> float:
    from textual import events
    await asyncio.sleep(0.06)            # let the previous frame and idle timers settle
    seen = frames.count
    start = time.perf_counter()
    app._driver.send_message(events.Key(key, None))
    return await frames.after(seen) - start


async def measure(n: int, record_path: str) -> dict[str, float]:
    from backends.states import JobState
    from hyperion_console.app import make_app
    from hyperion_console.messages import JobsUpdated
    from hyperion_console.screens.jobs import JobsScreen

    JobsScreen.start_watching = lambda self, record: None    # states come from this script
    half = n // 2
    first = states(range(1, half + 1), JobState.PENDING) + states(range(half + 1, n + 1), JobState.RUNNING)
    batch = min(1000, half)
    later = states(range(1, batch + 1), JobState.COMPLETED)
    figures: dict[str, float] = {}

    started = time.perf_counter()
    app = make_app(cfg_dir=REPO / "conf", record=record_path, search_dirs=[])
    frames = Frames(app)
    async with app.run_test(size=(80, 24)) as pilot:
        jobs = app.jobs_screen
        while jobs.record is None:
            await asyncio.sleep(0)
        seen = frames.count
        jobs.post_message(JobsUpdated(record_path, first, as_of=time.time()))
        while "UNKNOWN" in jobs.table.index.counts:
            await asyncio.sleep(0)
        figures["start_to_filled_table"] = await frames.after(seen) - started
        assert jobs.table.row_count == n

        presses = [await timed_key(app, frames, key)
                   for key in ["down"] * 15 + ["pagedown"] * 5 + ["end", "up", "home", "pageup"]]
        figures["key_to_redraw_median"] = statistics.median(presses)
        figures["key_to_redraw_max"] = max(presses)

        filters = []
        for _ in range(3):               # all -> not completed -> PENDING -> RUNNING
            filters.append(await timed_key(app, frames, "f"))
        figures["filter_change_max"] = max(filters)
        await pilot.press("F")          # back to PENDING: the batch below leaves the filter
        assert jobs.filter == "PENDING" and jobs.table.row_count == half

        await asyncio.sleep(0.06)
        seen = frames.count
        start = time.perf_counter()
        jobs.post_message(JobsUpdated(record_path, later, as_of=time.time()))
        figures["apply_1000_changed_states"] = await frames.after(seen) - start
        assert jobs.table.row_count == half - batch
    figures["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def synthetic_checkpoint(root: Path, shards: int) -> Path:
    """Manifests written directly (no fsync: this is set-up, not the thing measured)."""
    from sharding.store import Checkpoint, RunConfig, compact_json, manifest_identity, manifest_name

    run = RunConfig(0, shards)
    store = Checkpoint(root)
    store.ensure_run(run)
    for shard in range(shards):
        if shard % 10 != 3:
            payload = {**manifest_identity(run, shard), "status": "completed"}
            (store.completion_dir / manifest_name(run, shard)).write_text(compact_json(payload))
    return store.path


async def typed(app, frames: Frames, screen, key: str, character: str | None, expected: int | None) -> float:
    """A key in the focused max-array-size field, to the first frame after the plan of `expected`."""
    from textual import events
    await asyncio.sleep(0.06)
    start = time.perf_counter()
    app._driver.send_message(events.Key(key, character))
    while screen.plan is None or screen.plan.max_array_size != expected:
        await asyncio.sleep(0)
    return await frames.after(frames.count) - start


async def measure_checkpoint(path: Path, old: bool) -> dict[str, float]:
    """Keystroke-to-redraw in max-array-size (and, not `old`, a key during a read)."""
    import hyperion_console.screens.checkpoint as screen_module
    from hyperion_console.app import make_app
    from hyperion_console.screens.jobs import JobsScreen
    from sharding.retry import plan_retry

    # the plan at every key, as typed (the screen now waits for the keys to pause at a slow plan, which
    # bench_typing.py measures): what is measured here is the planning itself
    screen_module.SLOW_RETRY = float("inf")
    if old:           # what refresh_retry did before: read the whole checkpoint again
        screen_module.retry_from_coverage = lambda cov, limit=None: plan_retry(cov.checkpoint, limit)
    figures: dict[str, float] = {}
    app = make_app(cfg_dir=REPO / "conf", checkpoint=path, search_dirs=[])
    frames = Frames(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.checkpoint_screen
        while screen.coverage is None or screen.reading:
            await asyncio.sleep(0.01)
        await pilot.press("right", "right")
        screen.query_one("#max-array-size").focus()
        await pilot.pause()
        keys = [("1", "1", 1), ("0", "0", 10), ("0", "0", 100), ("0", "0", 1000)]
        if not old:
            keys += [("backspace", None, 100), ("backspace", None, 10), ("5", "5", 105), ("backspace", None, 10)]
        presses = [await typed(app, frames, screen, *key) for key in keys]
        figures["ckpt_key_to_redraw_median"] = statistics.median(presses)
        figures["ckpt_key_to_redraw_max"] = max(presses)
        if not old:
            await pilot.press("escape")
            app._driver.send_message(events_key("r"))
            while not screen.reading:
                await asyncio.sleep(0)
            await asyncio.sleep(0.05)            # into the read (1.7 s for 100,000 manifests)
            seen, start = frames.count, time.perf_counter()
            app._driver.send_message(events_key("2"))
            while not isinstance(app.screen, JobsScreen):
                await asyncio.sleep(0)
            figures["ckpt_key_during_read"] = await frames.after(seen) - start
            figures["ckpt_read_still_going"] = float(screen.reading)
            await pilot.pause(0.2)               # the Jobs screen mounted whole before the app ends
    return figures


def events_key(key: str):
    from textual import events
    return events.Key(key, key)


def run_checkpoint(shards: int) -> tuple[dict[str, float], dict[str, float]]:
    """Now and before, each in a fresh interpreter on the same checkpoint."""
    with tempfile.TemporaryDirectory(prefix="bench-console-ckpt-") as root:
        path = synthetic_checkpoint(Path(root) / "ck", shards)
        out = []
        for old in (False, True):
            done = subprocess.run([sys.executable, __file__, "--one-checkpoint", f"{int(old)}:{path}"],
                                  capture_output=True, text=True, check=True, timeout=900)
            out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out[0], out[1]


def run_size(n: int) -> dict[str, float]:
    """One size in a fresh interpreter, so its peak RSS is its own (the record is written here)."""
    with tempfile.TemporaryDirectory(prefix="bench-console-") as root:
        record = synthetic_record(n, Path(root))
        done = subprocess.run([sys.executable, __file__, "--one", f"{n}:{record.path}"], capture_output=True,
                              text=True, check=True, timeout=600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, action="append",
                        help="array size (repeatable; default 100000)")
    parser.add_argument("--baseline", type=int, default=10)
    parser.add_argument("--checkpoint-shards", type=int, default=100_000,
                        help="shards of the Checkpoint screen's synthetic checkpoint (0: leave it out)")
    parser.add_argument("--one", help=argparse.SUPPRESS)     # N:RECORD, measured in this process
    parser.add_argument("--one-checkpoint", help=argparse.SUPPRESS)     # OLD:PATH, measured in this process
    args = parser.parse_args()
    if args.one is not None:
        size, _, path = args.one.partition(":")
        print(json.dumps(asyncio.run(measure(int(size), path))))
        return 0
    if args.one_checkpoint is not None:
        old, _, path = args.one_checkpoint.partition(":")
        print(json.dumps(asyncio.run(measure_checkpoint(Path(path), old == "1"))))
        return 0
    base = run_size(args.baseline)
    print(f"# 80x24; baseline {args.baseline} tasks; targets: " +
          ", ".join(f"{k} <= {v:g}" for k, v in TARGETS.items()))
    over = []
    for n in args.tasks or [100_000]:
        figures = run_size(n)
        for name, value in figures.items():
            unit = "MB" if name == "peak_rss" else "s"
            emit(f"{name}_{n}", value, unit, base[name])
            if n >= 100_000 and value > TARGETS[name]:      # the targets are for 100k tasks
                over.append(f"{name}_{n}")
    if args.checkpoint_shards:
        shards = args.checkpoint_shards
        now, before = run_checkpoint(shards)
        print(f"# Checkpoint screen, {shards} shards (every 10th missing); baseline: the code before, "
              "which read the checkpoint per keystroke")
        for name in ("ckpt_key_to_redraw_median", "ckpt_key_to_redraw_max"):
            emit(f"{name}_{shards}", now[name], "s", before[name])
        emit(f"ckpt_key_during_read_{shards}", now["ckpt_key_during_read"], "s")
        if not now["ckpt_read_still_going"]:
            print("# the read ended before the key: ckpt_key_during_read did not measure a key during a read")
    if over:
        print("# over target (this machine is noisy: run again before believing it): " + ", ".join(over))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
