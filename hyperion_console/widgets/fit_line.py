"""One line of text that never wraps and never loses text silently: a cut shows an ellipsis.

The content (a rich Text, never markup) is kept whole, so tests and other
widgets read what was set; only drawing fits it to the width the layout gives.
"""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..shown import ELLIPSIS, shown


def fit_text(text: Text, width: int, cut_start: bool = False) -> Text:
    """`text` within `width` cells; a cut is marked with an ellipsis at the end (or the start)."""
    text = text.copy()
    text.no_wrap = True
    text.end = ""
    if width <= 0 or text.cell_len <= width:
        return text
    if not cut_start:
        text.truncate(width, overflow="ellipsis")
        return text
    tail = text[len(text.plain) - (width - 1):]
    while tail.cell_len > width - 1:
        tail = tail[1:]
    return Text(ELLIPSIS, style="dim") + tail


def wrap_text(text: Text, width: int, console, max_lines: int) -> list[Text]:
    """`text` wrapped at its spaces within `width` cells, at most `max_lines` lines: a word wider
    than the width, and the last line when more would follow, are cut with an ellipsis."""
    if width <= 0:
        return [text.copy()]
    text = text.copy()
    text.no_wrap, text.end = False, ""
    lines = list(text.wrap(console, width, overflow="fold")) or [Text()]
    if len(lines) > max_lines:
        rest = Text(" ").join(lines[max_lines - 1:])
        lines = lines[:max_lines - 1] + [fit_text(rest, width)]
    return [fit_text(line, width) for line in lines]


class FitLine(Static):
    """A one-line Static whose text is cut with an ellipsis (at the start when `cut_start`)."""

    DEFAULT_CSS = "FitLine { height: 1; }"

    def __init__(self, content: Text | str = "", *, cut_start: bool = False, **kwargs) -> None:
        kwargs.setdefault("markup", False)      # a str is shown as it is, never parsed
        super().__init__(content, **kwargs)
        self.cut_start = cut_start

    def render(self) -> Text:
        content = self.content
        text = content if isinstance(content, Text) else shown(str(content))
        return fit_text(text, self.size.width, self.cut_start)
