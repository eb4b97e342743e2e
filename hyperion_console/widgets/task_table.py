"""The task table of the Jobs screen: one row per task of a record, its state updated in place.

The table holds the record's tasks and the latest state of each (from the core:
Slurm TaskStates or local TaskRows) and shows those that pass the state filter.
"""
from __future__ import annotations

from typing import Iterable

from rich.text import Text
from textual.widgets import DataTable

from backends.states import JobState

from .states import elapsed_text, state_name, state_text

FILTERS: tuple[str, ...] = ("all", "PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED",
                            "TIMEOUT", "OUT_OF_MEMORY")
# Beyond these many rows entering / leaving a filter in one update, one rebuild (~1 s at 10k
# rows) is cheaper: DataTable.add_row is cheap, each remove_row re-indexes the table (~10 ms).
ENTERING_BEFORE_REBUILD = 1000
LEAVING_BEFORE_REBUILD = 100
# fixed widths: live updates never shift the columns (OUT_OF_MEMORY is the longest state)
COLUMNS: tuple[tuple[str, int], ...] = (("value", 6), ("job", 12), ("state", 13), ("exit", 7),
                                        ("elapsed", 9), ("node", 16))


def task_key(job_id: str, task_id: int | None, value: int | None = None) -> str:
    """Row key: Slurm tasks by job and physical index; local tasks (job "local") by value."""
    if job_id == "local":
        return f"local:{value}"
    return job_id if task_id is None else f"{job_id}_{task_id}"


def row_key(row) -> str:
    """The row key of a TaskState (Slurm) or a TaskRow (local, carries its value)."""
    return task_key(row.job_id, row.task_id, getattr(row, "value", None))


def slurm_target(task) -> str:
    """What scancel takes for one task: JOB_TASK, or JOB for a non-array job."""
    return task.job_id if task.array_task_id is None else f"{task.job_id}_{task.array_task_id}"


def row_state_name(row) -> str:
    """A TaskState's or TaskRow's state; rows Slurm has not reported yet are UNKNOWN."""
    if row is None:
        return "UNKNOWN"
    if row.state is None:
        return getattr(row, "state_label", "UNKNOWN")
    return state_name(row.state)


def row_state_text(row) -> Text:
    if row is None or row.state is None:
        return Text(row_state_name(row), style="dim")
    return state_text(row.state)


def state_style(name: str) -> str:
    return str(state_text(_by_name(name)).style)


def _by_name(name: str):
    try:
        return JobState(name)
    except ValueError:
        return None


def _value_order(value: Text) -> int:
    """Rows sort by their logical value, as the record lists its tasks (no value: one task)."""
    return int(value.plain) if value.plain else -1


def state_cells(state) -> dict[str, object]:
    """The state-dependent cells of a row (Text, not str: DataTable would parse str as markup)."""
    if state is None:           # not reported yet
        return {"state": row_state_text(None), "exit": Text(), "elapsed": Text(), "node": Text()}
    exit_code = "" if state.exit_code is None else str(state.exit_code)
    if getattr(state, "signal", None):
        exit_code += f" sig{state.signal}"
    return {"state": row_state_text(state), "exit": Text(exit_code),
            "elapsed": Text(elapsed_text(state.elapsed)), "node": Text(state.node or "")}


class TaskTable(DataTable):
    """A record's tasks with their latest states, filtered by state name ("all": every task)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.tasks: dict[str, object] = {}        # row key -> TaskRecord
        self.states: dict[str, object] = {}       # row key -> TaskState / TaskRow
        self.filter = "all"
        for key, width in COLUMNS:
            self.add_column(key, key=key, width=width)

    def show_tasks(self, tasks: Iterable, states: Iterable = ()) -> None:
        """Fill from a record's tasks (states unknown until the core reports)."""
        self.tasks = {task_key(t.job_id, t.array_task_id, t.value): t for t in tasks}
        self.states = {row_key(state): state for state in states}
        self.rebuild()

    def set_filter(self, name: str) -> None:
        self.filter = name
        self.rebuild()

    def matches(self, state) -> bool:
        return self.filter == "all" or row_state_name(state) == self.filter

    def row_cells(self, key: str) -> tuple:
        task = self.tasks[key]
        cells = state_cells(self.states.get(key))
        value = Text("" if task.value is None else str(task.value))
        job = Text(task.job_id if task.job_id == "local" else slurm_target(task))
        return value, job, cells["state"], cells["exit"], cells["elapsed"], cells["node"]

    def rebuild(self) -> None:
        self.clear()
        for key in self.tasks:
            if self.matches(self.states.get(key)):
                self.add_row(*self.row_cells(key), key=key)

    def apply(self, changed: Iterable) -> bool:
        """Update only what changed; under a filter, remove and add just the rows that move.

        Rebuilding a 10k-row table costs about a second, so it is left for
        batches that move many rows (the first poll of a big array). True when
        rows entered or left (the selected task may have changed).
        """
        entering: list[str] = []
        leaving: list[str] = []
        for state in changed:
            key = row_key(state)
            old = self.states.get(key)
            self.states[key] = state
            if key not in self.tasks:
                continue
            was, now = self.matches(old), self.matches(state)
            if was and not now:
                leaving.append(key)
            elif now and not was:
                entering.append(key)
            elif now:
                before = state_cells(old)        # what the row shows now
                for column, value in state_cells(state).items():
                    if before.get(column) != value:     # only cells that changed
                        self.update_cell(key, column, value)
        if len(entering) > ENTERING_BEFORE_REBUILD or len(leaving) > LEAVING_BEFORE_REBUILD:
            self.rebuild()
            return True
        for key in leaving:
            self.remove_row(key)
        for key in entering:
            self.add_row(*self.row_cells(key), key=key)
        if entering:
            self.sort("value", key=_value_order)      # back into the record's order
        return bool(entering or leaving)

    def selected_task(self):
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key((self.cursor_row, 0)).row_key.value
        return self.tasks.get(key)

    def state_of(self, task):
        return self.states.get(task_key(task.job_id, task.array_task_id, task.value))
