"""Whether someone else moves a windowed submission's slots: the console's quit asks only when not.

Only a watcher moves a drained window's slots to the next (`throttle`). hyperion-submit's wait and
`hyperion-jobs watch RECORD` say that they watch by holding a shared lock (flock) on the record
file for as long as they do; a console about to quit (or to leave the record for another) looks for
such a lock before it asks "Quit and leave the array windows unwatched?": it asked while a
hyperion-submit still waiting in another terminal kept moving them. The lock goes with the process
(a killed or hung-up wait holds none), and the console holds none itself: its watch ends with it.
"""
from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC    # a FIFO put in its place never blocks the open


@contextmanager
def moving_slots(record_path: str) -> Iterator[None]:
    """Held while this process's watch moves the slots of `record_path`'s windows. Never stops the
    watch: a record that cannot be opened or locked (gone, a lock the file system refuses) only
    leaves the watch unseen, and a console then asks before it quits, as it did before."""
    try:
        fd = os.open(record_path, _OPEN)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)    # never waits: a probe holds it a moment
        except OSError:
            pass
        yield
    finally:
        os.close(fd)


def moved_elsewhere(record_path: str, timeout: float = 0.5) -> bool:
    """Whether another process's watch holds `record_path` (`moving_slots`). False when that cannot
    be told within `timeout` seconds (a hung file server: the interface thread asks this) or at all:
    the caller then asks, as it did before any watch said so."""
    answer: list[bool] = []
    probe = threading.Thread(target=lambda: answer.append(_held(record_path)), daemon=True)
    probe.start()
    probe.join(timeout)
    return bool(answer) and answer[0]


def _held(record_path: str) -> bool:
    """An exclusive lock tried without waiting, and dropped at once: refused while a watch holds its
    shared one (flock locks belong to an open file, so a lock of this process's own counts too)."""
    try:
        fd = os.open(record_path, _OPEN)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False
