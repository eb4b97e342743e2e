"""scancel for whole jobs or single array tasks, in one call."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from backends.errors import InputError
from backends.watch.slurm.runner import Runner, run_command

_TARGET = re.compile(r"^\d+(_\d+)?$")


class CancelError(RuntimeError):
    """scancel ran and failed (the message is scancel's own)."""


def cancel_argv(targets: Sequence[str]) -> list[str]:
    """``scancel 12 13_4``; raises InputError("JOB", ...) for anything but JOB or JOB_TASK."""
    if not targets:
        raise InputError("JOB", "nothing to cancel")
    for target in targets:
        if not _TARGET.match(target):
            raise InputError("JOB", f"{target!r} is not a job id (JOB or JOB_TASK, digits)")
    return ["scancel", *targets]


def cancel(targets: Sequence[str], runner: Runner = run_command) -> None:
    """Cancel jobs or tasks with one scancel; CancelError if scancel fails."""
    result = runner(cancel_argv(list(targets)))
    if result.returncode != 0:
        message = result.stderr.strip() or f"scancel exited with status {result.returncode}"
        raise CancelError(message.splitlines()[0])


def cluster_groups(targets: Sequence[str], clusters: Mapping[str, str | None]) -> list[tuple[str | None, list[str]]]:
    """`targets` by the cluster `clusters` names for each (absent: the local one), in first order:
    `cancel_each`'s groups of one record's jobs or tasks (the console's cancel)."""
    groups: dict[str | None, list[str]] = {}
    for target in targets:
        groups.setdefault(clusters.get(target), []).append(target)
    return list(groups.items())


def cancel_each(groups: Sequence[tuple[str | None, Sequence[str]]], runner: Runner = run_command) -> None:
    """`cancel` of each group's jobs or tasks on its cluster (None: the local one), one scancel per
    cluster: joined into one ``scancel -M a,b``, each id was cancelled on both clusters, a stranger's
    job of the same id too. CancelError of the first that fails, naming those cancelled before it."""
    from backends.cluster import for_cluster

    done: list[str] = []
    for cluster, targets in groups:
        try:
            cancel(targets, for_cluster(runner, cluster))
        except CancelError as err:
            raise CancelError(f"{err}" + (f" (cancelled {' '.join(done)} before it)" if done else "")) from None
        done.extend(targets)


def owners_argv(job_ids: Sequence[str]) -> list[str]:
    """The owner of each job, uid and name (``%F``: an array's own id, for its tasks too)."""
    return ["squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", "%F|%U|%u"]


def job_owners(job_ids: Sequence[str], runner: Runner = run_command) -> dict[str, tuple[str, str]]:
    """(uid, name) of the owner of each of `job_ids` the controller lists: {} when squeue fails
    (scancel, asked next, then says why in its own words)."""
    result = runner(owners_argv(job_ids))
    if result.returncode != 0:
        return {}
    rows = (line.split("|", 2) for line in result.stdout.splitlines() if line.count("|") >= 2)
    return {job.strip(): (uid.strip(), name.strip()) for job, uid, name in rows}


def others_jobs(ids: Sequence[str], owners: dict[str, tuple[str, str]], my_uid: int) -> dict[str, str]:
    """The jobs of `ids` (JOB or JOB_TASK) another uid owns, with the owner's name, in `ids`' order.
    By uid: a container without a passwd entry for you knows you by number, squeue by name."""
    jobs = dict.fromkeys(i.partition("_")[0] for i in ids)
    return {job: owners[job][1] or owners[job][0] for job in jobs
            if job in owners and owners[job][0] != str(my_uid)}


def whose(others: dict[str, str]) -> str:
    """`` (job 3025 is ana's)``: said in the question and after a refusal of scancel, as an operator or
    an account coordinator may cancel others' jobs and anyone else may not."""
    return "".join(f" (job {job} is {user}'s)" for job, user in others.items())
