"""Polls Slurm for a set of jobs: one sacct and at most one squeue per interval.

Used by hyperion-submit's waiting, hyperion-jobs watch and the console alike, so
all of them see the same states. The interval starts at `floor`, grows while
nothing changes up to `cap`, and drops back to `floor` on any change. A failed
query is reported (PollUpdate.error) and retried with backoff; it never becomes
a task result.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Mapping

from backends.slurm.accounting import QueryError, Runner, run_command, run_sacct, run_squeue
from backends.states import JobState, TaskState

Key = tuple[str, "int | None"]


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


def _accept(old: TaskState | None, new: TaskState) -> bool:
    """Whether `new` may replace `old`: never step back from a final or a running state.

    sacct can lag behind squeue (PENDING after squeue saw RUNNING and the task
    already left squeue), and a final state is never undone by a stale row.
    """
    if old is None:
        return True
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
                 sleep: Callable[[float], None] | None = None) -> None:
        if floor <= 0 or cap < floor:
            raise ValueError("need 0 < floor <= cap")
        self._expected = {str(j): (frozenset(t) if t is not None else None)
                          for j, t in expected.items()}
        self._floor, self._cap = floor, cap
        self._factor, self._error_factor = factor, error_factor
        self._runner = runner
        self._sleep = sleep
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

    def _apply(self, candidates: Mapping[Key, TaskState]) -> tuple[TaskState, ...]:
        changed = []
        for key, new in candidates.items():
            old = self._states.get(key)
            if not _accept(old, new):
                continue
            self._states[key] = new
            if old is None or not _same(old, new):
                changed.append(new)
        return tuple(changed)

    def _query(self, jobs: list[str]) -> tuple[dict[Key, TaskState], str | None]:
        """Merged candidates; on a squeue failure only sacct's final states are kept."""
        rows = [t for t in run_sacct(jobs, self._runner) if self._wanted(t)]
        candidates: dict[Key, TaskState] = {t.key: t for t in rows}
        try:
            live = run_squeue(jobs, self._runner)
        except QueryError as exc:
            return {k: t for k, t in candidates.items() if t.state.is_terminal}, str(exc)
        for task in live:
            if not self._wanted(task):
                continue
            known = candidates.get(task.key)
            if known is None or not known.state.is_terminal:
                candidates[task.key] = task
        return candidates, None

    def poll_once(self) -> PollUpdate:
        """One sacct (and one squeue) for every job that still has unfinished tasks."""
        jobs = [job for job in self._expected if not self._job_done(job)]
        changed: tuple[TaskState, ...] = ()
        error: str | None = None
        if jobs:
            try:
                candidates, error = self._query(jobs)
                changed = self._apply(candidates)
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
