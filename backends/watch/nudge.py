"""Hints from the tasks' own files that Slurm is about to report a change.

Polling Slurm often costs the controller; looking at a file costs nothing. The
batch script writes the log footer (``# Ended (code N) ...``) just before it
exits, a task's log appears when it starts, and slurmstepd writes to Slurm's
``.err`` file when it kills a task (time limit, cancel, memory). `LogNudge`
watches those files and tells the Poller to poll now, which is how
hyperion-submit returns within moments of the last task's end while polling
rarely otherwise. A hint is never a result: only Slurm's answer changes a state.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Mapping, Sequence

from backends.logheader import parse_ended
from backends.records.record import TaskRecord
from backends.states import JobState, TaskState
from backends.watch.tail import open_log

Key = tuple[str, "int | None"]
# While more tasks than this are unfinished, only the running ones' files are looked at.
ALL_FILES_UP_TO = 200
# How long a footer keeps asking for polls while Slurm has not reported the end yet.
SETTLE = 15.0
# The footer comes just before the batch script exits; the controller registers the
# end a moment later (about 0.1 s here): asking at once would mostly find it RUNNING
# still, and the budget spaces the next poll 2 s later.
FOOTER_DELAY = 0.3
TAIL_BYTES = 1024
_RUNNING = frozenset({JobState.RUNNING, JobState.CONFIGURING, JobState.COMPLETING})


def _signature(path: str | None) -> tuple[int, int] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def has_footer(path: str) -> bool:
    """Whether the last line of `path` is the batch script's ``# Ended (code N) ...`` footer."""
    return footer_code(path) is not None


def footer_code(path: str) -> int | None:
    """The code of the batch script's ``# Ended (code N) ...`` footer when it is the last line of
    `path` (the program ran to its end, with that code), else None.

    Opened as the log viewers open it: a FIFO put at a log's path would hold a plain open()
    for ever, and with it the wait that asked.
    """
    try:
        handle = open_log(path)
        if handle is None:
            return None
        with handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line for line in tail.splitlines() if line.strip()]
    ended = parse_ended(lines[-1]) if lines else None
    return None if ended is None else ended[0]


class LogNudge:
    """A Poller nudge: True when a watched task's log or Slurm .err file says it started or ended."""

    def __init__(self, tasks: Sequence[TaskRecord], clock: Callable[[], float] = time.monotonic,
                 all_files_up_to: int = ALL_FILES_UP_TO, settle: float = SETTLE,
                 footer_delay: float = FOOTER_DELAY) -> None:
        self._files = {(t.job_id, t.array_task_id): (t.log, t.slurm_err) for t in tasks}
        # Files as they were before anything ran: an earlier run's footer is no hint.
        self._seen = {key: (_signature(log), _signature(err)) for key, (log, err) in self._files.items()}
        self._ended: dict[Key, tuple[float, int]] = {}   # footer seen: when, at which restart count
        self._clock = clock
        self._all_up_to = all_files_up_to
        self._settle = settle
        self._delay = footer_delay

    def _to_check(self, states: Mapping[Key, TaskState]) -> list[Key]:
        open_keys = [k for k in self._files if not (k in states and states[k].state.is_terminal)]
        if len(open_keys) <= self._all_up_to:
            return open_keys
        return [k for k in open_keys if k in states and states[k].state in _RUNNING]

    def __call__(self, states: Mapping[Key, TaskState]) -> bool:
        now = self._clock()
        fire = False
        for key in self._to_check(states):
            fire = self._look(key, states.get(key), now) or fire
        for key, (when, restarts) in list(self._ended.items()):
            state = states.get(key)
            if state is not None and (state.restart_count or 0) > restarts:
                del self._ended[key]          # requeued: that footer was an earlier attempt's
            elif (state is None or not state.state.is_terminal) and self._delay <= now - when < self._settle:
                fire = True
        return fire

    def _look(self, key: Key, state: TaskState | None, now: float) -> bool:
        log, err = self._files[key]
        log_sig, err_sig = _signature(log), _signature(err)
        old_log, old_err = self._seen[key]
        self._seen[key] = (log_sig, err_sig)
        fire = False
        if log_sig != old_log and log_sig is not None:
            if key not in self._ended and has_footer(log):
                self._ended[key] = (now, (state.restart_count or 0) if state else 0)
            elif state is None or state.state not in _RUNNING:
                fire = True                    # its log appeared or grew: it has started
        grew = err_sig is not None and err_sig[0] > (old_err[0] if old_err else 0)
        if grew and state is not None and state.state in _RUNNING:
            fire = True                        # slurmstepd wrote why it ended the task
        return fire
