"""The local runs this console is running, each in a worker thread, and how quitting stops them.

A local run lives in the console's process: it cannot outlive a quit. Quitting
without stopping it left the terminal blank and blocked until the whole array had
run (Python waits for the worker), and a Ctrl-C then left a task LOST.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from backends.submit.local.run import Stop


class ConsoleClosed(RuntimeError):
    """A local run was about to start after the console began to close: it does not start."""


class LocalRuns:
    """Records of the local runs in progress, and the one `Stop` every one of them obeys."""

    def __init__(self) -> None:
        self.stop = Stop(threading.Event(), threading.Event())
        self._lock = threading.Lock()
        self._records: list[str] = []
        self._closed = False

    def close(self) -> None:
        """The console is ending, however (q, an error, a signal): stop what runs, start nothing more
        (a run still being planned when q found none would start after the screen was gone)."""
        with self._lock:
            self._closed = True
        self.stop.stop.set()

    @contextmanager
    def running(self, record_path: str) -> Iterator[Stop]:
        with self._lock:
            if self._closed:
                raise ConsoleClosed(f"the console is closing: {record_path} not run")
            self._records.append(record_path)
        try:
            yield self.stop
        finally:
            with self._lock:
                self._records.remove(record_path)

    @property
    def closing(self) -> threading.Event:
        """Set once the console closes (`close`): what a worker's Slurm checks before a submission
        stop on, so that a quit never waits on a hung squeue (sbatch itself is never stopped)."""
        return self.stop.stop

    def active(self) -> list[str]:
        with self._lock:
            return list(self._records)

    @property
    def stopping(self) -> bool:
        return self.stop.stop.is_set()
