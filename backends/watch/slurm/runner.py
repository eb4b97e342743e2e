"""How a Slurm client (sacct, squeue, scontrol, scancel) is run, and the error a failed query raises.

Apart from the parsers in `accounting` so that what names them without asking Slurm
anything (the CLI's error handling, a default runner, a local record's `status`)
loads neither those nor the process machinery (`backends.client`) until a query runs.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (as backends.client)
if TYPE_CHECKING:
    import threading

    from backends.client import CommandResult

COMMAND_TIMEOUT = 30.0

Runner = Callable[[Sequence[str]], "CommandResult"]


class QueryError(RuntimeError):
    """sacct or squeue failed in a way worth retrying (rc, timeout, garbage).

    `kind` says how to retry: "unreachable" (the daemon refused the connection:
    the call reached no server, so retrying soon costs nothing), "rate_limited"
    (slurmctld asks this user to slow down), "timeout", "unreadable" (it answered, in a form this
    code cannot read: it is answering, so "not answering" would send the user after the daemon),
    "empty" (it answered with no row of jobs Slurm listed before: nothing said of their tasks),
    "forgotten" (the controller says it knows no such job, which accounting still has running or
    waiting: it ended, and accounting never filed how), or "other".
    """

    def __init__(self, message: str, kind: str = "other", jobs: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.jobs = tuple(jobs)    # the jobs an "empty" answer named none of


def slurm_env() -> dict[str, str]:
    """The environment of a Slurm client: a pending array's task list whole (Slurm cuts it past 64
    characters to `12_[7,17,...,204,...]`, a retry's scattered values, which no parser can expand),
    times as we parse them, and none of the user's SQUEUE_*/SACCT_* defaults: `SQUEUE_ARRAY` is
    `-r` (see `squeue_argv`), and a partition, user or name filter left tasks out of the answer,
    which a watch then reads as cancelled."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SQUEUE_", "SACCT_"))}
    return {**env, "SLURM_BITSTR_LEN": "0", "SLURM_TIME_FORMAT": "standard"}


def run_command(argv: Sequence[str], timeout: float = COMMAND_TIMEOUT,
                stop: threading.Event | None = None) -> CommandResult:
    """Run one Slurm client in the environment of `slurm_env` (see `backends.client.run_client`)."""
    from backends.client import run_client   # only once a client runs: a local record's status runs none

    return run_client(argv, timeout, stop, slurm_env())
