"""The synchronous runs that join both halves of the core: submit a plan, then wait for it.

``hyperion-submit``, ``hyperion-jobs retry``, the checkpoint retry bridge and
the console all come here to run a plan, and each run is a new attempt of its
output pattern (`backends.attempt`): `run_plan` runs it locally or on Slurm
and returns hyperion-submit's exit status; `submit` is sbatch for every
window with the windows already queued cancelled when a later one is refused;
`run_local_plan` runs a local plan holding the pattern until it ends.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence, TextIO

from backends.attempt import begin_attempt
from backends.records.record import SubmitRecord
from backends.submit.local.run import LocalEvent, print_event, run_local
from backends.submit.model import SubmitPlan
from backends.submit.slurm import sbatch
from backends.submit.slurm.sbatch import SubmitError
from backends.watch.progress import Progress
from backends.watch.slurm.cancel import CancelError, cancel
from backends.watch.wait import report, wait

PROG = "hyperion-submit"
INTERRUPTED = 130


def submit(plan: SubmitPlan, kind: str = "submit") -> SubmitRecord:
    """sbatch every window of `plan` as a new attempt and save its record.

    If a window after the first is refused, the windows already queued are
    cancelled (so no half-submitted array runs) and the error says so.
    InputError when the pattern's newest attempt still has live tasks.
    """
    try:
        with begin_attempt(plan, kind) as attempt:
            return sbatch.submit(plan, attempt)
    except SubmitError as err:
        if not err.queued:
            raise
        raise SubmitError(f"{err}; {_cancel_note(err.queued)}") from None


def _cancel_note(job_ids: Sequence[str]) -> str:
    try:
        cancel(list(job_ids))
    except (CancelError, OSError) as err:
        return f"could not cancel the windows already submitted ({', '.join(job_ids)}): {err}"
    return f"cancelled the windows already submitted: {', '.join(job_ids)}"


@contextmanager
def working_dir(path: str) -> Iterator[None]:
    """Run where the original was submitted: its command may use relative paths (stay put if it is gone)."""
    before = os.getcwd()
    os.chdir(path if os.path.isdir(path) else before)
    try:
        yield
    finally:
        os.chdir(before)


def run_local_plan(plan: SubmitPlan, on_event: Callable[[LocalEvent], None] | None = None,
                   kind: str = "submit") -> int:
    """Run a local plan as a new attempt, holding its output pattern until the last task ends."""
    with begin_attempt(plan, kind) as attempt:
        return run_local(plan, on_event, attempt)


def run_plan(plan: SubmitPlan, kind: str = "submit") -> int:
    """Run `plan` with its backend, synchronously, printing what hyperion-submit prints."""
    if plan.options.backend == "local":
        array_name = plan.options.array.name if plan.options.array else None
        return run_local_plan(plan, lambda event: print_event(event, array_name), kind)
    return run_slurm(plan, kind=kind)


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set `stop` instead of killing us, so we can cancel what we queued.

    Only the main thread may install handlers; elsewhere (a console worker)
    the caller's own `stop` is the way to interrupt.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda signum, frame: stop.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _cancel_all(record: SubmitRecord, err: TextIO) -> None:
    job_ids = [job.job_id for job in record.jobs]
    try:
        cancel(job_ids)
    except (CancelError, OSError) as exc:
        print(f"{PROG}: could not cancel {' '.join(job_ids)}: {exc}", file=err)
        return
    print(f"{PROG}: interrupted; cancelled job(s) {' '.join(job_ids)} ({len(record.tasks)} task(s))",
          file=err)


def _describe(record: SubmitRecord) -> str:
    jobs = ", ".join(f"{j.job_id}" + (f" (--array={j.array_expression}, offset {j.offset})"
                                      if j.array_expression else "") for j in record.jobs)
    return f"{PROG}: submitted job(s) {jobs}; record {record.path}"


def run_slurm(plan: SubmitPlan, err: TextIO | None = None,
              stop: threading.Event | None = None, kind: str = "submit") -> int:
    """Submit `plan`, wait for every task, report bad tasks; the exit status for main.

    0 only if every task COMPLETED with exit code 0 and wrote its log; 1
    otherwise; 130 after SIGINT/SIGTERM, having cancelled everything
    submitted (or after `stop` was set by the caller). An sbatch refusal
    prints one line and gives 1.
    """
    err = err or sys.stderr
    stop = stop or threading.Event()
    with _stop_on_signals(stop):
        try:
            record = submit(plan, kind)
        except SubmitError as exc:
            print(f"{PROG}: error: {exc}", file=err)
            return 1
        print(_describe(record), file=err, flush=True)
        progress = Progress(len(record.tasks), stream=err)
        try:
            outcome = wait(record, progress, stop)
        finally:
            progress.close()
        if stop.is_set():
            _cancel_all(record, err)
            return INTERRUPTED
    for line in report(outcome, record.array_name):
        print(f"{PROG}: {line}", file=err)
    if not outcome.ok:
        print(f"{PROG}: {len(outcome.bad)} of {len(record.tasks)} task(s) failed", file=err)
    return outcome.exit_status
