"""hyperion-jobs ``-M NAME`` / ``--clusters NAME``: the Slurm cluster a bare job id is asked of.

A record keeps the cluster its jobs went to, and every query about them asks it; a job id no record
names was asked of the local cluster only, so a job sent elsewhere (a site that queues on another
cluster, a user's own ``sbatch -M``) was "unknown". As squeue, sacct and scancel take it, ``-M NAME``
asks NAME. A record's jobs ran where the record says: an ``-M`` naming another is refused, not guessed.
"""
from __future__ import annotations

import argparse

from backends.cluster import is_cluster_name, same_cluster
from backends.errors import InputError

FIELD = "-M/--clusters"


def asked_cluster(args: argparse.Namespace) -> str | None:
    """The one cluster ``-M`` names (None: not given, the local cluster), checked before anything is
    asked: a value reaches squeue's argv. ``all`` and a list are refused: job J on each cluster is
    another job (``scancel -M a,b J`` would cancel both)."""
    value = getattr(args, "clusters", None)
    if value is None:
        return None
    shown = repr(value[:80])
    if is_cluster_name(value) and "," in value:
        raise InputError(FIELD, f"{shown}: name one cluster; a job id on each of several clusters is another job")
    if not is_cluster_name(value):
        if value.lower() == "all":
            raise InputError(FIELD, "'all' asks every cluster, where a job id is another job on each; name one cluster")
        raise InputError(FIELD, f"{shown} is not a Slurm cluster name (letters, digits, _ . -)")
    return value


def check_record_cluster(record_path: str, cluster: str | None, asked: str | None) -> None:
    """Refuse an ``-M`` naming another cluster than the one a record's jobs ran on (`cluster`, None:
    the local one): its job ids there are other jobs, or none; the record's own cluster is asked."""
    if asked is None or same_cluster(asked, cluster):
        return
    ran = f"cluster {cluster}" if cluster else "the local cluster (the record names none)"
    raise InputError(FIELD, f"the jobs of {record_path} ran on {ran}, not on {asked}: leave out -M {asked} "
                     "(a record's jobs are asked of its own cluster)")
