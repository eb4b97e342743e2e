"""Submission records: q/<log-stem>.submit.json, the hand-off to jobs, console and retries.

A record says what was launched and where every task's log is, so other tools
never have to reconstruct it from the command line.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path

from backends.errors import InputError
from backends.fileio import UnreadableFile, read_bounded, umask_mode
from backends.job_id import JOB_ID
from backends.cluster import is_cluster_name
from backends.printable import printable
from backends.records.paths import ATTEMPTS_DIR, RECORD_SUFFIX, is_file_name

MAX_RECORD_BYTES = 256 * 1024 * 1024   # a 100000-task record is about 50 MB
MAX_TASKS = 100_000          # tasks of one submission (submit.array.MAX_VALUES): a record may not claim more
MAX_NUMBER = 10 ** 9         # the largest array value (submit.array.MAX_VALUE) and physical task id
LOCAL_JOB = "local"                      # the job id of every task of a local run
MAX_ATTEMPT = 10 ** 6        # attempts of one output pattern a record may claim to be


@dataclass(frozen=True)
class TaskRecord:
    """One logical array value (or the single task of a non-array job)."""

    value: int | None
    job_id: str
    array_task_id: int | None
    log: str
    slurm_out: str | None
    slurm_err: str | None
    attempt: int = 1                 # the attempt of the submission history that ran it


@dataclass(frozen=True)
class JobRecord:
    """One sbatch submission (one window)."""

    job_id: str
    offset: int
    array_expression: str | None
    # submitted --hold, waiting for a watcher's release (None: a record from before this was kept, or
    # a local one): only such a hold is the watcher's to lift, not one the user or an admin put on
    held: bool | None = None


@dataclass(frozen=True)
class SubmitRecord:
    path: str
    backend: str
    argv: tuple[str, ...]
    cfg: str
    options: dict
    script: str | None
    array_name: str | None
    jobs: tuple[JobRecord, ...]
    tasks: tuple[TaskRecord, ...]
    submitted_at: str
    cwd: str
    attempt: int = 1                 # its number in q/<stem>.attempts.jsonl (1 for older records)
    kind: str = "submit"             # submit | retry | resubmit
    # How to wait for the jobs again after hyperion-submit's wait ended early (hangup, lost
    # terminal): the command, whose exit statuses are hyperion-submit's.
    reattach: str | None = None
    # The command that reruns what failed when the launcher has its own (a run of `hyperion-checkpoint
    # retry --submit`: that command again, which finds what is still missing); None: `hyperion-jobs
    # retry RECORD`. Written at submit time so that every later face names what the launcher named.
    rerun: str | None = None
    # Values sbatch never took: a later window was refused after earlier ones were queued. Those
    # run and are this record; `refused` is sbatch's line for the rest (None when all went in).
    unsubmitted: tuple[int, ...] = ()
    refused: str | None = None
    # The Slurm cluster sbatch queued the jobs on when the site file sent them to one (`--clusters`,
    # `-M`: sbatch answered "N;NAME"); None: the local cluster (and every record before it was kept).
    # Every squeue, sacct, scancel and scontrol about these jobs asks it (backends.cluster).
    cluster: str | None = None
    # (old folder, new folder) when read from a folder moved or copied since it was written
    moved: tuple[str, str] | None = None

    def rebased(self, path: str) -> str:
        """`path` as it is now: under the new folder if it was under the one moved or copied."""
        if self.moved is None or not path.startswith(self.moved[0] + os.sep):
            return path
        return self.moved[1] + path[len(self.moved[0]):]


def reattach_command(path: str | Path) -> str:
    """``hyperion-jobs watch /abs/q/x.submit.json``: waits as hyperion-submit did, same exit statuses."""
    from backends.shellwords import shell_quote

    return f"hyperion-jobs watch {shell_quote(os.path.abspath(path))}"


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON via a temp file in the same directory and os.replace (readers never see half).

    The file gets the mode a plain open() would give under the umask (mkstemp
    alone makes 0600, whatever the umask): a record holds ``--env`` values, so
    under umask 077 it stays 0600.
    """
    import tempfile  # with shutil and random: readers of records never need it

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, umask_mode())
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        if err.filename is not None:
            raise
        raise OSError(err.errno, err.strerror, str(path)) from None   # a full disk: the line must say where
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def record_json(record: SubmitRecord) -> dict:
    """What a record file holds (where it was read from is not written: its paths say it)."""
    data = _as_dict(record)
    del data["moved"]
    if not record.unsubmitted and record.refused is None:   # every window went in: as records always were
        del data["unsubmitted"], data["refused"]
    if record.cluster is None:      # the local cluster: as records always were
        del data["cluster"]
    return data


_ATOMS = frozenset({str, int, float, bool, type(None)})
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _as_dict(value: object) -> object:
    """What ``dataclasses.asdict`` makes of `value`, equal in every part, without passing each of
    a record's strings and numbers through ``copy.deepcopy`` (which hands them back as they are)
    and looking up each task's fields again: a 2000-task record took 15 ms of every submission."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    names = _FIELD_NAMES.get(kind)
    if names is None and is_dataclass(kind):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))
    if names is not None:
        return {name: _as_dict(getattr(value, name)) for name in names}
    if isinstance(value, tuple) and hasattr(value, "_fields"):    # a named tuple, as asdict keeps it
        return kind(*[_as_dict(v) for v in value])
    if isinstance(value, (list, tuple)):
        return kind(_as_dict(v) for v in value)
    if isinstance(value, dict):
        return kind((_as_dict(k), _as_dict(v)) for k, v in value.items())
    import copy

    return copy.deepcopy(value)


def save_record(record: SubmitRecord) -> None:
    write_json_atomic(Path(record.path), record_json(record))


MAX_RERUN = 8192   # a command line; a record's longer text is not offered for pasting


RERUN_PROGRAM = ("hyperion-checkpoint", "retry")   # the only launcher that keeps its own rerun command


def _rerun(value: object) -> str | None:
    """The launcher's own rerun command, if the record holds a sane one (else hyperion-jobs retry's).

    Offered for pasting, so a record (a teammate's, a copied folder's) may not choose what runs: only
    `hyperion-checkpoint retry ...`, quoted again word by word (`x; rm -rf ~` stays arguments)."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_RERUN:
        return None
    try:
        words = shlex.split(value)
    except ValueError:
        return None
    return shlex.join(words) if tuple(words[:2]) == RERUN_PROGRAM else None


# the array NAME hyperion-submit takes (backends.submit.array.SHELL_NAME, a layer above records)
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _BadField(ValueError):
    """A record field of the wrong type or out of bounds: `field: problem`, one line."""


def _number(raw: dict, key: str, where: str) -> int | None:
    value = raw[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NUMBER:
        raise _BadField(f"{where}.{key}: expected an integer from 0 to {MAX_NUMBER} or null, got {_shown(value)}")
    return value


def _cfg(raw: dict) -> str:
    """The site file the run used; empty in records that name none (a hand-made or a test record)."""
    value = raw["cfg"]
    return "" if value == "" else str(_text(raw, "cfg", ""))


def _text(raw: dict, key: str, where: str, optional: bool = False) -> str | None:
    value = raw.get(key) if optional else raw[key]
    if value is None and optional:
        return None
    if not is_file_name(value):
        raise _BadField(f"{where + '.' if where else ''}{key}: expected a path{' or null' if optional else ''}, "
                        f"got {_shown(value)}")
    return value


def _job_id(raw: dict, where: str) -> str:
    value = raw["job_id"]
    if not isinstance(value, str) or not (value == LOCAL_JOB or JOB_ID.match(value)):
        raise _BadField(f"{where}.job_id: expected a Slurm job id (digits) or \"{LOCAL_JOB}\", got {_shown(value)}")
    return value


def _job(raw: dict, index: int) -> JobRecord:
    where = f"jobs[{index}]"
    if not isinstance(raw, dict):
        raise _BadField(f"{where}: expected an object, got {_shown(raw)}")
    offset = _number(raw, "offset", where)
    if offset is None:
        raise _BadField(f"{where}.offset: expected an integer from 0 to {MAX_NUMBER}, got null")
    expression = raw.get("array_expression")
    if expression is not None and not isinstance(expression, str):
        raise _BadField(f"{where}.array_expression: expected text or null, got {_shown(expression)}")
    held = raw.get("held")
    if held is not None and not isinstance(held, bool):
        raise _BadField(f"{where}.held: expected true, false or null, got {_shown(held)}")
    return JobRecord(_job_id(raw, where), offset, expression, held)


def _consistent(tasks: tuple[TaskRecord, ...], array_name: object) -> None:
    """An array record's tasks all have values, a plain job's one task none: a record saying
    otherwise was planned into a retry without --array that ran the command once with NAME."""
    if array_name is not None and not isinstance(array_name, str):
        raise _BadField(f"array_name: expected text or null, got {_shown(array_name)}")
    if array_name is not None and not _SHELL_NAME.match(array_name):
        # status, list and history showed such a record; retry then refused it naming --array, never given
        raise _BadField(f"array_name: {_shown(array_name)} is not a shell identifier ([A-Za-z_][A-Za-z0-9_]*)")
    for index, task in enumerate(tasks):
        if (task.value is None) != (array_name is None):
            said = "has no value, but the record is an array" if task.value is None else \
                "has a value, but the record is not an array (array_name null)"
            raise _BadField(f"tasks[{index}].value: {said}")


def _shown(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, float) or value == value else "NaN"
    return printable(text if len(text) <= 40 else text[:40] + "...")


def _task(raw: dict, index: int) -> TaskRecord:
    """Every field a reader sorts, hashes, stats or opens is checked: a string value or a list
    log in a hand-edited record made every command trace back (and `list` show nothing)."""
    where = f"tasks[{index}]"
    if not isinstance(raw, dict):
        raise _BadField(f"{where}: expected an object, got {_shown(raw)}")
    return TaskRecord(value=_number(raw, "value", where), job_id=_job_id(raw, where),
                      array_task_id=_number(raw, "array_task_id", where), log=_text(raw, "log", where),
                      slurm_out=_text(raw, "slurm_out", where, optional=True),
                      slurm_err=_text(raw, "slurm_err", where, optional=True),
                      attempt=_attempt(raw.get("attempt")))


def _tasks(raw: dict) -> tuple[TaskRecord, ...]:
    tasks = tuple(_task(t, i) for i, t in enumerate(_items(raw, "tasks")))
    _consistent(tasks, raw.get("array_name"))
    return tasks


def _items(raw: dict, key: str) -> list:
    items = raw[key]
    if not isinstance(items, list):
        raise _BadField(f"{key}: expected a list, got {_shown(items)}")
    if len(items) > MAX_TASKS:
        raise _BadField(f"{key}: {len(items)} entries; a submission has at most {MAX_TASKS}")
    return items


MAX_REFUSED = 4096   # sbatch's line about a refused window, as a record keeps it


def _unsubmitted(raw: dict) -> tuple[int, ...]:
    """The values a refused window left out (none in records where every window went in).

    As hyperion-submit writes them: with sbatch's `refused` line, each once (and none a value the
    record's own tasks ran: `_left_out_not_run`). A hand-edited record saying otherwise is refused:
    a value listed twice was submitted twice by a retry, and the line it makes had no reason to give."""
    if raw.get("unsubmitted") is None:
        return ()
    values = _items(raw, "unsubmitted")
    seen: set[int] = set()
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_NUMBER:
            raise _BadField(f"unsubmitted[{index}]: expected an integer from 1 to {MAX_NUMBER}, got {_shown(value)}")
        if value in seen:
            raise _BadField(f"unsubmitted[{index}]: {value} is listed twice")
        seen.add(value)
    if values and raw.get("refused") is None:
        raise _BadField("unsubmitted: values left out without sbatch's reason (refused is missing or null)")
    return tuple(values)


def _left_out_not_run(record: SubmitRecord) -> SubmitRecord:
    """A value left out is none the record's tasks ran: a retry would submit it a second time."""
    if record.unsubmitted:
        ran = {task.value for task in record.tasks}
        for index, value in enumerate(record.unsubmitted):
            if value in ran:
                raise _BadField(f"unsubmitted[{index}]: {value} is also one of the record's tasks, which ran it")
    return record


def _refused(raw: object) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise _BadField(f"refused: expected text or null, got {_shown(raw)}")
    return raw[:MAX_REFUSED]


def _cluster(raw: object) -> str | None:
    """The cluster the jobs were queued on (None, or absent: the local one); a name that is not a
    plain Slurm cluster name would reach squeue's argv, so it is the record's damage."""
    if raw is None:
        return None
    if not is_cluster_name(raw):
        raise _BadField(f"cluster: expected a Slurm cluster name (letters, digits, _ . -; not all) or null, got {_shown(raw)}")
    return raw


def _attempt(raw: object) -> int:
    """Records written before attempts existed have none: they are attempt 1."""
    if raw is None:
        return 1
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_ATTEMPT:
        raise _BadField(f"attempt: expected an integer from 1 to {MAX_ATTEMPT}, got {_shown(raw)}")
    return raw


MAX_RECORD_DIGITS = 4300   # what int() reads (a shorter wrong number is refused by its field's check)


def _record_int(text: str) -> int:
    """An integer of a record; a longer one is damage, said in a user's words: Python's own ("Exceeds
    the limit (4300 digits) for integer string conversion ...; use sys.set_int_max_str_digits() to
    increase the limit") told the user to change the interpreter."""
    digits = len(text.lstrip("-"))
    if digits > MAX_RECORD_DIGITS:
        raise ValueError(f"a number of {digits} digits (at most {MAX_RECORD_DIGITS})")
    return int(text)


def load_record(path: str | Path) -> SubmitRecord:
    """Read a record; InputError("record", ...) for a missing, corrupt, foreign or hostile file.

    Only a regular file of at most MAX_RECORD_BYTES is read (a FIFO would block,
    /dev/zero never end); deep nesting and huge numbers are errors, not tracebacks.
    """
    shown = printable(str(path))
    try:
        raw = json.loads(read_bounded(path, MAX_RECORD_BYTES).decode("utf-8"), parse_int=_record_int)
    except UnreadableFile as err:
        raise InputError("record", f"cannot read {shown}: {err}") from None
    except RecursionError:      # Python's own words ("maximum recursion depth exceeded ...") say nothing to a user
        raise InputError("record", f"{shown} is not a record: JSON nested deeper than Python reads") from None
    except ValueError as err:   # bad JSON, bad UTF-8, a 5000-digit number
        raise InputError("record", f"{shown} is not JSON: {printable(str(err))[:200]}") from None
    if not isinstance(raw, dict):
        kind = {list: "array", str: "string", bool: "boolean", int: "number",
                float: "number"}.get(type(raw), "null")
        raise InputError("record", f"{shown} is not a hyperion-submit record (a JSON {kind}, not an object)")
    try:
        return _relocated(path, _left_out_not_run(_own_path(path, SubmitRecord(
            path=raw["path"], backend=str(raw["backend"]), argv=tuple(raw["argv"]),
            cfg=_cfg(raw), options=dict(raw["options"]), script=_text(raw, "script", "", optional=True),
            array_name=raw.get("array_name"),
            jobs=tuple(_job(j, i) for i, j in enumerate(_items(raw, "jobs"))),
            tasks=_tasks(raw),
            submitted_at=str(raw["submitted_at"]), cwd=str(raw["cwd"]),
            attempt=_attempt(raw.get("attempt")), kind=str(raw.get("kind") or "submit"),
            reattach=raw.get("reattach") if isinstance(raw.get("reattach"), str) else None,
            rerun=_rerun(raw.get("rerun")),
            unsubmitted=_unsubmitted(raw), refused=_refused(raw.get("refused")),
            cluster=_cluster(raw.get("cluster")),
        ))))
    except KeyError as err:
        raise InputError("record", f"{shown} is not a hyperion-submit record (no {printable(str(err))[:80]} key)") from None
    except _BadField as err:
        raise InputError("record", f"{shown}: {err}") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as err:
        raise InputError("record", f"{shown} is not a hyperion-submit record "
                         f"({type(err).__name__}: {printable(str(err))[:200]})") from None


def _own_path(read_from: str | Path, record: SubmitRecord) -> SubmitRecord:
    """A record names itself by the absolute path hyperion-submit wrote it at. Checked after the
    other keys (a file of another kind is told by the key it lacks): `"path": ""` traced back
    (ValueError: PosixPath('.') has an empty name) and a relative one was read from the working
    directory, every task of its ledger there NOT_RUN. No hyperion-submit wrote another kind: a
    record edited by hand is told what to write."""
    if not is_file_name(record.path) or not os.path.isabs(record.path) or not Path(record.path).name:
        raise _BadField(f"path: expected the record's absolute path (this file's is "
                        f"{printable(str(_stands_for(read_from)))}), got {_shown(record.path)}")
    return record


def _relocated(read_from: str | Path, record: SubmitRecord) -> SubmitRecord:
    """The record as it is where it was read: a folder moved (`mv exp exp_old`) or copied
    (`cp -r exp/log before_rerun`) keeps the paths it was written with. Read from there, it is
    that folder's record, its logs there too: the old paths named a file no longer there, or,
    for a copy, the original's record and logs a later rerun replaced.

    The folder that moved is what the written and the actual path do not share at their end
    (an attempt's archived copy under q/attempts/N/ stands for q/ itself). A record file read
    from outside any q/ folder is a copy of the file alone, not of its folder: read as written.
    """
    actual = _stands_for(read_from)
    if actual.parent.name != "q":     # a record file copied out of any q/ (kept, edited): no folder moved
        return record
    written = Path(record.path)
    if not written.is_absolute() or written in (actual, Path(os.path.realpath(actual))) \
            or _same_file(written, actual):   # the same file through a symlink is not a move
        return record
    old, new = written.parts, actual.parts
    shared = 0
    while shared < min(len(old), len(new)) - 1 and old[-1 - shared] == new[-1 - shared]:
        shared += 1
    moved = (str(Path(*old[:len(old) - shared])), str(Path(*new[:len(new) - shared])))
    record = replace(record, path=str(actual), moved=moved)
    return replace(record, tasks=tuple(
        replace(t, log=record.rebased(t.log), slurm_out=t.slurm_out and record.rebased(t.slurm_out),
                slurm_err=t.slurm_err and record.rebased(t.slurm_err)) for t in record.tasks))


def _stands_for(read_from: str | Path) -> Path:
    """The record path a file read at `read_from` stands for: itself, or for an attempt's archived
    copy under q/attempts/N/, the record in q/ (the path hyperion-submit wrote into it)."""
    actual = Path(os.path.abspath(read_from))
    if actual.parent.parent.name == ATTEMPTS_DIR and actual.parent.name.isdigit():
        return actual.parent.parent.parent / actual.name
    return actual


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def find_records(dirs: Sequence[Path], max_depth: int = 5,
                 unlisted: list[tuple[str, str]] | None = None) -> list[Path]:
    """Every ``q/*.submit.json`` under the given directories, newest first.

    Walks at most `max_depth` levels and skips hidden directories, so pointing
    it at an experiment tree stays quick. Each folder that could not be listed (a
    teammate's q/ under umask 077) is added to `unlisted` as (path, reason): its
    records are missing from the answer, and "no submit records" alone hid why.
    """
    return _newest_first(set(_walk_records(dirs, max_depth, unlisted)))


def _newest_first(found: Iterable[Path]) -> list[Path]:
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0
    return sorted(found, key=mtime, reverse=True)


def records_within(dirs: Sequence[Path], seconds: float, max_depth: int = 5,
                   unlisted: list[tuple[str, str]] | None = None) -> tuple[list[Path], bool]:
    """`find_records` as far as a walk of `seconds` gets, and whether it was cut short. For a look
    no user asked for (a preview's search for the runs of its checkpoint)."""
    found, finished, met = _walk_for(dirs, seconds, max_depth, first=False)
    if unlisted is not None:
        unlisted.extend(met)
    return _newest_first(set(found)), not finished


def any_record(dirs: Sequence[Path], max_depth: int = 5, budget: float = 0.5) -> bool:
    """Whether `find_records` would list one, answered at the first found: the console opens on
    the runs when there are some. A tree walked for longer than `budget` seconds without one
    answers False (a home folder of many files must not delay the first screen)."""
    return bool(_walk_for(dirs, budget, max_depth, first=True)[0])


def _walk_for(dirs: Sequence[Path], seconds: float, max_depth: int,
              first: bool) -> tuple[list[Path], bool, list[tuple[str, str]]]:
    """The records `_walk_records` meets in `seconds` (`first`: the first one only), whether the
    walk ended, and the folders it could not list. The walk runs in a daemon thread waited for
    `seconds`: one listing of a hung NFS mount would block past any deadline checked between folders."""
    import threading

    deadline = time.monotonic() + seconds
    found: list[Path] = []
    met: list[tuple[str, str]] = []
    ended = threading.Event()

    def walk() -> None:
        for path in _walk_records(dirs, max_depth, met, deadline):
            found.append(path)
            if first:
                break
        if found and first or time.monotonic() <= deadline:
            ended.set()

    threading.Thread(target=walk, name="find-records", daemon=True).start()
    finished = ended.wait(seconds)
    return found[:], finished, met[:]


def _walk_records(dirs: Sequence[Path], max_depth: int, unlisted: list[tuple[str, str]] | None,
                  deadline: float | None = None):
    """The records of `find_records`, as the walk meets them (until `deadline`, a monotonic clock)."""
    def note(err: OSError) -> None:
        if unlisted is not None:
            unlisted.append((os.fsdecode(err.filename) if err.filename is not None else "?",
                             err.strerror or str(err)))

    for top in map(Path, dirs):
        if top.is_file() and top.name.endswith(RECORD_SUFFIX):
            yield top.resolve()
            continue
        base_depth = len(top.resolve().parts)
        for root, subdirs, files in os.walk(top, onerror=note):
            if deadline is not None and time.monotonic() > deadline:
                return
            here = Path(root).resolve()
            if here.name == "q":
                yield from (here / f for f in files if f.endswith(RECORD_SUFFIX))
            subdirs[:] = [d for d in subdirs if not d.startswith(".")
                          and len(here.parts) - base_depth < max_depth]
