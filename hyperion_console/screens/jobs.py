"""Jobs screen: recent submissions, one submission's newest attempt per value updated live, a state
map, failure groups, the attempts, a log pane, cancel and retry.

A submission is its history of attempts (backends.records.history): the table
shows, for every value, the task of the newest attempt that ran it, with the
ledger's final state when it has one (unless Slurm runs the task again); the
tasks without one, and ended ones Slurm may requeue, are polled by the core's
watcher in a thread worker (hyperion_console.watch), which also writes each
final state into the ledger, as hyperion-jobs watch does. Each
answer is posted as a JobsUpdated message carrying only the rows that changed,
how fresh they are and any query problem. The views derived from the rows
(failure groups, attempts, usage summary) and the retry preview are the core's
too; this module wires the widgets and keeps every view fresh after an action.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Iterable, Sequence

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Footer, Input, OptionList, ProgressBar, Select, Static

from backends.records.history import History, load_history
from backends.retry_hint import unsubmitted_line
from backends.states import ended_by_slurm, explain_reason, never_runs
from backends.watch.requeued import watched_tasks
from backends.watch.rows import local_cancel_text, never_started
from backends.client import QueryStopped
from backends.watch.slurm.accounting import stoppable
from backends.watch.slurm.cancel import cancel_each, cluster_groups
from backends.watch.task_end import ended_words, program_end_words, row_end
from backends.watch.targets import no_log_reason, not_run_text, record_file
from backends.watch.throttle import SlotsNotice, held_line, unwatched_line
from backends.watch.slurm.control import HELD_REASONS
from backends.watch.usage_summary import heading_of, summarize_rows, tally_names

from ..errors import describe_error, guarded
from ..messages import (
    CancelRequested,
    FailureGroupChosen,
    FilterChanged,
    JobsUpdated,
    LogAppended,
    RecordOpened,
    RecordsListed,
    TaskHighlighted,
    WatchStarted,
)
from ..record_cache import cached_record, file_key
from ..shown import shown, tell
from ..superseded import unless_superseded
from ..task_index import FILTERS, TERMINAL_NAMES, record_key, row_state_name, slurm_target
from ..task_rows import rows_now
from ..watch import Seen, Shown, ledger_rows, watch_local, watch_slurm
from ..widgets.attempts import AttemptsView
from ..widgets.failures import FailuresView, group_title
from ..widgets.find_bar import FindBar
from ..widgets.fit_line import FitLine
from ..widgets.log_pane import EndNote, LogPane
from ..widgets.log_view import LogView
from ..widgets.record_list import RecordList, remember
from ..widgets.state_map import StateMap, legend_text
from ..widgets.summary import PollStatus, StateCounts
from ..widgets.task_table import TaskTable, column_set
from ..widgets.usage import UsageSummaryLines
from .base import ConsoleScreen, console_footer, console_header
from .confirm import ConfirmScreen
from .jobs_retry import RetryFlow

TICK_SECONDS = 1.0
RECORD_CHECK_SECONDS = 2.0   # how often the open record's file is looked at (a new attempt elsewhere)
RECORDS_CHECK_SECONDS = 4.0  # how often the search folders are looked at for new records while shown
DERIVED_DELAY = 1.0          # failure groups, attempts and the usage figures follow updates this late
VIEWS = ("tasks-view", "map-view", "failures-view", "attempts-view")
MIN_TABLE_ROWS = 3           # fewer rows than this on screen: the user is told the terminal is too small
FULL_SIZE = "80x24"          # every pane at its full height


def too_small_text(width: int, height: int, missing: int) -> str:
    """The line shown instead of a silently empty table: how many more lines the terminal needs."""
    return f"terminal too small ({width}x{height}): needs {height + missing}+ lines ({FULL_SIZE} shows every pane)"


UNLISTED_TOLD = 3   # folders named in toasts at once (a search dir full of others' private folders)


def shown_progress(done: int, total: int) -> float:
    """`done`, held under 99.5% of `total` until every task ended: the bar's label rounds, and 2489 of
    2500 read `100%` beside `PENDING 5  RUNNING 6`."""
    return done if done >= total else min(done, total * 0.994)


class JobsScreen(ConsoleScreen):
    SUB_TITLE = "Jobs"
    # Below 24 lines the record list and the log pane shrink (-short), then the log pane hides
    # (-tiny), so the task table keeps rows (console.tcss).
    VERTICAL_BREAKPOINTS = [(0, "-tiny"), (15, "-short"), (24, "-full")]
    # `z` zooms the log pane (Screen.maximize): the footer and an open find bar stay with it.
    ALLOW_IN_MAXIMIZED_VIEW = "Footer, FindBar"
    # Escape is the screen's leave_field: a find bar open over the zoomed log closes before the zoom.
    ESCAPE_TO_MINIMIZE = False
    BINDINGS = [
        Binding("f", "cycle_filter(1)", "Filter"),
        Binding("F", "cycle_filter(-1)", "Filter back", show=False),
        Binding("v", "cycle_view(1)", "Views"),
        Binding("V", "cycle_view(-1)", "Views back", show=False),
        # Priority: they run before the keys read in the same burst are routed, and the find bar
        # takes the focus at once, so `/node07` is a search, not `o`, `d`... on the task table.
        Binding("slash", "find", "Find", priority=True),
        Binding("o", "focus_records", "Records"),
        Binding("R,ctrl+r", "retry", "Retry"),
        Binding("m", "toggle_map", "Map", show=False),
        Binding("t", "show_view('failures-view')", "Failure groups", show=False),
        Binding("a", "show_view('attempts-view')", "Attempts", show=False),
        Binding("u", "toggle_usage", "Usage columns", show=False),
        Binding("colon", "go_to_value", "Go to", show=False, priority=True),
        Binding("n", "find_next(True)", "Next match", show=False),
        Binding("N", "find_next(False)", "Previous match", show=False),
        Binding("left_square_bracket", "neighbour_record(-1)", "Newer record", show=False),
        Binding("right_square_bracket", "neighbour_record(1)", "Older record", show=False),
        Binding("l", "cycle_log", "Log", show=False),
        Binding("z", "zoom_log", "Zoom log", show=False),     # in help and palette; 80 columns
        Binding("x", "cancel_task", "Cancel", show=False),    # in help and palette; 80 columns
        Binding("X", "cancel_job", "Cancel job", show=False),
        Binding("r", "reload", "Reload", show=False),
        Binding("ctrl+s", "submit_elsewhere", "Submit", show=False),
    ]

    def __init__(self, search_dirs: Sequence[Path] = (), record: Path | None = None) -> None:
        super().__init__(id="jobs")
        self.search_dirs = list(search_dirs)
        self.initial_record = record
        self.history: History | None = None
        self.record = None
        self.record_path: str | None = None
        self._record_key: tuple | None = None
        self._stop_poll = threading.Event()
        self.screen_gone = threading.Event()    # the screen is gone: a scancel in flight is killed
        self._ready = False
        self._told_errors: set[str] = set()   # the poll errors told during this outage
        self._ended = False
        self._answered = False       # a poll answered since the record was opened
        self._polling = False
        self._never_told: set = set()
        self._warned: set[str] = set()
        self._slots_notice = SlotsNotice()      # the open record's: which slots' troubles to tell
        self._held_keys: set = set()     # the open record's tasks that say a hold (say_held)
        self._derived_timer = None
        self._ticks = 0
        self._columns = "states"
        self._last_find: tuple[str, str] | None = None     # (mode, text) for n / N
        self.retry_flow = RetryFlow(self)
        self._zoom_return: Widget | None = None    # focused when the log was zoomed: focused again after
        self._newest_tried: str | None = None      # the record last tried for lack of one open (its real path)
        self._unlisted_told: set[str] = set()     # folders said once not to be listable

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
        with ContentSwitcher(initial="tasks-view", id="jobs-views"):
            with Vertical(id="tasks-view"):
                yield FitLine(id="selection-line")
                yield UsageSummaryLines(id="usage-summary")
                yield FitLine(id="too-small")
                yield TaskTable(id="tasks")
            with Vertical(id="map-view"):
                yield Static(id="map-legend", markup=False)
                yield FitLine(id="map-cursor")
                yield StateMap(id="state-map")
            yield FailuresView(id="failures-view")
            yield AttemptsView(id="attempts-view")
        yield LogPane(id="log-pane")
        yield FindBar(id="find")
        yield console_footer()

    # -- parts ------------------------------------------------------------------
    @property
    def table(self) -> TaskTable:
        return self.query_one("#tasks", TaskTable)

    @property
    def attempts_view(self) -> AttemptsView:
        return self.query_one("#attempts-view", AttemptsView)

    @property
    def failures_view(self) -> FailuresView:
        return self.query_one("#failures-view", FailuresView)

    @property
    def attempt_table(self) -> TaskTable:
        return self.attempts_view.table

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
        """Key -> TaskRecord of the newest attempt that ran each value."""
        return self.table.index.tasks

    @property
    def states(self) -> dict:
        """Key -> the latest row (TaskRow from the core; a bare TaskState when fed one directly)."""
        return self.table.index.states

    @property
    def filter(self) -> str:
        return self.table.filter

    @property
    def view(self) -> str:
        return self.query_one("#jobs-views", ContentSwitcher).current or "tasks-view"

    @property
    def map_shown(self) -> bool:
        return self.view == "map-view"

    def home_focus(self) -> Widget | None:
        return {"map-view": self.state_map, "failures-view": self.failures_view.listing,
                "attempts-view": self.attempts_view.listing}.get(self.view, self.table)

    def on_mount(self) -> None:
        self._ready = True
        self.state_map.index = self.table.index
        self.query_one("#selection-line").display = False
        self.query_one("#usage-summary").display = False
        if self.initial_record is not None:
            self.open_record(self.initial_record)      # lists the records too, once it is read
        else:
            self.action_reload()
        self.set_interval(TICK_SECONDS, self.tick)
        self.set_interval(RECORDS_CHECK_SECONDS, self.look_at_records)

    def on_unmount(self) -> None:
        self._stop_poll.set()
        self.screen_gone.set()

    def on_screen_resume(self) -> None:
        """Coming back (after a submit, a resubmit on the Checkpoint screen): fresh records."""
        if self._ready:
            self.action_reload()

    def on_resize(self) -> None:
        """A breakpoint's class hides or shows the log pane after the table's own resize: the
        table can end at a height it had before (no Resize of its own), so look once laid out."""
        self.call_after_refresh(self.check_room)

    @on(TaskTable.Resized, "#tasks")
    @guarded
    def check_room(self) -> None:
        """Show the too-small line (over the table's header) while the table has room for fewer
        than MIN_TABLE_ROWS rows."""
        line = self.query_one("#too-small", FitLine)
        region, footer = self.table.region, self.query_one(Footer).region
        bottom = min(region.bottom, footer.y) if footer.height else region.bottom   # under the footer: hidden
        room = max(bottom - region.y, 0) - 1     # less the header
        missing = MIN_TABLE_ROWS - room
        if missing > 0:
            line.update(too_small_text(self.size.width, self.size.height, missing))
        line.display = missing > 0

    def tick(self) -> None:
        """Once a second: elapsed of running tasks and the age of the states move on; every few
        seconds, a new attempt of the open record made elsewhere (a CLI retry) is opened. Only what
        moves is drawn again: a console left open overnight after its array ended redrew the whole
        table and an unchanging status line every second, for ever (4x a bare Textual app's CPU)."""
        if not self.is_current or self.record is None:
            return
        if self.table.ticks_on_screen():     # else nothing in it moves: a redraw cost 1 s of CPU a minute
            self.table.refresh()
        status = self.query_one("#poll-status", PollStatus)
        if status.ages:
            status.refresh()
        self._ticks += 1
        if self._ticks % int(RECORD_CHECK_SECONDS / TICK_SECONDS) == 0 and self.record_path:
            key = file_key(self.record_path)
            if key is not None and self._record_key is not None and key != self._record_key:
                self.open_record(self.record_path)

    # -- recent submissions -------------------------------------------------------
    def add_search_dir(self, directory: Path) -> None:
        if directory not in self.search_dirs:
            self.search_dirs.append(directory)

    @guarded
    def action_reload(self) -> None:
        self.records.find_recent(list(self.search_dirs), self.record_path)

    def look_at_records(self) -> None:
        """Every few seconds while this screen shows: a record written meanwhile (`hyperion-submit`
        in another terminal) is listed without `r`, in the background (the list only changes when
        what it lists did; the cursor and the focus stay where they are)."""
        if self.is_current and self._ready:
            self.records.look_again(list(self.search_dirs), self.record_path)

    @guarded
    def on_records_listed(self, message: RecordsListed) -> None:
        """No record open (the console started without --record): the newest submission is opened,
        as a user choosing one would, rather than "no submission selected" over a list of them.
        Once per newest record: one that cannot be read is said once, not at every listing. A folder
        that cannot be listed (a teammate's q/ under umask 077) is said once, as `hyperion-jobs list`
        says it: an empty list alone hid why."""
        new = [(folder, reason) for folder, reason in message.unlisted if folder not in self._unlisted_told]
        self._unlisted_told.update(folder for folder, _ in new)
        for folder, reason in new[:UNLISTED_TOLD]:
            tell(self, f"cannot list {folder} ({reason}); records in it are not shown", severity="warning")
        if len(new) > UNLISTED_TOLD:
            tell(self, f"and {len(new) - UNLISTED_TOLD} more folders that cannot be listed", severity="warning")
        newest = os.path.realpath(message.paths[0]) if message.paths else None
        if self.record_path is None and newest is not None and newest != self._newest_tried:
            self._newest_tried = newest
            self.open_record(Path(message.paths[0]))

    @on(OptionList.OptionSelected, "#records")
    @guarded
    def _record_chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.open_record(Path(event.option.id))

    def action_focus_records(self) -> None:
        self.unzoom()
        self.records.focus()

    @guarded
    def action_neighbour_record(self, step: int) -> None:
        self.unzoom()
        path = self.records.neighbour(step)
        if path is None:
            tell(self, "no " + ("newer" if step < 0 else "older") + " submission in the list",
                 severity="warning")
            return
        self.open_record(Path(path))

    # -- one submission -------------------------------------------------------------
    @guarded
    def open_record(self, path: Path | str) -> None:
        if not self._ready:        # not composed yet: on_mount opens it
            self.initial_record = Path(path)
            return
        tried = path
        try:
            # as hyperion-jobs status: a directory holding one record names it
            path = tried = record_file(str(path)) or path
            record = cached_record(path)
            history = load_history(record.path, record)
        except Exception as exc:
            tell(self, describe_error(exc), title="cannot open record", severity="error")
            # Said once: a `--record` that cannot be read is also the newest in the list, which
            # would open it again for lack of one open (on_records_listed).
            self._newest_tried = os.path.realpath(tried)
            return
        for problem in history.problems:
            tell(self, problem, title="attempt history", severity="warning")
        left_out = unsubmitted_line(history)
        if left_out:          # the status line keeps it; said once too, as `hyperion-jobs status` does
            tell(self, left_out, title="not submitted", severity="warning", timeout=10)
        left = self.unwatched_line() if self.record_path != str(record.path) else None
        if left:              # as q asks before a quit: nothing moves those windows' slots from here on
            tell(self, f"the record left unwatched: {left}", title="windows left", severity="warning", timeout=20)
        self.add_search_dir(Path(record.path).parent.parent.parent)
        remember(history)
        self.show_record(history)
        self.start_watching(history)
        self.action_reload()

    def unwatched_line(self) -> str | None:
        """Said before a quit: this watch moves the slots of the open record's windows, and
        nothing does once the console is gone (`hyperion-jobs watch RECORD` does it again). None
        while another process's watch moves them too (a hyperion-submit still waiting in another
        terminal, `hyperion-jobs watch`): the quit asked, though they went on being moved."""
        if self.record is None or self._ended:
            return None
        return unwatched_line(self.record, self.states)

    def show_record(self, record, states: Iterable = ()) -> None:
        """Fill the table with the newest attempt's task of every value: final states from the
        ledger, the others unknown until the core reports. `record` is a History or a SubmitRecord."""
        self._stop_poll.set()
        history = record if isinstance(record, History) else load_history(record.path, record)
        # the same record again (a retry began its next attempt): the cursor stays on its value, not
        # on the first task (the user was reading the log of one they had retried)
        looked_at = self.table.selected_task() if self.record_path == history.record_path else None
        self.history, self.record, self.record_path = history, history.current, history.record_path
        self._record_key = file_key(self.record_path)
        self._ended, self._answered, self._polling = False, False, False
        self._told_errors = set()
        self._never_told = set()
        self._warned: set[str] = set()
        self._slots_notice = SlotsNotice()
        latest = history.latest_tasks()
        ended = {record_key(t): t for t in latest if history.final(t) is not None} if history.ledger.finals else {}
        known = rows_now(history, ended, {})
        self.table.set_columns(column_set(self._columns, len(history.numbers) > 1))
        self.table.show_tasks(latest, [*known, *states])
        if looked_at is not None and looked_at.value is not None:
            for key in self.table.index.keys_of_values([looked_at.value]):
                self.table.move_to_key(key)
        self.state_map.index = self.table.index
        self.state_map.refresh_map()
        self.show_selection(None)
        self.attempts_view.reset()
        self.query_one("#usage-summary", UsageSummaryLines).show(None, None)   # the last record's: gone
        status = self.query_one("#poll-status", PollStatus)
        status.start("Slurm" if self.record.backend == "slurm" else "local results")
        status.show_left_out(unsubmitted_line(history))   # as `hyperion-jobs status` says it
        self._held_keys = set()
        self.say_held(tuple(self.states.values()))
        self.update_summary()
        if self.view in ("failures-view", "attempts-view"):   # a new submission: its tasks first
            self.query_one("#jobs-views", ContentSwitcher).current = "tasks-view"
        if self._columns == "usage":
            self.refresh_derived()
        self.follow_selected()
        self.focus_home()           # up/down now select tasks, as the help says
        self.post_message(RecordOpened(self.record_path, len(self.tasks), len(history.numbers)))

    def start_watching(self, history: History, since_shown: bool = False) -> None:
        """`since_shown`: show first what the ledger holds beyond the rows on screen (a Slurm
        record's: a local one's watch shows every row the ledger holds)."""
        self._stop_poll.set()
        self._stop_poll = threading.Event()
        if history.current.backend == "slurm":
            # Retry waits for Slurm's first answer only when there is something to ask about.
            self._polling = any(history.final(task) is None for task in self.tasks.values())
            self.poll_slurm(history, self._stop_poll, (dict(self.tasks), dict(self.states)) if since_shown else None)
        else:
            self.poll_local(history.record_path, self._stop_poll)

    def restart_watching(self) -> None:
        """A fresh poller (interval back at its floor): after an action the states follow at once.
        The ledger is read again: tasks that ended meanwhile are not asked about twice, and what
        the old watch recorded there is shown. Its last answer (an end, the usage asked beside
        it) was written to the ledger and then dropped with its watch, and the new watch never
        tells an end the ledger holds: after a cancel the table said RUNNING for ever under
        `every task ended: final states from the attempt history`."""
        if self.history is not None:
            self.history = load_history(self.history.record_path, self.history.current)
            # the old watch's failed ask for usage: the new one asks again if any still lacks it
            self.query_one("#poll-status", PollStatus).note("usage", None)
            self.start_watching(self.history, since_shown=True)

    def _deliver(self, path: str, stop: threading.Event):
        def deliver(seen: Seen) -> None:
            if not stop.is_set():
                self.app.call_from_thread(self.post_message, JobsUpdated(
                    path, seen.rows, seen.error, seen.all_terminal, seen.as_of, seen.problem, seen.warning,
                    seen.rows_only, seen.usage_asked, seen.behind, seen.recorded, seen.slots, seen.slots_news,
                    seen.troubles, seen.forgotten))
        return deliver

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll_slurm(self, history: History, stop: threading.Event, shown: tuple[dict, dict] | None = None) -> None:
        """The core's watcher over the tasks without a final state; each answer one message. First,
        what the ledger holds beyond the rows `shown` (off the interface thread: a row per ended task
        froze a 100k-task console for 0.7 s at each cancel)."""
        polled = len(watched_tasks(history))
        self.app.call_from_thread(self.post_message, WatchStarted(history.record_path, polled))
        deliver = self._deliver(history.record_path, stop)
        if shown is not None:
            tasks, rows = shown
            recorded = ledger_rows(history, tasks, Shown(rows), watching=False)
            if recorded:
                deliver(Seen(recorded, rows_only=True))
        watch_slurm(history, deliver, stop, budget=self.app.query_budget, notice=self._slots_notice)

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll_local(self, record_path: str, stop: threading.Event) -> None:
        """Local records: the ledger the local runner writes, read again until the run ended."""
        watch_local(record_path, self._deliver(record_path, stop), stop, local_run_ended)

    @guarded
    def on_watch_started(self, message: WatchStarted) -> None:
        if message.record_path == self.record_path and message.polled == 0:
            status = self.query_one("#poll-status", PollStatus)   # nothing asked: the ledger knows
            status.start("the attempt history")
            status.report(None, None, final=True)
            self._polling = False

    @guarded
    def on_jobs_updated(self, message: JobsUpdated) -> None:
        if message.record_path != self.record_path:
            return
        if message.usage_asked:
            self.say_behind("usage", message.behind)
        if message.rows_only:
            self.apply_states(message.changed)
            return
        self._answered = self._answered or message.as_of is not None
        status = self.query_one("#poll-status", PollStatus)
        if message.recorded:           # every end shown is the ledger's; Slurm ran none of them again
            status.source = "the attempt history"
        if message.behind and not message.usage_asked:      # the look for requeues failed
            if not self._answered:     # Slurm said nothing: every state shown is the ledger's
                status.source = "the attempt history"
            self.say_behind("look for requeues", message.behind)
        status.report(message.as_of, message.problem, message.all_terminal, message.troubles)
        if message.forgotten:    # why its tasks are UNKNOWN, as `status` and `watch` say it: it ended without a word
            status.note("forgotten", message.forgotten)
        self.say_slots(message.slots, message.slots_news)
        # an outage: elapsed stops at the last answer, as the status line says how old that is
        self.table.index.held = (status.as_of or time.time()) if message.problem else None
        self.apply_states(message.changed, message.as_of)
        self.tell_never_runs(message.changed)
        if message.error and message.error not in self._told_errors:   # once per error per outage:
            self._told_errors.add(message.error)    # squeue's alone and with sacct's alternate
            tell(self, message.error, title="poll error (retrying)", severity="warning")
        if not message.error and not message.problem:   # a query still awaited is no answer: same outage
            self._told_errors.clear()
        if message.warning and message.warning not in self._warned:      # once per record
            self._warned.add(message.warning)
            tell(self, message.warning, title="attempt history", severity="warning", timeout=10)
        if message.all_terminal and not self._ended:
            self._ended = True
            self.action_reload()       # the record list shows fresh counts

    def say_behind(self, ask: str, behind: str | None) -> None:
        """Slurm did not answer an `ask` whose failure leaves the ledger's figures standing (what ended
        tasks used: '-' without a word; a requeue: 'final states from Slurm'): the status line keeps
        the CLIs' line while it lasts, and a notification says it whole."""
        self.query_one("#poll-status", PollStatus).note(ask, behind)
        if behind and behind not in self._warned:
            self._warned.add(behind)
            tell(self, behind, title=ask, severity="warning", timeout=10)

    def say_held(self, changed: Sequence = ()) -> None:
        """`3 tasks held by you (scontrol release J)` on the status line while a hold is all the
        record has left to run (the core's `held_line`, as `hyperion-jobs status` says it): the
        line said only how old the states were, as if the cluster were busy. Asked only when a
        task says a hold (the changes tell which): the whole record is read (0.14 s at 100,000 tasks
        waiting for the cluster, at every change of their reasons)."""
        status = self.query_one("#poll-status", PollStatus)
        for state in changed:
            key = (state.job_id, state.task_id)
            if getattr(state, "reason", None) in HELD_REASONS and not state.state.is_terminal:
                self._held_keys.add(key)
            else:
                self._held_keys.discard(key)
        if not self._held_keys:
            status.note("held", None)
            return
        counts, line = self.table.index.counts, None
        waiting = [name for name, n in counts.items() if n and name not in TERMINAL_NAMES]
        if self.record is not None and self.record.backend == "slurm" and waiting == ["PENDING"]:
            line = held_line(self.record, self.states)     # the whole record only when all else ended
        status.note("held", line)

    def say_slots(self, line: str | None, news: str | None = None) -> None:
        """What moving slots between the windows of a shared --max-jobs-run could not do: on the status
        line while it lasts (None clears it); and what the core's `SlotsNotice` says to tell, as
        `hyperion-jobs watch` prints it: each refusal once while the trouble lasts, and once that the
        slots move again. Unsaid, the next window stayed PENDING with nothing to tell why."""
        self.query_one("#poll-status", PollStatus).note("slots", line)
        if not news:
            return
        if news == line:
            tell(self, news, title="moving slots (retrying)", severity="warning", timeout=10)
        else:
            tell(self, news, title="moving slots", timeout=10)

    def apply_states(self, changed: Iterable, as_of: float | None = None) -> None:
        """Update the rows that changed, the map, the summary and the views derived from the rows."""
        changed = tuple(changed)
        if not changed:
            return
        self.table.apply(changed, as_of)
        self.state_map.refresh()
        self.update_summary()
        self.say_held(changed)
        # the task whose log is shown may just have ended: its title stops saying `following`
        self.log_pane.note_end(self.end_note(self.log_pane.shown_task))
        if self.view in ("failures-view", "attempts-view") or self._columns == "usage":
            self.refresh_derived(later=True)

    def tell_never_runs(self, changed: Iterable) -> None:
        """Once per task: Slurm says it can never start as asked (the reason column has it too)."""
        for row in changed:
            reason = getattr(row, "reason", None)
            if not reason:               # most rows: nothing to look at (100k at start-up)
                continue
            state = getattr(row, "state", None)
            key = (row.job_id, row.task_id)
            if state is not None and not state.is_terminal and never_runs(reason) and key not in self._never_told:
                self._never_told.add(key)
                what = row.job_id if row.task_id is None else f"{row.job_id}_{row.task_id}"
                tell(self, f"{what} can never run: Slurm says {explain_reason(reason)}; cancel it (x) "
                     "and retry with a request the cluster can meet", severity="error", timeout=15)

    def update_summary(self) -> None:
        index = self.table.index
        self.query_one("#jobs-summary", StateCounts).show_counts(index.counts, len(index))
        # the usage heading's counts from these very counts, at once: derived later with the figures,
        # it said "4 running, 9 pending" under "RUNNING 6  PENDING 7" for up to DERIVED_DELAY
        self.query_one("#usage-summary", UsageSummaryLines).show_counts(tally_names(index.counts))
        self.query_one("#map-legend", Static).update(legend_text(index.counts))
        self.query_one("#jobs-progress", ProgressBar).update(total=max(len(index), 1),
                                                             progress=shown_progress(index.done(), len(index)))

    # -- filter and selection ----------------------------------------------------------
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
        self.unzoom()
        self.table.set_filter(name)
        select = self.query_one("#state-filter", Select)
        if select.value != name:
            # its Changed would come after the keys of a burst (`f f f`): each one set back a filter
            # already passed, whose own Changed did the same, cycling for ever at a core's worth of CPU
            with select.prevent(Select.Changed):
                select.value = name
        self.follow_selected()     # the filter may have hidden the task whose log was shown
        self.post_message(FilterChanged(name, self.table.row_count))

    def show_selection(self, group) -> None:
        """Only a failure group's tasks in the table (None: every task), named above it."""
        line = self.query_one("#selection-line", FitLine)
        if group is None:
            if self.table.index.selection is not None:
                self.table.select(None)
            line.display = False
            return
        self.table.select(self.table.index.keys_of_values(group.values))
        line.update(shown(f"failure group {group_title(group)} · {group.count} task(s) · values "
                          f"{group.value_ranges} · escape: every task", "bold yellow"))
        line.display = True

    def action_leave_field(self) -> None:
        """Escape: out of a text field; else out of the zoomed log; else drop a failure group's
        selection; else back to the tasks."""
        if isinstance(self.focused, Input):
            super().action_leave_field()
        elif self.maximized is not None:
            self.unzoom()
        elif self.table.index.selection is not None:
            self.show_selection(None)
            self.follow_selected()
        elif self.view != "tasks-view":
            self.action_show_view("tasks-view")

    # -- views ------------------------------------------------------------------------
    @guarded
    def action_show_view(self, name: str) -> None:
        if name not in VIEWS:
            return
        self.unzoom()
        switcher = self.query_one("#jobs-views", ContentSwitcher)
        switcher.current = name
        if name == "map-view":
            self.state_map.refresh_map()
            self.state_map.move_to_key(self.table.selected_key())
        if name in ("failures-view", "attempts-view"):
            self.refresh_derived()
        self.home_focus().focus()
        self.follow_selected()

    def action_cycle_view(self, step: int = 1) -> None:
        self.action_show_view(VIEWS[(VIEWS.index(self.view) + step) % len(VIEWS)])

    def action_toggle_map(self) -> None:
        self.action_show_view("tasks-view" if self.map_shown else "map-view")

    @guarded
    def action_toggle_usage(self) -> None:
        """The usage columns (memory used / requested, CPU efficiency, time used / limit) and the
        array's usage summary, instead of exit, elapsed and node; again: back."""
        self.unzoom()
        self._columns = "states" if self._columns == "usage" else "usage"
        attempts = self.history is not None and len(self.history.numbers) > 1
        self.table.set_columns(column_set(self._columns, attempts))
        self.query_one("#usage-summary").display = self._columns == "usage"
        if self.view != "tasks-view":
            self.action_show_view("tasks-view")
        if self._columns == "usage":
            self.refresh_derived()

    def refresh_derived(self, later: bool = False) -> None:
        """Compute the failure groups, the attempts or the usage summary (whichever shows) again;
        `later`: at most once per DERIVED_DELAY, after live updates."""
        if later:
            if self._derived_timer is None:
                self._derived_timer = self.set_timer(DERIVED_DELAY, self._derive_now)
            return
        self._derive_now()

    def _derive_now(self) -> None:
        self._derived_timer = None
        if self.history is None:
            return
        snapshot = (self.history, dict(self.tasks), dict(self.states))
        if self.view == "failures-view":
            self.failures_view.derive(*snapshot)
        elif self.view == "attempts-view":
            self.attempts_view.derive(*snapshot)
        if self._columns == "usage":
            self.derive_usage(*snapshot)

    @on(FailuresView.Highlighted)
    @guarded
    def _group_highlighted(self, event: FailuresView.Highlighted) -> None:
        """The log pane shows the group's example: the log whose last line names the group."""
        self.show_group_log(event.group)

    def show_group_log(self, group) -> None:
        keys = [] if group is None else self.table.index.keys_of_values(group.values[:1])
        task = self.tasks[keys[0]] if keys else None
        self.log_pane.show_task(task, self.not_run_note(task), self.end_note(task))   # NOT_RUN: no log

    @on(FailuresView.Chosen)
    @guarded
    def _group_chosen(self, event: FailuresView.Chosen) -> None:
        """Enter on a group: the table with only its tasks (escape: every task again)."""
        group = event.group
        self.set_filter("all")
        self.query_one("#jobs-views", ContentSwitcher).current = "tasks-view"
        self.show_selection(group)
        self.table.focus()
        self.follow_selected()
        self.post_message(FailureGroupChosen(self.record_path or "", group.state, group.value_ranges,
                                             self.table.row_count))

    @work(thread=True, exclusive=True, group="usage", exit_on_error=False)
    def derive_usage(self, history: History, tasks: dict, states: dict) -> None:
        """The core's usage summary of the record's tasks and its heading, as `hyperion-jobs usage`;
        the heading's state counts are the counts line's (`update_summary`), never these rows'."""
        rows = {key: states[key] for key in tasks if key in states}
        summary = summarize_rows(rows)
        heading = heading_of(summary, rows.values(), list(tasks))
        self.app.call_from_thread(unless_superseded(self._show_usage), history.record_path, summary, heading)

    def _show_usage(self, record_path: str, summary, heading) -> None:
        if record_path == self.record_path:      # not a record left meanwhile
            self.query_one("#usage-summary", UsageSummaryLines).show(summary, heading)

    # -- state map -------------------------------------------------------------------
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
        self.log_pane.show_task(task, self.not_run_note(task), self.end_note(task))

    @on(StateMap.Chosen)
    @guarded
    def _map_chosen(self, event: StateMap.Chosen) -> None:
        self.show_task(event.key)

    def show_task(self, key) -> None:
        """The table, its cursor on `key` (filter and selection go if they hide the task), and that
        task's log in the pane: from an earlier attempt's tasks, `:VALUE` left its moved log there."""
        self.unzoom()
        if self.table.index.position(key) is None and self.table.index.selection is not None:
            self.show_selection(None)
        if self.table.index.position(key) is None:
            tell(self, f"filter {self.filter} hides that task: showing all tasks", severity="warning")
            self.set_filter("all")
        self.query_one("#jobs-views", ContentSwitcher).current = "tasks-view"
        self.table.move_to_key(key)
        self.table.focus()
        self.follow_selected()    # a cursor already on `key` posts no highlight to move the pane

    # -- find / go to -------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In a text field `/` and `:` are typed: Textual does not keep a priority `/` from an
        Input (its key_to_character("slash") is None)."""
        if action in ("find", "go_to_value") and isinstance(self.focused, Input):
            return False
        return True

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
        where = ""
        if mode == "log":
            found = self.log_pane.view.find(text, forward)
            self.log_pane.update_title()
            # the pane holds a log's last lines, not the whole file: "not found" of a line a 50 MB
            # log holds further up read as if the log lacked it
            where = f" in the log pane's {self.log_pane.view.line_count} line(s) (it keeps a log's last lines)"
        else:
            self.unzoom()
            if self.view != "tasks-view":
                self.action_show_view("tasks-view")
            found = self.table.find(text, forward)
        if not found:
            tell(self, f"not found{where}: {text}", severity="warning")

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

    # -- zoomed log --------------------------------------------------------------------
    def action_zoom_log(self) -> None:
        """The selected task's log over the whole screen but the footer, even when the layout
        hides the pane (-tiny): a traceback does not fit in its few lines. The pane goes on following
        and keeps its scroll position; `z` again or escape gives the layout back."""
        if self.maximized is not None:
            self.unzoom()
            return
        self._zoom_return = self.focused
        self.maximize(self.log_pane, container=False)
        self.log_pane.view.focus()       # the keys scroll the log shown, not a hidden table

    def unzoom(self) -> None:
        """Back to the normal layout (watch_maximized gives the focus back)."""
        if self.maximized is not None:
            self.minimize()

    def watch_maximized(self, old: Widget | None, new: Widget | None) -> None:
        """However the zoom ends (escape, `z`, a key that changes the layout, the palette's
        Minimize), the focus goes back where it was, or to the view's own part."""
        if old is None or new is not None:
            return
        target, self._zoom_return = self._zoom_return, None
        (target if target is not None and target.is_attached else self.home_focus()).focus()

    def focus_home(self) -> None:
        """The view's own part takes the focus; while the log is zoomed, once the zoom ends."""
        if self.maximized is None:
            self.home_focus().focus()
        else:
            self._zoom_return = self.home_focus()

    def follow_selected(self) -> None:
        """Point the log pane at the task selected in the view shown (an earlier attempt's task:
        its log where the rerun moved it); nothing when the filter hides every task."""
        if self.view == "attempts-view":
            task = self.attempt_table.selected_task()
            self.log_pane.show_task(task, self.no_log_note(task), self.end_note(task))
        elif self.view == "failures-view":
            self.show_group_log(self.failures_view.selected_group())
        elif self.view != "map-view":
            task = self.selected_task()
            self.log_pane.show_task(task, self.not_run_note(task), self.end_note(task))

    def row_of(self, task):
        """The row shown for `task`: the task table's, or the attempts table's for an earlier attempt's."""
        if task is None:
            return None
        if self.tasks.get(record_key(task)) is task:
            return self.table.state_of(task)
        return self.attempt_table.state_of(task)

    def end_note(self, task) -> EndNote | None:
        """`ended FAILED (exit 3)` for the log pane's title once the row shown says the task ended:
        the core's `row_end`, the rule `hyperion-jobs logs -f` stops following by, in its words (the
        title said `following` for ever, the CLI `ended FAILED (exit 3); stopped following`). None
        while it may write more. Slurm ended it: `ended TIMEOUT by Slurm (l: its .err)` on the
        program log, which stops mid-run without its `# Ended` line (`logs` says so on stderr).
        The wordings, fullest first: a program that ran to its end is also said shorter, for a title
        too narrow for `logs`' words (at 80 columns they were cut to `the program ended…`)."""
        row = self.row_of(task)
        end = None if row is None else row_end(row)
        if end is None:
            return None
        note = ended_words(end)
        # one cancelled while pending wrote no .err to read: told by the row, not by a look at the
        # file (this runs on the UI thread at every update; a hung NFS folder would freeze it)
        if self.log_pane.source == "log" and ended_by_slurm(row.state) and task.slurm_err is not None \
                and not never_started(row):
            # its program ran to its end (the footer, the pane's last line read): said so, as `logs` says it
            code = self.log_pane.footer_code(task)
            told = program_end_words(row.state.value, code)
            if told is None:
                return (f"{note} by Slurm (l: its .err)",)
            short = f"{note}: {program_end_words(row.state.value, code, short=True)}"
            return f"{note}: {told} (l: its .err)", f"{short} (l: its .err)", short
        return (note,)

    @guarded
    def on_log_appended(self, message: LogAppended) -> None:
        """The lines read may end with the program log's footer: the title says what it tells."""
        self.log_pane.note_end(self.end_note(self.log_pane.shown_task))

    def no_log_note(self, task) -> str | None:
        """Of an earlier attempt's task that left no program log (a later attempt's is at its path):
        why, as `hyperion-jobs logs RECORD:VALUE --attempt N` says it (the core's `no_log_reason`).
        The pane said `none for this task` of a task cancelled while pending, which never started."""
        if task is None or task.log is not None or self.history is None or self.log_pane.source != "log":
            return None
        key = (task.job_id, task.array_task_id)
        held = next((t for t in self.history.tasks_of(task.attempt) if (t.job_id, t.array_task_id) == key), None)
        end = None if held is None or (row := self.row_of(task)) is None else row_end(row)
        return None if held is None else no_log_reason(self.history, held, end.state if end else None)

    def not_run_note(self, task) -> str | None:
        """For a value the table shows NOT_RUN, what `hyperion-jobs logs` says of it (the attempt that
        ran it before, if one did): the pane waited on its path, `no file yet`, for a run that ended."""
        state = None if task is None else self.table.state_of(task)
        if self.history is None or getattr(state, "state_label", None) != "NOT_RUN" or os.path.lexists(task.log):
            return None
        note = not_run_text(self.history, task)
        return note + (": a shows the attempts" if "ran it" in note else "")

    # -- retry -------------------------------------------------------------------------
    @guarded
    def action_retry(self) -> None:
        """Open the retry preview (a failure group's values when one is highlighted), unless the
        core refuses at once: live tasks, nothing to retry. The refusal is one line."""
        if self.history is None:
            tell(self, "retry: no submission selected", severity="warning")
            return
        if self._polling and not self._answered:
            self.retry_flow.refuse("retry: Slurm has not answered yet, so which tasks ended is not known; "
                              "try again in a moment")
            return
        values = ""
        if self.view == "failures-view":
            group = self.failures_view.selected_group()
            if group is not None and any(v is not None for v in group.values):
                values = group.value_ranges
        self.retry_flow.start(self.history, dict(self.tasks), dict(self.states), values)

    # -- cancel ----------------------------------------------------------------------
    @guarded
    def action_cancel_task(self) -> None:
        task = self.selected_task()
        if task is None:
            tell(self, "no task selected", severity="warning")
            return
        state = self.table.state_of(task)
        self._confirm_cancel([slurm_target(task)], [state],
                             f"{slurm_target(task)} already ended ({row_state_name(state)})",
                             {slurm_target(task): self._cluster_of(task)})

    @guarded
    def action_cancel_job(self) -> None:
        if self.record is None:
            tell(self, "no submission selected", severity="warning")
            return
        jobs = sorted({task.job_id for task in self.tasks.values()})
        clusters = {task.job_id: self._cluster_of(task) for task in self.tasks.values()}
        self._confirm_cancel(jobs, [self.states.get(key) for key in self.tasks], "every task already ended", clusters)

    def _cluster_of(self, task) -> str | None:
        """The cluster `task`'s attempt queued it on (`History.cluster_of`): scancel asks it."""
        return self.history.cluster_of(task) if self.history is not None else None

    def _confirm_cancel(self, targets: list[str], states: list, ended: str,
                        clusters: dict[str, str | None]) -> None:
        if self.record is None or self.record_path is None:
            tell(self, "no submission selected", severity="warning")
            return
        if self.record.backend != "slurm":     # as hyperion-jobs cancel says it: whom to stop, if anyone
            tell(self, "cancel: " + local_cancel_text(self.record_path, load_history(self.record_path, self.record)),
                 severity="warning", timeout=15)
            return
        if states and all(s is not None and s.state is not None and s.state.is_terminal for s in states):
            # scancel of a finished job exits 0 and does nothing: "cancelled" would be a lie
            tell(self, f"{ended}: nothing to cancel", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(CancelRequested(targets))
                self.run_cancel(targets, clusters)

        self.app.push_screen(ConfirmScreen("Cancel with scancel?", "scancel " + " ".join(targets),
                                           yes="Cancel"), answered)

    @work(thread=True, group="cancel", exit_on_error=False)
    def run_cancel(self, targets: list[str], clusters: dict[str, str | None]) -> None:
        try:        # one scancel per cluster, each target on its attempt's
            cancel_each(cluster_groups(targets, clusters), stoppable(self.screen_gone))
        except QueryStopped:        # the console quit while scancel hung: nobody is left to tell
            return
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
