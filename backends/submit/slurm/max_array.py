"""What to do when sbatch refuses an array window whose indices reach the cluster's MaxArraySize.

sbatch only says "Invalid job array specification": the user cannot tell that the
site file's `max_array_size` (missing, or above the cluster's) is the cause, nor
what to set it to. Only once sbatch refused an array window (never on the success
path) is ``scontrol show config`` asked, bounded in time and output, and when the
window's highest index is at or above MaxArraySize the refusal names the key to set.
Anything unexpected (no scontrol, a hung one, a hostile or huge answer) gives no
advice: the refusal is then sbatch's own words, as before.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time

from backends.fileio import UnreadableFile, read_pipe
from backends.printable import printable
from backends.submit.config import MAX_ARRAY_SIZE

SCONTROL_ARGV = ("scontrol", "show", "config")
SCONTROL_TIMEOUT = 5.0            # seconds: a refusal is already being told, it must not hang
MAX_CONFIG_BYTES = 1 << 20        # `scontrol show config` is ~8 KB; more is not Slurm's answer
_KEY = "MaxArraySize"


def parse_max_array_size(text: str) -> int | None:
    """MaxArraySize from ``scontrol show config`` text (``MaxArraySize            = 1001``); None
    when it is missing, not a plain number, or outside what Slurm allows (1..4000001)."""
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep or key.strip() != _KEY:
            continue
        value = value.strip()
        if not (value.isascii() and value.isdigit()) or len(value) > len(str(MAX_ARRAY_SIZE)):
            return None
        number = int(value)
        return number if 1 <= number <= MAX_ARRAY_SIZE else None
    return None


def read_command(argv: tuple[str, ...], timeout: float = SCONTROL_TIMEOUT,
                 cap: int = MAX_CONFIG_BYTES) -> str | None:
    """At most `cap` bytes of what `argv` prints within `timeout` s (None if it cannot run, fails
    or says more); its process group is killed whatever happens, so nothing is left behind."""
    try:
        child = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None
    assert child.stdout is not None
    os.set_blocking(child.stdout.fileno(), False)
    deadline = time.monotonic() + timeout
    data, complete = b"", False
    try:
        try:
            data = read_pipe(child.stdout.fileno(), cap, timeout)
            complete = len(data) <= cap
        except UnreadableFile:    # no end of its output in time
            pass
        if complete:          # its output closed: it is exiting, its status follows
            try:
                child.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                complete = False
    finally:
        # The whole group, even once its leader exited: a child it left holding the pipe lives on.
        # (Its id stays the group's while any member lives; once none does, ESRCH, unless the pid
        # came round again within these microseconds.)
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        child.stdout.close()
        try:
            child.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
    if not complete or child.returncode != 0:
        return None
    return data.decode("utf-8", errors="replace")


def cluster_max_array_size() -> int | None:
    """The cluster's MaxArraySize as scontrol states it; None when it cannot be known."""
    text = read_command(SCONTROL_ARGV)
    return None if text is None else parse_max_array_size(text)


def array_advice(highest: int, cluster_max: int | None, site_file: str) -> str | None:
    """What the refusal of a window whose highest array index is `highest` adds: the limit and the
    key to set in `site_file` (as the user named it). None when the limit is unknown or not reached."""
    if cluster_max is None or highest < cluster_max:
        return None
    where = printable(site_file) if site_file else "the site file (--cfg)"
    return (f"the cluster's MaxArraySize is {cluster_max} (scontrol show config): set "
            f"max_array_size: {cluster_max} in {where} to split the values into windows")
