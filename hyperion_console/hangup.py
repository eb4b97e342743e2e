"""Noticing that the terminal is gone when no SIGHUP says so.

A console started in a pseudo-terminal that is not its controlling terminal
(``setsid``, ``start_new_session=True``: a bench, an expect script) gets no
SIGHUP when the other end closes. Its input then reads end-of-file at once,
for ever: Textual's input thread took that for "nothing typed" and spun, a
whole CPU for a console nobody sees. `HangupWatch` waits in ``poll`` for the
hang-up itself (POLLHUP/POLLERR: asked for no events, poll wakes for nothing
else, so waiting costs nothing) and tells the driver once.
"""
from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable

GONE = select.POLLHUP | select.POLLERR


class HangupWatch:
    """A thread that calls `gone` once if `fd` hangs up, until `stop`."""

    def __init__(self, fd: int, gone: Callable[[], None]) -> None:
        self._fd = fd
        self._gone = gone
        self._wake_read, self._wake_write = os.pipe()
        self._thread = threading.Thread(target=self._watch, name="hyperion-hangup-watch", daemon=True)
        self._stopped = False

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self._fd, 0)                    # no events asked: wakes for hang-up/error only
        poller.register(self._wake_read, select.POLLIN)
        while True:
            try:
                events = dict(poller.poll())
            except InterruptedError:   # pragma: no cover - Python retries EINTR itself
                continue
            if self._wake_read in events or events.get(self._fd, 0) & select.POLLNVAL:
                return                                  # stopped, or the descriptor was closed under us
            if events.get(self._fd, 0) & GONE:
                self._gone()
                return

    def stop(self) -> None:
        """End the watch (input is being disabled: Textual's own stop, a suspend)."""
        if self._stopped:     # the wake pipe's descriptors are closed once: a number reused is not ours
            return
        self._stopped = True
        try:
            os.write(self._wake_write, b"x")
        except OSError:
            pass
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        for fd in (self._wake_read, self._wake_write):
            try:
                os.close(fd)
            except OSError:
                pass
