"""Ended tasks Slurm runs again: ``scontrol requeue`` of a task whose final state the ledger holds.

A final state is written once and the task was not asked about again, so a
task the user requeued by hand showed its first end for ever. Asking accounting
about every ended task on every look would cost a sacct for ever; the cheap
signal is the controller's restart count (squeue's RestartCnt, which accounting
lacks): it goes up when the task is queued again (`ran_again`).

The controller can requeue a task only while it knows the task's job: while
the job has unfinished tasks (squeue is asked about that job anyway, and names
its ended tasks in the same answer), or for MinJobAge after its last task ended
(300 s by default). So the ended tasks of a job all of whose tasks ended are
asked about only while its newest recorded end is younger than REQUEUE_WINDOW,
a bound above common sites' MinJobAge; `status` and `list` add their jobs to the
query they make anyway (one squeue alone when they make none), a watch to its
poller's squeue (see Poller's `settled`). The first end stays in the ledger; the new
run's end is appended with its higher restart count and read as the task's end
from then on.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from backends.logheader import iso_seconds
from backends.records.attempts import FinalState
from backends.records.history import History
from backends.records.record import LOCAL_JOB, TaskRecord
from backends.states import LEDGER, JobState, TaskState
from backends.watch.rows import pending_tasks, ran_again

Key = tuple[str, "int | None"]
REQUEUE_WINDOW = 3600.0   # seconds after a job's newest recorded end the controller may still requeue it
CLOCK_SKEW = 300.0        # an end recorded later than this in the future is a wrong clock or a forged
                          # line: it would keep its job in the window, one squeue at every look, for ever


def requeuable(history: History, now: float | None = None) -> list[TaskRecord]:
    """Newest-attempt Slurm tasks with a final state in the ledger whose job the controller may
    still know: one with an unfinished task, or whose newest end was recorded under REQUEUE_WINDOW ago."""
    now = time.time() if now is None else now
    ended: dict[str, list[TaskRecord]] = {}
    newest: dict[str, float] = {}
    live: set[str] = set()
    for task in history.latest_tasks():
        final = history.final(task)
        if task.job_id == LOCAL_JOB:
            continue
        if final is None:
            live.add(task.job_id)
        elif _ended_state(final) is not None:    # a line no Slurm wrote: its row says so, nothing to ask
            ended.setdefault(task.job_id, []).append(task)
            newest[task.job_id] = max(newest.get(task.job_id, 0.0), iso_seconds(final.time) or 0.0)
    return [task for job, tasks in ended.items()
            if job in live or -CLOCK_SKEW < now - newest[job] < REQUEUE_WINDOW for task in tasks]


def reopened(history: History, tasks: Sequence[TaskRecord], states: Mapping[Key, TaskState]) -> list[TaskRecord]:
    """Those of `tasks` the controller's `states` say Slurm ran again after their recorded end."""
    return [task for task in tasks
            if (final := history.final(task)) is not None
            and ran_again(final, states.get((task.job_id, task.array_task_id)))]


def watched_tasks(history: History) -> list[TaskRecord]:
    """What a watch of `history` polls: the newest Slurm tasks without a final state, and the ended
    ones the controller may run again (given to the Poller and FinalsRecorder as `settled`)."""
    pending = [task for task in pending_tasks(history) if task.job_id != LOCAL_JOB]
    return pending + requeuable(history)


def settled(history: History, tasks: Sequence[TaskRecord]) -> dict[Key, TaskState]:
    """The ends the ledger holds for `tasks`, as states (restart count 0 when not said)."""
    out: dict[Key, TaskState] = {}
    for task in tasks:
        final = history.final(task)
        state = _ended_state(final) if final is not None else None
        if final is not None and state is not None:
            out[(task.job_id, task.array_task_id)] = TaskState(
                task.job_id, task.array_task_id, state, final.exit_code, final.signal, final.elapsed,
                final.node, LEDGER, None, final.restart_count or 0)
    return out


def _ended_state(final: FinalState) -> JobState | None:
    try:
        return JobState.parse(final.state)
    except ValueError:
        return None
