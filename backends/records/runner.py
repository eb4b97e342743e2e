"""Who runs a local task: the runner's pid, host and process start time, and whether it still lives.

The local backend has no scheduler that would notice a runner killed mid-task,
so each task start in the ledger (and each RUNNING entry of an older
q/<stem>.local.json) names its runner; a reader on the
same host that finds that process gone reports the task as LOST instead of
waiting for an end that will never be written. The start time (from /proc)
guards against the pid having been reused by an unrelated process.
"""
from __future__ import annotations

import os


def process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None."""
    stat = _proc_stat(pid)
    if stat is None:
        return None
    fields = stat.decode("ascii", "replace").rpartition(")")[2].split()  # the command name may hold spaces and ')'
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _proc_stat(pid: int) -> bytes | None:
    """/proc/PID/stat, read through a bare descriptor: a local run reads it once per task, and
    open()'s buffered file object cost three times the read itself. A line of at most a few
    hundred bytes; read to its end all the same, as the file object did."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = b""
        while chunk := os.read(fd, 4096):
            data += chunk
        return data
    except OSError:
        return None
    finally:
        os.close(fd)


def _host() -> str:
    import socket  # only when a runner is written or judged, not for every record read

    return socket.gethostname()


def runner_fields() -> dict[str, object]:
    """What the runner writes beside a RUNNING task: pid, host and pid start time."""
    pid = os.getpid()
    return {"pid": pid, "host": _host(), "pid_start": process_start(pid)}


def runner_gone(entry: dict) -> bool:
    """True only when `entry` names a runner on this host that is certainly no longer running.

    Entries without a pid (older files) or from another host cannot be judged
    and are taken as alive.
    """
    pid, host = entry.get("pid"), entry.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or host != _host():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):   # a pid beyond C's int (a hostile file) names no process
        return True
    except PermissionError:  # alive, owned by someone else
        pass
    recorded, now = entry.get("pid_start"), process_start(pid)
    return isinstance(recorded, int) and now is not None and now != recorded or _is_zombie(pid)


def _uid_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except (OSError, OverflowError, ValueError):
        return None


def _owned(pid: int, owner: int | None) -> bool:
    """Whether process `pid` may be a task of a ledger `owner` owns: not one of the reader's own
    when the ledger is someone else's (a teammate's forged line must not name your shell's group
    for you to kill). A teammate's process in a shared folder still counts: ledgers are appended
    to, so whoever created one owns it whoever ran later."""
    return owner is None or owner == os.getuid() or _uid_of(pid) != os.getuid()


def runner_to_stop(pid: int, pid_start: int | None, host: str | None, owner: int | None = None) -> bool:
    """Whether the runner a ledger `start` line names is certainly that process, alive on this host,
    so that its pid may be offered to the reader to `kill` (a forged line of a teammate's ledger
    must not name one of the reader's own processes, as for `child_running`)."""
    if pid_start is None or host != _host() or not isinstance(pid, int) or pid <= 0:
        return False
    return process_start(pid) == pid_start and not _is_zombie(pid) and _owned(pid, owner)


def child_running(pid: int, pid_start: int | None, host: str | None, owner: int | None = None) -> bool:
    """True only when the task a runner started (`pid`, started at `pid_start`, leader of its own
    process group) certainly still runs: the process itself, or what it started in its group.

    Without a start time, or from another host, the pid could be anyone's. A pid
    is not given out again while a group of that number has members, so a
    living process of that pid with another start time means the group is gone.
    With `owner` (the ledger file's) someone else, a process of the reader does not
    count: a line a teammate forged must not name your login shell's group as a
    task for you to kill.
    """
    if pid_start is None or host != _host():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return _group_lives(pid, pid_start, owner)
    except PermissionError:   # alive, owned by someone else (then the start time decides)
        pass
    if process_start(pid) != pid_start or not _owned(pid, owner):
        return False
    return not _is_zombie(pid) or _group_lives(pid, pid_start, owner)


def group_running(pgid: int, since: int | None) -> bool:
    """Whether group `pgid` still has a process this user may signal that is not a zombie, started at
    or after `since` (the group leader's start time; None: any).

    What a local runner waits for before it records a task's end: `killpg(pgid, 0)` alone counts
    a member that died but that nobody reaped (its parent gone, and a PID 1 that reaps nothing),
    and would keep a run waiting for the dead. One system call when the group is gone.
    """
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError, OverflowError):   # PermissionError: none we could end
        return False
    return _group_lives(pgid, since or 0)


def _group_lives(pgid: int, since: int, owner: int | None = None) -> bool:
    """Whether a process of group `pgid` started at or after `since` still runs (not a zombie).

    Once the task's group ended, its number may lead an unrelated group: its
    members started before the task would not count, and `kill -- -N` would hit
    them; members of the task's group all started after its first process.
    """
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        pass
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True           # members there are, and which cannot be told
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:       # ended meanwhile
            continue
        if len(fields) > 19 and fields[2] == str(pgid).encode() and fields[0] != b"Z" \
                and fields[19].isdigit() and int(fields[19]) >= since and _owned(int(pid), owner):
            return True
    return False


def _is_zombie(pid: int) -> bool:
    """A killed runner whose parent has not reaped it yet still answers kill(pid, 0)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().decode("ascii", "replace").rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False
