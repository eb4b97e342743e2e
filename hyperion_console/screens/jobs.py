"""Jobs screen: recent submissions, one record's tasks updated live, a log pane, cancel.

States come only from the core: backends.watch.poller.Poller for Slurm records
(run in a thread worker, each update posted as a JobsUpdated message carrying
only what changed) and backends.watch.rows for local records. The widgets
(record list, task table, log pane) live in hyperion_console.widgets.
"""
from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, OptionList, ProgressBar, Select, Static

from backends.records.record import load_record
from backends.watch.poller import Poller
from backends.watch.rows import expected, local_rows
from backends.watch.slurm.cancel import cancel
from backends.watch.targets import record_file

from ..errors import describe_error, guarded
from ..messages import CancelRequested, JobsUpdated, RecordOpened
from ..widgets.log_pane import LogPane
from ..widgets.record_list import RecordList
from ..widgets.task_table import FILTERS, TaskTable, row_key, row_state_name, slurm_target, state_style
from .base import ConsoleScreen, console_header
from .confirm import ConfirmScreen


class JobsScreen(ConsoleScreen):
    SUB_TITLE = "Jobs"
    BINDINGS = [
        Binding("f", "cycle_filter", "Filter"),
        Binding("l", "cycle_log", "Log"),
        Binding("x", "cancel_task", "Cancel"),
        Binding("X", "cancel_job", "Cancel job", show=False),   # in help and palette; 80 columns
        Binding("r", "reload", "Reload", show=False),
    ]

    def __init__(self, search_dirs: Sequence[Path] = (), record: Path | None = None) -> None:
        super().__init__(id="jobs")
        self.search_dirs = list(search_dirs)
        self.initial_record = record
        self.record = None
        self.record_path: str | None = None
        self._stop_poll = threading.Event()
        self._ready = False
        self._last_error: str | None = None

    def compose(self) -> ComposeResult:
        yield console_header()
        yield RecordList(id="records")
        with Horizontal(id="jobs-summary-row"):
            yield Static("no submission selected", id="jobs-summary")
            yield Select([(f, f) for f in FILTERS], value="all", allow_blank=False,
                         id="state-filter", compact=True)
        yield ProgressBar(total=1, show_eta=False, id="jobs-progress")
        yield TaskTable(id="tasks")
        yield LogPane(id="log-pane")
        yield Footer(compact=True)

    @property
    def table(self) -> TaskTable:
        return self.query_one("#tasks", TaskTable)

    @property
    def log_pane(self) -> LogPane:
        return self.query_one("#log-pane", LogPane)

    @property
    def tasks(self) -> dict[str, object]:
        """Row key -> TaskRecord of the open record."""
        return self.table.tasks

    @property
    def states(self) -> dict[str, object]:
        """Row key -> the latest TaskState (Slurm) or TaskRow (local)."""
        return self.table.states

    @property
    def filter(self) -> str:
        return self.table.filter

    def on_mount(self) -> None:
        self._ready = True
        self.action_reload()
        if self.initial_record is not None:
            self.open_record(self.initial_record)

    def on_unmount(self) -> None:
        self._stop_poll.set()

    # -- recent submissions -------------------------------------------------
    def add_search_dir(self, directory: Path) -> None:
        if directory not in self.search_dirs:
            self.search_dirs.append(directory)

    @guarded
    def action_reload(self) -> None:
        self.query_one("#records", RecordList).find_recent(list(self.search_dirs))

    @on(OptionList.OptionSelected, "#records")
    @guarded
    def _record_chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.open_record(Path(event.option.id))

    # -- one record ---------------------------------------------------------
    @guarded
    def open_record(self, path: Path | str) -> None:
        if not self._ready:        # not composed yet: on_mount opens it
            self.initial_record = Path(path)
            return
        try:
            # as hyperion-jobs status: a directory holding one record names it
            path = record_file(str(path)) or path
            record = load_record(path)
        except Exception as exc:
            self.notify(describe_error(exc), title="cannot open record", severity="error")
            return
        self.show_record(record)
        self.add_search_dir(Path(record.path).parent.parent.parent)
        self.start_watching(record)

    def show_record(self, record, states: Iterable = ()) -> None:
        """Fill the table from a record's tasks (states unknown until the core reports)."""
        self._stop_poll.set()
        self.record, self.record_path = record, str(record.path)
        self.table.show_tasks(record.tasks, states)
        self.update_summary()
        self.follow_selected()
        self.table.focus()   # up/down now select tasks, as the help says
        self.post_message(RecordOpened(self.record_path, len(self.tasks)))

    def start_watching(self, record) -> None:
        self._stop_poll = threading.Event()
        if record.backend == "slurm":
            self.poll_slurm(record, self._stop_poll)
        else:
            self.poll_local(record, self._stop_poll)

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll_slurm(self, record, stop: threading.Event) -> None:
        """The core's Poller in a thread; each update crosses to the UI as one message."""
        poller = Poller(expected(record))
        path = str(record.path)

        def observer(update) -> None:
            if not stop.is_set():
                self.app.call_from_thread(self.post_message, JobsUpdated(
                    path, update.changed, update.error, update.all_terminal))

        poller.run(observer, stop)

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll_local(self, record, stop: threading.Event) -> None:
        """Local records: re-read backends.watch.rows.local_rows (q/*.local.json) until the run ended."""
        path = str(record.path)
        seen: dict[str, object] = {}
        while not stop.is_set():
            rows = local_rows(load_record(path))
            changed = [r for r in rows if seen.get(row_key(r)) != r]
            for row in changed:
                seen[row_key(row)] = row
            done = local_run_ended(rows)
            if changed or done:
                self.app.call_from_thread(self.post_message, JobsUpdated(path, changed, None, done))
            if done:
                return
            stop.wait(0.5)

    @guarded
    def on_jobs_updated(self, message: JobsUpdated) -> None:
        if message.record_path != self.record_path:
            return
        self.apply_states(message.changed)
        if message.error and message.error != self._last_error:   # once per distinct error
            self.notify(message.error, title="poll error (retrying)", severity="warning")
        self._last_error = message.error

    def apply_states(self, changed: Iterable) -> None:
        """Update the rows that changed (see TaskTable.apply), the summary and the log pane."""
        if self.table.apply(changed):
            self.follow_selected()
        self.update_summary()

    def rebuild_table(self) -> None:
        self.table.rebuild()
        self.update_summary()
        self.follow_selected()     # the filter may have hidden the task whose log was shown

    def update_summary(self) -> None:
        shown = [self.states.get(key) for key in self.tasks]
        counts = Counter(row_state_name(s) for s in shown)
        done = sum(1 for s in shown if s is not None and s.state is not None and s.state.is_terminal)
        summary = Text()
        name = Path(self.record_path).name if self.record_path else ""
        summary.append(f"{name} ", style="bold")
        for state, count in sorted(counts.items()):
            summary.append(state, style=state_style(state))
            summary.append(f" {count}  ")
        self.query_one("#jobs-summary", Static).update(summary)
        self.query_one("#jobs-progress", ProgressBar).update(total=max(len(self.tasks), 1),
                                                             progress=done)

    # -- filter ---------------------------------------------------------------
    @on(Select.Changed, "#state-filter")
    @guarded
    def _filter_changed(self, event: Select.Changed) -> None:
        if event.value != self.filter:
            self.table.filter = str(event.value)
            self.rebuild_table()

    @guarded
    def action_filter(self, name: str) -> None:
        self.set_filter(name)

    def action_cycle_filter(self) -> None:
        self.set_filter(FILTERS[(FILTERS.index(self.filter) + 1) % len(FILTERS)])

    def set_filter(self, name: str) -> None:
        self.query_one("#state-filter", Select).value = name
        self.table.filter = name
        self.rebuild_table()

    # -- log pane ---------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#tasks")
    @guarded
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.follow_selected()

    def selected_task(self):
        return self.table.selected_task()

    @guarded
    def action_cycle_log(self) -> None:
        self.log_pane.cycle_source()
        self.follow_selected()

    def follow_selected(self) -> None:
        """Point the log pane at the selected task (nothing when the filter hides every task)."""
        self.log_pane.show_task(self.selected_task())

    # -- cancel ---------------------------------------------------------------
    @guarded
    def action_cancel_task(self) -> None:
        task = self.selected_task()
        if task is None:
            self.notify("no task selected", severity="warning")
            return
        state = self.table.state_of(task)
        self._confirm_cancel([slurm_target(task)], [state],
                             f"{slurm_target(task)} already ended ({row_state_name(state)})")

    @guarded
    def action_cancel_job(self) -> None:
        if self.record is None:
            self.notify("no submission selected", severity="warning")
            return
        self._confirm_cancel([job.job_id for job in self.record.jobs],
                             [self.states.get(key) for key in self.tasks], "every task already ended")

    def _confirm_cancel(self, targets: list[str], states: list, ended: str) -> None:
        if self.record is None or self.record.backend != "slurm":
            self.notify("cancel: only Slurm submissions can be cancelled", severity="warning")
            return
        if states and all(s is not None and s.state is not None and s.state.is_terminal for s in states):
            # scancel of a finished job exits 0 and does nothing: "cancelled" would be a lie
            self.notify(f"{ended}: nothing to cancel", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(CancelRequested(targets))
                self.run_cancel(targets)

        self.app.push_screen(ConfirmScreen("Cancel with scancel?", "scancel " + " ".join(targets),
                                           yes="Cancel"), answered)

    @work(thread=True, group="cancel", exit_on_error=False)
    def run_cancel(self, targets: list[str]) -> None:
        cancel(targets)
        self.app.call_from_thread(self.notify, "cancelled " + " ".join(targets))


def local_run_ended(rows) -> bool:
    """A local array stops at its first failure: ended when all are terminal, or one failed
    and none still runs."""
    states = [r.state for r in rows]
    if all(s is not None and s.is_terminal for s in states):
        return True
    failed = any(s is not None and s.is_terminal and not s.is_success for s in states)
    return failed and not any(s is not None and not s.is_terminal for s in states)
