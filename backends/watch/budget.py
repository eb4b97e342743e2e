"""How many Slurm queries one face may make: at most 30 a minute, in small bursts at most.

Slurm's man pages ask tools to keep squeue/sacct/scontrol calls to a minimum
and sites rate-limit users' RPCs, so every call that reaches a Slurm daemon is
charged here. Calls come from a bucket of `burst` tokens refilled at
`per_minute - burst` a minute: any 60 s then holds at most `per_minute` calls
(the tokens at its start plus what it refills), a face may answer a hint at
once (a task just wrote its footer), and it can never spend its minute in a
few seconds and go blind for the rest. The 60 s count is checked too, as a
guard.
The daemon sees a call a little after it is charged (a process to start, a
loaded login node) and by a varying delay, so a call spaced exactly 60 s after
another can land inside the daemon's same minute: the limits keep SPREAD
seconds of margin (the bucket refills over WINDOW + SPREAD, and the count
of calls, which a poll's second query is let through by, covers the last
WINDOW + SPREAD seconds). Measured through
counting wrappers, calls spaced at exactly the limit read 31 a minute.
A call that could not connect at all (the daemon is down) reached no server
and is not charged: that is what lets a poller notice a recovery within 2 s.
"""
from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable

CALLS_PER_MINUTE = 30
BURST = 3
WINDOW = 60.0
SPREAD = 1.0     # seconds: more than a call's start-to-daemon delay varies on a loaded login node


class QueryBudget:
    """The charged calls of one face (hyperion-submit, a watch, a console) and when the next may go."""

    def __init__(self, per_minute: int = CALLS_PER_MINUTE, burst: int = BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1 or burst < 1:
            raise ValueError("per_minute and burst must be at least 1")
        self.per_minute = per_minute
        self.burst = burst
        if burst >= per_minute:
            raise ValueError("burst must be below per_minute")
        self.rate = (per_minute - burst) / (WINDOW + SPREAD)   # tokens a second
        self._clock = clock
        self._calls: list[float] = []      # charge times, in order (a call is charged when it went)
        self._tokens = float(burst)
        self._filled_at: float | None = None
        self._lock = threading.RLock()   # a watch's poller and a face's other asks share one budget

    def _forget(self, now: float) -> None:
        with self._lock:
            drop = bisect.bisect_right(self._calls, now - WINDOW - SPREAD)
            del self._calls[:drop]

    def _tokens_at(self, now: float) -> float:
        if self._filled_at is None:
            return self._tokens
        return min(float(self.burst), self._tokens + (now - self._filled_at) * self.rate)

    def used(self, now: float | None = None) -> int:
        """Charged calls in the last WINDOW + SPREAD seconds (the daemon's minute may hold them)."""
        now = self._clock() if now is None else now
        self._forget(now)
        return len(self._calls)

    def room(self, now: float | None = None) -> int:
        """Calls the last minute (and margin) leaves for a call made right now (the bucket aside: a poll's
        second query goes at once, and the bucket refills later for it)."""
        return self.per_minute - self.used(now)

    def earliest(self, calls: int = 1, now: float | None = None) -> float:
        """The first instant at or after `now` when `calls` more calls may start."""
        now = self._clock() if now is None else now
        with self._lock:
            tokens = self._tokens_at(now)
            at = now if tokens >= calls else now + (calls - tokens) / self.rate
            recent = [t for t in self._calls if t > now - WINDOW - SPREAD]
        excess = len(recent) + calls - self.per_minute
        if excess > 0:
            at = max(at, recent[excess - 1] + WINDOW + SPREAD)
        return at

    def allows(self, calls: int = 1, now: float | None = None) -> bool:
        now = self._clock() if now is None else now
        return self.earliest(calls, now) <= now

    def charge(self, calls: int = 1, now: float | None = None) -> None:
        """Record `calls` calls that reached a server at `now` (the bucket may go below zero)."""
        if calls <= 0:
            return
        now = self._clock() if now is None else now
        with self._lock:
            self._tokens = self._tokens_at(now) - calls
            self._filled_at = now
            for _ in range(calls):
                bisect.insort(self._calls, now)
            # forgotten here too: only `used` forgot, and a watch whose squeue named every task never
            # asked it, so a watch left open overnight kept every call it made (and scanned them all)
            self._forget(now)

    def spend(self, stop: threading.Event) -> bool:
        """Wait until one more call may go and charge it, for a call made beside a face's poller
        (the console's ask for what ended tasks used): False when `stop` was set meanwhile."""
        while not stop.is_set():
            with self._lock:
                now = self._clock()
                at = self.earliest(1, now)
                if at <= now:
                    self.charge(1, now)
                    return True
            if stop.wait(at - now):
                return False
        return False
