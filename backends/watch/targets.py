"""What the user names on the command line: a job id, a task, a record (or its q/ directory).

`resolve` turns the text into a Target, `status` asks Slurm (or the local
results) about it, and `task_logs` finds the log files of one task.
"""
from __future__ import annotations

import os
import pwd
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from backends.errors import InputError
from backends.records.record import RECORD_SUFFIX, SubmitRecord, TaskRecord, find_records, load_record
from backends.watch.rows import TaskRow, expected, job_rows, local_rows, record_rows
from backends.watch.slurm.accounting import Runner, job_std_paths, run_command, snapshot

_JOB = re.compile(r"^([0-9]{1,18})(?:_([0-9]{1,18}))?$")   # bounded: int() refuses 4300+ digits


@dataclass(frozen=True)
class Target:
    """What the user named: a record, or a Slurm job (optionally one task of it)."""

    record: SubmitRecord | None
    job_id: str | None = None
    task_id: int | None = None

def current_user() -> str:
    return os.environ.get("USER") or pwd.getpwuid(os.getuid()).pw_name

def record_file(text: str) -> Path | None:
    """A record path, or a directory/output-file pointing at exactly one record.

    Anything named like a record that is not a directory is returned, so that
    `load_record` says what is wrong with it (a FIFO, too large, not JSON).
    """
    path = Path(text)
    try:
        info = os.stat(path)
    except (OSError, ValueError):   # missing, a name too long, a symlink loop, a NUL byte
        return None
    if path.name.endswith(RECORD_SUFFIX) and not stat.S_ISDIR(info.st_mode):
        return path
    if stat.S_ISDIR(info.st_mode):
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
    if sep and tail_text.isascii() and tail_text.isdigit() and len(tail_text) <= 18:
        path_text, value = head, int(tail_text)
    path = record_file(path_text)
    if path is None:
        raise InputError("TASK", f"{text!r} is not JOB_TASK, JOB, RECORD or RECORD:VALUE")
    record = load_record(path)
    task = _pick_task(record, text, value)
    return TaskLogs(text, task.log, task.slurm_out, task.slurm_err)
