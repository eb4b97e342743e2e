"""A one-line progress display fed by the Poller's observer.

On a terminal the line is redrawn in place; otherwise (logs, CI, pipes) a
plain line is printed only when the counts change, so output stays short.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, TextIO

from backends.states import JobState

if TYPE_CHECKING:
    from backends.states import TaskState
    from backends.watch.poller import PollUpdate

_RUNNING = frozenset({JobState.RUNNING, JobState.COMPLETING, JobState.CONFIGURING})


@dataclass(frozen=True)
class Counts:
    done: int
    failed: int
    running: int
    pending: int  # includes tasks Slurm has not reported yet

    @property
    def text(self) -> str:
        total = self.done + self.failed + self.running + self.pending
        return (f"done {self.done}/{total} failed {self.failed} "
                f"running {self.running} pending {self.pending}")


def count(states: Mapping[object, TaskState], total: int) -> Counts:
    """Counts over `total` expected tasks; a task not seen yet counts as pending."""
    done = sum(1 for s in states.values() if s.state.is_success)
    failed = sum(1 for s in states.values() if s.state.is_terminal and not s.state.is_success)
    running = sum(1 for s in states.values() if s.state in _RUNNING)
    return Counts(done, failed, running, max(total - done - failed - running, 0))


class Progress:
    """Callable observer: ``Poller.run(Progress(total))``; call `close` when done."""

    def __init__(self, total: int, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.live = live if live is not None else _isatty(self.stream)
        self._last: str | None = None
        self._last_error: str | None = None
        self._drawn = False

    def __call__(self, update: PollUpdate) -> None:
        line = count(update.states, self.total).text
        if self.live:
            if update.error:
                line += f" (query failed, retrying: {update.error})"
            if line != self._last:
                self.stream.write("\r\x1b[K" + line)
                self.stream.flush()
                self._drawn = True
        else:
            if update.error and update.error != self._last_error:
                self.stream.write(f"query failed, retrying: {update.error}\n")
            if line != self._last:
                self.stream.write(line + "\n")
            self.stream.flush()
        self._last_error = update.error
        self._last = line

    def close(self) -> None:
        """End the live line so later output starts on a fresh line."""
        if self.live and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
