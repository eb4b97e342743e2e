"""scontrol calls that change a submitted job: an array's task throttle, a hold's release.

Used to keep ``--max-jobs-run`` true across array windows (see
backends.watch.throttle). One call per change; the caller charges each to its
QueryBudget. The current throttles are read back with one squeue: a pending
array's range row names them (``177_[3-6%2]`` is throttle 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

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
    """Pending range rows (no ``-r``) with their throttle and reason."""
    return ["squeue", "-j", ",".join(job_ids), "-h", "-t", "PD",
            "-O", "JobArrayID:|,ArrayTaskID:|,Reason:|"]


@dataclass(frozen=True)
class WindowControl:
    """What the controller says about one window's pending tasks."""

    throttle: int | None    # None: no limit
    held: bool


def parse_pending_arrays(text: str) -> dict[str, WindowControl]:
    """Per job id: the throttle and hold of its pending range row (``177_[3-6%2]|3-6%2|JobHeldUser|``)."""
    out: dict[str, WindowControl] = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) < 3 or "_" not in fields[0]:
            continue
        job = fields[0].split("_", 1)[0]
        _, percent, limit = fields[1].partition("%")
        throttle = int(limit) if percent and limit.strip().isdigit() else None
        held = fields[2].strip() in HELD_REASONS
        known = out.get(job)
        out[job] = WindowControl(throttle if known is None else known.throttle or throttle,
                                 held or bool(known and known.held))
    return out


def _run(argv: list[str], runner: Runner) -> str:
    result = runner(argv)
    if result.returncode != 0:
        message = (result.stderr.strip() or f"exit {result.returncode}").splitlines()[0]
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
