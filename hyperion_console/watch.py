"""Watching a submission from a console worker thread, as `hyperion-jobs watch` does.

Slurm: the newest attempt's tasks without a final state in the ledger are
polled, and ended ones Slurm may have run again (backends.watch.requeued),
with the core's `watcher` (the shared Poller with its query budget, the log
nudge, and the window throttle of a shared --max-jobs-run);
every final state (and usage) seen is written into the ledger by the core's
FinalsRecorder, so the history keeps it whoever looks next. A query Slurm
has not answered for a few seconds is delivered as a problem while it lasts,
and `stop` kills it: leaving the screen or quitting never waits for Slurm. Local: the
ledger the local runner writes is read again until the run ended. Each
answer is handed over as a `Seen`: rows made by the core, only what changed.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from backends.cli.jobs.commands import site_floor
from backends.errors import InputError
from backends.records.history import History, load_history
from backends.records.record import TaskRecord
from backends.states import LEDGER
from backends.watch.budget import QueryBudget
from backends.watch.finals import FinalsRecorder
from backends.watch.requeued import settled, watched_tasks
from backends.watch.rows import Key, TaskRow, history_rows, ran_again, task_row, usage_missing
from backends.watch.usage import usage_from_json
from backends.client import QueryStopped
from backends.watch.slurm.accounting import QueryError, Runner, stoppable
from backends.watch.targets import fill_missing_usage, shown_as_recorded
from backends.watch.throttle import SlotsNotice, slots_problem
from backends.watch.unknown_jobs import UnknownJobs
from backends.watch.wait import watcher

from .record_cache import cached_record
from .task_index import row_key

LOCAL_POLL_SECONDS = 0.5
LOCAL_RETRY_SECONDS = 2.0    # an unreadable history is read again this often
CAP_SECONDS = 30.0          # hyperion-jobs watch's default --cap


@dataclass(frozen=True)
class Seen:
    """One answer: the rows that changed, whether all ended, how fresh it is and what went wrong."""

    rows: tuple[TaskRow, ...]
    error: str | None = None
    all_terminal: bool = False
    as_of: float | None = None
    problem: str | None = None
    warning: str | None = None          # e.g. the ledger cannot be written: states shown, not kept
    rows_only: bool = False             # beside a watch: rows to show, nothing said of the watch
    usage_asked: bool = False           # the answer of an ask for what ended tasks used
    behind: str | None = None           # what did not answer (the core's line): the ledger's is shown
    recorded: bool = False              # all ended, every end the ledger's: Slurm only said none ran again
    slots: str | None = None            # what moving slots between windows could not do (`slots_problem`)
    slots_news: str | None = None       # `SlotsNotice`'s line to tell once: a new refusal, or that it ended
    troubles: tuple = ()                # `problem`'s lines with when each began (ages grow between answers)
    # `status`'s line of tasks of a job the controller forgot while accounting has it running
    # (`PollUpdate.forgotten_line`), or `watch`'s of a job Slurm knows nothing of (`UnknownJobs.ended_line`):
    # why they are UNKNOWN, where the watch ended without a word (or never ended)
    forgotten: str | None = None


@dataclass(frozen=True)
class Shown:
    """What the console shows of a watch's tasks, kept up to date by the watch and by the looks
    beside it and after it, each in its own thread."""

    rows: dict = field(default_factory=dict)     # Key -> the row last delivered: only what changed travels
    read: dict = field(default_factory=dict)     # Key -> the ledger's usage of its end as last read
    # an ask for usage failed and was said: said again once nothing lacks it
    said: threading.Event = field(default_factory=threading.Event)
    # the watch's thread and the looks beside it both read and replace rows, and deliver them while
    # they hold it: the screen gets the rows in the order they were made (reentrant: `fresh` in it)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)


def watch_slurm(history: History, deliver: Callable[[Seen], None], stop: threading.Event,
                runner: Runner | None = None, budget: QueryBudget | None = None,
                notice: SlotsNotice | None = None) -> None:
    """Poll the unfinished tasks of `history` until they all ended or `stop` is set; first, as
    `hyperion-jobs status` does, ask accounting once what ended tasks used if the ledger lacks it.
    `runner` runs every squeue and sacct (default: processes that `stop` kills); `budget`: the
    console's, which its other asks of Slurm spend too. `notice`: what decides, as for `hyperion-jobs
    watch`'s lines, which of moving slots' troubles to tell (the screen keeps one per record, so a
    watch started again after an action does not tell the same refusal twice)."""
    runner = runner or stoppable(stop)
    notice = notice or SlotsNotice()
    pending = watched_tasks(history)
    if not pending:
        _deliver_missing_usage(history, deliver, stop, all_terminal=True, runner=runner, shown=Shown())
        return
    ended = settled(history, pending)
    poller, throttler = watcher(history.current, tasks=pending, floor=site_floor(history.current),
                                cap=CAP_SECONDS, stop=stop, runner=runner, settled=ended, budget=budget,
                                log_of=history.log_of, cluster_of=history.cluster_of)
    tasks = {(t.job_id, t.array_task_id): t for t in pending}
    # the ledger's usage read at first, of the ends it holds (the screen shows them)
    shown = Shown(read={key: final.usage for key, final in ((k, history.final(t)) for k, t in tasks.items())
                        if final})
    # beside the watch, not before it: a sacct that hangs held back every live state for 30 s;
    # charged to the watch's budget, which the console's calls then keep as `watch`'s do
    watched = threading.Event()
    threading.Thread(target=_usage_beside, args=(history, tasks, shown, deliver, stop, watched, runner,
                                                 poller.budget),
                     name="hyperion-missing-usage", daemon=True).start()
    finals = FinalsRecorder(history.record_path, pending, settled=ended, since=history.ledger.size)
    # jobs Slurm knows nothing of (purged, another cluster's): the watch asked about them for ever
    unknown = UnknownJobs(history, pending, poller)
    usage_seen: dict = {}
    ended_here: list[bool] = []   # a task ended while watched (not one of the ledger's ends)

    def fresh(rows) -> tuple:
        rows = tuple(rows)
        with shown.lock:
            new = tuple(row for row in rows if shown.rows.get(row_key(row)) != row)
            shown.rows.update((row_key(row), row) for row in new)
        return new

    def observe(update) -> bool:
        if stop.is_set():
            return True
        gone = unknown.none_known(update)      # every other job ended: the rest is not known, never will be
        finals.observe(update.changed, update.usage)   # accounting's figures only
        if not ended_here and any(s.state.is_terminal and s.source != LEDGER for s in update.changed):
            ended_here.append(True)
        if throttler is not None and not update.all_terminal:
            throttler(update.states)
        slots = None if throttler is None or update.all_terminal else slots_problem(throttler.failure)
        news = notice.news(None if update.all_terminal else throttler)
        keys = dict.fromkeys(state.key for state in update.changed)
        keys.update(dict.fromkeys(update.unknown))     # dropped, not changed: shown UNKNOWN (`fresh`: once)
        usage = update.current_usage()           # as `watch` shows it: a running task's time used too
        for key, used in usage.items():          # accounting tells usage a poll or two after the end
            if usage_seen.get(key) != used:
                usage_seen[key] = used
                keys[key] = None
        made = tuple(task_row(history, tasks[key], update.states, usage) for key in keys if key in tasks)
        behind = shown_as_recorded(update.unconfirmed) if update.unconfirmed else None
        # every end recorded before (`hyperion-jobs list`, a wait): the states are the attempt history's,
        # and Slurm's answer only said that it ran none of them again
        recorded = (update.all_terminal or gone) and not ended_here and not update.unknown   # none of those is recorded
        forgotten = update.forgotten_line(sum(1 for key in update.unknown if key in tasks)) \
            if update.forgotten else None
        if gone:       # why those tasks are UNKNOWN, in `watch`'s words
            forgotten = "; ".join(line for line in (forgotten, unknown.ended_line(update)) if line)
        with shown.lock:
            deliver(Seen(fresh(made), update.error, update.all_terminal or gone, update.as_of, update.problem,
                         finals.error, behind=behind, recorded=recorded, slots=slots, slots_news=news,
                         troubles=update.troubles, forgotten=forgotten))
        return gone

    def waiting(update) -> None:
        """A query Slurm has not answered for a while: the status line says so while it lasts; and
        the controller's ends, shown before the final sacct (recorded once the poll is over)."""
        if not stop.is_set():
            made = tuple(task_row(history, tasks[s.key], update.states, usage_seen) for s in update.changed
                         if s.key in tasks)
            with shown.lock:
                deliver(Seen(fresh(made), None, False, update.as_of, update.problem,
                             slots=slots_problem(throttler.failure) if throttler is not None else None,
                             troubles=update.troubles))

    poller.run(observe, stop, waiting)
    watched.set()
    if ended_here:     # a record that ended before it was opened had its one ask beside the watch
        _follow_usage(history.record_path, tasks, shown, deliver, stop, runner)


# Seconds between the asks, while the watch goes on, for what ended tasks used: a task's end
# mostly comes from squeue, which tells no peak nor CPU time (at most one sacct in 30 s).
USAGE_BESIDE_WATCH = 30.0


def _usage_beside(history: History, tasks: Mapping[Key, TaskRecord], shown: Shown,
                  deliver: Callable[[Seen], None], stop: threading.Event, watched: threading.Event,
                  runner: Runner, budget: QueryBudget) -> None:
    """Until the watch is over, what ended tasks used, as `hyperion-jobs usage` asks for it: asked
    once at opening only, the usage columns of a long run stayed '-' for every task squeue saw
    end, while `usage` showed their figures. What another writer recorded first (hyperion-submit
    waiting in its terminal) is shown as it is read: not missing, it was never asked for."""
    while not stop.is_set():
        _deliver_missing_usage(history, deliver, stop, False, runner, shown, budget)
        if watched.wait(USAGE_BESIDE_WATCH) or stop.is_set():
            return
        try:
            history = load_history(history.record_path, cached_record(history.record_path))
        except InputError:
            return
        _deliver_ledger_rows(history, tasks, shown, deliver, stop)


# Seconds between the asks, after the end, for what ended tasks used while any lacks it:
# accounting tells a peak and a request a poll or two after the end, when the watch has stopped,
# and a busy slurmdbd later still (about 4 minutes in all; at most one sacct in 10 s).
USAGE_FOLLOW_UP = (3.0, 10.0, 20.0, 30.0, 60.0, 120.0)


def _follow_usage(record_path: str, tasks: Mapping[Key, TaskRecord], shown: Shown,
                  deliver: Callable[[Seen], None], stop: threading.Event, runner: Runner,
                  delays: Sequence[float] = USAGE_FOLLOW_UP) -> None:
    """After every task ended, the usage accounting tells late, as `status` would ask for it: the
    columns stayed '-' until the record was opened again, while the CLI showed the figures. What
    another writer put in the ledger first (hyperion-submit's own wait, a `hyperion-jobs usage` in
    another terminal) is shown too: seeing nothing missing, the console showed '-' for ever."""
    for delay in delays:
        if stop.wait(delay):
            return
        try:
            history = load_history(record_path, cached_record(record_path))
        except InputError:
            return
        _deliver_ledger_rows(history, tasks, shown, deliver, stop)
        if not _deliver_missing_usage(history, deliver, stop, all_terminal=True, runner=runner, shown=shown):
            return


def _deliver_ledger_rows(history: History, tasks: Mapping[Key, TaskRecord], shown: Shown,
                         deliver: Callable[[Seen], None], stop: threading.Event) -> None:
    """What the ledger holds beyond the rows shown (`ledger_rows`), made and delivered under the
    lock the watch's thread delivers under: the screen gets rows in the order they were made."""
    with shown.lock:
        told = ledger_rows(history, tasks, shown)
        if told and not stop.is_set():
            deliver(Seen(told, rows_only=True))


def ledger_rows(history: History, tasks: Mapping[Key, TaskRecord], shown: Shown,
                watching: bool = True) -> tuple[TaskRow, ...]:
    """The rows of `tasks` whose end or usage the ledger holds and the console does not show
    (`shown`, brought up to date here), for the two that look:
    - beside a live watch (`watching`), which tells every state itself: the usage another writer
      recorded first (hyperion-submit's own wait, `hyperion-jobs usage` in another terminal) for a
      task shown ended, and the row of an end the screen shows as the watch's start read it. A live
      row keeps the watch's state, not the ledger's earlier end;
    - after a stopped watch (a cancel restarts it): every end it recorded, its answer dropped with
      it, as no watch tells an end the ledger holds (the table said RUNNING for ever). One shown
      ended with its peak and request has nothing more to learn (100k cost no row at a cancel).
    Either way a task Slurm ran again since its end keeps its row, and one whose ledger usage did not
    change since the last look costs a comparison (every 30 s of a 100k-task watch). A live row
    whose restart count is unknown (sacct's alone, while squeue failed) takes the end: kept, a run
    that did end stayed RUNNING for ever, as no watch tells an end the ledger holds; a run Slurm
    started again comes back with the next watch's first squeue (its restart count, `ran_again`)."""
    told = []
    with shown.lock:      # a row the watch replaces meanwhile is not overwritten by one built before
        for key, task in tasks.items():
            final = history.final(task)
            if final is None or (key in shown.read and shown.read[key] == final.usage):
                continue
            old = shown.rows.get(key)
            if old is not None and ran_again(final, old):
                continue
            if not watching:
                if _ended_with_usage(old):
                    continue
                row = task_row(history, task, {})
            elif not final.usage:
                continue
            elif old is None and key in shown.read:   # not delivered: the screen shows the ledger's end of it
                row = task_row(history, task, {})
            elif old is not None and old.state is not None and old.state.is_terminal \
                    and (final.restart_count or 0) == (old.restart_count or 0):     # shown ended: its usage
                usage = usage_from_json(final.usage)
                row = old if usage is None else replace(old, usage=usage.filled_from(old.usage))
            else:
                continue
            shown.read[key] = final.usage
            if row != old:
                shown.rows[key] = row
                told.append(row)
    return tuple(told)


def _ended_with_usage(row: object) -> bool:
    """Shown ended with its peak and request: what the ledger could add is told late (a peak)."""
    state, used = getattr(row, "state", None), getattr(row, "usage", None)
    return (state is not None and state.is_terminal and used is not None
            and used.max_rss_bytes is not None and used.req_mem_bytes is not None)


def _deliver_missing_usage(history: History, deliver: Callable[[Seen], None], stop: threading.Event,
                           all_terminal: bool, runner: Runner, shown: Shown,
                           budget: QueryBudget | None = None) -> bool:
    """Rows with the usage accounting gives for ended tasks the ledger holds none for (a console or
    a wait that stopped before accounting told it); written into the ledger by the core. A sacct
    that hangs is killed when the console quits, as the watch's own queries are. False when the
    ledger lacked none, so there is nothing to ask again. `shown.said`: set while a failed ask is
    said; nothing missing is then said too (rows only, nothing behind), or its `shown as last
    recorded` stayed on the status line once another writer (or the watch's own sacct) had recorded
    every figure."""
    missing = usage_missing(history)
    if not missing:
        if shown.said.is_set() and not stop.is_set():
            shown.said.clear()
            deliver(Seen((), rows_only=True, usage_asked=True))
        return False
    behind = None
    if budget is not None and not budget.spend(stop):
        return True
    try:
        used = fill_missing_usage(history, runner)
    except QueryStopped:
        return True
    except QueryError as err:    # usage stays "-", said as `hyperion-jobs usage` says it
        used, behind = {}, shown_as_recorded(str(err))
    made = {key: task_row(history, missing[key][0], {}, used) for key in used}
    if behind:
        shown.said.set()
    else:
        shown.said.clear()
    with shown.lock:     # a task the watch shows running again (requeued) meanwhile keeps its row
        made = {key: row for key, row in made.items() if _still_ended(shown.rows.get(key), row)}
        shown.rows.update(made)
        rows = tuple(made.values())
        if not stop.is_set():        # beside a watch, the watch alone says how fresh states are
            as_of = None if behind else time.time()
            deliver(Seen(rows, None, all_terminal, as_of, usage_asked=True, behind=behind) if all_terminal
                    else Seen(rows, rows_only=True, usage_asked=True, behind=behind))
    return True


def _still_ended(shown: TaskRow | None, row: TaskRow) -> bool:
    """Whether the row shown (None: none yet) is still the end `row` was built from: not a run
    Slurm started again since (not ended, or a higher restart count)."""
    if shown is None:
        return True
    return (shown.state is not None and shown.state.is_terminal
            and (shown.restart_count or 0) <= (row.restart_count or 0))


def watch_local(record_path: str, deliver: Callable[[Seen], None], stop: threading.Event,
                ended: Callable[[Sequence[TaskRow]], bool]) -> None:
    """Read the local runner's ledger (every attempt) until `ended(rows)` says the run is over."""
    seen: dict = {}
    while not stop.is_set():
        try:
            rows = history_rows(load_history(record_path, cached_record(record_path)), {})
        except InputError as err:   # replaced meanwhile (a FIFO, a torn copy): said, and read again
            deliver(Seen((), None, False, None, problem=f"the attempt history cannot be read: {err.problem}"))
            stop.wait(LOCAL_RETRY_SECONDS)
            continue
        changed = [row for row in rows if seen.get(row_key(row)) != row]
        for row in changed:
            seen[row_key(row)] = row
        done = ended(rows)
        deliver(Seen(tuple(changed), None, done, time.time()))
        if done:
            return
        stop.wait(LOCAL_POLL_SECONDS)
