"""``--max-jobs-run N`` for a submission split into array windows: N at most, all N busy.

Slurm's ``%N`` limits one array; a submission of several windows gets each
window its share (``backends.ranges.share_slots``, summing to N, a window left
without a slot submitted held). As windows drain, whoever waits for the
submission (hyperion-submit, or ``hyperion-jobs watch RECORD`` after it)
moves the freed slots to the earliest window that still has tasks to start,
with ``scontrol update JobId=X ArrayTaskThrottle=K`` (and ``scontrol release``
for a held window). A throttle is only ever raised on a window that still has
tasks to start, and only by slots no other window can use, so the sum of what
can run never exceeds N; if nobody waits, the throttles simply stay as they
were (never above N, possibly fewer than N busy).
"""
from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from backends.printable import printable
from backends.ranges import compress
from backends.records.record import SubmitRecord, reattach_command
from backends.shellwords import shell_quote
from backends.states import JobState, TaskState
from backends.watch.budget import QueryBudget
from backends.watch.rows import expected
from backends.watch.slurm.accounting import QueryError, Runner, run_command
from backends.watch.slurm.control import HELD_REASONS, WindowControl, pending_arrays, release, set_throttle

Key = tuple[str, "int | None"]
# Tasks that hold one of the window's slots as Slurm counts them.
_HOLDING = frozenset({JobState.RUNNING, JobState.CONFIGURING, JobState.COMPLETING})


@dataclass(frozen=True)
class WindowLoad:
    """One window now: tasks holding slots, tasks that may still start, its throttle and hold."""

    job_id: str
    running: int
    waiting: int
    throttle: int | None      # None: unknown (counted as if every waiting task could start)
    held: bool = False        # held, and ours to release (see `Throttler._paused`)
    ended: int = 0            # tasks that ran and ended (one cancelled while it waited never ran)
    paused: bool = False      # held by the user or an admin: its slots kept for it, never released
    admin: bool = False       # an operator's hold (JobHeldAdmin): never the plan's


@dataclass(frozen=True)
class ThrottleChange:
    job_id: str
    throttle: int
    release: bool = False


@dataclass(frozen=True)
class SlotFailure:
    """The throttler's call Slurm refused (or did not answer): what it was for, and what it said.

    `action`: "read" (the one squeue of the windows' throttles), "raise" (`job_id`'s throttle to
    `throttle`) or "release" (held `job_id`); `message` the QueryError's text."""

    action: str
    job_id: str | None = None
    throttle: int | None = None
    message: str = ""


def _waiting(state: JobState | None) -> bool:
    """Whether a task in `state` may still start (counted as waiting for a slot): not ended, and
    holding none. None (a row with no state yet) is not: only a task not seen at all is."""
    return state is not None and not state.is_terminal and state not in _HOLDING


def _ran(state) -> bool:
    """Whether an ended task ran (a node or a time): one cancelled while it waited never did, and
    leaves a window's hold the plan's own. `state`: a TaskState or a TaskRow."""
    return state.node is not None or (state.elapsed or 0) > 0


def _taken(load: WindowLoad) -> int:
    """Slots a window may fill without us: what runs, or all its throttle allows if it can start more."""
    if not load.waiting or load.held:     # (a paused window's throttle waits for its release)
        return load.running
    if load.throttle is None:
        return load.running + load.waiting
    # never more than it has to run: a paused window at %2 with one task left kept 2 slots, and with
    # every other slot taken nothing was ever released again
    return max(load.running, min(load.throttle, load.running + load.waiting))


def plan_changes(loads: Sequence[WindowLoad], limit: int) -> tuple[ThrottleChange, ...]:
    """The throttle raises (and releases) that put free slots to work, earliest window first."""
    free = limit - sum(_taken(load) for load in loads)
    changes = []
    for load in loads:
        if free <= 0:
            break
        if not load.waiting or load.paused or (load.throttle is None and not load.held):
            continue
        base = load.running if load.held else max(load.throttle or 0, load.running)
        extra = min(free, load.running + load.waiting - base)
        if extra > 0:
            changes.append(ThrottleChange(load.job_id, base + extra, release=load.held))
            free -= extra
    return tuple(changes)


def window_loads(windows: Sequence[tuple[str, tuple[int, ...]]], states: Mapping[Key, TaskState],
                 control: Mapping[str, WindowControl]) -> list[WindowLoad]:
    """Each window's load from the latest states (a task not seen yet is waiting)."""
    loads = []
    for job, tasks in windows:
        running = waiting = ended = 0
        for task in tasks:
            state = states.get((job, task))
            if state is None or _waiting(state.state):
                waiting += 1
            elif state.state in _HOLDING:
                running += 1
            elif _ran(state):
                ended += 1
        known = control.get(job)
        loads.append(WindowLoad(job, running, waiting, known.throttle if known else None,
                                bool(known and known.held), ended, admin=bool(known and known.admin)))
    return loads


def _shared_limit(record: SubmitRecord) -> int | None:
    """The --max-jobs-run that several windows of `record` share (only then does a watcher move slots)."""
    limit = record.options.get("max_jobs_run") if isinstance(record.options, dict) else None
    if record.backend != "slurm" or not isinstance(limit, int) or len(record.jobs) < 2:
        return None
    return limit


def unwatched_line(record: SubmitRecord, states: Mapping[Key, object]) -> str | None:
    """What stops when the last watcher of `record` goes while its windows still have tasks to run.

    `states`: Key -> TaskState or TaskRow (anything with a `state`), the latest known. Slurm runs
    the jobs on, but only a watcher moves a drained window's slots to the next one: a window
    submitted held waited for ever once a console quit (with no word) and the others drained.
    None when nothing waits on a watcher (one window, no --max-jobs-run, every task ended), or when
    another process's watch still moves them (a hyperion-submit waiting in another terminal, or
    `hyperion-jobs watch`: `backends.watch.movers`); the caller's own watch must have let go of its
    lock by then.
    """
    limit = _shared_limit(record)
    if limit is None:
        return None
    live = _live_windows(record, states)
    if not live:
        return None
    from backends.watch.movers import moved_elsewhere   # only a windowed record's

    if moved_elsewhere(record.path):
        return None
    line = (f"job(s) {','.join(live)} (of {len(record.jobs)} array windows) still have tasks to run under "
            f"the --max-jobs-run {limit} the windows share, and only a watcher moves a drained window's slots "
            f"to the next (a window left without one stays held): wait for them again with: "
            f"{record.reattach or reattach_command(record.path)}")
    paused = _paused_windows(record, live)
    if paused:
        jobs = release_words(paused, live)
        reasons = ",".join(sorted({reason for reasons in paused.values() for reason in reasons}))
        line += (f"; job(s) {jobs} held ({reasons}), which no watcher releases: they run once "
                 f"released (scontrol release {jobs})")
    return line


def _live_windows(record: SubmitRecord, states: Mapping[Key, object],
                  jobs: Collection[str] | None = None) -> dict[str, list]:
    """The windows of `record` (those of `jobs` alone, when given) with a task not ended (or not
    reported yet): job id -> what `states` knows of its tasks (the ones reported)."""
    live = {}
    for job, tasks in expected(record).items():
        if jobs is not None and job not in jobs:
            continue
        reported = [states.get((job, task)) for task in tasks or (None,)]
        if any(getattr(s, "state", None) is None or not s.state.is_terminal for s in reported):
            live[job] = [s for s in reported if s is not None]
    return live


def release_words(paused: Mapping[str, set[str]], live: Mapping[str, Sequence], reason: str | None = None) -> str:
    """What `scontrol release` is given for the `paused` windows (job id -> hold reasons): a window
    some of whose tasks ended, or that holds tasks for another `reason` too, by its held tasks
    (``'12_[3-4,7]'``, quoted for the shell), another by its job id. `scontrol release 12` of an
    array with ended tasks releases the held ones but says `Job has already finished` of each ended
    one and exits 1: the advice pasted looked like it failed. `reason`: only the tasks held so."""
    words = []
    for job, reasons in paused.items():
        if reason is not None and reason not in reasons:
            continue
        known = live.get(job, ())
        waiting = [s for s in known if s.task_id is not None and _waiting(s.state)]
        held = sorted(s.task_id for s in waiting if getattr(s, "reason", None) in HELD_REASONS
                      and (reason is None or s.reason == reason))
        ended = any(s.state is not None and s.state.is_terminal for s in known)
        if held and (ended or len(held) < len(waiting)):
            words.append(f"{job}_{held[0]}" if len(held) == 1 else f"{job}_[{compress(held)}]")
        else:
            words.append(job)
    said = ",".join(words)
    return shell_quote(said) if "[" in said else said


def held_line(record: SubmitRecord, states: Mapping[Key, object], jobs: Collection[str] | None = None) -> str | None:
    """``3 tasks held by you (scontrol release 12637)`` when all `record` has left to run waits on a
    hold no watcher lifts (`scontrol uhold J`; an operator's JobHeldAdmin), else None.

    `states`: Key -> TaskState or TaskRow, the latest known. `jobs`: the windows weighed (a job
    asked for by id: the attempt's other windows, not asked about, would read as not reported);
    None: all of `record`'s. A window the plan submitted held
    (a watcher releases it) is not one. The table said `PENDING JobHeldUser` and the status line
    its age only: a run paused and forgotten looked like one waiting for the cluster. Tasks held
    by you and by an administrator are said apart: yours you may release.
    """
    live = _live_windows(record, states, jobs)
    paused = _paused_windows(record, live)
    if not paused or set(paused) != set(live):
        return None
    known = [state for job in paused for state in live[job]]
    if any(s.state in _HOLDING for s in known):     # a task of a held window still runs: not all left
        return None
    waiting = [s for s in known if _waiting(s.state)]
    yours = sum(1 for s in waiting if s.reason == "JobHeldUser")
    theirs = sum(1 for s in waiting if s.reason == "JobHeldAdmin")

    def held_by(reason: str) -> str:
        words = printable(release_words(paused, live, reason))
        if reason == "JobHeldUser":
            return f"by you (scontrol release {words})"
        return f"by an administrator (JobHeldAdmin: only an administrator's scontrol release {words} lets them run)"

    if yours and theirs:
        return f"{_tasks(len(waiting))} held: {yours} {held_by('JobHeldUser')}, {theirs} {held_by('JobHeldAdmin')}"
    return f"{_tasks(len(waiting))} held {held_by('JobHeldAdmin' if theirs else 'JobHeldUser')}"


def _tasks(count: int) -> str:
    return f"{count} task{'' if count == 1 else 's'}"


def _paused_windows(record: SubmitRecord, live: Mapping[str, Sequence]) -> dict[str, set[str]]:
    """The `live` windows (`_live_windows`: job id -> its tasks' known states) held by the user or
    an operator (job id -> the hold reasons): every task still waiting says JobHeldUser/JobHeldAdmin,
    and the hold is not the plan's (`--hold`, lifted by a watcher before any of its tasks starts). A window paused with `scontrol hold J` and left so
    was told to wait for `hyperion-jobs watch`, which never releases it: the run waited for ever."""
    submitted_held = {job.job_id for job in record.jobs if job.held}
    out: dict[str, set[str]] = {}
    for job, known in live.items():
        waiting = [s for s in known if _waiting(s.state)]
        reasons = {getattr(s, "reason", None) for s in waiting}
        if not waiting or not reasons <= HELD_REASONS:
            continue
        started = any(s.state in _HOLDING or (s.state is not None and s.state.is_terminal and _ran(s))
                      for s in known)
        if job not in submitted_held or "JobHeldAdmin" in reasons or started:
            out[job] = reasons
    return out


_TASKS_NAMED = re.compile(r"\b\d+_[\d\[\]\-,:%]+: ")


def slots_problem(failure: SlotFailure | None) -> str | None:
    """The line a watcher shows while its last try to move slots failed (None: nothing failing).

    Nothing else said it: scontrol refused a drained window's slots to the next (no permission to
    release a hold, the controller down, a job id gone), and the user saw the next window PENDING
    for ever. The watcher tries again at every poll, so the line says that too."""
    if failure is None:
        return None
    lines = [line for line in failure.message.splitlines() if line.strip()]
    # scontrol names the tasks it refused (`11_2-5: Access/permission denied`), fewer as they end:
    # the same refusal would read as a new one at each
    said = printable(_TASKS_NAMED.sub("", lines[0].strip()) if lines else "no answer")
    job = printable(str(failure.job_id))
    if failure.action == "read":
        what = "could not read the array windows' throttles to move free slots between them"
    elif failure.action == "release":
        what = f"could not release held job {job} to run on the slots the other windows freed"
    else:
        # (not the throttle asked: it grows with each slot freed, and one refusal was said at each)
        what = f"could not move free slots to job {job}"
    return f"{what}: {said}; trying again at the next poll"


def slots_recovered(moved: Sequence[ThrottleChange]) -> str:
    """What a watcher that said `slots_problem` says once the next try went through."""
    if not moved:
        return "slots: Slurm no longer refuses; no window waits for free slots now"
    done = ", ".join(f"job {printable(c.job_id)} {'released, ' if c.release else ''}up to {c.throttle} at once"
                     for c in moved)
    return f"slots moved again: {done}"


class SlotsNotice:
    """What a watch that prints lines says of moving slots: each distinct failure once while the
    trouble lasts (a watcher polls every few seconds), and once that it went through again."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def news(self, throttler: "Throttler | None") -> str | None:
        """The line to print after this call of `throttler`, or None (nothing new)."""
        if throttler is None:
            return None
        line = slots_problem(throttler.failure)
        if line is None:
            if not self._said:
                return None
            self._said.clear()
            return slots_recovered(throttler.moved)
        if line in self._said:
            return None
        self._said.add(line)
        return line


class Throttler:
    """Called with every poll's states; moves slots between windows through scontrol.

    `failure`: the last try's refusal (`slots_problem` words it), kept until a later try asks
    Slurm again and is not refused (a poll that asks nothing, out of budget, leaves it); `moved`:
    the changes of the last try that went through."""

    def __init__(self, windows: Sequence[tuple[str, tuple[int, ...]]], limit: int,
                 budget: QueryBudget, runner: Runner = run_command,
                 ours: "frozenset[str] | None" = None, from_start: bool = False) -> None:
        self._windows = list(windows)
        self._ours = ours       # the windows submitted held (None: not recorded; any not started)
        self._released: set[str] = set()   # released by us: a hold seen on one since is the user's
        self._seen_unheld: set[str] = set()   # read not held once: a hold seen since is the user's
        # watching since the submission (hyperion-submit's wait): every release of a window was ours,
        # so one that ran tasks is still the plan's hold (`scontrol release J_1` let one value through)
        self._from_start = from_start
        self._limit = limit
        self._budget = budget
        self._runner = runner
        self._control: dict[str, WindowControl] | None = None
        self._throttles: dict[str, int] = {}   # each window's last known %N (read, or set by us)
        self.failure: SlotFailure | None = None     # the last scontrol/squeue failure, retried next time
        self.moved: tuple[ThrottleChange, ...] = ()
        self._step: SlotFailure | None = None       # the call being made: what a failure of it was for
        self._cut = False                           # the last try left changes for lack of budget

    @classmethod
    def for_record(cls, record: SubmitRecord, budget: QueryBudget, runner: Runner = run_command,
                   watched: "Sequence[Key] | None" = None) -> "Throttler | None":
        """A throttler when the record has several array windows and a --max-jobs-run.

        `watched`: the tasks polled (a watch that reattaches polls only those not
        ended yet); the others ended and hold no slot. Counted as 'not seen yet',
        they made a drained window look full for ever, and a held one never ran.
        """
        limit = _shared_limit(record)
        if limit is None:
            return None
        keep = None if watched is None else set(watched)
        planned = expected(record)
        windows = [(job, tuple(t for t in tasks or () if keep is None or (job, t) in keep))
                   for job, tasks in planned.items()]
        ours = None
        if all(job.held is not None for job in record.jobs):
            # a window with a task that ended (not watched again) was released, or never held
            ours = frozenset(job.job_id for job, (_, tasks) in zip(record.jobs, windows)
                             if job.held and len(tasks) == len(planned.get(job.job_id) or ()))
        return cls([(job, tasks) for job, tasks in windows if tasks], limit, budget, runner, ours,
                   from_start=watched is None)

    @property
    def error(self) -> str | None:
        """The last failure's text (None: the last try went through)."""
        return self.failure.message if self.failure is not None else None

    def __call__(self, states: Mapping[Key, TaskState]) -> tuple[ThrottleChange, ...]:
        """Apply what `plan_changes` says for these states; the changes made."""
        self._step, self._cut = None, False
        if self._control is not None and self._released_since(self._control, states):
            self._control = None
        try:
            if self._control is None:
                if self._budget.room() < 1:
                    return ()
                self._budget.charge(1)
                self._step = SlotFailure("read")
                self._control = self._known(pending_arrays([job for job, _ in self._windows], self._runner))
            loads = [self._paused(load) for load in window_loads(self._windows, states, self._control)]
            done = self._apply(plan_changes(loads, self._limit))
        except QueryError as exc:
            self.failure = replace(self._step or SlotFailure("read"), message=str(exc))
            return ()
        # Slurm was asked and refused nothing, and nothing was left for lack of budget (a change not
        # asked is no change taken): a failure said is over
        if self._step is not None and not self._cut:
            self.failure = None
            self.moved = done
        return done

    def _released_since(self, control: Mapping[str, WindowControl], states: Mapping[Key, TaskState]) -> bool:
        """Whether a window last read held shows no hold in its waiting tasks' own reasons now (the
        user released it): the throttles are read again only after a change of ours, so a window
        paused when they were read, then released, ran at its old share for the rest of the run
        while the slots of the windows that drained sat idle. The poll's reasons cost no query."""
        for job, tasks in self._windows:
            known = control.get(job)
            if known is None or not known.held:
                continue
            reasons = {state.reason for task in tasks if (state := states.get((job, task))) is not None
                       and _waiting(state.state) and state.reason}
            if reasons and not reasons & HELD_REASONS:
                return True
        return False

    def _paused(self, load: WindowLoad) -> WindowLoad:
        """`load`, its hold taken for the user's (or an admin's) unless it is the plan's: a window
        submitted held none of whose tasks started (the watcher lifts that hold before any runs). A
        user who paused a window with `scontrol hold J` while hyperion-submit waited had it released
        at the next drained window; now its slots stay its own until they release it."""
        if not load.held:
            return load
        job = load.job_id
        ours = ((self._ours is None or job in self._ours) and job not in self._released
                and job not in self._seen_unheld and not load.admin)
        started = load.running or load.ended
        if ours and (not started or (self._from_start and self._ours is not None)):
            return load
        return replace(load, held=False, paused=True)

    def _known(self, read: Mapping[str, WindowControl]) -> dict[str, WindowControl]:
        """`read` with each window's last known throttle where its row names none: Slurm drops the
        `%N` from the row of an array whose own record holds one waiting task (the others started or
        have records of their own), and keeps applying it; read as unknown, the window was never
        raised again (`plan_changes` raises only a known throttle)."""
        out = {}
        for job, control in read.items():
            if not control.held:
                self._seen_unheld.add(job)
            if control.throttle is None and job in self._throttles:
                control = replace(control, throttle=self._throttles[job])
            elif control.throttle is not None:
                self._throttles[job] = control.throttle
            out[job] = control
        return out

    def _apply(self, changes: Sequence[ThrottleChange]) -> tuple[ThrottleChange, ...]:
        done = []
        for change in changes:
            calls = 2 if change.release else 1
            if self._budget.room() < calls:
                self._cut = True
                break
            self._budget.charge(calls)
            # read back at the next call, whatever the answer: scontrol exits 1 on an array with
            # ended tasks (naming them beside "No error"), and a call that failed may have changed
            # part of it (a raise taken, its release refused): only the controller says
            self._control = None
            self._step = SlotFailure("raise", change.job_id, change.throttle)
            set_throttle(change.job_id, change.throttle, self._runner)
            self._throttles[change.job_id] = change.throttle
            if change.release:
                self._step = SlotFailure("release", change.job_id, change.throttle)
                release(change.job_id, self._runner)
                self._released.add(change.job_id)
            done.append(change)
        return tuple(done)
