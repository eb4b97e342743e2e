"""Jobs screen: recent submissions, one record's tasks updated live, a state map, a log pane, cancel.

States come only from the core: backends.watch.poller.Poller for Slurm records
(run in a thread worker, each update posted as a JobsUpdated message carrying
only what changed, with the age of the answer and any query problem) and
backends.watch.rows for local records. The widgets (record list, task table,
state map, log pane, find bar, summaries) live in hyperion_console.widgets;
this module wires them and keeps every view fresh after an action.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Iterable, Sequence

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import ContentSwitcher, OptionList, ProgressBar, Select, Static

from backends.watch.poller import Poller
from backends.watch.rows import expected, local_rows
from backends.watch.slurm.cancel import cancel
from backends.watch.targets import record_file

from ..errors import describe_error, guarded
from ..messages import CancelRequested, FilterChanged, JobsUpdated, RecordOpened, TaskHighlighted
from ..record_cache import cached_record
from ..shown import shown, tell
from ..task_index import FILTERS, row_key, row_state_name, slurm_target
from ..widgets.find_bar import FindBar
from ..widgets.fit_line import FitLine
from ..widgets.log_pane import LogPane
from ..widgets.log_view import LogView
from ..widgets.record_list import RecordList, remember
from ..widgets.state_map import StateMap, legend_text
from ..widgets.summary import PollStatus, StateCounts
from ..widgets.task_table import TaskTable
from .base import ConsoleScreen, console_footer, console_header
from .confirm import ConfirmScreen

TICK_SECONDS = 1.0
LOCAL_POLL_SECONDS = 0.5


class JobsScreen(ConsoleScreen):
    SUB_TITLE = "Jobs"
    BINDINGS = [
        Binding("f", "cycle_filter(1)", "Filter"),
        Binding("F", "cycle_filter(-1)", "Filter back", show=False),
        Binding("m", "toggle_map", "Map"),
        Binding("slash", "find", "Find"),
        Binding("colon", "go_to_value", "Go to", show=False),
        Binding("n", "find_next(True)", "Next match", show=False),
        Binding("N", "find_next(False)", "Previous match", show=False),
        Binding("o", "focus_records", "Records"),
        Binding("left_square_bracket", "neighbour_record(-1)", "Newer record", show=False),
        Binding("right_square_bracket", "neighbour_record(1)", "Older record", show=False),
        Binding("l", "cycle_log", "Log", show=False),
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
        self._ended = False
        self._last_find: tuple[str, str] | None = None     # (mode, text) for n / N

    def compose(self) -> ComposeResult:
        yield console_header()
        yield RecordList(id="records")
        with Horizontal(id="jobs-summary-row"):
            yield StateCounts(id="jobs-summary")
            yield Select([(f, f) for f in FILTERS], value="all", allow_blank=False,
                         id="state-filter", compact=True)
        with Horizontal(id="jobs-status-row"):
            yield ProgressBar(total=1, show_eta=False, id="jobs-progress")
            yield PollStatus(id="poll-status")
        with ContentSwitcher(initial="tasks", id="jobs-views"):
            yield TaskTable(id="tasks")
            with Vertical(id="map-view"):
                yield Static(id="map-legend", markup=False)
                yield FitLine(id="map-cursor")
                yield StateMap(id="state-map")
        yield LogPane(id="log-pane")
        yield FindBar(id="find")
        yield console_footer()

    # -- parts ------------------------------------------------------------------
    @property
    def table(self) -> TaskTable:
        return self.query_one("#tasks", TaskTable)

    @property
    def state_map(self) -> StateMap:
        return self.query_one("#state-map", StateMap)

    @property
    def log_pane(self) -> LogPane:
        return self.query_one("#log-pane", LogPane)

    @property
    def records(self) -> RecordList:
        return self.query_one("#records", RecordList)

    @property
    def tasks(self) -> dict:
        """Key -> TaskRecord of the open record."""
        return self.table.index.tasks

    @property
    def states(self) -> dict:
        """Key -> the latest TaskState (Slurm) or TaskRow (local)."""
        return self.table.index.states

    @property
    def filter(self) -> str:
        return self.table.filter

    @property
    def map_shown(self) -> bool:
        return self.query_one("#jobs-views", ContentSwitcher).current == "map-view"

    def home_focus(self) -> Widget | None:
        return self.state_map if self.map_shown else self.table

    def on_mount(self) -> None:
        self._ready = True
        self.state_map.index = self.table.index
        if self.initial_record is not None:
            self.open_record(self.initial_record)      # lists the records too, once it is read
        else:
            self.action_reload()
        self.set_interval(TICK_SECONDS, self.tick)

    def on_unmount(self) -> None:
        self._stop_poll.set()

    def on_screen_resume(self) -> None:
        """Coming back (after a submit, a resubmit on the Checkpoint screen): fresh records."""
        if self._ready:
            self.action_reload()

    def tick(self) -> None:
        """Once a second: elapsed of running tasks and the age of the states move on."""
        if not self.is_current or self.record is None:
            return
        self.table.refresh()
        self.query_one("#poll-status", PollStatus).refresh()

    # -- recent submissions -------------------------------------------------------
    def add_search_dir(self, directory: Path) -> None:
        if directory not in self.search_dirs:
            self.search_dirs.append(directory)

    @guarded
    def action_reload(self) -> None:
        self.records.find_recent(list(self.search_dirs), self.record_path)

    @on(OptionList.OptionSelected, "#records")
    @guarded
    def _record_chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.open_record(Path(event.option.id))

    def action_focus_records(self) -> None:
        self.records.focus()

    @guarded
    def action_neighbour_record(self, step: int) -> None:
        path = self.records.neighbour(step)
        if path is None:
            tell(self, "no " + ("newer" if step < 0 else "older") + " submission in the list",
                 severity="warning")
            return
        self.open_record(Path(path))

    # -- one record ---------------------------------------------------------------
    @guarded
    def open_record(self, path: Path | str) -> None:
        if not self._ready:        # not composed yet: on_mount opens it
            self.initial_record = Path(path)
            return
        try:
            # as hyperion-jobs status: a directory holding one record names it
            path = record_file(str(path)) or path
            record = cached_record(path)
        except Exception as exc:
            tell(self, describe_error(exc), title="cannot open record", severity="error")
            return
        self.add_search_dir(Path(record.path).parent.parent.parent)
        remember(record)
        self.show_record(record)
        self.start_watching(record)
        self.action_reload()

    def show_record(self, record, states: Iterable = ()) -> None:
        """Fill the table from a record's tasks (states unknown until the core reports)."""
        self._stop_poll.set()
        self.record, self.record_path = record, str(record.path)
        self._ended, self._last_error = False, None
        self.table.show_tasks(record.tasks, states)
        self.state_map.index = self.table.index
        self.state_map.refresh_map()
        self.query_one("#poll-status", PollStatus).start(
            "Slurm" if record.backend == "slurm" else "local results")
        self.update_summary()
        self.follow_selected()
        self.home_focus().focus()   # up/down now select tasks, as the help says
        self.post_message(RecordOpened(self.record_path, len(self.tasks)))

    def start_watching(self, record) -> None:
        self._stop_poll.set()
        self._stop_poll = threading.Event()
        if record.backend == "slurm":
            self.poll_slurm(record, self._stop_poll)
        else:
            self.poll_local(record, self._stop_poll)

    def restart_watching(self) -> None:
        """A fresh poller (interval back at its floor): after an action the states follow at once."""
        if self.record is not None:
            self.start_watching(self.record)

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll_slurm(self, record, stop: threading.Event) -> None:
        """The core's Poller in a thread; each update crosses to the UI as one message."""
        poller = Poller(expected(record))
        path = str(record.path)

        def observer(update) -> None:
            if stop.is_set():
                return
            as_of = getattr(update, "as_of", None)
            if as_of is None and update.error is None:
                as_of = time.time()
            problem = getattr(update, "problem", None) or update.error
            self.app.call_from_thread(self.post_message, JobsUpdated(
                path, update.changed, update.error, update.all_terminal, as_of, problem))

        poller.run(observer, stop)

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll_local(self, record, stop: threading.Event) -> None:
        """Local records: re-read backends.watch.rows.local_rows (q/*.local.json) until the run ended."""
        path = str(record.path)
        seen: dict = {}
        while not stop.is_set():
            rows = local_rows(cached_record(path))
            changed = [r for r in rows if seen.get(row_key(r)) != r]
            for row in changed:
                seen[row_key(row)] = row
            done = local_run_ended(rows)
            self.app.call_from_thread(self.post_message,
                                      JobsUpdated(path, changed, None, done, time.time()))
            if done:
                return
            stop.wait(LOCAL_POLL_SECONDS)

    @guarded
    def on_jobs_updated(self, message: JobsUpdated) -> None:
        if message.record_path != self.record_path:
            return
        self.query_one("#poll-status", PollStatus).report(message.as_of, message.problem,
                                                           message.all_terminal)
        self.apply_states(message.changed, message.as_of)
        if message.error and message.error != self._last_error:   # once per distinct error
            tell(self, message.error, title="poll error (retrying)", severity="warning")
        self._last_error = message.error
        if message.all_terminal and not self._ended:
            self._ended = True
            self.action_reload()       # the record list shows fresh counts

    def apply_states(self, changed: Iterable, as_of: float | None = None) -> None:
        """Update the rows that changed, the map, the summary and (if the view moved) the log pane."""
        changed = tuple(changed)
        if not changed:
            return
        self.table.apply(changed, as_of)
        self.state_map.refresh()
        self.update_summary()

    def update_summary(self) -> None:
        index = self.table.index
        self.query_one("#jobs-summary", StateCounts).show_counts(index.counts, len(index))
        self.query_one("#map-legend", Static).update(legend_text(index.counts))
        self.query_one("#jobs-progress", ProgressBar).update(total=max(len(index), 1),
                                                             progress=index.done())

    # -- filter --------------------------------------------------------------------
    @on(Select.Changed, "#state-filter")
    @guarded
    def _filter_changed(self, event: Select.Changed) -> None:
        if event.value != self.filter:
            self.set_filter(str(event.value))

    @guarded
    def action_filter(self, name: str) -> None:
        self.set_filter(name)

    def action_cycle_filter(self, step: int = 1) -> None:
        self.set_filter(FILTERS[(FILTERS.index(self.filter) + step) % len(FILTERS)])

    def set_filter(self, name: str) -> None:
        self.table.set_filter(name)
        select = self.query_one("#state-filter", Select)
        if select.value != name:
            select.value = name
        self.follow_selected()     # the filter may have hidden the task whose log was shown
        self.post_message(FilterChanged(name, self.table.row_count))

    # -- state map -------------------------------------------------------------------
    def action_toggle_map(self) -> None:
        switcher = self.query_one("#jobs-views", ContentSwitcher)
        if self.map_shown:
            switcher.current = "tasks"
            self.table.focus()
        else:
            switcher.current = "map-view"
            self.state_map.refresh_map()
            self.state_map.move_to_key(self.table.selected_key())
            self.state_map.focus()

    @on(StateMap.Moved)
    @guarded
    def _map_moved(self, event: StateMap.Moved) -> None:
        """The cell under the map's cursor: named on the line above, its log below."""
        cursor = self.query_one("#map-cursor", FitLine)
        if event.key is None:
            cursor.update("")
            return
        task = self.tasks[event.key]
        target = "local" if task.job_id == "local" else slurm_target(task)
        cursor.update(shown(f"▸ value {task.value} · {target} · {self.table.index.names[event.key]}"
                            " · enter: show it in the table · m: back", "dim"))
        self.log_pane.show_task(task)

    @on(StateMap.Chosen)
    @guarded
    def _map_chosen(self, event: StateMap.Chosen) -> None:
        self.show_task(event.key)

    def show_task(self, key) -> None:
        """The table, its cursor on `key` (the filter goes back to "all" if it hides the task)."""
        if self.table.index.position(key) is None:
            tell(self, f"filter {self.filter} hides that task: showing all tasks", severity="warning")
            self.set_filter("all")
        self.query_one("#jobs-views", ContentSwitcher).current = "tasks"
        self.table.move_to_key(key)
        self.table.focus()

    # -- find / go to -------------------------------------------------------------------
    def action_find(self) -> None:
        mode = "log" if isinstance(self.focused, LogView) else "tasks"
        last = self._last_find[1] if self._last_find and self._last_find[0] == mode else ""
        self.query_one("#find", FindBar).open(mode, last)

    def action_go_to_value(self) -> None:
        self.query_one("#find", FindBar).open("value")

    @on(FindBar.Done)
    @guarded
    def _find_done(self, event: FindBar.Done) -> None:
        if event.mode == "value":
            self.go_to_value(event.text)
            return
        self._last_find = (event.mode, event.text)
        self.find(event.mode, event.text, True)

    def action_find_next(self, forward: bool) -> None:
        if self._last_find is None:
            tell(self, "nothing searched yet: / searches", severity="warning")
            return
        self.find(*self._last_find, forward)

    def find(self, mode: str, text: str, forward: bool) -> None:
        if not text:
            return
        if mode == "log":
            found = self.log_pane.view.find(text, forward)
            self.log_pane.update_title()
        else:
            if self.map_shown:
                self.action_toggle_map()
            found = self.table.find(text, forward)
        if not found:
            tell(self, f"not found: {text}", severity="warning")

    def go_to_value(self, text: str) -> None:
        try:
            value = int(text.strip())
        except ValueError:
            tell(self, f"go to: a task value is a whole number, not {text.strip()!r}",
                 severity="warning")
            return
        key = self.table.index.by_value.get(value)
        if key is None:
            tell(self, f"go to: no task has value {value}", severity="warning")
            return
        self.show_task(key)

    # -- log pane --------------------------------------------------------------------
    @on(TaskHighlighted)
    @guarded
    def _task_highlighted(self, event: TaskHighlighted) -> None:
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

    # -- cancel ----------------------------------------------------------------------
    @guarded
    def action_cancel_task(self) -> None:
        task = self.selected_task()
        if task is None:
            tell(self, "no task selected", severity="warning")
            return
        state = self.table.state_of(task)
        self._confirm_cancel([slurm_target(task)], [state],
                             f"{slurm_target(task)} already ended ({row_state_name(state)})")

    @guarded
    def action_cancel_job(self) -> None:
        if self.record is None:
            tell(self, "no submission selected", severity="warning")
            return
        self._confirm_cancel([job.job_id for job in self.record.jobs],
                             [self.states.get(key) for key in self.tasks], "every task already ended")

    def _confirm_cancel(self, targets: list[str], states: list, ended: str) -> None:
        if self.record is None or self.record.backend != "slurm":
            tell(self, "cancel: only Slurm submissions can be cancelled", severity="warning")
            return
        if states and all(s is not None and s.state is not None and s.state.is_terminal for s in states):
            # scancel of a finished job exits 0 and does nothing: "cancelled" would be a lie
            tell(self, f"{ended}: nothing to cancel", severity="warning")
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
        self.app.call_from_thread(tell, self, "cancelled " + " ".join(targets))
        self.app.call_from_thread(self.restart_watching)


def local_run_ended(rows) -> bool:
    """A local array stops at its first failure: ended when all are terminal, or one failed
    and none still runs."""
    states = [r.state for r in rows]
    if all(s is not None and s.is_terminal for s in states):
        return True
    failed = any(s is not None and s.is_terminal and not s.is_success for s in states)
    return failed and not any(s is not None and not s.is_terminal for s in states)

