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
