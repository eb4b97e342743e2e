"""q/<log-stem>.local.json: what a local run records of each task (state, exit code, times, runner).

Written by the local runner as each task starts and ends, read by hyperion-jobs
and the console; the key of a task is its array value (``single`` for a plain job).
"""
from __future__ import annotations

import errno
import json
from pathlib import Path

from backends.fileio import read_bounded
from backends.records.record import (
    MAX_RECORD_BYTES,
    RECORD_SUFFIX,
    log_stem,
    overwrite_json_in_place,
    q_dir,
    write_json_atomic,
)

LOCAL_SUFFIX = ".local.json"


def local_results_path(output_file_or_record: str | Path) -> Path:
    """q/<log-stem>.local.json: per-task results of a local run, beside its record."""
    path = Path(output_file_or_record)
    if path.name.endswith(RECORD_SUFFIX):
        return path.with_name(path.name[: -len(RECORD_SUFFIX)] + LOCAL_SUFFIX)
    return q_dir(path) / f"{log_stem(path)}{LOCAL_SUFFIX}"


def results_key(value: int | None) -> str:
    """A task's key in q/<stem>.local.json: its array value, or "single" for a plain job."""
    return "single" if value is None else str(value)


SLACK = 4096   # blanks kept at the end of the file: room to record a failure on a full disk


class LocalResults:
    """q/<stem>.local.json, rewritten atomically at every task start and end.

    Each rewrite leaves SLACK blanks at the end. When the disk is full (a task
    filled it with its log) a temp file cannot be created, but the last result
    can still be rewritten within the file's own bytes, so the task ends
    FAILED with its reason instead of staying RUNNING (and later LOST).
    """

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.tasks: dict[str, dict] = {}

    def update(self, key: str, **fields: object) -> None:
        self.tasks.setdefault(key, {}).update(fields)
        data = {"tasks": self.tasks}
        try:
            write_json_atomic(self.path, data, pad=SLACK)
        except OSError as err:
            if err.errno not in (errno.ENOSPC, errno.EDQUOT) or not overwrite_json_in_place(self.path, data):
                raise


def read_results(record_path: Path) -> dict:
    """The tasks of the results file beside a record; {} when it is missing or unreadable."""
    try:   # a regular file of bounded size only: a FIFO here must not block a reader
        raw = json.loads(read_bounded(local_results_path(record_path), MAX_RECORD_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    tasks = raw.get("tasks") if isinstance(raw, dict) else None
    return tasks if isinstance(tasks, dict) else {}
