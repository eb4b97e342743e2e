"""Which logical shards still need a run, and how to submit them under an array limit.

Incomplete = the run's assignable range minus the shards with a valid
completion manifest, computed as the gaps between those shards: planning costs
time and memory in the number of manifests found, not in total_shards. With a
maximum array size M the missing runs are split into windows
(``backends.ranges.split_run_windows``) whose physical indices stay below M,
each with the ``SHARD_INDEX_OFFSET`` to add back; more than MAX_WINDOWS
windows is refused in one line rather than listed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from backends.ranges import (
    Run,
    RunWindow,
    compress,
    compress_runs,
    count_run_windows,
    count_runs,
    gaps,
    iter_runs,
    split_run_windows,
)
from backends.shellwords import shell_quote
from sharding.coverage import Coverage, failed_after_shards
from sharding.errors import ShardingError
from sharding.store import MAX_INDEX, Checkpoint, Problem, RunConfig, manifest_name

RetryWindow = RunWindow  # offset + logical runs; .expression is the physical --array text
MAX_WINDOWS = 100_000    # more would be a listing nobody reads (and memory nobody has)
MAX_MISSING_LISTED = 100_000


@dataclass(frozen=True)
class RetryPlan:
    """What a retry must submit; ``missing_runs`` empty means the run is complete."""

    checkpoint: str
    run: RunConfig
    missing_runs: tuple[Run, ...]
    windows: tuple[RetryWindow, ...]
    problems: tuple[Problem, ...] = ()
    max_array_size: int | None = None
    # complete shards whose newest failed-task record is newer than their manifest: not planned
    # (the manifest decides, as Curator's discovery does), but told (`skipped_line`)
    failed_after: tuple[int, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing_runs

    @property
    def missing_count(self) -> int:
        return count_runs(self.missing_runs)

    @property
    def expression(self) -> str:
        """The logical missing shards as one range list (``1-2,5-10,99``)."""
        return compress_runs(self.missing_runs)

    @property
    def missing(self) -> tuple[int, ...]:
        """Every missing shard; ShardingError above MAX_MISSING_LISTED (use the runs or the expression)."""
        count = self.missing_count
        if count > MAX_MISSING_LISTED:
            raise ShardingError("shards", f"{count} missing shards; more than {MAX_MISSING_LISTED} "
                                "are not listed one by one (see the ranges)")
        return tuple(iter_runs(self.missing_runs))


def parse_max_array_size(text: str) -> int:
    """``--max-array-size`` as a user typed it (command line or console field)."""
    stripped = text.strip()
    value = int(stripped) if stripped.isascii() and stripped.isdigit() and len(stripped) <= 40 else 0
    shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
    if value <= 0:
        raise ShardingError("--max-array-size", f"must be a positive integer, got {shown!r}")
    if value > MAX_INDEX:       # no shard index reaches it: as good as no limit, but say so
        raise ShardingError("--max-array-size", f"{shown!r} is above 2**63-1 (leave it out for no limit)")
    return value


def check_max_array_size(max_array_size: int | None) -> None:
    if max_array_size is not None and (isinstance(max_array_size, bool) or max_array_size <= 0):
        raise ShardingError("--max-array-size", f"must be a positive integer, got {max_array_size}")


def missing_runs(run: RunConfig, completed: Iterable[int]) -> tuple[Run, ...]:
    """The run's shards without a manifest, as runs: the gaps between the completed ones."""
    return gaps(sorted(set(completed)), run.minimum_shard_index, run.maximum_shard_index)


def build_retry(checkpoint: str, run: RunConfig, completed: Iterable[int], problems: Iterable[Problem] = (),
                max_array_size: int | None = None, failed_after: Iterable[int] = ()) -> RetryPlan:
    """Pure planning from what the store read; `failed_after` (`coverage.failed_after_shards`) is
    carried to be told, never planned."""
    check_max_array_size(max_array_size)
    runs = missing_runs(run, completed)
    windows = count_run_windows(runs, max_array_size)
    if windows > MAX_WINDOWS:
        raise ShardingError("--max-array-size", f"the {count_runs(runs)} missing shards make {windows} windows of "
                            f"{max_array_size}; more than {MAX_WINDOWS} are not listed (a larger "
                            "--max-array-size makes fewer)")
    return RetryPlan(checkpoint, run, runs, split_run_windows(runs, max_array_size), tuple(problems), max_array_size,
                     tuple(sorted(failed_after)))


def retry_from_coverage(cov: Coverage, max_array_size: int | None = None) -> RetryPlan:
    """The retry of a checkpoint already read: the console plans from the coverage it shows, so a
    new --max-array-size costs no second read (10,000 manifests on NFS take ~10 s).

    The same plan as plan_retry's; its problems are every file the coverage skipped (failed-task
    records too, none of them `unknown`).
    """
    return build_retry(cov.checkpoint, cov.run, cov.completed, cov.problems, max_array_size, cov.failed_after)


def plan_retry(path: str | Path, max_array_size: int | None = None) -> RetryPlan:
    """Read the checkpoint and plan; a missing or corrupt run.json raises ShardingError. The
    failed-task records are only listed and stat'ed, never read: the plan goes by manifests, and
    only says which complete shards failed since (`failed_after`)."""
    check_max_array_size(max_array_size)
    store = Checkpoint(path)
    run = store.require_run()
    done, problems = store.completion_times(run)
    after = failed_after_shards(done, store.failure_times(done)) if done else ()
    return build_retry(str(store.path), run, done, problems, max_array_size, after)


def skipped_line(plan: RetryPlan) -> str | None:
    """The line every retry face adds where it says nothing (or only some shards) is resubmitted:
    the shards whose newest failure is newer than their completion manifest, that retry skips them
    because the manifest says complete, and how to rerun one (remove its manifest, named whole as a shell word).
    None when there are none. Plain text: callers escape it.
    Without it `retry` said "every shard is complete" while `failed` listed a failure after completion."""
    shards = plan.failed_after
    if not shards:
        return None
    one = len(shards) == 1
    manifest = shell_quote(str(Checkpoint(plan.checkpoint).completion_dir / manifest_name(plan.run, shards[0])))
    listed = compress(shards)
    listed = listed if len(listed) <= 80 else listed[:79] + "…"
    how = (f"to rerun it, remove {manifest}" if one else
           f"to rerun one, remove its manifest (shard {shards[0]}'s: {manifest})")
    return (f"{len(shards)} shard{'' if one else 's'} ({listed}) {'has' if one else 'have'} a failure newer "
            f"than {'its' if one else 'their'} completion manifest (a rerun failed after {'it' if one else 'they'} "
            f"completed): retry skips {'it' if one else 'them'} because the manifest says complete; {how}, "
            "then retry again")


def format_fields(plan: RetryPlan) -> list[str]:
    """``ARRAY_EXPRESSION SHARD_INDEX_OFFSET MINIMUM_SHARD_INDEX TOTAL_SHARDS``, one line per window."""
    return [f"{w.expression} {w.offset} {plan.run.minimum_shard_index} {plan.run.total_shards}" for w in plan.windows]


def format_ranges(plan: RetryPlan) -> list[str]:
    """The missing shards as one expression (Curator's ``--format array``), nothing when complete."""
    return [plan.expression] if plan.missing_runs else []


def plan_json(plan: RetryPlan) -> dict[str, Any]:
    return {
        "checkpoint": plan.checkpoint,
        "minimum_shard_index": plan.run.minimum_shard_index,
        "total_shards": plan.run.total_shards,
        "complete": plan.complete,
        "missing": plan.expression,
        "missing_count": plan.missing_count,
        "max_array_size": plan.max_array_size,
        "windows": [{"array_expression": w.expression, "shard_index_offset": w.offset,
                     "shards": w.logical} for w in plan.windows],
        "problems": [p.as_json() for p in plan.problems],
        "failed_after_completion": {"count": len(plan.failed_after), "shards": list(plan.failed_after),
                                    "note": skipped_line(plan)},
    }
