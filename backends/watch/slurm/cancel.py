"""scancel for whole jobs or single array tasks, in one call."""
from __future__ import annotations

import re
from collections.abc import Sequence

from backends.errors import InputError
from backends.watch.slurm.accounting import Runner, run_command

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


def owners_argv(job_ids: Sequence[str]) -> list[str]:
    """The owner of each job (``%F``: an array's own id, for its tasks too)."""
    return ["squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", "%F|%u"]


def job_owners(job_ids: Sequence[str], runner: Runner = run_command) -> dict[str, str]:
    """Who owns each of `job_ids` the controller lists: {} when squeue fails (scancel, asked next,
    then says why in its own words)."""
    result = runner(owners_argv(job_ids))
    if result.returncode != 0:
        return {}
    pairs = (line.split("|", 1) for line in result.stdout.splitlines() if "|" in line)
    return {job.strip(): user.strip() for job, user in pairs}


def others_jobs(ids: Sequence[str], owners: dict[str, str], me: str) -> dict[str, str]:
    """The jobs of `ids` (JOB or JOB_TASK) someone else owns, with their owner, in `ids`' order."""
    jobs = dict.fromkeys(i.partition("_")[0] for i in ids)
    return {job: owners[job] for job in jobs if owners.get(job, me) != me}


def others_refusal(others: dict[str, str], admin: bool) -> str | None:
    """Why a cancel of others' jobs is refused before its question: scancel refuses anyone but an
    administrator (root here) with "Access/permission denied", after the user answered y."""
    if not others or admin:
        return None
    return "; ".join(f"job {job} is {user}'s, not yours" for job, user in others.items()) + "; nothing cancelled"
