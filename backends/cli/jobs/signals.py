"""The signals that end a command that follows something (`watch`, `logs -f`) as Ctrl-C ends it."""
from __future__ import annotations

import signal
from contextlib import AbstractContextManager

from backends.stop_signals import signals_raise


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C is (`signum`: its status)."""

    def __init__(self, signum: int) -> None:
        super().__init__()
        self.signum = signum


def signals_stop() -> AbstractContextManager[None]:
    """SIGTERM and SIGHUP (the terminal closed: a tmux pane killed, an ssh session dropped) end a
    `watch` or a `logs -f` as Ctrl-C does (a KeyboardInterrupt carrying `signum`: exit 129, 143).
    They killed it at once, and a query Slurm had not answered, in a process group of its own, ran
    on after it (a hung site wrapper's `sleep` for its 10 minutes, seen). A signal ignored when we
    start (``nohup``'s SIGHUP) stays ignored; one during the cleanup is not raised again."""
    return signals_raise((signal.SIGTERM, signal.SIGHUP), Signalled)
