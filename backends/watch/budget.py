"""How many Slurm queries one face may make: at most 30 a minute, spread out.

Slurm's man pages ask tools to keep squeue/sacct/scontrol calls to a minimum
and sites rate-limit users' RPCs, so every call that reaches a Slurm daemon is
charged here: each reserves `spacing` seconds (2 s for 30 a minute) before the
next charged call may start, and no 60 s ever holds more than `per_minute`.
A call that could not connect at all (the daemon is down) reached no server
and is not charged: that is what lets a poller notice a recovery within 2 s.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Callable

CALLS_PER_MINUTE = 30
WINDOW = 60.0


class QueryBudget:
    """The charged calls of one face (hyperion-submit, a watch, a console) and when the next may go."""

    def __init__(self, per_minute: int = CALLS_PER_MINUTE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self.per_minute = per_minute
        self.spacing = WINDOW / per_minute
        self._clock = clock
        self._calls: deque[float] = deque()
        self._next_free = float("-inf")

    def _forget(self, now: float) -> None:
        while self._calls and self._calls[0] <= now - WINDOW:
            self._calls.popleft()

    def used(self, now: float | None = None) -> int:
        """Charged calls in the last 60 s."""
        now = self._clock() if now is None else now
        self._forget(now)
        return len(self._calls)

    def earliest(self, calls: int = 1, now: float | None = None) -> float:
        """The first instant (on the budget's clock) at or after `now` when `calls` more may start."""
        now = self._clock() if now is None else now
        recent = [t for t in self._calls if t > now - WINDOW]
        at = max(now, self._next_free)
        excess = len(recent) + calls - self.per_minute
        if excess > 0:
            at = max(at, recent[excess - 1] + WINDOW)
        return at

    def room(self, now: float | None = None) -> int:
        """Calls the last 60 s leave for a call made right now (the spacing aside: a poll's
        second query goes at once, and the pause after the poll grows by its spacing)."""
        return self.per_minute - self.used(now)

    def allows(self, calls: int = 1, now: float | None = None) -> bool:
        now = self._clock() if now is None else now
        return self.earliest(calls, now) <= now

    def charge(self, calls: int = 1, now: float | None = None) -> None:
        """Record `calls` calls that reached a server at `now`."""
        if calls <= 0:
            return
        now = self._clock() if now is None else now
        self._calls.extend([now] * calls)
        self._next_free = max(self._next_free, now) + calls * self.spacing
