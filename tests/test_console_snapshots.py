"""Snapshots of every screen at 80x24, and of the retry preview in a 60x20 pane
(pytest-textual-snapshot; update with --snapshot-update).

Fixtures live under one fixed directory and times are fixed, so the pictures
only change when the console's look does. Their jobs (4242, 4243) are no job of the
test cluster's, whose ids reach them after a few thousand submissions: a real job 4242's
MaxRSS then entered the retry preview. Slurm's clients answer nothing here.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_console_fixtures import (
    FIXED_ROOT,
    build_checkpoint,
    build_history,
    build_local_record,
    checkpoint_read,
    fresh,
    slurm_like_record,
)

from backends.states import JobState, TaskState
from hyperion_console.app import make_app
from hyperion_console.messages import JobsUpdated

REPO = Path(__file__).resolve().parents[1]
SIZE = (80, 24)


pytestmark = pytest.mark.usefixtures("slurm_knows_none_of_these_jobs")


def fixed_conf() -> Path:
    conf = FIXED_ROOT / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "conf" / "submit_test_cluster.yaml", conf)
    return conf


def submit_app():
    root = fresh(FIXED_ROOT / "submit")
    return make_app(cfg_dir=fixed_conf(), search_dirs=[root]), root


def fill(pilot, root: Path, **extra: str):
    async def run_before(pilot) -> None:
        screen = pilot.app.submit_screen
        fields = {"backend": "slurm", "array": "JOB=1:4", "mem": "200M", "time": "00:05:00",
                  "output_file": str(root / "exp" / "log" / "extract.JOB.log"),
                  "command": "hyperion-extract --part JOB --num-parts 4", **extra}
        for name, value in fields.items():
            screen.set_field(name, value)
        await pilot.pause()
        pilot.app.set_focus(None)
    return run_before


def test_snapshot_submit_valid(snap_compare) -> None:
    app, root = submit_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=fill(None, root))


def test_snapshot_submit_invalid(snap_compare) -> None:
    app, root = submit_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=fill(None, root, time="soon"))


def test_snapshot_submit_selector_focused(snap_compare) -> None:
    """The backend selector with the keyboard's focus: tinted, its arrow a block (it was a grey one
    step lighter than the others, 234 to 235 in 256 colours)."""
    app, root = submit_app()
    before = fill(None, root)

    async def run_before(pilot) -> None:
        await before(pilot)
        pilot.app.submit_screen.query_one("#backend").focus()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_jobs(snap_compare) -> None:
    root = fresh(FIXED_ROOT / "jobs")
    record = build_local_record(root, {1: ("COMPLETED", 0), 2: ("COMPLETED", 0), 3: ("FAILED", 3),
                                       4: ("COMPLETED", 0), 5: ("COMPLETED", 0)})
    app = make_app(cfg_dir=fixed_conf(), record=record, search_dirs=[root])

    async def run_before(pilot) -> None:
        await pilot.pause(0.8)       # local results read, log pane filled

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def map_states(n: int) -> tuple[TaskState, ...]:
    """A fixed mix: failures every 13th task, a running stretch, pending and unknown tails."""
    out = []
    for i in range(1, n + 1):
        if i > 190:
            continue                                       # not reported yet: UNKNOWN
        if i % 13 == 0:
            out.append(TaskState("4242", i, JobState.FAILED, 3))
        elif i in (44, 97):
            out.append(TaskState("4242", i, JobState.OUT_OF_MEMORY, 137))
        elif i == 120:
            out.append(TaskState("4242", i, JobState.CANCELLED))
        elif i <= 110:
            out.append(TaskState("4242", i, JobState.COMPLETED, 0))
        elif i <= 150:
            out.append(TaskState("4242", i, JobState.RUNNING, node="node01"))    # no elapsed: no tick
        else:
            out.append(TaskState("4242", i, JobState.PENDING))
    return tuple(out)


def test_snapshot_state_map(snap_compare) -> None:
    """One lettered, coloured cell per task; the legend names every symbol."""
    root = fresh(FIXED_ROOT / "state-map")
    record = slurm_like_record(root, 200)
    app = make_app(cfg_dir=fixed_conf(), search_dirs=[])

    async def run_before(pilot) -> None:
        await pilot.press("escape", "2")
        jobs = pilot.app.jobs_screen
        jobs.show_record(record)
        jobs.post_message(JobsUpdated(record.path, map_states(200)))   # as_of None: "asking Slurm…"
        await pilot.pause()
        await pilot.press("m", "down", "right", "right")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def history_app(name: str, **kwargs):
    """A Slurm submission whose every task's final state is in its ledger (no Slurm asked)."""
    root = fresh(FIXED_ROOT / name)
    record = build_history(root, fixed_conf() / "submit_test_cluster.yaml", **kwargs)
    return make_app(cfg_dir=fixed_conf(), record=record, search_dirs=[root])


RETRIED = {3: ("COMPLETED", 0), 6: ("FAILED", 1)}


async def settle(pilot, seconds: float = 0.8) -> None:
    await pilot.pause(seconds)


def test_snapshot_jobs_attempt_column(snap_compare) -> None:
    """The newest run of each value, from two attempts: the att column says which."""
    assert snap_compare(history_app("jobs-attempts", retried=RETRIED), terminal_size=SIZE, run_before=settle)


def test_snapshot_failure_groups(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot, 0.3)
        await pilot.press("t")
        await settle(pilot)

    assert snap_compare(history_app("failures"), terminal_size=SIZE, run_before=run_before)


def test_snapshot_attempts(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot, 0.3)
        await pilot.press("a")
        await settle(pilot)

    assert snap_compare(history_app("attempts", retried=RETRIED), terminal_size=SIZE, run_before=run_before)


def test_snapshot_log_zoomed(snap_compare) -> None:
    """`z`: the failed task's log over the whole screen, its title on top, the footer below."""
    async def run_before(pilot) -> None:
        await settle(pilot, 0.3)
        await pilot.press("down", "down", "z")       # value 3: FAILED, its log ends in the error
        await settle(pilot)

    assert snap_compare(history_app("log-zoom"), terminal_size=SIZE, run_before=run_before)


async def open_retry_preview(pilot) -> None:
    await settle(pilot, 0.3)
    await pilot.press("R")
    for _ in range(50):
        await pilot.pause(0.1)
        text = pilot.app.screen.query("#retry-text")
        if text and "runs in" in str(text.first().content):
            break
    pilot.app.screen.query_one("#retry-close").focus()   # out of the field (a blinking cursor is no picture)
    await settle(pilot, 0.3)


def test_snapshot_retry_preview(snap_compare) -> None:
    assert snap_compare(history_app("retry"), terminal_size=SIZE, run_before=open_retry_preview)


def test_snapshot_retry_preview_split_pane(snap_compare) -> None:
    """A 60x20 tmux pane: a field a line, no blank lines between parts, every button on screen."""
    assert snap_compare(history_app("retry-pane"), terminal_size=(60, 20), run_before=open_retry_preview)


def usage_states() -> tuple:
    from types import SimpleNamespace

    from backends.watch.usage import Usage

    mib = 1024 ** 2
    out = []
    for i in range(1, 13):
        state = JobState.OUT_OF_MEMORY if i in (4, 9) else JobState.COMPLETED
        usage = None if i == 12 else Usage((80 + 17 * i) * mib if state is JobState.COMPLETED else 100 * mib,
                                           20.0 + i, 30.0 + 2 * i, 360.0, 100 * mib, 1)
        out.append(SimpleNamespace(job_id="4242", task_id=i, state=state, exit_code=0, signal=None,
                                   elapsed=30.0 + 2 * i, node="node01", reason=None, restart_count=None,
                                   usage=usage))
    return tuple(out)


def test_snapshot_usage_columns(snap_compare) -> None:
    root = fresh(FIXED_ROOT / "usage")
    record = slurm_like_record(root, 12)
    app = make_app(cfg_dir=fixed_conf(), search_dirs=[])

    async def run_before(pilot) -> None:
        await pilot.press("escape", "2")
        jobs = pilot.app.jobs_screen
        jobs.show_record(record)
        jobs.post_message(JobsUpdated(record.path, usage_states()))
        await pilot.pause()
        await pilot.press("u")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def checkpoint_app():
    root = fresh(FIXED_ROOT / "checkpoint")
    checkpoint = build_checkpoint(root, total=40, complete=tuple(i for i in range(1, 41)
                                                                  if i not in (6, 17, 18, 33)),
                                  failed=(6, 33))
    return make_app(cfg_dir=fixed_conf(), checkpoint=checkpoint, search_dirs=[root])


async def read(pilot) -> None:
    """The checkpoint is read in a worker: the picture is of the screen showing the read."""
    await checkpoint_read(pilot)


def test_snapshot_checkpoint_coverage(snap_compare) -> None:
    assert snap_compare(checkpoint_app(), terminal_size=SIZE, run_before=read)


def test_snapshot_checkpoint_failed(snap_compare) -> None:
    assert snap_compare(checkpoint_app(), terminal_size=SIZE, press=["right"], run_before=read)


def test_snapshot_checkpoint_retry(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await checkpoint_read(pilot)
        pilot.app.checkpoint_screen.query_one("#max-array-size").value = "20"
        await pilot.pause()

    assert snap_compare(checkpoint_app(), terminal_size=SIZE, press=["right", "right"],
                        run_before=run_before)


def test_snapshot_help(snap_compare) -> None:
    app, _ = submit_app()
    assert snap_compare(app, terminal_size=SIZE, press=["escape", "question_mark"])


def test_snapshot_checkpoint_failed_split_pane(snap_compare) -> None:
    """A 60x20 tmux pane: shard, job, recorded and details on screen (the record's path below names
    its array task and restart)."""
    assert snap_compare(checkpoint_app(), terminal_size=(60, 20), press=["right"], run_before=read)
