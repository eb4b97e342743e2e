"""Per-task status rows: a submission record (or a bare job id) joined with Slurm's states.

`hyperion-jobs` and the console both show these rows; the record says which
tasks exist and where their logs are, Slurm says how they are doing. For local
records the results come from q/<stem>.local.json instead of Slurm.
"""
from __future__ import annotations

import json
import os
import pwd
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Mapping, Sequence

from backends.errors import InputError
from backends.local.runner import runner_gone
from backends.record import (
    RECORD_SUFFIX, SubmitRecord, TaskRecord, find_records, load_record, local_results_path,
    results_key,
)
from backends.slurm.accounting import Runner, job_std_paths, run_command, snapshot
from backends.states import JobState, TaskState

Key = tuple[str, "int | None"]
_JOB = re.compile(r"^(\d+)(?:_(\d+))?$")


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

    @property
    def slurm_id(self) -> str:
        return self.job_id if self.task_id is None else f"{self.job_id}_{self.task_id}"

    @property
    def state_label(self) -> str:
        if self.state is None:
            return "NOT_RUN" if self.job_id == "local" else "UNKNOWN"
        return self.state.value

    @property
    def ok(self) -> bool:
        return self.state is JobState.COMPLETED and self.exit_code in (0, None)

    def to_json(self) -> dict:
        return {"value": self.value, "job_id": self.job_id, "task_id": self.task_id,
                "slurm_id": self.slurm_id, "state": self.state_label, "exit_code": self.exit_code,
                "signal": self.signal, "elapsed": self.elapsed, "node": self.node, "log": self.log,
                "slurm_out": self.slurm_out, "slurm_err": self.slurm_err}


@dataclass(frozen=True)
class Target:
    """What the user named: a record, or a Slurm job (optionally one task of it)."""

    record: SubmitRecord | None
    job_id: str | None = None
    task_id: int | None = None


def current_user() -> str:
    return os.environ.get("USER") or pwd.getpwuid(os.getuid()).pw_name


def record_file(text: str) -> Path | None:
    """A record path, or a directory/output-file pointing at exactly one record."""
    path = Path(text)
    if path.is_file() and path.name.endswith(RECORD_SUFFIX):
        return path
    if path.is_dir():
        found = find_records([path], max_depth=1)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InputError("RECORD", f"{text} holds {len(found)} records; name one of them")
    return None


def resolve(text: str, field: str = "JOB|RECORD") -> Target:
    """``1234``, ``1234_5`` or a path to a ``.submit.json`` (or a dir holding one)."""
    match = _JOB.match(text)
    if match:
        task = match.group(2)
        return Target(None, match.group(1), int(task) if task is not None else None)
    path = record_file(text)
    if path is None:
        raise InputError(field, f"{text!r} is neither a job id (1234, 1234_5) nor a submit record")
    return Target(load_record(path))


def record_for_job(job_id: str, dirs: Sequence[Path]) -> SubmitRecord | None:
    """The newest record under `dirs` that submitted `job_id` (for log paths)."""
    for path in find_records(dirs):
        try:
            record = load_record(path)
        except InputError:
            continue
        if any(job.job_id == job_id for job in record.jobs):
            return record
    return None


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
        slurm_err=task.slurm_err)


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
                            state.elapsed, state.node, None, None, None))
    return rows


def local_rows(record: SubmitRecord) -> list[TaskRow]:
    """Rows of a local record from q/<stem>.local.json (tasks not reached are NOT_RUN).

    A RUNNING task whose runner process (on this host) is gone is LOST: it was
    killed before it could record the end, so its end will never come.
    """
    results = _local_results(Path(record.path))
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


def _local_results(record_path: Path) -> dict:
    try:
        raw = json.loads(local_results_path(record_path).read_text())
    except (OSError, ValueError):
        return {}
    tasks = raw.get("tasks") if isinstance(raw, dict) else None
    return tasks if isinstance(tasks, dict) else {}


def _elapsed(start: object, end: object) -> float | None:
    try:
        begin = datetime.fromisoformat(str(start))
        finish = datetime.fromisoformat(str(end)) if end else datetime.now(begin.tzinfo)
    except ValueError:
        return None
    return max(0.0, (finish - begin).total_seconds())


def status(target: Target, dirs: Sequence[Path] = (Path("."),),
           runner: Runner = run_command) -> list[TaskRow]:
    """One sacct + squeue for the target's jobs, as rows (QueryError if Slurm does not answer)."""
    record = target.record
    if record is not None and record.backend == "local":
        return local_rows(record)
    if record is not None:
        exp = expected(record)
        return record_rows(record, snapshot(list(exp), runner))
    assert target.job_id is not None
    states = snapshot([target.job_id], runner)
    if target.task_id is not None:
        states = {k: v for k, v in states.items() if k[1] == target.task_id}
    return job_rows(states, record_for_job(target.job_id, dirs))


def exit_status(rows: Sequence[TaskRow]) -> int:
    """As hyperion-submit: 0 only if every task COMPLETED with exit code 0."""
    return 0 if rows and all(row.ok for row in rows) else 1


def state_counts(rows: Sequence[TaskRow]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state_label] = counts.get(row.state_label, 0) + 1
    return counts


@dataclass(frozen=True)
class TaskLogs:
    """The files a task writes: its program log and Slurm's own .out/.err in q/."""

    name: str                  # what the user asked for, for messages
    log: str | None
    slurm_out: str | None
    slurm_err: str | None


def _pick_task(record: SubmitRecord, text: str, value: int | None) -> TaskRecord:
    if value is None:
        if len(record.tasks) != 1:
            raise InputError("TASK", f"{text} has {len(record.tasks)} tasks; add :VALUE (e.g. {text}:1)")
        return record.tasks[0]
    for task in record.tasks:
        if task.value == value:
            return task
    raise InputError("TASK", f"{record.path} has no task with value {value}")


def task_logs(text: str, dirs: Sequence[Path] = (Path("."),),
              runner: Runner = run_command) -> TaskLogs:
    """Logs of ``JOB_TASK``, ``JOB``, ``RECORD`` or ``RECORD:VALUE`` (VALUE: the logical NAME)."""
    match = _JOB.match(text)
    if match:
        job, task_text = match.group(1), match.group(2)
        task_id = int(task_text) if task_text is not None else None
        record = record_for_job(job, dirs)
        if record is not None:
            for task in record.tasks:
                if task.job_id == job and task.array_task_id == task_id:
                    return TaskLogs(text, task.log, task.slurm_out, task.slurm_err)
            if task_id is None:
                raise InputError("TASK", f"job {job} is an array; name one task, e.g. {job}_"
                                         f"{next((t.array_task_id for t in record.tasks if t.job_id == job), 1)}")
            raise InputError("TASK", f"{record.path} has no task {text}")
        out, err = job_std_paths(text, runner)
        if out is None and err is None:
            raise InputError("TASK", f"no record under {', '.join(map(str, dirs))} and Slurm no longer "
                                     f"knows {text}; name the record instead (RECORD:VALUE)")
        return TaskLogs(text, None, out, err)
    path_text, value = text, None
    head, sep, tail_text = text.rpartition(":")
    if sep and tail_text.isdigit():
        path_text, value = head, int(tail_text)
    path = record_file(path_text)
    if path is None:
        raise InputError("TASK", f"{text!r} is not JOB_TASK, JOB, RECORD or RECORD:VALUE")
    record = load_record(path)
    task = _pick_task(record, text, value)
    return TaskLogs(text, task.log, task.slurm_out, task.slurm_err)
