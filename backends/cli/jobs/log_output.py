"""How `hyperion-jobs logs` writes a log to stdout: as the bytes when piped, as a terminal shows them on one.

Piped or with `--raw`, a file or `grep` gets the bytes the task wrote, a line
longer than a piece written as it comes (memory stays bounded). On a terminal
each line is what a terminal would have shown the task's user: a progress bar
is its last redraw (`line_screen`), colours and cursor sequences are dropped
(`escapes`: the text, not `\\x1b[32m`), other controls are escapes (an OSC 52 in
a log must not write the clipboard); while following, the line still being written
is drawn and redrawn in place, with no control code of the log's own.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from pathlib import Path

from backends.cli.jobs.parser import PROG
from backends.printable import printable
from backends.watch.line_screen import CutLine, same_line, shown_lines
from backends.watch.tail import LONG_LINE, PIECE, Follower, Unread, complete_end, stream_last_lines

KEEP = PIECE     # characters a terminal line keeps; beyond, a note says how many more `--raw` gives
UNREAD = f"(the start of a line of over {LONG_LINE >> 20} MiB not read; --raw prints it) …"
POLL_SECONDS = 0.25

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (a status command loads this module)
if TYPE_CHECKING:
    from typing import TextIO


def on_terminal(raw: bool, out: TextIO) -> bool:
    return not raw and out.isatty()


def shown(line: str) -> str:
    """One line for a terminal: escaped, and cut with a note when it was wider than KEEP."""
    text = printable(line, layout=True)
    if isinstance(line, CutLine):
        text += f" … ({line.more} more characters; --raw prints them)"
    return text


def print_last(path: str, n: int, raw: bool, end: int | None = None, out: TextIO | None = None) -> None:
    """Every one of the last `n` lines (before byte `end`), in memory bounded whatever their length;
    on a terminal, no further back than a line longer than LONG_LINE, shown by its end."""
    out = out or sys.stdout
    if on_terminal(raw, out):   # a line that never ends is read only as far back as its end shows
        pieces = ((UNREAD if isinstance(text, Unread) else text, ends)
                  for text, ends in stream_last_lines(path, n, end, whole=False))
        for line in shown_lines(pieces, KEEP):
            out.write(shown(line) + "\n")
    else:
        _write_pieces(stream_last_lines(path, n, end), out)


def _write_pieces(pieces: Iterable[tuple[str, bool]], out: TextIO) -> None:
    """(text, ends a line) pieces as they are: a line longer than a piece is written as it comes."""
    for text, ends in pieces:
        out.write(text + "\n" if ends else text)


def follow(path: str, n: int, raw: bool, out: TextIO | None = None) -> int:
    """The last `n` complete lines, then what is appended, until interrupted."""
    out = out or sys.stdout
    end = complete_end(path)
    terminal = on_terminal(raw, out)
    # made before the last lines are shown: it keeps the bytes before `end` as they were, so a log
    # written anew while they print is said to start over (made after, it took the new bytes as its
    # mark and followed the new log from the old one's length)
    follower = Follower(path, end, keep=KEEP) if terminal else Follower(path, end)
    print_last(path, n, raw, end, out)
    if not Path(path).exists():
        print(printable(f"{PROG}: waiting for {path}"), file=sys.stderr)
    out.flush()
    if terminal:
        return _follow_on_terminal(follower, out)
    said = 0
    while True:   # pieces, not lines: a line that never ends (a \r progress bar) is printed, not held
        pieces = follower.read_pieces()
        said = _say_restart(follower, said)
        if pieces:
            _write_pieces(pieces, out)
            out.flush()
        else:
            time.sleep(POLL_SECONDS)


def _say_restart(follower: Follower, said: int) -> int:
    """On stderr, once per restart: what follows is the log from its start again, not more of it;
    the restarts said so far."""
    if follower.restarts != said:
        print(printable(f"{PROG}: {follower.path} was truncated or written anew; following it from its start"),
              file=sys.stderr, flush=True)
    return follower.restarts


def _follow_on_terminal(follower: Follower, out: TextIO) -> int:
    """Complete lines as they come, and the line still being written redrawn in place as it moves.

    The redraw is a carriage return and the new text padded over the old, cut
    to the terminal's width so it never wraps (a return goes back only to the
    start of the last row).
    """
    drawn, said = 0, 0    # columns of the open line on screen; restarts said
    shown_open: str | None = None
    try:
        while True:
            lines = follower.read_new()
            if follower.restarts != said:   # said before the new log's lines: they are not more of the old
                if drawn:                   # below the open line drawn, not over it
                    out.write("\n")
                    drawn, shown_open = 0, None
                out.flush()
                said = _say_restart(follower, said)
            drawn, shown_open = _redraw(follower, out, drawn, shown_open, lines)
    finally:
        if drawn:       # the prompt after Ctrl-C goes below the open line, not over it
            out.write("\n")
            out.flush()


def _redraw(follower: Follower, out: TextIO, drawn: int, shown_open: str | None,
            lines: list[str]) -> tuple[int, str | None]:
    """One poll's new `lines` and the open line written over the one drawn; (its columns, it)."""
    open_line = follower.open_line
    if not lines and same_line(open_line, shown_open):
        time.sleep(POLL_SECONDS)
        return drawn, shown_open
    text = "".join(_over(shown(line), drawn if i == 0 else 0) + "\n" for i, line in enumerate(lines))
    if lines:
        drawn = 0
    if open_line is None:
        text += _over("", drawn) + "\r" if drawn else ""   # it went (a truncated log): blanked
        return _write(out, text, 0, None)
    fitted = _fit(shown(open_line).expandtabs(8))   # a tab is up to 8 columns: the fit must count them
    return _write(out, text + _over(fitted, drawn), _columns(fitted), open_line)


def _write(out: TextIO, text: str, drawn: int, open_line: str | None) -> tuple[int, str | None]:
    out.write(text)
    out.flush()
    return drawn, open_line


def _over(text: str, drawn: int) -> str:
    """`text` written over an open line of `drawn` columns (nothing to cover: as it is)."""
    if not drawn:
        return text
    return "\r" + text + " " * max(0, drawn - _columns(text))


def _fit(text: str) -> str:
    import shutil

    from rich.cells import set_cell_size  # only while a line is being redrawn
    width = max(1, shutil.get_terminal_size().columns - 1)
    return set_cell_size(text, width) if _columns(text) > width else text


def _columns(text: str) -> int:
    from rich.cells import cell_len
    return cell_len(text)
