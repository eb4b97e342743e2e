"""Waiting for a submission to end, and judging how it went.

`wait` polls with the shared Poller until every task of a record is terminal
(or one can never run); `outcome_from` says which tasks did not complete with
code 0 and wrote their log; `report` is one line per such task, naming its logs.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Mapping, Sequence

from backends.ranges import compress
from backends.records.record import SubmitRecord, TaskRecord
from backends.states import JobState, TaskState, end_counts, ends_text, exit_note, never_runs, signal_text
from backends.watch.budget import QueryBudget
from backends.watch.finals import FinalsRecorder
from backends.watch.never_started import cancelled_while_pending, wrote_a_file
from backends.watch.nudge import LogNudge
from backends.watch.poller import MIN_GAP, Key, Poller, PollUpdate
from backends.watch.rows import expected, expected_tasks, log_words, no_log, said_path, state_row
from backends.cluster import for_cluster
from backends.watch.by_cluster import job_clusters
from backends.watch.slurm.accounting import Runner, run_command, stoppable
from backends.watch.throttle import SlotsNotice, Throttler
from backends.shellwords import shell_quote


@dataclass(frozen=True)
class Outcome:
    """How a submission ended: `bad` lists every task that did not complete with code 0."""

    ok: bool
    bad: tuple[tuple[TaskRecord, TaskState], ...]
    exit_status: int
    # Tasks Slurm will never start as asked, with its pending reason (the wait stopped there).
    never_runs: tuple[tuple[TaskRecord, str], ...] = ()
    # Ends the wait saw and could not write to the ledger (`FinalsRecorder.unrecorded`), None if none.
    unrecorded: str | None = None
    # Tasks of a job the controller forgot while accounting has it running (`PollUpdate.unknown`):
    # not known, and why in `status`'s words (`PollUpdate.forgotten_line`); they read "never
    # reported by Slurm", though accounting reported them RUNNING
    unknown: frozenset[tuple[str, int | None]] = frozenset()
    forgotten: str | None = None


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


def never_running(record: SubmitRecord, states: Mapping) -> tuple[tuple[TaskRecord, str], ...]:
    """Pending tasks whose reason says Slurm will never start them (see states.never_runs)."""
    found = []
    for task in record.tasks:
        state = states.get((task.job_id, task.array_task_id))
        if state is not None and not state.state.is_terminal and never_runs(state.reason):
            found.append((task, state.reason))
    return tuple(found)


def watcher(record: SubmitRecord, *, floor: float | None = None, runner: Runner | None = None,
            cap: float = 60.0, tasks: Sequence[TaskRecord] | None = None,
            stop: threading.Event | None = None,
            settled: Mapping[Key, TaskState] | None = None,
            budget: QueryBudget | None = None,
            log_of: Callable[[TaskRecord], str | None] | None = None,
            cluster_of: Callable[[TaskRecord], str | None] | None = None) -> tuple[Poller, Throttler | None]:
    """The Poller for a record (nudged by its task logs) and, for a windowed
    --max-jobs-run, the Throttler that keeps its slots busy; `floor` is the
    site's poll_interval. `tasks` (default: the record's) are the tasks to
    watch, e.g. every attempt's tasks that have not ended yet, and `settled`
    the ends the ledger holds for some of them (see Poller). Without a
    `runner`, queries run as processes that `stop` kills (a quit never waits
    for a hung squeue). A watched task without a recorded end (none of `settled`) that Slurm's
    answers and the disk show never started is told CANCELLED at the first poll that shows it, by
    `cancelled_while_pending`, as `hyperion-jobs status` tells it; `log_of`: where a task's log is now (the
    history's, default: the record's path); `cluster_of`: the cluster each task is asked on (the
    history's `cluster_of`, default: the record's), when the tasks are of several attempts."""
    runner = runner or (stoppable(stop) if stop is not None else run_command)
    watched = record.tasks if tasks is None else tuple(tasks)
    clusters = job_clusters(watched, cluster_of or (lambda task: record.cluster))
    mixed = len(set(clusters.values())) > 1      # the Poller asks each job on its own cluster
    if mixed and cluster_of is not None:         # two clusters' equal job ids: the newest attempt's is watched
        watched = tuple(t for t in watched if cluster_of(t) == clusters[t.job_id])
    else:
        runner = for_cluster(runner, next(iter(clusters.values()), record.cluster))
    unended = [t for t in watched if (t.job_id, t.array_task_id) not in (settled or {})]
    where = log_of or (lambda task: task.log)
    poller = Poller(expected(record) if tasks is None else expected_tasks(watched),
                    floor=max(MIN_GAP, floor or MIN_GAP), cap=max(cap, floor or 0),
                    runner=runner, nudge=LogNudge(watched), settled=settled, budget=budget,
                    never_started=lambda answer: cancelled_while_pending(unended, answer, where),
                    clusters=clusters if mixed else None)
    polled = None if tasks is None else [(t.job_id, t.array_task_id) for t in watched]
    # through the poller: a hung scontrol is said as a hung squeue is, and a quit ends it
    # the throttler moves the newest attempt's window slots: on its cluster
    client = for_cluster(poller.client, record.cluster) if mixed else poller.client
    return poller, Throttler.for_record(record, poller.budget, client, polled)


@contextmanager
def announced(record_path: str, throttler: Throttler | None) -> Iterator[None]:
    """While a watch with a throttler runs: it moves the windows' slots, which a console about to quit
    looks for (`backends.watch.movers`); the module is loaded only for such a watch."""
    if throttler is None:
        yield
        return
    from backends.watch.movers import moving_slots

    with moving_slots(record_path):
        yield


def wait(record: SubmitRecord, observer: Callable[[PollUpdate], None] | None = None,
         stop: threading.Event | None = None, *, floor: float | None = None,
         runner: Runner | None = None, say: Callable[[str], None] | None = None) -> Outcome:
    """Poll until every task of `record` is terminal, one can never run, or `stop` is set; judge it.

    Each task's final state goes into the submission's ledger as soon as it is seen. The
    observer also hears of a query Slurm has not answered for a while (see Poller.run), so a
    progress line says it is stale while Slurm hangs. `say` hears, once each, what moving slots
    between the windows of a shared --max-jobs-run could not do (and when it works again,
    `SlotsNotice`): unsaid, the next window stayed PENDING without a word.
    """
    stop = stop or threading.Event()
    poller, throttler = watcher(record, floor=floor, runner=runner, stop=stop)
    finals = FinalsRecorder(record.path, record.tasks)
    found: list[tuple[TaskRecord, str]] = []
    notice = SlotsNotice()

    def watch(update: PollUpdate) -> bool:
        finals.observe(update.changed, update.usage)
        if throttler is not None and not update.all_terminal:
            throttler(update.states)
            news = notice.news(throttler)
            if news and say is not None:
                say(news)
        if observer is not None:
            observer(update)
        found[:] = never_running(record, update.states)
        return bool(found)

    with announced(record.path, throttler):
        last = poller.run(watch, stop, waiting=observer)
    outcome = replace(outcome_from(record, dict(last.states)), unrecorded=finals.unrecorded)
    if last.forgotten:
        unknown = frozenset(key for task, state in outcome.bad if state.source == "unknown"
                            and (key := (task.job_id, task.array_task_id)) in last.unknown)
        outcome = replace(outcome, unknown=unknown, forgotten=last.forgotten_line(len(unknown)))
    return replace(outcome, never_runs=tuple(found)) if found else outcome


def task_label(task: TaskRecord, array_name: str | None) -> str:
    """``JOB=3 (job 1234_3)`` or ``job 1234``."""
    if task.array_task_id is None:
        return f"job {task.job_id}"
    return f"{array_name or 'task'}={task.value} (job {task.job_id}_{task.array_task_id})"


MAX_REPORTED = 20   # bad tasks told a line each at the end of a run; the rest are counted


def report(outcome: Outcome, array_name: str | None = None, record_path: str | None = None) -> list[str]:
    """A line per bad task: what it was, how it ended and where its logs are; at most MAX_REPORTED,
    then how many more and where they are grouped. Tasks cancelled without writing a file (a window
    cancelled while pending) are one line of values: cancelling a 1001-task window printed a
    thousand lines, each naming three files as missing, as if logs had been lost."""
    unwritten = [task for task, state in outcome.bad if _cancelled_unwritten(task, state)]
    grouped = {id(task) for task in unwritten} if len(unwritten) > 1 else set()
    told = [(task, state) for task, state in outcome.bad if id(task) not in grouped]
    lines = [_report_line(task, state, array_name, (task.job_id, task.array_task_id) in outcome.unknown)
             for task, state in told[:MAX_REPORTED]]
    if len(told) > MAX_REPORTED:
        where = f": hyperion-jobs status {shell_quote(record_path)} --failures groups them" if record_path else ""
        lines.append(f"... and {len(told) - MAX_REPORTED} more task(s) that did not succeed{where}")
    if len(unwritten) > 1:
        values = compress(t.value for t in unwritten if t.value is not None)
        lines.append(f"{array_name or 'task'}={values} ({len(unwritten)} tasks): CANCELLED before writing a log "
                     "or a Slurm file (cancelled while pending)")
    if outcome.forgotten:     # why those tasks are not known, as `status` and `watch` say it
        lines.append(outcome.forgotten)
    return lines


def _cancelled_unwritten(task: TaskRecord, state: TaskState) -> bool:
    return (state.state is JobState.CANCELLED and state.source != "unknown" and task.value is not None
            and not wrote_a_file(task, task.log))


def _report_line(task: TaskRecord, state: TaskState, array_name: str | None, forgotten: bool = False) -> str:
    how = state.state.value if state.source != "unknown" else \
        "not known (UNKNOWN)" if forgotten else "never reported by Slurm"
    if state.exit_code or state.state is JobState.FAILED:
        how += f" exit code {state.exit_code}{exit_note(state.exit_code, state.signal)}"
    if state.signal:
        how += f" {signal_text(state.signal)}"
    if state.state.is_success and not os.path.exists(task.log):
        how += " but the log is missing"
    # the log as watch's end names it: `log PATH`, `log PATH (missing)`, or `no log (never started)`
    # for a task cancelled while pending (it read `log no log (never started)`)
    row = state_row(task, state if state.source != "unknown" else None, task.log)
    log = log_words(row)
    slurm = [path for path in (task.slurm_out, task.slurm_err) if path is not None and os.path.exists(path)]
    if no_log(row) and not slurm:     # it wrote no Slurm file either: three `(missing)` read as files lost
        return f"{task_label(task, array_name)}: {how}; {log}"
    return (f"{task_label(task, array_name)}: {how}; {log}; "
            f"slurm {said_path(task.slurm_out)} {said_path(task.slurm_err)}")


def bad_ends(outcome: Outcome) -> str:
    """``failed 1, timeout 1, completed 1; 1 completed task's log is missing``: the bad tasks by how
    they ended, in the words of the progress line and `status --failures`. A COMPLETED task whose
    log is missing is counted as completed, with the missing log said apart (it read `no-log 1`,
    a state nobody has); one Slurm never reported is `unknown` (it read `pending 1` after the end)."""
    labels: list[str | tuple[str, int | None]] = []
    no_log = 0
    for task, state in outcome.bad:
        if state.source == "unknown":
            labels.append("UNKNOWN")
        elif state.state.is_success:
            labels.append("COMPLETED")
            no_log += not os.path.exists(task.log)
        else:
            labels.append((state.state.value, state.signal))
    text = ends_text(end_counts(labels))
    if no_log:
        text += f"; {no_log} completed task's log is missing" if no_log == 1 else \
            f"; {no_log} completed tasks' logs are missing"
    return text


