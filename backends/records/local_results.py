"""q/<log-stem>.local.json: what local runs before the ledger recorded of each task.

Local runs now append their task starts and ends to the ledger
(backends.records.attempts); this reader keeps older runs' results readable.
The key of a task is its array value (``single`` for a plain job).
"""
from __future__ import annotations

import json
from pathlib import Path

from backends.fileio import read_bounded
from backends.records.paths import RECORD_SUFFIX, log_stem, q_dir
from backends.records.record import MAX_RECORD_BYTES

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


def read_results(record_path: Path) -> dict:
    """The tasks of the results file beside a record; {} when it is missing or unreadable."""
    try:   # a regular file of bounded size only: a FIFO here must not block a reader
        raw = json.loads(read_bounded(local_results_path(record_path), MAX_RECORD_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    tasks = raw.get("tasks") if isinstance(raw, dict) else None
    return tasks if isinstance(tasks, dict) else {}
