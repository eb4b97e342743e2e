"""Stopping a local task's process group: its signal, a grace, then SIGKILL.

The CLI's Ctrl-C (`run._stop_group`, on the main thread, which also reaps the task) and the
console's stop (`run._stop_group_on`, a thread beside the worker that runs the task) did this
one sequence in two copies: `stop_group` is it, each face giving how it waits and what cuts the
grace short.
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

STOP_GRACE = 10.0      # seconds a stopped task's group has before SIGKILL, as Slurm's KillWait


def try_signal_group(pgid: int, signum: int) -> None:
    """`signum` to group `pgid`. The whole group ended already (ProcessLookupError), or a group we may
    not signal (a task run through sudo; also from a signal handler): left as it is."""
    try:
        os.killpg(pgid, signum)
    except OSError:
        pass


def stop_group(pgid: int, signum: int, ended: Callable[[], bool], cut_short: Callable[[], str | None],
               pause: Callable[[float], object]) -> str | None:
    """Pass `signum` and SIGCONT (a stopped task gets it too, as Slurm does) to group `pgid`, give it
    STOP_GRACE s to end, then SIGKILL it. Until the grace is over, in this order: `ended()` (the
    group, and what the caller waits for of it, is gone: None is returned, nothing killed),
    `cut_short()` (a reason to kill at once: a second Ctrl-C, a second q), the deadline, and
    `pause(deadline)` (wait a step, at most until then). Returns why SIGKILL was sent, without the
    "killed (SIGKILL)" each face puts in front; what is waited for after it is the caller's."""
    try_signal_group(pgid, signum)         # a group we may not signal (sudo) is waited for as it is
    try_signal_group(pgid, signal.SIGCONT)
    deadline = time.monotonic() + STOP_GRACE
    why = f"{STOP_GRACE:g} s after {signal.Signals(signum).name}: its processes did not end"
    while not ended():
        cut = cut_short()
        if cut is not None:
            why = cut
            break
        if time.monotonic() >= deadline:
            break
        pause(deadline)
    else:
        return None
    try_signal_group(pgid, signal.SIGKILL)
    return why
