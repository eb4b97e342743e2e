"""Jobs screen: recent submissions, one record's tasks updated live, a log pane, cancel.

States come only from the core: backends.poller.Poller for Slurm records (run in a
thread worker, each update posted as a JobsUpdated message carrying only what
changed) and backends.jobs for local records. The table is updated cell by cell.
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
from textual.widgets import DataTable, Footer, Label, Log, OptionList, ProgressBar, Select, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from backends.jobs import expected, local_rows, record_file
from backends.poller import Poller
from backends.record import find_records, load_record
from backends.slurm.cancel import cancel
from backends.states import JobState
from backends.tail import last_lines

from ..errors import describe_error, guarded
from ..messages import CancelRequested, JobsUpdated, LogUpdated, RecordOpened
from ..widgets.states import elapsed_text, state_name, state_text
from .base import ConsoleScreen, console_header
from .confirm import ConfirmScreen

FILTERS: tuple[str, ...] = ("all", "PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED",
                            "TIMEOUT", "OUT_OF_MEMORY")
LOG_SOURCES: tuple[str, ...] = ("log", "err", "out")
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
        self.tasks: dict[str, object] = {}        # row key -> TaskRecord
        self.states: dict[str, object] = {}       # row key -> TaskState
        self.filter = "all"
        self.log_source = "log"
        self.log_path: str | None = None
        self._stop_poll = threading.Event()
        self._stop_log = threading.Event()
        self._ready = False
        self._last_error: str | None = None

    def compose(self) -> ComposeResult:
        yield console_header()
        yield OptionList(id="records")
        with Horizontal(id="jobs-summary-row"):
            yield Static("no submission selected", id="jobs-summary")
            yield Select([(f, f) for f in FILTERS], value="all", allow_blank=False,
                         id="state-filter", compact=True)
        yield ProgressBar(total=1, show_eta=False, id="jobs-progress")
        table = DataTable(id="tasks", cursor_type="row", zebra_stripes=True)
        for key, width in COLUMNS:
            table.add_column(key, key=key, width=width)
        yield table
        yield Label("log: (select a task)", id="log-title")
        yield Log(id="log", max_lines=2000)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._ready = True
        self.action_reload()
        if self.initial_record is not None:
            self.open_record(self.initial_record)

    def on_unmount(self) -> None:
        self._stop_poll.set()
        self._stop_log.set()

    # -- recent submissions -------------------------------------------------
    def add_search_dir(self, directory: Path) -> None:
        if directory not in self.search_dirs:
            self.search_dirs.append(directory)

    @guarded
    def action_reload(self) -> None:
        self.find_recent(list(self.search_dirs))

    @work(thread=True, exclusive=True, group="records", exit_on_error=False)
    def find_recent(self, dirs: list[Path]) -> None:
        """Walking a big experiment tree takes a while: off the UI thread."""
        paths = find_records(dirs)[:50]
        options = [Option(self._record_label(Path(p)), id=str(p)) for p in paths]
        self.app.call_from_thread(self._show_recent, options)

    def _show_recent(self, options: list[Option]) -> None:
        records = self.query_one("#records", OptionList)
        records.clear_options()
        records.add_options(options)

    def _record_label(self, path: Path) -> Text:
        try:
            record = load_record(path)
        except Exception:
            return Text(f"{path.name}  (unreadable)", style="red")
        jobs = ",".join(j.job_id for j in record.jobs) or record.backend
        when = record.submitted_at[5:16].replace("T", " ")
        return Text.assemble((f"{record.backend:<5} ", "bold"), (f"{jobs:<14} ", "cyan"),
                             f"{len(record.tasks):>5} tasks  ", (f"{when}  ", "dim"),
                             (path.name, "dim"))

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
        self.tasks = {task_key(t.job_id, t.array_task_id, t.value): t for t in record.tasks}
        self.states = {}
        for state in states:
            self.states[row_key(state)] = state
        self.rebuild_table()
        self.query_one("#tasks", DataTable).focus()   # up/down now select tasks, as the help says
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
        """Local records: re-read backends.jobs.local_rows (q/*.local.json) until the run ended."""
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
        """Update only what changed; under a filter, remove and add just the rows that move.

        Rebuilding a 10k-row table costs about a second, so it is left for
        batches that move many rows (the first poll of a big array).
        """
        table = self.query_one("#tasks", DataTable)
        entering: list[str] = []
        leaving: list[str] = []
        for state in changed:
            key = row_key(state)
            old = self.states.get(key)
            self.states[key] = state
            if key not in self.tasks:
                continue
            was, now = self._matches(old), self._matches(state)
            if was and not now:
                leaving.append(key)
            elif now and not was:
                entering.append(key)
            elif now:
                before = self._state_cells(old)        # what the row shows now
                for column, value in self._state_cells(state).items():
                    if before.get(column) != value:     # only cells that changed
                        table.update_cell(key, column, value)
        if len(entering) > ENTERING_BEFORE_REBUILD or len(leaving) > LEAVING_BEFORE_REBUILD:
            self.rebuild_table()
            return
        for key in leaving:
            table.remove_row(key)
        for key in entering:
            table.add_row(*self._row_cells(key), key=key)
        if entering:
            table.sort("value", key=_value_order)      # back into the record's order
        self.update_summary()
        if entering or leaving:
            self.follow_selected()

    def _matches(self, state) -> bool:
        return self.filter == "all" or row_state_name(state) == self.filter

    @staticmethod
    def _state_cells(state) -> dict[str, object]:
        if state is None:           # not reported yet
            return {"state": row_state_text(None), "exit": Text(), "elapsed": Text(), "node": Text()}
        exit_code = "" if state.exit_code is None else str(state.exit_code)
        if getattr(state, "signal", None):
            exit_code += f" sig{state.signal}"
        # Text, not str: DataTable parses str cells as markup (slow, and a "[" would break)
        return {"state": row_state_text(state), "exit": Text(exit_code),
                "elapsed": Text(elapsed_text(state.elapsed)), "node": Text(state.node or "")}

    def _row_cells(self, key: str) -> tuple:
        task = self.tasks[key]
        cells = self._state_cells(self.states.get(key))
        value = Text("" if task.value is None else str(task.value))
        job = Text(task.job_id if task.job_id == "local" else slurm_target(task))
        return value, job, cells["state"], cells["exit"], cells["elapsed"], cells["node"]

    def rebuild_table(self) -> None:
        table = self.query_one("#tasks", DataTable)
        table.clear()
        for key in self.tasks:
            if self._matches(self.states.get(key)):
                table.add_row(*self._row_cells(key), key=key)
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
            self.filter = str(event.value)
            self.rebuild_table()

    @guarded
    def action_filter(self, name: str) -> None:
        self.set_filter(name)

    def action_cycle_filter(self) -> None:
        self.set_filter(FILTERS[(FILTERS.index(self.filter) + 1) % len(FILTERS)])

    def set_filter(self, name: str) -> None:
        self.query_one("#state-filter", Select).value = name
        self.filter = name
        self.rebuild_table()

    # -- log pane ---------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#tasks")
    @guarded
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.follow_selected()

    def selected_task(self):
        table = self.query_one("#tasks", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value
        return self.tasks.get(key)

    @guarded
    def action_cycle_log(self) -> None:
        self.log_source = LOG_SOURCES[(LOG_SOURCES.index(self.log_source) + 1) % len(LOG_SOURCES)]
        self.follow_selected()

    def follow_selected(self) -> None:
        """Point the log pane at the selected task's chosen log; without one, show nothing.

        Title and lines always change together: a stale log under another title
        (or under a filter that hides its task) would be read as the wrong task's.
        """
        task = self.selected_task()
        path = None if task is None else {"log": task.log, "err": task.slurm_err,
                                          "out": task.slurm_out}[self.log_source]
        if path and path == self.log_path:
            return
        self._stop_log.set()
        self.log_path = path
        self.query_one("#log", Log).clear()
        title = self.query_one("#log-title", Label)
        if task is None:
            title.update(Text(f"log [{self.log_source}]: (select a task)"))
        elif not path:
            title.update(Text(f"log [{self.log_source}]: none for this task"))
        else:
            title.update(Text(f"log [{self.log_source}]: {path}"))
            self._stop_log = threading.Event()
            self.follow_log(path, self._stop_log)

    @work(thread=True, exclusive=True, group="log", exit_on_error=False)
    def follow_log(self, path: str, stop: threading.Event) -> None:
        """Re-read the tail through backends.tail; each read replaces the pending one."""
        previous = None
        while not stop.is_set() and not get_current_worker().is_cancelled:
            try:
                lines = tuple(last_lines(path, 200))
            except FileNotFoundError:
                lines = (f"(no file yet: {path})",)
            if lines != previous:
                previous = lines
                self.app.call_from_thread(self.post_message, LogUpdated(path, lines))
            stop.wait(0.5)

    @guarded
    def on_log_updated(self, message: LogUpdated) -> None:
        if message.path != self.log_path:
            return
        log = self.query_one("#log", Log)
        log.clear()
        log.write_lines(message.lines)

    # -- cancel ---------------------------------------------------------------
    @guarded
    def action_cancel_task(self) -> None:
        task = self.selected_task()
        if task is None:
            self.notify("no task selected", severity="warning")
            return
        state = self.states.get(task_key(task.job_id, task.array_task_id, task.value))
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


def _value_order(value: Text) -> int:
    """Rows sort by their logical value, as the record lists its tasks (no value: one task)."""
    return int(value.plain) if value.plain else -1


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


def local_run_ended(rows) -> bool:
    """A local array stops at its first failure: ended when all are terminal, or one failed
    and none still runs."""
    states = [r.state for r in rows]
    if all(s is not None and s.is_terminal for s in states):
        return True
    failed = any(s is not None and s.is_terminal and not s.is_success for s in states)
    return failed and not any(s is not None and not s.is_terminal for s in states)
