"""The active shard's configuration, from flags or the environment, validated.

Names are read in this order: ``HYPERION_ARRAY_*``, ``NEMO_CURATOR_SLURM_ARRAY_*``
(so Curator launch scripts work unchanged), then Slurm's own
``SLURM_ARRAY_TASK_ID`` / ``SLURM_ARRAY_TASK_COUNT``. Validation follows the
Curator documentation: both index and total or an error, total > 0, no
negatives, an out-of-range index gets no tasks and a warning, and with no
configuration at all the program runs unsharded as before.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from backends.shard_env import PREFIXES, WINDOW_OFFSET_ENV
from sharding.errors import ShardingError

SLURM_FALLBACK = {"SHARD_INDEX": "SLURM_ARRAY_TASK_ID", "TOTAL_SHARDS": "SLURM_ARRAY_TASK_COUNT"}
# WINDOW_OFFSET_ENV, set by hyperion-submit's batch script: in a window above the cluster's array
# limit SLURM_ARRAY_TASK_ID is the physical index, the shard is it plus this.
TRUE_VALUES = frozenset({"1", "true", "yes", "on"})
MAX_INDEX = 2 ** 63 - 1   # what a checkpoint's readers accept (19 digits)
FALSE_VALUES = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class ArrayConfig:
    """One array task's view: which logical shard it is, out of which range."""

    shard_index: int
    total_shards: int
    minimum_shard_index: int = 0

    @property
    def maximum_shard_index(self) -> int:
        return self.minimum_shard_index + self.total_shards - 1

    @property
    def in_range(self) -> bool:
        return self.minimum_shard_index <= self.shard_index <= self.maximum_shard_index

    def range_warning(self) -> str | None:
        if self.in_range:
            return None
        return (f"shard_index={self.shard_index} is outside the assignable shard range "
                f"[{self.minimum_shard_index}, {self.maximum_shard_index}]; this task gets no source tasks")


def validate(config: ArrayConfig, fields: Mapping[str, str] | None = None) -> ArrayConfig:
    """Check the seed's rules; ``fields`` names where each value came from, for the message."""
    names = {"shard_index": "shard_index", "total_shards": "total_shards",
             "minimum_shard_index": "minimum_shard_index", **(fields or {})}
    if config.total_shards <= 0:
        raise ShardingError(names["total_shards"], f"must be greater than 0, got {config.total_shards}")
    if config.minimum_shard_index < 0:
        raise ShardingError(names["minimum_shard_index"], f"must be non-negative, got {config.minimum_shard_index}")
    if config.shard_index < 0:
        raise ShardingError(names["shard_index"], f"must be non-negative, got {config.shard_index}")
    for field in ("shard_index", "total_shards", "minimum_shard_index"):
        if getattr(config, field) > MAX_INDEX:
            raise ShardingError(names[field], f"must be at most {MAX_INDEX}, got a larger number")
    if config.maximum_shard_index > MAX_INDEX:
        raise ShardingError(names["total_shards"], f"minimum_shard_index + total_shards - 1 must be at most {MAX_INDEX}")
    return config


def _lookup(env: Mapping[str, str], key: str) -> tuple[str, str] | None:
    """(variable name, value) of the first set variable for ``key``, or None."""
    names = [prefix + key for prefix in PREFIXES]
    if key in SLURM_FALLBACK:
        names.append(SLURM_FALLBACK[key])
    for name in names:
        if name in env:
            return name, env[name]
    return None


def _as_int(field: str, text: str) -> int:
    shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
    if len(text.strip().lstrip("+-")) > len(str(MAX_INDEX)):   # int() refuses 4300+ digits anyway
        raise ShardingError(field, f"must be an integer of at most {MAX_INDEX}, got {shown!r}")
    try:
        return int(text.strip())
    except ValueError:
        raise ShardingError(field, f"must be an integer, got {shown!r}") from None


def _logical_index(physical: int | None, offset_text: str) -> int | None:
    """SLURM_ARRAY_TASK_ID plus the window's offset: without it, SHARD=1002 at offset 1001 ran
    shard 1 again (and reported success) while shard 1002 never ran, retry after retry."""
    offset = _as_int(WINDOW_OFFSET_ENV, offset_text)
    if offset < 0:
        raise ShardingError(WINDOW_OFFSET_ENV, f"must be non-negative, got {offset}")
    return None if physical is None else physical + offset


def _enabled(env: Mapping[str, str]) -> tuple[bool, bool]:
    """(enabled, explicitly set) from ``*_ARRAY_ENABLED``; an unknown value is an error."""
    found = _lookup(env, "ENABLED")
    if found is None:
        return True, False
    name, value = found
    word = value.strip().lower()
    if word in FALSE_VALUES:
        return False, True
    if word in TRUE_VALUES:
        return True, True
    raise ShardingError(name, f"must be one of {sorted(TRUE_VALUES | FALSE_VALUES)}, got {value!r}")


def resolve(env: Mapping[str, str] | None = None, *, shard_index: int | None = None,
            total_shards: int | None = None, minimum_shard_index: int | None = None) -> ArrayConfig | None:
    """The validated configuration, or None for an ordinary unsharded run.

    Keyword values (command-line flags) win over the environment, value by value.
    An explicit disable value turns sharding off even when flags or Slurm
    variables are present.
    """
    env = os.environ if env is None else env
    enabled, explicit = _enabled(env)
    if not enabled:
        return None
    sources: dict[str, str] = {}
    values: dict[str, int | None] = {}
    flags = {"SHARD_INDEX": shard_index, "TOTAL_SHARDS": total_shards, "MINIMUM_SHARD_INDEX": minimum_shard_index}
    for key, flag in flags.items():
        field = key.lower()
        if flag is not None:
            values[field], sources[field] = flag, f"--{field.replace('_', '-')}"
            continue
        found = _lookup(env, key)
        if found is None:
            values[field] = None
            continue
        sources[field] = found[0]
        values[field] = _as_int(found[0], found[1])
    if sources.get("shard_index") == SLURM_FALLBACK["SHARD_INDEX"] and WINDOW_OFFSET_ENV in env:
        values["shard_index"] = _logical_index(values["shard_index"], env[WINDOW_OFFSET_ENV])
    if sources.get("total_shards") == SLURM_FALLBACK["TOTAL_SHARDS"] and env.get(WINDOW_OFFSET_ENV, "0").strip() != "0":
        raise ShardingError("HYPERION_ARRAY_TOTAL_SHARDS", f"not set, and {SLURM_FALLBACK['TOTAL_SHARDS']} "
                            f"({values['total_shards']}) counts only this window of a hyperion-submit array "
                            f"(offset {env[WINDOW_OFFSET_ENV].strip()[:20]}), not the run's shards: set it or --total-shards")
    if not explicit and values["shard_index"] is None and values["total_shards"] is None:
        return None
    for field, key in (("shard_index", "SHARD_INDEX"), ("total_shards", "TOTAL_SHARDS")):
        if values[field] is None:
            other = [p + key for p in PREFIXES[1:]] + [SLURM_FALLBACK[key], f"--{field.replace('_', '-')}"]
            raise ShardingError(f"HYPERION_ARRAY_{key}", f"not set (nor {', '.join(other)}): "
                                "sharding needs both a shard index and a total shard count")
    config = ArrayConfig(values["shard_index"], values["total_shards"],  # type: ignore[arg-type]
                         values["minimum_shard_index"] or 0)
    return validate(config, sources)
