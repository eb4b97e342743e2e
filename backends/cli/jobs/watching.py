"""hyperion-jobs watch: a live table on a terminal, one line per change elsewhere.

Watching a record waits as hyperion-submit does (same pace, nudges, window
throttles for a shared --max-jobs-run, same exit statuses): it is how to
reattach after hyperion-submit's wait ended early.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from datetime import datetime
from typing import Callable, Sequence

from backends.cli.jobs.clusters import asked_cluster, check_history_cluster
from backends.cli.jobs.commands import (no_job_text, record_dirs, say_history_problems, say_rerun_later,
                                       say_shown_as_recorded, site_floor, told_unlisted)
from backends.cli.jobs.parser import PROG
from backends.cli.jobs.signals import signals_stop
from backends.cli.jobs.table import STATUS_HEADER, fmt_exit, status_cells, tasks_text
from backends.errors import InputError, interrupt_status
from backends.printable import printable
from backends.ranges import compress
from backends.records.history import History, load_history
from backends.retry_hint import rerun_failed, state_groups, unsubmitted_line, usable_retry_command
from backends.states import RUNNING_NOW, TaskState, explain_reason, never_runs
from backends.watch.finals import FinalsRecorder
from backends.watch.poller import MIN_GAP, Poller, PollUpdate
from backends.watch.progress import PROBLEM_EVERY, staleness
from backends.watch.requeued import settled, watched_tasks
from backends.watch.rows import (
    LOCAL_JOB,
    Key,
    TaskRow,
    exit_status,
    expected_tasks,
    history_rows,
    job_rows,
    local_rows,
    log_words,
    pending_tasks,
    rerun_by_default,
    state_counts,
    unknown_row,
)
from backends.cluster import for_cluster
from backends.watch.slurm.accounting import run_command, stoppable
from backends.watch.targets import (
    Target,
    attempt_record,
    failed_last,
    job_history as find_job_history,
    job_status,
    knows_none_line,
    resolve,
)
from backends.watch.terminal import SafeStream
from backends.watch.throttle import SlotsNotice, slots_problem, unwatched_line
from backends.watch.unknown_jobs import UnknownJobs
from backends.watch.wait import announced, never_running, task_label, watcher


def cmd_watch(args: argparse.Namespace) -> int:
    if not args.cap >= 1 or args.cap == float("inf"):   # also refuses nan
        raise InputError("--cap", f"must be a number of seconds, at least 1, got {args.cap:g}")
    asked = asked_cluster(args)
    target = resolve(args.target)
    if target.record is not None and asked is not None:     # every attempt's cluster, as the watch asks them
        check_history_cluster(load_history(target.record.path), asked)
    if target.record is not None and target.record.backend == "local":
        return _watch_local(target)
    return _watch_slurm(target, args, asked)


def _watch_expected(target: Target, history: History | None) -> dict[str, tuple[int, ...] | None]:
    if history is not None:
        return expected_tasks([t for t in pending_tasks(history) if t.job_id != LOCAL_JOB])
    assert target.job_id is not None
    return {target.job_id: (target.task_id,) if target.task_id is not None else None}


def _job_poller(target: Target, job_history: History | None, floor: float | None, cap: float,
                stop: threading.Event, asked: str | None = None) -> Poller:
    """The Poller of a bare job id. When its submission was found, the job's tasks are the record's
    (the ends the ledger holds settled): a task cancelled while pending leaves squeue and never gets
    an accounting row, so a watch asking Slurm for "every task of the job" never learned it existed
    and ended `3 tasks: COMPLETED 3`, exit 0, where hyperion-submit said the 4th was CANCELLED."""
    assert target.job_id is not None
    tasks = [t for t in job_history.tasks_of_job(target.job_id)
             if target.task_id is None or t.array_task_id == target.task_id] if job_history is not None else []
    expected = expected_tasks(tasks) if tasks else _watch_expected(target, None)
    return Poller(expected, floor=max(MIN_GAP, floor or MIN_GAP), cap=max(cap, floor or 0),
                  runner=for_cluster(stoppable(stop), attempt_record(job_history, target.job_id).cluster
                                     if job_history is not None else asked),
                  settled=settled(job_history, tasks) if tasks else None)


def _rows_for(history: History | None, update: PollUpdate, job_history: History | None,
              target: Target) -> list[TaskRow]:
    """A record's rows (every value's newest attempt), or a bare job id's with the ledger's final
    states (a task cancelled while pending, the poller never saw), each with its log where it is now."""
    usage = update.current_usage()
    if history is not None:
        return history_rows(history, update.states, usage)
    rows = job_rows(update.states, job_history, usage, (str(target.job_id), target.task_id))
    shown = {(row.job_id, row.task_id) for row in rows}
    unknown = [unknown_row(job, task)
               for job, task in sorted(update.unknown, key=lambda k: (k[0], -1 if k[1] is None else k[1]))
               if (job, task) not in shown]
    return sorted([*rows, *unknown], key=lambda row: (row.job_id, -1 if row.task_id is None else row.task_id))


def _never(target: Target, update: PollUpdate) -> list[tuple[str, str]]:
    """(what, Slurm's reason) for each watched task Slurm will never start."""
    if target.record is not None:
        return [(task_label(task, target.record.array_name), reason)
                for task, reason in never_running(target.record, update.states)]
    return [(f"job {s.slurm_id}", s.reason) for s in update.states.values()
            if not s.state.is_terminal and never_runs(s.reason)]


def _watch_slurm(target: Target, args: argparse.Namespace, asked: str | None = None) -> int:
    history = job_history = unknown = None
    if target.record is None:
        with told_unlisted() as unlisted:
            found, job_history = find_job_history(target, record_dirs(args), for_cluster(run_command, asked),
                                                  unlisted=unlisted)
        if job_history is not None:
            check_history_cluster(job_history, asked, [str(found.job_id)])
        runner = for_cluster(run_command, asked if job_history is None else None)   # a record's: its own
        if not any(row.state is not None for row in job_status(found, job_history, runner, lagging=True)):
            # A record's jobs may be too new for sacct, but squeue knows them at once:
            # a bare id neither knows would be watched forever. A recorded task neither names
            # is a row too (UNKNOWN, as in `status`): a job of a record whose every row is one
            # is a job Slurm knows nothing of (the watch waited for ever without a word).
            raise InputError("JOB", no_job_text(args.target, asked, hint=asked is None) if job_history is None
                             else knows_none_line(job_history.record_path, [str(found.job_id)]))
        # An array task's own job id is watched as ARRAY_TASK, the name Slurm's answers give it
        # (watched by its own id, the watch waited for ever), with its log from the ledger, as status.
        target = found
        say_history_problems(job_history)
    else:
        history = load_history(target.record.path)
        say_history_problems(history)
    record = target.record or (attempt_record(job_history, target.job_id) if job_history else None)
    floor = site_floor(record)
    finals = None
    stop = threading.Event()
    if history is not None:
        pending = watched_tasks(history)
        ended = settled(history, pending)
        poller, throttler = watcher(history.current, floor=floor, cap=args.cap, tasks=pending, stop=stop,
                                    settled=ended, log_of=history.log_of, cluster_of=history.cluster_of)
        finals = FinalsRecorder(history.record_path, pending, settled=ended, since=history.ledger.size)
        unknown = UnknownJobs(history, pending, poller)
    else:
        poller, throttler = _job_poller(target, job_history, floor, args.cap, stop, asked), None
    out = SafeStream(sys.stdout)
    view = LiveView(args.target) if out.isatty() else PlainView(args.target, out)
    never: list[tuple[str, str]] = []
    latest: dict = {}     # the last poll's states: what a Ctrl-C leaves to no watcher

    def observe(update: PollUpdate) -> bool:
        gone = unknown is not None and unknown.none_known(update)
        if gone and not any(row.state is not None for row in _rows_for(history, update, job_history, target)):
            # as `watch J` of such a job says it (bad input, exit 2): nothing would ever be shown
            raise InputError("RECORD", unknown.line())
        latest.update(update.states)
        if finals is not None:
            finals.observe(update.changed, update.usage)
        if throttler is not None and not update.all_terminal:
            throttler(update.states)
        if throttler is not None:       # every task ended: nothing is tried again, nothing to say
            view.slots(None if update.all_terminal else throttler)
        view.show(update, _rows_for(history, update, job_history, target))
        never[:] = _never(target, update)
        return bool(never) or gone    # gone: the recorded ends are shown, the rest is not known

    def waiting(update: PollUpdate) -> None:
        """A query Slurm has not answered for a while: said while it lasts, as a failure is."""
        view.show(update, _rows_for(history, update, job_history, target))

    try:
        with signals_stop(), view, announced(history.record_path if history is not None else "", throttler):
            final = poller.run(observe, stop, waiting)
    except KeyboardInterrupt as exc:
        stop.set()
        _say_unrecorded(finals)
        # this watch's own lock on the record is gone: another's (a hyperion-submit waiting) is seen
        left = unwatched_line(history.current, latest) if throttler is not None and history is not None else None
        if left:
            SafeStream(sys.stderr).line(f"{PROG}: {left}")
        return interrupt_status(exc)
    _say_unrecorded(finals)         # however the watch ends
    if never:
        what, reason = never[0]
        err = SafeStream(sys.stderr)
        err.line(f"{PROG}: error: {what} can never run: Slurm says {printable(explain_reason(reason))}; "
                 f"cancel it with: hyperion-jobs cancel {args.target}")
        return 1
    if final.unconfirmed:     # the one look for requeues of a run that ended lately, as `status` says it
        say_shown_as_recorded([final.unconfirmed])
    rows = _rows_for(history, final, job_history, target)
    if final.forgotten:       # why its tasks are UNKNOWN, as `status` says it: the watch waited for ever
        not_known = sum(1 for row in rows if row.state is None and (row.job_id, row.task_id) in final.unknown)
        SafeStream(sys.stderr).line(f"{PROG}: {final.forgotten_line(not_known)}")
    if unknown is not None and unknown.gone:    # as the forgotten line: why its tasks are UNKNOWN
        SafeStream(sys.stderr).line(f"{PROG}: {unknown.ended_line(final)}")
    retry = usable_retry_command(target.record, (row.state_label for row in rows if not row.ok)) \
        if target.record is not None else _job_retry(job_history, rows)
    unsubmitted = history.unsubmitted()[0] if history is not None else ()
    ended = _ended(out, rows, retry, target.record.array_name if target.record is not None else None, unsubmitted)
    if target.record is None:
        say_rerun_later(job_history, rows)
    left_out = unsubmitted_line(history) if history is not None else None
    if left_out:     # the exit status hyperion-submit gave: what sbatch refused never ran
        SafeStream(sys.stderr).line(f"{PROG}: {left_out}")
        return max(ended, 1)
    return ended


def _job_retry(history: History | None, rows: Sequence[TaskRow]) -> str | None:
    """The rerun command a watch of a job id ends with, as `watch RECORD`'s: its submission's retry
    of the values this job failed that no later attempt ran again (None when there are none, or
    no record of the job was found)."""
    last = failed_last(history, rows)
    if history is None or not last:
        return None
    values = sorted({row.value for row in last if row.value is not None})
    return usable_retry_command(history.current, (row.state_label for row in last), values)


def _ended(out: SafeStream, rows: Sequence[TaskRow], retry: str | None = None, name: str | None = None,
           unsubmitted: Sequence[int] = ()) -> int:
    """The counts, each task that did not succeed with its log, the command that reruns them (`retry`,
    hyperion-submit's last line after failures; `name` and `unsubmitted` say the values a refused
    window left out, which it submits too), and the exit status of `status`.

    The values a local run never reached are one line: after a failure at value 2 of 10000,
    9998 lines of `NOT_RUN exit - log ...` buried the one that failed.
    """
    out.line(tasks_text(rows))
    gathered = [row.state_label == "NOT_RUN" and row.value is not None for row in rows]
    not_run = [row.value for row, one in zip(rows, gathered) if one]
    for row, one in zip(rows, gathered):
        if not row.ok and not one:
            # `log PATH (missing)`: none was written; `no log (never started)`: none was to be
            out.line(f"  {row.slurm_id} {row.state_text} exit {fmt_exit(row)} {printable(log_words(row))}")
    if not_run:
        out.line(f"  {_not_run_line(rows, not_run, retry)}")
    elif retry and not all(row.ok for row in rows):    # printable already
        out.line(f"  {rerun_failed(retry, name, unsubmitted)}")
    return exit_status(rows)


def _not_run_line(rows: Sequence[TaskRow], not_run: Sequence[int], retry: str | None) -> str:
    """``NOT_RUN values 2-3 (the run stopped before them; CMD runs them)``, or, when the retry reruns
    others too (the LOST or FAILED task the run stopped at: `rerun_by_default`), every group it reruns:
    ``NOT_RUN values 2-3 (the run stopped before them); rerun LOST value 1 and NOT_RUN values 2-3 with:
    CMD``. It said only "runs them" of the NOT_RUN values. `retry` is printable already."""
    stopped = f"NOT_RUN values {compress(not_run)} (the run stopped before them"
    if not retry:
        return f"{stopped})"
    rerun = rerun_by_default(rows)
    if all(row.state_label == "NOT_RUN" for row in rerun):
        return f"{stopped}; {retry} runs them)"
    groups = state_groups((row.state_label, row.value) for row in rerun)
    return f"{stopped}); {printable('rerun ' + groups)} with: {retry}"


def _watch_local(target: Target) -> int:
    """Read the ledger each second until nothing runs and every task has a result or one failed.

    On a terminal the live table, as for Slurm: the per-change lines began with one line per
    task (300 `PENDING` lines for a 300-task array) and scrolled everything else away.
    """
    assert target.record is not None
    say_history_problems(load_history(target.record.path, target.record))
    out = SafeStream(sys.stdout)
    view = LiveView(target.record.path) if out.isatty() else _LocalLines(out)
    stopped_before = False
    with view:
        while True:
            rows = local_rows(target.record)
            running = any(r.state is not None and not r.state.is_terminal for r in rows)
            failed = any(r.state is not None and r.state.is_terminal and not r.ok for r in rows)
            # A task still to come is PENDING while its run goes on; one without a state (NOT_RUN) never
            # runs: its runner was killed between tasks, or an old results file says nothing sane of
            # it. Waiting for all to have a state waited forever. Nothing running on two polls in a
            # row ends the watch (one poll alone could fall between a new record and its ledger line).
            stopped = not running
            ended = stopped and (failed or all(r.state is not None for r in rows) or stopped_before)
            stopped_before = stopped
            view.show(PollUpdate(states={}, changed=(), error=None, all_terminal=ended), rows)
            if ended:
                break
            time.sleep(1.0)
    return _ended(out, rows, usable_retry_command(target.record))


class _LocalLines:
    """Non-tty watch of a local record: one line per task whose state changed."""

    def __init__(self, out: SafeStream) -> None:
        self.out = out
        self.shown: dict[int | None, str] = {}

    def __enter__(self) -> "_LocalLines":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def show(self, update: PollUpdate, rows: Sequence[TaskRow]) -> None:
        for row in rows:
            text = f"{row.slurm_id} {row.state_label}" + (f" exit {row.exit_code}" if row.exit_code is not None else "")
            if self.shown.get(row.value) != text:
                self.shown[row.value] = text
                self.out.line(f"{_now()} {text}")


def _now() -> str:
    return datetime.now().strftime("%H:%M:%S")


def change_text(task: TaskState) -> str:
    """``123_4 PENDING (Priority)``, ``123_4 FAILED exit 3``, ``123_4 RUNNING (restart 1)``."""
    return _state_text(task.slurm_id, task.state.value, task.exit_code, task.reason, task.restart_count)


def ended_row_text(row: TaskRow) -> str:
    """A row's end as `change_text` says a change: ``123_2 CANCELLED``, ``123_4 FAILED exit 3``."""
    return _state_text(row.slurm_id, row.state_label, row.exit_code, row.reason, row.restart_count)


def _state_text(slurm_id: str, state: str, exit_code: int | None, reason: str | None,
                restart_count: int | None) -> str:
    notes = [printable(reason)] if reason else []
    if restart_count:
        notes.append(f"restart {restart_count}")
    code = f" exit {exit_code}" if exit_code is not None else ""
    return f"{slurm_id} {state}{code}" + (f" ({'; '.join(notes)})" if notes else "")


class PlainView:
    """Non-tty watch output: one line per change, and query problems as they start and end."""

    def __init__(self, name: str, out: SafeStream | None = None) -> None:
        self.name = name
        self.out = out or SafeStream(sys.stdout)
        self._problem: str | None = None
        self._problem_at = 0.0
        self._said: dict[tuple[str, int | None], str] = {}
        self._slots = SlotsNotice()

    def __enter__(self) -> "PlainView":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def slots(self, throttler) -> None:
        """What moving slots between windows could not do, once per failure, and once that it works again."""
        news = self._slots.news(throttler)
        if news:
            self.out.line(f"{_now()} {news}")

    def show(self, update: PollUpdate, rows: Sequence[TaskRow]) -> None:
        for key, text in in_row_order(self._lines(update, rows), rows):
            # the poller also reports what a line does not show (squeue's row replaced by sacct's, with
            # the signal and node): a line that would read as the last one for this task says nothing new
            if self._said.get(key) != text:
                self._said[key] = text
                self.out.line(f"{_now()} {text}")
        stale = staleness(update)
        now = time.monotonic()
        if stale is None and self._problem is not None:
            self.out.line(f"{_now()} Slurm answering again")
        elif stale is not None and (self._problem is None or now - self._problem_at >= PROBLEM_EVERY
                                    or _source(update.problem) != _source(self._problem)):
            self.out.line(f"{_now()} {stale}")
            self._problem_at = now
        self._problem = update.problem


    def _lines(self, update: PollUpdate, rows: Sequence[TaskRow]) -> list[tuple[Key, str]]:
        """(task, line) for each change, and for each ended task not said yet that no change names:
        the ends the ledger held when the watch began (a task a `status` saw cancelled) are never
        polled, so a reattached watch printed `138_1 COMPLETED` and never a line of `138_2`."""
        changed = {task.key for task in update.changed}
        lines = [(task.key, change_text(task)) for task in update.changed]
        return lines + [((row.job_id, row.task_id), ended_row_text(row)) for row in rows
                        if row.state is not None and row.state.is_terminal
                        and (row.job_id, row.task_id) not in changed and (row.job_id, row.task_id) not in self._said]


def in_row_order(lines: Sequence[tuple[Key, str]], rows: Sequence[TaskRow]) -> list[tuple[Key, str]]:
    """The lines in the table's order (value order, as `status`), not in Slurm's answers' order:
    sacct lists an array's ended tasks last one first, so a first snapshot read 6743_89, 6743_88, ..."""
    place = {(row.job_id, row.task_id): index for index, row in enumerate(rows)}
    return sorted(lines, key=lambda line: (place.get(line[0], len(place)), len(line[0][0]), line[0][0],
                                           -1 if line[0][1] is None else line[0][1]))


def _source(problem: str | None) -> str:
    return (problem or "").split(" ", 1)[0]


class LiveView:
    """A rich live table: per-state counts, a progress bar, the unfinished tasks.

    Drawn when a poll brings something, when the terminal is resized and, while a query goes
    unanswered, once a second (its `N s ago` grows); never else. rich's own refresh drew the
    whole screen 4 times a second whatever happened: a watch left open on a long job spent a
    second of CPU a minute (and its terminal as much) redrawing the same frame."""

    CHECK_SECONDS = 0.25     # how soon a resized terminal is filled

    def __init__(self, name: str) -> None:
        from rich.console import Console
        from rich.live import Live

        self.name = name
        self.broken = False
        # the terminal's own size, measured at each redraw: rich takes exported LINES/COLUMNS over it,
        # and values a shell exported once pinned a resized or taller terminal to them. `_environ` is
        # rich's (14, 15) way to give it another environment; a rich without it gets the plain one.
        try:
            self.console = Console(_environ={k: v for k, v in os.environ.items() if k not in ("LINES", "COLUMNS")})
        except TypeError:
            self.console = Console()
        self.live = Live(console=self.console, auto_refresh=False, transient=False)
        self._shown: tuple[PollUpdate, Sequence[TaskRow]] | None = None
        self._slots: str | None = None      # `slots_problem` while it lasts: under the table
        self._drawn: tuple[object, float] = (None, 0.0)     # terminal size and monotonic time of the last frame
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._checker: threading.Thread | None = None
        self.frames = 0

    def __enter__(self) -> "LiveView":
        self.live.__enter__()
        self._checker = threading.Thread(target=self._check, name="hyperion-watch-redraw", daemon=True)
        self._checker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._checker is not None:
            self._checker.join()
        try:
            self.live.__exit__(None, None, None)
        except (OSError, ValueError):
            pass

    def slots(self, throttler) -> None:
        """What moving slots between windows could not do, shown while it lasts (drawn with the next `show`)."""
        self._slots = slots_problem(throttler.failure) if throttler is not None else None

    def show(self, update: PollUpdate, rows: Sequence[TaskRow]) -> None:
        """Redraw; a terminal gone away ends the display, not the watch."""
        self._shown = (update, rows)
        self._draw()

    def _draw(self) -> None:
        with self._lock:
            if self.broken or self._shown is None:
                return
            try:
                size = self.console.size
                self.live.update(FittedWatch(self.name, *self._shown, slots=self._slots), refresh=True)
            except (OSError, ValueError):
                self.broken = True
                SafeStream(sys.stdout).lose()
                return
            self._drawn = (size, time.monotonic())
            self.frames += 1

    def _check(self) -> None:
        """The terminal's size, and the age of an unanswered query's line, between polls."""
        while not self._stop.wait(self.CHECK_SECONDS):
            shown, (size, at) = self._shown, self._drawn
            if shown is None or self.broken:
                continue
            try:
                resized = self.console.size != size
            except (OSError, ValueError):
                continue
            if resized or (shown[0].problem and time.monotonic() - at >= 1.0):
                self._draw()


# lines of the watch screen that are not task rows: title, counts, the table's three header lines and
# its bottom border, "... and N more" and a staleness line; a first guess, which FittedWatch corrects
WATCH_CHROME_LINES = 8


class FittedWatch:
    """The watch screen with as many task rows as the terminal has lines for, measured when drawn.

    A fixed 20 rows overflowed an 80x24 terminal, where rich's live display cut the bottom off (the
    "... and N more" line and a red "not answering" line were never seen), and left half of a
    40-line terminal blank behind "... and 3 more". Being measured at each refresh, a resized
    terminal is filled at once, not at the next poll."""

    def __init__(self, name: str, update: PollUpdate, rows: Sequence[TaskRow], slots: str | None = None) -> None:
        self.name, self.update, self.rows, self.slots = name, update, rows, slots

    def __rich_console__(self, console, options):
        from rich.segment import Segment

        height = options.max_height

        def render(budget: int) -> list:
            return console.render_lines(render_watch(self.name, self.update, self.rows, max_rows=budget,
                                                     slots=self.slots),
                                        options.update(height=None), pad=False)

        for line in fit_rows(render, height, len(unfinished_rows(self.rows))):
            yield from line
            yield Segment.line()


def fit_rows(render: Callable[[int], list], height: int, listed: int) -> list:
    """The lines of the most task rows (at least 1) whose screen is no taller than `height`.

    A row is not a line: a pending reason or a long log path wraps a row to 2 or 3 lines. Reading
    the lines left over as rows to add swung a 120-task array on 80x24 between 16 rows (too tall)
    and 2, and after 4 tries it showed 3 rows and 12 blank lines. The screen grows with the rows
    shown (near enough: a wider cell may rewrap others), so the most that fit are searched for by
    halving, from the first guess: at most about log2(height) renders."""
    most = max(1, min(listed, height))         # a row takes a line at least: more never fit
    fits, fitting = 0, None                    # the most rows known to fit, and their lines
    too_many = most + 1                        # the fewest rows known not to fit
    budget = min(most, max(1, height - WATCH_CHROME_LINES))
    lines = render(budget)
    while True:
        if len(lines) <= height:
            fits, fitting = budget, lines
            if len(lines) == height:
                break
        else:
            too_many = budget
        if too_many - fits <= 1:
            break
        budget = (fits + too_many) // 2 if fits else max(1, min(budget - (len(lines) - height), too_many - 1))
        lines = render(budget)
    return fitting if fitting is not None else lines     # one row too tall still: the live display crops it


def unfinished_rows(rows: Sequence[TaskRow]) -> list[TaskRow]:
    """The rows the watch table lists: tasks not ended, and those that ended without success."""
    return [r for r in rows if r.state is None or not r.state.is_terminal or not r.ok]


def rows_that_fit(rows: Sequence[TaskRow], max_rows: int) -> tuple[list[TaskRow], list[TaskRow]]:
    """The rows the table shows and those left to `... and N more`. In value order when all fit;
    else the tasks running now first, then those that ended without success, then the waiting: in
    value order, a 300-task array's early failures and its pending tail filled an 80x24 screen, and
    the two tasks that ran sat below it."""
    if len(rows) <= max_rows:
        return list(rows), []

    def rank(row: TaskRow) -> int:
        if row.state in RUNNING_NOW:
            return 0
        return 1 if row.state is not None and row.state.is_terminal or row.state_label == "NOT_RUN" else 2

    ordered = sorted(rows, key=rank)     # stable: value order within each
    return ordered[:max_rows], ordered[max_rows:]


def left_out_line(left_out: Sequence[TaskRow]) -> str:
    """`... and 180 more: PENDING 170, FAILED 10`: what the rows not shown are."""
    counts = ", ".join(f"{state} {n}" for state, n in sorted(state_counts(left_out).items()))
    return printable(f"... and {len(left_out)} more: {counts}")


def render_watch(name: str, update: PollUpdate, rows: Sequence[TaskRow], max_rows: int = 20,
                 slots: str | None = None):
    """The watch screen as a rich renderable (pure: easy to test); `slots`: `slots_problem`'s line."""
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    from backends.cli.jobs.tail_cell import TailCell

    # a local value its ended run never reached (NOT_RUN) is as final as a failure
    done = sum(1 for r in rows if r.state is not None and r.state.is_terminal or r.state_label == "NOT_RUN")
    counts = Table.grid(padding=(0, 2))
    # cells are Text, never markup: a log path may hold "[/bold]" (a MarkupError) or "[red]x[/]"
    counts.add_row(*(Text.assemble(f"{printable(state)} ", (str(n), "bold"))
                     for state, n in sorted(state_counts(rows).items())))
    tasks = Table(*STATUS_HEADER[:-1], "LOG", expand=False)
    shown, left_out = rows_that_fit(unfinished_rows(rows), max_rows)
    for row in shown:
        *cells, log = (printable(cell) for cell in status_cells(row))
        tasks.add_row(*(Text(cell) for cell in cells), TailCell(log))   # a narrow LOG keeps the file name
    header = Table.grid(padding=(0, 1))
    header.add_row(Text(printable(name), style="bold"), ProgressBar(total=max(1, len(rows)), completed=done, width=40),
                   Text(f"{done}/{len(rows)} tasks ended"))
    parts = [header, counts, tasks]
    if left_out:
        parts.append(Text(left_out_line(left_out)))
    if slots:       # printable already
        parts.append(Text(slots, style="yellow"))
    stale = staleness(update)
    if stale:
        parts.append(Text(stale, style="red"))
    elif update.error:
        parts.append(Text(f"query failed, retrying in {update.interval:.0f} s: {printable(update.error)}",
                          style="red"))
    return Group(*parts)


def _say_unrecorded(finals) -> None:
    """The ends the watch saw and could not write to the history, said as it ends (any way)."""
    if finals is not None and finals.unrecorded:
        SafeStream(sys.stderr).line(f"{PROG}: warning: {finals.unrecorded}")
