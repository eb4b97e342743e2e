"""q/<log-stem>.local.json: what a local run records of each task (state, exit code, times, runner).

Written by the local runner as each task starts and ends, read by hyperion-jobs
and the console; the key of a task is its array value (``single`` for a plain job).
"""
from __future__ import annotations

import json
from pathlib import Path

from backends.records.record import RECORD_SUFFIX, log_stem, q_dir, write_json_atomic

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


class LocalResults:
    """q/<stem>.local.json, rewritten atomically at every task start and end."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.tasks: dict[str, dict] = {}

    def update(self, key: str, **fields: object) -> None:
        self.tasks.setdefault(key, {}).update(fields)
        write_json_atomic(self.path, {"tasks": self.tasks})


def read_results(record_path: Path) -> dict:
    """The tasks of the results file beside a record; {} when it is missing or unreadable."""
    try:
        raw = json.loads(local_results_path(record_path).read_text())
    except (OSError, ValueError):
        return {}
    tasks = raw.get("tasks") if isinstance(raw, dict) else None
    return tasks if isinstance(tasks, dict) else {}
