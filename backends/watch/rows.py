"""Per-task status rows: a submission's history (or a bare job id) joined with Slurm's states.

`hyperion-jobs` and the console both show these rows; the records say which
tasks exist and where their logs are, the ledger holds every final state
seen so far, and Slurm says how the others are doing. Local tasks come from the
ledger's start and final lines (older local runs: q/<stem>.local.json).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
import os
import time
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from backends.logheader import iso_seconds
from backends.printable import printable
from backends.records.attempts import FinalState, TaskStart
from backends.records.history import History, load_history
from backends.records.local_results import read_results, results_key
from backends.records.record import LOCAL_JOB, SubmitRecord, TaskRecord
from backends.records.runner import child_running, runner_gone, runner_to_stop
from backends.states import EXIT_TOLD, JobState, TaskState, signal_name
from backends.watch.asked import asked_of, lacks_request, with_request
from backends.watch.usage import Usage, fill_in, usage_from_json

Key = tuple[str, "int | None"]
CHECK_SECONDS = 1.0   # how long an answer about a live runner holds
PEAK_GRACE = 3600.0   # seconds after a task's end its peak memory is still asked for


@dataclass(frozen=True)
class TaskRow:
    """One line of `hyperion-jobs status`: what was launched and how it is doing."""

    value: int | None            # logical array value (None: non-array or unknown)
    job_id: str
    task_id: int | None          # physical array index
    state: JobState | None       # None: not in Slurm's answers (yet) / not run locally
    exit_code: int | None
    signal: int | None
    elapsed: float | None
    node: str | None
    log: str | None
    slurm_out: str | None
    slurm_err: str | None
    attempt: int = 1                   # the attempt whose run this row shows
    reason: str | None = None          # Slurm's pending reason while it waits, or why it failed unrun
    restart_count: int | None = None   # times Slurm requeued it (None: not known)
    usage: Usage | None = None         # what it used and was allowed, once accounting says

    @property
    def slurm_id(self) -> str:
        return self.job_id if self.task_id is None else f"{self.job_id}_{self.task_id}"

    @property
    def state_label(self) -> str:
        if self.state is None:
            return "NOT_RUN" if self.job_id == "local" else "UNKNOWN"
        return self.state.value

    @property
    def ended_label(self) -> str:
        """`state_label`, with the signal that stopped a FAILED task: ``FAILED (SIGHUP)``, how `history`
        and the console's attempts count it apart from the programs that failed."""
        if self.signal and self.state is JobState.FAILED:
            return f"{self.state_label} ({signal_name(self.signal)})"
        return self.state_label

    @property
    def state_text(self) -> str:
        """The state with why it waits and how often it was requeued: ``PENDING (Priority)``,
        ``RUNNING (restart 1)``."""
        notes = [printable(self.reason)] if self.reason else []
        if self.restart_count:
            notes.append(f"restart {self.restart_count}")
        return self.state_label + (f" ({'; '.join(notes)})" if notes else "")

    @property
    def ok(self) -> bool:
        return self.state is JobState.COMPLETED and self.exit_code in (0, None)

    def to_json(self) -> dict:
        """As the tables show it: a task that never started has no elapsed time and used no CPU
        (null, not sacct's 0.0 of a task cancelled while pending, which the table shows as -)."""
        usage = (self.usage or Usage()).to_json()
        started = not never_started(self)
        if not started:
            usage.update(elapsed_seconds=None, cpu_seconds=None)
        return {"value": self.value, "job_id": self.job_id, "task_id": self.task_id,
                "slurm_id": self.slurm_id, "state": self.state_label, "exit_code": self.exit_code,
                "signal": self.signal, "elapsed": self.elapsed if started else None, "node": self.node,
                "log": self.log, "slurm_out": self.slurm_out, "slurm_err": self.slurm_err,
                "attempt": self.attempt, "reason": self.reason, "restart_count": self.restart_count, **usage}


def task_key(job_id: str, task_id: int | None, value: int | None = None) -> Key:
    """Slurm tasks by job and physical index; local tasks (job "local") by their value: a local run
    from before the ledger recorded no task id, so its tasks would all share one key."""
    return (LOCAL_JOB, value) if job_id == LOCAL_JOB else (job_id, task_id)


def never_started(row: TaskRow | TaskState) -> bool:
    """No node and no time: a task that never started, whatever the source says. squeue's 0:00 for a
    pending task and sacct's 00:00:00 for one cancelled while pending read as a run of no time (it
    showed 0:00:00 when the record was cancelled, - when the task alone was). Slurm gives no node to
    a task it never started (sacct's Start is no help: it holds the cancel's time). `hyperion-jobs
    status` and the console show no elapsed time for it."""
    return row.node is None and not row.elapsed


def said_path(path: str | None) -> str:
    """A log path as the report names it: a task cancelled while pending wrote none of its files,
    and Slurm's .out and .err were named as if there to read."""
    if path is None:
        return "-"
    return path if os.path.exists(path) else f"{path} (missing)"


def time_used(row: TaskRow | TaskState) -> float | None:
    """The time a task used, as the usage columns show it against its limit: None (``-``, not
    measured) for one that never started. squeue's 0:00 of a pending task read as
    ``00:00:00/00:01:00`` beside an ELAPSED of ``-``; `hyperion-jobs status` and the console's
    usage columns both take it from here."""
    used = getattr(row, "usage", None)
    if used is None or never_started(row):
        return None
    return used.elapsed_seconds


def expected(record: SubmitRecord) -> dict[str, tuple[int, ...] | None]:
    """Poller input for a record: each job id with its physical task ids."""
    return expected_tasks(record.tasks, [job.job_id for job in record.jobs])


def expected_tasks(tasks: Sequence[TaskRecord], jobs: Sequence[str] = ()) -> dict[str, tuple[int, ...] | None]:
    """Poller input for some tasks (of any attempts): each job id with its physical task ids."""
    out: dict[str, list[int] | None] = {job: [] for job in jobs}
    for task in tasks:
        bucket = out.setdefault(task.job_id, [])
        if task.array_task_id is None:
            out[task.job_id] = None
        elif bucket is not None:
            bucket.append(task.array_task_id)
    return {job: (tuple(sorted(ids)) if ids is not None else None) for job, ids in out.items()}


def record_rows(record: SubmitRecord, states: Mapping[Key, TaskState]) -> list[TaskRow]:
    """One row per record task, in record order; tasks Slurm has not reported stay UNKNOWN."""
    return [state_row(task, states.get((task.job_id, task.array_task_id)), task.log) for task in record.tasks]


def state_row(task: TaskRecord, state: TaskState | None, log: str | None, usage: Usage | None = None) -> TaskRow:
    """A task's row as Slurm's last word (`state`, None: not reported) tells it, its log at `log`."""
    return TaskRow(
        value=task.value, job_id=task.job_id, task_id=task.array_task_id,
        state=state.state if state else None, exit_code=state.exit_code if state else None,
        signal=state.signal if state else None, elapsed=state.elapsed if state else None,
        node=state.node if state else None, log=log, slurm_out=task.slurm_out,
        slurm_err=task.slurm_err, attempt=task.attempt, reason=state.reason if state else None,
        restart_count=state.restart_count if state else None, usage=usage)


def final_row(task: TaskRecord, final: FinalState, log: str | None, usage: Usage | None = None) -> TaskRow:
    """A row from the ledger: how the task ended, whether or not Slurm still knows it.

    Usage kept in the ledger wins; `usage` (accounting's, this instant) fills in
    what was not known when its end was written (all of it, or a peak told late).
    """
    try:
        state: JobState | None = JobState.parse(final.state)
    except ValueError:
        state = None
    kept = usage_from_json(final.usage) if final.usage else None
    told = task.job_id == LOCAL_JOB or state in EXIT_TOLD   # a Slurm kill's 0:15, kept before EXIT_TOLD, is not the program's
    return TaskRow(task.value, task.job_id, task.array_task_id, state, final.exit_code if told else None,
                   final.signal if told else None,
                   final.elapsed, final.node, log, task.slurm_out, task.slurm_err,
                   task.attempt, final.reason, final.restart_count, fill_in(kept, usage))


def pending_tasks(history: History) -> tuple[TaskRecord, ...]:
    """The latest task of each value that has no final state in the ledger yet."""
    return tuple(t for t in history.latest_tasks() if history.final(t) is None)


def unended_tasks(history: History) -> tuple[TaskRecord, ...]:
    """The Slurm tasks of every attempt (not only each value's newest) that have no final state in
    the ledger: a task a later attempt ran again before anyone saw it end is one of them."""
    return tuple(t for n in history.numbers for t in history.tasks_of(n)
                 if t.job_id != LOCAL_JOB and history.final(t) is None)


def history_rows(history: History, states: Mapping[Key, TaskState],
                 usage: Mapping[Key, Usage] | None = None) -> list[TaskRow]:
    """One row per value: its newest attempt's final state, else Slurm's (or the local runner's) word."""
    return [task_row(history, task, states, usage) for task in history.latest_tasks()]


def task_row(history: History, task: TaskRecord, states: Mapping[Key, TaskState],
             usage: Mapping[Key, Usage] | None = None) -> TaskRow:
    """How one task of one attempt is doing: the ledger's final state, else the runner's or Slurm's word."""
    log = history.log_of(task)
    final = history.final(task)
    key = (task.job_id, task.array_task_id)
    used = (usage or {}).get(key)
    if final is not None and not ran_again(final, states.get(key)):
        return with_plan(history, task, final_row(task, final, log, used))
    if task.job_id == LOCAL_JOB:
        return _local_row(history, task, log)
    return with_plan(history, task, state_row(task, states.get(key), log, used))


def with_plan(history: History, task: TaskRecord, row: TaskRow) -> TaskRow:
    """`row` with the memory request and time limit its attempt's record submitted where accounting
    has not given them: right after a task ended OUT_OF_MEMORY `status` showed `1.21M/-` and
    `00:00:01/-`, though the record knew it asked for 50M and 10 minutes. A task that ended without
    ever starting (cancelled while pending, told by `never_started`'s rule or a watch's) has no
    accounting row of its own and never will: it shows the request alone, `-/100M` and `-/00:10:00`,
    as Slurm's own row of its pending neighbours does, not `-` as if not asked yet."""
    if row.usage is None and ended_unstarted(row):
        row = replace(row, usage=Usage())
    if not lacks_request(row.usage):
        return row
    assert row.usage is not None
    return replace(row, usage=with_request(row.usage, asked_of(history.records.get(task.attempt, history.current))))


def ended_unstarted(row: TaskRow) -> bool:
    """A Slurm task that ended without ever starting (cancelled while pending): no node, no time."""
    return (row.job_id != LOCAL_JOB and row.state is not None and row.state.is_terminal
            and never_started(row))


NO_LOG = "no log (never started)"


def no_log(row: TaskRow) -> bool:
    """Whether `row` is a task that ended without ever starting (cancelled while pending, or a local
    value its run never reached, NOT_RUN) and left no log: it never opened one (`log_said` says
    NO_LOG of it; `.../r.3.log (missing)` read as a log that was lost)."""
    path = row.log or row.slurm_out
    unstarted = ended_unstarted(row) or row.state_label == "NOT_RUN"
    return path is not None and unstarted and not os.path.exists(path)


def log_said(row: TaskRow) -> str:
    """A row's log as `status` and `watch`'s end name it: ``PATH (missing)`` where no file is
    (`said_path`), and NO_LOG for a task that ended without ever starting (cancelled while pending):
    it never opened a log, and `q/slurm-J_4.out (missing)` read as a file lost."""
    return NO_LOG if no_log(row) else said_path(row.log or row.slurm_out)


def log_words(row: TaskRow) -> str:
    """`log_said` as a line's words, where a path follows the word `log`: ``log PATH``, ``log PATH
    (missing)``, and NO_LOG alone, which names no file (watch's and hyperion-submit's closing lines
    read `CANCELLED exit - log no log (never started)`)."""
    return NO_LOG if no_log(row) else f"log {said_path(row.log or row.slurm_out)}"


def rerun_by_default(rows: Sequence[TaskRow]) -> list[TaskRow]:
    """The rows a plain `hyperion-jobs retry RECORD` reruns: every one that did not complete with exit
    code 0, whatever its state (LOST and NOT_RUN alike). One rule for retry's choice and for the words
    that name it: watch's closing line said the retry "runs" the NOT_RUN values, where it reran a
    LOST (or FAILED) one too."""
    return [row for row in rows if not row.ok]


def ran_again(final: FinalState, state: TaskState | None) -> bool:
    """Whether Slurm ran the task again after the end the ledger holds (``scontrol requeue`` of an
    ended task): the controller counts one restart more than that end did. Accounting's rows carry no
    restart count, so only the controller's word reopens a final state."""
    return (state is not None and state.restart_count is not None
            and state.restart_count > (final.restart_count or 0))


def usage_missing(history: History, now: float | None = None) -> dict[Key, tuple[TaskRecord, Mapping | None]]:
    """Ended Slurm tasks (newest attempt per value) whose usage the ledger does not hold yet, with
    what it holds: nothing, or, for a task that ended less than PEAK_GRACE ago, usage without
    its peak memory (accounting gives a cancelled task's MaxRSS, on its batch step, a little
    after its end) or without its memory request (a job's own row shows no ReqMem for a few
    seconds after its end; retry --mem auto doubles that request). A cluster that never
    measures them is not asked for ever."""
    now = time.time() if now is None else now
    out: dict[Key, tuple[TaskRecord, Mapping | None]] = {}
    for task in history.latest_tasks():
        final = history.final(task)
        if final is None or task.job_id == LOCAL_JOB:
            continue
        usage = final.usage
        if usage:
            no_peak = usage.get("max_rss_bytes") is None and bool(final.elapsed)
            no_request = usage.get("req_mem_bytes") is None
            if not (no_peak or no_request) or now - (iso_seconds(final.time) or 0.0) >= PEAK_GRACE:
                continue
        out[(task.job_id, task.array_task_id)] = (task, usage or None)
    return out


def unknown_row(job_id: str, task_id: int | None) -> TaskRow:
    """A task of a bare job id with no state (UNKNOWN): one of a job the controller forgot while
    accounting has it running (`PollUpdate.unknown`, `Snapshot.unknown`), shown by `watch J` and `status J`."""
    return TaskRow(None, job_id, task_id, None, None, None, None, None, None, None, None)


def job_rows(states: Mapping[Key, TaskState], history: History | None = None,
             usage: Mapping[Key, Usage] | None = None, job: Key | None = None) -> list[TaskRow]:
    """Rows for a bare job id: every task Slurm knows, and every recorded task of `job` (a job id,
    and a task id or None for all) whether or not Slurm names it (`_job_keys`; UNKNOWN when neither
    Slurm nor the ledger tells its state), joined with its submission when we have it.

    A task of any attempt of `history` is found, with its log where it is now (a
    later rerun moved it aside), not the path a rerun reused. Its final state in the
    ledger wins, as in `status RECORD`: Slurm may have forgotten the task (a pending
    task cancelled before it started never gets an accounting row of its own).
    """
    numbers = history.numbers if history else ()
    by_key = {(t.job_id, t.array_task_id): t for n in numbers for t in history.tasks_of(n)}
    offsets = {j.job_id: j.offset for n in numbers for j in history.records[n].jobs}
    keys = set(states) | (_job_keys(by_key, job) if history and job else set())
    rows = []
    for key in sorted(keys, key=lambda k: (k[0], -1 if k[1] is None else k[1])):
        task = by_key.get(key)
        if task is not None:
            rows.append(task_row(history, task, states, usage))
            continue
        state = states[key]
        used = (usage or {}).get(key)
        value = key[1] + offsets[key[0]] if key[0] in offsets and key[1] is not None else None
        rows.append(TaskRow(value, key[0], key[1], state.state, state.exit_code, state.signal,
                            state.elapsed, state.node, None, None, None, reason=state.reason,
                            restart_count=state.restart_count, usage=used))
    return rows


def _job_keys(by_key: Mapping[Key, TaskRecord], job: Key) -> set[Key]:
    """The recorded tasks of `job` (all of the job's when its task id is None): each is a row, as in
    `status RECORD`, whether or not Slurm names it. A waiting task cancelled (`scancel J_5`) while
    the rest of its array ran is named by neither squeue nor sacct: `status J` left its row out
    (`7 tasks: PENDING 5, RUNNING 2` of 8) where `status RECORD` showed it UNKNOWN."""
    job_id, task_id = job
    return {key for key in by_key if key[0] == job_id and task_id in (None, key[1])}


def local_rows(record: SubmitRecord) -> list[TaskRow]:
    """Rows of a local submission (every attempt): tasks not reached are PENDING while the run goes on,
    NOT_RUN once it ended (it stops at the first failure).

    A RUNNING task whose runner process (on this host) is gone is LOST: it was
    killed before it could record the end, so its end will never come.
    """
    return history_rows(load_history(record.path, record), {})


def _local_row(history: History, task: TaskRecord, log: str | None) -> TaskRow:
    start = history.ledger.starts.get((task.attempt, task.value))
    if start is not None:
        gone = start_runner_gone(start)
        orphan = orphaned_child(history, task) if gone else None
        if orphan is not None:   # its runner was SIGKILLed; the task itself goes on, unwatched
            return TaskRow(task.value, task.job_id, task.array_task_id, JobState.RUNNING, None, None,
                           _elapsed(start.time, None), start.host or "localhost", log, None, None, task.attempt,
                           reason=f"its runner was killed; it runs on as process group {orphan}")
        state = JobState.LOST if gone else JobState.RUNNING
        elapsed = None if gone else _elapsed(start.time, None)
        return TaskRow(task.value, task.job_id, task.array_task_id, state, None, None, elapsed,
                       start.host or "localhost", log, None, None, task.attempt)
    if history.entry(task.attempt) is None:   # a local run from before the ledger
        return _legacy_local_row(history.record_path, task)
    waits = run_goes_on(history, task.attempt)    # tasks run in order: this one's turn is still to come
    return TaskRow(task.value, task.job_id, task.array_task_id, JobState.PENDING if waits else None, None, None,
                   None, None, log, None, None, task.attempt)


def start_runner_gone(start: TaskStart) -> bool:
    """Whether the runner a ledger `start` line names is certainly gone (see runner_gone)."""
    return runner_gone({"pid": start.pid, "host": start.host, "pid_start": start.pid_start})


def orphaned_child(history: History, task: TaskRecord) -> int | None:
    """The task's process group (its first process's pid) if it still runs although its runner is gone."""
    start = history.ledger.starts.get((task.attempt, task.value))
    child = history.ledger.children.get((task.attempt, task.value))
    if start is None or child is None:
        return None
    return child.pid if child_running(child.pid, child.pid_start, start.host, history.ledger.owner) else None


def run_goes_on(history: History, attempt: int) -> bool:
    """The local run of `attempt` has not ended: not closed, and the runner of its newest task lives.

    Asked once per waiting task; the answer is kept on the ledger for a second,
    so a 100000-task table costs one check of the runner, not one per row.
    """
    ledger = history.ledger
    if attempt in ledger.closed:
        return False
    known = ledger.checks.get(("run", attempt))
    now = time.monotonic()
    if known is not None and now - known[1] < CHECK_SECONDS:
        return known[0]
    start = ledger.last_start.get(attempt)
    alive = start is not None and not start_runner_gone(start)
    ledger.checks[("run", attempt)] = (alive, now)
    return alive


def live_runner(history: History) -> TaskStart | None:
    """The ledger's `start` line of the newest attempt's local run while that run goes on here, its
    runner the process it names: `hyperion-jobs cancel` tells whom to stop (Slurm's scancel cannot)."""
    number = history.numbers[-1] if history.numbers else None
    if number is None or not run_goes_on(history, number):
        return None
    start = history.ledger.last_start.get(number)
    if start is None or not runner_to_stop(start.pid, start.pid_start, start.host, history.ledger.owner):
        return None
    return start


def local_cancel_text(name: str, history: History) -> str:
    """Why local run `name` is not cancelled, and how to stop it: its runner's pid while it runs here."""
    start = live_runner(history)
    if start is None:
        group = _orphan_of_newest(history)
        if group is not None:
            return (f"{name} is a local run whose runner was killed; its task runs on as process group {group}: "
                    f"kill -- -{group} ends it")
        return f"{name} is a local run and nothing of it runs; nothing to cancel"
    return (f"{name} is a local run, not Slurm's: stop it with Ctrl-C where it runs, or kill {start.pid} "
            f"(its runner on {start.host}; the task is stopped and recorded, exit 143)")


def _orphan_of_newest(history: History) -> int | None:
    """The process group of the newest attempt's last started task, if it runs on without its runner."""
    number = history.numbers[-1] if history.numbers else None
    start = None if number is None else history.ledger.last_start.get(number)
    if start is None or not start_runner_gone(start):
        return None
    task = next((t for t in history.tasks_of(number) if t.value == start.value), None)
    return None if task is None else orphaned_child(history, task)


def _legacy_local_row(record_path: str, task: TaskRecord) -> TaskRow:
    """Local runs before the ledger kept their results in q/<stem>.local.json."""
    raw = read_results(Path(record_path)).get(results_key(task.value))
    state = exit_code = elapsed = None
    if isinstance(raw, dict):
        try:
            state = JobState.parse(str(raw.get("state")))
        except ValueError:
            state = None
        if state is not None and not state.is_terminal and runner_gone(raw):
            state = JobState.LOST
        code = raw.get("exit_code")      # true is an int to Python; the table showed "True"
        exit_code = code if type(code) is int and -(1 << 31) <= code < 1 << 31 else None
        elapsed = None if state is JobState.LOST else _elapsed(raw.get("start"), raw.get("end"))
    return TaskRow(task.value, task.job_id, task.array_task_id, state, exit_code, None,
                   elapsed, "localhost" if state else None, task.log, None, None)


def _elapsed(start: object, end: object) -> float | None:
    """Seconds from `start` to `end` (now, if none) as the results file spells them; None for
    text that is no time, or one time with a UTC offset and one without (they cannot be
    subtracted: every command on the record traced back)."""
    try:
        begin = datetime.fromisoformat(str(start))
        finish = datetime.fromisoformat(str(end)) if end else datetime.now(begin.tzinfo)
        return max(0.0, (finish - begin).total_seconds())
    except (ValueError, TypeError, OverflowError):
        return None


def exit_status(rows: Sequence[TaskRow]) -> int:
    """As hyperion-submit: 0 only if every task COMPLETED with exit code 0."""
    return 0 if rows and all(row.ok for row in rows) else 1


def state_counts(rows: Sequence[TaskRow]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state_label] = counts.get(row.state_label, 0) + 1
    return counts


def ended_counts(rows: Sequence[TaskRow]) -> dict[str, int]:
    """`state_counts` by `ended_label`: ``{"COMPLETED": 2, "FAILED (SIGHUP)": 1}``."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.ended_label] = counts.get(row.ended_label, 0) + 1
    return counts


