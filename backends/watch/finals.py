"""Writing each task's final state (and what it used) into the ledger the first time any face sees it.

hyperion-submit's wait, hyperion-jobs status and watch, and the console all
observe states through this, so the history keeps how every task ended even
after Slurm forgets the job (MinJobAge, purged accounting, a pending task
cancelled before it ever had an accounting row). Accounting often tells what
an ended task used only a poll or two after the controller said it ended: that
usage follows as a line of its own.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from backends.errors import InputError
from backends.logheader import iso_now
from backends.records.attempts import (FinalState, TaskUsage, append_entries, ends_since, ledger_size,
                                       merged_figures, said_figures)
from backends.records.record import TaskRecord
from backends.states import TaskState
from backends.watch.usage import Usage

Key = tuple[str, "int | None"]


def final_state(task: TaskRecord, state: TaskState, usage: Usage | None = None) -> FinalState:
    return FinalState(task.attempt, task.value, task.job_id, task.array_task_id, state.state.value,
                      state.exit_code, state.signal, state.elapsed, state.node,
                      state.restart_count, usage=usage.to_json() if usage is not None else None,
                      time=iso_now())


class FinalsRecorder:
    """Appends the final state of watched tasks, once each, to the ledger of `record_path`.

    `ended` names tasks whose final state the ledger holds already, with the
    usage it holds for them (None when none): their usage is recorded when
    accounting gives it. `settled` names watched tasks whose end the ledger
    holds (that end, as the Poller takes it): only the end of a run with a
    higher restart count (Slurm requeued the task) is recorded for them; a
    row without a restart count (accounting's) is never one. A ledger that
    cannot be written (someone else's directory, a full disk) is not an error
    for a watcher: the states are still shown, and written at a later poll
    of the same watch if there is room by then.

    Another face may record the same ends meanwhile (the console's Retry looks
    at Slurm through `history_status` while the Jobs screen's watch still
    polls; a `status` beside a `watch`): before writing ends, the lines the
    ledger gained since this recorder last looked are read, and an end already
    there (same or later run) is not written again. Only the new bytes are read:
    from `since` (the ledger size of the history the caller read, `Ledger.size`)
    or, without it, from the size at creation.

    Usage likewise: every face that saw a task end learnt what it used from its own sacct, and
    each wrote it (four faces of a 30-task array: 108 lines, three alike for most tasks). A usage
    line is written only when it says a figure the ledger holds for that task's run in no line, or
    with another value than the ledger's newest (`ended`'s usage, the lines read since, the lines
    written here): the same read of the new bytes, once per batch of lines written. A value
    accounting corrected (a peak told higher a poll after the end) is written; the same values
    told at every poll are not. Two faces reading and appending at once may both
    write one (a rare duplicate readers fold); a line is never left out on a guess.
    """

    def __init__(self, record_path: str, tasks: Sequence[TaskRecord],
                 ended: Mapping[Key, tuple[TaskRecord, Mapping | None]] | None = None,
                 settled: Mapping[Key, TaskState] | None = None, since: int | None = None) -> None:
        self.record_path = record_path
        self._tasks = {(t.job_id, t.array_task_id): t for t in tasks}
        self._settled = {key: state.restart_count or 0 for key, state in (settled or {}).items()}
        self._written: set[tuple[Key, int]] = set()
        self._usage: dict[Key, Mapping | None] = {k: u for k, (_, u) in (ended or {}).items()}
        self._ended = {k: t for k, (t, _) in (ended or {}).items()}
        # ends in the ledger's first `since` bytes (the history `settled`/`ended` come from) are known
        self._read_to = ledger_size(record_path) if since is None else since
        # ends read from lines other writers appended: (attempt, value) -> highest restart count. Kept,
        # not only used for the batch that read them: a poll may see a task end after the line was read
        self._told: dict[tuple[int, int | None], int] = {}
        # the usage figures the ledger holds of each task, by (attempt, value): (the restart count of
        # the run they are of, None when not known, and the figures by name) from `ended`, the lines
        # other writers appended and the ones written here
        self._held: dict[tuple[int, int | None], tuple[int | None, Mapping[str, object]]] = {
            (t.attempt, t.value): (None, said_figures(u)) for t, u in (ended or {}).values()}
        self.error: str | None = None
        self._unwritten: list[object] = []     # entries the ledger refused (a full disk): tried again
        # the ledger's size up to which it holds only `since`'s bytes and this recorder's lines, None once
        # another writer's bytes (or a failed write's) came between; said by `known_to` once written
        self._only_ours: int | None = self._read_to
        self._wrote = False

    @property
    def known_to(self) -> int | None:
        """The ledger's size after this recorder's writes, when each began where the caller's reading
        (`since`) or its previous write ended: nothing another face wrote lies between. A face that
        notices ends by the ledger's stat (the console's Retry tab) takes these lines as its own, not
        as news to ask Slurm about again. None before any write, or once other bytes came between."""
        return self._only_ours if self._wrote else None

    @property
    def unrecorded(self) -> str | None:
        """What a watch says as it ends when the last write of ends failed (a full disk, a ledger
        you may not write), None when the history holds every end it saw: the states were shown,
        and without this line nothing told the user that the history lacks them, nor that a later
        `status` can record them only while Slurm still remembers the job."""
        if self.error is None:
            return None
        ends = {(e.attempt, e.value) for e in self._unwritten if isinstance(e, FinalState)}
        used = {(e.attempt, e.value) for e in self._unwritten if isinstance(e, TaskUsage)} - ends
        if ends:            # a requeued task's two ends, its usage lines: one task each
            what = f"the end of {len(ends)} task(s) it saw was"
        elif used:
            what = f"what {len(used)} ended task(s) used was"
        else:
            what = "the ends it saw were"
        return (f"{what} not recorded ({self.error}); once it can be written, hyperion-jobs status "
                f"{self.record_path} records them, while Slurm still remembers the job")

    def observe(self, states: Iterable[TaskState], usage: Mapping[Key, Usage] | None = None) -> list[object]:
        """Record the terminal states among `states` not recorded yet, and new usage of ended tasks."""
        usage = usage or {}
        new: list[object] = []
        for state in states:
            task = self._tasks.get(state.key)
            seen = (state.key, state.restart_count or 0)   # a requeued task ends once per run
            if task is None or not state.state.is_terminal or seen in self._written \
                    or seen[1] <= self._settled.get(state.key, -1):
                continue
            self._written.add(seen)
            used = usage.get(state.key)
            new.append(final_state(task, state, used))
            self._ended[state.key] = task
            self._usage[state.key] = used.to_json() if used is not None else None
        for key, used in usage.items():
            task = self._ended.get(key)
            if task is None or self._usage.get(key) == used.to_json():
                continue
            self._usage[key] = used.to_json()
            new.append(TaskUsage(task.attempt, task.value, used.to_json()))
        # What a full disk refused before goes first, once there is room: a watch goes on for hours,
        # and Slurm may forget the job (a pending task cancelled never had an accounting row).
        unwritten, self._unwritten = self._unwritten, []
        if unwritten or new:
            self._read_news()                  # once per batch, whatever its size
            batch: dict[tuple[int, int | None], tuple[int | None, Mapping[str, object]]] = {}
            unwritten = self._not_recorded_elsewhere(unwritten, batch)
            new = self._not_recorded_elsewhere(new, batch)
        if unwritten or new:
            try:
                span = append_entries(self.record_path, [*unwritten, *new])
            except OSError as err:
                self.error = f"cannot write the history {self.record_path}: {err.strerror or err}"
                self._unwritten = [*unwritten, *new]
                self._only_ours = None             # a part of a line may have gone in
            except InputError as err:      # not a regular file: the states are shown, not kept
                self.error = f"cannot write the history {self.record_path}: {err.problem}"
            else:                          # written at last: no longer said as if lost
                self.error = None
                self._held.update(batch)   # what the ledger holds now, not a line refused
                self._wrote = True
                self._only_ours = span[1] if span is not None and span[0] == self._only_ours else None
        return new

    def _read_news(self) -> None:
        """What other writers appended to the ledger since this recorder last looked: their ends and
        the usage figures they said (read only from where it last read)."""
        news = ends_since(self.record_path, self._read_to)
        self._read_to = news.offset
        for key, restarts in news.finals.items():
            self._told[key] = max(restarts, self._told.get(key, -1))
        for key, told in news.usage.items():
            self._held[key] = merged_figures(self._held.get(key), *told)

    def _not_recorded_elsewhere(self, new: list[object],
                                batch: dict[tuple[int, int | None], tuple[int | None, Mapping[str, object]]]) -> list[object]:
        """`new` less the ends another writer put in the ledger since this recorder was made, and
        less the usage lines whose every figure the ledger holds, with that value, for that task's
        run; `batch` gains what the lines kept hold (the ledger's once they are written)."""
        kept: list[object] = []
        for entry in new:
            if isinstance(entry, FinalState):
                key, restarts = (entry.attempt, entry.value), entry.restart_count or 0
                if self._told.get(key, -1) >= restarts:
                    if entry.usage is None:
                        continue
                    entry = TaskUsage(entry.attempt, entry.value, entry.usage)   # the other end may lack it
                else:
                    kept.append(entry)
                    batch[key] = merged_figures(batch.get(key, self._held.get(key)), restarts, said_figures(entry.usage))
                    continue
            if isinstance(entry, TaskUsage):
                key = (entry.attempt, entry.value)
                held = batch.get(key, self._held.get(key))
                figures = said_figures(entry.usage)
                if held is not None and all(held[1].get(name) == value for name, value in figures.items()):
                    continue                   # every figure it says, a line of the ledger says already
                batch[key] = merged_figures(held, None, figures)
            kept.append(entry)
        return kept

