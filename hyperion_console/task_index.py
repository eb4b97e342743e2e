"""The Jobs screen's tasks: record order, latest state of each, per-state counts, the filtered view.

Everything here costs per changed task, not per task of the array: a poll that
changes 1000 of 100k states updates 1000 dict entries and the counts; only a
change of a task's membership in the filter rebuilds the filtered key list
(one pass over plain strings). The states themselves come from the core
(Slurm TaskStates from the poller, local TaskRows from backends.watch.rows);
nothing here decides what a state is.
"""
from __future__ import annotations

import gc
import time
from collections import Counter
from contextlib import contextmanager
from typing import Iterable, Iterator

from backends.states import TERMINAL, JobState
from backends.watch.rows import task_key

Key = tuple[str, "int | None"]

ALL = "all"
NOT_COMPLETED = "not completed"
FILTERS: tuple[str, ...] = (ALL, NOT_COMPLETED, "PENDING", "RUNNING", "COMPLETED", "FAILED",
                            "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "UNKNOWN", "NOT_RUN", "LOST")
UNREPORTED = "UNKNOWN"
# A local value its ended run never reached (NOT_RUN) is as final as a failure: the bar said 25%
# beside "every task ended".
TERMINAL_NAMES = frozenset(state.value for state in TERMINAL) | {"NOT_RUN"}
# States whose elapsed time grows between two polls.
TICKING = frozenset({JobState.RUNNING, JobState.COMPLETING, JobState.CONFIGURING,
                     JobState.STAGE_OUT, JobState.SIGNALING})
_NAME = {state: state.value for state in JobState}     # enum .value costs a descriptor call
BULK = 1000     # from this many states on, no cyclic-GC passes while taking them


@contextmanager
def bulk() -> Iterator[None]:
    """No cyclic garbage collection while many acyclic objects are made (a 100k-task record,
    its states): each generation-2 pass would walk all of them for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def record_key(task) -> Key:
    """The key of a record's TaskRecord."""
    return task_key(task.job_id, task.array_task_id, task.value)


def row_key(row) -> Key:
    """The key of a TaskState (Slurm) or a TaskRow (local, carries its value)."""
    return task_key(row.job_id, row.task_id, getattr(row, "value", None))


def row_state_name(row) -> str:
    """A TaskState's or TaskRow's state; a task Slurm has not reported yet is UNKNOWN."""
    if row is None:
        return UNREPORTED
    if row.state is None:
        return getattr(row, "state_label", UNREPORTED)
    return row.state.value


def slurm_target(task) -> str:
    """What scancel takes for one task: JOB_TASK, or JOB for a non-array job."""
    return task.job_id if task.array_task_id is None else f"{task.job_id}_{task.array_task_id}"


def passes(name: str, flt: str) -> bool:
    """Whether a task in state `name` is shown under filter `flt`."""
    if flt == ALL:
        return True
    if flt == NOT_COMPLETED:
        return name != "COMPLETED"
    return name == flt


class TaskIndex:
    """A record's tasks with their latest states, counted by state and filtered by state name."""

    def __init__(self) -> None:
        self.keys: list[Key] = []               # record order
        self.tasks: dict[Key, object] = {}      # key -> TaskRecord
        self.states: dict[Key, object] = {}     # key -> TaskState / TaskRow
        self.names: dict[Key, str] = {}         # key -> state name shown
        self.received: dict[Key, float] = {}    # key -> time.time() its state was current
        self.ticking: set[Key] = set()          # tasks whose elapsed moves on (RUNNING...): what a tick redraws
        self.counts: Counter[str] = Counter()
        self.by_value: dict[int, Key] = {}
        self.filter = ALL
        self.selection: frozenset[Key] | None = None   # a failure group's tasks (None: every task)
        self.shown: list[Key] = []              # keys passing the filter, record order
        self.held: float | None = None          # while Slurm does not answer: the last answer's time

    def __len__(self) -> int:
        return len(self.keys)

    def load(self, tasks: Iterable, states: Iterable = ()) -> None:
        """Start over with a record's tasks (all UNKNOWN), then apply known states."""
        with bulk():
            self.tasks = {record_key(task): task for task in tasks}
            self.keys = list(self.tasks)
            self.names = dict.fromkeys(self.keys, UNREPORTED)
            self.counts = Counter({UNREPORTED: len(self.keys)}) if self.keys else Counter()
            self.states, self.received, self.held = {}, {}, None
            self.ticking = set()
            self.by_value = {task.value: key for key, task in self.tasks.items()
                             if task.value is not None}
            self.selection = None
        self.apply(states)
        self.refilter()

    def apply(self, changed: Iterable, as_of: float | None = None) -> bool:
        """Take newer states; True when a task entered or left the filtered view.

        `as_of` (time.time()) is when the states were current; elapsed ticks from there.
        """
        changed = changed if isinstance(changed, (list, tuple)) else list(changed)
        if len(changed) >= BULK:
            with bulk():
                return self._apply(changed, as_of)
        return self._apply(changed, as_of)

    def _apply(self, changed, as_of: float | None) -> bool:
        stamp = time.time() if as_of is None else as_of
        names, counts, flt, selection = self.names, self.counts, self.filter, self.selection
        states, received, name_of, ticking, moving = self.states, self.received, _NAME, TICKING, self.ticking
        moved = False
        for state in changed:           # row_key and row_state_name, inlined: 100k at start-up
            job = state.job_id
            key = ("local", state.value) if job == "local" else (job, state.task_id)
            states[key] = state
            current = state.state
            if current in ticking:      # only a ticking elapsed needs to know when it was true
                received[key] = stamp
            old = names.get(key)
            if old is None:              # not a task of this record
                continue
            if current in ticking:
                moving.add(key)
            else:
                moving.discard(key)
            new = name_of[current] if current is not None else getattr(state, "state_label", UNREPORTED)
            if new != old:
                names[key] = new
                counts[old] -= 1
                if not counts[old]:
                    del counts[old]
                counts[new] += 1
                if passes(old, flt) != passes(new, flt) and (selection is None or key in selection):
                    moved = True
        if moved:
            self.refilter()
        return moved

    def set_filter(self, name: str) -> None:
        if name not in FILTERS:
            raise ValueError(f"unknown filter {name!r}; one of {', '.join(FILTERS)}")
        self.filter = name
        self.refilter()

    def select(self, keys: Iterable[Key] | None) -> None:
        """Show only these tasks (a failure group's), within the state filter; None: every task."""
        self.selection = None if keys is None else frozenset(k for k in keys if k in self.tasks)
        self.refilter()

    def keys_of_values(self, values: Iterable[int | None]) -> list[Key]:
        """The keys of the tasks with these values (None: the tasks without a value)."""
        wanted = set(values)
        if None in wanted:
            return [key for key, task in self.tasks.items() if task.value in wanted]
        return [self.by_value[v] for v in wanted if v in self.by_value]

    def refilter(self) -> None:
        """One pass over the state names (about 5 ms at 100k tasks)."""
        flt, names, selection = self.filter, self.names, self.selection
        keys = self.keys if selection is None else [key for key in self.keys if key in selection]
        if flt == ALL:
            self.shown = keys
        elif flt == NOT_COMPLETED:
            self.shown = [key for key in keys if names[key] != "COMPLETED"]
        else:
            self.shown = [key for key in keys if names[key] == flt]

    def position(self, key: Key | None) -> int | None:
        """Where `key` is in the filtered view (None: hidden or unknown)."""
        if key is None or key not in self.tasks or not passes(self.names[key], self.filter):
            return None
        if self.selection is not None and key not in self.selection:
            return None
        if self.shown is self.keys:
            return self.keys.index(key)
        return self.shown.index(key)

    def state_of(self, key: Key):
        return self.states.get(key)

    def done(self) -> int:
        """Tasks in a final state (progress bar)."""
        return sum(n for name, n in self.counts.items() if name in TERMINAL_NAMES)

    def all_final(self) -> bool:
        return bool(self.keys) and self.done() == len(self.keys)

    def elapsed(self, key: Key, now: float) -> float | None:
        """The task's elapsed seconds now: the core's figure plus the time since it was current.

        While Slurm does not answer (`held`), only up to its last answer, as `hyperion-jobs watch`
        shows it: ticking on beside "states 40 s old", it read as fresh news of a task that may
        have ended since."""
        state = self.states.get(key)
        if state is None or state.elapsed is None:
            return None
        if state.state in TICKING:
            upto = now if self.held is None else min(now, self.held)
            return state.elapsed + max(0.0, upto - self.received.get(key, upto))
        return state.elapsed
