"""Signals that stop a command as Ctrl-C does: raised as an exception in the main thread.

hyperion-submit's local runner (SIGTERM, SIGHUP, SIGQUIT) and hyperion-jobs watch and
logs -f (SIGTERM, SIGHUP: `backends.cli.jobs.signals`) turn them into exceptions, so that
their cleanup runs: the task that ran is recorded, the query Slurm had not answered is
killed with its group.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager


@contextmanager
def signals_raise(signums: Collection[int], raised: Callable[[int], BaseException],
                  even_if_ignored: Collection[int] = ()) -> Iterator[None]:
    """While inside, each of `signums` raises ``raised(signum)`` in the main thread (only the main
    thread may install handlers: elsewhere nothing changes). A signal ignored when we start (as
    ``nohup`` ignores SIGHUP) stays ignored, unless it is one of `even_if_ignored`. Only the first
    signal is raised; later ones are not: a terminal closed on a stopped run (Ctrl-Z) sends SIGHUP
    and SIGTERM together (bash, to its stopped jobs), and the second replaced the first mid-cleanup
    (the hangup was recorded as 'terminated', 143). The handlers before are put back on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def stop(signum, frame):
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise raised(signum)
    previous = {signum: signal.signal(signum, stop) for signum in signums
                if signum in even_if_ignored or signal.getsignal(signum) is not signal.SIG_IGN}
    try:
        yield
    finally:
        restore(previous)


def restore(previous: dict[int, object]) -> None:
    """Put back the handlers `signal.signal` returned (None: one set outside Python, not restorable:
    the default instead)."""
    for signum, handler in previous.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
