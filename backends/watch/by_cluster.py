"""Each job asked about on its own attempt's cluster: a record's attempts can have run on different
Slurm clusters (a site file's ``--clusters`` came or went between a submission and its retry).

Asked with the record's clusters joined (``-M local,other``, or ``-M other`` of every attempt), the
jobs of the attempt that ran elsewhere were UNKNOWN (their ends lost) and a cancel hit the same id
on each cluster, a stranger's job too. The tasks are grouped by their attempt's cluster
(`by_cluster`), each group is asked of its cluster in its own query, and the answers are merged
(`merged_answers`): one query as ever when all are on one cluster. Job ids of two clusters can be
equal; an answer about such a job keeps only the tasks its own cluster's group asked about, so no
cluster's word is taken for the other's task of the same id.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from backends.records.record import TaskRecord
from backends.states import TaskState

# sacct and squeue's answers (`backends.watch.slurm.accounting`) are imported where they are merged:
# `status` of a local record groups its tasks here and asks Slurm nothing.
TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (as backends.client)
if TYPE_CHECKING:
    from typing import TypeVar

    from backends.watch.slurm.accounting import Key, SacctRows, Snapshot, SqueueRows

    T = TypeVar("T")


def by_cluster(items: Iterable[T], cluster_of: Callable[[T], str | None],
               attempt_of: Callable[[T], int] = lambda item: getattr(item, "attempt", 0)) -> dict[str | None, list[T]]:
    """`items` grouped by their cluster (None: the local one), the group of the newest attempt last:
    where two clusters' answers name the same task (equal job ids), the newest attempt's stands."""
    groups: dict[str | None, list[T]] = {}
    newest: dict[str | None, int] = {}
    for item in items:
        cluster = cluster_of(item)
        groups.setdefault(cluster, []).append(item)
        newest[cluster] = max(newest.get(cluster, 0), attempt_of(item))
    return {cluster: groups[cluster] for cluster in sorted(groups, key=lambda c: newest[c])}


def task_keys(tasks: Iterable[TaskRecord]) -> frozenset[Key]:
    """(job id, array task id) of each task: what an answer about them may say, per cluster."""
    return frozenset((task.job_id, task.array_task_id) for task in tasks)


def shared_jobs(key_sets: Sequence[frozenset[Key]]) -> frozenset[str]:
    """Job ids more than one cluster's group asks about (equal ids of different jobs)."""
    seen: set[str] = set()
    shared: set[str] = set()
    for keys in key_sets:
        jobs = {job for job, _ in keys}
        shared |= seen & jobs
        seen |= jobs
    return frozenset(shared)


def _own(values: Mapping[Key, object], keys: frozenset[Key], shared: frozenset[str]) -> dict:
    """`values` less what it says of a job id another cluster's group asks about too, unless about
    one of this group's own tasks (`keys`)."""
    return {key: value for key, value in values.items() if key[0] not in shared or key in keys}


def merged_answers(parts: Sequence[tuple[frozenset[Key], Snapshot]]) -> Snapshot:
    """One Snapshot of the answers of several clusters, each with the keys of the tasks its group
    asked about, in `by_cluster`'s order (a later part's word on the same task stands). Job-level
    sets are joined: a job id live or accounted on either cluster is so for both (a task is then
    not taken as cancelled while pending, nor its job as unknown to Slurm: nothing is decided
    on the other cluster's word)."""
    if len(parts) == 1:
        return parts[0][1]
    from backends.watch.slurm.accounting import Snapshot

    shared = shared_jobs([keys for keys, _ in parts])
    states: dict = {}
    usage: dict = {}
    live: dict = {}
    unknown: set[Key] = set()
    live_jobs: set[str] | None = None
    accounted: set[str] = set()
    for keys, answer in parts:
        states.update(_own(answer.states, keys, shared))
        usage.update(_own(answer.usage, keys, shared))
        live.update(_own(answer.live, keys, shared))
        unknown.update(key for key in answer.unknown if key[0] not in shared or key in keys)
        if answer.live_jobs is not None:
            live_jobs = (live_jobs or set()) | answer.live_jobs
        accounted |= answer.accounted_jobs
    return Snapshot(states, usage, live, None if live_jobs is None else frozenset(live_jobs),
                    frozenset(accounted), frozenset(unknown))


def forgotten_keys(parts: Sequence[tuple[frozenset[Key], Snapshot]],
                   forgotten: Sequence[Collection[str]]) -> frozenset[Key]:
    """The tasks each part's answer names of the jobs its controller forgot (`forgotten_jobs`, one
    collection per part): a job id the other cluster has too is forgotten on its own cluster only."""
    shared = shared_jobs([keys for keys, _ in parts]) if len(parts) > 1 else frozenset()
    return frozenset(key for (keys, answer), jobs in zip(parts, forgotten) if jobs
                     for key in _own(answer.states, keys, shared) if key[0] in jobs)


def without_unended(states: Mapping[Key, TaskState], keys: Collection[Key]) -> dict[Key, TaskState]:
    """`states` less the unended states of `keys` (`forgotten_keys`): accounting's word that they run
    or wait is stale, as `without_forgotten` says of whole jobs; their ends stand."""
    return {key: state for key, state in states.items() if key not in keys or state.state.is_terminal}


def joined_rows(parts: Sequence[SacctRows] | Sequence[SqueueRows]) -> SacctRows | SqueueRows:
    """The answers of one client asked on several clusters (a watch's poll, each cluster its own jobs),
    as one: each job id is asked on one cluster only (`job_clusters`), so no task is named twice.
    squeue's "knows no such job" holds of the whole only when every cluster said it."""
    from backends.watch.slurm.accounting import SacctRows, SqueueRows

    usage: dict = {}
    for part in parts:
        usage.update(part.usage)
    if all(isinstance(part, SqueueRows) for part in parts):
        return SqueueRows([state for part in parts for state in part.states], usage,
                          all(part.unknown_ids for part in parts))
    return SacctRows([state for part in parts for state in part.own],
                     [state for part in parts for state in part.ranged], usage)


def job_clusters(tasks: Iterable[TaskRecord], cluster_of: Callable[[TaskRecord], str | None]) -> dict[str, str | None]:
    """The cluster each job id of `tasks` is asked on: its task's attempt's, the newest attempt's
    where two clusters' jobs have the same id (a watch asks each job id of one cluster, and the
    older attempt's tasks of that id are left to `status`, which groups by task)."""
    clusters: dict[str, str | None] = {}
    newest: dict[str, int] = {}
    for task in tasks:
        if task.attempt >= newest.get(task.job_id, 0):
            clusters[task.job_id], newest[task.job_id] = cluster_of(task), task.attempt
    return clusters
