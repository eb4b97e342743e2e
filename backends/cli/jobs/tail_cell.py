"""A table cell that, when narrower than its text, keeps the end: a log path's file name.

Rich cuts a cell on the right (`/home/me/recipes/v1/e…`), which drops the one
part of a log path that tells the tasks apart. `TailCell` cuts on the left
instead (`…/log/make_feats.13.log`) and never wraps, so a row stays one line.
"""
from __future__ import annotations

from rich.cells import cell_len, get_character_cell_size
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

ELLIPSIS = "…"
MIN_WIDTH = 12   # the cell gives up columns to the others down to this many


def keep_tail(text: str, width: int) -> str:
    """`text` if it fits in `width` cells, else ``…`` and as much of its end as fits."""
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    room, kept = width - 1, []
    for char in reversed(text):
        size = get_character_cell_size(char)
        if size > room:
            break
        room -= size
        kept.append(char)
    return ELLIPSIS + "".join(reversed(kept))


class TailCell:
    """Plain text (never markup) shown whole when it fits, else by its end."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        full = cell_len(self.text)
        return Measurement(min(full, MIN_WIDTH), full)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(keep_tail(self.text, options.max_width), no_wrap=True, overflow="crop")
