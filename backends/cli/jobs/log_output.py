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
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from backends.cli.jobs.parser import PROG
from backends.printable import printable
from backends.watch.line_screen import CutLine, same_line, shown_lines
from backends.watch.tail import PIECE, Follower, Unread, complete_end, not_read_note, stream_last_lines

KEEP = PIECE     # characters a terminal line keeps; beyond, a note says how many more `--raw` gives
POLL_SECONDS = 0.25
MAX_REST_READS = 64   # reads of what an ended task left (each up to tail.MAX_READ): 256 MiB at most

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (a status command loads this module)
if TYPE_CHECKING:
    from typing import TextIO

    from backends.watch.task_end import EndWatch, TaskEnd   # the poller: only `logs -f` loads it


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
        for line in shown_lines(_noted(path, stream_last_lines(path, n, end, whole=False)), KEEP):
            out.write(shown(line) + "\n")
    else:
        _write_pieces(stream_last_lines(path, n, end, raw=True), out)


def _noted(path: str, pieces: Iterable[tuple[str, bool]]) -> Iterator[tuple[str, bool]]:
    """The pieces, the start of a line left unread (`Unread`) said in a line of its own, how much of
    the log is above and how to page through it (`tail.not_read_note`, as the console's log pane
    says it), the line's end then shown after `…`."""
    for text, ends in pieces:
        if isinstance(text, Unread):
            yield not_read_note(text.left, path, text.read), True
            yield "…", ends
        else:
            yield text, ends


def _write_pieces(pieces: Iterable[tuple[str, bool]], out: TextIO) -> None:
    """(text, ends a line) pieces as they are: a line longer than a piece is written as it comes.

    The pieces are raw (`surrogateescape`): written to the stream's bytes, they are the log's own
    bytes, a byte that is not UTF-8 and a carriage return included (it was U+FFFD, the CR dropped)."""
    binary = getattr(out, "buffer", None)
    if binary is not None:
        out.flush()   # what was written as text goes first
    for text, ends in pieces:
        text = text + "\n" if ends else text
        if binary is not None:
            binary.write(text.encode("utf-8", "surrogateescape"))
        else:
            out.write(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))


def follow(path: str, n: int, raw: bool, out: TextIO | None = None, end: EndWatch | None = None,
           name: str = "") -> int:
    """The last `n` complete lines, then what is appended, until the task has ended (`end` says
    when: what is left of the log is read, one stderr line says how it ended, exit 0) or Ctrl-C."""
    out = out or sys.stdout
    start = complete_end(path)
    terminal = on_terminal(raw, out)
    # made before the last lines are shown: it keeps the bytes before `start` as they were, so a log
    # written anew while they print is said to start over (made after, it took the new bytes as its
    # mark and followed the new log from the old one's length)
    follower = Follower(path, start, keep=KEEP) if terminal else Follower(path, start, raw=True)
    print_last(path, n, raw, start, out)
    if not Path(path).exists() and (end is None or end.ended() is None):
        print(printable(f"{PROG}: waiting for {path}"), file=sys.stderr)
    out.flush()
    ended = _follow_on_terminal(follower, out, end) if terminal else _follow_piped(follower, out, end)
    from backends.watch.task_end import ended_text

    print(f"{PROG}: {ended_text(name or path, ended)}", file=sys.stderr, flush=True)
    return 0


def _follow_piped(follower: Follower, out: TextIO, end: EndWatch | None) -> TaskEnd:
    """Pieces, not lines: a line that never ends (a \r progress bar) is printed as it comes, not
    held (once the file is read to its end, what was read of it goes out); until the task has
    ended, then what is left."""
    said, line_open = 0, False
    while True:
        pieces = follower.read_pieces()
        if follower.restarts != said and line_open:   # the log written anew: not glued to the old bar
            _write_pieces([("", True)], out)
            line_open = False
        said = _say_restart(follower, said)
        if pieces:
            _write_pieces(pieces, out)
            out.flush()
            line_open = not pieces[-1][1]
            continue
        held = follower.give_held()   # read to the end: the line being written goes out as it is
        if held:
            _write_pieces(held, out)
            out.flush()
            line_open = True
        ended = _ended(end)
        if ended is not None:
            for pieces in _rest(follower.read_pieces):
                _write_pieces(pieces, out)
                out.flush()
            return ended
        time.sleep(POLL_SECONDS)


def _ended(end: EndWatch | None) -> TaskEnd | None:
    """Asked only once the log is read to its end: whether the task has ended (saying, on
    stderr, why that cannot be told while Slurm does not answer)."""
    if end is None:
        return None
    _say(end.notes())
    return end.ended()


def _say(notes: list[str]) -> None:
    for note in notes:
        print(printable(f"{PROG}: {note}"), file=sys.stderr, flush=True)


def _rest(read: Callable[..., list], rounds: int = MAX_REST_READS) -> Iterator[list]:
    """What the ended task left unread, one read (at most MAX_READ bytes) at a time, until nothing
    comes; then the last line without its newline, ended. Bounded, so a log something else goes on
    writing (another run's, at the same path) cannot keep `logs -f` from stopping."""
    for _ in range(rounds):
        more = read()
        if not more:
            break
        yield more
    yield read(flush=True)


def _say_restart(follower: Follower, said: int) -> int:
    """On stderr, once per restart: what follows is the log from its start again, not more of it;
    the restarts said so far."""
    if follower.restarts != said:
        print(printable(f"{PROG}: {follower.path} was truncated or written anew; following it from its start"),
              file=sys.stderr, flush=True)
    return follower.restarts


def _follow_on_terminal(follower: Follower, out: TextIO, end: EndWatch | None) -> TaskEnd:
    """Complete lines as they come, and the line still being written redrawn in place as it moves;
    until the task has ended, then what is left, the open line ended.

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
            if not lines and same_line(follower.open_line, shown_open) and end is not None:
                notes = end.notes()
                if notes and drawn:      # below the open line drawn, not over it
                    out.write("\n")
                    out.flush()
                    drawn, shown_open = 0, None
                _say(notes)
                ended = end.ended()
                if ended is not None:
                    for rest in _rest(follower.read_new):   # the open line last, ended
                        if rest:
                            drawn, shown_open = _redraw(follower, out, drawn, shown_open, rest)
                    return ended
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
    fitted = _fit(shown(open_line).expandtabs(8), out)   # a tab is up to 8 columns: the fit must count them
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


def _fit(text: str, out: TextIO) -> str:
    """The open line cut to one row of `out`'s terminal as wide as it is now (cells counted; no
    mark: it is the log's text). shutil's size took an exported `$COLUMNS` over the terminal's:
    on a narrower window the line wrapped and each redraw left a row behind."""
    import shutil

    from backends.watch.row_fit import fit_row, stream_columns  # only while a line is being redrawn
    return fit_row(text, stream_columns(out) or shutil.get_terminal_size().columns)


def _columns(text: str) -> int:
    from rich.cells import cell_len
    return cell_len(text)
