"""Text that came from a file, a record, a path, a command or the user, made safe to show.

Two dangers, one place: control sequences (an OSC 52 in a log writes the
clipboard, OSC 0 the window title, CSI clears the screen) and Rich/Textual
markup (`[/]` in a path crashes a markup parser). `backends.printable` spells
every control and bidi character as a visible escape; wrapping the result in
`rich.text.Text` (never a markup string) shows brackets literally. Every widget
and every notification of the console goes through these helpers.
"""
from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.text import Text

from backends.printable import printable

ELLIPSIS = "…"


def shown(text: object, style: str = "", *, layout: bool = False) -> Text:
    """`text` as a Text that shows controls as escapes and markup as the characters it is."""
    return Text(printable(str(text), layout=layout), style=style)


def fit(text: str, width: int) -> str:
    """`text` padded or cut to exactly `width` cells; a cut ends in an ellipsis."""
    if width <= 0:
        return ""
    return set_cell_size(cut(text, width), width)


def cut(text: str, width: int) -> str:
    """`text` as it is if it takes at most `width` cells, else cut to `width` with an ellipsis."""
    if width <= 0:
        return ""
    return text if cell_len(text) <= width else set_cell_size(text, width - 1) + ELLIPSIS


def fit_left(text: str, width: int) -> str:
    """Like `fit`, but a cut keeps the end (a path's file name matters more than its root)."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    tail = text[-width:]
    while cell_len(tail) > width - 1:
        tail = tail[1:]
    return set_cell_size(ELLIPSIS + tail, width)


def tell(widget, message: object, *, title: object = "", severity: str = "information",
         timeout: float | None = None) -> None:
    """A notification whose message and title are shown as plain, printable text.

    `markup=False`: a record holding `[/]` would otherwise crash the toast.
    Thread-safe like `notify` itself.
    """
    widget.notify(printable(str(message)), title=printable(str(title)), severity=severity,
                  timeout=timeout, markup=False)
