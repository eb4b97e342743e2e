"""sacct and squeue: the argv we run, running them, and parsing what they print.

sacct is authoritative once a task is in accounting, but it lags (a job's first
row appears 0.5-5 s after sbatch, a task's own row seconds after it started,
and it can say PENDING while the task runs); its pending-range row
(``11_[3-5%2]``) is stale for tasks that started since. ``squeue -t all`` asks
the controller, which is fresh and keeps ended tasks (with their wait status)
for MinJobAge, but knows nothing of older jobs. `merge` combines the two so a
task shows its freshest true state.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial

from backends.client import CommandResult
from backends.cluster import OnCluster
from backends.ranges import expand
from backends.states import EXIT_TOLD, REQUEUE_PRONE, JobState, TaskState
from backends.watch.ages import age_text
from backends.watch.usage import USAGE_FIELDS, Usage, controller_usage, parse_usage, with_live
# re-exported: what asks Slurm names them from here; what only may (a local record's status), from runner
from backends.watch.slurm.runner import COMMAND_TIMEOUT, QueryError, Runner, run_command, slurm_env  # noqa: F401

# The first 8 are required in every line; later ones (Reason, and whatever else is
# appended for other readers of the same single query) are read when present.
SACCT_FIELDS = ("JobID", "JobIDRaw", "State", "ExitCode", "Elapsed", "NodeList", "Start", "End",
                "Reason")
SACCT_REQUIRED = 8
# One sacct serves states and usage: the usage fields follow the state fields, and
# step rows (where MaxRSS lives) are asked for too.
QUERY_FIELDS = SACCT_FIELDS + tuple(f for f in USAGE_FIELDS if f not in SACCT_FIELDS)
# -O field:| = no padding, "|" after each field (so a line ends with "|").
# The last four are the request (controller_usage): what sacct would say of a running task's
# limits, in the same call.
SQUEUE_FIELDS = ("JobArrayID", "State", "exit_code", "TimeUsed", "NodeList", "Reason", "RestartCnt",
                 "TimeLimit", "NumCPUs", "tres-alloc", "NumNodes")
SQUEUE_REQUIRED = 5
SQUEUE_REQUEST_AT = SQUEUE_FIELDS.index("TimeLimit")
# States in which a task holds its CPUs; a pending reason means nothing for them.
_WAITING = frozenset({JobState.PENDING, JobState.REQUEUED, JobState.REQUEUE_HOLD,
                      JobState.REQUEUE_FED, JobState.SUSPENDED, JobState.RESV_DEL_HOLD})
# What squeue prints (rc 1) when none of the ids is known any more: for jobs that
# ended more than MinJobAge ago this is the normal answer, not a failure.
SQUEUE_UNKNOWN_JOB = "Invalid job id specified"

Key = tuple[str, "int | None"]
TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (as backends.client)
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")
    U = TypeVar("U")


LABELS = {"squeue": "controller (squeue)", "sacct": "accounting (sacct)", "scontrol": "controller (scontrol)"}


def source_problem(source: str, error: str, kind: str | None, age: float | None = None,
                   interval: float | None = None, what: str = "the watched tasks") -> str:
    """``accounting (sacct) not answering for 40 s: ...``: how every face says that a source failed
    (a watch's status line, `status` and `list`), `age` its seconds so far (None: said once, no age),
    `interval` the pace a rate-limited one is polled at, `what` the tasks an empty answer named none of."""
    label = LABELS.get(source, source)
    aged = f" for {age_text(age)}" if age is not None else ""
    if kind == "rate_limited":
        pace = f"; polling every {interval:.0f} s" if interval is not None else ""
        return f"{label} is rate-limiting our queries{f' ({aged[1:]})' if aged else ''}{pace}: {error}"
    if kind == "empty":
        return f"{label} lists none of {what}{f' ({aged[1:]})' if aged else ''}: {error}"
    if kind == "forgotten":
        return (f"{label} knows no {what}, which {LABELS['sacct']} still has running or waiting: it ended "
                f"and accounting never filed how (slurmdbd missed its end){f' ({aged[1:]})' if aged else ''}: {error}")
    if kind == "unreadable":
        return f"{label} answers in a form hyperion cannot read{f' ({aged[1:]})' if aged else ''}: {error}"
    return f"{label} not answering{aged}: {error}"


_UNREACHABLE = ("connection refused", "unable to contact slurm controller", "connect failure",
                "problem talking to the database", "unable to connect to database",
                "no route to host", "connection reset")


def error_kind(returncode: int, stderr: str) -> str:
    """Classify a failed sacct/squeue/scontrol by its exit status and message (see QueryError)."""
    text = stderr.lower()
    if "rate limit" in text:
        return "rate_limited"
    if returncode == 124 or "timed out" in text:
        return "timeout"
    if any(marker in text for marker in _UNREACHABLE):
        return "unreachable"
    return "other"


def _failure(tool: str, result: "CommandResult") -> QueryError:
    return QueryError(f"{tool} failed (rc {result.returncode}): {_first_line(result.stderr)}",
                      error_kind(result.returncode, result.stderr))


def stoppable(stop: threading.Event, timeout: float = COMMAND_TIMEOUT) -> Runner:
    """`run_command` ended by `stop` (QueryStopped, its process killed): the runner of a watch
    that someone may quit while Slurm does not answer."""
    return partial(run_command, timeout=timeout, stop=stop)


def sacct_argv(job_ids: Iterable[str]) -> list[str]:
    """All jobs at once: each task's allocation row and its step rows (for usage)."""
    return ["sacct", "-j", ",".join(job_ids), "--parsable2", "--noheader",
            "-o", ",".join(QUERY_FIELDS)]


def squeue_argv(job_ids: Iterable[str]) -> list[str]:
    """``-t all``: ended tasks too, while the controller keeps them. ``--array-unique``, not ``-r``:
    an array's waiting rest comes as its range row (``15_[67-467:50%1]``, whole under `slurm_env`),
    which `split_job_id` expands, and every task with a record of its own (started, requeued, held
    on its own) as its own row. ``-r`` lists a range with a step without its last task (Slurm 22.05:
    67 ... 417; a watch took 467 for cancelled while it waited, and it then ran); with neither flag a
    requeued task is folded into the range row, with its restart count 0 and a merged reason."""
    return ["squeue", "-j", ",".join(job_ids), "--array-unique", "-h", "-t", "all",
            "-O", ",".join(f"{name}:|" for name in SQUEUE_FIELDS)]


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


# Signal numbers Linux has; sacct puts markers of its own after the colon (0:125 for OUT_OF_MEMORY).
MAX_SIGNAL = 64


@lru_cache(maxsize=1024)
def parse_exit_code(text: str) -> tuple[int | None, int | None]:
    """sacct's ``code:signal`` -> (code, signal or None when 0).

    A number after the colon that is no signal is Slurm's marker: the task did not
    exit with a code (``0:125``, out of memory) and was not killed by that signal.
    """
    code, _, sig = text.strip().partition(":")
    try:
        exit_code = int(code)
        signal = int(sig) if sig else 0
    except ValueError:
        return None, None
    if signal > MAX_SIGNAL or signal < 0:
        return (exit_code or None), None
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


@dataclass(frozen=True)
class SacctRows:
    """sacct's answer split by how much each row can be trusted."""

    own: list[TaskState]      # rows naming one task (or a non-array job)
    ranged: list[TaskState]   # expanded from a pending-range row such as 11_[3-5%2]
    usage: dict[Key, Usage] = field(default_factory=dict)   # what each task used (QUERY_FIELDS answers)


def _reason(text: str | None, state: JobState) -> str | None:
    """Slurm's reason, kept only while the task waits to run ("None" means no reason)."""
    if text is None or state not in _WAITING:
        return None
    text = text.strip()
    return None if not text or text == "None" else text


def parse_sacct_rows(text: str) -> SacctRows:
    """Rows of `sacct_argv` output; a pending range gives one state per task.

    Step rows (``12_3.batch``, ``12.0``: present when the query asks for steps)
    are skipped; they carry usage, not the task's state. Raises ValueError on a
    line that is not sacct's.
    """
    ranged: list[TaskState] = []
    own: list[TaskState] = []
    width = len(QUERY_FIELDS)
    reason_at = SACCT_FIELDS.index("Reason")
    usage = _usage(text)
    for line in text.splitlines():
        if not line:
            continue
        fields = line.split("|")
        if not SACCT_REQUIRED <= len(fields) <= width:
            raise ValueError(f"unexpected sacct line: {line!r}")
        job_text = fields[0]
        if "." in job_text:
            continue
        state = _state(fields[2])
        code, sig = parse_exit_code(fields[3]) if state in EXIT_TOLD else (None, None)
        elapsed, node = parse_duration(fields[4]), _node(fields[5])
        reason = _reason(fields[reason_at] if len(fields) > reason_at else None, state)
        job, sep, task = job_text.partition("_")
        if sep and task.isdigit() and job.isdigit():   # the common row: one task
            own.append(TaskState(job, int(task), state, code, sig, elapsed, node, "sacct", reason))
            continue
        job, tasks = split_job_id(job_text)
        if tasks is None:
            own.append(TaskState(job, None, state, code, sig, elapsed, node, "sacct", reason))
        else:
            ranged.extend(TaskState(job, t, state, code, sig, elapsed, node, "sacct", reason)
                          for t in tasks)
    return SacctRows(own, ranged, usage)


def _usage(text: str) -> dict[Key, Usage]:
    """Usage per task when the answer has the usage columns (older, narrower answers: none)."""
    first = next((line for line in text.splitlines() if line), "")
    if first.count("|") + 1 != len(QUERY_FIELDS):
        return {}
    return parse_usage(text, QUERY_FIELDS)


def parse_sacct(text: str) -> list[TaskState]:
    """All of sacct's rows, range rows first (so a task's own row comes after)."""
    rows = parse_sacct_rows(text)
    return rows.ranged + rows.own


def wait_status(status: int) -> tuple[int | None, int | None]:
    """squeue's exit_code is a wait(2) status: (exit code, signal or None); Slurm's markers as in sacct."""
    code, signal = status >> 8, status & 0x7F
    if signal > MAX_SIGNAL:      # 125: out of memory, no signal and no code of the task's own
        return (code or None), None
    return code, signal or None


@dataclass(frozen=True)
class SqueueRows:
    """squeue's answer: each task's state, and its time used and request where the answer has them."""

    states: list[TaskState]
    usage: dict[Key, Usage] = field(default_factory=dict)
    # squeue's own "Invalid job id specified" (exit 1): the controller answered that it knows none of
    # the ids (it says so of one id; of several it prints nothing, exit 0)
    unknown_ids: bool = False


def parse_squeue(text: str) -> list[TaskState]:
    """Rows of `squeue_argv` output -> task states (source "squeue")."""
    return parse_squeue_rows(text).states


def parse_squeue_rows(text: str) -> SqueueRows:
    """Rows of `squeue_argv` output -> task states (source "squeue") and `controller_usage`."""
    out: list[TaskState] = []
    usage: dict[Key, Usage] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) < SQUEUE_REQUIRED:
            raise ValueError(f"unexpected squeue line: {line!r}")
        job, tasks = split_job_id(fields[0])
        state = _state(fields[1])
        code = sig = None
        if state in EXIT_TOLD and fields[2].strip().isdigit():
            code, sig = wait_status(int(fields[2]))
        elapsed, node = parse_duration(fields[3]), _node(fields[4])
        reason = _reason(fields[5] if len(fields) > 5 else None, state)
        restarts = fields[6].strip() if len(fields) > 6 else ""
        restart_count = int(restarts) if restarts.isdigit() else None
        used = controller_usage(fields[3], *fields[SQUEUE_REQUEST_AT:SQUEUE_REQUEST_AT + 4]) \
            if len(fields) >= SQUEUE_REQUEST_AT + 4 else None
        for task in tasks if tasks is not None else (None,):
            out.append(TaskState(job, task, state, code, sig, elapsed, node, "squeue",
                                 reason, restart_count))
            if used is not None:
                usage[(job, task)] = used
    return SqueueRows(out, usage)


def merge(sacct: SacctRows | Iterable[TaskState], squeue: Iterable[TaskState], *,
          one_look: bool = False) -> dict[Key, TaskState]:
    """Freshest true state per task, sacct and squeue asked in either order or at once (`at_once`):
    between the two answers a waiting task can only start or end, which the rules below take from
    whichever source saw it, so the worst is a state a moment old.

    squeue's row (the controller's view) > sacct's own non-terminal row >
    sacct's pending-range row; sacct's own terminal row wins over squeue only
    while the controller still says COMPLETING or has ended the task too (it
    reaches accounting as the job completes). A terminal accounting row of an
    earlier attempt (NODE_FAIL, PREEMPTED, REQUEUED) never ends a task the
    controller has queued again: squeue then says PENDING/RUNNING (with a
    higher RestartCnt), and that is what the task is. An array job's own row is no task
    (`without_array_job_rows`).

    `one_look` (a `status`, not a watch): a task accounting's range row still has waiting is not
    taken from it when the controller listed its job and names the task nowhere. The controller's
    range row (whole, `squeue_argv`) holds every task still waiting, and accounting lags it: right
    after `scancel J_5` of a waiting task squeue said `J_[3-4,6-8%2]`, sacct still `J_[3-8%2]`, and
    `status J` showed J_5 `PENDING (JobArrayTaskLimit)`, a task nothing will start. A watch keeps
    that row: seeing the task listed, then gone, is how it tells it was cancelled while pending.
    """
    rows = sacct if isinstance(sacct, SacctRows) else SacctRows(list(sacct), [])
    live = {t.key: t for t in squeue}
    listed = {job for job, _ in live} if one_look else set()
    merged: dict[Key, TaskState] = {t.key: t for t in rows.ranged
                                    if t.state.is_terminal or t.job_id not in listed}
    merged.update(live)
    for task in rows.own:
        fresh = live.get(task.key)
        if fresh is None:
            merged[task.key] = task
        elif task.state.is_terminal and _ended_in_controller(task, fresh):
            merged[task.key] = _with_restarts(controller_code(task, fresh), fresh.restart_count)
    return without_array_job_rows(merged)


def without_array_job_rows(states: dict[Key, TaskState]) -> dict[Key, TaskState]:
    """`states` less the row of an array job itself, with no task id, when they name its tasks.

    For 2-5 s after ``scancel`` of an array accounting has not filed as a range yet (cancelled
    right after sbatch, or as its first task started), accounting's only row is the array job's
    own (``7746|7746|CANCELLED by 0``, no task) while the controller lists the tasks (7746_1
    COMPLETING): taken for a task, a 3-task array read "4 tasks". A plain job has no task rows,
    and keeps its single row.
    """
    bare = {job for job, task in states if task is None}
    if not bare:
        return states
    arrays = {job for job, task in states if task is not None and job in bare}
    return {key: state for key, state in states.items() if key[1] is not None or key[0] not in arrays}


def controller_code(final: TaskState, live: TaskState) -> TaskState:
    """Accounting's row with the controller's exit code and signal when both tell the same end.

    squeue gives the raw wait status the batch script returned; slurmdbd (22.05)
    files an exit status above 128 by its low bits: a script ending 137 after
    its task's SIGKILL is 137 in squeue, the log's footer and the ledger, but
    ``9:0`` in sacct, and hyperion-submit said "exit code 9".
    """
    if live.state is not final.state or (live.exit_code is None and live.signal is None):
        return final
    return replace(final, exit_code=live.exit_code, signal=live.signal)


def _ended_in_controller(final: TaskState, live: TaskState) -> bool:
    """Whether the controller's row agrees that the attempt `final` reports has ended."""
    if live.state.is_terminal:
        return True
    return live.state is JobState.COMPLETING and final.state not in REQUEUE_PRONE


def _with_restarts(task: TaskState, restart_count: int | None) -> TaskState:
    if restart_count is None or task.restart_count == restart_count:
        return task
    return TaskState(task.job_id, task.task_id, task.state, task.exit_code, task.signal,
                     task.elapsed, task.node, task.source, task.reason, restart_count)


def accounting_only(sacct: SacctRows) -> dict[Key, TaskState]:
    """What sacct alone may say while squeue does not answer.

    Its own rows, except an end Slurm may undo by requeueing (NODE_FAIL,
    PREEMPTED, BOOT_FAIL): only the controller knows whether the task runs
    again. Range rows are returned too (the poller uses them for unseen tasks).
    """
    out: dict[Key, TaskState] = {t.key: t for t in sacct.ranged}
    for task in sacct.own:
        if task.state not in REQUEUE_PRONE:
            out[task.key] = task
    return out


def range_only(sacct: SacctRows, squeue: Iterable[TaskState]) -> set[Key]:
    """Keys whose merged state comes only from a (possibly stale) pending-range row."""
    named = {t.key for t in sacct.own} | {t.key for t in squeue}
    return {t.key for t in sacct.ranged} - named


def run_sacct(job_ids: Sequence[str], runner: Runner = run_command) -> SacctRows:
    """Raises QueryError when sacct fails or prints something we cannot read."""
    result = runner(sacct_argv(job_ids))
    if result.returncode != 0:
        raise _failure("sacct", result)
    try:
        return parse_sacct_rows(result.stdout)
    except ValueError as exc:
        raise QueryError(f"sacct: {exc}", "unreadable") from None


def run_squeue(job_ids: Sequence[str], runner: Runner = run_command) -> list[TaskState]:
    """Jobs squeue no longer knows give no rows; other failures raise QueryError."""
    return run_squeue_rows(job_ids, runner).states


def run_squeue_rows(job_ids: Sequence[str], runner: Runner = run_command) -> SqueueRows:
    """`run_squeue`, with what the controller says of each task's time used and request."""
    result = runner(squeue_argv(job_ids))
    if result.returncode != 0:
        if SQUEUE_UNKNOWN_JOB in result.stderr:
            return SqueueRows([], unknown_ids=True)
        raise _failure("squeue", result)
    try:
        return parse_squeue_rows(result.stdout)
    except ValueError as exc:
        raise QueryError(f"squeue: {exc}", "unreadable") from None


@dataclass(frozen=True)
class LiveJob:
    """One row of the user's squeue (array tasks may be grouped)."""

    job_id: str       # as squeue prints it: "12", "12_3", "12_[4-9%2]"
    state: JobState
    elapsed: float | None
    node: str | None
    name: str
    cluster: str | None = None    # the named cluster squeue -M was asked (a site file's --clusters); None: the local one


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
        raise _failure("squeue", result)
    return parse_user_squeue(result.stdout)


def script_jobs_argv(user: str) -> list[str]:
    """The user's live jobs with the batch script each runs (arrays grouped: one line per job and
    state; %F is the array's job id, for its tasks too)."""
    return ["squeue", "-u", user, "-h", "-o", "%F|%T|%o"]


def jobs_running_scripts(scripts: Collection[str], user: str, runner: Runner = run_command) -> list[str]:
    """The live jobs of `user` whose batch script is one of `scripts` (real paths), sorted; QueryError
    when squeue fails. How a job sbatch queued is found when its id never reached a record.

    A job only COMPLETING is not counted: it was cancelled or ended, and its history says so (a
    retry right after a cancel was refused for it).
    """
    result = runner(script_jobs_argv(user))
    if result.returncode != 0:
        raise _failure("squeue", result)
    found = set()
    for line in result.stdout.splitlines():
        job, state, command = (line.split("|", 2) + ["", ""])[:3]
        if job.strip().isdigit() and state.strip() != "COMPLETING" \
                and os.path.realpath(command.strip()) in scripts:
            found.add(job.strip())
    return sorted(found, key=int)


def snapshot(job_ids: Sequence[str], runner: Runner = run_command) -> dict[Key, TaskState]:
    """One sacct and one squeue for `job_ids`, merged (QueryError on failure)."""
    return query(job_ids, runner).states


def live_job_ids(squeue_rows: Iterable[TaskState]) -> frozenset[str]:
    """The jobs the controller lists a task not ended of (`Snapshot.live_jobs`)."""
    return frozenset(t.job_id for t in squeue_rows if not t.state.is_terminal)


def accounted_job_ids(sacct: SacctRows) -> frozenset[str]:
    """The jobs with a row in accounting, a task's own or a range's (`Snapshot.accounted_jobs`)."""
    return frozenset(t.job_id for t in (*sacct.own, *sacct.ranged))


@dataclass(frozen=True)
class Snapshot:
    """One sacct and one squeue: every task's freshest state and what the ended ones used."""

    states: dict[Key, TaskState]
    usage: dict[Key, Usage]                       # accounting's: what is recorded
    live: dict[Key, Usage] = field(default_factory=dict)   # squeue's time used and request
    live_jobs: frozenset[str] | None = None       # jobs the controller lists a task not ended of; None: not asked
    accounted_jobs: frozenset[str] = frozenset()  # jobs with a row in accounting (a task's own or a range's)
    # unended tasks of jobs the controller forgot while accounting has them running ("forgotten"):
    # dropped from `states`, not known (UNKNOWN); `status J` of a job no record names shows them
    unknown: frozenset[Key] = frozenset()

    def shown_usage(self) -> dict[Key, Usage]:
        """What to show of each task's usage (`with_live`): squeue's time used first."""
        return with_live(self.usage, self.live)


def query(job_ids: Sequence[str], runner: Runner = run_command, *, controller: bool = True,
          controller_also: Sequence[str] = (), lagging: bool = False) -> Snapshot:
    """States and usage of `job_ids` (QueryError on failure); without `controller`, sacct only.
    `controller_also`: jobs only squeue is asked about, in the same call (ended tasks it may have
    queued again, whose ends accounting would only repeat). `lagging`: accounting's waiting tasks
    the controller no longer names are kept (`merge`'s `one_look` off), for a look that starts a watch."""
    sacct = run_sacct(job_ids, runner)
    if not controller:     # with the jobs accounting has rows of: whether it named a job (`unnamed_jobs`)
        return Snapshot(accounting_only(sacct), sacct.usage, accounted_jobs=accounted_job_ids(sacct))
    asked = [*job_ids, *(job for job in controller_also if job not in job_ids)]
    squeue = run_squeue_rows(asked, runner)
    return Snapshot(merge(sacct, squeue.states, one_look=not lagging), sacct.usage, squeue.usage,
                    live_job_ids(squeue.states), accounted_job_ids(sacct))


Failed = list[tuple[str, QueryError]]   # (source, why) of each query that gave no answer to take


@dataclass(frozen=True)
class Told:
    """One look at `job_ids` (squeue asked about `asked`): each source's answer, or why it gave none.
    `ask_at_once` takes it, `query_what_answers` reads it; a command that asked already (`status J`
    finding out whether J is an array task's own id) hands it on instead of asking again."""

    job_ids: tuple[str, ...]
    asked: tuple[str, ...]
    sacct: SacctRows | None
    sacct_err: QueryError | None
    squeue: SqueueRows | None
    squeue_err: QueryError | None


def ask_at_once(job_ids: Sequence[str], runner: Runner = run_command, *, controller_also: Sequence[str] = (),
                not_again: Told | None = None) -> Told:
    """sacct about `job_ids` and squeue about them and `controller_also`, at once (`at_once`). A
    source that gave no answer in `not_again`, a look a moment ago in the same command, is not asked
    again: its failure stands (a hung squeue was waited for twice, 60 s where `status` promises one
    timeout)."""
    asked = [*job_ids, *(job for job in controller_also if job not in job_ids)]
    sacct_failed = not_again.sacct_err if not_again is not None else None
    squeue_failed = not_again.squeue_err if not_again is not None else None
    ask_sacct = partial(_answer, run_sacct, job_ids) if sacct_failed is None else lambda run: (None, sacct_failed)
    ask_squeue = partial(_answer, run_squeue_rows, asked) if squeue_failed is None else lambda run: (None, squeue_failed)
    if sacct_failed is not None or squeue_failed is not None:      # one to ask at most: no thread
        (sacct, sacct_err), (squeue, squeue_err) = ask_sacct(runner), ask_squeue(runner)
    else:
        (sacct, sacct_err), (squeue, squeue_err) = at_once(runner, ask_sacct, ask_squeue)
    return Told(tuple(job_ids), tuple(asked), sacct, sacct_err, squeue, squeue_err)


def ask_controller(job_ids: Sequence[str], runner: Runner, accounting: SacctRows) -> Told:
    """A look at `job_ids` whose accounting answer was had a moment ago (`accounting`, its rows of
    them): squeue alone is asked. `status RECORD` of a record whose job accounting purged asked sacct
    the same question twice in a row (3 queries where 2 tell as much)."""
    squeue, squeue_err = _answer(run_squeue_rows, job_ids, runner)
    return Told(tuple(job_ids), tuple(job_ids), accounting, None, squeue, squeue_err)


def query_what_answers(job_ids: Sequence[str], runner: Runner = run_command, *,
                       controller_also: Sequence[str] = (), told: Told | None = None) -> tuple[Snapshot, Failed]:
    """`query` for a look that shows what it can while a source fails (`status`, `list`): the
    Snapshot of the sources that answered, and why each other gave nothing to take. sacct and
    squeue are asked at once (`at_once`): with both hung, the wait is one timeout, not two.

    As the poller takes them: while squeue fails, accounting's rows stand in (`accounting_only`);
    while sacct fails, the controller's alone. An answer with no row of a job of `job_ids` (they
    have tasks without a recorded end, so Slurm queued them) is no answer ("empty", as the poller's
    `_check_listed`): squeue's, when accounting has the job still running or waiting, or has no row
    of it either (the controller forgets a job only MinJobAge after its end, accounting never); and
    sacct's, when squeue named none of it either. A site wrapper printing nothing, exit 0, showed
    the live tasks UNKNOWN (or accounting's stale word), and `list` "no live Slurm jobs", as the truth.
    A job neither names is no answer only while neither named any job asked and the controller, asked
    about that job alone, does not say it knows no such job (`controller_knows_none`): a job accounting
    purged, a mistyped record or another cluster's job made `status` exit 1 on every run for ever
    (and `list` show `?` and `live Slurm jobs: not known`), or, as an earlier attempt's, while its
    newest tasks ran. `told`: that look, already made (`ask_at_once`), of the same `job_ids`."""
    if told is None:
        told = ask_at_once(job_ids, runner, controller_also=controller_also)
    assert told.job_ids == tuple(job_ids), (told.job_ids, job_ids)
    asked = list(told.asked)
    sacct, sacct_err, squeue, squeue_err = told.sacct, told.sacct_err, told.squeue, told.squeue_err
    failed: Failed = [(source, err) for source, err in (("sacct", sacct_err), ("squeue", squeue_err))
                      if err is not None]
    accounted = accounted_job_ids(sacct) if sacct is not None else frozenset()
    if squeue is not None:
        listed = frozenset(t.job_id for t in squeue.states)
        running = frozenset(t.job_id for t in (*sacct.own, *sacct.ranged) if not t.state.is_terminal) \
            if sacct is not None else frozenset()
        mute = sacct is not None and not accounted and not listed and not squeue.unknown_ids
        silent = [j for j in job_ids if j not in listed and (j in running or mute)]
        if silent and mute and controller_knows_none(silent[0], runner):
            silent = []
        # A job the controller says it knows none of, while accounting has it running or waiting: it
        # ended (the controller forgets a job only MinJobAge after its end) and slurmdbd missed how.
        # Its tasks were shown RUNNING, "which may be behind", and every `status` exited 1 for ever.
        forgotten = [] if mute else forgotten_among(silent, running, listed, lambda j: squeue.unknown_ids
                                                    if len(asked) == 1 else controller_knows_none(j, runner))
        if forgotten:
            silent = [j for j in silent if j not in forgotten]
            failed.append(("squeue", QueryError(f"squeue -j {','.join(forgotten)} said {SQUEUE_UNKNOWN_JOB!r}",
                                                "forgotten", forgotten)))
        if silent:
            ids = ",".join(silent)
            said = (f"squeue -j {ids} said {SQUEUE_UNKNOWN_JOB!r}" if squeue.unknown_ids
                    else f"squeue -j {ids} exited 0 with no row")
            failed.append(("squeue", QueryError(said, "empty", silent)))
            unaccounted = [j for j in silent if j not in accounted]
            if sacct is not None and unaccounted:
                failed.append(("sacct", QueryError(f"sacct -j {','.join(unaccounted)} exited 0 with no row",
                                                   "empty", unaccounted)))
        live = live_job_ids(squeue.states)
        if sacct is not None:
            merged = merge(sacct, squeue.states, one_look=True)
            kept = without_forgotten(merged, forgotten) if forgotten else merged
            return Snapshot(kept, sacct.usage, squeue.usage, live, accounted,
                            frozenset(merged.keys() - kept.keys())), failed
        return Snapshot(merge(SacctRows([], []), squeue.states), {}, squeue.usage, live), failed
    if sacct is not None:
        return Snapshot(accounting_only(sacct), sacct.usage, accounted_jobs=accounted), failed
    return Snapshot({}, {}), failed


def _answer(ask: Callable[[Sequence[str], Runner], T], job_ids: Sequence[str],
            runner: Runner) -> tuple[T | None, QueryError | None]:
    """`ask`'s answer, or why it gave none."""
    try:
        return ask(job_ids, runner), None
    except QueryError as err:
        return None, err


def at_once(runner: Runner, first: Callable[[Runner], T], second: Callable[[Runner], U]) -> tuple[T, U]:
    """`first` and `second`, each running its own Slurm client with `runner`, at the same time:
    `second` in a thread. With sacct and squeue both hung, `status` and `list` waited 30 s for one
    and then 30 s for the other, saying nothing for a minute; now the wait is one timeout. Each
    client is still killed with its process group at its own timeout; on Ctrl-C (or any error
    in `first`) the other's is killed too (the default runner is made stoppable for that; another
    runner stops with its own stop event, a watch's), and nothing outlives the caller."""
    stop = threading.Event()
    run: Runner = runner
    if runner is run_command:
        run = stoppable(stop)
    elif isinstance(runner, OnCluster) and runner.runner is run_command:    # the default, asking a named cluster
        run = OnCluster(stoppable(stop), runner.cluster)
    told: dict[str, object] = {}

    def other() -> None:
        try:
            told["answer"] = second(run)
        except BaseException as err:      # QueryStopped after our stop, or a bug: re-raised below
            told["error"] = err

    thread = threading.Thread(target=other, name="slurm-query", daemon=True)
    thread.start()
    try:
        answer = first(run)
        thread.join()
    except BaseException:
        stop.set()
        thread.join()
        raise
    if "error" in told:
        raise told["error"]       # type: ignore[misc]
    return answer, told["answer"]  # type: ignore[return-value]


def forgotten_jobs(answer: Snapshot, runner: Runner = run_command) -> frozenset[str]:
    """The jobs `answer` (`query`'s) has a task not ended of while the controller listed no unended
    task of them, and that squeue, asked about each alone, says it knows none of ("Invalid job id
    specified"): they ended (the controller forgets a job only MinJobAge after its end) and
    accounting never filed how (slurmdbd missed its end). No task of theirs runs or will, as
    `status` and `watch` say them ("forgotten"). One squeue per such job, none in the usual case (a
    job accounting has running is listed by the controller); a squeue that fails or answers
    nothing (a site wrapper) forgets nothing, and so does an answer the controller was not asked for."""
    if answer.live_jobs is None:
        return frozenset()
    unended = sorted({key[0] for key, state in answer.states.items() if not state.state.is_terminal})
    return frozenset(forgotten_among(unended, unended, answer.live_jobs,
                                     lambda job: controller_knows_none(job, runner)))


def forgotten_among(jobs: Iterable[str], unended: Collection[str], listed: Collection[str],
                    knows_none: Callable[[str], bool]) -> list[str]:
    """The jobs of `jobs` the controller forgot while accounting has them running or waiting: the
    one rule of `status` (`query_what_answers`), `watch` (the poller) and a retry's look
    (`forgotten_jobs`). A job is forgotten when accounting has a task of it not ended (`unended`),
    the controller's answer does not list it (`listed`: the jobs it named, or named live), and
    squeue, asked about that job alone, says it knows no such job (`knows_none`:
    `controller_knows_none`, or the answer to that very question already had): it ended, as the
    controller forgets a job only MinJobAge after its end, and slurmdbd missed how. `knows_none`
    is asked only of a job the other two conditions hold for (one squeue each, none usually)."""
    return [job for job in jobs if job in unended and job not in listed and knows_none(job)]


def without_forgotten(states: Mapping[Key, TaskState], forgotten: Collection[str]) -> dict[Key, TaskState]:
    """`states` less the unended tasks of `forgotten` jobs (`forgotten_among`): accounting's word that
    they run or wait is stale, and they are not known; their ends stand."""
    return {key: state for key, state in states.items() if key[0] not in forgotten or state.state.is_terminal}


def controller_knows_none(job_id: str, runner: Runner) -> bool:
    """Whether squeue, asked about `job_id` alone, says it knows no such job ("Invalid job id
    specified"): what Slurm answers of one id, where of several it prints nothing, exit 0, as a
    wrapper answering nothing does. A squeue that fails says nothing of it (False)."""
    try:
        return run_squeue_rows([job_id], runner).unknown_ids
    except QueryError:
        return False


def failed_text(failed: Failed) -> str:
    """Each failed source in `source_problem`'s words, without an age (said once), `; `-joined."""
    return "; ".join(source_problem(source, str(err), err.kind,
                                    what=f"job(s) {','.join(err.jobs)}" if err.jobs else "the tasks asked about")
                     for source, err in failed)


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0].strip() if lines else "no message"


def scontrol_argv(slurm_id: str) -> list[str]:
    return ["scontrol", "show", "job", "-o", slurm_id]


def scontrol_words(line: str) -> dict[str, str]:
    """The KEY=VALUE words of one ``scontrol show job -o`` line, by key (a key said twice: its last
    value); a word without ``=`` is not one."""
    return dict(word.split("=", 1) for word in line.split() if "=" in word)


def parse_std_paths(text: str) -> tuple[str | None, str | None]:
    """StdOut= and StdErr= of a one-line ``scontrol show job -o`` answer."""
    words = scontrol_words(text)
    return words.get("StdOut") or None, words.get("StdErr") or None


@dataclass(frozen=True)
class JobFiles:
    """What slurmctld says of a job id: its stdout/stderr files, and, when the id is a whole
    array's (its tasks have ids of their own), the lowest task index it lists."""

    out: str | None = None
    err: str | None = None
    array_task: int | None = None


def whole_array_task(text: str, slurm_id: str) -> int | None:
    """The lowest task index of `scontrol show job -o` lines when `slurm_id` is their ArrayJobId:
    Slurm answers a whole array's id with one of its tasks (the last, or `%a` as 4294967294 while
    all pend), whose file is not the one a user asking for "the job's log" meant."""
    lowest = None
    for line in text.splitlines():
        words = scontrol_words(line)
        first = words.get("ArrayTaskId", "").split("-")[0].split(",")[0].split("%")[0].lstrip("[")
        if words.get("ArrayJobId") == slurm_id and first.isdigit():
            lowest = int(first) if lowest is None else min(lowest, int(first))
    return lowest


def job_std_paths(slurm_id: str, runner: Runner = run_command) -> JobFiles:
    """Slurm's stdout/stderr files of a job or task still known to slurmctld, else no files."""
    result = runner(scontrol_argv(slurm_id))
    if result.returncode != 0 or not result.stdout:
        return JobFiles()
    out, err = parse_std_paths(result.stdout.splitlines()[0])
    return JobFiles(out, err, whole_array_task(result.stdout, slurm_id))
