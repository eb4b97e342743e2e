"""The task table of the Jobs screen: a Line API widget that renders only the rows on screen.

The rows live in a TaskIndex (record order, latest states, filter); drawing a
frame costs the rows visible, whatever the array size, so 100k tasks scroll,
filter and update as fast as 10. Columns are a tuple of `Column`s, each a
function from a row to its text: adding one (an attempt number, say) is one
entry in COLUMNS. Cells are shown through `printable` and never parsed as
markup: a node name or a reason from Slurm is text.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from backends.printable import printable
from backends.states import never_runs, signal_name
from backends.watch.rows import never_started
from backends.watch.usage_summary import cpu_efficiency, human_bytes, usage_of

from ..messages import TaskHighlighted
from ..shown import fit
from ..task_index import FILTERS, Key, TaskIndex, record_key, row_state_name, slurm_target
from .states import elapsed_text, short_seconds, style_of

__all__ = ["COLUMNS", "COLUMN_SETS", "Column", "FILTERS", "Row", "TaskTable", "column_set"]


@dataclass(frozen=True)
class Row:
    """What a column's cell function gets: one task, its latest state and the time now."""

    key: Key
    task: object
    state: object
    name: str
    index: TaskIndex
    now: float


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int                                   # cells; 0: what the line has left
    text: Callable[[Row], str]
    style: Callable[[Row], str] | None = None    # rich style of the cell
    right: bool = False                          # right-justified (numbers)
    measure: Callable[[TaskIndex], int] | None = None   # width from the data, at load
    # cells one task's state needs here (None: not tracked). A tracked column gives the cells its
    # widest text so far leaves unused (down to `least`) to a 0-width column short of its own
    least: int = 0
    needs: Callable[[object], int] | None = None


def _value(row: Row) -> str:
    return "" if row.task.value is None else str(row.task.value)


def _job(row: Row) -> str:
    return row.task.job_id if row.task.job_id == "local" else slurm_target(row.task)


def _exit(row: Row) -> str:
    state = row.state
    if state is None:
        return ""
    signal = getattr(state, "signal", None)
    if state.exit_code is None:        # stopped by a signal (a local task hung up): no code, the signal
        return signal_name(signal) if signal else ""
    return f"{state.exit_code} sig{signal}" if signal else str(state.exit_code)


def _elapsed(row: Row) -> str:
    """Ticking for running tasks; none for a task that never started (pending, or cancelled while
    pending: squeue and sacct say 0:00), the core's rule that `hyperion-jobs status` shows as -."""
    if row.state is None or never_started(row.state):
        return ""
    return elapsed_text(row.index.elapsed(row.key, row.now))


def _node(row: Row) -> str:
    return (row.state.node or "") if row.state is not None else ""


def _reason(row: Row) -> str:
    """Why a task waits (squeue's %r: Resources, Priority, JobArrayTaskLimit...) or failed unrun,
    and how often Slurm requeued it."""
    return _reason_of(row.state)


def _reason_of(state) -> str:
    notes = []
    reason = getattr(state, "reason", None)
    if reason not in (None, "", "None"):
        notes.append(str(reason))
    restarts = getattr(state, "restart_count", None)
    if restarts:
        notes.append(f"restart {restarts}")
    return "; ".join(notes)


def _reason_style(row: Row) -> str:
    """Red for a reason Slurm will never get past (the request can never run), else yellow."""
    reason = getattr(row.state, "reason", None)
    return "bold red" if row.name == "PENDING" and never_runs(reason) else "yellow"


def _attempt(row: Row) -> str:
    return str(getattr(row.task, "attempt", 1))


def _usage(row: Row):
    """A row's Usage, or None (not known yet, or a bare TaskState)."""
    return getattr(row.state, "usage", None)


def _memory(row: Row) -> str:
    """``314M/1G``: the largest MaxRSS over the task's steps against its request."""
    used = _usage(row)
    if used is None or (used.max_rss_bytes is None and used.req_mem_bytes is None):
        return "-"
    return f"{human_bytes(used.max_rss_bytes)}/{human_bytes(used.req_mem_bytes)}"


def _cpu(row: Row) -> str:
    """CPU time over elapsed x CPUs, as the summary computes it for one task."""
    used = _usage(row)
    efficiency = None if used is None else cpu_efficiency([used])
    return "-" if efficiency is None else f"{efficiency:.0%}"


def _time(row: Row) -> str:
    """``3.5m/6m``: elapsed against the time limit, abbreviated to fit 80 columns; ``-/6m`` for a
    task that never started (the core's `time_used`, as `hyperion-jobs status` shows it)."""
    limit = getattr(_usage(row), "time_limit_seconds", None)
    spent = _spent(row)
    if spent is None and limit is None:
        return "-"
    return f"{short_seconds(spent)}/{short_seconds(limit)}"


def _spent(row: Row) -> float | None:
    """The elapsed time the usage summary above the table counts (`usage_of`): a local task's from
    the ledger too (its cell said `-` under a summary of those very times); None when not measured."""
    measured = None if row.state is None else usage_of(row.state)
    return None if measured is None else measured.elapsed_seconds


def _value_width(index: TaskIndex) -> int:
    values = index.by_value
    return max([5] + [len(str(v)) for v in (min(values), max(values))] if values else [5])


def _job_width(index: TaskIndex) -> int:
    """The widest JOB_TASK shown, 8 to 24 cells: each job's highest task, not the record's first
    and last, as array windows (task ids from 0 again: 12637_7 after 12636_1000) and a retry's
    later job ids are neither (`12636_10…` was cut at every width). One pass at load."""
    if not index.keys:
        return 8
    highest: dict[str, int] = {}
    for job, task in index.keys:
        if task is not None and task > highest.get(job, -1):
            highest[job] = task
        elif job not in highest:
            highest[job] = -1
    widest = max(len(printable(str(job))) + (0 if task < 0 else len(str(task)) + 1)
                 for job, task in highest.items())
    return min(24, max(8, widest))


def _state_needs(state) -> int:
    return len(row_state_name(state))


@lru_cache(maxsize=4096)
def _printable_len(text: str) -> int:
    """Nodes and reasons repeat across 100,000 tasks: escaping each again cost 0.2 s a load."""
    return len(printable(text))


def _node_needs(state) -> int:
    return _printable_len(getattr(state, "node", None) or "")


def _reason_needs(state) -> int:
    return _printable_len(_reason_of(state))


VALUE = Column("value", "value", 5, _value, right=True, measure=_value_width)
ATTEMPT = Column("attempt", "att", 3, _attempt, right=True)
JOB = Column("job", "job", 10, _job, measure=_job_width)
# 13: OUT_OF_MEMORY. With an att column and 11-cell job ids, 80 columns left the reason 15 cells
# (`JobArrayTaskLimit` cut): the state and node columns give what their texts so far leave unused
STATE = Column("state", "state", 13, lambda row: row.name, style=lambda row: style_of(row.name),
               least=5, needs=_state_needs)
REASON = Column("reason", "reason", 0, _reason, style=_reason_style, needs=_reason_needs)
STATE_COLUMNS: tuple[Column, ...] = (
    VALUE, JOB, STATE,
    Column("exit", "exit", 6, _exit),
    Column("elapsed", "elapsed", 9, _elapsed, right=True),
    Column("node", "node", 10, _node, least=4, needs=_node_needs),
    REASON,
)
USAGE_COLUMNS: tuple[Column, ...] = (
    VALUE, JOB, STATE,
    Column("memory", "mem/req", 11, _memory, right=True),
    Column("cpu", "cpu", 4, _cpu, right=True),
    Column("time", "time/limit", 10, _time, right=True),
    REASON,
)
COLUMNS = STATE_COLUMNS
COLUMN_SETS = {"states": STATE_COLUMNS, "usage": USAGE_COLUMNS}
# the columns whose widest text is tracked as states come, whichever set is shown
COLUMN_SETS_TRACKED: tuple[Column, ...] = tuple(
    {c.key: c for cs in COLUMN_SETS.values() for c in cs if c.needs is not None}.values())


def column_set(name: str, attempts: bool) -> tuple[Column, ...]:
    """The columns of a set; with an attempt column after the value once a value was retried."""
    columns = COLUMN_SETS[name]
    return (columns[0], ATTEMPT, *columns[1:]) if attempts else columns


GAP = 1


class TaskTable(ScrollView, can_focus=True):
    """A record's tasks (one row each, header fixed on top) with a row cursor."""

    COMPONENT_CLASSES = {"task-table--header", "task-table--cursor", "task-table--even-row"}
    DEFAULT_CSS = """
    TaskTable {
        background: $surface;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        & > .task-table--header { text-style: bold; background: $panel; }
        & > .task-table--even-row { background: $surface-lighten-1 50%; }
        & > .task-table--cursor { background: $block-cursor-blurred-background; }
        &:focus > .task-table--cursor {
            background: $block-cursor-background; color: $block-cursor-foreground;
            text-style: bold;
        }
        &:focus > .task-table--header { background: $accent; color: $text; }
    }
    """
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home,g", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
    ]

    class Resized(Message):
        """The table got another height: the screen tells a user whose terminal leaves it no rows."""

        def __init__(self, table: "TaskTable") -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> "TaskTable":
            return self.table

    def __init__(self, columns: tuple[Column, ...] = COLUMNS, **kwargs) -> None:
        super().__init__(**kwargs)
        self.columns = columns
        self.index = TaskIndex()
        self.cursor = 0
        self._cursor_key: Key | None = None
        self._widths: dict[str, int] = {c.key: c.width for c in columns}
        self._needed: dict[str, int] = {}    # tracked columns: the widest text since the record opened
        self._style_cache: dict[tuple, Style] = {}

    # -- data ----------------------------------------------------------------
    @property
    def filter(self) -> str:
        return self.index.filter

    @property
    def row_count(self) -> int:
        return len(self.index.shown)

    def show_tasks(self, tasks, states=()) -> None:
        """A new record: every task, states unknown until the core reports."""
        self.index.load(tasks, states)
        self._needed = {}
        self._note_needs(self.index.states.values())
        self._measure()
        self._cursor_key = None
        self._place_cursor(0)

    def set_columns(self, columns: tuple[Column, ...]) -> None:
        """Another set of columns (usage instead of states, an attempt column); the rows stay."""
        if columns == self.columns:
            return
        self.columns = columns
        self._measure()
        self.refresh()

    def _measure(self) -> None:
        for column in self.columns:
            self._widths[column.key] = column.width if column.measure is None else column.measure(self.index)

    def apply(self, changed, as_of: float | None = None) -> bool:
        """Newer states; True when rows entered or left the filtered view."""
        changed = changed if isinstance(changed, (list, tuple)) else list(changed)
        moved = self.index.apply(changed, as_of)
        self._note_needs(changed)
        if moved:
            self._keep_cursor()
        else:
            self.refresh()
        return moved

    def _note_needs(self, states) -> None:
        """The widest text of each tracked column over these states; it only grows, so columns do
        not move as tasks change."""
        states = states if isinstance(states, (list, tuple)) else list(states)
        for column in COLUMN_SETS_TRACKED:
            if states:
                widest = max(map(column.needs, states))
                if widest > self._needed.get(column.key, 0):
                    self._needed[column.key] = widest

    def set_filter(self, name: str) -> None:
        self.index.set_filter(name)
        self._keep_cursor()

    def select(self, keys) -> None:
        """Only these tasks (a failure group's), within the filter; None: every task."""
        self.index.select(keys)
        self._keep_cursor()

    def _keep_cursor(self) -> None:
        """After the view changed: the same task if still shown, else the same position."""
        position = self.index.position(self._cursor_key)
        self._place_cursor(self.cursor if position is None else position)

    def _place_cursor(self, position: int) -> None:
        count = self.row_count
        self.cursor = max(0, min(position, count - 1))
        self.virtual_size = Size(self.size.width, count + 1)
        self._scroll_cursor_into_view()
        self.refresh()
        key = self.index.shown[self.cursor] if count else None
        if key != self._cursor_key:
            self._cursor_key = key
            self.post_message(TaskHighlighted(key, None if key is None else self.index.tasks[key], self.id))

    def selected_key(self) -> Key | None:
        return self._cursor_key

    def selected_task(self):
        return None if self._cursor_key is None else self.index.tasks.get(self._cursor_key)

    def state_of(self, task):
        return self.index.states.get(record_key(task))

    def move_to_key(self, key: Key) -> bool:
        """Put the cursor on `key`; False when the filter hides it."""
        position = self.index.position(key)
        if position is None:
            return False
        self._place_cursor(position)
        return True

    # -- cursor ----------------------------------------------------------------
    @property
    def page_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def action_move(self, step: int) -> None:
        self._place_cursor(self.cursor + step)

    def action_page(self, pages: int) -> None:
        self._place_cursor(self.cursor + pages * self.page_rows)

    def action_first(self) -> None:
        self._place_cursor(0)

    def action_last(self) -> None:
        self._place_cursor(self.row_count - 1)

    def _scroll_cursor_into_view(self) -> None:
        top = int(self.scroll_y)
        rows = self.page_rows
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, force=True)
        elif self.cursor >= top + rows:
            self.scroll_to(y=self.cursor - rows + 1, animate=False, force=True)

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            self._place_cursor(int(self.scroll_y) + event.y - 1)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, self.row_count + 1)
        self._scroll_cursor_into_view()
        self.post_message(self.Resized(self))

    # -- search ----------------------------------------------------------------
    def row(self, key: Key, now: float | None = None) -> Row:
        index = self.index
        return Row(key, index.tasks[key], index.states.get(key), index.names[key], index,
                   time.time() if now is None else now)

    def row_texts(self, key: Key, now: float | None = None) -> dict[str, str]:
        """Each column's text for one task, as shown (before fitting to the width)."""
        row = self.row(key, now)
        return {column.key: printable(column.text(row)) for column in self.columns}

    def column_text(self, column: str) -> list[str]:
        """One column of the filtered view, top to bottom (tests, exports)."""
        now = time.time()
        return [self.row_texts(key, now)[column] for key in self.index.shown]

    def find(self, query: str, forward: bool = True) -> bool:
        """Move to the next row (after the cursor, wrapping) whose text contains `query`."""
        needle = query.casefold()
        shown, count = self.index.shown, self.row_count
        if not needle or not count:
            return False
        now = time.time()
        step = 1 if forward else -1
        for offset in range(1, count + 1):
            position = (self.cursor + step * offset) % count
            texts = self.row_texts(shown[position], now)
            if any(needle in text.casefold() for text in texts.values()):
                self._place_cursor(position)
                return True
        return False

    # -- drawing ---------------------------------------------------------------
    def ticks_on_screen(self) -> bool:
        """Whether a row in sight has an elapsed that moves with the clock (a RUNNING task's): the
        once-a-second tick redraws the table only then."""
        ticking = self.index.ticking
        if not ticking:
            return False
        top = int(self.scroll_y)
        return any(key in ticking for key in self.index.shown[top:top + max(1, self.size.height)])

    def layout_widths(self, width: int) -> list[int]:
        """Fixed columns as measured; a 0-width column takes the rest (maybe nothing). When the rest
        is narrower than that column's widest text, tracked columns (last first) give it the cells
        their own widest text and title leave unused: Slurm's reasons whole at 80 columns, at no
        cut of a state or node name."""
        widths = [self._widths[c.key] for c in self.columns]
        rest = width - sum(widths) - GAP * (len(widths) - 1)
        flexible = [c for c, w in zip(self.columns, widths) if not w]
        short = max((self._wanted(c) for c in flexible), default=0) - rest
        for i in reversed(range(len(widths))):
            column = self.columns[i]
            if short <= 0:
                break
            if not widths[i] or column.needs is None:
                continue
            spare = widths[i] - max(column.least, len(column.title), self._needed.get(column.key, 0))
            given = max(0, min(spare, short))
            widths[i] -= given
            rest += given
            short -= given
        return [w if w else max(0, rest) for w in widths]

    def _wanted(self, column: Column) -> int:
        return max(len(column.title), self._needed.get(column.key, 0))

    def _style(self, *parts) -> Style:
        cached = self._style_cache.get(parts)
        if cached is None:
            cached = Style.combine(Style.parse(p) if isinstance(p, str) else p for p in parts if p)
            self._style_cache[parts] = cached
        return cached

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache.clear()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            style = self._style(base, self.get_component_rich_style("task-table--header"))
            cells = [column.title for column in self.columns]
            return self._strip(cells, [""] * len(cells), width, style)
        position = int(self.scroll_y) + y - 1
        if position >= self.row_count:
            return Strip.blank(width, base)
        key = self.index.shown[position]
        if position == self.cursor:
            background = self.get_component_rich_style("task-table--cursor")
        elif position % 2:
            background = self.get_component_rich_style("task-table--even-row")
        else:
            background = None
        style = self._style(base, background)
        row = self.row(key)
        texts = [printable(column.text(row)) for column in self.columns]
        styles = ["" if column.style is None or position == self.cursor else column.style(row)
                  for column in self.columns]
        return self._strip(texts, styles, width, style)

    def _strip(self, texts: list[str], styles: list[str], width: int, base: Style) -> Strip:
        segments = []
        for column, size, text, style in zip(self.columns, self.layout_widths(width), texts, styles):
            if not size:
                continue
            cell = fit(text, size)
            if column.right and len(text) < size:
                cell = text.rjust(size)
            segments.append(Segment(cell, self._style(base, style)))
            segments.append(Segment(" " * GAP, base))
        return Strip(segments).adjust_cell_length(width, base)
