"""Per-shard status of a checkpoint: complete, failed or incomplete.

A shard with a completion manifest is complete even if an older attempt left a
failed-task record (Curator: old failures cannot make a later success look
failed); without one it is failed if any attempt recorded failures, else
incomplete (never ran, still running, crashed or timed out). A record newer than
its shard's manifest (a rerun of the complete shard failed) leaves the shard
complete too: a failed attempt writes no manifest and removes none, and retry
discovery goes by manifests alone. Such a record is told apart from an old
failure (`Standing`), never said to be "complete since".

Only complete and failed shards are stored (one per file found); incomplete
shards are the gaps between them, kept as runs, so a run of 10**12 shards with
a thousand manifests costs a thousand entries, not 10**12.
"""
from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from threading import Event
from typing import Any, Mapping

from backends.ranges import Run, compress_runs, gaps, runs_of
from sharding.errors import ShardingError
from sharding.store import Checkpoint, FailedRecord, Problem, RunConfig, outside_run

# Above this many shards a per-shard listing is not built; callers say so instead.
MAX_LISTING = 100_000


class ShardStatus(str, Enum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    FAILED = "failed"


class Standing(str, Enum):
    """A failed-task record against its shard's completion manifest: whether the failure is still
    the shard's news, which is what a user deciding on a retry reads the record for."""

    FAILING = "failing"                 # no manifest: the shard is failed, retry reruns it
    COMPLETE_SINCE = "complete_since"   # manifest written at or after the failure: an old failure
    FAILED_AFTER = "failed_after"       # manifest older than the failure: a rerun of the complete
    #                                     shard failed; the manifest stands, retry skips the shard


def standing_of(failed_at: float, completed_at: float | None) -> Standing:
    """Pure: a failure at `failed_at` of a shard whose manifest was written at `completed_at` (None:
    it has none). "Complete since" only when the completion is at or after the failure: a shard
    completed on Monday and rerun (forced) into a failure on Tuesday was said complete since,
    as if Tuesday's failure were an old one. Equal times count as complete since: a filesystem
    that keeps whole seconds cannot order them, and that is what the manifest's presence said."""
    if completed_at is None:
        return Standing.FAILING
    return Standing.COMPLETE_SINCE if completed_at >= failed_at else Standing.FAILED_AFTER


def failed_after_shards(completed_at: Mapping[int, float], failed_at: Mapping[int, float]) -> tuple[int, ...]:
    """Pure: the complete shards (`completed_at`: each one's manifest time) whose newest failed-task
    record (`failed_at`) is newer than their manifest (`Standing.FAILED_AFTER`), sorted. Retry skips
    them, as the manifest says; a user reading "nothing to resubmit" is told of them (`retry.skipped_line`)."""
    return tuple(sorted(shard for shard, at in failed_at.items()
                        if shard in completed_at and standing_of(at, completed_at[shard]) is Standing.FAILED_AFTER))


@dataclass(frozen=True)
class ShardCoverage:
    shard: int
    status: ShardStatus
    failures: int = 0                       # failed-task records of this shard, all attempts
    last_failure: FailedRecord | None = None


@dataclass(frozen=True)
class Coverage:
    checkpoint: str
    run: RunConfig
    completed: tuple[int, ...] = field(init=False)   # shards with a valid manifest, sorted (completed_at's)
    failed_shards: tuple[int, ...]          # shards with failure records and no manifest, sorted
    failures: Mapping[int, tuple[FailedRecord, ...]]   # records per shard in the run's range
    failed: tuple[FailedRecord, ...]        # every readable failed-task record, oldest first
    problems: tuple[Problem, ...]
    completed_at: Mapping[int, float]       # per completed shard, its manifest's mtime
    failed_after: tuple[int, ...]           # complete shards with a failure newer than their manifest
    #                                         (`failed_after_shards`), sorted

    def __post_init__(self) -> None:
        object.__setattr__(self, "completed", tuple(sorted(self.completed_at)))

    def counts(self) -> dict[str, int]:
        complete, failed = len(self.completed), len(self.failed_shards)
        return {ShardStatus.COMPLETE.value: complete,
                ShardStatus.INCOMPLETE.value: self.run.total_shards - complete - failed,
                ShardStatus.FAILED.value: failed}

    def runs(self) -> dict[str, tuple[Run, ...]]:
        """Each status's shards as runs (first, last); incomplete = the gaps between the others."""
        known = list(heapq.merge(self.completed, self.failed_shards))
        return {ShardStatus.COMPLETE.value: runs_of(self.completed),
                ShardStatus.INCOMPLETE.value: gaps(known, self.run.minimum_shard_index, self.run.maximum_shard_index),
                ShardStatus.FAILED.value: runs_of(self.failed_shards)}

    def expressions(self) -> dict[str, str]:
        """Each status's shards as a range expression (``0-2,4-5,7``)."""
        return {status: compress_runs(runs) for status, runs in self.runs().items()}

    @property
    def unnamed(self) -> int:
        """Failed-task records kept under no shard: their folders name none, or no shard number
        (a user's own `NEMO_CURATOR_FAILED_TASKS_DIR`); listed, counted, no shard made failed."""
        return sum(r.shard is None for r in self.failed)

    @property
    def without_details(self) -> int:
        """Failed-task records whose details cannot be read (not JSON, unreadable), which still count.
        Not the counted problems: a record kept under no shard is one too, and its details read."""
        return sum(r.details is None and not r.empty for r in self.failed)

    def standing(self, record: FailedRecord) -> Standing | None:
        """Where this failed-task record stands against its shard's manifest (`standing_of`, the
        record's time its mtime: Curator's marker is an empty file); None for a record of no shard."""
        if record.shard is None:
            return None
        return standing_of(record.mtime, self.completed_at.get(record.shard))

    def complete_since(self, record: FailedRecord) -> bool:
        """Whether a later attempt completed the shard of this failed-task record: an old failure,
        listed as it was (`failed`: "(shard complete since)"), not a shard still failing, nor a
        failure after the shard completed (`Standing.FAILED_AFTER`)."""
        return self.standing(record) is Standing.COMPLETE_SINCE

    def status_of(self, shard: int) -> ShardStatus:
        if _contains(self.completed, shard):
            return ShardStatus.COMPLETE
        return ShardStatus.FAILED if _contains(self.failed_shards, shard) else ShardStatus.INCOMPLETE

    def count_in(self, first: int, last: int) -> dict[str, int]:
        """How many shards of [first, last] have each status (for a map cell covering many shards)."""
        complete = bisect_right(self.completed, last) - bisect_left(self.completed, first)
        failed = bisect_right(self.failed_shards, last) - bisect_left(self.failed_shards, first)
        return {ShardStatus.COMPLETE.value: complete, ShardStatus.FAILED.value: failed,
                ShardStatus.INCOMPLETE.value: last - first + 1 - complete - failed}

    @property
    def listable(self) -> bool:
        return self.run.total_shards <= MAX_LISTING

    def shard_rows(self) -> tuple[ShardCoverage, ...]:
        """One row per shard; ShardingError when there are more than MAX_LISTING (say so, do not allocate)."""
        if not self.listable:
            raise ShardingError("shards", too_many_shards(self.run.total_shards))
        rows = []
        for shard in self.run.shards:
            records = self.failures.get(shard, ())
            rows.append(ShardCoverage(shard, self.status_of(shard), len(records), records[-1] if records else None))
        return tuple(rows)


def too_many_shards(total: int) -> str:
    return (f"{total} shards; a per-shard listing is made only up to {MAX_LISTING} "
            "(the ranges per status say the same in less)")


def _contains(ordered: tuple[int, ...], value: int) -> bool:
    index = bisect_left(ordered, value)
    return index < len(ordered) and ordered[index] == value


def build_coverage(checkpoint: str, run: RunConfig, completed: Mapping[int, float], failed: list[FailedRecord],
                   problems: list[Problem]) -> Coverage:
    """Pure: combine what the store read (`completed`: each completed shard's manifest time) into
    one status per shard (in time of the files found)."""
    per_shard: dict[int, list[FailedRecord]] = {}
    counted: list[FailedRecord] = []
    outside: list[Problem] = []
    for record in failed:
        problem = outside_run(record, run)
        if problem is not None:
            outside.append(problem)
            continue
        if record.shard is not None:      # a failure of no known shard is listed, not any shard's
            per_shard.setdefault(record.shard, []).append(record)
        counted.append(record)
    completed_at = {s: completed[s] for s in sorted(completed) if s in run.shards}
    failed_shards = tuple(sorted(s for s in per_shard if s not in completed))
    newest = {shard: max(r.mtime for r in records) for shard, records in per_shard.items()}
    return Coverage(checkpoint, run, failed_shards=failed_shards,
                    failures={k: tuple(v) for k, v in per_shard.items()}, failed=tuple(counted),
                    problems=tuple(sorted([*problems, *outside], key=lambda p: p.path)),
                    completed_at=completed_at, failed_after=failed_after_shards(completed_at, newest))


def coverage(path: str | Path, stop: Event | None = None) -> Coverage:
    """Read a checkpoint (run.json required) and classify every shard of its run; ReadStopped
    once `stop` is set (the console's read of a checkpoint the user left or quit)."""
    store = Checkpoint(path, stop)
    run = store.require_run()
    done, problems = store.completion_times(run)
    failed, failed_problems = store.scan_failed()
    return build_coverage(str(store.path), run, done, failed, problems + failed_problems)


def coverage_json(cov: Coverage, per_shard: bool = True) -> dict[str, Any]:
    """The coverage as JSON; per-shard rows only while there are at most MAX_LISTING shards."""
    after = cov.failed_after
    data: dict[str, Any] = {
        "checkpoint": cov.checkpoint,
        "minimum_shard_index": cov.run.minimum_shard_index,
        "total_shards": cov.run.total_shards,
        "counts": cov.counts(),
        "ranges": cov.expressions(),
        "problems": [p.as_json() for p in cov.problems],
        # complete shards a rerun failed since: complete to retry (their manifest stands), told apart
        "failed_after_completion": list(after),
    }
    if per_shard and cov.listable:
        marked = set(after)
        data["shards"] = [{"shard": s.shard, "status": s.status.value, "failures": s.failures,
                           "failed_after": s.shard in marked} for s in cov.shard_rows()]
    elif per_shard:
        data["shards"] = None
        data["shards_omitted"] = too_many_shards(cov.run.total_shards)
    return data
