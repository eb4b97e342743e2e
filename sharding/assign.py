"""Hash assignment of deterministic source-task ids to logical shards.

The formula is NeMo Curator's, so a task lands in the same shard whichever tool
computes it, and in the same shard on every retry.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, Sequence, TypeVar

from sharding.arrayenv import ArrayConfig
from sharding.errors import ShardingError

T = TypeVar("T")


def shard_for(task_id: str, total_shards: int, minimum_shard_index: int = 0) -> int:
    """``int(sha256(task_id)[:16], 16) % total_shards + minimum_shard_index``."""
    digest = hashlib.sha256(task_id.encode("utf-8")).hexdigest()
    return int(digest[:16], 16) % total_shards + minimum_shard_index


def shards_for(task_ids: Iterable[str], total_shards: int, minimum_shard_index: int = 0) -> list[int]:
    """`shard_for` over many ids, with the lookups hoisted (array tasks hash every source id)."""
    sha = hashlib.sha256
    return [int(sha(i.encode("utf-8")).hexdigest()[:16], 16) % total_shards + minimum_shard_index for i in task_ids]


def check_task_ids(task_ids: Iterable[str]) -> None:
    """Reject ids that begin with ``r``: Curator reserves them for non-deterministic ids.

    Such an id could be assigned differently on a retry, so sharding would
    silently skip or duplicate work.
    """
    bad = [task_id for task_id in task_ids if task_id.startswith("r")]
    if bad:
        shown = ", ".join(repr(b) for b in bad[:5])
        raise ShardingError("task_id", f"ids beginning with 'r' are not deterministic and cannot be sharded: {shown}")


@dataclass(frozen=True)
class Selection(Generic[T]):
    """The tasks of the active shard, out of how many, and a warning when it got none."""

    tasks: tuple[T, ...]
    total: int
    warning: str | None = None


def select(tasks: Sequence[T], config: ArrayConfig | None,
           task_id: Callable[[T], str] = lambda t: t.task_id) -> Selection[T]:  # type: ignore[attr-defined]
    """Keep the tasks assigned to ``config.shard_index``; no configuration keeps all of them."""
    if config is None:
        return Selection(tuple(tasks), len(tasks))
    ids = [task_id(t) for t in tasks]
    check_task_ids(ids)
    if not config.in_range:
        return Selection((), len(tasks), config.range_warning())
    shards = shards_for(ids, config.total_shards, config.minimum_shard_index)
    kept = tuple(t for t, s in zip(tasks, shards) if s == config.shard_index)
    warning = None
    if not kept and tasks:
        warning = (f"shard {config.shard_index} of {config.total_shards} got none of the "
                   f"{len(tasks)} source tasks (more shards than tasks?)")
    return Selection(kept, len(tasks), warning)
