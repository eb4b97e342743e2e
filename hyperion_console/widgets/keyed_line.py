"""A line of text followed by the keys that act on it, both read whole at any width.

A head with its keys appended was cut as one line: the keys went first (`· ent…`),
and the head itself once it alone was wider than the screen. Here the head wraps at
its spaces (at most MAX_HEAD_LINES lines, the last cut with an ellipsis beyond that),
and the keys follow its last line where they fit, else take a line of their own.
"""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from .fit_line import fit_text, wrap_text

MAX_HEAD_LINES = 3     # a head of a record's values could be long: the list or table below keeps the screen


def keyed_lines(head: Text, keys: Text | None, width: int, console) -> list[Text]:
    """`head` wrapped to `width`, then `keys` after its last line when they fit, else below it."""
    lines = wrap_text(head, width, console, MAX_HEAD_LINES)
    if keys is None or width <= 0:
        return lines
    if lines[-1].cell_len + 3 + keys.cell_len <= width:
        lines[-1] = lines[-1] + Text(" · ", style="dim") + keys
    else:
        lines.append(fit_text(keys, width))
    return lines


class KeyedLine(Static):
    """`head` (never markup) and its `keys`; `content` holds the head alone, for tests and readers."""

    DEFAULT_CSS = "KeyedLine { height: auto; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(markup=False, **kwargs)
        self.head = Text()
        self.keys: Text | None = None

    def show_head(self, head: Text, keys: str | None) -> None:
        """`head`, and the `keys` hint when there is something to act on (None: no keys)."""
        self.head, self.keys = head, (Text(keys, style="dim") if keys else None)
        self.update(self.head)          # what tests and other widgets read; render() lays it out
        self.refresh(layout=True)       # the keys may move to a line of their own, or back

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(keyed_lines(self.head, self.keys, width, self.app.console))

    def render(self) -> Text:
        return Text("\n", end="").join(keyed_lines(self.head, self.keys, self.size.width, self.app.console))
