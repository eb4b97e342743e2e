"""Text of commands and paths, wrapped where a reader expects a break: at a space or after a `/`.

Textual wraps a Static at spaces only and folds a word wider than the rest of the line
anywhere: the Submit preview at 80 columns read `/tmp/exp/submi` / `t/exp/log/extract.JOB.log`,
a path split in the middle of a name. PathText breaks a line after its last space or `/` that
fits, and folds only a run of characters holding neither. The content (a rich Text, never markup)
is kept whole, so tests and other widgets read what was set; only drawing wraps it.
"""
from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from ..shown import shown

BREAK_AFTER = frozenset(" /")


def wrap_at_separators(text: Text, width: int) -> list[Text]:
    """The lines of `text` within `width` cells, each broken after a space or a `/` where one fits
    (the spaces at a break dropped), else folded at the width."""
    if width <= 0:
        return text.split("\n", allow_blank=True)
    lines: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        lines.extend(_wrap_line(line, width))
    return lines


def _wrap_line(line: Text, width: int) -> list[Text]:
    plain = line.plain
    if cell_len(plain) <= width:
        return [line]
    out: list[Text] = []
    start = 0
    while start < len(plain):
        end, cells = start, 0              # the longest piece from `start` within the width
        while end < len(plain) and cells + cell_len(plain[end]) <= width:
            cells += cell_len(plain[end])
            end += 1
        if end == len(plain):
            out.append(line[start:end])
            break
        cut = end if plain[end] == " " else next(
            (at for at in range(end, start, -1) if plain[at - 1] in BREAK_AFTER), max(end, start + 1))
        piece = line[start:cut]
        piece.rstrip()
        out.append(piece)
        start = cut
        while start < len(plain) and plain[start] == " ":
            start += 1
    return out or [line]


class PathText(Static):
    """A Static whose text wraps at spaces and after `/` (wrap_at_separators), never parsed as markup."""

    def __init__(self, content: Text | str = "", **kwargs) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(content, **kwargs)
        self._wrapped: tuple[object, int, Text] | None = None     # (the content, width, its lines)

    def _lines(self, width: int) -> Text:
        content = self.content
        if self._wrapped is not None and self._wrapped[0] is content and self._wrapped[1] == width:
            return self._wrapped[2]
        text = content if isinstance(content, Text) else shown(str(content))
        joined = Text("\n", end="").join(wrap_at_separators(text, width))
        joined.end = ""
        self._wrapped = (content, width, joined)     # the content kept: its id is not reused meanwhile
        return joined

    def render(self) -> Text:
        return self._lines(self.content_size.width)

    def get_content_height(self, container, viewport, width: int) -> int:
        if not width or not str(self.content):
            return super().get_content_height(container, viewport, width)
        return self._lines(width).plain.count("\n") + 1
