"""The console's task rows, made by the core's own calls, as hyperion-jobs status and watch make them.

A row is a `backends.watch.rows.TaskRow`: the ledger's final state of a task
when it has one, else what Slurm (or the local runner) says now, with the
attempt that ran it, its pending reason, restart count and usage. The console
asks `task_row` for every row it shows and records final states with the
core's `FinalsRecorder`; nothing here decides what a state is.

Usage (what a task used and was allowed) reaches rows through the core's
usage wiring: `task_row(..., usage)`, `FinalsRecorder.observe(..., usage)`,
`PollUpdate.usage` (recorded) and `PollUpdate.current_usage()` (shown),
`TaskRow.usage`; a row nothing measured yet shows "-".
"""
from __future__ import annotations

from typing import Iterable, Mapping

from backends.records.history import History
from backends.records.record import TaskRecord
from backends.watch.rows import TaskRow, task_row

from .task_index import Key, record_key


def usage_of(row: object):
    """A row's Usage, or None (not known yet, or a bare TaskState)."""
    return getattr(row, "usage", None)


def rows_now(history: History, tasks: Mapping[Key, TaskRecord], states: Mapping[Key, object]) -> list[TaskRow]:
    """A row for every task from what the screen holds now (for retry planning and triage)."""
    return [_row_from(history, task, states.get(key)) for key, task in tasks.items()]


def _row_from(history: History, task: TaskRecord, state: object) -> TaskRow:
    """A row the poller delivered as it is; a bare TaskState (the screen was fed one directly)
    made a row by the core; a task nothing was heard of: the ledger's final state, or UNKNOWN."""
    if isinstance(state, TaskRow):
        return state
    if state is not None and hasattr(state, "key"):
        return task_row(history, task, {state.key: state})
    return task_row(history, task, {})


def attempt_tasks(history: History, number: int) -> list[TaskRecord]:
    """One attempt's tasks, each with its log where it is now (a later rerun moved it aside)."""
    return [task if history.log_of(task) == task.log else
            TaskRecord(task.value, task.job_id, task.array_task_id, history.log_of(task), task.slurm_out,
                       task.slurm_err, task.attempt)
            for task in history.tasks_of(number)]


def attempt_rows(history: History, tasks: Iterable[TaskRecord], latest: Mapping[Key, object],
                 latest_tasks: Mapping[Key, TaskRecord]) -> list[TaskRow]:
    """Rows of one attempt's tasks: the screen's live row where that task is still the newest run
    of its value, else the ledger's final state (or UNKNOWN)."""
    out = []
    for task in tasks:
        key = record_key(task)
        current = latest_tasks.get(key)
        newest = current is not None and current.attempt == task.attempt
        out.append(_row_from(history, task, latest.get(key) if newest else None))
    return out
