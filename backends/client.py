"""Running one client program (sbatch, squeue, sacct, scancel, a site's wrapper of one) bounded.

Bounded in time (a timeout, a stop event, Ctrl-C: the client's whole process group is killed,
a site wrapper's children too), and in size (OUTPUT_CAP): a wrapper stuck in a loop must not
fill the watching process's memory, nor a stray background child keep the caller waiting.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing: a status of a local record loads neither
if TYPE_CHECKING:
    import subprocess

# What one client may print, stdout and stderr together: sacct of a 10,000-task array with its
# step rows is about 6 MB; a site wrapper that loops (or a history of years) is cut here.
OUTPUT_CAP = 64 * 1024 * 1024
STOP_STEP = 0.1          # how often a running client's caller looks at its stop event
EXIT_GRACE = 1.0         # seconds the pipes are read after the client exited


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str
    # why the client gave no answer of its own: "not found", "cannot run", "timeout", "too much"
    # (its returncode is then 127, 126, 124 and 1); None when it ran and exited
    failure: str | None = None


class QueryStopped(Exception):
    """The caller's stop event was set while a query ran: its process was killed, there is no answer."""


class _TooMuch(Exception):
    """The client printed more than its cap of bytes."""


def run_client(argv: Sequence[str], timeout: float, stop: threading.Event | None = None,
               env: Mapping[str, str] | None = None, cap: int = OUTPUT_CAP) -> CommandResult:
    """Run `argv` (no shell, stdin empty) in `env`; a binary missing or not runnable, a timeout or
    more output than `cap` bytes becomes a result with its `failure` said.

    The client runs in a process group of its own, killed whole (a site's wrapper script and what
    it started too) when it times out, when `stop` is set (QueryStopped) or when the caller is
    interrupted (Ctrl-C): a hung squeue must neither hold up a quit nor be left behind.
    """
    import subprocess  # here: reading a local record needs no process module at start-up

    try:
        child = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True,
                                 env=dict(env) if env is not None else None)
    except FileNotFoundError:
        return CommandResult(127, "", f"{argv[0]}: command not found", "not found")
    except OSError as e:      # not executable, a directory, a bad interpreter line
        return CommandResult(126, "", f"{argv[0]}: cannot run ({e.strerror or e})", "cannot run")
    try:
        out, err = _communicate(child, timeout, stop, cap)
    except subprocess.TimeoutExpired:
        _end(child)
        return CommandResult(124, "", f"{argv[0]} timed out after {timeout:g} s", "timeout")
    except _TooMuch:
        _end(child)
        from backends.fileio import size_text   # the words of every other cap (`32 MiB`, `512 KiB`)

        return CommandResult(1, "", f"{argv[0]} printed more than {size_text(cap)}: not read", "too much")
    except BaseException:      # QueryStopped, KeyboardInterrupt: nothing may outlive the caller
        _end(child)
        raise
    finally:
        _close(child)
    return CommandResult(child.returncode, out, err)


def _communicate(child: "subprocess.Popen[bytes]", timeout: float,
                 stop: threading.Event | None, cap: int) -> tuple[str, str]:
    """The child's output once it exits, at most `cap` bytes (_TooMuch past that); looks at
    `stop` every STOP_STEP seconds meanwhile. Pipes still open EXIT_GRACE seconds after the child
    exited are left (a site wrapper's `sbatch "$@"; logger &`: its logger holds them for as long as
    it runs, and the job id sbatch printed was lost to a timeout)."""
    import selectors
    import subprocess

    deadline = time.monotonic() + timeout

    def left() -> float:
        if stop is not None and stop.is_set():
            raise QueryStopped(f"{child.args[0]} stopped")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise subprocess.TimeoutExpired(child.args, timeout)
        return min(remaining, STOP_STEP)

    assert child.stdout is not None and child.stderr is not None
    streams = (child.stdout.fileno(), child.stderr.fileno())
    read: dict[int, list[bytes]] = {fd: [] for fd in streams}
    total = 0
    with selectors.DefaultSelector() as waiting:
        for fd in streams:
            waiting.register(fd, selectors.EVENT_READ)
        exited_at = None
        while waiting.get_map():
            if exited_at is None and child.poll() is not None:
                exited_at = time.monotonic()
            ready = waiting.select(left())
            if not ready and exited_at is not None and time.monotonic() - exited_at > EXIT_GRACE:
                break       # nothing more came since the client exited: what is left is its child's
            for key, _ in ready:
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    waiting.unregister(key.fd)
                    continue
                read[key.fd].append(chunk)
                total += len(chunk)
                if total > cap:
                    raise _TooMuch
    while child.poll() is None:     # both pipes closed (or left to a child of its own): it is ending
        step = left()               # raises at the deadline: out of the try, which would swallow it
        try:
            child.wait(timeout=step)
        except subprocess.TimeoutExpired:
            pass
    out, err = (b"".join(read[fd]).decode(errors="replace") for fd in streams)
    return out, err


def _end(child: "subprocess.Popen[bytes]") -> None:
    """Kill the child's process group and reap it; pipes a stray grandchild keeps open are closed,
    not read. Killed also once the child itself exited (reaped while its pipes were read): the group
    lives on in the children it left, which kept printing until the timeout; its id cannot be
    taken by another group while one of them lives."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _close(child)
    child.wait()


def _close(child: "subprocess.Popen[bytes]") -> None:
    for pipe in (child.stdout, child.stderr):
        if pipe is not None:
            pipe.close()
