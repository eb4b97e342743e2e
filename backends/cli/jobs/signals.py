"""The signals that end a command that follows something (`watch`, `logs -f`) as Ctrl-C ends it."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from collections.abc import Iterator


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C is (`signum`: its status)."""

    def __init__(self, signum: int) -> None:
        super().__init__()
        self.signum = signum


@contextmanager
def signals_stop() -> Iterator[None]:
    """SIGTERM and SIGHUP (the terminal closed: a tmux pane killed, an ssh session dropped) end a
    `watch` or a `logs -f` as Ctrl-C does (a KeyboardInterrupt carrying `signum`: exit 129, 143).
    They killed it at once, and a query Slurm had not answered, in a process group of its own, ran
    on after it (a hung site wrapper's `sleep` for its 10 minutes, seen). A signal ignored when we
    start (``nohup``'s SIGHUP) stays ignored; one during the cleanup is not raised again."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def stop(signum, frame):
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise Signalled(signum)
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGHUP)
                if signal.getsignal(signum) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
