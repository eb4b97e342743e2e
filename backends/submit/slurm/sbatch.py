"""Submitting a plan to Slurm: write each window's batch script, sbatch it, save the record.

The pure parts (script text, sbatch argv, windows) come from the plan; this
module only runs sbatch and makes the record of what it answered. Saving it as
an attempt is `backends.launch_slurm.submit`; waiting is `backends.watch.wait`;
the synchronous ``hyperion-submit slurm`` that joins both is
`backends.launch_slurm.run_slurm`.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from backends.cluster import clusters_of, is_cluster_name
from backends.fileio import umask_mode
from backends.logheader import iso_now
from backends.printable import printable
from backends.job_id import JOB_ID
from backends.ranges import Window
from backends.records.attempts import NewAttempt
from backends.records.record import JobRecord, SubmitRecord, TaskRecord, reattach_command
from backends.submit.array import ArraySpec
from backends.submit.model import PlannedWindow, SubmitPlan, record_options
from backends.submit.site_options import OWNED_INPUT_VARIABLES


class SubmitError(RuntimeError):
    """sbatch refused a submission; the message is one line with its stderr and the script path.

    Windows sbatch accepted before a refusal are kept and recorded (`Refused`), not cancelled.
    `unanswered` is the script of an sbatch that did not answer in time (or exited 0 without a
    job id a site wrapper's banner hid): it may have queued the
    job unseen, which the caller finds by that script and cancels. `left_queued`: the jobs it
    found so that scancel refused: they may run, though no attempt records them. `maybe_queued`:
    the look for such a job failed (squeue did not answer), so whether one was queued is not known.
    """

    def __init__(self, message: str, unanswered: str | None = None, left_queued: tuple[str, ...] = (),
                 maybe_queued: bool = False) -> None:
        super().__init__(message)
        self.unanswered = unanswered
        self.left_queued = left_queued
        self.maybe_queued = maybe_queued


@dataclass(frozen=True)
class Refused:
    """sbatch refused a window after earlier ones were queued: those run, and their record says
    which values never went in (`windows`: the refused window and every one after it) and why."""

    error: SubmitError
    windows: tuple[PlannedWindow, ...]

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(value for window in self.windows for value in window.values)


SBATCH_TIMEOUT = 120.0   # seconds an sbatch may take (a busy controller answers late, having queued the job)
MAX_WARNING_LINES = 5    # of what an sbatch that queued the job said on stderr: the rest is counted
MAX_WARNING_CHARS = 300  # a line longer than that is cut
MAX_REFUSAL_CHARS = 2000  # of what an sbatch that refused the job said, its lines joined

Warn = Callable[[tuple[str, ...]], None]   # told the lines an sbatch that succeeded said on stderr


# --- planning the submissions (pure given the plan) -----------------------------------------

def task_records(plan: SubmitPlan, planned: PlannedWindow, job_id: str,
                 attempt: int = 1) -> list[TaskRecord]:
    """Where each task of one submitted window logs: the plan's log, Slurm's q/ files."""
    q = Path(plan.q_dir)
    logs = {task.value: task.log for task in plan.tasks}
    if not planned.values:
        return [TaskRecord(None, job_id, None, logs[None], str(q / f"slurm-{job_id}.out"),
                           str(q / f"slurm-{job_id}.err"), attempt)]
    return [TaskRecord(value, job_id, task, logs[value], str(q / f"slurm-{job_id}_{task}.out"),
                       str(q / f"slurm-{job_id}_{task}.err"), attempt)
            for value, task in zip(planned.values, Window(planned.offset, planned.values).physical)]


def make_record(plan: SubmitPlan, done: Sequence[tuple[PlannedWindow, str]],
                attempt: NewAttempt = NewAttempt(), refused: Refused | None = None,
                cluster: str | None = None) -> SubmitRecord:
    """The record of the submitted windows (`done`: each planned window with its job id).

    After a `refused` later window the record is that of the values that went in (its options'
    array narrowed to them, as if only they had been asked for: a retry reruns what ran), and it
    keeps the values left out and sbatch's refusal, which every face tells."""
    options = plan.options
    if refused is not None and options.array is not None:
        went_in = tuple(value for window, _ in done for value in window.values)
        options = replace(options, array=ArraySpec(options.array.name, went_in))
    return SubmitRecord(
        path=str(plan.record_path), backend="slurm", argv=tuple(plan.argv),
        cfg=os.path.abspath(options.cfg), options=record_options(options),
        script=str(done[0][0].script_path) if done else None,
        array_name=options.array.name if options.array is not None else None,
        jobs=tuple(JobRecord(job_id, w.offset, w.array_expression, w.held) for w, job_id in done),
        tasks=tuple(t for w, job_id in done for t in task_records(plan, w, job_id, attempt.number)),
        submitted_at=iso_now(), cwd=os.getcwd(), attempt=attempt.number, kind=attempt.kind,
        reattach=reattach_command(plan.record_path),
        rerun=shlex.join(plan.rerun) if plan.rerun else None,
        unsubmitted=refused.values if refused is not None else (),
        refused=str(refused.error) if refused is not None else None,
        cluster=cluster,
    )


def parse_job_id(stdout: str) -> str | None:
    """The job id from ``sbatch --parsable`` output (``1234`` or ``1234;cluster``)."""
    answer = parse_sbatch_answer(stdout)
    return answer[0] if answer is not None else None


def parse_sbatch_answer(stdout: str) -> tuple[str, str | None] | None:
    """The job id and the cluster sbatch --parsable named (``1234;NAME``, when the site file's
    --clusters sent the job to one; None for ``1234``, the local cluster); None when the last line
    is neither, or names a cluster that is not a plain Slurm name (it would reach squeue's argv)."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    job_id, semicolon, cluster = lines[-1].partition(";")
    if not JOB_ID.match(job_id):
        return None
    if not semicolon:
        return job_id, None
    return (job_id, cluster) if is_cluster_name(cluster) and "," not in cluster else None


# --- running sbatch -------------------------------------------------------------------------

def sbatch_warnings(stderr: str, job_id: str) -> tuple[str, ...]:
    """What an sbatch that queued `job_id` said on stderr (``sbatch: warning: ...``), as lines to
    show: each escaped and cut, at most MAX_WARNING_LINES and the count of the rest. A warning
    (a limit lowered, an option ignored) was dropped, though the job may run other than asked."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    shown = []
    for line in lines[:MAX_WARNING_LINES]:
        escaped = printable(line)     # cut once escaped: an escape is up to 10 characters
        if len(escaped) > MAX_WARNING_CHARS:
            escaped = f"{escaped[:MAX_WARNING_CHARS]}... ({len(line)} characters)"
        shown.append(f"sbatch said of job {job_id}: {escaped}")
    if len(lines) > MAX_WARNING_LINES:
        shown.append(f"sbatch said of job {job_id}: ... and {len(lines) - MAX_WARNING_LINES} more line(s)")
    return tuple(shown)


def _one_line(text: str) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


def sbatch_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without the SBATCH_* variables that would override what the plan asks for."""
    return {name: value for name, value in environ.items() if name not in OWNED_INPUT_VARIABLES}


def _sbatch(sub: PlannedWindow, site_file: str = "", warn: Warn | None = None) -> tuple[str, str | None]:
    """Run one sbatch (no shell); the job id and the cluster it names (None: the local one), or SubmitError naming the kept script (and, when
    the window's indices reach the cluster's MaxArraySize, the site key that splits them).
    What it said on stderr while queuing the job goes to `warn`, its lines at once."""
    from backends.client import OUTPUT_CAP, run_client

    done = run_client(sub.sbatch_argv, SBATCH_TIMEOUT, env=sbatch_environment(os.environ))
    if done.failure == "not found":
        where = f" (the site key sbatch_command in {site_file})" if site_file else " (the site key sbatch_command)"
        raise SubmitError(f"sbatch command not found: {sub.sbatch_argv[0]}{where}; script kept at {sub.script_path}")
    if done.failure in ("timeout", "too much"):     # it may have queued the job before it hung
        said = (f"did not answer within {SBATCH_TIMEOUT:g} s" if done.failure == "timeout"
                else f"printed more than {OUTPUT_CAP // 2**20} MiB, not read")
        raise SubmitError(f"{sub.sbatch_argv[0]} {said}; script kept at {sub.script_path}",
                          unanswered=sub.script_path)
    answer = parse_sbatch_answer(done.stdout) if done.returncode == 0 else None
    job_id, cluster = answer if answer is not None else (None, None)
    if job_id is None and done.returncode == 0:    # exit 0 is sbatch's "queued": it may run unseen
        said = _cut(_one_line(done.stdout) or _one_line(done.stderr) or "no output", MAX_REFUSAL_CHARS)
        raise SubmitError(f"{sub.sbatch_argv[0]} exited 0 without a job id ({said}); script kept at "
                          f"{sub.script_path}", unanswered=sub.script_path)
    if job_id is None:
        said = _cut(_one_line(done.stderr) or _one_line(done.stdout) or "no output", MAX_REFUSAL_CHARS)
        advice = _array_advice(sub, site_file) if "array" in said.lower() else None
        raise SubmitError(f"sbatch failed (exit {done.returncode}): {said}; script kept at {sub.script_path}"
                          f"{'; ' + advice if advice else ''}")
    said = sbatch_warnings(done.stderr, job_id) if warn is not None else ()
    if said:
        warn(said)
    return job_id, cluster


def _array_advice(sub: PlannedWindow, site_file: str) -> str | None:
    """Asked only after a refusal of an array window: the cluster's MaxArraySize and the
    `max_array_size` to set when the window's highest index reaches it (sbatch says only
    "Invalid job array specification"). None otherwise, or when the limit cannot be known."""
    if not sub.values:
        return None
    from backends.submit.slurm.max_array import array_advice, cluster_max_array_size

    highest = max(sub.values) - sub.offset
    return array_advice(highest, cluster_max_array_size(), site_file)


def _site_file(plan: SubmitPlan) -> str:
    """The site file as the user would name it: as typed, else relative to the working directory."""
    from backends.submit.array_limit import shown_path

    return plan.site.shown or (shown_path(plan.site.path) if plan.site.path else "")


def _write_script(sub: PlannedWindow) -> None:
    """Write the batch script with the mode the umask gives an executable (0700 under 077, 0755 under 022).

    It holds every ``--env`` value, so it must never be readable by others when
    the umask says so; an existing script keeps no wider mode from an earlier run,
    and a symlink planted at its path is refused (O_NOFOLLOW), not followed.
    """
    path = Path(sub.script_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o700)
    # surrogateescape: an argument or path that is not UTF-8 (argv decodes its bytes so) gets its bytes back
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
        os.fchmod(fd, umask_mode(executable=True))
        handle.write(sub.script)


def submit_windows(plan: SubmitPlan, warn: Warn | None = None
                   ) -> tuple[list[tuple[PlannedWindow, str]], Refused | None, str | None]:
    """Write the scripts and sbatch every window: each window queued with its job id, the
    refusal of a later window (None when all went in) and the cluster sbatch named (`clusters_of`). SubmitError when the first is refused:
    nothing was queued (or, `unanswered`, an sbatch that timed out may have queued it unseen).
    `warn` is told what each sbatch that queued its window said on stderr (`sbatch_warnings`)."""
    for sub in plan.windows:
        _write_script(sub)
    done: list[tuple[PlannedWindow, str]] = []
    clusters: list[str | None] = []
    site_file = _site_file(plan)
    for number, sub in enumerate(plan.windows):
        try:
            job_id, cluster = _sbatch(sub, site_file, warn)
        except SubmitError as err:
            if not done:
                raise
            return done, Refused(err, tuple(plan.windows[number:])), clusters_of(clusters)
        done.append((sub, job_id))
        clusters.append(cluster)
    return done, None, clusters_of(clusters)

