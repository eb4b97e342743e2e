"""Whose file is at a log path: the attempt (of this pattern or another) that wrote it last.

Two output patterns can name the same log (``log/c.JOB.log`` and ``log/c.1.log``).
Before an attempt writes a log it moves the file found there into the history
of the attempt that wrote it, so that attempt's ``logs --attempt N`` finds it
and no other attempt claims it. The candidates are the attempts that planned
that path and whose file there was not moved away since; of those, the writer
is the newest submitted before the file's last change: submissions sharing a
log run one after another (a live one refuses the next), and a newer one that
never reached the task (a local run stopped before it) started after the file
was written. A local task the ledger never saw start, and a task that ended
without running (no elapsed time, no node), wrote nothing.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Sequence

from backends.logheader import iso_seconds
from backends.records.history import History
from backends.records.record import LOCAL_JOB


@dataclass(frozen=True)
class Writer:
    """One attempt's task that may have written a log path."""

    record_path: str
    attempt: int
    value: int | None
    submitted: float | None      # seconds since the epoch (whole seconds: ISO times in the ledger)


def writers(history: History) -> Iterable[tuple[str, Writer]]:
    """(log path, Writer) for every task of every attempt whose file may still be at that path."""
    for number in history.numbers:
        entry = history.entry(number)
        submitted = iso_seconds(entry.time if entry else history.records[number].submitted_at)
        for task in history.tasks_of(number):
            if history.ledger.moved.get((number, task.value, "log")) is not None:
                continue                  # its file was moved aside: what is there now is not its
            if task.job_id == LOCAL_JOB and (number, task.value) not in history.ledger.starts:
                continue                  # the local runner writes the start before the task runs
            final = history.final(task)
            if final is not None and not final.elapsed and not final.node:
                continue                  # ended without running (cancelled while pending)
            yield task.log, Writer(history.record_path, number, task.value, submitted)


def last_writer(path: str, candidates: Sequence[Writer]) -> Writer | None:
    """The candidate that wrote the file now at `path`, None when its times cannot tell.

    The newest submitted at or before the file's last change; a tie (two
    submissions in one second) cannot be told apart and gives None.
    """
    try:
        changed = os.lstat(path).st_mtime
    except OSError:
        return None
    before = sorted((w for w in candidates if w.submitted is not None and w.submitted <= changed),
                    key=lambda w: (w.submitted or 0.0, w.attempt))
    if not before or (len(before) > 1 and before[-1].submitted == before[-2].submitted
                      and before[-1].record_path != before[-2].record_path):
        return None
    return before[-1]
