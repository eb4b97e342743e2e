"""Last lines of a log and following what is appended, without reading the whole file.

Logs of long array tasks reach gigabytes; `last_lines` seeks from the end in
blocks, and `Follower` reads only the bytes added since its last call, coping
with a file that does not exist yet, is truncated, or is replaced.
"""
from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterator
from io import BufferedReader
from pathlib import Path

from backends.fileio import size_text
from backends.shellwords import shell_quote

from .line_screen import LineScreen

BLOCK = 64 * 1024
MAX_READ = 4 * 1024 * 1024   # per read_new call, so a fast writer cannot stall a UI tick
MARK_BYTES = 64           # compared before each read: one small pread per poll
MAX_TAIL = 32 * 1024 * 1024  # last_lines reads at most this much (a log of \r progress bars has huge lines)
PIECE = 1024 * 1024          # stream_last_lines hands a longer line over in pieces of this size
MAX_HELD_CR = 1024 * 1024    # carriage returns it holds back (dropped if they end the line)
MAX_KEPT = 64 * 1024         # characters Follower.read_new keeps of one line (a viewer shows only the start)
LONG_LINE = MAX_TAIL         # stream_last_lines(whole=False) reads only the end of a line longer than this
LONG_LINE_END = 512 * 1024   # ... its last bytes so many, from the first carriage return in them


NOT_REGULAR = "not a regular file"   # the reason the pane and `hyperion-jobs logs` give
NO_FILE = "no file yet"


class NotRegularLog(Exception):
    """Something other than a regular file is at a log's path (a FIFO, a device, a folder)."""


def open_regular_log(path: str | Path) -> BufferedReader:
    """The log opened for reading; FileNotFoundError, NotRegularLog or the OSError why not.

    Opened without blocking and checked with fstat: a FIFO put at a log's path
    would block a plain open() forever, a device would never end.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularLog(str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_or_why(path: str | Path) -> tuple[BufferedReader | None, str | None]:
    """The log opened for reading, or None and why not (NO_FILE, NOT_REGULAR, the OS's reason):
    kept so a viewer can say it instead of showing an empty log."""
    try:
        return open_regular_log(path), None
    except FileNotFoundError:
        return None, NO_FILE
    except NotRegularLog:
        return None, NOT_REGULAR
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"


def open_log(path: str | Path) -> BufferedReader | None:
    """The log opened for reading, or None if it is missing, not a regular file or unreadable."""
    return _open_or_why(path)[0]


def log_problem(path: str | Path) -> str | None:
    """Why the log cannot be read now (NO_FILE, NOT_REGULAR, the OS's reason), None when it can."""
    handle, problem = _open_or_why(path)
    if handle is not None:
        handle.close()
    return problem


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


def last_lines(path: str | Path, n: int, end: int | None = None) -> list[str]:
    """The last `n` lines before byte `end` (default: end of file); [] if the file is missing.

    A final line without a newline counts as a line. At most MAX_TAIL bytes are
    read, so the first line returned may be cut at its start (`last_lines_read` says so).
    """
    return last_lines_read(path, n, end)[0]


def last_lines_read(path: str | Path, n: int, end: int | None = None) -> tuple[list[str], int]:
    """`last_lines`, and the bytes above them it left unread when its MAX_TAIL cap stopped it
    before the `n` lines' start (a line of over 32 MiB, a progress bar that never ends): the first
    line it gives is then cut at its start, or lines asked for are missing. 0 when nothing asked
    for was left out. A view says so (`not_read_note`) instead of showing the cut line as the
    log's start."""
    if n <= 0:
        return [], 0
    handle = open_log(path)
    if handle is None:
        return [], 0
    with handle:
        position = os.fstat(handle.fileno()).st_size if end is None else end
        chunks: list[bytes] = []
        newlines = 0
        stop = max(0, position - MAX_TAIL)
        while position > stop and newlines <= n:   # n + 1 newlines: a trailing one ends, not starts, a line
            size = min(BLOCK, position - stop)
            position -= size
            handle.seek(position)
            chunk = handle.read(size)
            chunks.append(chunk)
            newlines += chunk.count(b"\n")
    data = b"".join(reversed(chunks))
    if not data:
        return [], 0
    left = stop if position == stop and newlines <= n else 0   # the cap, not the lines, ended the read
    if data.endswith(b"\n"):
        data = data[:-1]
    return [_decode(line) for line in data.split(b"\n")[-n:]], left


def not_read_note(left: int, path: str | Path, read: int | None = None) -> str:
    """The line a view of a log's end shows above what it read when it left the `left` bytes
    above unread (a line longer than it reads, `last_lines_read`, `stream_last_lines`): how much,
    how much it reads (`read`: MAX_TAIL, what `last_lines_read` reads; `stream_last_lines` reads
    a line's last LONG_LINE_END, `Unread.read`), and the command that pages through the whole
    file. The console's log pane and `hyperion-jobs logs` on a terminal say it alike. `logs` said
    `41.4 MB of the log above not shown (only about its last 32 MiB are read)` of a 41.9 MB log
    whose last 512 KiB it showed."""
    return (f"… {left / 1e6:.1f} MB of the log above not shown (only about its last "
            f"{size_text(MAX_TAIL if read is None else read)} are read): less {shell_quote(os.fspath(path))}")


def empty_words(whose: str, source: str) -> str:
    """`nothing written to 4242_3's Slurm stderr file`: what `hyperion-jobs logs` and the console's
    log pane say of a log of 0 bytes (`source`: `err`, `out`, or `log`, the program's), so that an
    empty file is not read as a log that failed to load, or a command that found nothing."""
    what = {"err": "Slurm stderr file", "out": "Slurm stdout file"}.get(source, "log")
    return f"nothing written to {whose}'s {what}"


def tail_start(path: str | Path, n: int, end: int | None = None) -> int:
    """About where `last_lines(path, n, end)`'s first line starts: the bytes of the log above the
    lines a view shows, which it says it left out (0 for a missing file)."""
    handle = open_log(path)
    if handle is None:
        return 0
    with handle:
        end = os.fstat(handle.fileno()).st_size if end is None else end
        start, _ = _start_of_last(handle, n, end, longest=MAX_TAIL)
    return max(start, end - MAX_TAIL)      # last_lines reads no further back


class Unread(str):
    """An empty piece standing for the start of a line that was not read (`stream_last_lines`);
    `left`: the bytes of the log above what follows it, `read`: how much of the line's end is
    read (`not_read_note` says them)."""

    left: int
    read: int | None

    def __new__(cls, left: int = 0, read: int | None = None) -> "Unread":
        piece = super().__new__(cls, "")
        piece.left = left
        piece.read = read
        return piece


def _start_of_last(handle, n: int, end: int, longest: int | None = None) -> tuple[int, int | None]:
    """The offset of the first byte of the last `n` lines before `end` (0 when there are fewer),
    and None; with `longest` (at least BLOCK), looking back stops at a line longer than that:
    (0, where it ends)."""
    if end <= 0:
        return 0, None
    handle.seek(end - 1)
    wanted = n + (handle.read(1) == b"\n")   # a final newline ends, not starts, a line
    position, seen, line_end = end, 0, end
    while position > 0:
        size = min(BLOCK, position)
        position -= size
        handle.seek(position)
        chunk = handle.read(size)
        count = chunk.count(b"\n")
        start_of_line = position + chunk.rfind(b"\n") + 1 if count else position
        if longest is not None and line_end - start_of_line > longest:
            return 0, line_end
        if seen + count >= wanted:
            index = len(chunk)
            for _ in range(wanted - seen):
                index = chunk.rindex(b"\n", 0, index)
            return position + index + 1, None
        seen += count
        if count:
            line_end = position + chunk.find(b"\n")
    return 0, None


def _end_of_long_line(handle, line_end: int) -> tuple[int, bool]:
    """Where to read a line longer than LONG_LINE ending at `line_end` from, and whether that is
    a carriage return: a progress bar's last redraws show as they would, being drawn from the
    line's start; without one, the start of a character in its last LONG_LINE_END bytes."""
    start = max(0, line_end - LONG_LINE_END)
    handle.seek(start)
    data = handle.read(line_end - start)
    redraw = data.find(b"\r")
    if redraw >= 0:
        return start + redraw, True
    skip = 0
    while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:   # within a UTF-8 character
        skip += 1
    return start + skip, False


def stream_last_lines(path: str | Path, n: int, end: int | None = None,
                      whole: bool = True, raw: bool = False) -> Iterator[tuple[str, bool]]:
    """The last `n` lines before byte `end`, as (text, ends a line) pieces of at most about PIECE bytes.

    For `hyperion-jobs logs -n N`, where N may be a million lines of a
    gigabyte log: every line asked for, whole (unlike `last_lines`, no cap
    that cuts the first one), in memory bounded by PIECE whatever N and the
    line lengths. Lines are what `last_lines` gives: a final line without a
    newline counts, trailing carriage returns are dropped.

    `raw` (for `logs` piped or `--raw`): the bytes as written, carriage returns
    kept and a byte that is not UTF-8 a surrogate (`surrogateescape`), so that
    encoding a piece back with `surrogateescape` gives the log's own bytes (a
    last line without its newline is given as not ending a line: none is added).

    Not `whole` (what a terminal shows of them): a line longer than LONG_LINE
    is the first one given, read only from its end (`_end_of_long_line`), as a
    progress bar that printed for days is seen by its last redraw: reading all
    of it took 11 s per GB. Its first piece is an `Unread` when what is given
    does not start at a carriage return.
    """
    if n <= 0:
        return
    handle = open_log(path)
    if handle is None:
        return
    with handle:
        end = os.fstat(handle.fileno()).st_size if end is None else end
        position, long_line_end = _start_of_last(handle, n, end, None if whole else LONG_LINE)
        if long_line_end is not None:
            position, redrawn = _end_of_long_line(handle, long_line_end)
            if not redrawn:
                yield Unread(position, LONG_LINE_END), False
        handle.seek(position)
        yield from _lines_in_pieces(handle, end - position, raw)


def _lines_in_pieces(handle, remaining: int, raw: bool = False) -> Iterator[tuple[str, bool]]:
    splitter = _Splitter(raw)
    while remaining > 0:
        data = handle.read(min(BLOCK, remaining))
        if not data:   # truncated meanwhile
            break
        remaining -= len(data)
        yield from splitter.feed(data)
    yield from splitter.end()


class _Splitter:
    """Bytes in, (text, ends a line) pieces out; what it holds of an open line stays under PIECE bytes.

    One splitter for `stream_last_lines` and `Follower`: a line longer than
    PIECE (a `\r` progress bar, a file of NULs) is handed over in pieces as it
    comes instead of being held until its newline, which may never come.
    Trailing carriage returns of a line are dropped, as `last_lines` does.
    `raw`: the bytes as they are (for a pipe): every carriage return kept, and a
    byte that is not UTF-8 decoded as a surrogate (`surrogateescape`), not U+FFFD.
    """

    def __init__(self, raw: bool = False) -> None:
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape" if raw else "replace")
        self._buffer = b""
        self._held_cr = 0        # carriage returns ending what was given of the line: dropped if it ends there
        self._open_line = False  # part of the current line was given already

    @property
    def held(self) -> int:
        """Bytes held back of the open line (under PIECE + MAX_HELD_CR)."""
        return len(self._buffer) + self._held_cr

    def feed(self, data: bytes) -> list[tuple[str, bool]]:
        """The pieces `data` completes: every line it ends, and whole PIECE-sized parts of the open one."""
        buffer, start, pieces = self._buffer + data, 0, []
        while True:
            newline = buffer.find(b"\n", start)
            if newline >= 0:
                pieces.append((self._cut(self._decoder.decode(buffer[start:newline], final=True), True), True))
                start = newline + 1
            elif len(buffer) - start >= PIECE:
                text = self._cut(self._decoder.decode(buffer[start:start + PIECE]), False)
                if text:
                    pieces.append((text, False))
                start += PIECE
            else:
                break
        self._buffer = buffer[start:]
        return pieces

    def give_held(self) -> list[tuple[str, bool]]:
        """What is held of the open line, handed over as a piece that does not end it (a follower
        that has read to the end of the file: a `\r` progress bar's bytes are printed as they come,
        not once a piece of them has gathered). A UTF-8 sequence cut short stays in the decoder."""
        if not self._buffer:
            return []
        text, self._buffer = self._decoder.decode(self._buffer), b""
        text = self._cut(text, False)
        return [(text, False)] if text else []

    @property
    def open(self) -> bool:
        """Part of a line was fed and its newline has not come yet."""
        return bool(self._buffer or self._held_cr or self._open_line)

    def peek(self) -> str:
        """What is held of the open line, decoded, without taking it (so a viewer can show it)."""
        state = self._decoder.getstate()
        text = self._decoder.decode(self._buffer)
        self._decoder.setstate(state)
        return "\r" * min(1, self._held_cr) + text

    def end(self) -> list[tuple[str, bool]]:
        """The open line as ended (end of the range read, or a flush)."""
        if not (self._buffer or self._open_line):
            return []
        text, self._buffer = self._decoder.decode(self._buffer, final=True), b""
        if self._raw:     # the bytes as written: a last line without its newline gets none added
            self._open_line = False
            return [(text, False)] if text else []
        return [(self._cut(text, True), True)]

    def _cut(self, text: str, ends: bool) -> str:
        if self._raw:
            self._open_line = not ends
            return text
        text = "\r" * self._held_cr + text
        kept = text.rstrip("\r")
        self._held_cr = 0 if ends else len(text) - len(kept)
        if self._held_cr > MAX_HELD_CR:   # a long run of them: given, not held for ever (memory stays bounded)
            kept, self._held_cr = text, 0
        self._open_line = not ends
        return kept


def complete_end(path: str | Path) -> int:
    """Where following starts: just past the last newline, looked for in the last MAX_TAIL bytes.

    0 for a missing file or one with no newline at all. When the last MAX_TAIL
    bytes hold no newline (a 600 MB progress bar, a sparse file), the end of
    the file: following from the line's start would mean reading it all.
    """
    handle = open_log(path)
    if handle is None:
        return 0
    with handle:
        size = position = os.fstat(handle.fileno()).st_size
        stop = max(0, size - MAX_TAIL)
        while position > stop:
            length = min(BLOCK, position - stop)
            handle.seek(position - length)
            index = handle.read(length).rfind(b"\n")
            if index >= 0:
                return position - length + index + 1
            position -= length
    return 0 if stop == 0 else size


class Follower:
    """Reads what is appended to `path` since the last call (no threads: the caller polls).

    Starts at byte `position` (0: the whole file). A missing file gives nothing
    until it appears; a file that shrinks or is replaced (new inode, or the same
    inode reused: the bytes just before `position` are not the ones read) is read
    again from its start, and `restarts` counts those (a viewer clears what it showed).
    `problem` says why the path cannot be read (NO_FILE, NOT_REGULAR, ...), None
    when it can. Memory stays bounded whatever the line lengths: `read_pieces`
    hands a long line over in pieces, `read_new` keeps what a terminal shows of
    a line in at most `keep` characters (a viewer showing fewer passes its own
    width: lines waiting for it stay small), and `open_line` what it shows of
    the line still being written.
    """

    def __init__(self, path: str | Path, position: int = 0, keep: int = MAX_KEPT, raw: bool = False) -> None:
        self.path = Path(path)
        self.raw = raw            # read_pieces gives the bytes as they are (see _Splitter)
        self.position = position
        self.keep = keep
        self._inode: int | None = None
        self._mark = b""          # the last bytes read, which must still stand before `position`
        self.restarts = 0
        self.problem: str | None = None
        self._reset()
        try:
            self._inode = self.path.stat().st_ino
        except OSError:
            self.position = 0
        if self.position:
            handle, _ = _open_or_why(self.path)
            if handle is not None:
                with handle:
                    start = max(0, self.position - MARK_BYTES)
                    self._mark = os.pread(handle.fileno(), self.position - start, start)

    def _reset(self) -> None:
        self._splitter = _Splitter(self.raw)
        self._screen = LineScreen(self.keep)   # read_new: what a terminal shows of the open line

    @property
    def held(self) -> int:
        """What is held of the open line: bytes not yet split plus characters kept (bounded)."""
        return self._splitter.held + len(self._screen.line())

    @classmethod
    def from_end(cls, path: str | Path) -> "Follower":
        """Follow only what comes after the file's last complete line."""
        return cls(path, complete_end(path))

    def read_pieces(self, flush: bool = False) -> list[tuple[str, bool]]:
        """What was appended, as (text, ends a line) pieces; with `flush`, the open line ended too.

        A line shorter than PIECE comes whole once its newline arrives; a longer
        one in pieces as it grows (for `hyperion-jobs logs -f`: whole, in bounded memory).
        """
        handle, self.problem = _open_or_why(self.path)
        if handle is None:
            return self._splitter.end() if flush else []
        with handle:
            info = os.fstat(handle.fileno())
            if (self._inode is not None and info.st_ino != self._inode or info.st_size < self.position
                    or not self._mark_holds(handle.fileno())):
                self.position, self._mark = 0, b""
                self._reset()
                self.restarts += 1
            self._inode = info.st_ino
            handle.seek(self.position)
            data = handle.read(min(MAX_READ, max(0, info.st_size - self.position)))
        self.position += len(data)
        if data:
            self._mark = (self._mark + data[-MARK_BYTES:])[-MARK_BYTES:]
        pieces = self._splitter.feed(data)
        return pieces + self._splitter.end() if flush else pieces

    def give_held(self) -> list[tuple[str, bool]]:
        """The bytes read of the line still being written, as a piece that does not end it; for a
        raw reader that has caught up (`logs -f` piped or `--raw`: `tail -f` prints a progress bar as
        it comes; held until its newline or PIECE, a bar of 50-byte redraws showed nothing for minutes)."""
        return self._splitter.give_held()

    def unread(self) -> int:
        """Bytes the file holds beyond what was read (0 when it cannot be looked at).

        A viewer that shows only the last lines asks this before reading: a log written
        faster than it splits lines (20 MB of short lines in a second) is cheaper to open
        again at its end than to read through, which took a core for minutes."""
        try:
            info = os.stat(self.path)
        except OSError:
            return 0
        # a folder or device put at the path is no log to skip into (read_new says what it is)
        return max(0, info.st_size - self.position) if stat.S_ISREG(info.st_mode) else 0

    def _mark_holds(self, fd: int) -> bool:
        """Whether the bytes before `position` are still the ones read last: a log removed and
        written anew often gets the freed inode back, and at least as many bytes."""
        if not self._mark:
            return True
        return os.pread(fd, len(self._mark), self.position - len(self._mark)) == self._mark

    def read_new(self, flush: bool = False) -> list[str]:
        """New complete lines as a terminal shows them; with `flush`, a pending partial line too.

        A progress bar's line is its last redraw (`line_screen`); a line wider
        than `keep` characters is a CutLine of its start, `more` saying how much
        was dropped (for a viewer that shows only the start anyway).
        """
        lines: list[str] = []
        for text, ends in self.read_pieces(flush):
            self._screen.write(text)
            if ends:
                lines.append(self._screen.line())
                self._screen = LineScreen(self.keep)
        return lines

    @property
    def open_line(self) -> str | None:
        """What a terminal shows now of the line still being written (a progress bar), None without one.

        Read after `read_new`: the bytes read of a line whose newline has not come.
        """
        if not self._splitter.open:
            return None
        screen = self._screen.copy()
        screen.write(self._splitter.peek())
        return None if screen.blank else screen.line(ended=False)
