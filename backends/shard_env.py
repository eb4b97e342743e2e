"""The environment through which a sharded program learns its shard, named once for both sides.

hyperion-submit sets these in every array task (`backends.submit.array`), a checkpoint retry
exports the run's configuration under them (`sharding.resubmit`), and the program reads them
(`sharding.arrayenv`): a name spelled differently on one side is a shard silently run twice.
"""
from __future__ import annotations

# Read in this order: our own, then NeMo Curator's (its pipelines read only theirs).
PREFIXES = ("HYPERION_ARRAY_", "NEMO_CURATOR_SLURM_ARRAY_")
# What a window adds to SLURM_ARRAY_TASK_ID, for programs that take their index from Slurm (as
# Curator's submit_array.sh adds SHARD_INDEX_OFFSET); the batch script exports it, sharding.arrayenv
# reads it, and --env may not set it.
WINDOW_OFFSET_ENV = "HYPERION_SUBMIT_ARRAY_OFFSET"


def names(key: str) -> tuple[str, ...]:
    """``TOTAL_SHARDS`` -> its variable under each prefix, in reading order."""
    return tuple(prefix + key for prefix in PREFIXES)
