"""Whether the task whose log `hyperion-jobs logs -f` follows has ended: `tail -f --pid` for array tasks.

Following went on until Ctrl-C long after the task had ended. The end is
read the way every other face reads it, nothing of its own: the row `status`
shows (`rows.task_row`: the ledger's final state unless Slurm ran the task
again, a local task's start and end lines, a runner gone: LOST), with Slurm's
states from the shared Poller, so squeue and sacct are asked within the same
query budget as a wait (nudged by the task's log footer, idle otherwise), and
a requeued task is followed until its new run ends. A local task's end is in
its ledger: read at most once a second, as `watch` of a local record does.

`row_end` is the stopping rule, the console's log pane title's too (`ended_words`: "· ended
FAILED (exit 3)" once the row it shows says so, where it said "· following" for ever);
`end_watch` picks how to learn the row.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from backends.cluster import for_cluster
from backends.errors import InputError
from backends.printable import printable
from backends.records.history import History, load_history
from backends.records.record import LOCAL_JOB, TaskRecord
from backends.states import EXIT_TOLD, WAITING, signal_name
from backends.watch.finals import FinalsRecorder
from backends.watch.nudge import LogNudge
from backends.watch.poller import MIN_GAP, Poller, PollUpdate
from backends.watch.requeued import requeuable, settled
from backends.watch.rows import TaskRow, job_rows, task_row
from backends.watch.slurm.accounting import Runner, stoppable
from backends.watch.targets import shown_as_recorded

Key = tuple[str, "int | None"]
CAP = 30.0             # longest pause between two polls while nothing changes (watch's default --cap)
LOCAL_EVERY = 1.0      # a local task's ledger is read at most this often
CLOSE_WAIT = 5.0       # how long closing waits for the watch thread to kill a query under way (it looks every 0.1 s)


@dataclass(frozen=True)
class TaskEnd:
    """How a task ended, as `status` shows it: the state, and the program's exit code when it told one."""

    state: str
    exit_code: int | None = None
    signal: int | None = None
    # a task of a job the controller forgot while accounting has it running (`PollUpdate.unknown`):
    # it ended, how is not known; `status`'s line saying so (`PollUpdate.forgotten_line`)
    unknown: str | None = None

    def said(self) -> str:
        """``FAILED (exit 3)``, ``TIMEOUT``, ``CANCELLED (SIGKILL)``: the signal by its name, as
        `history` says ``FAILED (SIGHUP)`` of a hung-up task."""
        notes = [f"exit {self.exit_code}"] if self.exit_code is not None else []
        if self.signal:
            notes.append(signal_name(self.signal))
        return printable(self.state) + (f" ({', '.join(notes)})" if notes else "")


def row_end(row: TaskRow) -> TaskEnd | None:
    """The stopping rule: the end of the task `row` shows, None while it may write more of its log.

    Ended is a terminal state (COMPLETED, FAILED, TIMEOUT, CANCELLED, OUT_OF_MEMORY, NODE_FAIL,
    LOST, ...) or a local value its ended run never reached (NOT_RUN: nothing will run it).
    A requeued task's row is its new run's (PENDING, RUNNING) until that run ends, so it has
    not ended. An exit code is shown only where it is the program's (as `status` shows it):
    Slurm's 0:15 for a task it timed out is an artifact.
    """
    if row.state is None:
        return TaskEnd("NOT_RUN") if row.job_id == LOCAL_JOB else None
    if not row.state.is_terminal:
        return None
    told = row.job_id == LOCAL_JOB or row.state in EXIT_TOLD
    return TaskEnd(row.state.value, row.exit_code if told else None, row.signal if told else None)


def ended_words(end: TaskEnd) -> str:
    """``ended FAILED (exit 3)``: how `logs -f` and the console's log pane title say the end."""
    return f"ended {end.said()}"


def program_end_words(state: str, program_code: int | None, short: bool = False) -> str | None:
    """Of a task Slurm ended (TIMEOUT, CANCELLED, OUT_OF_MEMORY, ...; `ended_by_slurm`) whose program
    log ends with its `# Ended (code N)` footer: what that footer tells, said after the state by
    `hyperion-jobs logs`' stderr line and the console's log pane title (``ended OUT_OF_MEMORY: the
    program ended (code 0); a process of it was OOM-killed``).

    The cgroup's memory kill of one child (a worker, a `python -c` the script ran) makes the task
    OUT_OF_MEMORY while the program carries on to its end: both faces said "Slurm ended it, not the
    program" of a program that wrote its footer, code 0 (and a shard its completion manifest).
    sacct cannot tell the two apart (ExitCode 0:125 whether the program ended 0 or was killed); the
    footer can. None without a footer, or with a code above 128 (the program itself died of a
    signal, 137 the memory kill's SIGKILL): then Slurm ended it, as the faces say without this.
    `short`: the same in fewer words (``program exit 0, a process OOM-killed``), for a line of 80
    columns that also names the log (the console's title cut the long words to `the program ended…`).
    """
    if program_code is None or program_code > 128:
        return None
    if short:
        ended = f"program exit {program_code}"
        return f"{ended}, a process OOM-killed" if state == "OUT_OF_MEMORY" else f"{ended}, then Slurm ended it"
    ended = f"the program ended (code {program_code})"
    if state == "OUT_OF_MEMORY":
        return f"{ended}; a process of it was OOM-killed"
    return f"{ended}; Slurm then ended the task"


def ended_text(name: str, end: TaskEnd) -> str:
    """The one stderr line `logs -f` ends with: of a task whose end is not known, `status`'s line."""
    if end.unknown is not None:
        return f"{printable(end.unknown)}; stopped following"
    return f"task {printable(name)} {ended_words(end)}; stopped following"


def cannot_tell_text(name: str, problem: str) -> str:
    """Said once while Slurm does not answer: following goes on, and why its end may pass unseen."""
    return (f"{printable(problem)}; cannot tell whether task {printable(name)} has ended: "
            "following on until Slurm answers or Ctrl-C")


def waiting_text(name: str, row: TaskRow) -> str:
    """Said while the task waits to start (and again when why it waits changes): following a log
    not yet written looked like a hung command. ``task 12_2 is waiting (PENDING: JobArrayTaskLimit);
    its log will follow once it starts``; a task named otherwise (RECORD:VALUE) with its Slurm id."""
    notes = [printable(row.reason)] if row.reason else []
    if row.restart_count:
        notes.append(f"restart {row.restart_count}")
    why = row.state_label + (f": {'; '.join(notes)}" if notes else "")
    who = printable(name) if name == row.slurm_id else f"{printable(name)} ({row.slurm_id})"
    return f"task {who} is waiting ({why}); its log will follow once it starts"


def answers_again_text(name: str) -> str:
    """Said once Slurm answers again after `cannot_tell_text`: the end will be seen once more."""
    return f"Slurm answers again; following task {printable(name)} until it ends"


class EndWatch:
    """Tells the follow loop (which polls it between reads) whether the task has ended.

    `ended()` is cheap and never blocks; `notes()` hands over, once each, what to say
    on stderr (why the end cannot be told now, and that it can again); `close()` stops any query under way.
    """

    def ended(self) -> TaskEnd | None:
        raise NotImplementedError

    def notes(self) -> list[str]:
        return []

    def close(self) -> None:
        return None


class KnownEnd(EndWatch):
    """An end the ledger holds for good (Slurm can no longer run the task again)."""

    def __init__(self, end: TaskEnd) -> None:
        self._end = end

    def ended(self) -> TaskEnd | None:
        return self._end


class LocalEnd(EndWatch):
    """A local task: its row read from the ledger, at most once every LOCAL_EVERY seconds."""

    def __init__(self, name: str, record_path: str, task: TaskRecord,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._name, self._path, self._task, self._clock = name, record_path, task, clock
        self._checked = float("-inf")
        self._end: TaskEnd | None = None
        self._said: str | None = None
        self._notes: list[str] = []

    def ended(self) -> TaskEnd | None:
        now = self._clock()
        if self._end is None and now - self._checked >= LOCAL_EVERY:
            self._checked = now
            try:
                self._end = row_end(task_row(load_history(self._path), self._task, {}))
            except (InputError, OSError) as err:     # a ledger being rewritten, a record gone meanwhile
                problem = err.problem if isinstance(err, InputError) else str(err)
                if self._said is None:
                    self._said = problem
                    self._notes.append(cannot_tell_text(self._name, f"cannot read {self._path}: {problem}"))
        return self._end

    def notes(self) -> list[str]:
        out, self._notes = self._notes, []
        return out


class SlurmEnd(EndWatch):
    """A Slurm task: the shared Poller in a thread (its budget, its nudges, its requeue look),
    the ends it sees written into the ledger as `watch` writes them."""

    def __init__(self, name: str, key: Key, history: History | None, task: TaskRecord | None,
                 floor: float | None = None, runner: Runner | None = None, cap: float = CAP,
                 cluster: str | None = None) -> None:
        self._name, self._key, self._history, self._task = name, key, history, task
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._end: TaskEnd | None = None
        self._notes: list[str] = []
        self._told = False
        self._waiting: tuple | None = None     # the wait last said (state, reason); None: not waiting
        self._looked = False                   # whether a poll has named the task yet
        ended = settled(history, [task]) if history is not None and task is not None else {}
        self._finals = (FinalsRecorder(history.record_path, [task], settled=ended, since=history.ledger.size)
                        if history is not None and task is not None else None)
        expected = {key[0]: (key[1],) if key[1] is not None else None}
        self._poller = Poller(expected, floor=max(MIN_GAP, floor or MIN_GAP), cap=max(cap, floor or 0),
                              runner=for_cluster(runner or stoppable(self._stop),
                                                 _cluster(history, task) if history is not None else cluster),
                              nudge=LogNudge([task]) if task is not None else None, settled=ended)
        self._thread = threading.Thread(target=self._run, daemon=True, name="logs -f end")
        self._thread.start()

    def _run(self) -> None:
        try:
            last = self._poller.run(self._observe, self._stop, self._observe)
        except Exception as err:    # noqa: BLE001 - following goes on; the user is told why it may not stop
            self._note(cannot_tell_text(self._name, f"watching its state failed: {err}"))
            return
        if self._stop.is_set() or not last.all_terminal:
            return
        if last.unconfirmed:       # the look for a requeue failed: the recorded end stands, as `status` says it
            self._note(shown_as_recorded(last.unconfirmed))
        row = self._row(last)
        end = row_end(row) if row is not None else None
        if end is None and self._forgotten(last):     # it followed for ever: no poll tells more
            end = TaskEnd("UNKNOWN", unknown=last.forgotten_line(1))
        with self._lock:
            self._end = end

    def _forgotten(self, update: PollUpdate) -> bool:
        """Whether the task is one of a job the controller forgot while accounting has it running."""
        job, task = self._key
        return update.forgotten is not None and (
            self._key in update.unknown or (task is None and any(key[0] == job for key in update.unknown)))

    def _observe(self, update: PollUpdate) -> bool:
        if self._finals is not None and update.changed:
            self._finals.observe(update.changed, update.usage)
        failing = bool(update.problem or update.error)
        if failing and not self._told and not update.all_terminal:
            self._told = True      # said once: how long Slurm has not answered ("for 0 s") is no news there
            problem = (self._poller.problem(aged=False) if update.problem else None) or update.problem or update.error
            self._note(cannot_tell_text(self._name, problem))
        elif not failing and self._told:
            self._told = False     # the user was told the end may pass unseen: now it will not
            self._note(answers_again_text(self._name))
        if update.changed or not self._looked:
            self._say_waiting(update)
        return False

    def _say_waiting(self, update: PollUpdate) -> None:
        """One line while the task waits to start, one more per change of why (its state or Slurm's
        reason): from the states the poll brought, no query of its own; nothing per poll."""
        if self._key not in update.states:
            return
        self._looked = True
        row = self._row(update)
        if row is None or row.state not in WAITING:
            self._waiting = None    # started (or ended): a later wait (a requeue) is said again
            return
        now = (row.state, row.reason)
        if now != self._waiting:
            self._waiting = now
            self._note(waiting_text(self._name, row))

    def _row(self, update: PollUpdate) -> TaskRow | None:
        if self._history is not None and self._task is not None:
            return task_row(self._history, self._task, update.states, update.usage)
        rows = job_rows(update.states, None, update.usage, self._key)
        return next((r for r in rows if (r.job_id, r.task_id) == self._key), rows[0] if rows else None)

    def _note(self, text: str) -> None:
        with self._lock:
            self._notes.append(text)

    def ended(self) -> TaskEnd | None:
        with self._lock:
            return self._end

    def notes(self) -> list[str]:
        with self._lock:
            out, self._notes = self._notes, []
        return out

    def close(self) -> None:
        """Stop watching; a query under way is killed with its process group before this returns
        (the thread is a daemon: left to run, it was frozen at exit and a hung squeue ran on)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(CLOSE_WAIT)


def end_watch(name: str, key: Key | None, history: History | None, task: TaskRecord | None,
              floor: float | None = None, runner: Runner | None = None,
              cluster: str | None = None) -> EndWatch | None:
    """How to learn when the task followed ends; None when nothing names it (nothing to ask).
    `cluster`: the one a job id no record names is asked of (-M); a record's jobs, of its own."""
    if history is not None and task is not None:
        if task.job_id == LOCAL_JOB:
            return LocalEnd(name, history.record_path, task)
        final = history.final(task)
        again = {(t.job_id, t.array_task_id) for t in requeuable(history)}
        if final is not None and (task.job_id, task.array_task_id) not in again:
            end = row_end(task_row(history, task, {}))
            return KnownEnd(end or TaskEnd(final.state))   # a state no Slurm wrote is still an end
        return SlurmEnd(name, (task.job_id, task.array_task_id), history, task, floor, runner)
    if key is None:
        return None
    return SlurmEnd(name, key, None, None, floor, runner, cluster=cluster)


def _cluster(history: History | None, task: TaskRecord | None) -> str | None:
    """The cluster to ask about the followed task: its own attempt's (`History.cluster_of`); asked
    of every attempt's, `logs -f` of an attempt 1 task after a retry on another cluster never ended."""
    if history is None:
        return None
    return history.cluster_of(task) if task is not None else history.cluster
