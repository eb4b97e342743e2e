"""Per-shard status of a checkpoint: complete, failed or incomplete.

A shard with a completion manifest is complete even if an older attempt left a
failed-task record (Curator: old failures cannot make a later success look
failed); without one it is failed if any attempt recorded failures, else
incomplete (never ran, still running, crashed or timed out).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from backends.ranges import compress
from sharding.store import Checkpoint, FailedRecord, Problem, RunConfig


class ShardStatus(str, Enum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    FAILED = "failed"


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
    shards: tuple[ShardCoverage, ...]
    failed: tuple[FailedRecord, ...]        # every readable failed-task record, oldest first
    problems: tuple[Problem, ...]

    def counts(self) -> dict[str, int]:
        tally = Counter(s.status.value for s in self.shards)
        return {status.value: tally.get(status.value, 0) for status in ShardStatus}

    def by_status(self) -> dict[str, tuple[int, ...]]:
        groups: dict[str, list[int]] = {status.value: [] for status in ShardStatus}
        for s in self.shards:
            groups[s.status.value].append(s.shard)
        return {k: tuple(v) for k, v in groups.items()}

    def status_of(self, shard: int) -> ShardStatus:
        return self.shards[shard - self.run.minimum_shard_index].status


def build_coverage(checkpoint: str, run: RunConfig, completed: set[int], failed: list[FailedRecord],
                   problems: list[Problem]) -> Coverage:
    """Pure: combine what the store read into one status per shard."""
    per_shard: dict[int, list[FailedRecord]] = {}
    for record in failed:
        per_shard.setdefault(record.shard, []).append(record)
    shards = []
    for shard in run.shards:
        records = per_shard.get(shard, [])
        if shard in completed:
            status = ShardStatus.COMPLETE
        elif records:
            status = ShardStatus.FAILED
        else:
            status = ShardStatus.INCOMPLETE
        shards.append(ShardCoverage(shard, status, len(records), records[-1] if records else None))
    return Coverage(checkpoint, run, tuple(shards), tuple(failed), tuple(problems))


def coverage(path: str | Path) -> Coverage:
    """Read a checkpoint (run.json required) and classify every shard of its run."""
    store = Checkpoint(path)
    run = store.require_run()
    done, problems = store.completed(run)
    failed, failed_problems = store.scan_failed()
    return build_coverage(str(store.path), run, done, failed, problems + failed_problems)


def coverage_json(cov: Coverage, per_shard: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "checkpoint": cov.checkpoint,
        "minimum_shard_index": cov.run.minimum_shard_index,
        "total_shards": cov.run.total_shards,
        "counts": cov.counts(),
        "ranges": {k: compress(v) for k, v in cov.by_status().items()},
        "problems": [{"path": p.path, "message": p.message} for p in cov.problems],
    }
    if per_shard:
        data["shards"] = [{"shard": s.shard, "status": s.status.value, "failures": s.failures} for s in cov.shards]
    return data
