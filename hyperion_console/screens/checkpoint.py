"""Checkpoint screen: run.json, shard coverage, failed-task records, retry preview, Resubmit.

Coverage comes from sharding.coverage, the retry windows from sharding.retry
(the same plan `hyperion-checkpoint retry` prints, made from the coverage on
screen: typing a max array size reads nothing again) and Resubmit goes through
the bridge sharding.resubmit, so the console does exactly what the CLI does.
The checkpoint is read in a worker thread (100,000 manifests: seconds, on NFS
more): keys work meanwhile, and a line says it is being read, and for how long.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, DataTable, Input, Label, Static, TabbedContent, TabPane, Tabs
from textual.timer import Timer
from textual.worker import Worker, WorkerState, get_current_worker

from backends.client import QueryStopped
from backends.errors import FieldError
from backends.printable import printable
from backends.ranges import compress
from backends.records.trust import trust_problem
from backends.submit.array_limit import NO_LIMIT, ArrayLimit, retry_limit, shown_path
from backends.watch.slurm.accounting import stoppable
from backends.shellwords import shell_join, shell_quote
from sharding.coverage import Coverage, Standing
from sharding.resubmit import (
    Resubmission,
    ShardSizes,
    StillRunning,
    check_not_running,
    check_under_lock,
    prepare_from_retry,
    prepare_resubmit,
    rerun_argv,
    retry_array_limit,
    shard_sizes,
    working_dir,
)
from sharding.retry import (MAX_MISSING_LISTED, RetryPlan, format_fields, parse_max_array_size, retry_from_coverage,
                            skipped_line)
from sharding.failed_text import SUMMARY_LIMIT, job_text, record_line, record_summary
from sharding.store import FailedRecord

from ..checkpoint_read import (
    CheckpointRead,
    Proposed,
    change_stamp,
    ledger_stamp,
    NoneNamed,
    RUNNING_QUERIES,
    read_checkpoint,
    read_named_checkpoint,
    running_of,
    sizes_of,
    with_records_naming,
    with_running,
)
from ..errors import as_typed, describe_error, guarded
from ..launch import launch, sbatch_teller
from ..messages import CheckpointLoaded, ResubmitRequested, Submitted
from ..record_cache import cached_record
from ..pacing import LookPacer
from ..preview import confirm_question
from ..sbatch_env import ignored_sbatch_line
from ..shown import cut, shown, tell
from ..widgets.coverage import CoverageMap
from ..widgets.field import Field
from ..widgets.path_text import PathText
from .base import SLOW_TO_PLAN, ConsoleScreen, TypingPause, console_footer, console_header
from .confirm import OTHER, ConfirmScreen

# The field's hint with neither a record nor a site file on the Submit screen: where a limit is taken from
NO_SITE_LIMIT = "no submit record, no site file on the Submit screen"
MAX_WINDOW_ROWS = 200   # retry windows listed on screen; the CLI prints them all
FOUND_LISTED = 5        # records naming the checkpoint listed when several do (none is chosen)
CHANGE_CHECK_SECONDS = 2.0   # how often the checkpoint on screen is looked at for a change since its read
# how old the Retry tab's "still running" answer may grow before Slurm is asked again (its two calls
# charged to the console's query budget): a task ending with nobody watching writes no ledger
RUNNING_RECHECK_SECONDS = 30.0


def _cut(text: str, limit: int = 200) -> str:
    """A long range expression shortened for one screen line (the CLI prints it whole)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _cell(text: str, limit: int) -> str:
    """One table cell of at most `limit` cells, a cut marked: the whole text is shown elsewhere.
    Escaped first and measured in cells: a record's ESC cut to the column and then spelled `\\x1b`
    took 4 cells, so its row ran past the column (and off the screen) with no `…`; a CJK
    character takes 2."""
    return cut(printable(text), limit)


WINDOW_COLUMNS = ("array", "offset", "minimum", "total", "shards")


def _reset_windows(windows: DataTable, rows: Sequence[Sequence[Text]] = ()) -> None:
    """Fresh columns, as wide as their widest cell, then `rows`: a column keeps the width of its
    widest cell ever, so a long plan's array column pushed offset and total off the screen for
    every plan after it. The widths are given, not left to the table's measure when it is next
    idle: a frame drawn before that (the same plan planned again) kept `1,3-6` on screen for
    `1,3-6,8-9`, cut to the header's width without a mark, as nothing redrew it."""
    windows.clear(columns=True)
    for n, column in enumerate(WINDOW_COLUMNS):
        width = max([len(column), *(row[n].cell_len for row in rows)])
        windows.add_column(column, key=column, width=width)
    for row in rows:
        windows.add_row(*row)


def confirmation_text(prepared: Resubmission, record_path: str, untrusted: str | None,
                      size_lines: tuple[str, ...] = ()) -> str:
    """What Resubmit will run, where, and whose record says so, and (`size_lines`) the sizes the
    shards ran out of that it keeps, in `hyperion-checkpoint retry --dry-run`'s words: plain text,
    every part escaped."""
    plan, record = prepared.plan, prepared.record
    assert plan is not None and record is not None
    lines = []
    if untrusted is not None:
        lines += [f"WARNING: the record {printable(record_path)} {printable(untrusted)}.",
                  "Its command runs as you. Resubmit only if you trust it.", ""]
    if prepared.warning is not None:      # `hyperion-checkpoint retry --submit`'s warning, in its words
        lines += [f"warning: {prepared.warning}", ""]
    ignored = ignored_sbatch_line(plan.options.backend)
    lines += [ignored] if ignored else []
    lines += [f"record:  {printable(record_path)}",
              f"shards:  {printable(_cut(prepared.retry.expression))}",
              f"runs in: {printable(record.cwd)}",
              f"command: {shell_join(plan.argv)}"]
    lines += [f"sbatch:  {shell_join(window.sbatch_argv)}" for window in plan.windows[:MAX_WINDOW_ROWS]]
    lines += [printable(line) for line in size_lines]
    return "\n".join(lines)


PROPOSED = "Resubmit with proposed sizes"   # the confirmation's second yes (`Use proposed sizes` in the Jobs screen's Retry)


class SizedConfirmScreen(ConfirmScreen):
    """The Resubmit confirmation when the shards ran out of a size the record keeps: a second yes,
    PROPOSED (or `s`), resubmits with the sizes auto would ask for."""

    BINDINGS = [Binding("s", f"answer('{OTHER}')", "With proposed sizes")]


def proposed_text(prepared: Resubmission, cli: Sequence[str], sizes: ShardSizes) -> str:
    """The confirmation's block for Resubmit with proposed sizes: the command of `hyperion-checkpoint
    retry` it runs as (`cli`: with --mem auto / --time auto), the `sizes: ...` lines of what auto
    chose, then its command and sbatch calls, in `confirmation_text`'s words."""
    plan = prepared.plan
    assert plan is not None
    lines = ["", f"{PROPOSED} (s) runs as: {shell_join(cli)}"]
    lines += [printable(line) for line in sizes.lines()]
    lines.append(f"command: {shell_join(plan.argv)}")
    lines += [f"sbatch:  {shell_join(window.sbatch_argv)}" for window in plan.windows[:MAX_WINDOW_ROWS]]
    return "\n".join(lines)


def retry_summary(plan, typed: int | None, site: ArrayLimit) -> Text:
    """What is missing, in how many windows; and, when the site file capped the size typed, that it did
    (the field shows what was typed, the windows follow the site's limit)."""
    if plan.complete:
        text = Text("every shard is complete: nothing to resubmit", style="green")
    else:
        text = Text.assemble(("missing ", "bold"), _cut(plan.expression),
                             f"  ({plan.missing_count} shard{'' if plan.missing_count == 1 else 's'}, "
                             f"{len(plan.windows)} window{'' if len(plan.windows) == 1 else 's'})")
    skipped = skipped_line(plan)      # `hyperion-checkpoint retry`'s note, in its words
    if skipped is not None:
        text.append("\n")
        text.append_text(shown(skipped, "yellow"))
    if typed is not None and site.value is not None and site.value < typed:
        text.append("\n")
        text.append_text(shown(f"max array size {site.value}: the {site.source} caps {typed}", "yellow"))
    return text


def nothing_to_resubmit(plan: RetryPlan, said: str = "every shard is complete: nothing to resubmit") -> str:
    """The toast of a Resubmit with nothing missing, and the shards a rerun failed since their
    completion, which it skips too (`skipped_line`), on the same line: a toast is one."""
    skipped = skipped_line(plan)
    return said if skipped is None else f"{said}. {skipped}"


def retry_flags(typed: int | None, site: ArrayLimit) -> str:
    """The options that make `hyperion-checkpoint retry` print the fields shown: the limit typed
    and the site file that caps it (its path as the user would type it)."""
    flags = "" if typed is None else f" --max-array-size {typed}"
    return flags + (f" --cfg {shell_quote(shown_path(site.path))}" if site.value is not None else "")


ID_CELL = 12          # a job, array task or restart of a failed record (a foreign folder's may be long)
JOB_CELL = 18         # its job, 12358_6 as hyperion-jobs names the task: a 10-digit job _ a 7-digit task whole
RECORD_OPTION = "--record"   # the record field is hyperion-checkpoint retry's --record (or --submit's record)
ARRAY_CELL = 30       # a window's array expression (the fields below it give it whole)

FAILED_COLUMNS = ("shard", "job", "array task", "restart", "recorded", "details")
# The record's path, shown whole in the box below the table, names its array task and restart: they
# give way first, so the details (the failure's exception) stay readable.
NARROW_FAILED_COLUMNS = ("shard", "job", "recorded", "details")
# Characters of details the array task and restart columns never cut the cell below (unless every
# record's details are shorter): at 80 columns the six columns left the cell 18 characters, the task
# ids took 15 of them and the exception read `In…`. 40 hold `tasks p000003  ` and 25 of the exception.
READABLE_DETAILS = 40
MIN_DETAILS_CELL = 8   # the details never shrink below this: the table scrolls sideways instead
# Cells beside the ones in the table: the tab pane's padding (2), the details column's own (2) and a
# vertical scrollbar's (2) once the records overflow the table.
AROUND_DETAILS = 6


class FailedFit(NamedTuple):
    """What the Failed table's layout needs of the records read, measured once per read: a resize
    must not redo every record's cells."""
    beside: dict[tuple[str, ...], int]   # columns -> cells beside the details (each with its padding)
    longest: int                          # the longest details whole (or the column's heading)


def details_width(width: int, beside: int) -> int:
    """Characters of the details cell in a terminal `width` columns wide: what the other columns
    (`beside`: their cells, each with its padding) leave. A fixed 18 pushed the details off a
    54-column pane (a local run's job id `local_23846` is 11 wide) and left 13 columns of an
    80-column line empty right of `tasks p000003  In…`."""
    return max(MIN_DETAILS_CELL, width - beside - AROUND_DETAILS)


def failed_layout(width: int, fit: FailedFit) -> tuple[tuple[str, ...], int]:
    """The Failed table's columns and details cell in a terminal `width` wide: every column while
    the details cell beside them keeps READABLE_DETAILS characters (or every record's whole);
    narrower, the array task and restart give way to the details."""
    room = width - fit.beside[FAILED_COLUMNS] - AROUND_DETAILS    # unclamped: an empty table's heading
    if room >= max(MIN_DETAILS_CELL, min(fit.longest, READABLE_DETAILS)):   # fits in 8, yet 6 columns scrolled
        return FAILED_COLUMNS, room
    return NARROW_FAILED_COLUMNS, details_width(width, fit.beside[NARROW_FAILED_COLUMNS])


def beside_details(columns: tuple[str, ...], rows: list[dict[str, Text]]) -> int:
    """Cells the columns other than the details take, each its widest cell or heading and padding."""
    return sum(max([len(column), *(row[column].cell_len for row in rows)]) + 2
               for column in columns if column != "details")


def measure_failed(rows: list[dict[str, Text]]) -> FailedFit:
    """The FailedFit of the table's rows, their details cells whole (no rows: the headings')."""
    return FailedFit({columns: beside_details(columns, rows) for columns in (FAILED_COLUMNS, NARROW_FAILED_COLUMNS)},
                     max([len("details"), *(row["details"].cell_len for row in rows)]))


COMPLETE_SINCE = "✓"   # after the shard of a record a later attempt completed (`failed`: "(shard complete since)")
FAILED_AFTER = "✓!"    # after the shard of a record newer than its completion (`failed`: "(failed after its shard completed; ...)")
# Each marked standing: its mark, its colour, and what the box under the table says of it
MARKS = {Standing.COMPLETE_SINCE: (COMPLETE_SINCE, "green", "complete since: a later attempt completed it"),
         Standing.FAILED_AFTER: (FAILED_AFTER, "yellow", "completed before, failed after: this failure is newer than "
                                 "its completion manifest, which stands, so retry skips the shard")}


def failed_cells(record: FailedRecord, details_cell: int = SUMMARY_LIMIT + 3,
                 standing: Standing | None = None) -> dict[str, Text]:
    """Each column's cell for one failed-task record, escaped; ids and details cut to their columns.
    A record whose shard is complete since is dimmed and its shard marked: after a retry the old
    failures outnumbered the shards still failing, and looked the same. One newer than its shard's
    completion is marked, not dimmed: it is no old failure (it was marked complete since)."""
    when = dt.datetime.fromtimestamp(record.mtime, dt.timezone.utc).strftime("%m-%d %H:%MZ")   # no year: the details take the room
    details = record_summary(record)     # `failed`'s summary: the raw JSON's first 18 characters told nothing
    ids = (record.shard, job_text(record), record.array_task, record.restart)
    style = "dim" if standing is Standing.COMPLETE_SINCE else ""
    cells = {column: shown(_cell("-" if cell is None else str(cell), JOB_CELL if column == "job" else ID_CELL), style)
             for column, cell in zip(FAILED_COLUMNS, ids)}
    if standing in MARKS:
        mark, colour, _ = MARKS[standing]
        cells["shard"] = Text.assemble(cells["shard"], (f" {mark}", colour))
    return {**cells, "recorded": shown(when, style), "details": shown(_cell(details, details_cell), style)}


SLOW_RETRY = SLOW_TO_PLAN      # the benches set it to infinity: the code before, a plan at every key
UPDATING = "updating… (the windows below are of the value before your last keys)"


class PlanAndButton(Vertical):
    """The retry plan, then the Resubmit button right under it. The plan is as tall as it is and
    scrolls only once it would push the button off the screen: filling the tab, it left a screenful
    of blank lines above the button at 120x40."""

    def on_resize(self, event: events.Resize) -> None:
        button = self.query_one("#resubmit", Button)
        below = button.outer_size.height + button.styles.margin.top + button.styles.margin.bottom
        self.query_one("#retry-plan", VerticalScroll).styles.max_height = max(1, event.size.height - below)


class CheckpointScreen(ConsoleScreen):
    SUB_TITLE = "Checkpoint"
    BINDINGS = [
        Binding("r", "reread", "Reload"),
        Binding("ctrl+r", "resubmit", "Resubmit", priority=True),
        Binding("ctrl+s", "submit_elsewhere", "Submit", show=False),
    ]

    def __init__(self, checkpoint: Path | None = None, record: Path | None = None,
                 max_array_size: int | None = None) -> None:
        super().__init__(id="checkpoint")
        self.checkpoint = checkpoint
        self.given = checkpoint is not None      # else the one the open submission's command names
        # the record field's text this screen filled in itself; without --checkpoint, the --record the
        # console started with too: the field follows the Jobs screen's record, as for one found
        self._filled_record: str | None = str(record) if record is not None and checkpoint is None else None
        self._records_read: CheckpointRead | None = None   # the read that last looked for the run's records
        self.record_path = record
        self.initial_max = max_array_size
        self.plan = None
        self.coverage: Coverage | None = None     # the read on screen: the Retry tab plans from it
        self.running: StillRunning | None = None  # the record's tasks not ended at that read (Resubmit refuses)
        self.running_problem: str | None = None
        # the `sizes: ...` lines of `retry --submit RECORD --dry-run` for the record (absolute) they are of
        self.sizes: tuple[str | None, tuple[str, ...]] = (None, ())
        # what Resubmit with proposed sizes asks for, of the record (absolute) the read asked about
        self.proposed: tuple[str | None, Proposed | None] = (None, None)
        # whether Slurm was asked about the record for the read on screen: only for the Retry tab and
        # Resubmit (every read asked, each `r` on the Coverage tab one more sacct+squeue)
        self._running_asked = False
        self._asking: Worker | None = None        # that ask, made after the read (the Retry tab opened)
        self._running_stamp: tuple | None = None  # the record's ledger `running` answers for (`running_of`)
        self._ledger_look: Worker | None = None   # a look at that ledger under way (_check_running_ended)
        self._running_at = 0.0                    # time.monotonic() when `running` was answered
        self.failed_by_path: dict[str, object] = {}
        self._fit: FailedFit | None = None       # the Failed table's records measured, for its layout
        self._failed_layout: tuple[tuple[str, ...], int] | None = None   # the Failed table's columns, details cell
        self._loaded = False
        self._reading: Worker | None = None      # the read whose result will be shown
        self._read_started = 0.0
        self._confirm_after_read = False          # ctrl+r: ask once the checkpoint is read
        self._reread_asked = False                 # `r`: a read that finds no checkpoint again says so
        self._none_said: str | None = None         # the "No checkpoint: ..." on screen (None: none)
        self._ticker: Timer | None = None          # the seconds of the read under way, shown
        self._pause = TypingPause(self, self.refresh_retry)
        self._retry_seconds = 0.0                  # how long the last retry plan took
        self._shown_read: CheckpointRead | None = None   # the read on screen (its stamp, its time)
        self._shown_at = 0.0                       # time.time() when the read on screen started
        self._read_at = 0.0                        # time.time() when that read started
        self._looking: Worker | None = None        # a look for a change under way
        self.pacer = LookPacer()

    def compose(self) -> ComposeResult:
        yield console_header()
        yield Static("", id="ckpt-reading")
        yield Static("", id="ckpt-changed")
        with TabbedContent(id="ckpt-tabs"):
            with TabPane("Coverage", id="tab-coverage"):
                with VerticalScroll():
                    yield Static("", id="ckpt-run")
                    yield Static("", id="ckpt-map")
                    yield Static("", id="ckpt-problems")
            with TabPane("Failed", id="tab-failed"):
                table = DataTable(id="ckpt-failed", cursor_type="row", zebra_stripes=True)
                for column in failed_layout(self.app.size.width, measure_failed([]))[0]:
                    table.add_column(column, key=column)
                yield table
                with VerticalScroll(id="ckpt-failed-detail-box"):   # a long record scrolls, never cut
                    yield Static("", id="ckpt-failed-detail")
            with TabPane("Retry", id="tab-retry"):
                # above the plan's scroll, not in it: the scroll takes the focus (to be scrolled by
                # keys) before its children, so Tab from the tab bar stopped on it, not on this field
                with Horizontal(classes="form-row"):
                    yield Label("max array size", classes="form-label-wide")
                    yield Field("" if self.initial_max is None else str(self.initial_max),
                                placeholder=NO_LIMIT.describe(), id="max-array-size", compact=True)
                with Horizontal(classes="form-row"):
                    yield Label("submit record", classes="form-label-wide")
                    yield Field(str(self.record_path or ""), placeholder="q/NAME.submit.json",
                                id="record-path", compact=True)
                with PlanAndButton(id="retry-body"):
                    with VerticalScroll(id="retry-plan"):
                        yield Static("", id="retry-summary")
                        yield DataTable(id="retry-windows", cursor_type="row", show_cursor=False)
                        yield PathText("", id="retry-commands")   # a path wraps after a `/`, not inside a name
                    # under the plan's scroll, not at its end: a record's command line, wrapped, pushed
                    # the button below the screen (at 80x24 too); only who knew ctrl+r could resubmit
                    yield Button("Resubmit missing shards", id="resubmit", variant="error", compact=True)
        yield console_footer()

    def on_mount(self) -> None:
        self.action_reload()
        self._loaded = True
        self.set_interval(CHANGE_CHECK_SECONDS, self._check_changed)
        self.set_interval(CHANGE_CHECK_SECONDS, self._check_running_ended)

    def _check_running_ended(self) -> None:
        """While the read on screen says tasks of the record still run: whether the record's ledger
        changed since that was asked. A task that ends without a manifest or a failed-task record
        (TIMEOUT, CANCELLED, a command that exits before the pipeline runs) leaves the checkpoint as it
        was, so its look never told it: the Retry tab said `still running ...: Resubmit refuses until
        they end` while the Jobs screen and hyperion-submit said the tasks had ended. Only a face that
        watches writes an end to the ledger: with none (hyperion-submit ended by a hangup, "job(s)
        left queued"), an answer RUNNING_RECHECK_SECONDS old is asked again (of Slurm, within the
        console's query budget) while the Retry tab shows it, else when that tab is next shown."""
        if (not self.is_current or self.reading or self.running is None or self._asking is not None
                or (self._ledger_look is not None and not self._ledger_look.is_finished)):
            return
        if time.monotonic() - self._running_at >= RUNNING_RECHECK_SECONDS:
            self._running_asked = False
            # only with room for its sacct+squeue now (else at a later tick): it never waits in the
            # budget ahead of the Jobs screen's watch
            if self._running_needed() and self.app.query_budget.allows(RUNNING_QUERIES):
                self._ask_running()
            return
        self._ledger_look = self.look_at_ledger(self.running.record_path, self._running_stamp)

    @work(thread=True, group="ledger-look", exit_on_error=False)
    def look_at_ledger(self, record: str, stamp: tuple | None) -> None:
        """Off the interface thread, as the checkpoint's look: a stat of a hung mount never freezes it."""
        if ledger_stamp(record) != stamp and not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._ledger_changed, record, stamp)

    def _ledger_changed(self, record: str, stamp: tuple | None) -> None:
        """Ask again: now if the Retry tab shows (its ledger answers for the ends written there, so
        tasks all ended cost no Slurm call), else when it is shown; not if a read or an ask came since,
        nor while a read is under way (it asks itself when its answer is needed: a look that ended
        during an `r` started a second ask beside the read's, two more sacct+squeue of the budget)."""
        if (self.reading or self.running is None or self.running.record_path != record
                or self._running_stamp != stamp):
            return
        self._running_asked = False
        if self._running_needed():
            self._ask_running()

    def _check_changed(self) -> None:
        """Every few seconds on this screen, while a read is shown and none is under way: whether
        the checkpoint changed since (the tabs are one read: shards completing while it was shown
        left its counts and retry plan as they were, without a word). Never a second look while one
        is under way (a hung file server would pile up a thread per tick)."""
        read = self._shown_read
        if (not self.is_current or self.reading or read is None or read.stamp is None
                or self.query_one("#ckpt-changed", Static).display     # said: nothing more to learn
                or (self._looking is not None and not self._looking.is_finished)
                or not self.pacer.ready()):
            return
        self._looking = self.look_for_change(read)

    @work(thread=True, group="checkpoint-change", exit_on_error=False)
    def look_for_change(self, read: CheckpointRead) -> None:
        """Off the interface thread: a stat of a hung NFS folder never freezes the console. The
        next look is spaced to this one's length (LookPacer): the failed-task tree of 20k records
        took 0.34 s to stat, every 2 s (17% of a core for as long as the screen showed)."""
        began = time.monotonic()
        changed = change_stamp(read.checkpoint) != read.stamp
        if get_current_worker().is_cancelled:
            return
        self.app.call_from_thread(self.pacer.looked, time.monotonic() - began)
        if changed:
            self.app.call_from_thread(self._say_changed, read)

    def _say_changed(self, read: CheckpointRead) -> None:
        """A line under the header says the read shown is out of date (until the next read)."""
        if read is not self._shown_read or self.reading:
            return
        when = dt.datetime.fromtimestamp(self._shown_at).strftime("%H:%M:%S")
        line = self.query_one("#ckpt-changed", Static)
        line.update(Text(f"⚠ the checkpoint changed since it was read at {when}: r reads it again",
                         style="bold yellow"))
        line.display = True

    def on_screen_resume(self) -> None:
        """Back on this screen (after a Resubmit ran, tasks ended...): the checkpoint as it is now
        (a read still under way is recent enough: a second would only load the disk twice)."""
        if self._loaded and not self.reading:
            self.action_reload()

    @property
    def reading(self) -> bool:
        """A read of the checkpoint is under way (the line under the header says so)."""
        return self._reading is not None

    def home_focus(self):
        """Escape from the Retry tab's fields lands on the tab bar: left/right and 1/2/3/q work."""
        return self.query_one("#ckpt-tabs", TabbedContent).query_one(Tabs)

    def action_leave_field(self) -> None:
        """Escape lands on the tab bar from anywhere below it, not only from a field: ctrl+r leaves the
        focus on the Resubmit button, where escape, left and right did nothing after the Resubmit."""
        tabs = self.home_focus()
        if self.focused is not tabs:
            self.set_focus(tabs)

    def open(self, checkpoint: Path, record: Path | None = None) -> None:
        self.checkpoint = checkpoint
        self.given = True
        if record is not None:
            self.record_path = record
            self.query_one("#record-path", Input).value = str(record)
        self.action_reload()

    def max_array_size(self) -> int | None:
        """The max array size typed in the field; None when it is empty (the site's limit applies)."""
        text = self.query_one("#max-array-size", Input).value.strip()
        return parse_max_array_size(text) if text else None

    def site_limit(self) -> ArrayLimit:
        """The array limit of the submit record's site file, which Resubmit windows by (as
        `hyperion-checkpoint retry --submit` does): the plan's when the field is empty. Without a
        record, the Submit screen's site file's (as `retry --cfg SITE`), named as such. With an
        unreadable record or site file, none: the record's error is shown under the plan."""
        record_text = self.query_one("#record-path", Input).value.strip()
        try:
            if record_text:
                return retry_array_limit(cached_record(os.path.abspath(record_text)), pipes=False)
            site = self.app.submit_screen.selected_site()     # a FIFO (files only here) is refused at once
            if not site:       # as `hyperion-checkpoint retry` with neither --submit nor --cfg: no limit
                return ArrayLimit(None, why=NO_SITE_LIMIT)
            return replace(retry_array_limit(None, site, pipes=False), kind="Submit screen's site file")
        except Exception:
            return NO_LIMIT

    def action_reread(self) -> None:
        """`r`: read again; when it finds no checkpoint again, a notification says it looked (the
        same "No checkpoint: ..." redrawn gave no sign that it had)."""
        self._reread_asked = True
        self.action_reload()

    @guarded
    def action_reload(self) -> None:
        """Read the checkpoint again, off the interface thread; a read under way is superseded."""
        source = None if self.given else self._record_to_search()
        if not self.given and source is None:   # (one given on the command line is always read)
            again, self._reread_asked = self._reread_asked, False
            self._no_checkpoint("No checkpoint: start with --checkpoint PATH (or --demo), or open a submission "
                                "whose command names its checkpoint (--checkpoint DIR, --ckpt DIR) on the Jobs screen.",
                                again)
            return
        self._read_started, self._read_at = time.monotonic(), time.time()
        typed = self.query_one("#record-path", Input).value.strip()
        self._stop_asking()                        # the read asks again if its answer is needed
        typed_path = os.path.abspath(typed) if typed else None
        # no record typed (or only the one this screen found): look for the run's, as `retry CKPT` does
        search = [str(d) for d in self.app.jobs_screen.search_dirs] \
            if not source and (not typed or typed == self._filled_record) else None
        self._reading = self.read_in_worker(None if source else self.checkpoint, source, typed_path,
                                            self._running_needed(), typed_path is not None and source == typed_path,
                                            search, self._confirm_after_read)
        self._show_reading()
        if self._ticker is not None:
            self._ticker.stop()
        self._ticker = self.set_interval(1.0, self._show_reading)    # at 1 s, 2 s... of this read

    def _record_to_search(self) -> str | None:
        """Started without --checkpoint: the record whose command names the checkpoint to show. A record
        the user typed in the Retry tab, else the one open on the Jobs screen (followed as it changes)."""
        typed = self.query_one("#record-path", Input).value.strip()
        if typed and typed != self._filled_record:
            return os.path.abspath(typed)
        return self.app.jobs_screen.record_path or (os.path.abspath(typed) if typed else None)

    def _no_checkpoint(self, message: str, again: bool = False) -> None:
        """Nothing to read: say how to get a checkpoint on screen; no tab keeps an earlier one.
        `again`: the user asked (`r`); the same message as before is told to have been looked at anew."""
        if again and message == self._none_said:
            tell(self, f"looked again at {dt.datetime.now().strftime('%H:%M:%S')}: still no checkpoint",
                 title="checkpoint", timeout=4)
        if self.coverage is not None:
            self._forget(message)
        self._none_said = message
        self.checkpoint = None
        self.query_one("#ckpt-run", Static).update(shown(message))
        self.refresh_retry()          # the limit a retry would start from, still said in its field
        # the Retry tab says it too: it was left blank, and Resubmit's "see the Retry tab" pointed there
        self.query_one("#retry-summary", Static).update(shown(message))

    @work(thread=True, exclusive=True, group="checkpoint-read", exit_on_error=False)
    def read_in_worker(self, checkpoint: Path | None, record: str | None = None,
                       resubmit_record: str | None = None, ask: bool = False, typed: bool = False,
                       search: list[str] | None = None, propose: bool = False) -> None:
        """Read `checkpoint`, or (None) the one `record`'s command names: looking for it stats the
        paths the command names, which a hung NFS mount would hold up, so not on the interface thread.
        `ask`: also whether the record's tasks still run (`_running_needed`). `typed`: `record` is the
        record field's, a problem with it names the field as the CLI's option, `--record`. `search`:
        the folders to look in for the records naming the checkpoint (no record typed); the one found
        is the record asked about. `propose` (a Resubmit): the sizes auto would ask for too, where the
        shards ran out of some (`with_running`)."""
        worker = get_current_worker()     # cancelled: superseded, or the console quit: stop reading
        if checkpoint is None:
            read = read_named_checkpoint(str(record), worker.cancelled_event, RECORD_OPTION if typed else None)
        else:
            read = read_checkpoint(checkpoint, worker.cancelled_event)
        if search is not None and isinstance(read, CheckpointRead) and not worker.is_cancelled:
            read = with_records_naming(read, search)
            if read.records_named is not None:         # what the field will hold once shown
                resubmit_record = read.record_found
        if ask and isinstance(read, CheckpointRead) and not worker.is_cancelled:   # the record found it, or it was given
            read = with_running(read, read.found_by or resubmit_record, self.app.query_budget,
                                worker.cancelled_event, propose)
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_read, read, worker, record)

    def _show_reading(self) -> None:
        """Say that the checkpoint is being read, for how long, and what the tabs show meanwhile."""
        if not self.reading:
            return
        seconds = int(time.monotonic() - self._read_started)
        text = "reading the checkpoint…" + (f" {seconds} s" if seconds else "")
        if self.coverage is not None:
            text += " (the tabs show the previous read)"
        line = self.query_one("#ckpt-reading", Static)
        line.update(Text(text, style="bold"))
        line.display = True

    @guarded
    def _show_read(self, read: CheckpointRead | NoneNamed, worker: Worker, record: str | None = None) -> None:
        """Show one read whole, on the interface thread; a read superseded meanwhile is dropped
        (it started before the newer one: what it found may be older). `NoneNamed`: `record`'s command
        names no checkpoint, or the record cannot be read."""
        if worker is not self._reading or worker.is_cancelled:
            return
        self._read_ended()
        again, self._reread_asked = self._reread_asked, False
        if isinstance(read, NoneNamed):
            asked, self._confirm_after_read = self._confirm_after_read, False
            if read.problem is not None:
                self._no_checkpoint(f"No checkpoint: {read.problem}; open a submission whose command names its "
                                    "checkpoint, or start with --checkpoint PATH.", again)
            else:
                self._no_checkpoint(f"No checkpoint: the command of {record} names none (an option such as "
                                    "--checkpoint DIR or --ckpt DIR whose folder holds run.json); start with "
                                    "--checkpoint PATH.", again)
            if asked:                  # ctrl+r (or the button) said nothing at all: say there is no plan
                self.confirm_resubmit()
            return
        if read.found_by is not None:
            self.checkpoint = read.checkpoint
            field = self.query_one("#record-path", Input)
            if not field.value.strip() or field.value.strip() == self._filled_record:
                self._filled_record = read.found_by
                field.value = read.found_by
        if read.records_named is not None:
            self._fill_found_record(read)
        self._none_said = None
        if read.coverage is None:
            error = read.error or "the checkpoint could not be read"
            self._forget(error)
            tell(self, error, title="checkpoint", severity="error")
        else:
            self.coverage, self._shown_read = read.coverage, read
            self._shown_at = self._read_at        # a later read that fails leaves this one shown
            self.running, self.running_problem = read.running, read.running_problem
            self._running_stamp = read.running_stamp
            self._running_at = time.monotonic()
            self.sizes = (read.sizes_for, read.size_lines)
            self.proposed = (read.sizes_for, read.proposed)
            self._running_asked = read.asked
            self.show_coverage(read)
            if not read.asked and self._running_needed():   # the Retry tab was opened during the read
                self._ask_running()
            self.refresh_retry()
            plan = retry_from_coverage(read.coverage)
            self.post_message(CheckpointLoaded(read.coverage.checkpoint, plan.missing
                                               if plan.missing_count <= MAX_MISSING_LISTED else ()))
        if self._confirm_after_read:
            self._confirm_after_read = False
            self.confirm_resubmit()

    def _fill_found_record(self, read: CheckpointRead) -> None:
        """The record field, when empty or holding what this screen found before, takes the record the
        search found (empty when none or several name the checkpoint: which one to rerun is the
        user's to say, as `retry --submit RECORD` needs it named). A record typed is left alone."""
        field = self.query_one("#record-path", Input)
        typed = field.value.strip()
        if typed and typed != self._filled_record:
            return
        self._records_read = read
        self._filled_record = read.record_found
        field.value = read.record_found or ""

    def _read_ended(self) -> None:
        self._reading = None
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self.query_one("#ckpt-reading", Static).display = False
        self.query_one("#ckpt-changed", Static).display = False

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A read that failed in a way read_checkpoint does not catch is told (as every worker's
        error is) and no longer said to be under way: the line would have said so forever.
        Textual runs ConsoleScreen's handler too, which tells the error (a super() call told it twice)."""
        if event.worker is self._reading and event.state == WorkerState.ERROR:
            self._read_ended()
            self._confirm_after_read = self._reread_asked = False

    def _forget(self, error: str) -> None:
        """The checkpoint cannot be read now: no tab keeps showing what it held before (a removed
        checkpoint still showed its counts, failed records and retry plan)."""
        self.query_one("#ckpt-run", Static).update(shown(error, "bold red"))
        for name in ("#ckpt-map", "#ckpt-problems", "#ckpt-failed-detail", "#retry-commands"):
            self.query_one(name, Static).update("")
        self.query_one("#ckpt-failed", DataTable).clear()
        _reset_windows(self.query_one("#retry-windows", DataTable))
        self.query_one("#retry-summary", Static).update(shown(error, "bold red"))
        self.failed_by_path, self.plan, self.coverage, self._fit = {}, None, None, None
        self._shown_read = None
        self.query_one("#ckpt-changed", Static).display = False     # no read shown: none out of date
        self.running, self.running_problem, self._running_asked = None, None, False
        self.sizes = (None, ())
        self.proposed = (None, None)
        self._stop_asking()

    def _running_needed(self) -> bool:
        """Whether the record's running tasks are to be asked about now: the Retry tab shows them, and
        Resubmit refuses them; the Coverage and Failed tabs never need Slurm."""
        return self._confirm_after_read or self.query_one("#ckpt-tabs", TabbedContent).active == "tab-retry"

    @on(TabbedContent.TabActivated, "#ckpt-tabs")
    def _tab_shown(self, event: TabbedContent.TabActivated) -> None:
        """The Retry tab opened on a read made without asking: ask now (once per read)."""
        if event.pane.id == "tab-retry" and not self.reading:
            self._ask_running()

    def _record_field_path(self) -> str | None:
        typed = self.query_one("#record-path", Input).value.strip()
        return os.path.abspath(typed) if typed else None

    def _ask_running(self) -> None:
        """Ask whether the Retry tab's record still runs, off the interface thread, unless the read on
        screen has the answer or the ask is under way."""
        if self.coverage is None or self._running_asked or self._asking is not None:
            return
        record = self._record_field_path()
        if record is None:
            return
        self._asking = self.ask_running_in_worker(record)
        self.refresh_retry()                  # says it is asking

    def _stop_asking(self) -> None:
        if self._asking is not None:
            self._asking.cancel()
            self._asking = None

    @work(thread=True, exclusive=True, group="running-ask", exit_on_error=False)
    def ask_running_in_worker(self, record: str) -> None:
        worker = get_current_worker()
        running, problem, stamp = running_of(record, self.app.query_budget, worker.cancelled_event)
        lines = sizes_of(record, self.coverage) if running is None and problem is None else ()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_running, worker, running, problem, (record, lines), stamp)

    @guarded
    def _show_running(self, worker: Worker, running: StillRunning | None, problem: str | None,
                      sizes: tuple[str | None, tuple[str, ...]] = (None, ()), stamp: tuple | None = None) -> None:
        if worker is not self._asking:        # a read or another ask since: theirs is shown
            return
        self._asking = None
        self.running, self.running_problem, self._running_asked = running, problem, True
        self._running_stamp = stamp
        self._running_at = time.monotonic()
        self.sizes = sizes
        self.refresh_retry()

    def size_lines(self, record_path: str) -> tuple[str, ...]:
        """The `sizes: ...` lines asked for `record_path` (the CLI's words), () for another record."""
        asked, lines = self.sizes
        return lines if asked == os.path.abspath(record_path) else ()

    def show_coverage(self, read: CheckpointRead) -> None:
        cov = read.coverage
        assert cov is not None
        run_text = Text.assemble(("checkpoint ", "bold"), shown(read.checkpoint), "\n",
                                 ("run.json   ", "bold"))
        if read.found_by is not None:     # not given on the command line: say where it came from
            run_text = Text.assemble(("checkpoint ", "bold"), shown(read.checkpoint), "\n",
                                     ("           ", "bold"), shown(f"(named by the command of {read.found_by})", "dim"),
                                     "\n", ("run.json   ", "bold"))
        if read.run_problem is None:
            run_text.append_text(shown(read.run_text))
        else:
            run_text.append_text(shown(read.run_problem, "red"))
        run_text.append(f"\nshards     {cov.run.minimum_shard_index}..{cov.run.maximum_shard_index}"
                        f" ({cov.run.total_shards})")
        # the list sits below the map, which a thousand shards push off screen
        skipped = sum(not p.counted for p in cov.problems)
        if skipped:
            run_text.append(f"\nskipped    {skipped} file{'s' if skipped > 1 else ''} that did not fit the layout "
                            "(listed below the map)", "yellow")
        if cov.unnamed:   # as `show` counts them
            run_text.append(f"\nno shard   {cov.unnamed} failed-task record{'s' if cov.unnamed > 1 else ''} in "
                            "folders naming no shard (the Failed tab lists them)", "yellow")
        after = cov.failed_after
        if after:   # as `shards` marks them: complete, so no colour of the map tells them
            run_text.append("\n")   # the line break is layout: `shown` spells a "\n" of its text as \x0a
            run_text.append_text(shown(f"{FAILED_AFTER} shards  {len(after)} complete, then failed in a rerun "
                                       f"({_cut(compress(after), 80)}): retry skips {'it' if len(after) == 1 else 'them'} "
                                       "(the Retry tab says how to rerun one)", "yellow"))
        if cov.without_details:
            counted = cov.without_details
            run_text.append(f"\ndetails    {counted} failed-task record{'s' if counted > 1 else ''} whose details "
                            "cannot be read (listed below the map)", "yellow")
        self.query_one("#ckpt-run", Static).update(run_text)
        self.query_one("#ckpt-map", Static).update(CoverageMap(cov))
        problems = Text()
        for problem in cov.problems:
            prefix = "" if problem.counted else "skipped "
            problems.append_text(shown(f"{prefix}{problem.path}: {problem.message}", "yellow"))
            problems.append("\n")
        self.query_one("#ckpt-problems", Static).update(problems)
        self.failed_by_path, self._fit = {record.path: record for record in cov.failed}, None
        self.fill_failed(self.app.size.width)

    def fill_failed(self, width: int) -> None:
        """The failed records of the read on screen, in the columns and details cell of a terminal
        `width` wide; new columns when they change (clearing rows alone keeps the columns, and
        each one's width, so wider details would stay cut)."""
        table = self.query_one("#ckpt-failed", DataTable)
        self._failed_layout = layout = self._failed_columns(width)
        columns, details = layout
        table.clear(columns=True)
        for column in columns:
            table.add_column(column, key=column)
        for record in self.failed_by_path.values():
            cells = failed_cells(record, details, self._standing(record))
            table.add_row(*(cells[column] for column in columns), key=record.path)

    def _failed_columns(self, width: int) -> tuple[tuple[str, ...], int]:
        """The Failed table's columns and details cell at `width`, for the records read."""
        if self._fit is None:      # once per read: a resize must not redo every record's cells
            self._fit = measure_failed([failed_cells(r, standing=self._standing(r)) for r in self.failed_by_path.values()])
        return failed_layout(width, self._fit)

    def _standing(self, record: FailedRecord) -> Standing | None:
        return None if self.coverage is None else self.coverage.standing(record)

    def on_resize(self, event: events.Resize) -> None:
        """Too narrow for every column and readable details (80 columns, a split tmux pane), fewer
        columns, so the details stay on screen; the record that was highlighted still is."""
        table = self.query_one("#ckpt-failed", DataTable)
        if self._failed_layout == self._failed_columns(event.size.width):
            return
        row = table.cursor_row
        self.fill_failed(event.size.width)
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1))

    @on(DataTable.RowHighlighted, "#ckpt-failed")
    @guarded
    def _failed_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The selected record as `hyperion-checkpoint failed` prints it, then its whole JSON (the
        table can only show the start of the summary)."""
        record = self.failed_by_path.get(str(event.row_key.value))
        if record is None:
            return
        standing = self._standing(record)
        mark, colour, said = MARKS.get(standing, ("", "", ""))     # none: no shard, or the shard still failing
        since = (f"shard {record.shard} {mark} {said}\n", colour) if mark else ""
        raw = () if record.details is None else (
            "\n\n", ("raw JSON", "bold"), "\n", shown(json.dumps(dict(record.details), sort_keys=True)))
        self.query_one("#ckpt-failed-detail", Static).update(Text.assemble(
            since, shown(record.path, "dim"), "\n", shown(record_line(record, standing)), *raw))

    @on(Input.Changed, "#max-array-size")
    @on(Input.Changed, "#record-path")
    @guarded
    def _retry_input_changed(self) -> None:
        """A quick plan at once; a slow one once the keys pause, the plan before dropped meanwhile
        (Resubmit reads the checkpoint and plans the field's value again anyway)."""
        if self._retry_seconds < SLOW_RETRY and not self._pause.pending:
            self.refresh_retry()
            return
        self.plan = None
        self.query_one("#retry-summary", Static).update(Text(UPDATING, style="yellow"))
        self._pause.restart()

    @property
    def updating(self) -> bool:
        """A key in the Retry tab's fields waits for the keys to pause to be planned."""
        return self._pause.pending

    @guarded
    def refresh_retry(self) -> None:
        """Plan the retry as `hyperion-checkpoint retry` does, from the coverage on screen (a keystroke
        in a field must not read 100,000 manifests again), and show its windows and commands."""
        self._pause.cancel()                       # planned now, of the fields as they are
        started = time.perf_counter()
        try:
            self._plan_retry()
        finally:
            self._retry_seconds = time.perf_counter() - started

    def _plan_retry(self) -> None:
        summary = self.query_one("#retry-summary", Static)
        windows = self.query_one("#retry-windows", DataTable)
        commands = self.query_one("#retry-commands", PathText)
        _reset_windows(windows)     # no plan shown while this one is made (or fails)
        self.plan = None
        field = self.query_one("#max-array-size", Field)
        site = self.site_limit()
        # a record's site path may hold anything; a long one gives up its start, not the file name
        field.show_hint(printable(site.describe()), printable(shown_path(site.path)) if site.path else "")
        if self.checkpoint is None or self.coverage is None:
            return
        field.remove_class("invalid")
        try:
            typed = self.max_array_size()
            plan = retry_from_coverage(self.coverage, retry_limit(typed, site))
            fields = format_fields(plan)
        except Exception as exc:
            summary.update(shown(describe_error(exc), "bold red"))
            commands.update("")
            if getattr(exc, "field", None) == "--max-array-size":   # marked as the Submit form marks its fields
                field.add_class("invalid")
            return
        self.plan = plan
        summary.update(retry_summary(plan, typed, site))
        rows = []
        for window, line in zip(plan.windows[:MAX_WINDOW_ROWS], fields):
            expression, offset, minimum, total = line.split(" ")
            rows.append([shown(cell) for cell in (_cell(expression, ARRAY_CELL), offset, minimum, total,
                                                       window.count)])
        if len(plan.windows) > MAX_WINDOW_ROWS:
            rows.append([shown(f"... {len(plan.windows) - MAX_WINDOW_ROWS} more"), *(Text() for _ in range(4))])
        _reset_windows(windows, rows)
        commands.update(self.retry_commands(plan, fields, retry_flags(typed, site)))

    def retry_commands(self, plan, fields: list[str], flags: str = "") -> Text:
        text = Text()
        text.append_text(shown(f"retry fields (hyperion-checkpoint retry --format fields{flags}):", "bold"))
        text.append("\n")
        for line in fields[:MAX_WINDOW_ROWS]:
            text.append_text(shown(f"  {_cut(line)}"))
            text.append("\n")
        if len(fields) > MAX_WINDOW_ROWS:
            text.append(f"  ... {len(fields) - MAX_WINDOW_ROWS} more lines\n")
        if plan.complete:
            return text
        record_text = self.query_one("#record-path", Input).value.strip()
        text.append_text(self.records_found_text(record_text))
        if not record_text:
            return text
        try:
            record = cached_record(os.path.abspath(record_text))    # a stat while the file is unchanged
            prepared = prepare_from_retry(plan, record_text, record)
            submit_plan = prepared.plan
        except Exception as exc:
            text.append_text(shown(describe_error(exc), "bold red"))
            text.append("\n")
            return text
        if self.running is not None and self.running.record_path == os.path.abspath(record_text):
            text.append_text(shown(f"{self.running.summary(plan)}: Resubmit refuses until they end "
                                   "(they are not missing, only unfinished)", "bold red"))
            text.append("\n")
        elif self.running_problem:
            text.append_text(shown(f"whether the record's tasks still run is not known: {self.running_problem}",
                                   "yellow"))
            text.append("\n")
        elif self._asking is not None:
            text.append("asking Slurm whether the record's tasks still run…\n", style="dim")
        if prepared.warning is not None:     # `hyperion-checkpoint retry --submit`'s warning, in its words
            text.append_text(shown(f"warning: {prepared.warning}", "yellow"))
            text.append("\n")
        text.append_text(shown(f"resubmit runs ({submit_plan.options.backend}):", "bold"))
        ignored = ignored_sbatch_line(submit_plan.options.backend)
        if ignored:
            text.append_text(shown(f"\n  {ignored}", layout=True))
        text.append_text(shown(f"\n  {shell_join(submit_plan.argv)}", layout=True))
        for window in submit_plan.windows:
            text.append_text(shown(f"\n  {shell_join(window.sbatch_argv)}", "dim", layout=True))
        text.append("\n")
        advice = self.size_lines(record_text)
        for line in advice:        # the shards ran out of a size kept: say so
            text.append_text(shown(f"  {line}", "yellow"))
            text.append("\n")
        if advice:                 # and how to ask for what auto would
            text.append_text(shown(f"  ctrl+r's confirmation offers {PROPOSED} (as --mem auto / --time auto)",
                                   "yellow"))
            text.append("\n")
        return text

    def records_found_text(self, record_text: str) -> Text:
        """What the look for the run's records found, when it chose the record field's value or left it
        empty: the record found, or why none was chosen (none or several name the checkpoint), and
        what the look could not do. Paths as `printable` spells them."""
        read = self._records_read
        looked = read is not None and read.records_named is not None and (
            not record_text or record_text == self._filled_record)
        text = Text()
        if not looked:
            if not record_text:
                text.append("no submit record: give one above (or --record FILE) to resubmit\n", style="yellow")
            return text
        assert read is not None and read.records_named is not None
        where, named = ", ".join(read.records_where), read.records_named
        if record_text:
            text.append_text(shown(f"submit record found: {record_text}, the one under {where} whose command "
                                   "names this checkpoint", "green"))
        elif not named:
            text.append_text(shown(f"no submit record: none under {where} names this checkpoint (its command's "
                                   "--checkpoint DIR, --ckpt DIR); give one above (or --record FILE) to resubmit",
                                   "yellow"))
        else:
            listed = ", ".join(named[:FOUND_LISTED]) + (f" (+{len(named) - FOUND_LISTED} more)"
                                                        if len(named) > FOUND_LISTED else "")
            verb = "names this checkpoint:" if len(named) == 1 else "name this checkpoint, newest first:"
            text.append_text(shown(f"no submit record: {len(named)} under {where} {verb} {listed}; give the run's "
                                   "one above (or --record FILE) to resubmit", "yellow"))
        text.append("\n")
        for line in read.records_told:
            text.append_text(shown(line, "yellow"))
            text.append("\n")
        return text

    @on(Button.Pressed, "#resubmit")
    def _resubmit_pressed(self) -> None:
        self.action_resubmit()

    @guarded
    def action_resubmit(self) -> None:
        """Read the checkpoint again and plan the retry (every tab agrees with what is asked), then ask
        (confirm_resubmit, once the read is shown). The focus leaves a text field for the button: the
        keys typed behind ctrl+r (`ctrl+r n` in one burst) were typed into the max array size while
        the checkpoint was read, and the plan asked about became `no retry plan`."""
        if isinstance(self.focused, Input):
            self.set_focus(self.query_one("#resubmit", Button))
        self._confirm_after_read = True
        self.action_reload()
        if not self.reading:                         # no checkpoint: nothing to read, told at once
            self._confirm_after_read = False
            self.confirm_resubmit()

    @guarded
    def confirm_resubmit(self) -> None:
        """Ask about the retry planned from the read just shown: the dialog shows the exact command,
        where it runs and whose record it is."""
        if not self.is_current:       # left (or a dialog opened) while reading: not asked over another screen
            tell(self, "resubmit not asked: the Checkpoint screen was left while the checkpoint was read "
                 "(ctrl+r there asks again)", severity="warning")
            return
        plan = self.plan
        if plan is None:
            tell(self, "no retry plan (see the Retry tab)", severity="error")
            return
        if plan.complete:
            tell(self, nothing_to_resubmit(plan), severity="warning", timeout=15 if plan.failed_after else None)
            return
        record_text = self.query_one("#record-path", Input).value.strip()
        if not record_text:
            tell(self, "resubmit: give the original submit record (--record FILE)", severity="error")
            return
        record_path = os.path.abspath(record_text)
        if self.running is not None and self.running.record_path == record_path:
            # the read just made asked: refused as `hyperion-checkpoint retry --submit` refuses, before asking
            tell(self, self.running.refusal(plan), title="resubmit refused", severity="error", timeout=15)
            return
        # the record the preview showed, parsed again only if its file changed (100k tasks: 0.5 s);
        # run_resubmit reads it afresh and refuses if what runs differs from what is asked here
        try:
            record = cached_record(record_path)
        except FieldError as exc:                    # named as the field is: --record, as typed
            raise as_typed(exc, RECORD_OPTION) from None
        prepared = prepare_from_retry(plan, record_path, record)
        if prepared.plan is None or prepared.record is None:
            tell(self, nothing_to_resubmit(plan), severity="warning", timeout=15 if plan.failed_after else None)
            return
        untrusted = trust_problem(record_path)
        confirmed = (tuple(prepared.plan.argv), prepared.record.cwd, untrusted)
        question = confirm_question(prepared.plan, "Resubmit", "shard(s)")
        text = confirmation_text(prepared, record_path, untrusted, self.size_lines(record_path))
        # the shards ran out of a size the record keeps: a second yes resubmits with what auto asks for,
        # planned by the bridge as `hyperion-checkpoint retry --submit RECORD --mem auto --time auto` plans it
        proposed = self.proposal(record_path)
        sized = None
        if proposed is not None and proposed.sizes is not None:
            sized = prepare_from_retry(plan, record_path, record, proposed.sizes)
            assert sized.plan is not None and sized.record is not None
            cli = (*rerun_argv(str(self.checkpoint), record_path, plan.max_array_size), *proposed.flags())
            text += "\n" + proposed_text(sized, cli, proposed.sizes)
        elif proposed is not None:
            text += "\n\n" + printable(f"{PROPOSED}: not offered: {proposed.problem}")

        def answered(yes: bool | str | None) -> None:
            if yes == OTHER and sized is not None and sized.plan is not None and sized.record is not None:
                assert proposed is not None
                self.post_message(ResubmitRequested(str(self.checkpoint), record_text, plan.max_array_size,
                                                    proposed.mem, proposed.time))
                self.run_resubmit(record_path, plan.max_array_size, (tuple(sized.plan.argv), sized.record.cwd,
                                                                     untrusted), (proposed.mem, proposed.time))
            elif yes is True:
                self.post_message(ResubmitRequested(str(self.checkpoint), record_text,
                                                    plan.max_array_size))
                self.run_resubmit(record_path, plan.max_array_size, confirmed)

        if sized is None:
            self.app.push_screen(ConfirmScreen(question, text, yes="Resubmit"), answered)
        else:
            self.app.push_screen(SizedConfirmScreen(question, text, yes="Resubmit", other=PROPOSED), answered)

    def proposal(self, record_path: str) -> Proposed | None:
        """What Resubmit with proposed sizes asks for `record_path` (the read's), None for another record."""
        asked, proposed = self.proposed
        return proposed if asked == os.path.abspath(record_path) else None

    @work(thread=True, exclusive=True, group="resubmit", exit_on_error=False)
    def run_resubmit(self, record_path: str, max_array_size: int | None,
                     confirmed: tuple[tuple[str, ...], str, str | None] | None = None,
                     sizes: tuple[str | None, str | None] = (None, None)) -> None:
        """The bridge plans the retry; the core runs it exactly as hyperion-checkpoint does.

        Planned again here (the checkpoint may have moved on): if the command,
        its directory or the record's ownership differ from what the user
        confirmed, nothing runs. `sizes`, a --mem and a --time (``auto``: Resubmit with proposed
        sizes), replace the record's as `hyperion-checkpoint retry --submit RECORD --mem MEM --time
        TIME` replaces them (`shard_sizes`, asked once the record's tasks are known to have ended).
        """
        prepared = prepare_resubmit(
            str(self.checkpoint), record_path, max_array_size)
        retry, plan = prepared.retry, prepared.plan
        if plan is None or prepared.record is None:
            self.app.call_from_thread(tell, self, nothing_to_resubmit(retry, "every shard is complete; nothing resubmitted"))
            self.app.call_from_thread(self.action_reload)
            return
        # Slurm asked as the checks under the lock ask it (`launch`): a quit kills the query, and the
        # worker ends with nothing submitted and nobody left to tell
        runner = stoppable(self.app.local_runs.closing)
        try:
            settled = check_not_running(record_path, retry, runner)   # tasks may have started since the read
            # the rows of the ended tasks: the ledger's now
            sized = shard_sizes(retry, record_path, *sizes, runner=runner) if sizes != (None, None) else None
        except QueryStopped:
            return
        if sized is not None:
            prepared = prepare_from_retry(retry, os.path.abspath(record_path), prepared.record, sized)
            plan = prepared.plan
            assert plan is not None and prepared.record is not None
        # asked again under the lock (its paths resolved here, before the chdir): another terminal's
        # retry may run the same shards between the read and the lock
        under_lock = check_under_lock(record_path, plan.record_path, retry, settled,
                                      "press ctrl+r again to plan from what is missing now")
        now = (tuple(plan.argv), prepared.record.cwd, trust_problem(record_path))
        if confirmed is not None and now != confirmed:
            self.app.call_from_thread(tell, self, "the retry changed since it was confirmed (command, "
                                      "directory or record owner); nothing ran: press ctrl+r again",
                                      severity="error", timeout=10)
            return

        def announce(path: str) -> None:
            self.app.call_from_thread(self.app.post_message, Submitted(path))

        def begun() -> None:                           # said once nothing refuses it
            self.app.call_from_thread(tell, self, f"resubmitting shards {_cut(retry.expression, 40)}")

        try:
            with working_dir(prepared.record.cwd):     # as `hyperion-checkpoint retry --submit`
                status = launch(plan, announce, "resubmit", begun, self.app.local_runs,
                                sbatch_teller(self.app, self), live_check=under_lock)
        except QueryStopped:                           # the console closed while Slurm was asked: nothing ran
            return
        except BaseException:                          # fresh coverage, whatever happened
            self.app.call_from_thread(self.action_reload)
            raise
        self.app.call_from_thread(self.action_reload)
        if status is not None:
            severity = "information" if status == 0 else "error"
            self.app.call_from_thread(tell, self, f"local retry finished: exit status {status}",
                                      severity=severity)
