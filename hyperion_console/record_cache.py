"""The last submission record the console read, kept while its file is unchanged.

A 100k-task record is a 26 MB JSON file that takes the core's load_record half
a second: the command line's check, the Jobs screen and the record list all
want it at start-up. They ask here, and the file is parsed once. The cache
holds one record (the one on screen, which the screen holds anyway), so it
costs no memory of its own; a changed file is read again. Records are replaced
whole (os.replace), so a new file is a new inode: on a file system whose times
are coarse (1 s on some NFS servers) a record rewritten in the same second at the
same size (a retry's job 4243 for 4242) kept mtime and size, and was not read again.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from backends.records.record import SubmitRecord, load_record

from .task_index import bulk

_lock = threading.Lock()
_last: tuple[tuple[str, int, int, int], SubmitRecord] | None = None


def file_key(path: str | Path) -> tuple[str, int, int, int] | None:
    """(resolved path, mtime, size, inode), None if the file cannot be stat'ed (realpath, not
    Path.resolve: that raises RuntimeError on a symlink loop, and the Jobs screen asks every 2 s)."""
    try:
        resolved = os.path.realpath(path)
        info = os.stat(resolved)
    except (OSError, ValueError):
        return None
    return resolved, info.st_mtime_ns, info.st_size, info.st_ino


def cached_record(path: str | Path) -> SubmitRecord:
    """load_record(path), from the cache when the file has not changed since."""
    global _last
    key = file_key(path)
    with _lock:
        if key is not None and _last is not None and _last[0] == key:
            return _last[1]
    with bulk():
        record = load_record(path)       # InputError for a bad file, as the CLIs say it
    if key is not None:
        with _lock:
            _last = (key, record)
    return record
