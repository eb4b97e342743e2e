"""Array tasks cancelled while pending, told from one look at Slurm.

Slurm drops an array task cancelled while it waited (`scancel 4321_7`) at once,
with no accounting row of its own. A watch running at the time sees it go and
records it CANCELLED; without one (hyperion-submit killed with the login
session) every later `status` read it UNKNOWN for ever. Once the controller
lists no task of the job that has not ended (it keeps ended ones a few minutes,
then none), nothing can start the task; when accounting has
rows of the job's other tasks but none of this one (their own rows, or the range row of tasks that
never started either: `J_[1,3]` CANCELLED once the rest of an array was cancelled while pending too),
and neither its log nor
Slurm's own output file was ever created (Slurm opens them as a task starts),
it never ran: it was cancelled while pending.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from backends.records.history import History
from backends.records.record import TaskRecord
from backends.states import JobState, TaskState
from backends.watch.rows import unended_tasks

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing: a local record's status loads no sacct parser
if TYPE_CHECKING:
    from backends.watch.slurm.accounting import Snapshot


def told_states(answer: Snapshot, histories: Iterable[History],
                tasks: Iterable[TaskRecord] | None = None) -> dict[tuple[str, int | None], TaskState]:
    """What `answer` says of each task, and CANCELLED for each task of `histories` that it and the disk
    show never started (`cancelled_while_pending`): every Slurm task of every attempt without an end in
    its ledger (`unended_tasks`), whose job `answer` knows; `tasks`: those (Slurm tasks without a
    recorded end) instead, of the one history given. `status J`, `status RECORD`, `history`, `list` and
    a new attempt's check of the one before apply the one rule to the same tasks: `history` kept a task a
    later attempt reran before anyone saw it end UNKNOWN for ever (only each value's newest was looked
    at), while `status J` said CANCELLED."""
    states = dict(answer.states)
    for history in histories:
        asked = unended_tasks(history) if tasks is None else tasks
        states.update(cancelled_while_pending(asked, answer, history.log_of))
    return states


def cancelled_while_pending(tasks: Iterable[TaskRecord], answer: Snapshot,
                  log_of: Callable[[TaskRecord], str | None]) -> dict[tuple[str, int | None], TaskState]:
    """CANCELLED states for those of `tasks` (Slurm tasks without a recorded end) that `answer` and
    the disk show never started and never will (see the module's docstring)."""
    if answer.live_jobs is None:
        return {}
    out: dict[tuple[str, int | None], TaskState] = {}
    for task in tasks:
        key = (task.job_id, task.array_task_id)
        if (key in answer.states or task.array_task_id is None or task.job_id in answer.live_jobs
                or task.job_id not in answer.accounted_jobs or wrote_a_file(task, log_of(task))):
            continue
        out[key] = TaskState(task.job_id, task.array_task_id, JobState.CANCELLED, source="sacct")
    return out


def wrote_a_file(task: TaskRecord, log: str | None) -> bool:
    """Whether a file the task would have opened on starting exists: `log` (where its log is now) or
    Slurm's .out/.err. A lookup, never an open: a FIFO or a hung mount named there cannot hold it up
    beyond the stat; a dangling symlink counts as written (something was put there)."""
    return any(path and os.path.lexists(path) for path in (log, task.slurm_out, task.slurm_err))
