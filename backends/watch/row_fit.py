"""One line cut to one row of a terminal, for a line redrawn in place.

`\\r\\x1b[K` clears only the row the cursor is on: a line wider than the terminal wraps, and each
redraw left its first rows behind. `fit_row` cuts such a line to the row, counting terminal cells
(a CJK character takes two) and leaving the last column free (some terminals wrap on writing it).
A line made of parts keeps the ones that matter longest: hyperion-submit's progress line keeps its
counts and its growing age and cuts the error text between them, so that a narrow terminal still
sees the line change each second.
"""
from __future__ import annotations

import os
from typing import Sequence

# (text, keep) or (text, keep, whole): the parts with the least keep are cut first; a whole one
# (`for 40 s`) is left out rather than cut.
Part = "tuple[str, int] | tuple[str, int, bool]"


def stream_columns(stream: object) -> int | None:
    """The width of the terminal `stream` writes to, asked now (it may have been resized); None when
    it has none. Never `$COLUMNS`: exported once, it stays what it was when the window is narrowed."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or None   # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):   # no fileno (a StringIO), not a terminal, closed
        return None


def fit_row(parts: str | Sequence[Part], columns: int | None, mark: str = "") -> str:
    """`parts` joined, cut to `columns` - 1 cells (None or 0: the width is not known, as they are).

    A plain string is one part, cut at its end. Otherwise the part with the least keep gives cells
    first (of equal ones the later), cut at its end and ended with `mark`, or left out for `mark`
    alone when no text of it fits or it is whole; a mark right after a mark is written once. When the parts
    that are left are still too wide, the whole row is cut at its end."""
    from rich.cells import cell_len   # rich: a dependency (watch and the console draw with it)

    if not columns or columns < 1:
        return parts if isinstance(parts, str) else "".join(part[0] for part in parts)
    width = max(1, columns - 1)
    if isinstance(parts, str):
        return _cut(parts, width, mark, cell_len)
    texts = [part[0] for part in parts]
    cut = [False] * len(texts)
    order = sorted(range(len(texts)), key=lambda i: (parts[i][1], -i))
    for i in order:
        over = cell_len(_joined(texts, cut, mark)) - width
        if over <= 0:
            break
        room = cell_len(texts[i]) - over - cell_len(mark)   # the cells this part's text keeps
        whole = len(parts[i]) > 2 and parts[i][2]
        texts[i], cut[i] = ("" if whole else _prefix(texts[i], max(0, room), cell_len)), True
    return _cut(_joined(texts, cut, mark), width, mark, cell_len)


def _joined(texts: list[str], cut: list[bool], mark: str) -> str:
    row = ""
    for text, marked in zip(texts, cut):
        row += text
        if marked and (text or not row.endswith(mark)):   # a left-out part after a mark: one mark
            row += mark
    return row


def _cut(text: str, width: int, mark: str, cell_len) -> str:
    """`text` if it fits in `width` cells, else cut at its end to fit with `mark` after it."""
    if cell_len(text) <= width:
        return text
    return _prefix(text, max(0, width - cell_len(mark)), cell_len) + mark


def _prefix(text: str, cells: int, cell_len) -> str:
    """The start of `text` `cells` cells wide (a wide character cut in two: a space instead)."""
    if cell_len(text) <= cells:
        return text
    from rich.cells import set_cell_size

    return set_cell_size(text, cells)
