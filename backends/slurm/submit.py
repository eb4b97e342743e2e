"""Running a plan on Slurm: sbatch each window, wait for every task, report, cancel on a signal.

The pure parts (script text, sbatch argv, windows) come from the plan; this
module only runs processes and turns what Slurm reports into an `Outcome`.
`run_slurm(plan) -> int` is what ``hyperion-submit slurm`` calls.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TextIO

from backends.logheader import iso_now
from backends.record import JobRecord, SubmitRecord, TaskRecord, save_record
from backends.states import JobState, TaskState
from sharding.ranges import Window

if TYPE_CHECKING:
    from backends.plan import PlannedWindow, SubmitPlan
    from backends.poller import PollUpdate

PROG = "hyperion-submit"
INTERRUPTED = 130
# A synchronous submit watches one record: a short cap keeps the exit prompt.
POLL_CAP = 10.0


class SubmitError(RuntimeError):
    """sbatch refused a submission; the message is one line with its stderr and the script path."""


@dataclass(frozen=True)
class Outcome:
    """How a submission ended: `bad` lists every task that did not complete with code 0."""

    ok: bool
    bad: tuple[tuple[TaskRecord, TaskState], ...]
    exit_status: int


# --- planning the submissions (pure given the plan) -----------------------------------------

def task_records(plan: SubmitPlan, planned: PlannedWindow, job_id: str) -> list[TaskRecord]:
    """Where each task of one submitted window logs: the plan's log, Slurm's q/ files."""
    q = Path(plan.q_dir)
    logs = {task.value: task.log for task in plan.tasks}
    if not planned.values:
        return [TaskRecord(None, job_id, None, logs[None], str(q / f"slurm-{job_id}.out"),
                           str(q / f"slurm-{job_id}.err"))]
    return [TaskRecord(value, job_id, task, logs[value], str(q / f"slurm-{job_id}_{task}.out"),
                       str(q / f"slurm-{job_id}_{task}.err"))
            for value, task in zip(planned.values, Window(planned.offset, planned.values).physical)]


def make_record(plan: SubmitPlan, done: Sequence[tuple[PlannedWindow, str]]) -> SubmitRecord:
    """The record of the submitted windows (`done`: each planned window with its job id)."""
    from backends.plan import record_options
    options = plan.options
    return SubmitRecord(
        path=str(plan.record_path), backend="slurm", argv=tuple(plan.argv),
        cfg=os.path.abspath(options.cfg), options=record_options(options),
        script=str(done[0][0].script_path) if done else None,
        array_name=options.array.name if options.array is not None else None,
        jobs=tuple(JobRecord(job_id, w.offset, w.array_expression) for w, job_id in done),
        tasks=tuple(t for w, job_id in done for t in task_records(plan, w, job_id)),
        submitted_at=iso_now(), cwd=os.getcwd(),
    )


def parse_job_id(stdout: str) -> str | None:
    """The job id from ``sbatch --parsable`` output (``1234`` or ``1234;cluster``)."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    job_id = lines[-1].split(";", 1)[0]
    return job_id if job_id.isdigit() else None


# --- running sbatch -------------------------------------------------------------------------

def _one_line(text: str) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())


def _sbatch(sub: PlannedWindow) -> str:
    """Run one sbatch (no shell); the job id, or SubmitError naming the kept script."""
    try:
        done = subprocess.run(list(sub.sbatch_argv), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)
    except FileNotFoundError:
        raise SubmitError(f"sbatch command not found: {sub.sbatch_argv[0]}; script kept at {sub.script_path}") from None
    except subprocess.TimeoutExpired:
        raise SubmitError(f"{sub.sbatch_argv[0]} did not answer within 120 s; script kept at {sub.script_path}") from None
    job_id = parse_job_id(done.stdout) if done.returncode == 0 else None
    if job_id is None:
        said = _one_line(done.stderr) or _one_line(done.stdout) or "no output"
        raise SubmitError(f"sbatch failed (exit {done.returncode}): {said}; script kept at {sub.script_path}")
    return job_id


def _write_script(sub: PlannedWindow) -> None:
    path = Path(sub.script_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sub.script, encoding="utf-8")
    path.chmod(0o755)


def submit(plan: SubmitPlan) -> SubmitRecord:
    """Write the scripts, sbatch every window and save the record.

    If a window after the first is refused, the windows already queued are
    cancelled (so no half-submitted array runs) and the error says so.
    """
    for sub in plan.windows:
        _write_script(sub)
    done: list[tuple[PlannedWindow, str]] = []
    for sub in plan.windows:
        try:
            done.append((sub, _sbatch(sub)))
        except SubmitError as err:
            if not done:
                raise
            raise SubmitError(f"{err}; {_cancel_note([job for _, job in done])}") from None
    record = make_record(plan, done)
    save_record(record)
    return record


def _cancel_note(job_ids: Sequence[str]) -> str:
    from backends.slurm.cancel import CancelError, cancel
    try:
        cancel(list(job_ids))
    except (CancelError, OSError) as err:
        return f"could not cancel the windows already submitted ({', '.join(job_ids)}): {err}"
    return f"cancelled the windows already submitted: {', '.join(job_ids)}"


# --- waiting --------------------------------------------------------------------------------

def _state_of(task: TaskRecord, states: dict) -> TaskState:
    known = states.get((task.job_id, task.array_task_id))
    if known is None and task.array_task_id is None:
        known = next((s for (job, _), s in states.items() if job == task.job_id), None)
    return known or TaskState(task.job_id, task.array_task_id, JobState.PENDING, source="unknown")


def outcome_from(record: SubmitRecord, states: dict) -> Outcome:
    """Bad tasks: not COMPLETED, a non-zero exit code, or a missing program log."""
    bad = []
    for task in record.tasks:
        state = _state_of(task, states)
        good = state.state.is_success and not state.exit_code and os.path.exists(task.log)
        if not good:
            bad.append((task, state))
    return Outcome(not bad, tuple(bad), 1 if bad else 0)


def wait(record: SubmitRecord, observer: Callable[[PollUpdate], None] | None = None,
         stop: threading.Event | None = None) -> Outcome:
    """Poll until every task of `record` is terminal (or `stop` is set), then judge it."""
    from backends.jobs import expected
    from backends.poller import Poller
    poller = Poller(expected(record), cap=POLL_CAP)
    last = poller.run(observer or (lambda update: None), stop)
    return outcome_from(record, dict(last.states))


def task_label(task: TaskRecord, array_name: str | None) -> str:
    """``JOB=3 (job 1234_3)`` or ``job 1234``."""
    if task.array_task_id is None:
        return f"job {task.job_id}"
    return f"{array_name or 'task'}={task.value} (job {task.job_id}_{task.array_task_id})"


def report(outcome: Outcome, array_name: str | None = None) -> list[str]:
    """One line per bad task: what it was, how it ended and where its logs are."""
    lines = []
    for task, state in outcome.bad:
        how = state.state.value if state.source != "unknown" else "never reported by Slurm"
        if state.exit_code or state.state is JobState.FAILED:
            how += f" exit code {state.exit_code}"
        if state.signal:
            how += f" signal {state.signal}"
        if state.state.is_success and not os.path.exists(task.log):
            how += " but the log is missing"
        log = task.log if os.path.exists(task.log) else f"{task.log} (missing)"
        lines.append(f"{task_label(task, array_name)}: {how}; log {log}; "
                     f"slurm {task.slurm_out} {task.slurm_err}")
    return lines


# --- the synchronous command ----------------------------------------------------------------

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
    from backends.slurm.cancel import CancelError, cancel
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
              stop: threading.Event | None = None) -> int:
    """Submit `plan`, wait for every task, report bad tasks; the exit status for main.

    0 only if every task COMPLETED with exit code 0 and wrote its log; 1
    otherwise; 130 after SIGINT/SIGTERM, having cancelled everything
    submitted (or after `stop` was set by the caller). An sbatch refusal
    prints one line and gives 1.
    """
    from backends.progress import Progress
    err = err or sys.stderr
    stop = stop or threading.Event()
    with _stop_on_signals(stop):
        try:
            record = submit(plan)
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
