"""scontrol calls that change a submitted job: an array's task throttle, a hold's release.

Used to keep ``--max-jobs-run`` true across array windows (see
backends.watch.throttle). One call per change; the caller charges each to its
QueryBudget. The current throttles are read back with one squeue: a pending
array's range row names them (``177_[3-6%2]`` is throttle 2).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from backends.watch.slurm.accounting import QueryError, Runner, error_kind, run_command

HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})


def throttle_argv(job_id: str, throttle: int) -> list[str]:
    """``scontrol update JobId=12 ArrayTaskThrottle=3`` (0 would mean no limit: refused)."""
    if throttle < 1:
        raise ValueError("an array task throttle must be at least 1 (0 means unlimited)")
    return ["scontrol", "update", f"JobId={job_id}", f"ArrayTaskThrottle={throttle}"]


def release_argv(job_id: str) -> list[str]:
    return ["scontrol", "release", job_id]


def pending_arrays_argv(job_ids: Sequence[str]) -> list[str]:
    """Pending range rows with their throttle and reason, and each row's own job id.

    ``--array-unique`` (as `squeue_argv`): without it a task with a record of its own (held,
    requeued or updated on its own) is folded into its window's range row, which then names
    no throttle (``12_[1-9]``) and a merged reason (``JobArrayTaskLimit,JobHeldAdmin``), so a
    watcher that attached then never moved a drained window's slots. JobID tells the window's
    own row (the array job's id) from such a task's row.
    """
    return ["squeue", "-j", ",".join(job_ids), "--array-unique", "-h", "-t", "PD",
            "-O", "JobArrayID:|,ArrayTaskID:|,Reason:|,JobID:|"]


@dataclass(frozen=True)
class WindowControl:
    """What the controller says about one window's pending tasks."""

    throttle: int | None    # None: no limit
    held: bool
    # held by an operator (JobHeldAdmin): `sbatch --hold` makes a user hold only, so never the plan's
    admin: bool = False


def parse_pending_arrays(text: str) -> dict[str, WindowControl]:
    """Per job id: the throttle and hold of its pending range row (``177_[3-6%2]|3-6%2|JobHeldUser|177|``).

    A row whose JobID is not the array's is one task's own record (``177_4|4|JobHeldAdmin|181|``):
    its hold is that task's (released with the window, a hold the user put on one task was
    lifted), and it names no throttle.
    """
    out: dict[str, WindowControl] = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) < 3 or "_" not in fields[0]:
            continue
        job = fields[0].split("_", 1)[0]
        own_id = fields[3].strip() if len(fields) > 3 else ""
        if own_id.isdigit() and own_id != job:
            continue
        _, percent, limit = fields[1].partition("%")
        throttle = int(limit) if percent and limit.strip().isdigit() else None
        held = fields[2].strip() in HELD_REASONS
        known = out.get(job)
        out[job] = WindowControl(throttle if known is None else known.throttle or throttle,
                                 held or bool(known and known.held),
                                 fields[2].strip() == "JobHeldAdmin" or bool(known and known.admin))
    return out


# scontrol's answer per range of an array's tasks ("12_1-4: Job has already finished" and
# "12_5-9: No error", exit 1): the change reached every task still pending.
_PARTIAL = re.compile(r"^\S+: (No error|Job has already finished)$")


def _run(argv: list[str], runner: Runner) -> str:
    """A failure as QueryError, naming the line that refused; an scontrol update/release of an array
    whose every line is `_PARTIAL` changed every task it could (taken for a failure, the throttle
    raise was asked again at every poll, and a held window's release after it never made)."""
    result = runner(argv)
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    refused = [line for line in lines if not _PARTIAL.match(line)]
    partial = argv[0] == "scontrol" and result.returncode == 1 and lines and not refused
    if result.returncode != 0 and not partial:
        message = (refused or lines or [f"exit {result.returncode}"])[0]
        raise QueryError(f"{' '.join(argv[:2])} failed (rc {result.returncode}): {message}",
                         error_kind(result.returncode, result.stderr))
    return result.stdout


def pending_arrays(job_ids: Sequence[str], runner: Runner = run_command) -> dict[str, WindowControl]:
    """One squeue: the throttle and hold of every window that still has pending tasks."""
    return parse_pending_arrays(_run(pending_arrays_argv(job_ids), runner))


def set_throttle(job_id: str, throttle: int, runner: Runner = run_command) -> None:
    _run(throttle_argv(job_id, throttle), runner)


def release(job_id: str, runner: Runner = run_command) -> None:
    _run(release_argv(job_id), runner)
