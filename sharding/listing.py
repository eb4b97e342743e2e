"""A deterministic list of source tasks: sorted files, grouped N per partition.

Every array task builds this same list and keeps its own shard's part, so the
list must not depend on directory order, time or the host.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.fileio import directory_problem
from sharding.errors import ShardingError


@dataclass(frozen=True)
class SourceTask:
    """One partition of input files; ``task_id`` is stable while the file list is."""

    task_id: str
    files: tuple[Path, ...]


def task_id_for(index: int) -> str:
    """``p000003``: never begins with ``r``, sorts like the partitions."""
    return f"p{index:06d}"


def list_sources(input_dir: str | Path, pattern: str = "*.jsonl", files_per_partition: int = 1) -> tuple[SourceTask, ...]:
    """Files matching ``pattern`` in ``input_dir`` sorted by name, ``files_per_partition`` per task."""
    if files_per_partition <= 0:
        raise ShardingError("--files-per-partition", f"must be a positive integer, got {files_per_partition}")
    root = Path(input_dir)
    problem = directory_problem(root)   # Path.is_dir() raised for a name too long
    if problem is not None:
        raise ShardingError("--input", problem)
    files = sorted((p for p in root.glob(pattern) if p.is_file()), key=lambda p: p.name)
    return tuple(SourceTask(task_id_for(i), tuple(files[start:start + files_per_partition]))
                 for i, start in enumerate(range(0, len(files), files_per_partition)))
