"""A console left open overnight: once nothing moves, its once-a-second tick draws nothing.

Measured on the real cluster (bench/bench_console_idle.py): after a 250-task array ended,
`hyperion-console --record R` spent 0.85 s of CPU a minute for ever (a bare Textual app
with a 1 s timer: 0.22 s), redrawing the whole task table and an unchanging "every task
ended" status line every second. The ticks are driven here as fast as the screen draws
them, so a hundred seconds of a console left open take two.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from test_console_fixtures import Frames, rendered, slurm_like_record

from backends.states import JobState, TaskState
from hyperion_console.app import make_app
from hyperion_console.messages import JobsUpdated

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
TICKS = 100


def _state(task: int, state: JobState, elapsed: float) -> TaskState:
    return TaskState("4242", task, state, None if not state.is_terminal else 0, None, elapsed, "node01")


async def _ticks(jobs, pilot, frames: Frames, ticks: int = TICKS) -> int:
    """Frames drawn over `ticks` once-a-second ticks of the Jobs screen (driven at once)."""
    await pilot.pause(0.1)
    before = frames.count
    for _ in range(ticks):
        jobs.tick()
        await pilot.pause(0.02)
    return frames.count - before


def test_an_ended_array_left_open_draws_no_frame_per_tick_but_a_running_task_ticks(tmp_path: Path) -> None:
    record = slurm_like_record(tmp_path, 40)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            frames = Frames(app)
            table = jobs.query_one("#tasks")
            status = jobs.query_one("#poll-status")

            # task 1 runs: its elapsed moves on screen at every tick, the age of the states too
            jobs.post_message(JobsUpdated(record.path, [_state(1, JobState.RUNNING, 30.0)] + [
                _state(t, JobState.COMPLETED, 12.0) for t in range(2, 41)], as_of=time.time() - 5))
            await pilot.pause()
            running = await _ticks(jobs, pilot, frames, 20)
            assert running >= 10, running
            assert "states from Slurm" in status.line().plain

            # it ended: every task final, nothing on screen changes with the clock any more
            jobs.post_message(JobsUpdated(record.path, [_state(1, JobState.COMPLETED, 41.0)],
                                          all_terminal=True, as_of=time.time()))
            await pilot.pause(0.3)
            shown = rendered(table)
            idle = await _ticks(jobs, pilot, frames)
            assert idle == 0, f"{idle} frames drawn over {TICKS} ticks after every task ended"
            assert status.line().plain == "every task ended: final states from Slurm"
            assert rendered(table) == shown and "0:00:41" in shown[1], shown[:2]

            # the user scrolls the ended table: a key is still drawn at once
            before = frames.count
            await pilot.press("end")
            await pilot.pause(0.1)
            assert frames.count > before

    asyncio.run(scenario())


def test_a_running_task_out_of_sight_costs_no_redraw_of_the_rows_in_sight(tmp_path: Path) -> None:
    """Only rows in sight tick: a 300-task array whose last task runs, the table at its top."""
    record = slurm_like_record(tmp_path, 300)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, [_state(t, JobState.COMPLETED, 12.0) for t in range(1, 300)]
                                          + [_state(300, JobState.RUNNING, 30.0)], as_of=time.time()))
            await pilot.pause(0.3)
            table = jobs.query_one("#tasks")
            draws = []
            original = table.render_line
            table.render_line = lambda y: draws.append(y) or original(y)
            await _ticks(jobs, pilot, Frames(app), 30)
            assert draws == [], f"{len(draws)} table lines drawn for a task out of sight"
            await pilot.press("end")                     # in sight now: it ticks
            await pilot.pause(0.1)
            draws.clear()
            await _ticks(jobs, pilot, Frames(app), 5)
            assert draws, "the running task in sight did not tick"

    asyncio.run(scenario())
