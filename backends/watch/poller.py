"""Polls Slurm for a set of jobs: one sacct and at most one squeue per interval.

Used by hyperion-submit's waiting, hyperion-jobs watch and the console alike, so
all of them see the same states. The interval starts at `floor`, grows while
nothing changes up to `cap`, and drops back to `floor` on any change. A failed
query is reported (PollUpdate.error) and retried with backoff; it never becomes
a task result.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

from backends.states import JobState, TaskState
from backends.watch.slurm.accounting import (
    QueryError,
    Runner,
    merge,
    range_only,
    run_command,
    run_sacct,
    run_squeue,
)

Key = tuple[str, "int | None"]

# A pending array task cancelled on its own leaves the controller at once and,
# about 4 s later, sacct's pending-range row, and never gets a row of its own.
# A task missing from both answers, in at least two polls this many seconds
# apart, while the controller still lists other tasks of its job, was removed
# from the array: it is reported CANCELLED.
VANISHED_AFTER = 5.0


@dataclass(frozen=True)
class PollUpdate:
    states: Mapping[Key, TaskState]     # latest known for every task seen so far
    changed: tuple[TaskState, ...]      # only what changed since the last update
    error: str | None                   # transient query error text, shown, never a result
    all_terminal: bool                  # every expected task is terminal
    interval: float = field(default=0.0, compare=False)   # seconds until the next poll


def _same(a: TaskState, b: TaskState) -> bool:
    """Equal for observers: elapsed ticking on a running task is not a change."""
    return (a.state, a.exit_code, a.signal, a.node) == (b.state, b.exit_code, b.signal, b.node)


def _accept(old: TaskState | None, new: TaskState, range_row: bool) -> bool:
    """Whether `new` may replace `old`: never step back from a final or a running state.

    sacct can lag behind squeue (PENDING after squeue saw RUNNING and the task
    already left squeue), a pending-range row still names tasks that started,
    and a final state is never undone by a stale row.
    """
    if old is None:
        return True
    if range_row and old.state is not JobState.PENDING:
        return False
    if old.state.is_terminal:
        return new.state.is_terminal
    if new.source == "sacct" and new.state is JobState.PENDING and old.state is not JobState.PENDING:
        return False
    return True


class Poller:
    """Watches `expected` (job id -> physical task ids, None: every task the job has)."""

    def __init__(self, expected: Mapping[str, tuple[int, ...] | None], *, floor: float = 1.0,
                 cap: float = 30.0, factor: float = 1.5, error_factor: float = 2.0,
                 runner: Runner = run_command,
                 sleep: Callable[[float], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 vanished_after: float = VANISHED_AFTER) -> None:
        if floor <= 0 or cap < floor:
            raise ValueError("need 0 < floor <= cap")
        self._expected = {str(j): (frozenset(t) if t is not None else None)
                          for j, t in expected.items()}
        self._floor, self._cap = floor, cap
        self._factor, self._error_factor = factor, error_factor
        self._runner = runner
        self._sleep = sleep
        self._clock = clock
        self._vanished_after = vanished_after
        self._missing_since: dict[Key, tuple[float, int]] = {}
        self._states: dict[Key, TaskState] = {}
        self.interval = floor

    @property
    def states(self) -> Mapping[Key, TaskState]:
        return dict(self._states)

    def _wanted(self, task: TaskState) -> bool:
        if task.job_id not in self._expected:
            return False
        tasks = self._expected[task.job_id]
        return tasks is None or task.task_id in tasks

    def _job_done(self, job_id: str) -> bool:
        tasks = self._expected[job_id]
        if tasks is None:
            seen = [s for (j, _), s in self._states.items() if j == job_id]
            return bool(seen) and all(s.state.is_terminal for s in seen)
        for task in tasks:
            known = self._states.get((job_id, task))
            if known is None or not known.state.is_terminal:
                return False
        return True

    def _all_terminal(self) -> bool:
        return all(self._job_done(job) for job in self._expected)

    def _apply(self, candidates: Mapping[Key, TaskState], range_rows: set[Key]) -> tuple[TaskState, ...]:
        changed = []
        for key, new in candidates.items():
            old = self._states.get(key)
            if not _accept(old, new, key in range_rows):
                continue
            self._states[key] = new
            if old is None or not _same(old, new):
                changed.append(new)
        return tuple(changed)

    def _query(self, jobs: list[str]) -> tuple[dict[Key, TaskState], set[Key], str | None]:
        """Merged candidates, the range-row ones among them, and a squeue error.

        When squeue fails only sacct's own final rows are kept: they are true
        whatever the controller is doing.
        """
        sacct = run_sacct(jobs, self._runner)
        try:
            live = run_squeue(jobs, self._runner)
        except QueryError as exc:
            final = {t.key: t for t in sacct.own if t.state.is_terminal and self._wanted(t)}
            return final, set(), str(exc)
        merged = {k: t for k, t in merge(sacct, live).items() if self._wanted(t)}
        merged.update(self._vanished(merged, {t.job_id for t in live}))
        return merged, range_only(sacct, live), None

    def _vanished(self, candidates: Mapping[Key, TaskState], in_squeue: set[str]) -> dict[Key, TaskState]:
        """Unfinished tasks missing from both answers (see VANISHED_AFTER), as CANCELLED."""
        now = self._clock()
        out: dict[Key, TaskState] = {}
        for key in self._watched_keys():
            known = self._states.get(key)
            if key in candidates or key[0] not in in_squeue or (known and known.state.is_terminal):
                self._missing_since.pop(key, None)
                continue
            first, polls = self._missing_since.get(key, (now, 0))
            self._missing_since[key] = (first, polls + 1)
            if polls + 1 >= 2 and now - first >= self._vanished_after:
                out[key] = TaskState(key[0], key[1], JobState.CANCELLED, source="squeue")
        return out

    def _watched_keys(self) -> list[Key]:
        """Listed tasks of every job; for jobs watched whole, the tasks seen so far."""
        keys: list[Key] = []
        for job, tasks in self._expected.items():
            if tasks is not None:
                keys.extend((job, t) for t in tasks)
        keys.extend(k for k in self._states if self._expected.get(k[0], ()) is None)
        return keys

    def poll_once(self) -> PollUpdate:
        """One sacct (and one squeue) for every job that still has unfinished tasks."""
        jobs = [job for job in self._expected if not self._job_done(job)]
        changed: tuple[TaskState, ...] = ()
        error: str | None = None
        if jobs:
            try:
                candidates, range_rows, error = self._query(jobs)
                changed = self._apply(candidates, range_rows)
            except QueryError as exc:
                error = str(exc)
        if error:
            self.interval = min(self._cap, max(self.interval, self._floor) * self._error_factor)
        elif changed:
            self.interval = self._floor
        else:
            self.interval = min(self._cap, self.interval * self._factor)
        return PollUpdate(dict(self._states), changed, error, self._all_terminal(), self.interval)

    def run(self, observer: Callable[[PollUpdate], None],
            stop: threading.Event | None = None) -> PollUpdate:
        """Poll until every expected task is terminal or `stop` is set; return the last update."""
        stop = stop or threading.Event()
        while True:
            update = self.poll_once()
            observer(update)
            if update.all_terminal or stop.is_set():
                return update
            if self._sleep is not None:
                self._sleep(self.interval)
                if stop.is_set():
                    return update
            elif stop.wait(self.interval):
                return update
