"""Shard assignment, checkpoint metadata and retry planning.

Compatible with the on-disk layout NeMo Curator's Slurm array support writes.
Never imports `backends` except in `sharding.resubmit`, the bridge that turns a
retry plan into submit requests.
"""
