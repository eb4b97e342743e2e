"""Waiting for a submission to end, and judging how it went.

`wait` polls with the shared Poller until every task of a record is terminal;
`outcome_from` says which tasks did not complete with code 0 and wrote their
log; `report` is one line per such task, naming its logs.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Callable

from backends.records.record import SubmitRecord, TaskRecord
from backends.states import JobState, TaskState
from backends.watch.finals import FinalsRecorder
from backends.watch.poller import Poller, PollUpdate
from backends.watch.rows import expected

# A synchronous submit watches one record: a short cap keeps the exit prompt.
POLL_CAP = 10.0


@dataclass(frozen=True)
class Outcome:
    """How a submission ended: `bad` lists every task that did not complete with code 0."""

    ok: bool
    bad: tuple[tuple[TaskRecord, TaskState], ...]
    exit_status: int


def _state_of(task: TaskRecord, states: dict) -> TaskState:
    known = states.get((task.job_id, task.array_task_id))
    if known is None and task.array_task_id is None:
        known = next((s for (job, _), s in states.items() if job == task.job_id), None)
    return known or TaskState(task.job_id, task.array_task_id, JobState.PENDING, source="unknown")


def outcome_from(record: SubmitRecord, states: dict) -> Outcome:
    """Bad tasks: not COMPLETED, a non-zero exit code, or a missing program log."""
    bad = []
    for task in record.tasks:
        state = _state_of(task, states)
        good = state.state.is_success and not state.exit_code and os.path.exists(task.log)
        if not good:
            bad.append((task, state))
    return Outcome(not bad, tuple(bad), 1 if bad else 0)


def wait(record: SubmitRecord, observer: Callable[[PollUpdate], None] | None = None,
         stop: threading.Event | None = None) -> Outcome:
    """Poll until every task of `record` is terminal (or `stop` is set), then judge it.

    Each task's final state goes into the submission's ledger as soon as it is seen.
    """
    poller = Poller(expected(record), cap=POLL_CAP)
    finals = FinalsRecorder(record.path, record.tasks)
    show = observer or (lambda update: None)

    def observe(update: PollUpdate) -> None:
        finals.observe(update.changed)
        show(update)

    last = poller.run(observe, stop)
    return outcome_from(record, dict(last.states))


def task_label(task: TaskRecord, array_name: str | None) -> str:
    """``JOB=3 (job 1234_3)`` or ``job 1234``."""
    if task.array_task_id is None:
        return f"job {task.job_id}"
    return f"{array_name or 'task'}={task.value} (job {task.job_id}_{task.array_task_id})"


def report(outcome: Outcome, array_name: str | None = None) -> list[str]:
    """One line per bad task: what it was, how it ended and where its logs are."""
    lines = []
    for task, state in outcome.bad:
        how = state.state.value if state.source != "unknown" else "never reported by Slurm"
        if state.exit_code or state.state is JobState.FAILED:
            how += f" exit code {state.exit_code}"
        if state.signal:
            how += f" signal {state.signal}"
        if state.state.is_success and not os.path.exists(task.log):
            how += " but the log is missing"
        log = task.log if os.path.exists(task.log) else f"{task.log} (missing)"
        lines.append(f"{task_label(task, array_name)}: {how}; log {log}; "
                     f"slurm {task.slurm_out} {task.slurm_err}")
    return lines
