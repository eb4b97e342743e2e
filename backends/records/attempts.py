"""The ledger of one output-file pattern: q/<stem>.attempts.jsonl, every attempt and every task end.

Each submission or retry to the same ``--output-file`` is an attempt; the
ledger keeps, one JSON object per line and only ever appended:

- ``attempt``: its number, kind (submit, retry, resubmit), time, job ids, values
  and the options it changed;
- ``start`` (local runs): a task started, and which runner process runs it;
- ``child`` (local runs): the process the runner started for it (pid and start
  time), which outlives a runner killed with SIGKILL;
- ``final``: a task's final state (state, exit code, signal, elapsed, node,
  restart count, usage), written once by whichever face sees it first, so a
  later reader never depends on Slurm still remembering the job;
- ``usage``: what an ended task used, when accounting told it only after the
  final state was written (the newest such line wins);
- ``moved``: a file of an earlier attempt (a task's log, a batch script) that
  a rerun would have overwritten, and where it was moved;
- ``closed`` (local runs): the runner finished the attempt.

Appending costs the same whatever the array size; a line torn by a crash is
skipped by readers and never glues itself to the next one.
"""
from __future__ import annotations

import codecs
import errno
import functools
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from backends.errors import InputError
from backends.figures import is_figure
from backends.fileio import UnreadableFile, more_than, open_bounded, open_regular
from backends.printable import printable
from backends.records.paths import ATTEMPTS_DIR, RECORD_SUFFIX, is_file_name

LEDGER_SUFFIX = ".attempts.jsonl"
SPARE_SUFFIX = ".spare"
SPARE_CAP = 64 * 1024
PID_MAX = 1 << 22
# A final line with usage is a few hundred bytes; an attempt line lists job ids and
# changed options. Anything longer was not written by us.
MAX_LINE = 256 * 1024
# Two lines of a few hundred bytes per task and attempt: 15 attempts of a 100000-task array are
# under 1 GiB. Anything larger was not written by us (a sparse file, /dev/zero).
MAX_LEDGER_BYTES = 1024 * 1024 * 1024
# No line we write is shorter than 32 bytes. More lines than this (a file of newlines) cost
# minutes and gigabytes to fold, and were not written by us either.
MAX_LEDGER_LINES = MAX_LEDGER_BYTES // 32
_TYPE = b'"type"'                    # every line we write names its type: only such lines are parsed
_BLANK = b" \t\r\x0b\x0c"              # what bytes.strip() takes besides the newline
_NOT_BLANK = re.compile(rb"[^\s]")
_SLICE = 1024 * 1024
KINDS = ("submit", "retry", "resubmit")

Key = tuple[int, "int | None"]       # (attempt, value)


@dataclass(frozen=True)
class AttemptEntry:
    """One submission or retry to the pattern."""

    number: int
    kind: str
    time: str
    backend: str
    job_ids: tuple[str, ...]
    values: str                      # the logical values as ranges ("" for a plain job)
    overrides: Mapping[str, object]  # options that differ from the attempt before
    tasks: int = 0


@dataclass(frozen=True)
class NewAttempt:
    """What a runner needs to know of the attempt it runs: its number, kind and changed options."""

    number: int = 1
    kind: str = "submit"
    overrides: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskStart:
    """A local task started; its runner's identity judges whether it still runs."""

    attempt: int
    value: int | None
    time: str
    pid: int | None = None
    host: str | None = None
    pid_start: int | None = None


@dataclass(frozen=True)
class TaskChild:
    """The process a local runner started for a task: it runs on if the runner is SIGKILLed."""

    attempt: int
    value: int | None
    pid: int
    pid_start: int | None = None


@dataclass(frozen=True)
class FinalState:
    """How one task of one attempt ended, as first seen by any face."""

    attempt: int
    value: int | None
    job_id: str
    task_id: int | None
    state: str
    exit_code: int | None = None
    signal: int | None = None
    elapsed: float | None = None
    node: str | None = None
    restart_count: int | None = None
    reason: str | None = None        # e.g. why a local task could not write its log
    usage: Mapping[str, object] | None = None
    time: str | None = None
    start: str | None = None         # ISO start time (local tasks), for elapsed


@dataclass(frozen=True)
class TaskUsage:
    """What an ended task used, learnt after its final state was written (accounting lags)."""

    attempt: int
    value: int | None
    usage: Mapping[str, object]


@dataclass(frozen=True)
class MovedFile:
    """A file of attempt `attempt` moved aside before a rerun would overwrite it."""

    attempt: int
    value: int | None
    what: str                        # "log" | "script"
    source: str
    target: str


@dataclass(frozen=True)
class Ledger:
    """Everything the ledger file says, folded: the first final of a task wins (of its last requeue)."""

    attempts: tuple[AttemptEntry, ...] = ()
    starts: Mapping[Key, TaskStart] = field(default_factory=dict)
    finals: Mapping[Key, FinalState] = field(default_factory=dict)
    moved: Mapping[tuple[int, "int | None", str], MovedFile] = field(default_factory=dict)
    closed: frozenset[int] = frozenset()
    skipped: int = 0                 # lines that were torn, foreign or too long (not an unended last one)
    last_start: Mapping[int, TaskStart] = field(default_factory=dict)   # attempt -> its newest task start
    children: Mapping[Key, TaskChild] = field(default_factory=dict)
    # who owns the ledger file: when someone else, a line of it never names the reader's own
    # process group as a task to kill (a teammate's forged line could name your shell's)
    owner: int | None = None
    # answers about live processes made from this reading, with when (rows.py: one check per attempt)
    checks: dict = field(default_factory=dict, compare=False, repr=False)
    # bytes of the ledger file this reading covers: a writer reads what was appended after them
    # before writing ends (`finals_since`), so an end another face wrote meanwhile is not written twice
    size: int = 0

    @property
    def last_number(self) -> int:
        return max((a.number for a in self.attempts), default=0)


def ledger_path(record_path: str | Path) -> Path:
    """q/<stem>.attempts.jsonl beside q/<stem>.submit.json."""
    path = Path(record_path)
    stem = path.name[: -len(RECORD_SUFFIX)] if path.name.endswith(RECORD_SUFFIX) else path.stem
    return path.with_name(stem + LEDGER_SUFFIX)


def attempt_dir(record_path: str | Path, number: int) -> Path:
    """q/attempts/<number>/: the archived record and the moved files of one attempt."""
    return Path(record_path).parent / ATTEMPTS_DIR / str(number)


def archived_record_path(record_path: str | Path, number: int) -> Path:
    return attempt_dir(record_path, number) / Path(record_path).name


# --- writing -----------------------------------------------------------------------------

# What json.dumps(data, sort_keys=True, separators=(",", ":")) does, made once: dumps builds a new
# encoder at every call, and a local run writes three lines per task.
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_KINDS = {AttemptEntry: "attempt", TaskStart: "start", TaskChild: "child", FinalState: "final",
          MovedFile: "moved", TaskUsage: "usage"}
# each kind's field names, looked up once rather than by dataclasses.fields() at every line
_NAMES = {kind: tuple(f.name for f in fields(kind)) for kind in _KINDS}


ATTEMPT_LINE = b'"type":"attempt"'     # in every attempt line `_line` writes (keys sorted, no spaces)
START_LINE = b'"type":"start"'         # in every local task's start line


def _line(entry: object) -> bytes:
    # a shallow copy (not asdict's deep one): entries hold only plain values and dicts
    data = {"type": _KINDS[type(entry)]}
    for name in _NAMES[type(entry)]:
        data[name] = getattr(entry, name)
    return (_ENCODE(data) + "\n").encode()


def entry_lines(entries: Iterable[object]) -> bytes:
    """The ledger lines of `entries` (AttemptEntry, TaskStart, TaskChild, FinalState, MovedFile, TaskUsage)."""
    return b"".join(_line(e) for e in entries)


def closed_line(attempt: int, time: str) -> bytes:
    return (json.dumps({"type": "closed", "attempt": attempt, "time": time}, sort_keys=True) + "\n").encode()


class LedgerWriter:
    """Appends to one ledger through an O_APPEND descriptor (one write per call).

    Before the first write it ends a line a crashed writer left torn, so the
    torn fragment stays a line of its own that readers skip. With `reserve`,
    it first claims that many bytes of disk in a spare file beside the ledger:
    when the disk fills up (a task's log took it all), the lines that say so
    are written there in place, and readers fold them in after the ledger's.
    """

    def __init__(self, path: str | Path, reserve: int = 0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = open_for_append(self.path)
        self._checked = False
        self._torn = False
        self._spare = _Spare.claim(self.path, reserve) if reserve else None

    def write(self, data: bytes) -> tuple[int, int] | None:
        """Append `data` whole; the (start, end) file offsets it took in the ledger, None when nothing
        (or the spare) took it. O_APPEND leaves the descriptor's offset at the end of its own write,
        whatever another writer appended after it: a reader of the span knows whether its write was
        the only one since it last read (`FinalsRecorder.known_to`)."""
        if not data:
            return None
        if not self._checked:
            self._checked = True
            size = os.fstat(self._fd).st_size
            self._torn = bool(size) and _last_byte(self.path, size) != b"\n"
        if self._torn:                   # a torn line (a crashed writer's, or ours a full disk cut
            data = b"\n" + data          # short) stays a line of its own that readers skip
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as err:
            # The part of a line the disk took is a fragment readers skip: the spare gets that line
            # whole (its remainder alone is no line either), and our next line starts a new one.
            written = len(data) - len(view)
            if written:
                self._torn = data[written - 1:written] != b"\n"
            cut = data.rfind(b"\n", 0, written) + 1
            if err.errno not in (errno.ENOSPC, errno.EDQUOT) or self._spare is None \
                    or not self._spare.put(b"\n" + data[cut:]):
                raise OSError(err.errno, err.strerror, str(self.path)) from None   # the line names it
            return None
        self._torn = False
        end = os.lseek(self._fd, 0, os.SEEK_CUR)
        return end - len(data), end

    def append(self, *entries: object) -> None:
        self.write(entry_lines(entries))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._spare is not None:
            self._spare.close()
            self._spare = None

    def __enter__(self) -> LedgerWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Spare:
    """Disk claimed ahead for a full disk: q/<stem>.attempts.jsonl.<pid>[.<n>].spare, zeros until used."""

    def __init__(self, path: Path, fd: int, size: int) -> None:
        self.path, self._fd, self._size, self._used = path, fd, size, 0

    @classmethod
    def claim(cls, ledger: Path, size: int) -> _Spare | None:
        """A new spare file, never one already there: a runner killed on a full disk leaves its
        spare, lines and all, and pids come round again (pid_max is often 32768). Truncated, and
        removed when unused, its lines were lost."""
        for tries in range(100):
            suffix = f".{tries}" if tries else ""
            path = ledger.with_name(f"{ledger.name}.{os.getpid()}{suffix}{SPARE_SUFFIX}")
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
                break
            except FileExistsError:
                continue
            except OSError:
                return None
        else:
            return None
        try:
            os.write(fd, b"\0" * size)
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)
            return None
        return cls(path, fd, size)

    def put(self, data: bytes) -> bool:
        """Write `data` into the claimed room; False when it does not fit."""
        if self._used + len(data) > self._size:
            return False
        os.pwrite(self._fd, data, self._used)
        self._used += len(data)
        return True

    def close(self) -> None:
        os.close(self._fd)
        if not self._used:
            self.path.unlink(missing_ok=True)


def _last_byte(path: Path, size: int) -> bytes:
    fd = -1
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        return os.pread(fd, 1, size - 1)
    except OSError:
        return b"\n"
    finally:
        if fd >= 0:
            os.close(fd)


def open_for_append(path: Path) -> int:
    """An O_APPEND descriptor of the regular file at `path` (created if absent).

    Never through a symlink (it would append to whatever it names), never
    blocking on a FIFO; anything but a regular file is InputError("record", ...).
    """
    try:
        return open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except UnreadableFile as err:         # no right to write it, a full disk: OSError as it comes
        raise InputError("record", f"its ledger {printable(str(path))} is {err}, not a regular file") from None


def append_entries(record_path: str | Path, entries: Iterable[object]) -> tuple[int, int] | None:
    """Append entries to the ledger of the record at `record_path` (one write); the span it took
    (`LedgerWriter.write`), None when there was nothing to write."""
    data = entry_lines(entries)
    if not data:
        return None
    with LedgerWriter(ledger_path(record_path)) as writer:
        return writer.write(data)


def ledger_size(record_path: str | Path) -> int:
    """How many bytes the ledger beside `record_path` holds now (0 when none or not a file)."""
    try:
        info = os.stat(ledger_path(record_path), follow_symlinks=False)
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


@dataclass(frozen=True)
class LedgerNews:
    """What lines other writers appended to a ledger say of task ends (`ends_since`)."""

    finals: Mapping[Key, int]                       # (attempt, value) -> the highest restart count said
    # (attempt, value) -> (the restart count of the run they are of, None when no final line of this
    # reading names it, and the usage figures said, by name, the newest line's value of each, by
    # final and usage lines alike)
    usage: Mapping[Key, tuple["int | None", Mapping[str, object]]]
    offset: int                                     # the offset read up to


def finals_since(record_path: str | Path, offset: int) -> tuple[dict[Key, int], int]:
    """The final lines appended to the ledger from byte `offset` on, as (attempt, value) -> the
    highest restart count said, and the offset read up to (`ends_since`)."""
    news = ends_since(record_path, offset)
    return dict(news.finals), news.offset


def said_figures(usage: Mapping[str, object] | None) -> dict[str, object]:
    """The figures a usage mapping says, by name (the ones a reader takes, `is_figure`)."""
    return {name: value for name, value in (usage or {}).items() if is_figure(value)}


def merged_figures(held: tuple[int | None, Mapping[str, object]] | None, restarts: int | None,
                   figures: Mapping[str, object]) -> tuple[int | None, Mapping[str, object]]:
    """The usage figures held of a task, as (the restart count of the run they are of, None when not
    known, and the figures by name), once a line says `figures`: a final line of a later run (`restarts`
    above the run held) starts anew, since a requeued task's runs each use their own; a final line
    of an earlier run (read after the later run's: another face wrote it late) says nothing of the
    run held and leaves it; a usage line (`restarts` None) is of the run held, its values replacing
    those held (as readers take the newest line's, `_filled`). One rule for the ledger's reader
    (`ends_since`) and the writer that skips usage the ledger holds already (backends.watch.finals):
    the writer added an earlier run's figures to the later run's, and skipped writing the later
    run's peak memory as if held; held as names alone, a corrected value (accounting's peak of a
    task, higher a poll after its end) read as held and was never written."""
    if held is None:
        return restarts, dict(figures)
    run, said = held
    if restarts is not None and run is not None and restarts < run:
        return held
    if restarts is not None and (run is None or restarts > run):
        return restarts, dict(figures)
    return run, {**said, **figures}


def ends_since(record_path: str | Path, offset: int) -> LedgerNews:
    """The final and usage lines appended to the ledger from byte `offset` on: another face (a retry's
    look at Slurm, a `status`, a watch) may record ends, and what they used, that a watcher is about
    to record. At most MAX_LEDGER_BYTES are read, a slice at a time, never through a symlink nor from
    a FIFO; a ledger that cannot be read, or shrank (replaced), is read from its start or tells nothing."""
    try:
        fd = open_regular(ledger_path(record_path), os.O_RDONLY)
    except (OSError, UnreadableFile):
        return LedgerNews({}, {}, offset)
    told: dict[Key, int] = {}
    used: dict[Key, tuple[int | None, Mapping[str, object]]] = {}
    try:
        size = os.fstat(fd).st_size
        start = end = offset if 0 <= offset <= size else 0
        for data, upto in _slices(fd, start, min(size - start, MAX_LEDGER_BYTES)):
            if not data.endswith(b"\n"):    # a line being written is read whole next time
                break
            end = upto
            for line in _typed_lines(data):      # in order: a usage line is of the run ended before it
                raw = _object(line)
                kind = raw.get("type") if raw is not None else None
                if kind == "final" and (final := _final(raw)) is not None:
                    key, restarts = (final.attempt, final.value), final.restart_count or 0
                    told[key] = max(restarts, told.get(key, -1))
                    used[key] = merged_figures(used.get(key), restarts, said_figures(final.usage))
                elif kind == "usage" and _int(raw.get("attempt")) is not None and isinstance(raw.get("usage"), dict) \
                        and _id(raw, "value") != _DAMAGED:
                    key = (raw["attempt"], _id(raw, "value"))
                    used[key] = merged_figures(used.get(key), None, said_figures(raw["usage"]))
    except OSError:
        return LedgerNews({}, {}, offset)
    finally:
        os.close(fd)
    return LedgerNews(told, used, end)


# --- reading -----------------------------------------------------------------------------

def _int(raw: object, minimum: int | None = None) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, int):
        return None
    return raw if minimum is None or raw >= minimum else None


_DAMAGED = -1   # what `_id` reads a damaged id as: no task's (values and task ids are never negative)


def _id(raw: dict, key: str) -> int | None:
    """A task's value or array task id: null (a plain job's) or an integer from 0. Anything else
    (`"value": -1`, `"task_id": "2"`) is _DAMAGED: its line was dropped without a word (keyed to no
    task, a local task showed NOT_RUN), and a string value read as null named a plain job's task."""
    found = raw.get(key)
    if found is None:
        return None
    return found if not isinstance(found, bool) and isinstance(found, int) and found >= 0 else _DAMAGED


def _opt_str(raw: object) -> str | None:
    return raw if isinstance(raw, str) else None


def _number(raw: object) -> float | None:
    """A finite number, else None: json reads Infinity and NaN, and int(inf) traces back."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    try:
        value = float(raw)
    except OverflowError:          # an integer beyond any float
        return None
    return value if math.isfinite(value) else None


def _attempt_entry(raw: dict) -> AttemptEntry | None:
    number = _int(raw.get("number"), 1)
    jobs = raw.get("job_ids")
    if number is None or not isinstance(jobs, list):
        return None
    overrides = raw.get("overrides")
    return AttemptEntry(number, str(raw.get("kind") or "submit"), str(raw.get("time") or ""),
                        str(raw.get("backend") or ""), tuple(str(j) for j in jobs),
                        str(raw.get("values") or ""), overrides if isinstance(overrides, dict) else {},
                        _int(raw.get("tasks"), 0) or 0)


def _start(raw: dict) -> TaskStart | None:
    attempt, value = _int(raw.get("attempt"), 1), _id(raw, "value")
    if attempt is None or value == _DAMAGED:
        return None
    return TaskStart(attempt, value, str(raw.get("time") or ""), _pid(raw.get("pid")),
                     _opt_str(raw.get("host")), _int(raw.get("pid_start")))


def _pid(raw: object) -> int | None:
    """A process id Linux can have (pid_max is at most 2**22); anything else judges no process."""
    pid = _int(raw, 1)
    return pid if pid is not None and pid <= PID_MAX else None


def _child(raw: dict) -> TaskChild | None:
    attempt, pid, value = _int(raw.get("attempt"), 1), _pid(raw.get("pid")), _id(raw, "value")
    if attempt is None or pid is None or value == _DAMAGED:
        return None
    return TaskChild(attempt, value, pid, _int(raw.get("pid_start")))


def _final(raw: dict) -> FinalState | None:
    attempt = _int(raw.get("attempt"))
    state, value, task_id = raw.get("state"), _id(raw, "value"), _id(raw, "task_id")
    if attempt is None or not isinstance(state, str) or not _is_end(state) or _DAMAGED in (value, task_id):
        return None
    usage = raw.get("usage")
    return FinalState(attempt, value, str(raw.get("job_id") or ""), task_id,
                      state, _int(raw.get("exit_code")), _int(raw.get("signal")), _number(raw.get("elapsed")),
                      _opt_str(raw.get("node")), _int(raw.get("restart_count")), _opt_str(raw.get("reason")),
                      usage if isinstance(usage, dict) else None, _opt_str(raw.get("time")),
                      _opt_str(raw.get("start")))


@functools.lru_cache(maxsize=256)   # a 10k-task ledger repeats a handful of spellings
def _is_end(state: str) -> bool:
    """A state a task ends in, as every writer of a final line says one: any other word
    (`FAIL\\u001b[31m[bold]ED`) made the task UNKNOWN over Slurm's FAILED, its line not said as damage."""
    from backends.states import JobState   # only a ledger with final lines: a first local run does without it

    try:
        return JobState.parse(state).is_terminal
    except ValueError:
        return False


def _moved(raw: dict) -> MovedFile | None:
    attempt, value = _int(raw.get("attempt"), 0), _id(raw, "value")
    source, target = raw.get("source"), raw.get("target")
    if attempt is None or not is_file_name(source) or not is_file_name(target) or value == _DAMAGED:
        return None
    return MovedFile(attempt, value, str(raw.get("what") or "log"), source, target)


def _filled(newer: dict, older: Mapping[str, object] | None) -> dict:
    """A usage line's figures, each one it does not say taken from what was recorded before: a
    writer that recorded usage before accounting told the peak (hyperion-submit's wait at the
    end) took away the peak an earlier line held, in every face that reads the history."""
    said = {name: value for name, value in newer.items() if is_figure(value)}
    return {**older, **said} if older else said


class _Fold:
    """The ledger's lines folded as they are fed, a slice of whole lines at a time: the file is
    never held whole (a 900 MB ledger cost 900 MB, and a watcher's `finals_since` a second copy)."""

    def __init__(self) -> None:
        self.attempts: dict[int, AttemptEntry] = {}
        self.starts: dict[Key, TaskStart] = {}
        self.finals: dict[Key, FinalState] = {}
        self.moved: dict[tuple[int, int | None, str], MovedFile] = {}
        self.closed: set[int] = set()
        self.last_start: dict[int, TaskStart] = {}
        self.children: dict[Key, TaskChild] = {}
        self.usages: dict[Key, dict] = {}
        self.skipped = 0

    def feed(self, data: bytes) -> None:
        """Fold the lines of `data` (whole lines: a line is never split between two feeds)."""
        candidates = failed = 0
        finals = self.finals
        for line in _typed_lines(data):
            candidates += 1
            raw = _object(line)
            kind = raw.get("type") if raw is not None else None
            if kind == "final" and (entry := _final(raw)) is not None:
                known = finals.get((entry.attempt, entry.value))
                if known is None or (entry.restart_count or 0) > (known.restart_count or 0):
                    finals[(entry.attempt, entry.value)] = entry   # first wins, unless Slurm ran it again
                    if known is not None:    # the usage lines read so far were the earlier run's
                        self.usages.pop((entry.attempt, entry.value), None)
            elif kind == "start" and (start := _start(raw)) is not None:
                self.starts[(start.attempt, start.value)] = start
                self.last_start[start.attempt] = start
            elif kind == "child" and (child := _child(raw)) is not None:
                self.children[(child.attempt, child.value)] = child
            elif kind == "attempt" and (attempt := _attempt_entry(raw)) is not None:
                self.attempts.setdefault(attempt.number, attempt)
            elif kind == "moved" and (move := _moved(raw)) is not None:
                self.moved[(move.attempt, move.value, move.what)] = move
            elif kind == "closed" and _int(raw.get("attempt"), 1) is not None:
                self.closed.add(raw["attempt"])
            elif kind == "usage" and _int(raw.get("attempt")) is not None and isinstance(raw.get("usage"), dict) \
                    and _id(raw, "value") != _DAMAGED:
                key = (raw["attempt"], _id(raw, "value"))
                self.usages[key] = _filled(raw["usage"], self.usages.get(key))
            else:
                failed += 1
        self.skipped += _nonblank_lines(data) - candidates + failed   # lines without a type: skipped unread

    def ledger(self) -> Ledger:
        finals = dict(self.finals)
        for key, usage in self.usages.items():      # the newest usage line of an ended task wins
            if key in finals:
                finals[key] = replace(finals[key], usage=_filled(usage, finals[key].usage))
        return Ledger(tuple(self.attempts[n] for n in sorted(self.attempts)), self.starts, finals, self.moved,
                      frozenset(self.closed), self.skipped, self.last_start, self.children)


def parse_ledger(data: bytes) -> Ledger:
    """Fold the ledger's lines; torn, foreign or oversized lines are counted and skipped."""
    fold = _Fold()
    fold.feed(data)
    return fold.ledger()


READ_SLICE = 8 * 1024 * 1024    # bytes of the ledger read (and held) at a time


def _slices(fd: int, start: int, limit: int) -> Iterator[tuple[bytes, int]]:
    """The bytes of `fd` from `start` on (at most `limit` of them) as slices of whole lines, each with
    the file offset it ends at; the last slice may end mid-line (a line being written). Memory stays
    at a slice or two: a line longer than MAX_LINE, which no reader parses, is dropped as it is read
    and stands as a one-byte line (``x``, or nothing if it was blank), so a sparse 1 GB ledger of NULs
    is never held."""
    position, end, carry, dropping = start, start + limit, b"", None
    while position < end:
        piece = os.pread(fd, min(READ_SLICE, end - position), position)
        if not piece:
            break
        position += len(piece)
        if dropping is not None:             # inside a line too long to parse: skip to its end
            cut = piece.find(b"\n")
            if cut < 0:
                dropping = dropping or _NOT_BLANK.search(piece) is not None
                continue
            dropping = dropping or _NOT_BLANK.search(piece, 0, cut) is not None
            piece = piece[cut + 1:]
            yield (b"x\n" if dropping else b"\n"), position - len(piece)
            dropping = None
        data = carry + piece if carry else piece
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        if cut:
            yield (data[:cut] if cut < len(data) else data), position - len(carry)
        if len(carry) > MAX_LINE:            # the line being read is junk already: drop it as it comes
            dropping, carry = _NOT_BLANK.search(carry) is not None, b""
    if dropping is not None:
        yield (b"x" if dropping else b""), position
    elif carry:
        yield carry, position


def _typed_lines(data: bytes) -> Iterable[bytes]:
    """The lines naming a type, in order, found by searching for it: a Python step per line
    of a ledger of 30 million junk lines took 14 s per 100 MB (one at a time, not a list of
    them all, which doubled the memory)."""
    position = 0
    while (hit := data.find(_TYPE, position)) >= 0:
        start = data.rfind(b"\n", 0, hit) + 1
        end = data.find(b"\n", hit)
        end = len(data) if end < 0 else end
        yield data[start:end] if end - start <= MAX_LINE else b""   # not copied to be refused
        position = end + 1


def _nonblank_lines(data: bytes) -> int:
    """How many lines hold more than whitespace (what `skipped` counts), counted in C a slice
    of whole lines at a time, in memory bounded by the slice even for a line of a gigabyte."""
    count = start = 0
    while start < len(data):
        cut = data.rfind(b"\n", start, start + _SLICE) if start + _SLICE < len(data) else len(data)
        if cut < 0:      # a line longer than a slice: one line, blank or not
            cut = data.find(b"\n", start)
            cut = len(data) if cut < 0 else cut
            count += _NOT_BLANK.search(data, start, cut) is not None
        else:
            lines = data[start:cut].translate(None, _BLANK).split(b"\n")
            count += len(lines) - lines.count(b"")
        start = cut + 1
    return count


def _not_said(name: str) -> None:
    """NaN, Infinity or -Infinity in a ledger line (see `_finite`)."""
    return None


_TOO_LONG = object()   # `_object`'s reading of an integer of more than 19 digits, while the line is read


def _said_long(raw: object, top: bool = True) -> object:
    """`raw` with each integer of more than 19 digits read as "not said" (None), but a task's value or
    task id (`_id`'s keys), which stays _TOO_LONG, damage: read as null, it named a plain job's task
    (its line the end of a single job's task), as a string one did (`_id`)."""
    if raw is _TOO_LONG:
        return None
    if isinstance(raw, list):
        return [_said_long(item, False) for item in raw]
    if isinstance(raw, dict):
        return {key: item if top and key in ("value", "task_id") and item is _TOO_LONG else _said_long(item, False)
                for key, item in raw.items()}
    return raw


def _finite(text: str) -> float | None:
    """A number of a ledger line with a fraction or exponent; one JSON cannot spell back (1e999 read
    as inf, and NaN, Infinity) is damage, read as "not said": `history --json` printed an attempt's
    overrides holding them as bare NaN and Infinity, which strict JSON readers (jq) refuse."""
    value = float(text)
    return value if math.isfinite(value) else None


# an exponent, or 300 digits in a row (309 before a fraction read as inf): a run is tried once,
# from its first digit, not again at each of its digits
_EXPONENT = re.compile(rb"[0-9][eE]|(?<![0-9])[0-9]{300}")


def _object(line: bytes) -> dict | None:
    """One ledger line as a dict; None for anything else (torn, foreign, nested too deep)."""
    if len(line) > MAX_LINE:
        return None
    if line.lstrip()[:1] != b"{" and not line.startswith(codecs.BOM_UTF8):   # json.loads reads past a BOM
        return None
    too_long: list[str] = []

    def bounded_int(text: str) -> object:
        """An integer of the line; one of more than 19 digits is damage: _TOO_LONG (`_said_long`)."""
        if len(text.lstrip("-")) <= 19:
            return int(text)
        too_long.append(text)
        return _TOO_LONG

    try:
        # json reads 1e999 as inf: only a number with an exponent (or 309 digits) can, so only such a line pays a
        # call per float (20% of a 100,000-line ledger's read when every line did)
        if b"\x00" in line or _EXPONENT.search(line):     # (json reads UTF-16/32 too: bytes tell nothing)
            raw = json.loads(line, parse_int=bounded_int, parse_float=_finite, parse_constant=_not_said)
        else:
            raw = json.loads(line, parse_int=bounded_int, parse_constant=_not_said)
        if too_long and isinstance(raw, dict):
            raw = _said_long(raw)
    except (ValueError, RecursionError):    # a line of 100000 '[' is within MAX_LINE
        return None
    return raw if isinstance(raw, dict) else None


def _lines_with(data: bytes, needle: bytes) -> bytes:
    """The lines of `data` that hold `needle` (a fold of them costs what they are, not the ledger)."""
    return b"\n".join(line for line in data.split(b"\n") if needle in line) + b"\n" if needle in data else b""


def read_ledger(record_path: str | Path, only: bytes | None = None) -> Ledger:
    """The ledger beside a record; an empty one when there is none (records before attempts).

    InputError("record", ...) for a ledger that is not a regular file or is larger
    than MAX_LEDGER_BYTES: read as empty, every task it ran would show as never run.
    `only`: fold the lines holding these bytes alone (`ATTEMPT_LINE`: its attempts, for their numbers).
    """
    path = ledger_path(record_path)
    if not os.path.lexists(path):
        return Ledger()
    shown = printable(str(path))
    try:
        fd, info = open_bounded(path, MAX_LEDGER_BYTES)
    except UnreadableFile as err:
        raise InputError("record", f"cannot read its ledger {shown}: {err}") from None
    try:
        fold, size, lines, tail = _Fold(), 0, 0, 0
        for data, size in _slices(fd, 0, MAX_LEDGER_BYTES + 1):
            lines += data.count(b"\n")
            if lines > MAX_LEDGER_LINES:
                raise InputError("record", f"cannot read its ledger {shown}: more than "
                                 f"{MAX_LEDGER_LINES} lines, more than hyperion writes")
            cut = len(data) if data.endswith(b"\n") else data.rfind(b"\n") + 1
            head, last = (data, b"") if cut == len(data) else (data[:cut], data[cut:])
            fold.feed(head if only is None else _lines_with(head, only))
            before = fold.skipped
            fold.feed(last if only is None else _lines_with(last, only))
            # a last line without its newline may be one being written, no damage to tell of: but only
            # a line hyperion writes ('{' first); NULs a crash left at the end, or anything else there,
            # is damage (all of it went unsaid, and the tasks it hid showed as never run), as are the
            # damaged lines before it
            tail = fold.skipped - before if last.lstrip()[:1] == b"{" else 0
        if size > MAX_LEDGER_BYTES:
            raise more_than(MAX_LEDGER_BYTES)
    except OSError as err:
        reason = err if isinstance(err, UnreadableFile) else (err.strerror or err)
        raise InputError("record", f"cannot read its ledger {shown}: {reason}") from None
    finally:
        os.close(fd)
    for spare in sorted(path.parent.glob(f"{path.name}.*{SPARE_SUFFIX}")):
        fold.feed(b"\n" + (_read_regular(spare, SPARE_CAP) or b"").replace(b"\0", b""))
    return replace(fold.ledger(), owner=info.st_uid, size=size, skipped=fold.skipped - tail)


def _read_regular(path: Path, cap: int) -> bytes | None:
    """The bytes of a regular file (at most `cap`), None for anything else or nothing there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, cap)
    except OSError:
        return None
    finally:
        os.close(fd)
