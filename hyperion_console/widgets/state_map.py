"""The array state map: one cell per task, in record order, coloured by state and lettered.

Like the checkpoint coverage map, but for the tasks of a submission, and a Line
API widget: a 100k-task array is 1300 lines of 78 cells, and only those on
screen are drawn. Each cell carries its state's symbol (C, F, R, P, ...), so the
legend and the map read without colour. A small array shows each task's
value in its cell; a big one a gutter with the value of each line's first task. Enter (or a click) on a cell posts `StateMap.Chosen`: the
Jobs screen shows that task in the table.
"""
from __future__ import annotations

from typing import Mapping

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..task_index import Key, TaskIndex
from .states import cell_style, ordered, symbol_of


def legend_text(counts: Mapping[str, int]) -> Text:
    """`C COMPLETED 20  F FAILED 2 ...`: symbol in its cell colour, then name and count."""
    text = Text()
    for name in ordered(n for n, count in counts.items() if count):
        text.append(f" {symbol_of(name)} ", style=cell_style(name))
        text.append(f" {name} {counts[name]}  ")
    text.rstrip()
    return text


def wide_cell(symbol: str, label: str, digits: int) -> str:
    """``C   7``, ``C 999``, ``C1000`` no more: a space always parts the symbol from a value as wide
    as the widest (`C 999` beside `C1000 F1001` read as one run of letters and digits)."""
    return f"{symbol} {label:>{digits}}"


def wide_cell_width(digits: int) -> int:
    """A wide cell's cells with the gap after it: symbol, space, `digits`, space."""
    return digits + 3


class StateMap(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"state-map--gutter", "state-map--cursor"}
    DEFAULT_CSS = """
    StateMap {
        background: $surface;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        & > .state-map--gutter { color: $text-muted; }
        & > .state-map--cursor { text-style: bold reverse; }
        &:focus > .state-map--gutter { color: $accent; }
    }
    """
    BINDINGS = [
        Binding("left", "move(-1)", "Left", show=False),
        Binding("right", "move(1)", "Right", show=False),
        Binding("up", "move_lines(-1)", "Up", show=False),
        Binding("down", "move_lines(1)", "Down", show=False),
        Binding("pageup", "move_pages(-1)", "Page up", show=False),
        Binding("pagedown", "move_pages(1)", "Page down", show=False),
        Binding("home,g", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
        Binding("enter", "choose", "Show task", show=False),
    ]

    class Moved(Message):
        """The map's cursor is on this task."""

        def __init__(self, key: Key | None) -> None:
            super().__init__()
            self.key = key

    class Chosen(Message):
        """The user picked this task's cell (enter or click)."""

        def __init__(self, key: Key) -> None:
            super().__init__()
            self.key = key

    def __init__(self, index: TaskIndex | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.index = index or TaskIndex()
        self.cursor = 0

    # -- geometry ---------------------------------------------------------------
    @property
    def digits(self) -> int:
        """The widest label: the lowest value too (`-5` beside `3`), and a task's place in the record
        where it has no value."""
        values = self.index.by_value
        placed = len(str(len(self.index))) if len(values) < len(self.index) else 1
        return max(placed, *(len(str(v)) for v in (min(values), max(values)))) if values else placed

    @property
    def wide(self) -> bool:
        """Small arrays get a cell per task with its value in it (`C 12`), while all fit on screen;
        bigger ones one character per task, the value of each line's first task in a gutter."""
        region = self.scrollable_content_region
        per_line = max(1, region.width // wide_cell_width(self.digits))
        return -(-len(self.index) // per_line) <= max(1, region.height)

    @property
    def cell_width(self) -> int:
        return wide_cell_width(self.digits) if self.wide else 1

    @property
    def gutter_width(self) -> int:
        return 0 if self.wide else self.digits + 1

    @property
    def per_line(self) -> int:
        return max(1, (self.scrollable_content_region.width - self.gutter_width) // self.cell_width)

    @property
    def line_count(self) -> int:
        return -(-len(self.index) // self.per_line)

    def refresh_map(self) -> None:
        """The tasks or their states changed."""
        self.virtual_size = Size(self.size.width, self.line_count)
        self.cursor = min(self.cursor, max(0, len(self.index) - 1))
        self.refresh()

    def on_resize(self) -> None:
        self.refresh_map()
        self._scroll_cursor_into_view()

    # -- cursor ------------------------------------------------------------------
    def selected_key(self) -> Key | None:
        keys = self.index.keys
        return keys[self.cursor] if keys else None

    def move_to_key(self, key: Key | None) -> None:
        if key is None or key not in self.index.tasks:
            return
        self._place(self.index.keys.index(key))

    def _place(self, position: int) -> None:
        count = len(self.index)
        self.cursor = max(0, min(position, count - 1))
        self._scroll_cursor_into_view()
        self.refresh()
        self.post_message(self.Moved(self.selected_key()))

    def _scroll_cursor_into_view(self) -> None:
        line = self.cursor // self.per_line
        top, height = int(self.scroll_y), max(1, self.scrollable_content_region.height)
        if line < top:
            self.scroll_to(y=line, animate=False, force=True)
        elif line >= top + height:
            self.scroll_to(y=line - height + 1, animate=False, force=True)

    def action_move(self, step: int) -> None:
        self._place(self.cursor + step)

    def action_move_lines(self, lines: int) -> None:
        self._place(self.cursor + lines * self.per_line)

    def action_move_pages(self, pages: int) -> None:
        height = max(1, self.scrollable_content_region.height)
        self._place(self.cursor + pages * height * self.per_line)

    def action_first(self) -> None:
        self._place(0)

    def action_last(self) -> None:
        self._place(len(self.index) - 1)

    def action_choose(self) -> None:
        key = self.selected_key()
        if key is not None:
            self.post_message(self.Chosen(key))

    def on_click(self, event: events.Click) -> None:
        column = (event.x - self.gutter_width) // self.cell_width
        if event.x < self.gutter_width or column >= self.per_line:
            return
        position = (int(self.scroll_y) + event.y) * self.per_line + column
        if position < len(self.index):
            self._place(position)
            self.action_choose()

    # -- drawing -------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        per_line, gutter, wide = self.per_line, self.gutter_width, self.wide
        start = (int(self.scroll_y) + y) * per_line
        keys, names = self.index.keys, self.index.names
        if start >= len(keys):
            return Strip.blank(width, base)
        segments = []
        if gutter:
            segments.append(Segment(self._label(start).rjust(gutter - 1) + " ",
                                    base + self.get_component_rich_style("state-map--gutter")))
        cursor_style = self.get_component_rich_style("state-map--cursor")
        run, run_style = [], None
        for position in range(start, min(start + per_line, len(keys))):
            name = names[keys[position]]
            style = Style.parse(cell_style(name))
            if position == self.cursor:
                style = style + cursor_style
            if wide:
                segments.append(Segment(wide_cell(symbol_of(name), self._label(position), self.digits), style))
                segments.append(Segment(" ", base))
                continue
            if style != run_style and run:
                segments.append(Segment("".join(run), run_style))
                run = []
            run_style = style
            run.append(symbol_of(name))
        if run:
            segments.append(Segment("".join(run), run_style))
        return Strip(segments).adjust_cell_length(width, base)

    def _label(self, position: int) -> str:
        """A task's value (its place in the record when it has none)."""
        value = self.index.tasks[self.index.keys[position]].value
        return str(position + 1) if value is None else str(value)
