"""Jobs screen with a 10k-task array: start-up and key-to-redraw times under run_test.

Feeds synthetic TaskStates (no Slurm needed) through the same JobsUpdated
message the poller worker posts, and prints each figure next to a baseline
measured in the same run (a 10-task array), so the ratio says what 10k costs.

    python bench/bench_console.py [--tasks 10000] [--presses 40]
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from backends.records.record import JobRecord, SubmitRecord, TaskRecord  # noqa: E402
from backends.states import JobState, TaskState  # noqa: E402
from hyperion_console.app import make_app  # noqa: E402
from hyperion_console.messages import JobsUpdated  # noqa: E402

JOB = "900001"


def synthetic_record(n: int) -> SubmitRecord:
    tasks = tuple(TaskRecord(value=i, job_id=JOB, array_task_id=i, log=f"/nonexistent/t.{i}.log",
                             slurm_out=None, slurm_err=None) for i in range(1, n + 1))
    return SubmitRecord(path=f"/nonexistent/q/t.JOB-{n}.submit.json", backend="slurm",
                        argv=("hyperion-submit",), cfg="conf/submit_test_cluster.yaml", options={},
                        script=None, array_name="JOB", jobs=(JobRecord(JOB, 0, f"1-{n}"),),
                        tasks=tasks, submitted_at="2026-01-01T00:00:00", cwd="/")


def states(n: int, state: JobState, start: int = 1) -> list[TaskState]:
    return [TaskState(JOB, i, state, 0 if state.is_terminal else None, None, 12.0, "vm")
            for i in range(start, start + n)]


async def measure(n: int, presses: int) -> dict[str, float]:
    record = synthetic_record(n)
    started = time.perf_counter()
    app = make_app(cfg_dir=REPO / "conf", search_dirs=[])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("escape", "2")
        jobs = app.jobs_screen
        jobs.show_record(record)
        jobs.post_message(JobsUpdated(record.path, states(n, JobState.PENDING)))
        await pilot.pause()
        ready = time.perf_counter() - started
        jobs.query_one("#tasks").focus()
        timings = []
        for _ in range(presses):
            t0 = time.perf_counter()
            await pilot.press("down")
            await pilot.pause()
            timings.append(time.perf_counter() - t0)
        batch = min(1000, n)
        t0 = time.perf_counter()
        jobs.post_message(JobsUpdated(record.path, states(batch, JobState.RUNNING)))
        await pilot.pause()
        update = time.perf_counter() - t0
        t0 = time.perf_counter()
        await pilot.press("f")          # filter PENDING: the table is rebuilt
        await pilot.pause()
        refilter = time.perf_counter() - t0
        assert jobs.query_one("#tasks").row_count == n - batch
        moved, left = min(50, batch), min(50, n - batch)   # under the filter: tasks enter and leave it
        t0 = time.perf_counter()
        jobs.post_message(JobsUpdated(record.path, states(moved, JobState.PENDING)
                                      + states(left, JobState.RUNNING, start=batch + 1)))
        await pilot.pause()
        live = time.perf_counter() - t0
        assert jobs.query_one("#tasks").row_count == n - batch + moved - left
    return {"start-up to a filled table": ready,
            "key to redraw (down), median": statistics.median(timings),
            "key to redraw (down), max": max(timings),
            "apply a batch of changed states": update,
            "filter key (rebuild)": refilter,
            "states entering/leaving the filter": live}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--baseline", type=int, default=10)
    parser.add_argument("--presses", type=int, default=40)
    args = parser.parse_args()
    base = asyncio.run(measure(args.baseline, args.presses))
    big = asyncio.run(measure(args.tasks, args.presses))
    print("(a batch is min(1000, tasks) changed states)")
    print(f"{'figure':<36}{args.baseline:>9} tasks{args.tasks:>9} tasks{'ratio':>8}")
    for name in big:
        ratio = big[name] / base[name] if base[name] else float("inf")
        print(f"{name:<36}{base[name] * 1000:>12.1f} ms{big[name] * 1000:>12.1f} ms{ratio:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
