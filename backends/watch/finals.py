"""Writing each task's final state into the ledger the first time any face sees it.

hyperion-submit's wait, hyperion-jobs status and watch, and the console all
observe states through this, so the history keeps how every task ended even
after Slurm forgets the job (MinJobAge, purged accounting, a pending task
cancelled before it ever had an accounting row).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from backends.logheader import iso_now
from backends.records.attempts import FinalState, append_entries
from backends.records.record import TaskRecord
from backends.states import TaskState


def final_state(task: TaskRecord, state: TaskState) -> FinalState:
    return FinalState(task.attempt, task.value, task.job_id, task.array_task_id, state.state.value,
                      state.exit_code, state.signal, state.elapsed, state.node,
                      state.restart_count, time=iso_now())


class FinalsRecorder:
    """Appends the final state of watched tasks, once each, to the ledger of `record_path`.

    A ledger that cannot be written (someone else's directory, a full disk) is
    not an error for a watcher: the states are still shown, only not kept.
    """

    def __init__(self, record_path: str, tasks: Sequence[TaskRecord]) -> None:
        self.record_path = record_path
        self._tasks = {(t.job_id, t.array_task_id): t for t in tasks}
        self._written: set[tuple[tuple[str, int | None], int]] = set()
        self.error: str | None = None

    def observe(self, states: Iterable[TaskState]) -> list[FinalState]:
        """Record the terminal states among `states` not recorded yet; what was written."""
        new: list[FinalState] = []
        for state in states:
            task = self._tasks.get(state.key)
            seen = (state.key, state.restart_count or 0)   # a requeued task ends once per run
            if task is None or not state.state.is_terminal or seen in self._written:
                continue
            self._written.add(seen)
            new.append(final_state(task, state))
        if new:
            try:
                append_entries(self.record_path, new)
            except OSError as err:
                self.error = f"cannot write the history {self.record_path}: {err.strerror or err}"
        return new
