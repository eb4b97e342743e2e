"""sacct and squeue: the argv we run, running them, and parsing what they print.

sacct is authoritative once a task is in accounting, but it lags (a job's first
row appears 0.5-5 s after sbatch, and it can say PENDING while the task runs);
squeue is fresh but forgets a task the moment it ends. `merge` combines the two
so a task shows its freshest true state.
"""
from __future__ import annotations

import subprocess
from functools import lru_cache
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from backends.states import TERMINAL, JobState, TaskState
from sharding.ranges import expand

SACCT_FIELDS = ("JobID", "JobIDRaw", "State", "ExitCode", "Elapsed", "NodeList", "Start", "End")
SQUEUE_FORMAT = "%i|%T|%M|%N"
# What squeue prints (rc 1) when none of the ids is known any more: for jobs that
# ended more than MinJobAge ago this is the normal answer, not a failure.
SQUEUE_UNKNOWN_JOB = "Invalid job id specified"
COMMAND_TIMEOUT = 30.0

Key = tuple[str, "int | None"]


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[Sequence[str]], CommandResult]


class QueryError(RuntimeError):
    """sacct or squeue failed in a way worth retrying (rc, timeout, garbage)."""


def run_command(argv: Sequence[str], timeout: float = COMMAND_TIMEOUT) -> CommandResult:
    """Run one Slurm client; a missing binary or a timeout becomes a non-zero result."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return CommandResult(127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return CommandResult(124, "", f"{argv[0]} timed out after {timeout:g} s")
    return CommandResult(done.returncode, done.stdout, done.stderr)


def sacct_argv(job_ids: Iterable[str]) -> list[str]:
    """One allocation row per task (``-X``) for all jobs at once."""
    return ["sacct", "-j", ",".join(job_ids), "-X", "--parsable2", "--noheader",
            "-o", ",".join(SACCT_FIELDS)]


def squeue_argv(job_ids: Iterable[str]) -> list[str]:
    """``-r``: pending array tasks one per line instead of ``15_[2-6%1]``."""
    return ["squeue", "-j", ",".join(job_ids), "-r", "-h", "-o", SQUEUE_FORMAT]


def squeue_user_argv(user: str) -> list[str]:
    """The user's live jobs, arrays grouped (for ``hyperion-jobs list``)."""
    return ["squeue", "-u", user, "-h", "-o", "%i|%T|%M|%N|%j"]


def parse_duration(text: str) -> float | None:
    """``[D-]HH:MM:SS``, ``MM:SS``, ``SS`` (sacct and squeue spellings) -> seconds."""
    days, _, clock = text.strip().rpartition("-")
    try:
        total = 0
        for part in clock.split(":"):
            total = total * 60 + int(part)
        return float(total + (int(days) * 86400 if days else 0))
    except ValueError:   # INVALID, UNLIMITED, empty, fractions
        return None


@lru_cache(maxsize=256)
def _state(text: str) -> JobState:
    """JobState.parse, cached: a 10k-task answer repeats a handful of spellings."""
    return JobState.parse(text)


@lru_cache(maxsize=1024)
def parse_exit_code(text: str) -> tuple[int | None, int | None]:
    """sacct's ``code:signal`` -> (code, signal or None when 0)."""
    code, _, sig = text.strip().partition(":")
    try:
        exit_code = int(code)
        signal = int(sig) if sig else 0
    except ValueError:
        return None, None
    return exit_code, signal or None


def split_job_id(text: str) -> tuple[str, tuple[int, ...] | None]:
    """``11_2`` -> ("11", (2,)); ``11_[3-5%2]`` -> ("11", (3, 4, 5)); ``11`` -> ("11", None).

    Raises ValueError for anything else.
    """
    job, sep, task = text.strip().partition("_")
    if not job.isdigit():
        raise ValueError(f"not a job id: {text!r}")
    if not sep:
        return job, None
    if task.startswith("[") and task.endswith("]"):
        return job, expand(task[1:-1])
    if not task.isdigit():
        raise ValueError(f"not an array task id: {text!r}")
    return job, (int(task),)


def _node(text: str) -> str | None:
    text = text.strip()
    return None if not text or text in {"None assigned", "(null)"} else text


def parse_sacct(text: str) -> list[TaskState]:
    """Rows of `sacct_argv` output -> task states; a pending range gives one per task.

    Explicit task rows come after range rows, so a task that left the pending
    range keeps its own row. Raises ValueError on a line that is not sacct's.
    """
    ranged: list[TaskState] = []
    single: list[TaskState] = []
    width = len(SACCT_FIELDS)
    for line in text.splitlines():
        if not line:
            continue
        fields = line.split("|")
        if len(fields) != width:
            raise ValueError(f"unexpected sacct line: {line!r}")
        job_text = fields[0]
        state = _state(fields[2])
        code, sig = parse_exit_code(fields[3]) if state in TERMINAL else (None, None)
        elapsed, node = parse_duration(fields[4]), _node(fields[5])
        job, sep, task = job_text.partition("_")
        if sep and task.isdigit() and job.isdigit():   # the common row: one task
            single.append(TaskState(job, int(task), state, code, sig, elapsed, node, "sacct"))
            continue
        job, tasks = split_job_id(job_text)
        if tasks is None:
            single.append(TaskState(job, None, state, code, sig, elapsed, node, "sacct"))
        else:
            ranged.extend(TaskState(job, t, state, code, sig, elapsed, node, "sacct") for t in tasks)
    return ranged + single


def parse_squeue(text: str) -> list[TaskState]:
    """Rows of `squeue_argv` output -> task states (source "squeue", no exit code)."""
    out: list[TaskState] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) < 4:
            raise ValueError(f"unexpected squeue line: {line!r}")
        job, tasks = split_job_id(fields[0])
        state = _state(fields[1])
        elapsed = parse_duration(fields[2])
        node = _node(fields[3])
        for task in tasks if tasks is not None else (None,):
            out.append(TaskState(job, task, state, None, None, elapsed, node, "squeue"))
    return out


def merge(sacct: Iterable[TaskState], squeue: Iterable[TaskState]) -> dict[Key, TaskState]:
    """Freshest true state per task.

    sacct's terminal state wins over anything (squeue drops finished tasks);
    otherwise squeue's live state wins over sacct's lagging PENDING/RUNNING.
    """
    merged: dict[Key, TaskState] = {t.key: t for t in sacct}
    for live in squeue:
        known = merged.get(live.key)
        if known is None or not known.state.is_terminal:
            merged[live.key] = live
    return merged


def run_sacct(job_ids: Sequence[str], runner: Runner = run_command) -> list[TaskState]:
    """Raises QueryError when sacct fails or prints something we cannot read."""
    result = runner(sacct_argv(job_ids))
    if result.returncode != 0:
        raise QueryError(f"sacct failed (rc {result.returncode}): {_first_line(result.stderr)}")
    try:
        return parse_sacct(result.stdout)
    except ValueError as exc:
        raise QueryError(f"sacct: {exc}") from None


def run_squeue(job_ids: Sequence[str], runner: Runner = run_command) -> list[TaskState]:
    """Jobs squeue no longer knows give no rows; other failures raise QueryError."""
    result = runner(squeue_argv(job_ids))
    if result.returncode != 0:
        if SQUEUE_UNKNOWN_JOB in result.stderr:
            return []
        raise QueryError(f"squeue failed (rc {result.returncode}): {_first_line(result.stderr)}")
    try:
        return parse_squeue(result.stdout)
    except ValueError as exc:
        raise QueryError(f"squeue: {exc}") from None


@dataclass(frozen=True)
class LiveJob:
    """One row of the user's squeue (array tasks may be grouped)."""

    job_id: str       # as squeue prints it: "12", "12_3", "12_[4-9%2]"
    state: JobState
    elapsed: float | None
    node: str | None
    name: str


def parse_user_squeue(text: str) -> list[LiveJob]:
    out = []
    for line in text.splitlines():
        fields = line.split("|", 4)
        if len(fields) != 5:
            continue
        try:
            state = JobState.parse(fields[1])
        except ValueError:
            continue
        out.append(LiveJob(fields[0], state, parse_duration(fields[2]), _node(fields[3]), fields[4]))
    return out


def user_jobs(user: str, runner: Runner = run_command) -> list[LiveJob]:
    result = runner(squeue_user_argv(user))
    if result.returncode != 0:
        raise QueryError(f"squeue failed (rc {result.returncode}): {_first_line(result.stderr)}")
    return parse_user_squeue(result.stdout)


def snapshot(job_ids: Sequence[str], runner: Runner = run_command) -> dict[Key, TaskState]:
    """One sacct and one squeue for `job_ids`, merged (QueryError on failure)."""
    return merge(run_sacct(job_ids, runner), run_squeue(job_ids, runner))


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0].strip() if lines else "no message"


def filter_expected(states: Mapping[Key, TaskState],
                    expected: Mapping[str, tuple[int, ...] | None]) -> dict[Key, TaskState]:
    """Keep only tasks of the watched jobs (and, when listed, only the listed task ids)."""
    out: dict[Key, TaskState] = {}
    for key, state in states.items():
        if state.job_id not in expected:
            continue
        tasks = expected[state.job_id]
        if tasks is not None and state.task_id not in tasks:
            continue
        out[key] = state
    return out


def scontrol_argv(slurm_id: str) -> list[str]:
    return ["scontrol", "show", "job", "-o", slurm_id]


def parse_std_paths(text: str) -> tuple[str | None, str | None]:
    """StdOut= and StdErr= of a one-line ``scontrol show job -o`` answer."""
    out = err = None
    for word in text.split():
        if word.startswith("StdOut="):
            out = word[len("StdOut="):] or None
        elif word.startswith("StdErr="):
            err = word[len("StdErr="):] or None
    return out, err


def job_std_paths(slurm_id: str, runner: Runner = run_command) -> tuple[str | None, str | None]:
    """Slurm's stdout/stderr files of a job or task still known to slurmctld, else (None, None)."""
    result = runner(scontrol_argv(slurm_id))
    if result.returncode != 0:
        return None, None
    return parse_std_paths(result.stdout.splitlines()[0] if result.stdout else "")
