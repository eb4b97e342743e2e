"""Running a plan on this machine: one child per array value, in order, stop at the first failure.

Thin on purpose: the plan already says what to run and where to log; this
module starts the processes, writes the shared log header/footer, and keeps
the record and the per-task results file current for hyperion-jobs.
"""
from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from backends import logheader
from backends.errors import interrupt_status
from backends.fileio import umask_mode
from backends.printable import printable
from backends.records.attempts import (
    FinalState,
    LedgerWriter,
    NewAttempt,
    TaskChild,
    TaskStart,
    closed_line,
    ledger_path,
)
from backends.records.history import commit_attempt
from backends.records.record import LOCAL_JOB, JobRecord, SubmitRecord, TaskRecord
from backends.records.runner import group_running, process_start, runner_fields
from backends.stop_signals import restore, signals_raise
from backends.submit.array import TOTAL_SHARDS_ENVS, local_shard_env
from backends.submit.local.command_path import CommandPaths
from backends.submit.local.group_stop import stop_group, try_signal_group
from backends.submit.model import PlannedTask, SubmitPlan, record_options

# Room claimed ahead for the lines that say a full disk failed a task (a few hundred bytes each).
LEDGER_RESERVE = 4096


@dataclass(frozen=True)
class LocalEvent:
    """A task started (`code` None) or ended (`code` its exit status), or the run stopped after it
    for its log ("stopped": missing or not writable; its own line on stderr said why)."""

    kind: str                 # "start" | "end" | "stopped"
    task: PlannedTask
    code: int | None = None
    elapsed: float | None = None
    signal: int | None = None  # the task was stopped by this signal (SIGHUP: its terminal hung up)
    rerun: bool = True         # "stopped": recorded FAILED, so a retry runs it again (not a COMPLETED one)


def local_record(plan: SubmitPlan, attempt: NewAttempt = NewAttempt()) -> SubmitRecord:
    options = plan.options
    expression = options.array.slurm_expression() if options.array else None
    return SubmitRecord(
        path=plan.record_path, backend="local", argv=plan.argv, cfg=os.path.abspath(options.cfg),
        options=record_options(options), script=None,
        array_name=options.array.name if options.array else None,
        jobs=(JobRecord(LOCAL_JOB, 0, expression),),
        tasks=tuple(TaskRecord(t.value, LOCAL_JOB, t.value, t.log, None, None, attempt.number)
                    for t in plan.tasks),
        submitted_at=logheader.iso_now(), cwd=os.getcwd(), attempt=attempt.number, kind=attempt.kind,
        rerun=shlex.join(plan.rerun) if plan.rerun else None,
    )


class Terminated(KeyboardInterrupt):
    """SIGTERM while tasks run (``kill``, a session ending): stopped like Ctrl-C, with its own code.

    Without it the runner died at once and left its child running, unrecorded.
    """

    signum = signal.SIGTERM


class HungUp(Terminated):
    """SIGHUP (the terminal closed): each task runs in its own process group, so the kernel's
    hangup reaches only the runner, which passes it on as it does SIGTERM."""

    signum = signal.SIGHUP


class Quit(Terminated):
    """SIGQUIT (Ctrl-\\): it reaches only the runner, in the terminal's foreground group; passed on
    like SIGTERM rather than dumping the runner and leaving its task to run on."""

    signum = signal.SIGQUIT


_INTERRUPTS = {signal.SIGTERM: Terminated, signal.SIGHUP: HungUp, signal.SIGQUIT: Quit}


_interrupt_code = interrupt_status


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Turn SIGTERM, SIGHUP and SIGQUIT into `Terminated`, `HungUp` and `Quit` (`signals_raise`:
    only in the main thread; a signal ignored when we start, as ``nohup`` ignores SIGHUP, stays
    ignored, SIGTERM excepted; only the first one is raised)."""
    with signals_raise(_INTERRUPTS, lambda signum: _INTERRUPTS[signum](), even_if_ignored={signal.SIGTERM}):
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        # Inherited as ignored (a parent's SIG_IGN), the kernel reaps each task itself and its exit
        # status is lost: every local task read COMPLETED 0, a failed one too.
        previous = {signal.SIGCHLD: signal.signal(signal.SIGCHLD, signal.SIG_DFL) or signal.SIG_DFL}
        try:
            yield
        finally:
            restore(previous)


def _returncode(code: int) -> int:
    """A signal death as the shell reports it (128 + signal number)."""
    return 128 - code if code < 0 else code


def _with_shard_index(env: dict[bytes, bytes], task: PlannedTask) -> dict[bytes, bytes]:
    """`env` with an array task's shard index as the batch script exports it (`local_shard_env`);
    an --env of the same name is the user's and stays."""
    if task.value is None:
        return env
    given = {name for name, _ in task.env}
    has_total = any(env.get(os.fsencode(name)) for name in TOTAL_SHARDS_ENVS)
    for name, value in local_shard_env(has_total, task.value).items():
        if name in given:
            continue
        if value is None:
            env.pop(os.fsencode(name), None)
        else:
            env[os.fsencode(name)] = value.encode()
    return env


def _start(argv: tuple[str, ...], env: dict[bytes, bytes], stdin: int, log,
           paths: CommandPaths | None) -> subprocess.Popen:
    """The task's process, in its own process group: a signal for the task reaches what it started
    too (a script's python), as Slurm signals a whole step, and a live group outlives a runner
    killed with SIGKILL. A bare name is started from the file `paths` found for it (no PATH search
    per task); should that file fail to start, PATH is searched as before, whose error stands."""
    executable = paths.executable(argv[0], env) if paths is not None else None
    if executable is not None:
        try:
            return subprocess.Popen(list(argv), executable=executable, stdin=stdin, stdout=log,
                                    stderr=subprocess.STDOUT, env=env, process_group=0)
        except OSError:
            paths.failed(argv[0], env)
    return subprocess.Popen(list(argv), stdin=stdin, stdout=log, stderr=subprocess.STDOUT, env=env,
                            process_group=0)


def _run_child(task: PlannedTask, log, environ: dict[bytes, bytes], stdin: int,
               spawned: Callable[[int, int | None], None], group: _RunningGroup | None = None,
               stop: Stop | None = None, killed: list[str] | None = None,
               paths: CommandPaths | None = None) -> int:
    """The child's status as Popen gives it: negative when a signal ended it. Returns (or raises
    the KeyboardInterrupt that stopped it, with `task_status` the child's status) only once
    nothing of the task's process group runs any more. A task `stop`'s watcher SIGKILLed gets
    why in `killed` (the CLI's Ctrl-C path gives it as `task_killed`); `paths`: see `_start`.
    """
    env = _with_shard_index({**environ, **{os.fsencode(name): os.fsencode(value) for name, value in task.env}},
                            task)
    since: int | None = None
    ended = threading.Event()
    try:
        child = _start(task.argv, env, stdin, log, paths)
    except FileNotFoundError:
        log.write(f"hyperion-submit: {task.argv[0]}: command not found\n")
        return 127
    except PermissionError:
        log.write(f"hyperion-submit: {task.argv[0]}: permission denied\n")
        return 126
    except OSError as err:
        log.write(f"hyperion-submit: {task.argv[0]}: cannot run: {err.strerror or err}\n")
        return 126
    try:                                  # from its first statement: a Ctrl-C here must stop the group too
        since = process_start(child.pid)  # the group's members started after it: a reused number is not it
        spawned(child.pid, since)
        watch = _stop_group_on(stop, child.pid, since, ended) if stop is not None else None
        if group is None:                     # a caller of its own: a handler for this task alone
            with _suspended_together() as alone:
                alone.pgid = child.pid
                raw = _wait(child, log, watch)
        else:
            group.pgid = child.pid
            try:
                raw = _wait(child, log, watch)
            finally:
                group.pgid = None
        if raw is None:                       # stopped, and its status never came (see _wait): as the CLI's
            if killed is not None:
                killed.append(f"{watch.killed[0] if watch and watch.killed else 'stopped'}; its process did "
                              "not end (stuck in the kernel?)")
            return STOPPED
        if watch is not None and watch.stopping.is_set():
            watch.done.wait()                 # stopped: the rest of the group has its grace
            if killed is not None and raw == -signal.SIGKILL and watch.killed:
                killed.append(watch.killed[0])
        else:
            _end_leftovers(child.pid, since)
        return raw
    except KeyboardInterrupt as exc:
        exc.task_status, exc.task_killed = _stop_group(child, since, getattr(exc, "signum", signal.SIGINT))
        raise
    finally:
        ended.set()


UNKILLABLE_WAIT = 10.0  # seconds a group sent SIGKILL is waited for (a process stuck in the kernel)


def _stop_group(child: subprocess.Popen, since: int | None, signum: int) -> tuple[int | None, str | None]:
    """Pass `signum` to the task's group, then SIGKILL it after STOP_GRACE s or at a second Ctrl-C
    (`stop_group`); the child's status once no process of its group runs (None: its status was lost,
    see `_status_lost`), and why SIGKILL was sent (None: it was not). Said on stderr once the group
    outlives its first second: the terminal showed nothing but ``^C`` for the 10 s.

    A second Ctrl-C used to end the runner during the wait and leave a task that
    ignores SIGINT running, recorded as failed. The group is waited for, not only its
    leader: a shell's `cmd &` ignores SIGINT, and ran on after the task was recorded ended.
    """
    began = time.monotonic()
    lost = told = False
    cut: str | None = None

    def interrupted(again: KeyboardInterrupt) -> None:
        nonlocal cut
        # only Ctrl-C again cuts the grace short: a closing terminal sends SIGHUP twice
        if getattr(again, "signum", signal.SIGINT) == signal.SIGINT:
            cut = "at a second Ctrl-C" if signum == signal.SIGINT else "at a Ctrl-C"

    def ended() -> bool:
        try:
            return (child.returncode is not None or lost) and not group_running(child.pid, since)
        except KeyboardInterrupt as again:
            interrupted(again)
            return False

    def pause(deadline: float) -> None:
        """The leader waited for (reaped here, its status kept) until it ends, then its group."""
        nonlocal lost, told
        try:
            now = time.monotonic()
            if not told and now - began >= 1.0:
                more = " again" if signum == signal.SIGINT else ""
                told = _say(f"the task's processes have not ended yet: SIGKILL in {deadline - now:.0f} s, "
                            f"or at once at Ctrl-C{more}")
            if child.returncode is None and not lost:
                lost = _status_lost(child)
                if not lost and child.returncode is None:
                    child.wait(timeout=max(0.0, min(deadline - now, 0.25 if not told else deadline - now)))
            else:
                time.sleep(min(0.05, max(0.0, deadline - now)))
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt as again:
            interrupted(again)

    why = stop_group(child.pid, signum, ended, lambda: cut, pause)
    if why is None:
        return None if lost else child.returncode, None
    given_up = time.monotonic() + UNKILLABLE_WAIT      # one bound for the leader and its group, Ctrl-C or not
    while True:
        try:        # a third Ctrl-C, or a closing terminal's signals, must not cut the kill short
            lost = lost or _status_lost(child)
            if not lost and child.returncode is None:
                try:
                    child.wait(timeout=max(0.0, given_up - time.monotonic()))
                except subprocess.TimeoutExpired:   # stuck in the kernel (an NFS hang): not waited for ever
                    lost, why = True, f"{why}; its process did not end (stuck in the kernel?)"
            _await_gone(child.pid, since, max(0.0, given_up - time.monotonic()))
            break
        except KeyboardInterrupt:
            continue
    killed = f"killed (SIGKILL) {why}" if lost or child.returncode == -signal.SIGKILL else None
    return None if lost else child.returncode, killed      # the reason for a 137, not for a code of its own


def _say(line: str) -> bool:
    """One line on stderr, if it can still be written (a hangup's terminal is gone)."""
    try:
        print(f"hyperion-submit: {line}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return True


def _status_lost(child: subprocess.Popen) -> bool:
    """Whether the child was reaped but its status never reached `child.returncode`: a Ctrl-C
    landing in `_wait` between the waitpid and the assignment. Popen's wait would then say 0, and
    a task that failed was recorded COMPLETED 0; unknown, the interrupt's code is recorded instead.
    Reaps the child here when it has just ended (its status kept)."""
    if child.returncode is not None:
        return False
    try:
        pid, status = os.waitpid(child.pid, os.WNOHANG)
    except ChildProcessError:
        return True
    if pid:
        child.returncode = os.waitstatus_to_exitcode(status)
    return False


def _end_leftovers(pgid: int, since: int | None) -> None:
    """What the task's leader left running in its group is killed (SIGKILL) as its end is recorded.

    As slurmstepd at a step's end (proctrack kills what is left in the step's cgroup at once):
    a `cmd &` the script did not wait for ran on beside the next task, writing into a log
    whose footer said it had ended. One system call when nothing is left.
    """
    if group_running(pgid, since):
        try_signal_group(pgid, signal.SIGKILL)
        _await_gone(pgid, since)


def _await_gone(pgid: int, since: int | None, seconds: float = UNKILLABLE_WAIT) -> None:
    """Back once group `pgid` has no running process, or after `seconds` (a process SIGKILL cannot
    end yet, stuck in the kernel, is given up on, as Slurm gives up on an unkillable step)."""
    deadline = time.monotonic() + seconds
    pause = 0.01          # each look reads /proc: a process stuck for the 10 s is looked at 10 times a second
    while group_running(pgid, since) and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(0.1, pause * 2)


def _stopped_end(exc: KeyboardInterrupt) -> tuple[int, int | None]:
    """(exit status, signal that killed it or None) of the task `exc` stopped: what it really ended
    with (a task that trapped Ctrl-C, saved and exited 3: 3), 128 + N only when the signal killed
    it; the interrupt's own when no task had started. The console records the same."""
    raw = getattr(exc, "task_status", None)
    if raw is None:
        return _interrupt_code(exc), getattr(exc, "signum", signal.SIGINT)
    return _returncode(raw), (-raw if raw < 0 else None)


class _RunningGroup:
    """The process group of the task running now (None between tasks), for the Ctrl-Z handler."""

    __slots__ = ("pgid",)

    def __init__(self) -> None:
        self.pgid: int | None = None


@contextmanager
def _suspended_together() -> Iterator[_RunningGroup]:
    """Ctrl-Z (SIGTSTP) stops the running task's process group with the runner; ``fg`` or ``bg`` resumes both.

    The terminal sends SIGTSTP to its foreground group only, the runner's: without this the
    runner stopped and its task ran on, unwatched. In a process group with no job control
    (orphaned) the kernel does not stop the runner, and the task is resumed at once.
    Installed once for a whole run (a handler set and reset around every task cost two
    system calls each): the caller sets the group's `pgid` while its task runs; between
    tasks Ctrl-Z does what it did before the run.
    """
    group = _RunningGroup()
    previous = signal.getsignal(signal.SIGTSTP)
    if threading.current_thread() is not threading.main_thread() or previous is signal.SIG_IGN:
        yield group
        return
    suspending = False

    def suspend(signum, frame):
        nonlocal suspending
        pgid = group.pgid
        if pgid is None and callable(previous):   # between tasks: what was there before the run
            previous(signum, frame)
            return
        if suspending:      # a second Ctrl-Z before this one took effect: one stop is enough
            return
        suspending = True
        try:
            if pgid is not None:
                try_signal_group(pgid, signal.SIGTSTP)
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTSTP)   # returns once continued
        finally:
            signal.signal(signal.SIGTSTP, suspend)
            if pgid is not None:
                try_signal_group(pgid, signal.SIGCONT)
            suspending = False
    signal.signal(signal.SIGTSTP, suspend)
    try:
        yield group
    finally:
        signal.signal(signal.SIGTSTP, signal.SIG_DFL if previous is None else previous)


def _wait(child: subprocess.Popen, log, watch: _StopWatch | None = None) -> int | None:
    """The child's exit status; a task stopped for using the terminal is ended, not waited on for ever.

    In its own process group the task is not the terminal's foreground: reading
    it (a password prompt on /dev/tty) stops it with SIGTTIN, as a batch job has
    no terminal at all. The log says why, and the task fails.

    `watch` (a console worker's run, which no Ctrl-C interrupts): once it stopped the task's group,
    the leader is waited for until its `give_up_at` (UNKILLABLE_WAIT after its SIGKILL, or after
    the group ended), then None: a leader SIGKILL cannot end (stuck in the kernel) or whose
    status another process holds (a debugger attached to it) kept a quit waiting for ever. The
    CLI's Ctrl-C path bounds it in `_stop_group`.
    """
    while True:
        try:
            if watch is None:
                _, status = os.waitpid(child.pid, os.WUNTRACED)
            else:
                status = _wait_watched(child, watch)
                if status is None:
                    return None
        except ChildProcessError:    # SIGCHLD ignored (inherited): the kernel reaped it; Popen knows how
            return child.wait()
        if not os.WIFSTOPPED(status):
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode
        if os.WSTOPSIG(status) in (signal.SIGTTIN, signal.SIGTTOU):
            try_signal_group(child.pid, signal.SIGKILL)    # first: a log that cannot be written must not keep it
            log.write("hyperion-submit: the task was stopped for using the terminal (tasks run without one; "
                      "their input is /dev/null); ended\n")
            log.flush()


def _wait_watched(child: subprocess.Popen, watch: _StopWatch) -> int | None:
    """`os.waitpid(child.pid, os.WUNTRACED)`'s status, looked for at most every WATCHED_STEP s (sooner
    at first: a short task's end is seen within about its own length); None once `watch` gave up
    on the leader (`_wait`)."""
    pause = 0.001
    while True:
        pid, status = os.waitpid(child.pid, os.WUNTRACED | os.WNOHANG)
        if pid:
            return status
        if watch.done.is_set() and watch.give_up_at and time.monotonic() >= watch.give_up_at[0]:
            return None
        time.sleep(pause)
        pause = min(WATCHED_STEP, pause * 2)


WATCHED_STEP = 0.05   # how often a console run looks whether its task's leader ended


class LogMissing(Exception):
    """The task ended but its log is gone (removed or replaced while it ran): as for Slurm, the run fails.
    `replaced`: another file is at the log's path now, so the reason must not call it missing."""

    def __init__(self, code: int, elapsed: float, replaced: bool = False) -> None:
        super().__init__(code, elapsed, replaced)
        self.code, self.elapsed, self.replaced = code, elapsed, replaced

    def reason(self, log: str) -> str:
        """What happened to the log, as the ledger and the error line say it."""
        if self.replaced:
            return f"its log {log} was replaced by another file while the task ran"
        return f"its log {log} is missing (removed while the task ran)"


class LogWriteError(OSError):
    """The task's log could not be written (a full disk, a quota); `code` is the child's status if it ran."""

    def __init__(self, err: OSError, code: int | None) -> None:
        super().__init__(err.errno, err.strerror or str(err), err.filename)
        self.code = code


def _open_log(path: str, mode: int):
    """The log opened for writing, with `mode` (the umask's) also when it existed with a wider one.
    Emptied, then appended to, as the Slurm batch script's `>>`: a task that also writes its log
    through a path of its own (`echo fatal: x >> /dev/stderr`, `tee -a /dev/stderr`) adds at the
    end, where our footer then goes too; at our own offset the footer overwrote its last message,
    and after a `> /dev/stdout` (which empties the file) it left a run of NUL bytes before it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o666)
    try:
        os.fchmod(fd, mode)
    except PermissionError:   # someone else's file we may write: leave its mode alone
        pass
    return os.fdopen(fd, "w", encoding="utf-8", errors="replace")


def _open_log_if_folder(path: str, mode: int):
    """The log opened as `_open_log` opens it, or None (its folder made, when missing, for the
    caller's own open to say what fails). The tasks of an array share a folder: making it before
    every task cost a failed mkdir each. A folder that cannot be made raises the error that says
    why: mkdir's (Permission denied), or the open's when a file is where the folder should be
    (Not a directory, not mkdir's File exists)."""
    try:
        return _open_log(path, mode)
    except OSError as err:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise err from None
        return None


def run_task(task: PlannedTask, mode: int, environ: dict[bytes, bytes], stdin: int,
             spawned: Callable[[int, int | None], None], group: _RunningGroup | None = None,
             stop: Stop | None = None, killed: list[str] | None = None,
             paths: CommandPaths | None = None) -> tuple[int, float, int | None]:
    """Run one task with its output (stdout and stderr) in its log; (exit status, seconds, the
    signal that ended it or None). A signal death's status is the shell's 128 + N, as the log's
    footer and a Slurm task's batch script say it.

    The log gets `mode`; `environ` is the environment the task's own variables are added
    to and `stdin` its input (/dev/null): the run makes each once for all its tasks.
    `spawned` gets the child's pid (and start time) as soon as it runs; `group`, the run's Ctrl-Z
    handler's (`_suspended_together`), is told it while it runs; `stop`, see `Stop`; `paths`, the
    run's lookups of the program (`CommandPaths`, once per name; None: PATH searched). The end is
    written once nothing of the task's process group runs (what it left is killed, see
    `_end_leftovers`). A log that cannot be written
    (header or footer) raises LogWriteError, one the task removed or replaced LogMissing.
    """
    started = time.monotonic()
    code: int | None = None
    signum: int | None = None
    try:
        # inside the try: a folder that cannot be made is a log that cannot be written, recorded
        # FAILED with why; it escaped the run, leaving a start with no end, which status calls LOST
        opened = _open_log_if_folder(task.log, mode)
        with opened if opened is not None else _open_log(task.log, mode) as log:
            log.write(logheader.running_line(task.argv) + "\n")
            log.write(logheader.started_line(logheader.iso_now(), socket.gethostname()) + "\n")
            log.flush()
            code = 130
            try:
                raw = _run_child(task, log, environ, stdin, spawned, group, stop, killed, paths)
                code, signum = _returncode(raw), (-raw if raw < 0 else None)
            except KeyboardInterrupt as exc:
                code = _stopped_end(exc)[0]
                raise
            finally:
                log.flush()
                elapsed = time.monotonic() - started
                if _ends_mid_line(log):
                    log.write("\n")
                log.write(logheader.ended_line(code, logheader.iso_now(), int(elapsed)) + "\n")
                log.flush()
                kept = _same_file(task.log, log)
        if not kept:
            raise LogMissing(code, elapsed, replaced=os.path.lexists(task.log))
    except OSError as err:
        raise LogWriteError(err, code) from None
    return code, elapsed, signum


def _ends_mid_line(log) -> bool:
    """Whether the task's output stopped mid-line (a message printed without a newline, a `\\r`
    progress bar): the footer then needs a newline first, or it is glued to that line, no footer
    line, and `status --failures` gives `fatal: ...# Ended (code 1) at ...` as the last line.
    The log is open write-only: its last byte is read through /proc (the same file, also when the
    task replaced the path); where that cannot be read, the footer is written as before. The end
    is the file's size, not our offset: what the task wrote through a path of its own is not
    counted in our offset (the log is opened for appending, see `_open_log`)."""
    fd = log.fileno()
    end = os.fstat(fd).st_size
    if end == 0:
        return False
    try:
        reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.pread(reader, 1, end - 1) not in (b"\n", b"")
    except OSError:
        return False
    finally:
        os.close(reader)


def _same_file(path: str, log) -> bool:
    """Whether `path` is still the log we opened (the task may have removed or replaced it)."""
    try:
        here, ours = os.stat(path), os.fstat(log.fileno())
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (ours.st_dev, ours.st_ino)


@dataclass(frozen=True)
class Stop:
    """How a caller that is not the main thread (a console worker) stops a run, as Ctrl-C would:
    `stop` passes SIGINT to the running task's group and runs no more tasks; `kill` cuts its
    10 s of grace short (SIGKILL)."""

    stop: threading.Event
    kill: threading.Event


def run_local(plan: SubmitPlan, on_event: Callable[[LocalEvent], None] | None = None,
              attempt: NewAttempt = NewAttempt(), stop: Stop | None = None) -> int:
    """Run every task in ascending order; 0 if all exit 0, else 1 (after the first failure).

    The record is saved first; each task's start (with this runner's identity)
    and end are appended to the ledger, so a reader after a SIGKILL at any
    instant still sees what ran. KeyboardInterrupt (or `Terminated` for
    SIGTERM) is passed on, after recording the task with the code it ended with
    (FAILED 130, 143 when the signal killed it).
    Once `stop` is set the run returns 130 after its task ended (recorded with
    the code it ended with), and the tasks after it are not run.
    """
    with _sigterm_interrupts():
        record = local_record(plan, attempt)
        commit_attempt(record, attempt)
        with LedgerWriter(ledger_path(plan.record_path), reserve=LEDGER_RESERVE) as ledger:
            try:
                return _run_all(plan, on_event or (lambda event: None), attempt.number, ledger, stop)
            finally:
                ledger.write(closed_line(attempt.number, logheader.iso_now()))


def _final(attempt: int, task: PlannedTask, state: str, code: int | None, start: str,
           elapsed: float | None, node: str, reason: str | None = None,
           signum: int | None = None) -> FinalState:
    """A task stopped by SIGHUP (its group hung up on, or its runner's terminal gone) is recorded
    with the signal and no exit code, as Slurm records a task a signal killed: its 129 read as
    `FAILED exit 129`, one more program failure."""
    if signum == signal.SIGHUP:
        code = None
    else:
        signum = None
    return FinalState(attempt, task.value, LOCAL_JOB, task.value, state, code, signum, elapsed, node,
                      reason=reason, time=logheader.iso_now(), start=start)


def _run_all(plan: SubmitPlan, emit: Callable[[LocalEvent], None], attempt: int,
             ledger: LedgerWriter, stop: Stop | None = None) -> int:
    runner = runner_fields()
    mode = umask_mode()           # once: reading the umask costs a /proc read
    environ = dict(os.environb)   # once, as bytes: Popen would encode every variable for every task
    paths = CommandPaths()        # each program looked up in PATH once, not by a failed exec per directory
    with open(os.devnull, "rb") as devnull, _suspended_together() as group:   # once: for every task
        for task in sorted(plan.tasks, key=lambda t: (t.value is not None, t.value or 0)):
            if stop is not None and stop.stop.is_set():
                return STOPPED
            start, began = logheader.iso_now(), time.monotonic()
            ledger.append(TaskStart(attempt, task.value, start, runner["pid"], runner["host"],
                                    runner["pid_start"]))
            emit(LocalEvent("start", task))

            def spawned(pid: int, since: int | None, value: int | None = task.value) -> None:
                # a runner killed with SIGKILL leaves this process running: status and reruns must see it
                try:
                    ledger.append(TaskChild(attempt, value, pid, since))
                except OSError:
                    pass   # a full disk: the task runs all the same, and its end is still written

            try:
                killed: list[str] = []       # why `stop`'s watcher SIGKILLed it, if it did
                code, elapsed, signum = run_task(task, mode, environ, devnull.fileno(), spawned, group, stop,
                                                 killed, paths)
            except KeyboardInterrupt as exc:
                code, signum = _stopped_end(exc)
                elapsed = time.monotonic() - began
                final = _final(attempt, task, "COMPLETED" if code == 0 else "FAILED", code, start, elapsed,
                               runner["host"], reason=getattr(exc, "task_killed", None), signum=signum)
                ledger.append(final)
                if code == 0:    # it finished its work: a rerun of the stopped run need not run it again
                    emit(LocalEvent("end", task, code, elapsed))
                raise
            except LogMissing as gone:   # its state as it ended, the reason beside it; the run stops here
                reason = gone.reason(task.log)
                ledger.append(_final(attempt, task, "COMPLETED" if gone.code == 0 else "FAILED", gone.code,
                                     start, gone.elapsed, runner["host"], reason))
                label = task_label(task, plan.options.array.name if plan.options.array else None)
                print(printable(f"hyperion-submit: {label} exited {gone.code} but {reason}"), file=sys.stderr,
                      flush=True)
                emit(LocalEvent("stopped", task, gone.code, gone.elapsed, rerun=gone.code != 0))
                return 1
            except LogWriteError as err:  # e.g. the disk filled up: FAILED, with the reason and the log
                reason = f"cannot write the log {task.log}: {err.strerror or err}"
                try:
                    ledger.append(_final(attempt, task, "FAILED", err.code, start, time.monotonic() - began,
                                         runner["host"], reason))
                except OSError:
                    pass   # not even in the ledger's spare room: the line below still says what happened
                print(printable(f"hyperion-submit: {reason}"), file=sys.stderr, flush=True)
                emit(LocalEvent("stopped", task, err.code))
                return 1
            final = _final(attempt, task, "COMPLETED" if code == 0 else "FAILED", code, start, elapsed,
                           runner["host"], killed[0] if killed else None, signum=signum)
            ledger.append(final)
            emit(LocalEvent("end", task, code, elapsed, final.signal))
            if stop is not None and stop.stop.is_set():
                return STOPPED
            if code != 0:
                return 1
    return 0


STOPPED = 128 + signal.SIGINT    # a run stopped through `Stop`, as Ctrl-C stops one


@dataclass(frozen=True)
class _StopWatch:
    """What the worker learns from `_stop_group_on`: `stopping` once it signalled the task's group,
    `done` once nothing of that group runs (or it was killed)."""

    stopping: threading.Event
    done: threading.Event
    killed: list[str] = field(default_factory=list)    # why it sent SIGKILL, once it did
    give_up_at: list[float] = field(default_factory=list)   # when the worker stops waiting for the leader


def _stop_group_on(stop: Stop, pgid: int, since: int | None, ended: threading.Event) -> _StopWatch:
    """A thread that, once `stop.stop` is set while the task runs, does what Ctrl-C does to a
    local run from the main thread (which signal handlers cannot reach from a worker), the same
    `stop_group`: SIGINT and SIGCONT to the task's group, SIGKILL after STOP_GRACE s or at
    `stop.kill`, unless the whole group (not only its leader) ended before."""
    watch = _StopWatch(threading.Event(), threading.Event())

    def run() -> None:
        while not stop.stop.wait(0.25):
            if ended.is_set():
                return
        if ended.is_set():
            return
        watch.stopping.set()
        try:
            why = stop_group(pgid, signal.SIGINT, lambda: not group_running(pgid, since),
                             lambda: "at a second stop (q)" if stop.kill.is_set() else None,
                             lambda deadline: stop.kill.wait(0.05))
            if why is not None:
                watch.killed.append(f"killed (SIGKILL) {why}")
                watch.give_up_at.append(time.monotonic() + UNKILLABLE_WAIT)
                _await_gone(pgid, since)
        finally:
            if not watch.give_up_at:
                watch.give_up_at.append(time.monotonic() + UNKILLABLE_WAIT)
            watch.done.set()

    threading.Thread(target=run, name="hyperion-local-stop", daemon=True).start()
    return watch


def task_label(task: PlannedTask, array_name: str | None) -> str:
    """``JOB=3``, or ``task`` for a plain job: how the CLI's lines name a local task."""
    return "task" if task.value is None else f"{array_name}={task.value}"


def print_event(event: LocalEvent, array_name: str | None = None, out: TextIO | None = None,
                err: TextIO | None = None) -> None:
    """The CLI's one line per finished task (failures also name the log on stderr), on `out` and
    `err` (default stdout and stderr; run_plan gives streams a closed pipe cannot make raise)."""
    if event.kind != "end":
        return
    out, err = out or sys.stdout, err or sys.stderr
    label = task_label(event.task, array_name)
    log = printable(event.task.log)   # a path may hold control characters
    if event.code == 0:
        print(f"{label}: ok ({event.elapsed:.1f} s), log {log}", file=out, flush=True)
    elif event.signal:      # not the program's failure: its terminal hung up on it
        from backends.states import signal_text   # rare: a first run's start-up does without the states

        how = f"stopped by {signal_text(event.signal)}"
        print(f"{label}: FAILED, {how} after {event.elapsed:.1f} s, log {log}", file=out, flush=True)
        print(f"hyperion-submit: {label} {how}; see {log}", file=err, flush=True)
    else:
        from backends.states import exit_note   # a failure's path only, as above

        code = f"exit code {event.code}{exit_note(event.code)}"
        print(f"{label}: FAILED with {code} ({event.elapsed:.1f} s), log {log}", file=out, flush=True)
        print(f"hyperion-submit: {label} failed ({code}); see {log}", file=err, flush=True)
