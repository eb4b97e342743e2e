"""Per-task status rows: a submission record (or a bare job id) joined with Slurm's states.

`hyperion-jobs` and the console both show these rows; the record says which
tasks exist and where their logs are, Slurm says how they are doing. For local
records the results come from q/<stem>.local.json instead of Slurm.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Mapping, Sequence

from backends.printable import printable
from backends.records.local_results import read_results, results_key
from backends.records.record import SubmitRecord, TaskRecord
from backends.records.runner import runner_gone
from backends.states import JobState, TaskState

Key = tuple[str, "int | None"]


@dataclass(frozen=True)
class TaskRow:
    """One line of `hyperion-jobs status`: what was launched and how it is doing."""

    value: int | None            # logical array value (None: non-array or unknown)
    job_id: str
    task_id: int | None          # physical array index
    state: JobState | None       # None: not in Slurm's answers (yet) / not run locally
    exit_code: int | None
    signal: int | None
    elapsed: float | None
    node: str | None
    log: str | None
    slurm_out: str | None
    slurm_err: str | None
    reason: str | None = None          # Slurm's pending reason while it waits to run
    restart_count: int | None = None   # times Slurm requeued it (None: not known)

    @property
    def slurm_id(self) -> str:
        return self.job_id if self.task_id is None else f"{self.job_id}_{self.task_id}"

    @property
    def state_label(self) -> str:
        if self.state is None:
            return "NOT_RUN" if self.job_id == "local" else "UNKNOWN"
        return self.state.value

    @property
    def state_text(self) -> str:
        """The state with why it waits and how often it was requeued: ``PENDING (Priority)``,
        ``RUNNING (restart 1)``."""
        notes = [printable(self.reason)] if self.reason else []
        if self.restart_count:
            notes.append(f"restart {self.restart_count}")
        return self.state_label + (f" ({'; '.join(notes)})" if notes else "")

    @property
    def ok(self) -> bool:
        return self.state is JobState.COMPLETED and self.exit_code in (0, None)

    def to_json(self) -> dict:
        return {"value": self.value, "job_id": self.job_id, "task_id": self.task_id,
                "slurm_id": self.slurm_id, "state": self.state_label, "exit_code": self.exit_code,
                "signal": self.signal, "elapsed": self.elapsed, "node": self.node, "log": self.log,
                "slurm_out": self.slurm_out, "slurm_err": self.slurm_err, "reason": self.reason,
                "restart_count": self.restart_count}


def expected(record: SubmitRecord) -> dict[str, tuple[int, ...] | None]:
    """Poller input for a record: each job id with its physical task ids."""
    out: dict[str, list[int] | None] = {job.job_id: [] for job in record.jobs}
    for task in record.tasks:
        bucket = out.setdefault(task.job_id, [])
        if task.array_task_id is None:
            out[task.job_id] = None
        elif bucket is not None:
            bucket.append(task.array_task_id)
    return {job: (tuple(sorted(ids)) if ids is not None else None) for job, ids in out.items()}


def record_rows(record: SubmitRecord, states: Mapping[Key, TaskState]) -> list[TaskRow]:
    """One row per record task, in record order; tasks Slurm has not reported stay UNKNOWN."""
    return [_row(task, states.get((task.job_id, task.array_task_id))) for task in record.tasks]


def _row(task: TaskRecord, state: TaskState | None) -> TaskRow:
    return TaskRow(
        value=task.value, job_id=task.job_id, task_id=task.array_task_id,
        state=state.state if state else None, exit_code=state.exit_code if state else None,
        signal=state.signal if state else None, elapsed=state.elapsed if state else None,
        node=state.node if state else None, log=task.log, slurm_out=task.slurm_out,
        slurm_err=task.slurm_err, reason=state.reason if state else None,
        restart_count=state.restart_count if state else None)


def job_rows(states: Mapping[Key, TaskState], record: SubmitRecord | None = None) -> list[TaskRow]:
    """Rows for a bare job id: every task Slurm knows, joined with a record when we have one."""
    by_key = {(t.job_id, t.array_task_id): t for t in record.tasks} if record else {}
    offsets = {j.job_id: j.offset for j in record.jobs} if record else {}
    rows = []
    for key in sorted(states, key=lambda k: (k[0], -1 if k[1] is None else k[1])):
        state = states[key]
        task = by_key.get(key)
        if task is not None:
            rows.append(_row(task, state))
            continue
        value = key[1] + offsets[key[0]] if key[0] in offsets and key[1] is not None else None
        rows.append(TaskRow(value, key[0], key[1], state.state, state.exit_code, state.signal,
                            state.elapsed, state.node, None, None, None, state.reason,
                            state.restart_count))
    return rows


def local_rows(record: SubmitRecord) -> list[TaskRow]:
    """Rows of a local record from q/<stem>.local.json (tasks not reached are NOT_RUN).

    A RUNNING task whose runner process (on this host) is gone is LOST: it was
    killed before it could record the end, so its end will never come.
    """
    results = read_results(Path(record.path))
    rows = []
    for task in record.tasks:
        raw = results.get(results_key(task.value))
        state = exit_code = elapsed = None
        if isinstance(raw, dict):
            try:
                state = JobState.parse(str(raw.get("state")))
            except ValueError:
                state = None
            if state is not None and not state.is_terminal and runner_gone(raw):
                state = JobState.LOST
            exit_code = raw.get("exit_code") if isinstance(raw.get("exit_code"), int) else None
            elapsed = None if state is JobState.LOST else _elapsed(raw.get("start"), raw.get("end"))
        rows.append(TaskRow(task.value, task.job_id, task.array_task_id, state, exit_code, None,
                            elapsed, "localhost" if state else None, task.log, None, None))
    return rows


def _elapsed(start: object, end: object) -> float | None:
    try:
        begin = datetime.fromisoformat(str(start))
        finish = datetime.fromisoformat(str(end)) if end else datetime.now(begin.tzinfo)
    except ValueError:
        return None
    return max(0.0, (finish - begin).total_seconds())


def exit_status(rows: Sequence[TaskRow]) -> int:
    """As hyperion-submit: 0 only if every task COMPLETED with exit code 0."""
    return 0 if rows and all(row.ok for row in rows) else 1


def state_counts(rows: Sequence[TaskRow]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state_label] = counts.get(row.state_label, 0) + 1
    return counts


