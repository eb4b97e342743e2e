"""Reading files that may be hostile, and writing files that follow the umask.

Everything the core reads from disk (site YAML, records, local results) may
have been put there by someone else or be something other than a file: a FIFO
nobody writes to (an ordinary ``open`` waits forever), ``/dev/zero`` (a read
never ends), a 1 GB sparse file, a directory or a symlink loop. `read_bounded`
opens without blocking, checks what it opened with ``fstat`` and reads at most
a cap, so each of those is one `UnreadableFile` with a plain reason.

Files the core writes follow the user's umask like a plain ``open()`` would:
``tempfile.mkstemp`` always creates 0600 and a rewritten file keeps its old
mode, so writers call `umask_mode` and ``fchmod``.
"""
from __future__ import annotations

import errno
import os
import select
import stat
import time
from pathlib import Path

PIPE_TIMEOUT = 10.0  # seconds a pipe may take to deliver its text (process substitution is instant)


class UnreadableFile(OSError):
    """A file that cannot or must not be read; str() is one line without the path."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def current_umask() -> int:
    """The process umask, read without changing it (os.umask's set-and-restore races threads)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def umask_mode(executable: bool = False) -> int:
    """The mode ``open()`` (0666) or ``mkdir`` (0777) would give a new file under the umask."""
    return (0o777 if executable else 0o666) & ~current_umask()


def kind_of_mode(mode: int) -> str:
    """What a file of this st_mode is, as a message names it: "a FIFO", "a character device", ..."""
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a file")):
        if test(mode):
            return name
    return "not a regular file"


def kind_of(path: str | Path) -> str:
    """What is at `path` itself (a symlink is not followed): "a FIFO", "a directory", ..."""
    return kind_of_mode(os.lstat(path).st_mode)


_NOT_REGULAR = {errno.ELOOP: "a symlink", errno.EISDIR: "a directory", errno.ENXIO: "a FIFO"}


def open_regular(path: str | Path, flags: int, mode: int = 0o666) -> int:
    """A descriptor of the regular file at `path` opened with `flags` (O_CREAT creates it), never
    through a symlink and never blocking on a FIFO: a writer would write into whatever a symlink
    names, and hang on a FIFO. UnreadableFile ("a symlink", "a FIFO", ...) for anything else there;
    other OSErrors (no right, a full disk) as they come."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as err:
        if err.errno not in _NOT_REGULAR:
            raise
        raise UnreadableFile(_NOT_REGULAR[err.errno]) from None
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise UnreadableFile(kind_of_mode(kind))
    return fd


def _os_reason(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop?)"
    return err.strerror or str(err)


def directory_problem(path: str | Path) -> str | None:
    """Why `path` is no directory (``no such directory: PATH``, ``not a directory: PATH`` or
    ``cannot read PATH: <reason>``), None when it is one. One stat, not Path.exists()/is_dir():
    Python 3.11's pathlib swallows only ENOENT, ENOTDIR, EBADF and ELOOP, so a name too long
    (ENAMETOOLONG) raised out of them as a traceback."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):   # ValueError: a NUL byte
        return f"no such directory: {path}"
    except OSError as err:
        return f"cannot read {path}: {_os_reason(err)}"
    return None if stat.S_ISDIR(info.st_mode) else f"not a directory: {path}"


def size_text(size: int) -> str:
    """`size` in bytes, KiB or MiB to one decimal, rounded up: rounded down, a file just over a
    1 MiB cap was "1 MiB, larger than the 1 MiB allowed"."""
    if size < 1024:
        return f"{size} bytes"
    unit, name = (1024, "KiB") if size < 1024 ** 2 else (1024 ** 2, "MiB")
    tenths = -(-size * 10 // unit)
    return f"{tenths // 10} {name}" if tenths % 10 == 0 else f"{tenths / 10:.1f} {name}"


def read_bounded(path: str | Path, cap: int, *, allow_pipe: bool = False,
                 timeout: float = PIPE_TIMEOUT) -> bytes:
    """The bytes of `path` if it is a regular file (or, with `allow_pipe`, a pipe) of at most `cap` bytes.

    Raises UnreadableFile otherwise, never blocks on a FIFO without a writer
    and never reads more than ``cap + 1`` bytes. A pipe (``--cfg <(cat f)``)
    is read until its writer closes it, for at most `timeout` seconds.
    """
    return read_bounded_stat(path, cap, allow_pipe=allow_pipe, timeout=timeout)[0]


def read_bounded_stat(path: str | Path, cap: int, *, allow_pipe: bool = False,
                      timeout: float = PIPE_TIMEOUT, follow_symlinks: bool = True) -> tuple[bytes, os.stat_result]:
    """`read_bounded`, and the fstat of what was read (its mtime is the file's as read).

    Without `follow_symlinks` a symlink is refused like a FIFO ("a symlink, not a regular
    file"), also one swapped in after the check: where files are counted, a link to
    another file (or out of the tree) would count that file again.
    """
    nofollow = 0 if follow_symlinks else os.O_NOFOLLOW
    try:
        before = os.stat(path) if follow_symlinks else os.lstat(path)
    except OSError as err:
        raise UnreadableFile(_os_reason(err)) from None
    is_pipe = stat.S_ISFIFO(before.st_mode)
    if not stat.S_ISREG(before.st_mode) and not (allow_pipe and is_pipe):
        raise UnreadableFile(f"{kind_of_mode(before.st_mode)}, not a regular file")
    if not is_pipe and before.st_size > cap:
        raise UnreadableFile(f"{size_text(before.st_size)}, larger than the {size_text(cap)} allowed")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | nofollow | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        if nofollow and err.errno == errno.ELOOP:
            raise UnreadableFile("a symlink, not a regular file") from None
        raise UnreadableFile(_os_reason(err)) from None
    try:
        info = os.fstat(fd)
        if stat.S_IFMT(info.st_mode) != stat.S_IFMT(before.st_mode):  # swapped since the stat
            raise UnreadableFile(f"{kind_of_mode(info.st_mode)}, not a regular file")
        data = read_pipe(fd, cap, timeout) if is_pipe else _read_file(fd, cap)
    except OSError as err:
        if isinstance(err, UnreadableFile):
            raise
        raise UnreadableFile(_os_reason(err)) from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise UnreadableFile(f"more than the {size_text(cap)} allowed")
    return data, info


def open_bounded(path: str | Path, cap: int) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at `path` (a symlink followed) of at most `cap`
    bytes, and its fstat, for a reader that streams it rather than holding it whole. UnreadableFile
    as `read_bounded` gives it for anything else; the caller closes the descriptor."""
    try:
        before = os.stat(path)
    except OSError as err:
        raise UnreadableFile(_os_reason(err)) from None
    if not stat.S_ISREG(before.st_mode):
        raise UnreadableFile(f"{kind_of_mode(before.st_mode)}, not a regular file")
    if before.st_size > cap:
        raise UnreadableFile(f"{size_text(before.st_size)}, larger than the {size_text(cap)} allowed")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise UnreadableFile(_os_reason(err)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):           # swapped since the stat
        os.close(fd)
        raise UnreadableFile(f"{kind_of_mode(info.st_mode)}, not a regular file")
    os.set_blocking(fd, True)
    return fd, info


def more_than(cap: int) -> UnreadableFile:
    """What a file that grew past `cap` while it was read is."""
    return UnreadableFile(f"more than the {size_text(cap)} allowed")


def _read_file(fd: int, cap: int) -> bytes:
    """The file in one read of the size fstat gives, plus a byte to see one that grew past it: read
    in 1 MiB chunks and joined, a file was held twice at the end (a 900 MB ledger cost 1.9 GB)."""
    os.set_blocking(fd, True)
    want = min(os.fstat(fd).st_size, cap) + 1
    chunks: list[bytes] = []
    total = 0
    while total <= cap:
        chunk = os.read(fd, min(want, cap + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = 1 << 20      # a file that grew, or a short read: the rest a chunk at a time
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_pipe(fd: int, cap: int, timeout: float) -> bytes:
    """Read a non-blocking pipe until EOF, at most `cap` + 1 bytes (more: it says too much);
    UnreadableFile when no end of file came within `timeout` s. A FIFO that no program has opened
    for writing reads as empty."""
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    total = 0
    while total <= cap:
        try:
            chunk = os.read(fd, min(65536, cap + 1 - total))
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise UnreadableFile(f"a pipe that sent no end of file within {timeout:g} s") from None
            select.select([fd], [], [], min(left, 0.5))
            continue
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
