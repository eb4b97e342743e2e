"""Which logical shards still need a run, and how to submit them under an array limit.

Incomplete = the run's assignable range minus the shards with a valid
completion manifest. With a maximum array size M the shards are split into
windows (``backends.ranges.split_windows``) whose physical indices stay below M,
each with the ``SHARD_INDEX_OFFSET`` to add back.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from backends.ranges import Window, compress, split_windows
from sharding.errors import ShardingError
from sharding.store import Checkpoint, Problem, RunConfig

RetryWindow = Window  # offset + logical values; .expression is the physical --array text


@dataclass(frozen=True)
class RetryPlan:
    """What a retry must submit; ``missing`` empty means the run is complete."""

    checkpoint: str
    run: RunConfig
    missing: tuple[int, ...]
    windows: tuple[RetryWindow, ...]
    problems: tuple[Problem, ...] = ()
    max_array_size: int | None = None

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def expression(self) -> str:
        """The logical missing shards as one range list (``1-2,5-10,99``)."""
        return compress(self.missing)


def parse_max_array_size(text: str) -> int:
    """``--max-array-size`` as a user typed it (command line or console field)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise ShardingError("--max-array-size", f"must be a positive integer, got {text!r}")
    return value


def check_max_array_size(max_array_size: int | None) -> None:
    if max_array_size is not None and (isinstance(max_array_size, bool) or max_array_size <= 0):
        raise ShardingError("--max-array-size", f"must be a positive integer, got {max_array_size}")


def build_retry(checkpoint: str, run: RunConfig, completed: Iterable[int], problems: Iterable[Problem] = (),
                max_array_size: int | None = None) -> RetryPlan:
    """Pure planning from what the store read."""
    check_max_array_size(max_array_size)
    missing = tuple(sorted(set(run.shards) - set(completed)))
    return RetryPlan(checkpoint, run, missing, split_windows(missing, max_array_size), tuple(problems), max_array_size)


def plan_retry(path: str | Path, max_array_size: int | None = None) -> RetryPlan:
    """Read the checkpoint and plan; a missing or corrupt run.json raises ShardingError."""
    check_max_array_size(max_array_size)
    store = Checkpoint(path)
    run = store.require_run()
    done, problems = store.completed(run)
    return build_retry(str(store.path), run, done, problems, max_array_size)


def format_fields(plan: RetryPlan) -> list[str]:
    """``ARRAY_EXPRESSION SHARD_INDEX_OFFSET MINIMUM_SHARD_INDEX TOTAL_SHARDS``, one line per window."""
    return [f"{w.expression} {w.offset} {plan.run.minimum_shard_index} {plan.run.total_shards}" for w in plan.windows]


def format_ranges(plan: RetryPlan) -> list[str]:
    """The missing shards as one expression (Curator's ``--format array``), nothing when complete."""
    return [plan.expression] if plan.missing else []


def plan_json(plan: RetryPlan) -> dict[str, Any]:
    return {
        "checkpoint": plan.checkpoint,
        "minimum_shard_index": plan.run.minimum_shard_index,
        "total_shards": plan.run.total_shards,
        "complete": plan.complete,
        "missing": plan.expression,
        "missing_count": len(plan.missing),
        "max_array_size": plan.max_array_size,
        "windows": [{"array_expression": w.expression, "shard_index_offset": w.offset,
                     "shards": compress(w.values)} for w in plan.windows],
        "problems": [{"path": p.path, "message": p.message} for p in plan.problems],
    }
