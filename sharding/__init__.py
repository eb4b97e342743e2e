"""Shard assignment, checkpoint metadata and retry planning.

Compatible with the on-disk layout NeMo Curator's Slurm array support writes.
Imports `backends` only for its bottom layer (range math, the error type,
printable text, umask-following writes: ``backends.ranges``, ``errors``,
``printable``, ``fileio``), in `sharding.run_records`, which reads submit
records to find the ones naming a checkpoint, and in `sharding.resubmit`, the
bridge that turns a retry plan into submit requests.
"""
