"""Shard assignment, checkpoint metadata and retry planning.

Compatible with the on-disk layout NeMo Curator's Slurm array support writes.
Imports `backends` only for its pure range math and error type
(``backends.ranges``, ``backends.errors``), and in `sharding.resubmit`, the
bridge that turns a retry plan into submit requests.
"""
