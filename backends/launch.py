"""The synchronous runs: a plan run as the next attempt of its output pattern, locally or on Slurm.

``hyperion-submit``, ``hyperion-jobs retry``, the checkpoint retry bridge and
the console all come here to run a plan, and each run is a new attempt of its
output pattern (`backends.attempt`): `run_plan` runs it locally or on Slurm
and returns hyperion-submit's exit status; `run_local_plan` runs a local plan
holding the pattern until it ends. The Slurm side (submit, wait, cancel) is
`backends.launch_slurm`, loaded only for Slurm plans.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from backends.attempt import LiveCheck, begin_attempt
from backends.errors import InputError
from backends.printable import printable
from backends.records.attempts import NewAttempt
from backends.records.record import SubmitRecord
from backends.submit.local.run import LocalEvent, Stop, print_event, run_local
from backends.submit.model import SubmitPlan


def check_submission_dir(path: str) -> None:
    """InputError when a rerun's submission directory is gone: run anywhere else, its command's
    relative paths would read and write another place's files."""
    if not os.path.isdir(path):
        raise InputError("record", f"its submission directory {printable(path)} is gone (or not a "
                         "directory): the rerun would run its command elsewhere; recreate it or submit anew")


def check_rerun(record: SubmitRecord) -> None:
    """InputError when `record` cannot be rerun as it stands: read from a folder moved or copied
    since (its options still name the original log pattern and submission directory, so a rerun
    would write there, under another history), or its submission directory is gone."""
    if record.moved is not None:
        old, new = (printable(p) for p in record.moved)
        raise InputError("record", f"{printable(record.path)} was written under {old} and moved or copied to "
                         f"{new}: a rerun would write {old}'s logs and history; rerun from there, "
                         "or submit anew")
    check_submission_dir(record.cwd)


@contextmanager
def working_dir(path: str) -> Iterator[None]:
    """Run where the original was submitted: its command may use relative paths."""
    check_submission_dir(path)
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_local_plan(plan: SubmitPlan, on_event: Callable[[LocalEvent], None] | None = None,
                   kind: str = "submit", on_begin: Callable[[], None] | None = None,
                   stop: Stop | None = None, on_attempt: Callable[[NewAttempt], None] | None = None,
                   live_check: LiveCheck | None = None) -> int:
    """Run a local plan as a new attempt, holding its output pattern until the last task ends
    (`stop`: how a caller off the main thread stops it, see run_local; `on_attempt`: told the
    attempt before its first task starts; `stop.stop` set while the checks before it ask Slurm ends
    them, nothing run: see `begin_attempt`)."""
    with begin_attempt(plan, kind, on_begin, live_check, stop.stop if stop is not None else None) as attempt:
        if on_attempt is not None:
            on_attempt(attempt)
        return run_local(plan, on_event, attempt, stop)


def run_plan(plan: SubmitPlan, kind: str = "submit", on_begin: Callable[[], None] | None = None,
             rerun: Sequence[str] | None = None, live_check: LiveCheck | None = None) -> int:
    """Run `plan` with its backend, synchronously, printing what hyperion-submit prints
    (`on_begin` first, once the rerun is not refused); after a failure, the command that
    reruns what failed: `rerun` when the launcher has its own (None: hyperion-jobs retry).
    `live_check`: how the rerun refuses live tasks (`begin_attempt`)."""
    if plan.options.backend == "local":
        from backends.watch.terminal import SafeStream

        from backends.retry_hint import local_retry_line, new_attempt_line

        array_name = plan.options.array.name if plan.options.array else None
        out, err = SafeStream(sys.stdout), SafeStream(sys.stderr)   # a reader gone stops the lines, not the run
        failed: list[LocalEvent] = []
        stopped: list[LocalEvent] = []   # the run stopped for a task's log (its own line said why)
        last: list[LocalEvent] = []      # the last task's start, then its end: where a Ctrl-C stopped it

        def on_event(event: LocalEvent) -> None:
            print_event(event, array_name, out, err)
            if event.kind == "end" and event.code != 0:
                failed.append(event)
            if event.kind == "stopped":
                stopped.append(event)
            if event.kind in ("start", "end"):
                last[:] = [event]

        def tell(line: str | None) -> None:
            if line:
                err.write(f"hyperion-submit: {line}\n")
                err.flush()

        def on_attempt(attempt: NewAttempt) -> None:
            tell(new_attempt_line(plan, attempt))

        try:
            status = run_local_plan(plan, on_event, kind, on_begin, on_attempt=on_attempt, live_check=live_check)
        except KeyboardInterrupt:
            # Ctrl-C, a hangup, SIGTERM: what a rerun needs is the task stopped (unless it had
            # COMPLETED) and the ones never reached, as after a failure; the caller says "interrupted"
            if last:
                tell(local_retry_line(plan, last[0].task.value, rerun, why="the run was stopped",
                                      include_stopped=last[0].kind == "start", kind=kind))
            raise
        line = local_retry_line(plan, failed[-1].task.value, rerun, kind=kind) if failed and status == 1 else None
        if stopped and status == 1:
            line = local_retry_line(plan, stopped[-1].task.value, rerun, include_stopped=stopped[-1].rerun,
                                    unreached_only=True, kind=kind)
        tell(line)
        return status
    from backends.launch_slurm import run_slurm  # the Slurm side loads only for Slurm plans

    return run_slurm(plan, kind=kind, on_begin=on_begin, rerun=rerun, live_check=live_check)
