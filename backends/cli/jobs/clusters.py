"""hyperion-jobs ``-M NAME`` / ``--clusters NAME``: the Slurm cluster a bare job id is asked of.

A record keeps the cluster its jobs went to, and every query about them asks it; a job id no record
names was asked of the local cluster only, so a job sent elsewhere (a site that queues on another
cluster, a user's own ``sbatch -M``) was "unknown". As squeue, sacct and scancel take it, ``-M NAME``
asks NAME. A record's jobs ran where the record says: an ``-M`` naming another is refused, not guessed.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence

from backends.cluster import cluster_words, is_cluster_name, same_cluster
from backends.errors import InputError

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from backends.records.history import History

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


def check_history_cluster(history: History, asked: str | None, jobs: Sequence[str] = ()) -> None:
    """`check_record_cluster` of a record whose attempts may have run on different clusters: `-M`
    must name the cluster of the attempt that submitted `jobs` (the job ids asked about), or, of
    the record itself, one of its attempts' clusters. Compared with every attempt's clusters joined
    (``east,gpu-west``), `-M east` of attempt 1's job was refused in words naming no cluster, and
    with a local attempt 1 and a retry on gpu-west, `status -M gpu-west J` of attempt 1's job was
    taken and the local cluster asked without a word."""
    if asked is None:
        return
    clusters = list(dict.fromkeys(record.cluster for record in history.attempt_records.values()))
    if len(clusters) == 1:      # one cluster for every attempt: the record's words
        check_record_cluster(history.record_path, clusters[0], asked)
        return
    from backends.watch.targets import attempt_record

    ran = list(dict.fromkeys(attempt_record(history, job).cluster for job in jobs)) if jobs else clusters
    if (all if jobs else any)(same_cluster(asked, cluster) for cluster in ran):
        return
    whose = f"job {','.join(jobs)} of {history.record_path}" if jobs else f"the jobs of {history.record_path}"
    raise InputError(FIELD, f"{whose} ran on {' and '.join(map(cluster_words, ran))}, not on {asked}: leave out "
                     f"-M {asked} (a record's jobs are asked of their own attempt's cluster)")
