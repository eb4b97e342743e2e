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
from pathlib import Path

BLOCK = 64 * 1024
MAX_READ = 4 * 1024 * 1024   # per read_new call, so a fast writer cannot stall a UI tick
MAX_TAIL = 32 * 1024 * 1024  # last_lines reads at most this much (a log of \r progress bars has huge lines)
PIECE = 1024 * 1024          # stream_last_lines hands a longer line over in pieces of this size
MAX_HELD_CR = 1024 * 1024    # carriage returns it holds back (dropped if they end the line)


def _open_log(path: str | Path):
    """The log opened for reading, or None if it is missing or not a regular file.

    Opened without blocking and checked with fstat: a FIFO put at a log's path
    would block a plain open() forever, a device would never end.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


def last_lines(path: str | Path, n: int, end: int | None = None) -> list[str]:
    """The last `n` lines before byte `end` (default: end of file); [] if the file is missing.

    A final line without a newline counts as a line. At most MAX_TAIL bytes are
    read, so the first line returned may be cut at its start.
    """
    if n <= 0:
        return []
    handle = _open_log(path)
    if handle is None:
        return []
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
        return []
    if data.endswith(b"\n"):
        data = data[:-1]
    return [_decode(line) for line in data.split(b"\n")[-n:]]


def _start_of_last(handle, n: int, end: int) -> int:
    """The offset of the first byte of the last `n` lines before `end` (0 when there are fewer)."""
    if end <= 0:
        return 0
    handle.seek(end - 1)
    wanted = n + (handle.read(1) == b"\n")   # a final newline ends, not starts, a line
    position, seen = end, 0
    while position > 0:
        size = min(BLOCK, position)
        position -= size
        handle.seek(position)
        chunk = handle.read(size)
        count = chunk.count(b"\n")
        if seen + count >= wanted:
            index = len(chunk)
            for _ in range(wanted - seen):
                index = chunk.rindex(b"\n", 0, index)
            return position + index + 1
        seen += count
    return 0


def stream_last_lines(path: str | Path, n: int, end: int | None = None) -> Iterator[tuple[str, bool]]:
    """The last `n` lines before byte `end`, as (text, ends a line) pieces of at most about PIECE bytes.

    For `hyperion-jobs logs -n N`, where N may be a million lines of a
    gigabyte log: every line asked for, whole (unlike `last_lines`, no cap
    that cuts the first one), in memory bounded by PIECE whatever N and the
    line lengths. Lines are what `last_lines` gives: a final line without a
    newline counts, trailing carriage returns are dropped.
    """
    if n <= 0:
        return
    handle = _open_log(path)
    if handle is None:
        return
    with handle:
        end = os.fstat(handle.fileno()).st_size if end is None else end
        position = _start_of_last(handle, n, end)
        handle.seek(position)
        yield from _lines_in_pieces(handle, end - position)


def _lines_in_pieces(handle, remaining: int) -> Iterator[tuple[str, bool]]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    held = 0            # carriage returns ending what was given of the line: dropped if the line ends there
    open_line = False   # part of the current line was given already

    def cut(text: str, ends: bool) -> str:
        nonlocal held, open_line
        text = "\r" * held + text
        kept = text.rstrip("\r")
        held = 0 if ends else len(text) - len(kept)
        if held > MAX_HELD_CR:   # a long run of them: given, not held for ever (memory stays bounded)
            kept, held = text, 0
        open_line = not ends
        return kept

    buffer = b""
    while remaining > 0:
        data = handle.read(min(BLOCK, remaining))
        if not data:   # truncated meanwhile
            break
        remaining -= len(data)
        buffer += data
        start = 0
        while True:
            newline = buffer.find(b"\n", start)
            if newline >= 0:
                yield cut(decoder.decode(buffer[start:newline], final=True), True), True
                start = newline + 1
            elif len(buffer) - start >= PIECE:
                text = cut(decoder.decode(buffer[start:start + PIECE]), False)
                if text:
                    yield text, False
                start += PIECE
            else:
                break
        buffer = buffer[start:]
    if buffer or open_line:
        yield cut(decoder.decode(buffer, final=True), True), True


def complete_end(path: str | Path) -> int:
    """Byte offset just past the last newline (0 if none or missing): where following starts."""
    handle = _open_log(path)
    if handle is None:
        return 0
    with handle:
        position = os.fstat(handle.fileno()).st_size
        while position > 0:
            size = min(BLOCK, position)
            handle.seek(position - size)
            chunk = handle.read(size)
            index = chunk.rfind(b"\n")
            if index >= 0:
                return position - size + index + 1
            position -= size
    return 0


class Follower:
    """Reads lines appended to `path` since the last call (no threads: the caller polls).

    Starts at byte `position` (0: the whole file). A missing file gives no lines
    until it appears; a file that shrinks or is replaced (new inode) is read again
    from its start, and `restarts` counts those (a viewer clears what it showed).
    A partial last line is held back until its newline arrives.
    """

    def __init__(self, path: str | Path, position: int = 0) -> None:
        self.path = Path(path)
        self.position = position
        self._inode: int | None = None
        self._partial = b""
        self.restarts = 0
        try:
            self._inode = self.path.stat().st_ino
        except FileNotFoundError:
            self.position = 0

    @classmethod
    def from_end(cls, path: str | Path) -> "Follower":
        """Follow only what comes after the file's last complete line."""
        return cls(path, complete_end(path))

    def read_new(self, flush: bool = False) -> list[str]:
        """New complete lines; with `flush`, a pending partial line too (e.g. at the end)."""
        handle = _open_log(self.path)
        if handle is None:
            return self._flush() if flush else []
        with handle:
            info = os.fstat(handle.fileno())
            if self._inode is not None and info.st_ino != self._inode or info.st_size < self.position:
                self.position, self._partial = 0, b""
                self.restarts += 1
            self._inode = info.st_ino
            handle.seek(self.position)
            data = handle.read(min(MAX_READ, max(0, info.st_size - self.position)))
        self.position += len(data)
        pieces = (self._partial + data).split(b"\n")
        self._partial = pieces.pop()
        lines = [_decode(p) for p in pieces]
        return lines + self._flush() if flush else lines

    def _flush(self) -> list[str]:
        if not self._partial:
            return []
        line, self._partial = _decode(self._partial), b""
        return [line]
