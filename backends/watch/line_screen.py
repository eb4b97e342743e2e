"""What a terminal shows of a log line written with carriage returns: the progress bar's last state.

A progress bar (tqdm, a NeMo or Kaldi counter) redraws itself by going back to
the line's start with `\\r` and writing over what was there, so one line of the
file holds every redraw: megabytes after an hour. A terminal shows only what
the redraws left, and so do the log pane, `hyperion-jobs logs` on a
terminal and a failure group's last line. Colours and the cursor and erase
sequences of progress bars are not text: `escapes` drops them (an erase in line
after a `\r` means the redraw). `LineScreen` keeps that in at most `keep`
characters, whatever was written, in time linear in the text.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .escapes import split_open, strip_sequences

# What one-character-one-column overwriting would garble: escapes left (an OSC, a lone ESC), backspaces (Keras), tabs, and wide characters (CJK, emoji take two columns).
_NOT_PLAIN = re.compile("[\x1b\x08\t\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f"
                        "\uff00-\uff60\uffe0-\uffe6\U0001f300-\U0001faff\U00020000-\U0003fffd]")


class CutLine(str):
    """A line of which only the start is kept: `more` characters after it were dropped."""

    more: int

    def __new__(cls, text: str, more: int) -> "CutLine":
        line = super().__new__(cls, text)
        line.more = more
        return line


class LineScreen:
    """One line of a terminal: text written at a cursor that `\\r` sends back to column 0.

    Only the first `keep` columns are kept; `more` counts the columns the line
    reached beyond them. Complete CSI sequences (colour, cursor moves) are
    dropped (`escapes`); other controls are not interpreted (they are shown
    escaped), so a line without `\\r` is kept as it is, up to `keep`. A line
    holding an erase in line (``ESC[K``, ``ESC[2K``: the progress bar erases
    what it redraws over) or what overwriting by characters would garble (an
    escape left, a backspace, a tab, a wide character) shows its last redraw
    whole instead: what follows its last `\\r`, or the redraw before when that is empty.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._cells = ""
        self._cursor = 0
        self._extent = 0      # the line's width on a terminal of unbounded width
        self._plain = True
        self._redraw = ""     # the text since the last \r (at most keep + 1 characters)
        self._redraw_len = 0
        self._last = ("", 0)  # the last non-empty redraw before it, and its length
        self._open = ""       # the start of an escape sequence the next write may complete (bounded)

    def copy(self) -> "LineScreen":
        other = LineScreen(self.keep)
        other.__dict__.update(self.__dict__)
        return other

    def write(self, text: str) -> None:
        """Write `text` at the cursor, each `\\r` in it going back to the line's start.

        A sequence split between two writes is held until the next one completes it."""
        text, self._open = split_open(self._open + text)
        stripped = strip_sequences(text)
        if stripped.erases:
            self._plain = False
        self._write(stripped.text)

    def _write(self, text: str) -> None:
        if self._plain and _NOT_PLAIN.search(text):
            self._plain = False
        parts = text.split("\r")
        self._track_redraws(parts)
        self._put(self._cursor, parts[0])
        if len(parts) == 1:
            return
        # Every later part starts at column 0, so a part shows only where it reaches beyond
        # all the parts after it: walking back from the last one, each column is set once
        # (a bar that redrew itself a million times costs no million copies of the line).
        overlay, covered = "", 0
        for index in range(len(parts) - 1, 0, -1):
            width = len(parts[index])
            if width > covered:
                if covered < self.keep:
                    overlay += parts[index][covered:self.keep]
                covered = width
        self._cells = overlay + self._cells[len(overlay):]
        self._cursor = len(parts[-1])
        self._extent = max(self._extent, covered)

    def _put(self, start: int, part: str) -> None:
        if not part:
            return
        if start < self.keep:
            shown = part[:self.keep - start]
            self._cells = self._cells[:start] + shown + self._cells[start + len(shown):]
        self._cursor = start + len(part)
        self._extent = max(self._extent, self._cursor)

    def _track_redraws(self, parts: list[str]) -> None:
        """The redraw being written and the last non-empty one before it (for a line not plain)."""
        keep = self.keep + 1
        if len(parts) == 1:
            self._redraw = (self._redraw + parts[0])[:keep]
            self._redraw_len += len(parts[0])
            return
        for part in reversed(parts[1:-1]):   # the newest non-empty redraw that ended in `parts`
            if part:
                self._last = (part[:keep], len(part))
                break
        else:
            if self._redraw_len + len(parts[0]):
                self._last = ((self._redraw + parts[0])[:keep], self._redraw_len + len(parts[0]))
        self._redraw, self._redraw_len = parts[-1][:keep], len(parts[-1])

    @property
    def blank(self) -> bool:
        """Nothing was written (carriage returns and sequences alone leave the line blank; so does
        the start of a sequence not complete yet)."""
        return self._extent == 0

    def line(self, ended: bool = True) -> str:
        """What the line shows: a CutLine when it reached beyond `keep` columns.

        A sequence an `ended` line stops in the middle of is text (`printable` shows it as
        escapes); a line still being written does not show it yet: the next write may complete it."""
        if self._open and ended:
            screen = self.copy()
            screen._open = ""
            screen._write(self._open)
            return screen.line()
        if self._plain:
            text, width = self._cells, self._extent
        else:
            text, width = (self._redraw, self._redraw_len) if self._redraw_len else self._last
        more = width - self.keep
        return CutLine(text[:self.keep], more) if more > 0 else text


def same_line(line: str | None, other: str | None) -> bool:
    """Whether two shown lines look alike: equal text and equal count of characters cut
    (a CutLine compares as its text alone, and its "N more characters" note would go stale)."""
    return line == other and getattr(line, "more", 0) == getattr(other, "more", 0)


def shown_line(text: str, keep: int) -> str:
    """What a terminal shows of one whole line (a CutLine beyond `keep` columns)."""
    screen = LineScreen(keep)
    screen.write(text)
    return screen.line()


def shown_lines(pieces: Iterable[tuple[str, bool]], keep: int) -> Iterator[str]:
    """(text, ends a line) pieces, as `tail` hands them over, to the lines a terminal shows."""
    screen = LineScreen(keep)
    for text, ends in pieces:
        screen.write(text)
        if ends:
            yield screen.line()
            screen = LineScreen(keep)
