"""A one-line progress display fed by the Poller's observer.

On a terminal the line is redrawn in place; otherwise (logs, CI, pipes) a
plain line is printed only when the counts change, so output stays short.
While a Slurm query fails the line says which source, for how long and how
old the states are; on a terminal those ages grow each second between polls,
as `hyperion-jobs watch`'s and the console's do (a plain output gets no line more). A stream that stops taking output (terminal gone, pipe
closed) ends the display, never the wait.
"""
from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Collection, Mapping, TextIO

from backends.printable import printable
from backends.states import JobState, end_counts
from backends.watch.ages import age_text
from backends.watch.row_fit import fit_row, stream_columns
from backends.watch.terminal import SafeStream, safe

if TYPE_CHECKING:
    from backends.states import TaskState
    from backends.watch.poller import PollUpdate

_RUNNING = frozenset({JobState.RUNNING, JobState.COMPLETING, JobState.CONFIGURING})
# A plain (non-tty) output repeats an ongoing problem at most this often.
PROBLEM_EVERY = 30.0
# A live line saying a problem is drawn again this often between polls: its ages grow.
REDRAW_EVERY = 1.0


@dataclass(frozen=True)
class Counts:
    done: int
    failed: int   # the program failed (FAILED, SPECIAL_EXIT, LOST); Slurm's ends are in `ended`
    running: int
    pending: int  # includes tasks Slurm has not reported yet
    reason: str | None = None   # the commonest pending reason Slurm gives
    # ended by Slurm: (("timeout", 2), ("cancelled", 1)); ("unknown", 3): a forgotten job's tasks
    ended: tuple[tuple[str, int], ...] = ()

    @property
    def text(self) -> str:
        """``done 3/10 failed 1 timeout 2 cancelled 1 running 2 pending 1``: a Slurm end is shown
        only once there is one, and never counted as "failed"."""
        total = self.done + self.failed + sum(n for _, n in self.ended) + self.running + self.pending
        why = f" ({printable(self.reason)})" if self.reason and self.pending else ""
        slurm = "".join(f" {word} {n}" for word, n in self.ended)
        return (f"done {self.done}/{total} failed {self.failed}{slurm} "
                f"running {self.running} pending {self.pending}{why}")


def count(states: Mapping[object, TaskState], total: int, unknown: Collection[object] = ()) -> Counts:
    """Counts over `total` expected tasks; a task not seen yet counts as pending. `unknown` are
    tasks whose end is not known and never will be (`PollUpdate.unknown`: the controller forgot
    their job, their states dropped): counted `unknown`, as the closing line counts them, not pending."""
    done = sum(1 for s in states.values() if s.state.is_success)
    ends = end_counts([*((s.state.value, s.signal) for s in states.values()
                         if s.state.is_terminal and not s.state.is_success),
                       *("UNKNOWN" for key in unknown if key not in states)])
    failed = ends.pop("failed", 0)
    ended = tuple(ends.items())
    running = sum(1 for s in states.values() if s.state in _RUNNING)
    reasons = Counter(s.reason for s in states.values() if s.reason)
    reason = reasons.most_common(1)[0][0] if reasons else None
    unseen = total - done - failed - sum(ends.values()) - running
    return Counts(done, failed, running, max(unseen, 0), reason, ended)


def staleness(update: PollUpdate, now: float | None = None) -> str | None:
    """``accounting (sacct) not answering for 40 s: ...; states as of 12:03:04 (1 min 05 s ago)``
    while a problem lasts, every age as of `now` (a live view redrawn each second: both grow)."""
    if not update.problem:
        return None
    now = time.time() if now is None else now
    problem = printable(update.problem_at(now) or update.problem)
    if update.as_of is None:
        return f"{problem}; no answer yet"
    clock = time.strftime("%H:%M:%S", time.localtime(update.as_of))
    return f"{problem}; states as of {clock} ({age_text(now - update.as_of)} ago)"


def _line_parts(line: str, update: PollUpdate, now: float | None = None) -> list[tuple[str, int] | tuple[str, int, bool]]:
    """The live line as `fit_row`'s parts, joined `line [staleness]`. On a narrow terminal the
    clock goes first, then each source's error text, then which source fails; the counts and the
    ages that grow each second stay (`(N s ago)` at the end; with no answer yet, the first
    source's `for N s`), so each redraw is seen."""
    if not update.problem:
        return [(line, 4)]
    now = time.time() if now is None else now
    parts: list[tuple[str, int] | tuple[str, int, bool]] = [(line, 4), (" [", 4)]
    troubles = update.troubles or ()
    for i, trouble in enumerate(troubles):
        said = ("; " if i else "") + trouble.at(now)
        error = trouble.error if trouble.error and said.endswith(trouble.error) else ""
        head = said[:len(said) - len(error)]
        aged = f"for {age_text(now - trouble.since)}"
        found = head.find(aged)
        if found < 0:
            parts.append((printable(head), 2))
        else:      # ` for 40 s` (` (for 40 s`) kept longer than the words around it, and whole: it grows
            start, end = len(head[:found].rstrip(" (")), found + len(aged)
            grows = 3 if i == 0 and update.as_of is None else 2
            parts += [(printable(head[:start]), 2), (head[start:end], grows, True), (printable(head[end:]), 2)]
        parts.append((printable(error), 1))
    if not troubles:
        parts.append((printable(update.problem), 1))
    if update.as_of is None:
        return parts + [("; no answer yet", 2, True), ("]", 4)]
    clock = time.strftime("%H:%M:%S", time.localtime(update.as_of))
    return parts + [(f"; states as of {clock}", 0), (f" ({age_text(now - update.as_of)} ago)]", 4)]


class Progress:
    """Callable observer: ``Poller.run(Progress(total))``; call `close` when done."""

    def __init__(self, total: int, stream: TextIO | SafeStream | None = None,
                 live: bool | None = None, columns: Callable[[], int | None] | None = None) -> None:
        import sys

        self.total = total
        self.stream = safe(stream if stream is not None else sys.stderr)
        self.live = live if live is not None else self.stream.isatty()
        self._last: str | None = None
        self._problem: tuple[str | None, float] = (None, 0.0)
        self._drawn = False
        self.columns = columns      # the terminal's width (default: the stream's own terminal's)
        # the live line's last update and when it was drawn (monotonic), for the redraws between polls
        self._shown: PollUpdate | None = None
        self._drawn_at = 0.0
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._ticker: threading.Thread | None = None

    @property
    def broken(self) -> bool:
        return self.stream.broken

    def __call__(self, update: PollUpdate) -> None:
        if self.live:
            with self._lock:
                self._shown = update
                self._draw(update)
            if update.problem and self._ticker is None and not self._closed.is_set():
                self._ticker = threading.Thread(target=self._tick, name="hyperion-progress-redraw", daemon=True)
                self._ticker.start()
            return
        line = count(update.states, self.total, update.unknown).text
        stale = staleness(update)
        self._plain_problem(update.problem, stale)
        if line != self._last:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._last = line

    def _draw(self, update: PollUpdate) -> None:
        """The live line as of now (its ages too), written over the last one if it differs; under the lock."""
        counts = count(update.states, self.total, update.unknown)
        shown = fit_row(_line_parts(counts.text, update), self._columns(), "\u2026")
        if shown != self._last:
            self.stream.write("\r\x1b[K" + shown)
            self.stream.flush()
            self._drawn = True
        self._last = shown
        self._drawn_at = time.monotonic()

    def _columns(self) -> int | None:
        """The terminal's width now (it may have been resized), None if the stream has none."""
        return self.columns() if self.columns is not None else stream_columns(self.stream)

    def _tick(self) -> None:
        """Between polls, while the last update says a problem, the line again each REDRAW_EVERY s:
        `not answering for 5 s` and `(5 s ago)` stood still for a whole poll interval."""
        while not self._closed.wait(REDRAW_EVERY / 4):
            with self._lock:
                update = self._shown
                if (update is None or not update.problem or self.broken or self._closed.is_set()
                        or time.monotonic() - self._drawn_at < REDRAW_EVERY):
                    continue
                self._draw(update)

    def _plain_problem(self, problem: str | None, stale: str | None) -> None:
        """A problem line when one starts, changes source, or every PROBLEM_EVERY s; one when it ends."""
        last, when = self._problem
        now = time.monotonic()
        if problem is None:
            if last is not None:
                self.stream.write("Slurm answering again\n")
            self._problem = (None, 0.0)
            return
        if last is None or _ageless(last) != _ageless(problem) or now - when >= PROBLEM_EVERY:
            self.stream.write(f"{stale}\n")
            self._problem = (problem, now)

    def note(self, line: str) -> None:
        """A line of its own (a warning) above the progress line, which is drawn again under it."""
        with self._lock:
            if self.live and self._drawn:
                self.stream.write("\r\x1b[K" + line + "\n" + (self._last or ""))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

    def close(self) -> None:
        """End the live line so later output starts on a fresh line (no redraw after it)."""
        self._closed.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join()
        with self._lock:
            if self.live and self._drawn:
                self.stream.write("\n")
                self.stream.flush()
                self._drawn = False


def _ageless(problem: str) -> str:
    """The problem without its growing ages (`age_text`'s), to tell a new problem from the same one later."""
    return re.sub(r"\d+ (?:h|min|s)\b", "", problem)
