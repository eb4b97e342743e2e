"""Polls Slurm for a set of jobs within a query budget, telling how fresh its states are.

Used by hyperion-submit's waiting, hyperion-jobs watch and the console alike, so
all of them see the same states. Each poll asks the controller (one squeue for
all unfinished jobs); accounting (one sacct for all jobs that need it) is asked
only when the controller cannot answer for a task: squeue failed, it no longer
lists the task (ended longer than MinJobAge ago), it still says COMPLETING
(accounting has the end already), or every task has just ended (one last sacct
for the authoritative final rows). squeue's answer also gives each task's time
used and request (PollUpdate.live_usage), so a running task's usage keeps up
with no sacct; accounting's (PollUpdate.usage) is what gets recorded.

Pacing: every call that reaches a daemon is charged to a QueryBudget (30 a
minute at most). After a poll in which something changed the next comes
`busy` seconds per charged call later; when nothing changed, `idle` seconds
per call (6 calls a minute), never past `cap`, never sooner than `floor` (the
site's ``poll_interval`` raises it). A `nudge` (e.g. a task's log footer
appeared) brings the next poll forward, within the budget. A query refused
because its daemon is down costs nothing and is retried every OUTAGE_RETRY
seconds, so the first poll after recovery comes within that; a rate-limited or
timed-out query slows the pace down instead. A failed query is never a task
result: PollUpdate.problem says which source has not answered for how long,
counted from the first query that went unanswered.

Each query runs in a helper thread while the poll waits for it: a set `stop`
ends the wait at once (and a `stoppable` runner kills the query's process), and
a query still unanswered after `slow` seconds is told to run's `waiting`
callback every second while it lasts, so a live view says it is stale while
Slurm hangs, not only once the 30 s timeout returns.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Mapping, Sequence

from backends.states import LEDGER, JobState, TaskState
from backends.cluster import for_cluster
from backends.watch.budget import QueryBudget
from backends.watch.by_cluster import joined_rows
from backends.client import STOP_STEP, CommandResult, QueryStopped
from backends.watch.slurm.accounting import (
    SQUEUE_UNKNOWN_JOB,
    QueryError,
    Runner,
    SacctRows,
    Snapshot,
    accounted_job_ids,
    accounting_only,
    controller_code,
    controller_knows_none,
    forgotten_among,
    without_forgotten,
    live_job_ids,
    merge,
    range_only,
    run_command,
    run_sacct,
    run_squeue_rows,
    source_problem,
)
from backends.watch.usage import Usage, with_live

Key = tuple[str, "int | None"]
Nudge = Callable[[Mapping[Key, TaskState]], bool]
NeverStarted = Callable[[Snapshot], Mapping[Key, TaskState]]

# A pending array task cancelled on its own leaves the controller at once and,
# about 4 s later, sacct's pending-range row, and never gets a row of its own.
# A task the controller no longer lists while it lists other tasks of its job,
# with no accounting row of its own (only that lagging range row, or nothing),
# in at least two polls this many seconds apart, was removed from the array:
# it is reported CANCELLED. So is a task of a job the controller
# no longer lists that has no accounting row while the job's other tasks have
# theirs, after GONE_VANISHED_AFTER: every task that started has a row, and
# nothing will start it now (a late accounting row gets that much time).
# A Poller given `never_started` (backends.watch.never_started, what `hyperion-jobs status` tells
# from one look) applies it to every poll both daemons answered: a task of a job the controller
# lists nothing unfinished of, which accounting knows but has no row of, and which never wrote a
# file, is CANCELLED at once; the console opened on such a record said PENDING for a minute.
VANISHED_AFTER = 5.0
GONE_VANISHED_AFTER = 60.0
BUSY_SECONDS_PER_CALL = 3.0    # after a change: 20 calls a minute from pacing, room left for nudges
IDLE_SECONDS_PER_CALL = 10.0   # nothing changed: 6 calls a minute
OUTAGE_RETRY = 2.0             # a daemon that refused the connection is asked again this soon
MIN_GAP = 1.0                  # never two polls closer than this
MAX_SLOWDOWN = 8.0             # rate-limited answers stretch the pace at most this much
TICK = 0.25                    # how often a nudge is asked between polls
SLOW_QUERY = 5.0               # a query unanswered this long is a problem while it lasts
WAITING_EVERY = 1.0            # how often run's `waiting` hears of such a query
STOP_GRACE = 1.0               # on stop, how long the query's own stop may take to end its process


@dataclass(frozen=True)
class Trouble:
    """One failing source as `problem` says it (`source_problem`), its age counted from `since`
    (time.time() of the start of its first unanswered query): said as of any moment."""

    since: float
    source: str
    error: str
    kind: str | None
    interval: float

    def at(self, now: float) -> str:
        return source_problem(self.source, self.error, self.kind, now - self.since, self.interval)


def troubles_text(troubles: Sequence[Trouble], now: float | None = None) -> str | None:
    """Every trouble as of `now` (time.time()), joined as `problem` joins them."""
    now = time.time() if now is None else now
    return "; ".join(t.at(now) for t in troubles) or None


@dataclass(frozen=True)
class PollUpdate:
    states: Mapping[Key, TaskState]     # latest known for every task seen so far
    changed: tuple[TaskState, ...]      # only what changed since the last update
    error: str | None                   # this poll's query error text, shown, never a result
    all_terminal: bool                  # every expected task is terminal
    interval: float = field(default=0.0, compare=False)   # seconds until the next poll
    problem: str | None = None          # while a source fails: which, for how long, why
    as_of: float | None = None          # time.time() of the newest answer the states reflect
    usage: Mapping[Key, Usage] = field(default_factory=dict, compare=False)   # from sacct answers
    live_usage: Mapping[Key, Usage] = field(default_factory=dict, compare=False)  # squeue's, newer than sacct's
    unconfirmed: str | None = None      # the failed look for requeues of ended tasks: ends stand as recorded
    troubles: tuple[Trouble, ...] = field(default=(), compare=False)   # `problem`'s lines, with when each began
    # jobs the controller knows none of while accounting has them running or waiting ("forgotten",
    # `Poller._forget`): their unended tasks, dropped from `states`, are not known and never will be
    forgotten: str | None = None                # `source_problem`'s words for them (None: none)
    unknown: frozenset[Key] = frozenset()       # the tasks that leaves not known (UNKNOWN)

    def forgotten_line(self, not_known: int) -> str | None:
        """`status`'s line of the jobs the controller forgot (None: none), `not_known` the tasks
        shown UNKNOWN for it: said alike by watch, hyperion-submit's wait, logs -f and the console."""
        if self.forgotten is None:
            return None
        return f"{self.forgotten}; the {not_known} task(s) with no recorded end are not known (UNKNOWN)"

    def problem_at(self, now: float | None = None) -> str | None:
        """`problem` as of `now` (time.time()): its ages grow between polls, as the states' age does."""
        return troubles_text(self.troubles, now) if self.troubles else self.problem

    def current_usage(self) -> dict[Key, Usage]:
        """What each task has used so far, as the newest answer says, for showing: accounting's,
        with the controller's time used and request where squeue answered after sacct (a poll
        asks only squeue while it names every task, so accounting's figures of a running task
        went stale, or never came). Only `usage` is recorded: the controller's figures lack
        the peak and the CPU time an ended task's usage has."""
        return with_live(self.usage, self.live_usage)


@dataclass
class _Health:
    """One source's failure streak (None: answering)."""

    since: float | None = None
    error: str | None = None
    kind: str | None = None


class _Call:
    """One runner call in a daemon thread: its result or exception once `done` is set."""

    def __init__(self, runner: Runner, argv: Sequence[str]) -> None:
        self.done = threading.Event()
        self._result: CommandResult | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(runner, argv), daemon=True,
                         name=f"query {argv[0]}").start()

    def _run(self, runner: Runner, argv: Sequence[str]) -> None:
        try:
            self._result = runner(argv)
        except BaseException as exc:     # handed to the poll thread, raised there
            self._error = exc
        finally:
            self.done.set()

    def result(self) -> CommandResult:
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


def _same(a: TaskState, b: TaskState) -> bool:
    """Equal for observers: elapsed ticking on a running task is not a change."""
    return ((a.state, a.exit_code, a.signal, a.node, a.reason, a.restart_count)
            == (b.state, b.exit_code, b.signal, b.node, b.reason, b.restart_count))


def _accept(old: TaskState | None, new: TaskState, range_row: bool) -> bool:
    """Whether `new` may replace `old`: never step back from a final or a running state.

    sacct can lag behind squeue (PENDING after squeue saw RUNNING and the task
    already left squeue), a pending-range row still names tasks that started,
    and a final state is never undone by a stale row. The exception is a new
    attempt: the controller's row with a higher restart count (Slurm requeued
    the task, even one that had ended) replaces anything. An end the ledger
    holds is replaced by nothing else: it is what the user was shown.
    """
    if old is None:
        return True
    if new.restart_count is not None and new.restart_count > (old.restart_count or 0):
        return True
    if old.source == LEDGER:
        return False
    if range_row and old.state is not JobState.PENDING:
        return False
    if old.state.is_terminal:
        return new.state.is_terminal
    if new.source == "sacct" and new.state is JobState.PENDING and old.state is not JobState.PENDING:
        return False
    return True


class Poller:
    """Watches `expected` (job id -> physical task ids, None: every task the job has).

    `settled` are ends the ledger holds for some expected tasks (source LEDGER):
    they count as ended and never make a query of their own (no sacct, no final
    sacct), but their jobs are in every poll's squeue (one squeue names many
    jobs; the first poll asks it even when nothing else is unfinished), so a
    task Slurm runs again (``scontrol requeue``: a higher restart count) is
    followed to its new end.
    """

    def __init__(self, expected: Mapping[str, tuple[int, ...] | None], *, floor: float = MIN_GAP,
                 cap: float = 60.0, busy: float = BUSY_SECONDS_PER_CALL,
                 idle: float = IDLE_SECONDS_PER_CALL, runner: Runner = run_command,
                 sleep: Callable[[float], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 budget: QueryBudget | None = None, nudge: Nudge | None = None,
                 vanished_after: float = VANISHED_AFTER, tick: float = TICK,
                 slow: float | None = None, settled: Mapping[Key, TaskState] | None = None,
                 never_started: NeverStarted | None = None,
                 clusters: Mapping[str, str | None] | None = None) -> None:
        if floor <= 0 or cap < floor:
            raise ValueError("need 0 < floor <= cap")
        self._expected = {str(j): (frozenset(t) if t is not None else None)
                          for j, t in expected.items()}
        self._floor, self._cap, self._busy, self._idle = floor, cap, busy, idle
        self._runner = runner
        # each job's cluster when they are on more than one (`runner` then asks the local one): asked
        # with one -M, an earlier attempt's jobs on another cluster were UNKNOWN for the whole watch
        self._clusters = dict(clusters) if clusters and len(set(clusters.values())) > 1 else None
        self._sleep = sleep
        self._clock, self._wall = clock, wall
        self.budget = budget or QueryBudget(clock=clock)
        self._nudge = nudge
        self._tick = tick
        self._slow_query = SLOW_QUERY if slow is None else slow
        self._stop = threading.Event()        # run's stop: ends the wait for a query
        self._waiting: Callable[[PollUpdate], object] | None = None
        self._asking: tuple[str, float] | None = None   # the query awaited now: source, clock at start
        self._vanished_after = vanished_after
        self._never_started = never_started
        self._missing_since: dict[Key, tuple[float, int, float]] = {}   # first missed, polls, wait
        self._states: dict[Key, TaskState] = {k: replace(t, source=LEDGER) for k, t in (settled or {}).items()
                                              if self._watched(k)}
        self._recheck = sorted({job for job, _ in self._states})
        self._polled = False
        self._usage: dict[Key, Usage] = {}
        self._live_usage: dict[Key, Usage] = {}   # the last squeue's, for tasks no sacct answered since
        self._usage_ended: set[Key] = set()       # tasks whose `_usage` is from a row telling their end
        self._health = {"squeue": _Health(), "sacct": _Health()}
        self._gone: set[str] = set()          # jobs the controller no longer knows (sacct only)
        self._forgotten: dict[str, str] = {}  # job -> the controller's word that it knows none of it
        self._unknown: set[Key] = set()       # unended tasks of those jobs: not known, never will be
        self._not_known: set[str] = set()     # jobs Slurm has no trace of (`not_known`): done, their tasks unknown
        self._squeue_unknown = False          # the last squeue said "Invalid job id specified"
        self._slow = 1.0                      # pace multiplier while Slurm asks us to back off
        self._as_of: float | None = None
        self._last_poll = float("-inf")
        self._next_poll = float("-inf")
        self._sacct_due = float("-inf")       # sacct as a fallback keeps its own pace
        self._errors: list[str] = []          # this poll's failed queries
        self._asked_sacct = False             # whether this poll has asked sacct already
        self._unconfirmed: str | None = None  # why the look for requeues failed (`status` says so too)
        self.interval = floor

    @property
    def states(self) -> Mapping[Key, TaskState]:
        return dict(self._states)

    # --- what is being watched -----------------------------------------------------------

    def _wanted(self, task: TaskState) -> bool:
        if task.job_id not in self._expected:
            return False
        tasks = self._expected[task.job_id]
        return tasks is None or task.task_id in tasks

    def _watched(self, key: Key) -> bool:
        tasks = self._expected.get(key[0], ())
        return tasks is None or key[1] in tasks

    def _job_done(self, job_id: str) -> bool:
        if job_id in self._forgotten or job_id in self._not_known:   # no look will tell more of its unended tasks
            return True
        tasks = self._expected[job_id]
        if tasks is None:
            seen = [s for (j, _), s in self._states.items() if j == job_id]
            return bool(seen) and all(s.state.is_terminal for s in seen)
        for task in tasks:
            known = self._states.get((job_id, task))
            if known is None or not known.state.is_terminal:
                return False
        return True

    def _all_terminal(self) -> bool:
        return all(self._job_done(job) for job in self._expected)

    def _watched_keys(self) -> list[Key]:
        """Listed tasks of every job; for jobs watched whole, the tasks seen so far."""
        keys: list[Key] = []
        for job, tasks in self._expected.items():
            if tasks is not None:
                keys.extend((job, t) for t in tasks)
        keys.extend(k for k in self._states if self._expected.get(k[0], ()) is None)
        return keys

    def _unanswered(self, jobs: list[str], rows: Mapping[Key, TaskState]) -> list[str]:
        """Jobs with an unfinished watched task the controller's answer does not name."""
        named_jobs = {job for job, _ in rows}
        out = []
        for job in jobs:
            tasks = self._expected[job]
            if tasks is None:
                missing = job not in named_jobs
            else:
                missing = any((job, t) not in rows and not self._terminal(job, t) for t in tasks)
            if missing:
                out.append(job)
        return out

    def _completing(self, rows: Mapping[Key, TaskState]) -> list[str]:
        """Jobs with a task the controller still calls COMPLETING whose end is not known yet:
        accounting may know it. One whose end is known (a node stuck completing for hours) would
        cost a sacct every poll while it lasts."""
        return sorted({t.job_id for t in rows.values()
                       if t.state is JobState.COMPLETING and not self._terminal(*t.key)})

    def _terminal(self, job: str, task: int | None) -> bool:
        known = self._states.get((job, task))
        return known is not None and known.state.is_terminal

    # --- asking Slurm ----------------------------------------------------------------------

    def _ask(self, source: str, jobs: list[str], watched: bool = True, expect: Sequence[str] = ()):
        """One squeue or sacct; its answer, or None after recording the failure.

        A failure's age counts from the start of the first query that went
        unanswered; `watched` queries are reported while they are awaited. A sacct
        naming none of the `expect` jobs Slurm listed before is a failure ("empty").
        """
        self._asked_sacct = self._asked_sacct or source == "sacct"
        started = self._clock()
        self._asking = (source, started) if watched else None
        try:
            parts = [(run_squeue_rows if source == "squeue" else run_sacct)(group, run)
                     for run, group in self.by_cluster(jobs, self._call)]
            answer = parts[0] if len(parts) == 1 else joined_rows(parts)
            if source == "sacct":
                self._check_listed(expect, answer)
        except QueryError as exc:
            self._failed(source, exc, started)
            return None
        finally:
            self._asking = None
        self.budget.charge(len(parts), started)     # when this call went: a poll's second query goes later
        self._health[source] = _Health()
        rows = answer.states if source == "squeue" else [*answer.own, *answer.ranged]
        if any(self._watched(t.key) for t in rows):   # an answer naming no task tells no state
            self._as_of = self._wall()
        if source == "squeue":
            self._squeue_unknown = answer.unknown_ids
            self._live_usage = {key: used for key, used in answer.usage.items() if self._watched(key)}
            self._forget_usage_before_end(answer.states)
            return answer.states
        self._usage.update((key, used) for key, used in answer.usage.items() if self._watched(key))
        ended = {t.key for t in answer.own if t.state.is_terminal}
        self._usage_ended.difference_update(answer.usage)
        self._usage_ended.update(key for key in answer.usage if key in ended)
        for state in answer.own:     # not a pending range row's: a task started since is squeue's still
            self._live_usage.pop(state.key, None)
        return answer

    def _check_listed(self, jobs: Sequence[str], answer: SacctRows) -> None:
        """QueryError ("empty") when accounting's answer has no row of any of `jobs` (those whose
        states wait on it: the controller failed or does not name their tasks) although Slurm
        listed some of them before: an empty answer (a site wrapper, a purged or lagging database)
        says nothing of the tasks, and taken as an answer it showed `states from Slurm 0 s ago`
        each poll while the states stood still (a task that had ended stayed RUNNING). A job not
        seen yet may simply not be in accounting yet: that is no problem."""
        named = {t.job_id for t in answer.own} | {t.job_id for t in answer.ranged}
        # the ledger's ends are no listing: a record with some ends recorded whose job accounting purged
        # was said, every 30 s for ever, to have "no row of job(s) J, which Slurm listed before"
        seen = {job for (job, _), state in self._states.items() if state.source != LEDGER}
        if named.intersection(jobs) or not seen.intersection(jobs):
            return
        listed = ",".join(j for j in jobs if j in seen)
        raise QueryError(f"sacct answered with no row of job(s) {listed}, which Slurm listed before", "empty")

    def _forget_usage_before_end(self, states) -> None:
        """Drop accounting's figures of a task the controller says ended, taken before its end.

        A sacct asked while the task waited (a pending range row: elapsed 0) or ran (its time and
        peak so far) is not what it used; recorded with its end, the ledger said `00:00:00/00:10:00`
        of a task that ran 12 s, and that figure won over accounting's later (`status`, the
        console's usage). Without them the end is recorded without usage, which the next sacct
        (the wait's last one, `status`, the console) adds."""
        for state in states:
            if state.state.is_terminal and state.key in self._usage and state.key not in self._usage_ended:
                del self._usage[state.key]

    def _failed(self, source: str, exc: QueryError, started: float) -> None:
        """Record a failed query: its source's streak (from `started` if new), the budget, the pace."""
        self._errors.append(str(exc))
        health = self._health[source]
        if health.since is None:
            health.since = started
        health.error, health.kind = str(exc), exc.kind
        if exc.kind != "unreachable":
            self.budget.charge(1, started)
        if exc.kind in ("rate_limited", "timeout"):
            self._slow = min(MAX_SLOWDOWN, self._slow * 2)

    def by_cluster(self, jobs: Sequence[str], run: Runner) -> list[tuple[Runner, list[str]]]:
        """`jobs` by the cluster each is asked on, each group with `run` asking it: one group, `run`
        itself, unless the watched jobs are on more than one cluster (`clusters`)."""
        if self._clusters is None:
            return [(run, list(jobs))]
        groups: dict[str | None, list[str]] = {}
        for job in jobs:
            groups.setdefault(self._clusters.get(job), []).append(job)
        return [(for_cluster(run, cluster), group) for cluster, group in groups.items()]

    def _call(self, argv: Sequence[str]) -> CommandResult:
        """The runner, awaited so that a stop ends the wait at once and a slow answer is told.

        On stop the query gets STOP_GRACE to end (a `stoppable` runner kills its
        process meanwhile); Ctrl-C in the waiting thread is a stop too.
        """
        call = _Call(self._runner, argv)
        told = float("-inf")
        try:
            while not call.done.wait(STOP_STEP):
                if self._stop.is_set():
                    raise QueryStopped(f"{argv[0]} stopped")
                told = self._tell_waiting(told)
        except (QueryStopped, KeyboardInterrupt):
            self._stop.set()
            call.done.wait(STOP_GRACE)
            raise
        return call.result()

    def client(self, argv: Sequence[str]) -> CommandResult:
        """The runner of the queries an observer makes between polls (the throttler's squeue and
        scontrol, moving --max-jobs-run slots): awaited as a poll's own, so a stop ends it and one
        unanswered for `slow` s is told to run's `waiting` while it lasts (`controller (scontrol)
        not answering for 7 s: scontrol has not returned yet`). A hung scontrol held every face's
        next poll for its 30 s timeout with nothing said: a watch's screen stood still, ageless."""
        asking = self._asking
        self._asking = (argv[0], self._clock())
        try:
            return self._call(argv)
        finally:
            self._asking = asking

    def _tell_waiting(self, told: float) -> float:
        """Every WAITING_EVERY s while a watched query is awaited and there is a problem (this
        query is `slow` old, or a source failed earlier, e.g. squeue before this sacct), hand
        `waiting` an update: its ages go on growing until the poll ends."""
        now = self._clock()
        if self._waiting is None or self._asking is None or now - told < WAITING_EVERY:
            return told
        problem = self.problem(now)
        if problem is None:
            return told
        self._waiting(PollUpdate(dict(self._states), (), None, False, self.interval,
                                 problem, self._as_of, dict(self._usage), dict(self._live_usage),
                                 troubles=self.troubles(now)))
        return now

    def _query(self, jobs: list[str], now: float) -> tuple[dict[Key, TaskState], set[Key]]:
        """Candidates from this poll's answers and the range-row keys among them.

        While squeue fails, sacct stands in for it at its own (busy) pace, so
        live tasks still move; while squeue's outage lasts it is retried free.
        A refused sacct is asked again at that pace even when squeue names every
        task (the retry is free), so its problem ends as soon as it answers; a
        hung one is not (30 s each time would hold up squeue's states): its
        problem (or a rate-limited or unreadable one's) ends with the first
        poll whose tasks squeue names all, as no state shown waits on it then.
        """
        live_jobs = [j for j in jobs if j not in self._gone]
        squeue = self._ask("squeue", live_jobs) if live_jobs else []
        rows = {t.key: t for t in squeue or () if self._wanted(t)}
        need = [j for j in jobs if j in self._gone]
        if squeue is None:
            need = jobs if now >= self._sacct_due else need
            waiting = list(need)
        else:
            need += [j for j in self._unanswered(live_jobs, rows) if j not in need]
            waiting = list(need)          # jobs whose states wait on sacct (not only COMPLETING ones)
            need += [j for j in self._completing(rows) if j not in need]
            if self._health["sacct"].kind == "unreachable" and now >= self._sacct_due:
                need += [j for j in jobs if j not in need]   # free: asked until it answers again
        sacct = None
        if need and self.budget.room(now) >= 1:
            sacct = self._ask("sacct", need, expect=waiting)
            self._sacct_due = now + self._pace(1, changed=True)
        elif squeue is not None and not need and self._health["sacct"].kind != "unreachable":
            self._health["sacct"] = _Health()    # the controller named every task: no state waits on sacct
        if sacct is not None and squeue is not None:
            self._note_gone(need, squeue, sacct)
            self._forget(live_jobs, need, squeue, sacct)
        candidates, ranged = self._combine(squeue, sacct, now)
        if self._forgotten:
            candidates = without_forgotten(candidates, self._forgotten)
        return candidates, ranged

    def _forget(self, asked: list[str], need: list[str], squeue, sacct: SacctRows) -> None:
        """Jobs the controller says it knows none of ("Invalid job id specified", asked about alone)
        while accounting still has them running or waiting: they ended (the controller forgets a
        job only MinJobAge after its end) and slurmdbd missed how (a controller restart). Their
        unended tasks are not known, and no poll will tell more: a watch (hyperion-submit's wait,
        the console) showed them RUNNING and polled for ever, as `status` did before it said so.
        One squeue of the job alone when several were asked (of several, Slurm prints nothing)."""
        in_squeue = {t.job_id for t in squeue}
        live = {t.job_id for t in (*sacct.own, *sacct.ranged) if not t.state.is_terminal}
        for job in forgotten_among([j for j in need if j in asked], live, in_squeue,
                                   lambda j: self._squeue_unknown if asked == [j] else self._knows_none(j)):
            self._forgotten[job] = f"squeue -j {job} said {SQUEUE_UNKNOWN_JOB!r}"
        for key, state in list(self._states.items()):
            if key[0] in self._forgotten and not state.state.is_terminal:
                del self._states[key]
        self._unknown |= {key for key in self._watched_keys() if key[0] in self._forgotten
                         and not self._terminal(*key)}
        self._unknown |= {t.key for t in (*sacct.own, *sacct.ranged) if t.job_id in self._forgotten
                          and self._wanted(t) and not self._terminal(*t.key)}

    def not_known(self, jobs: Collection[str]) -> None:
        """Take `jobs` as jobs Slurm has no trace of (sacct and squeue, both answering, name none of
        them: purged from accounting, another cluster's), as a watch of a record found them
        (`unknown_jobs.UnknownJobs`): they are asked about no more, their unended tasks have no
        state and never will, and the poll ends once the other jobs' tasks ended (a record whose
        attempt 1 waits in such a job was watched for ever after attempt 2's job ended). Not
        `forgotten`: nothing of them is in `unknown`, whose line says the controller forgot them."""
        self._not_known |= {job for job in jobs if job in self._expected and not any(
            j == job and state.source != LEDGER for (j, _), state in self._states.items())}

    def _knows_none(self, job: str) -> bool:
        """Whether squeue, asked about `job` alone, says it knows no such job (charged as any call)."""
        started = self._clock()
        if self.budget.room(started) < 1:
            return False
        try:
            return controller_knows_none(job, self.by_cluster([job], self._call)[0][0])
        finally:
            self.budget.charge(1, started)

    def _forgotten_text(self) -> str | None:
        if not self._forgotten:
            return None
        jobs = sorted(self._forgotten, key=int)
        return source_problem("squeue", "; ".join(self._forgotten[j] for j in jobs), "forgotten",
                              what=f"job(s) {','.join(jobs)}")

    def _combine(self, squeue, sacct: SacctRows | None, now: float) -> tuple[dict[Key, TaskState], set[Key]]:
        if squeue is not None and sacct is not None:
            merged = {k: t for k, t in merge(sacct, squeue).items() if self._wanted(t)}
            in_squeue, in_sacct = {t.job_id for t in squeue}, {t.job_id for t in sacct.own}
            ranged = range_only(sacct, squeue)
            lagging = {k for k in ranged if k in merged and not merged[k].state.is_terminal}
            merged.update(self._vanished(merged, in_squeue, in_sacct, now, lagging))
            merged.update(self._not_started(squeue, sacct, merged))
            return merged, ranged
        if squeue is not None:
            return {t.key: t for t in squeue if self._wanted(t)}, set()
        if sacct is not None:
            alone = {k: t for k, t in accounting_only(sacct).items() if self._wanted(t)}
            return alone, range_only(sacct, [])
        return {}, set()

    def _not_started(self, squeue, sacct: SacctRows, merged: Mapping[Key, TaskState]) -> dict[Key, TaskState]:
        """`never_started`'s CANCELLED states from this poll's two answers, as `status` tells them:
        only of jobs the controller lists no unfinished task of (`live_jobs`). A job asked of
        accounting alone (`_gone`) is one the controller no longer listed at all: nothing starts."""
        if self._never_started is None:
            return {}
        answer = Snapshot(dict(merged), {}, live_jobs=live_job_ids(squeue), accounted_jobs=accounted_job_ids(sacct))
        return {key: state for key, state in self._never_started(answer).items()
                if self._watched(key) and key not in merged and not self._terminal(*key)}

    def _note_gone(self, asked: list[str], squeue, sacct: SacctRows) -> None:
        """Jobs accounting knows but the controller no longer lists: ask only sacct about them.

        Not a job accounting says still runs or waits: the controller forgets a job only
        MinJobAge after its end, so its empty answer was no word on it (a site wrapper, a
        glitch), and taking it for one left the watch on sacct alone for the rest of the run,
        the controller never asked again once it answered."""
        in_squeue = {t.job_id for t in squeue}
        in_sacct = {t.job_id for t in sacct.own} | {t.job_id for t in sacct.ranged}
        live = {t.job_id for t in (*sacct.own, *sacct.ranged) if not t.state.is_terminal}
        self._gone.update(j for j in asked if j in in_sacct and j not in in_squeue and j not in live)

    def _vanished(self, candidates: Mapping[Key, TaskState], in_squeue: set[str],
                  in_sacct: set[str], now: float, lagging: set[Key] = frozenset()) -> dict[Key, TaskState]:
        """Unfinished tasks missing from both answers (see VANISHED_AFTER), as CANCELLED.

        A task of a job the controller lists that only a `lagging` pending-range row
        names counts as missing too: the controller lists every task of its jobs (the
        waiting rest as a range row, `squeue_argv`),
        and waiting for accounting to drop it from the range took one more poll at
        the idle pace (18 s in all for `watch` of a task cancelled just before).

        `now` is when the poll started, as its squeue was asked: the next poll is
        scheduled from it, so a miss timed after the queries (0.1-0.2 s later) made
        the poll due VANISHED_AFTER later fall short of it, and cost one more.
        """
        out: dict[Key, TaskState] = {}
        for key in self._watched_keys():
            known = self._states.get(key)
            job = key[0]
            if job in in_squeue:
                wait = self._vanished_after
            elif job in self._gone and job in in_sacct:
                wait = max(self._vanished_after, GONE_VANISHED_AFTER)
            else:
                wait = None
            missing = key not in candidates or (key in lagging and job in in_squeue)
            if wait is None or not missing or (known and known.state.is_terminal):
                self._missing_since.pop(key, None)
                continue
            first, polls, _ = self._missing_since.get(key, (now, 0, wait))
            self._missing_since[key] = (first, polls + 1, wait)
            if polls + 1 >= 2 and now - first >= wait:
                out[key] = TaskState(key[0], key[1], JobState.CANCELLED, source="squeue")
        return out

    def _final_sacct(self, now: float, seen: tuple[TaskState, ...] = ()) -> tuple[TaskState, ...]:
        """Every task has ended per the controller: one sacct for all jobs, for the final rows.

        Accounting's own row replaces the controller's when both name the same
        end (it is the lasting record, and carries what other readers of the
        same query want, such as usage); a row that lags behind or tells of an
        earlier attempt is ignored, and nothing waits for it. `waiting` first
        hears of the controller's ends (`seen`): a sacct that hangs (30 s) held
        them back, and its slowness is said as any watched query's is.
        """
        if self._asked_sacct or self.budget.room(now) < 1 \
                or all(s.source == LEDGER for s in self._states.values()):   # nothing ended while watched
            return ()
        if self._waiting is not None and seen:
            self._waiting(PollUpdate(dict(self._states), seen, None, False, self.interval, self.problem(now),
                                     self._as_of, dict(self._usage), dict(self._live_usage),
                                     troubles=self.troubles(now)))
        sacct = self._ask("sacct", list(self._expected))
        if sacct is None:
            self._errors.pop()
            self._health["sacct"] = _Health()   # the states are final already; not a problem
            return ()
        changed = []
        for task in sacct.own:
            old = self._states.get(task.key)
            if old is None or old.source == LEDGER or not self._wanted(task) or task.state is not old.state:
                continue
            task = replace(controller_code(task, old), restart_count=old.restart_count)
            self._states[task.key] = task
            if not _same(old, task):
                changed.append(task)
        return tuple(changed)

    # --- one poll --------------------------------------------------------------------------

    def _apply(self, candidates: Mapping[Key, TaskState], range_rows: set[Key]) -> tuple[TaskState, ...]:
        changed = []
        for key, new in candidates.items():
            old = self._states.get(key)
            if not _accept(old, new, key in range_rows):
                continue
            if new.restart_count is None and old is not None and old.restart_count is not None:
                new = replace(new, restart_count=old.restart_count)
            self._states[key] = new
            if old is None or not _same(old, new):
                changed.append(new)
        return tuple(changed)

    def poll_once(self) -> PollUpdate:
        """One squeue for every unfinished job (and one sacct when needed), applied."""
        now = self._clock()
        self._last_poll = now
        self._errors, self._asked_sacct = [], False
        jobs = [job for job in self._expected if not self._job_done(job)]
        changed: tuple[TaskState, ...] = ()
        if jobs:                          # settled tasks' jobs ride along in the squeue asked anyway
            changed = self._apply(*self._query(jobs + [j for j in self._recheck if j not in jobs], now))
            if self._all_terminal():
                changed += self._final_sacct(now, changed)
        elif not self._polled and self._recheck:
            changed = self._requeue_check(now)
        self._polled = True
        if not self._errors:
            self._slow = max(1.0, self._slow / 2)
        # paced from the poll's end: a pace counted from its start let the daemon, which sees each
        # call a varying moment after it starts, count 7 calls of a 10 s pace in one minute
        self._schedule(self._clock(), bool(changed))
        now = self._clock()
        return PollUpdate(dict(self._states), changed, "; ".join(self._errors) or None,
                          self._all_terminal(), self.interval, self.problem(now), self._as_of,
                          dict(self._usage), dict(self._live_usage), self._unconfirmed, self.troubles(now),
                          self._forgotten_text(), frozenset(self._unknown))

    def _requeue_check(self, now: float) -> tuple[TaskState, ...]:
        """Only ended tasks to look at (a record that ended lately): one squeue, for a task Slurm
        runs again. An unanswered one is no outage to report and no reason for a sacct: no state
        shown waits on it, and the recorded ends stand, as in `status`."""
        squeue = self._ask("squeue", list(self._recheck), watched=False)
        if squeue is None:
            self._unconfirmed = "; ".join(self._errors) or None
            self._errors, self._health["squeue"] = [], _Health()
            return ()
        return self._apply(*self._combine(squeue, None, now))

    def _pace(self, calls: int, changed: bool) -> float:
        per_call = (self._busy if changed else self._idle) * self._slow
        interval = max(1, calls) * per_call
        return max(self._floor, interval if changed else min(self._cap, interval))

    def _schedule(self, now: float, changed: bool) -> None:
        """When the next poll is due: by pace, sooner while a daemon is down (retry is free)."""
        interval = self._pace(2 if self._needs_sacct() else 1, changed)
        if any(h.kind == "unreachable" for h in self._health.values()):
            interval = min(interval, max(self._floor, OUTAGE_RETRY))
        for key in [k for k in self._missing_since if self._terminal(*k)]:
            del self._missing_since[key]      # reported (CANCELLED) or ended: nothing left to confirm
        if self._missing_since and self._slow <= 1:   # gone from both answers (scancel of a pending task)
            interval = min(interval, max(self._floor, self._look_again(now) - now))
        self.interval = interval
        self._next_poll = now + interval

    def _look_again(self, now: float) -> float:
        """When to look again at a missing task: when it can be confirmed, if that is within
        VANISHED_AFTER (a poll paced 3 s after the first miss left the confirmation 5 s later
        still), else VANISHED_AFTER from now."""
        due = (first + wait for first, _, wait in self._missing_since.values())
        return min(when if when - now <= self._vanished_after else now + self._vanished_after for when in due)

    def _needs_sacct(self) -> bool:
        return bool(self._gone) or self._health["squeue"].since is not None

    def problem(self, now: float | None = None, aged: bool = True) -> str | None:
        """``accounting (sacct) not answering for 40 s: ...`` for every failing source, or None.

        A source counts as not answering from the start of its first unanswered
        query, also while that query is still awaited (after `slow` seconds).
        Without `aged`, the same words less how long (``... not answering: ...``):
        for a note said once, where the age of the first failure read "for 0 s".
        """
        now = self._clock() if now is None else now
        return "; ".join(source_problem(source, error, kind, now - since if aged else None, self.interval)
                         for since, source, error, kind in self._failing(now)) or None

    def troubles(self, now: float | None = None) -> tuple[Trouble, ...]:
        """The problem's lines with the time.time() each began: a face that redraws between polls
        says how long each lasts as of the redraw (`troubles_text`), not as of the last poll."""
        now = self._clock() if now is None else now
        wall = self._wall() - (self._clock() - now)
        return tuple(Trouble(wall - (now - since), source, error, kind, self.interval)
                     for since, source, error, kind in self._failing(now))

    def _failing(self, now: float) -> list[tuple[float, str, str, str | None]]:
        """Per failing source: since when (clock), the source, its error and kind."""
        out = []
        for source, health in self._health.items():
            if health.since is not None:
                out.append((health.since, source, health.error or "", health.kind))
            elif self._asking is not None and self._asking[0] == source \
                    and now - self._asking[1] >= self._slow_query:
                out.append((self._asking[1], source, f"{source} has not returned yet", None))
        if self._asking is not None and self._asking[0] not in self._health \
                and now - self._asking[1] >= self._slow_query:    # an observer's query (`client`)
            out.append((self._asking[1], self._asking[0], f"{self._asking[0]} has not returned yet", None))
        return out

    # --- the loop --------------------------------------------------------------------------

    def _due(self) -> float:
        """The next poll's time: its schedule, pushed back until the budget allows a call."""
        due = max(self._next_poll, self._last_poll + self._floor)
        if not any(h.kind == "unreachable" for h in self._health.values()):
            due = max(due, self.budget.earliest(1, due))
        return due

    def _nudged(self, now: float) -> bool:
        if self._nudge is None or now < self._last_poll + self._floor or not self.budget.allows(1, now):
            return False
        return bool(self._nudge(self._states))

    def _wait(self, stop: threading.Event) -> None:
        """Sleep until the next poll is due or a nudge says something just happened."""
        while not stop.is_set():
            now = self._clock()
            due = self._due()
            if now >= due or self._nudged(now):
                return
            step = min(self._tick, due - now) if self._nudge is not None else due - now
            if self._sleep is not None:
                self._sleep(step)
            elif stop.wait(step):
                return

    def run(self, observer: Callable[[PollUpdate], object],
            stop: threading.Event | None = None,
            waiting: Callable[[PollUpdate], object] | None = None) -> PollUpdate:
        """Poll until every expected task is terminal, `stop` is set or the observer
        returns True (it has seen enough, e.g. a task that can never run); the last update.

        `waiting` hears, every second, of a query unanswered for `slow` seconds
        (its problem says so): only to show; it must not ask Slurm itself.
        """
        stop = stop or threading.Event()
        self._stop, self._waiting = stop, waiting
        update = self._current()
        while True:
            try:
                update = self.poll_once()
                seen_enough = observer(update) is True
            except QueryStopped:       # a query (or the observer's) cut short by stop
                return update
            if seen_enough or update.all_terminal or stop.is_set():
                return update
            self._wait(stop)
            if stop.is_set():
                return update

    def _current(self) -> PollUpdate:
        """What is known now, as an update with no change (for a stop before the first answer)."""
        now = self._clock()
        return PollUpdate(dict(self._states), (), None, self._all_terminal(), self.interval,
                          self.problem(now), self._as_of, dict(self._usage), dict(self._live_usage),
                          troubles=self.troubles(now))

