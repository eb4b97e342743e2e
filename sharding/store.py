"""Checkpoint metadata in NeMo Curator's on-disk layout.

```
<ckpt>/.nemo_curator_metadata/.slurm_array_completion/run.json
<ckpt>/.nemo_curator_metadata/.slurm_array_completion/completed_slurm_array_<16 hex>.json
<ckpt>/.nemo_curator_metadata/.failed_tasks/slurm_job_<J>/array_task_<A>/restart_<R>/shard_<i>/failed_tasks.json
```
That failed-task folder is where Curator puts ``NEMO_CURATOR_FAILED_TASKS_DIR``
unless the user sets it; its earlier tutorial left out ``restart_<R>`` and let
``FAILED_TASKS_RUN_ID`` replace ``slurm_job_<J>``, and a user may name any
attempt-scoped folder. So every failed_tasks.json below ``.failed_tasks`` is a
record: its shard is the one its deepest ``shard_<i>`` folder names (none: a
failure of no known shard, listed but not counted for any), its job, array
task and restart those its ``slurm_job_``, ``array_task_`` and ``restart_``
folders name, where it has them.
Writers are atomic (temp + fsync + link/replace) because many array tasks
write into one directory at once; like NeMo Curator's writer they go on (with
a warning) where a shared filesystem cannot fsync a directory or remove a temp
file, and every file ends with a newline. Files follow the umask.

Readers never delete and never crash on a corrupt, foreign or hostile file:
they read only regular files (a FIFO named like a manifest would block a plain
``open`` forever), at most MAX_METADATA_BYTES of each, integers of at most
MAX_INT_DIGITS digits, and skip anything else (or what they may not read) as
a `Problem`.
"""
from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import math
import os
import re
import stat
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from threading import Event
from typing import Any, Mapping
from collections.abc import Callable, Container, Iterable, Iterator

from backends.fileio import UnreadableFile, directory_problem, kind_of_mode, read_bounded_stat, umask_mode
from backends.job_id import JOB_ID
from backends.printable import printable, quoted
from sharding.errors import ReadStopped, ShardingError

METADATA_DIRNAME = ".nemo_curator_metadata"
COMPLETION_DIRNAME = ".slurm_array_completion"
FAILED_DIRNAME = ".failed_tasks"
RUN_FILENAME = "run.json"
MANIFEST_PREFIX = "completed_slurm_array_"
FAILED_FILENAME = "failed_tasks.json"
MAX_METADATA_BYTES = 1 << 20   # a manifest is ~80 bytes, a failed-task record a few KiB
MAX_INT_DIGITS = 19            # 2**63 - 1 has 19: total_shards 10**12 fits, 5000 digits does not
MAX_INDEX = 2 ** 63 - 1
MAX_FAILED_DEPTH = 16          # folders below .failed_tasks searched; a record sits 4 down
_SHARD_DIR = re.compile(r"-?[0-9]{1,19}\Z")
# Curator's failed-task folder for a run without an array (``local_attempt_<uuid>/failed_tasks.json``).
LOCAL_ATTEMPT_PREFIX = "local_attempt_"
# Keys Hyperion's writer adds to a failed-task record's JSON (Curator's readers accept extra keys; its
# own records lack them): the array job and task, so a record names its task as hyperion-jobs does
# (``12358_6``), where its ``slurm_job_<J>`` folder holds the task's own job id (SLURM_JOB_ID, 12364).
ARRAY_JOB_KEY = "slurm_array_job_id"
ARRAY_TASK_KEY = "slurm_array_task_id"


def compact_json(payload: Mapping[str, Any]) -> str:
    """The byte-exact serialisation Curator uses for identities (hashing: no newline)."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True)


def metadata_text(payload: Mapping[str, Any]) -> str:
    """What a metadata file holds: the compact JSON and a final newline, as Curator writes it."""
    return compact_json(payload) + "\n"


class UnreadableMetadata(OSError):
    """A checkpoint file that cannot or must not be read; str() is the reason, one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def _is_dir(entry: os.DirEntry) -> bool:
    """Whether an entry is a directory (a symlink to one too), as os.walk sorts them; False when
    it cannot be told (a vanished entry)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _reason(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "a symlink loop"
    return err.strerror or str(err)


def read_metadata_text(path: str | Path, cap: int = MAX_METADATA_BYTES, *,
                       follow_symlinks: bool = True) -> tuple[str, float]:
    """(text, mtime) of a regular file of at most `cap` bytes; UnreadableMetadata otherwise.

    Read as every hostile file is (`fileio.read_bounded`): never blocking on a
    FIFO, never more than ``cap + 1`` bytes.
    """
    try:
        data, info = read_bounded_stat(path, cap, follow_symlinks=follow_symlinks)
    except UnreadableFile as err:
        raise UnreadableMetadata(err.reason) from None
    try:
        return data.decode("utf-8"), info.st_mtime
    except UnicodeDecodeError as err:
        raise UnreadableMetadata(f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start})") from None


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ValueError(f"a number of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _finite_or_text(text: str) -> float | str:
    """A number with a fraction or exponent; kept as its text where no float holds it (1e999 is
    inf), as NaN and Infinity are: `failed --json` printed 1e999 back as bare Infinity."""
    value = float(text)
    return value if math.isfinite(value) else text


def parse_metadata_json(text: str) -> Any:
    """json.loads with bounded integers; ValueError (one line) for anything it cannot read.

    NaN and Infinity (Python's json writes them) are kept as their names, and a number too large
    for a float (1e999) as its text: read as floats they would be printed again as bare NaN or
    Infinity by `failed --json`, which strict JSON readers refuse.
    """
    try:
        return json.loads(text, parse_int=_bounded_int, parse_float=_finite_or_text, parse_constant=str)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _status_said(status: object) -> str:
    """What a manifest's status is, in a user's words: `{}` said "has status None" (Python's)."""
    if status is None:
        return "has no status (a completed shard's says 'completed')"
    if isinstance(status, str):
        return f"has status {quoted(status)}, not 'completed'"
    if isinstance(status, (list, dict)):
        return f"has {'a list' if isinstance(status, list) else 'an object'} for its status, not 'completed'"
    return f"has status {json.dumps(status)[:80]}, not 'completed'"   # true, 5, as the file says them


def _warn(message: str) -> None:
    """A shared-filesystem hiccup that does not make the write fail: said on stderr, once."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "hyperion"
    print(printable(f"{prog}: warning: {message}"), file=sys.stderr, flush=True)


@dataclass(frozen=True)
class RunConfig:
    """The logical run a checkpoint belongs to; fixed for all its retries."""

    minimum_shard_index: int
    total_shards: int

    @property
    def maximum_shard_index(self) -> int:
        return self.minimum_shard_index + self.total_shards - 1

    @property
    def shards(self) -> range:
        return range(self.minimum_shard_index, self.maximum_shard_index + 1)

    def payload(self) -> dict[str, int]:
        return {"minimum_shard_index": self.minimum_shard_index, "total_shards": self.total_shards}


@dataclass(frozen=True)
class Problem:
    """A file a reader skipped, and why. `unknown`: what it says about a shard's completion could
    not be read, so that shard may be complete although it is not counted so. `counted`: not
    skipped, only its details were left out (a failed-task record that is not JSON still counts)."""

    path: str
    message: str
    unknown: bool = False
    counted: bool = False

    def as_json(self) -> dict[str, Any]:
        """What `--json` outputs list: both flags too, so a script can tell a record that still
        counts its shard failed (`counted`) from a skipped file, without reading the message."""
        return {"path": self.path, "message": self.message, "counted": self.counted, "unknown": self.unknown}


def outside_run(record: "FailedRecord", run: RunConfig) -> Problem | None:
    """A failed-task record of a shard the run does not have (a foreign or hand-made folder), said once."""
    if record.shard is None or record.shard in run.shards:
        return None
    return Problem(record.path, f"failed-task record of shard {record.shard}, outside the run's shards "
                                f"{run.minimum_shard_index}-{run.maximum_shard_index}; not counted")


def slurm_id(value: object) -> str | None:
    """A Slurm job or array task id a failed-task record's JSON gives (a job id's text, `JOB_ID`, or
    an integer), as its canonical decimal text if it is at most MAX_INDEX; None for anything else (a
    hostile record's text, a negative number, true, "9999999999999999999" as 9999999999999999999):
    the record is then named by its job alone."""
    if isinstance(value, str) and JOB_ID.match(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return str(value) if 0 <= value <= MAX_INDEX else None


@dataclass(frozen=True)
class Attempt:
    """Where one try of one array task writes its failed-task records."""

    job: str          # SLURM_JOB_ID, or local_<pid>
    array_task: str   # SLURM_ARRAY_TASK_ID, or "local"
    restart: str      # SLURM_RESTART_COUNT, or "0"
    array_job: str | None = None   # SLURM_ARRAY_JOB_ID of an array task under Slurm

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Attempt":
        env = os.environ if env is None else env
        job = env.get("SLURM_JOB_ID")
        return cls(job=job or f"local_{os.getpid()}",
                   array_task=env.get("SLURM_ARRAY_TASK_ID") or "local",
                   restart=env.get("SLURM_RESTART_COUNT") or "0",
                   array_job=(env.get("SLURM_ARRAY_JOB_ID") or None) if job else None)

    def array_keys(self) -> dict[str, str]:
        """The keys a record of this attempt adds to its JSON: the array job and task ids, when both
        are Slurm ids (none for a local run or a job that is no array)."""
        job, task = slurm_id(self.array_job), slurm_id(self.array_task)
        if job is None or task is None:
            return {}
        return {ARRAY_JOB_KEY: job, ARRAY_TASK_KEY: task}

    def relative_dir(self, shard: int) -> Path:
        return Path(f"slurm_job_{self.job}", f"array_task_{self.array_task}", f"restart_{self.restart}", f"shard_{shard}")


@dataclass(frozen=True)
class FailedRecord:
    """One attempt's failed-task marker; ``details`` is None for Curator's empty marker (`empty`)
    and for a file that is not JSON (not `empty`: its warning says why). ``shard``, ``job``,
    ``array_task`` and ``restart`` are None where the record's folders do not name them (a
    ``NEMO_CURATOR_FAILED_TASKS_DIR`` the user chose). ``array_id`` is the task as hyperion-jobs
    names it, ``<array job>_<array task>`` (``12358_6``), where the record's JSON gives both
    (`record_array_id`; Curator's records and older ones do not): None otherwise."""

    path: str
    job: str | None
    array_task: str | None
    restart: str | None
    shard: int | None
    details: Mapping[str, Any] | None
    mtime: float
    empty: bool = True
    no_details_reason: str = "not JSON"   # why a record that is not `empty` has no details
    array_id: str | None = None

    @property
    def attempt(self) -> tuple[str | None, ...]:
        """What tells this record's attempt from others: its job, array task and restart, or, where
        its folders name none of them, the attempt-scoped folder: the one holding its shard_<i> folder
        (Curator writes <folder>/shard_<i>/failed_tasks.json; one folder per shard is no attempt each)."""
        ids = (self.job, self.array_task, self.restart)
        if any(i is not None for i in ids):
            return ids
        folders = Path(self.path).parent.parts
        deepest = max((n for n, name in enumerate(folders) if name.startswith("shard_")), default=None)
        return (str(Path(*folders[:deepest])) if self.shard is not None and deepest else str(Path(self.path).parent),)

    @property
    def without_details(self) -> str:
        """What stands in for the details when there are none."""
        return "(empty marker, as NeMo Curator writes it)" if self.empty else f"({self.no_details_reason}: details ignored)"


def manifest_identity(run: RunConfig, shard: int) -> dict[str, int]:
    return {"minimum_shard_index": run.minimum_shard_index, "shard_index": shard, "total_shards": run.total_shards}


def manifest_name(run: RunConfig, shard: int) -> str:
    """``completed_slurm_array_<first 16 hex of sha256(compact identity)>.json``, as Curator names it."""
    digest = hashlib.sha256(compact_json(manifest_identity(run, shard)).encode("utf-8")).hexdigest()
    return f"{MANIFEST_PREFIX}{digest[:16]}.json"


def _fsync_dir(path: Path) -> None:
    """Make the new directory entry durable where the filesystem can (NFS/Lustre may refuse: warn, go on).

    The file is already complete and visible after the rename or link; this only
    hurries its entry to disk, so a refusal is no reason to fail the shard.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        _warn(f"{path}: cannot fsync the directory ({_reason(err)}); the file is written, "
              "its entry may reach the disk later")


def _remove_temp(temp: Path) -> None:
    """Remove a temporary file; a failure leaves a stray dot-file (never read) and a warning."""
    try:
        temp.unlink(missing_ok=True)
    except OSError as err:
        _warn(f"{temp}: cannot remove the temporary file ({_reason(err)}); it is ignored by readers")


def _write_temp(directory: Path, text: str) -> Path:
    """A durable temporary file beside its final name (same filesystem, so link/replace is atomic).

    Its mode is what a plain open() would give under the umask: mkstemp's 0600
    would hide shared metadata from the group, 0644 would ignore a umask of 077.
    """
    import tempfile   # with shutil and random: readers (show, retry) never write

    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        os.fchmod(fd, umask_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _remove_temp(Path(name))
        raise
    return Path(name)


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one, never a part."""
    temp = _write_temp(path.parent, text)
    try:
        os.replace(temp, path)
    except BaseException:
        _remove_temp(temp)
        raise
    _fsync_dir(path.parent)


def create_if_absent(path: Path, text: str) -> bool:
    """Create ``path`` with ``text`` unless it exists; True if this call created it.

    A hard link fails with FileExistsError instead of overwriting, so of two
    writers racing exactly one wins, and the file is complete when it appears.
    """
    temp = _write_temp(path.parent, text)
    try:
        os.link(temp, path)
    except FileExistsError:
        return False
    finally:
        _remove_temp(temp)
    _fsync_dir(path.parent)
    return True


def _strict_int(payload: Mapping[str, Any], key: str) -> int | None:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


_ATTEMPT_PREFIXES = ("slurm_job_", "array_task_", "restart_", "shard_")


def _named(folders: tuple[str, ...], prefix: str) -> str | None:
    """What the deepest folder beginning with `prefix` names (``shard_3`` -> ``3``); None without one."""
    for folder in reversed(folders):
        if folder.startswith(prefix):
            return folder[len(prefix):]
    return None


def _shard_of(text: str | None) -> int | None:
    """The shard a ``shard_<i>`` folder names; None for none, or a name that is no shard number."""
    return int(text) if text is not None and _SHARD_DIR.match(text) else None


def _folders_name(folders: tuple[str, ...]) -> tuple[str | None, ...] | None:
    """The job, array task, restart and shard text a record's folders (below the failed-task
    folder) name; None for Curator's record of a run without an array (no shard to retry)."""
    if len(folders) == 1 and folders[0].startswith(LOCAL_ATTEMPT_PREFIX):
        return None
    return tuple(_named(folders, prefix) for prefix in _ATTEMPT_PREFIXES)


def _shard_named(folders: tuple[str, ...]) -> int | None:
    """The shard a record's folders name, None for none."""
    names = _folders_name(folders)
    return None if names is None else _shard_of(names[3])


def record_array_id(details: Mapping[str, Any] | None, folder_task: str | None) -> str | None:
    """``<array job>_<array task>`` of a record whose JSON gives both as Slurm ids (`slurm_id`) and
    whose ``array_task_<A>`` folder, if it has one, names the same task; None otherwise (Curator's
    record, an older one, or values that are no ids or contradict the folder: never shown)."""
    if not isinstance(details, Mapping):
        return None
    job, task = slurm_id(details.get(ARRAY_JOB_KEY)), slurm_id(details.get(ARRAY_TASK_KEY))
    if job is None or task is None or (folder_task is not None and slurm_id(folder_task) != task):
        return None
    return f"{job}_{task}"


def _newest_failures(records: Iterable[tuple[tuple[str, ...], Callable[[], os.stat_result]]],
                     shards: Container[int] | None, listed_once: bool = False) -> dict[int, float] | None:
    """Per shard the `records` name by their folders (of `shards` only, when given), the newest
    mtime of a regular file among them; each record is stat'ed (its callable) only when its shard
    is asked about, and one that cannot be is left out. None at a record with a second name (a hard
    link), unless `listed_once` (the caller left second names out, as `_failed_paths` does)."""
    newest: dict[int, float] = {}
    for folders, stat_of in records:
        shard = _shard_named(folders)
        if shard is None or (shards is not None and shard not in shards):
            continue
        try:
            info = stat_of()
        except OSError:
            continue
        if info.st_nlink > 1 and not listed_once:
            return None
        if stat.S_ISREG(info.st_mode):
            newest[shard] = max(info.st_mtime, newest.get(shard, info.st_mtime))
    return newest


def _each_file_once(paths: list[Path], problems: list[Problem]) -> list[Path]:
    """`paths` without second names of a file already listed (hard links), each of those a Problem."""
    first: dict[tuple[int, int], Path] = {}
    kept: list[Path] = []
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            kept.append(path)     # gone or unreadable: the read says why
            continue
        seen = first.setdefault((info.st_dev, info.st_ino), path)
        if seen is path:
            kept.append(path)
        else:
            problems.append(Problem(str(path), f"the same file as {seen} (a hard link); counted once"))
    return kept


class Checkpoint:
    """One checkpoint directory: its run configuration, completion manifests and failures."""

    def __init__(self, path: str | Path, stop: Event | None = None) -> None:
        self.path = Path(path).absolute()
        self.stop = stop        # set: the scans below raise ReadStopped at their next file
        self.metadata_dir = self.path / METADATA_DIRNAME
        self.completion_dir = self.metadata_dir / COMPLETION_DIRNAME
        self.run_path = self.completion_dir / RUN_FILENAME
        self.failed_dir = self.metadata_dir / FAILED_DIRNAME

    def require_dir(self, field: str = "PATH") -> None:
        """A checkpoint given by a user must be an existing directory (a typo is not "run.json missing")."""
        problem = directory_problem(self.path)   # a name too long is said, not a traceback
        if problem is not None:
            raise ShardingError(field, problem)

    def _go_on(self) -> None:
        """ReadStopped once the caller's stop event is set (looked at once per file or folder)."""
        if self.stop is not None and self.stop.is_set():
            raise ReadStopped(f"reading {self.path} stopped")

    # run.json ---------------------------------------------------------------
    def _run_exists(self) -> bool:
        """Whether anything is at run.json's path (a FIFO or directory there is an error, not absence)."""
        try:
            os.stat(self.run_path)
        except FileNotFoundError:
            return False
        except NotADirectoryError:
            return False      # a writer says it cannot write there; a reader, which folder is wrong
        except OSError as exc:
            raise ShardingError("run.json", f"cannot read {self.run_path}: {_reason(exc)}") from None
        return True

    def _blocked_folder(self) -> str | None:
        """Which metadata folder is something else (a file, a FIFO), if one is: "run.json not found"
        sent the user looking for another checkpoint when this one's folder had been replaced."""
        for folder in (self.path, self.metadata_dir, self.completion_dir):   # the checkpoint itself too
            try:
                mode = os.stat(folder).st_mode     # a symlink to a folder is one
            except OSError:
                return None
            if not stat.S_ISDIR(mode):
                return f"{folder} is {kind_of_mode(mode)}, not a folder"
        return None

    def read_run_text(self) -> str:
        """run.json's text, read as safely as the readers read it (for showing it)."""
        try:
            return read_metadata_text(self.run_path)[0]
        except UnreadableMetadata as exc:
            raise ShardingError("run.json", f"cannot read {self.run_path}: {exc}") from None

    def read_run(self) -> RunConfig | None:
        """The run configuration; None when absent. A corrupt run.json is an error: nothing can be planned."""
        if not self._run_exists():
            blocked = self._blocked_folder()
            if blocked is not None:
                raise ShardingError("run.json", f"cannot read {self.run_path}: {blocked}")
            return None
        text = self.read_run_text()          # its ShardingError already names the file and the problem
        try:
            payload = parse_metadata_json(text)
        except ValueError as exc:
            raise ShardingError("run.json", f"cannot read {self.run_path}: {exc}") from None
        if not isinstance(payload, dict):
            raise ShardingError("run.json", f"{self.run_path} does not hold a JSON object")
        minimum, total = _strict_int(payload, "minimum_shard_index"), _strict_int(payload, "total_shards")
        if minimum is None or total is None:
            raise ShardingError("run.json", f"{self.run_path} needs integer minimum_shard_index and total_shards, "
                                f"got {compact_json(payload)[:200]}")
        if total <= 0 or minimum < 0 or minimum + total - 1 > MAX_INDEX:
            raise ShardingError("run.json", f"{self.run_path} has total_shards={total}, minimum_shard_index={minimum}: "
                                f"total must be > 0, minimum non-negative and the last shard at most {MAX_INDEX}")
        return RunConfig(minimum, total)

    def require_run(self) -> RunConfig:
        run = self.read_run()
        if run is None:
            raise ShardingError("run.json", f"not found at {self.run_path}; use the checkpoint path of the original array run")
        return run

    def ensure_run(self, run: RunConfig) -> bool:
        """Create run.json for ``run`` or check the existing one matches; True if created here."""
        if run.total_shards <= 0 or run.minimum_shard_index < 0 or run.maximum_shard_index > MAX_INDEX:
            raise ShardingError("total_shards", f"invalid run total_shards={run.total_shards}, "
                                f"minimum_shard_index={run.minimum_shard_index} (the last shard must be at most {MAX_INDEX})")
        created = not self._run_exists() and create_if_absent(self.run_path, metadata_text(run.payload()))
        if created:
            return True
        self._check_same_run(run)
        return False

    def _check_same_run(self, run: RunConfig) -> None:
        text = self.read_run_text()          # its ShardingError already names the file and the problem
        try:
            payload = parse_metadata_json(text)
        except ValueError as exc:
            raise ShardingError("run.json", f"cannot read {self.run_path}: {exc}") from None
        if payload != run.payload():
            raise ShardingError("run.json", f"{self.run_path} holds {json.dumps(payload, sort_keys=True, separators=(',', ':'))}, "
                                f"this run has {compact_json(run.payload())}; use a separate checkpoint path for each logical run")

    # completion manifests ---------------------------------------------------
    def write_completion(self, shard: int, run: RunConfig | None = None) -> Path:
        """Mark ``shard`` complete (idempotent). Call only when none of its tasks failed."""
        run = run or self.require_run()
        if shard not in run.shards:
            raise ShardingError("shard_index", f"{shard} is outside the shard range "
                                f"[{run.minimum_shard_index}, {run.maximum_shard_index}]")
        path = self.completion_dir / manifest_name(run, shard)
        write_atomically(path, metadata_text({**manifest_identity(run, shard), "status": "completed"}))
        return path

    def completed(self, run: RunConfig | None = None) -> tuple[set[int], list[Problem]]:
        """Shards with a valid manifest for this run, and the manifests that were skipped.

        Costs time in the number of files in the completion folder, whatever total_shards is.
        """
        times, problems = self.completion_times(run)
        return set(times), problems

    def completion_times(self, run: RunConfig | None = None) -> tuple[dict[int, float], list[Problem]]:
        """`completed`'s shards, each with when its manifest was written (its mtime: a manifest holds
        no time, and every completion rewrites it), and the manifests that were skipped. A failure
        recorded after that time is no failure a later attempt completed (`coverage.standing_of`)."""
        run = run or self.require_run()
        done: dict[int, float] = {}
        problems: list[Problem] = []
        try:
            with os.scandir(self.completion_dir) as entries:
                names = sorted(e.name for e in entries if e.name.startswith(MANIFEST_PREFIX) and e.name.endswith(".json"))
        except (FileNotFoundError, NotADirectoryError):
            return done, problems
        except OSError as exc:
            problems.append(Problem(str(self.completion_dir), f"cannot list the completion folder ({_reason(exc)}); "
                                    "no shard counts as complete", unknown=True))
            return done, problems
        for name in names:
            self._go_on()
            found = self._read_manifest(self.completion_dir / name, run)
            if isinstance(found, Problem):
                problems.append(found)
            else:
                shard, mtime = found
                done[shard] = max(mtime, done.get(shard, mtime))   # two names of one shard: the newer
        return done, problems

    @staticmethod
    def _read_manifest(path: Path, run: RunConfig) -> tuple[int, float] | Problem:
        """The shard a manifest completes and the manifest's mtime, or why it does not count
        (`unknown` unless it is plainly another run's: then this run's shards are not its business)."""
        def skipped(message: str, unknown: bool = True) -> Problem:
            return Problem(str(path), f"{message}; skipped", unknown)

        try:
            text, mtime = read_metadata_text(path)
            payload = parse_metadata_json(text)
        except (OSError, ValueError) as exc:
            return skipped(f"unreadable completion manifest ({exc})")
        if not isinstance(payload, dict):
            return skipped("completion manifest is not a JSON object")
        if payload.get("status") != "completed":
            return skipped(f"completion manifest {_status_said(payload.get('status'))}")
        values = {k: _strict_int(payload, k) for k in ("minimum_shard_index", "shard_index", "total_shards")}
        missing = [k for k, v in values.items() if v is None]
        if missing:
            return skipped(f"completion manifest lacks integer {', '.join(missing)}")
        if (values["minimum_shard_index"], values["total_shards"]) != (run.minimum_shard_index, run.total_shards):
            return skipped(f"completion manifest is for another run (minimum_shard_index={values['minimum_shard_index']}, "
                           f"total_shards={values['total_shards']}; run.json has {run.minimum_shard_index}, "
                           f"{run.total_shards})", unknown=False)
        shard = values["shard_index"]
        assert shard is not None
        if shard not in run.shards:
            return skipped(f"completion manifest shard_index {shard} is outside the run's range", unknown=False)
        return shard, mtime

    # failed-task records ----------------------------------------------------
    def write_failed(self, shard: int, attempt: Attempt | None = None,
                     details: Mapping[str, Any] | None = None) -> Path:
        """Record that ``shard`` had failed tasks in this attempt (a fresh directory per attempt)."""
        attempt = attempt or Attempt.from_env()
        # The array job and task ids join the details (an empty marker stays Curator's empty file)
        text = metadata_text({**details, **attempt.array_keys()}) if details is not None else ""
        if attempt.job.startswith("local_") and attempt.restart.isascii() and attempt.restart.isdigit():
            return self._write_failed_local(shard, attempt, text)
        path = self._failed_path(shard, attempt)
        write_atomically(path, text)
        return path

    def _failed_path(self, shard: int, attempt: Attempt) -> Path:
        return self.failed_dir / attempt.relative_dir(shard) / FAILED_FILENAME

    def _write_failed_local(self, shard: int, attempt: Attempt, text: str) -> Path:
        """A local run's record, never over an earlier one: it is named after the worker's pid
        (local_<pid>), and pids come round again (pid_max is often 32768). A record already there
        is an earlier run's: this one takes the next free restart_<R>."""
        restart = int(attempt.restart)
        while True:
            path = self._failed_path(shard, dataclasses.replace(attempt, restart=str(restart)))
            path.parent.mkdir(parents=True, exist_ok=True)
            if create_if_absent(path, text):
                return path
            restart += 1

    def _failed_paths(self, problems: list[Problem]) -> list[Path]:
        """Every regular file named failed_tasks.json under the failed-task folder, each file once.

        A folder that cannot be listed is a Problem; so is a directory named like a
        record (not entered), and a folder nested deeper than any record sits (not
        entered: os.walk recursed, so a hostile tree of 1000 folders made a traceback).
        Symlinks are not followed, to folders (the failed-task folder itself too) or to records
        (a link to another record counted it twice; one out of the tree counted a file that is
        no record), and a
        second name of one file (a hard link) is a Problem, not a second failure.
        """
        return _each_file_once(sorted(Path(entry.path) for entry in self._failed_entries(problems)), problems)

    def _failed_entries(self, problems: list[Problem]) -> Iterator[os.DirEntry]:
        """The walk of `_failed_paths`: each file named failed_tasks.json as listed (a hard link's
        second name too), in no order; what does not fit goes to `problems`."""
        if self.failed_dir.is_symlink():     # to / it walked the whole disk, a warning per closed folder
            problems.append(Problem(str(self.failed_dir), "a symlink, not the checkpoint's own folder; "
                                    "not searched"))
            return
        stack: list[tuple[str, int]] = [(str(self.failed_dir), 0)]
        while stack:
            self._go_on()
            folder, depth = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError as exc:
                if depth == 0 and isinstance(exc, FileNotFoundError):
                    continue      # no failures recorded yet
                problems.append(Problem(folder, f"cannot list this folder ({_reason(exc)}); its records are not counted"))
                continue
            for entry in entries:
                is_dir = _is_dir(entry)
                if entry.name == FAILED_FILENAME:
                    if entry.is_symlink():
                        problems.append(Problem(entry.path, "a symlink, not a regular file; skipped"))
                    elif is_dir:
                        problems.append(Problem(entry.path, "a directory, not a regular file; skipped"))
                    else:
                        yield entry
                elif is_dir and not entry.is_symlink():
                    if depth + 1 <= MAX_FAILED_DEPTH:
                        stack.append((entry.path, depth + 1))
                    else:
                        problems.append(Problem(entry.path, f"a folder nested more than {MAX_FAILED_DEPTH} levels "
                                                "deep in the failed-task folder; not searched"))

    def scan_failed(self) -> tuple[list[FailedRecord], list[Problem]]:
        """Every failed-task record, oldest first, and the files that did not fit the layout."""
        records: list[FailedRecord] = []
        problems: list[Problem] = []
        for path in self._failed_paths(problems):
            self._go_on()
            record, problem = self._read_failed(path)
            if record is not None:
                records.append(record)
            if problem is not None:
                problems.append(Problem(str(path), problem, counted=record is not None))
        records.sort(key=lambda r: (r.mtime, r.path))
        problems.sort(key=lambda p: p.path)
        return records, problems

    def failed_records(self) -> list[FailedRecord]:
        return self.scan_failed()[0]

    def failure_times(self, shards: Container[int] | None = None) -> dict[int, float]:
        """Per shard a failed-task record's folders name (of `shards` only, when given: a retry asks
        about the complete ones), the newest record's mtime, as `scan_failed` would give it, without
        reading any record: a retry asks only whether a failure is newer than its shard's manifest
        (`coverage.failed_after`); a hard-linked record is counted once, as `scan_failed` does.
        Files that do not fit are `show`'s and `failed`'s to report; here they are left out. One stat per record of those shards, from the walk's own listing: with
        Paths, sorting and the hard-link check of `_failed_paths`, 20,000 records added 1.7 s to a
        retry that used to read manifests alone."""
        start = len(str(self.failed_dir)) + 1
        listed = ((tuple(entry.path[start:].split(os.sep)[:-1]), partial(entry.stat, follow_symlinks=False))
                  for entry in self._failed_entries([]))
        newest = _newest_failures(listed, shards)
        if newest is None:
            # A second name of a record, maybe under another shard's folder: counted once, under the
            # name `failed` counts it by (its name that sorts first): a record linked into a complete
            # shard's folder made retry say that shard failed after it completed while `shards` and
            # `failed` did not.
            once = ((path.relative_to(self.failed_dir).parts[:-1], partial(os.lstat, path))
                    for path in self._failed_paths([]))
            newest = _newest_failures(once, shards, listed_once=True)
        return newest

    def _read_failed(self, path: Path) -> tuple[FailedRecord | None, str | None]:
        names = _folders_name(path.relative_to(self.failed_dir).parts[:-1])
        if names is None:
            return None, None    # Curator's record of a run without an array: no shard to retry
        job, task, restart, shard_text = names
        record, problem = self._read_failed_file(path, (job, task, restart, _shard_of(shard_text)))
        if shard_text is None or _SHARD_DIR.match(shard_text):
            return record, problem
        # A folder the user named (NEMO_CURATOR_FAILED_TASKS_DIR=.failed_tasks/shard_3_retry): the record
        # is kept, under no shard, as a record whose folders name none (it was dropped, and lost to `failed`)
        what = "more than 19 digits" if re.fullmatch(r"-?[0-9]+", shard_text, re.ASCII) else "not an integer"
        said = f"failed-task record whose shard '{printable(shard_text[:40])}' is {what}"
        if record is None:
            return None, f"{said}; {problem or 'skipped'}"
        return record, f"{said}: listed under no shard" + (f"; {problem}" if problem else "")

    def _read_failed_file(self, path: Path, names: tuple[str | None, str | None, str | None, int | None]
                          ) -> tuple[FailedRecord | None, str | None]:
        job, task, restart, shard = names
        try:
            text, mtime = read_metadata_text(path, follow_symlinks=False)
        except UnreadableMetadata as exc:
            return self._failed_without_details(path, names, str(exc))
        details, problem = None, None
        if text.strip():
            try:
                loaded = parse_metadata_json(text)
            except ValueError as exc:
                loaded, problem = None, f"failed-task record is not JSON ({exc}); counted, details ignored"
            if isinstance(loaded, dict):
                details = loaded
            elif loaded is not None:
                details = {"value": loaded}
        empty = not text.strip() or (problem is None and details is None)   # nothing, or JSON null
        return FailedRecord(str(path), job, task, restart, shard, details, mtime, empty=empty,
                            array_id=record_array_id(details, task)), problem

    @staticmethod
    def _failed_without_details(path: Path, names: tuple[str | None, str | None, str | None, int | None],
                                reason: str) -> tuple[FailedRecord | None, str]:
        """A regular file whose text cannot be read (over the cap, not UTF-8, no right) is still a
        failure: its existence is what marks one (Curator's are empty). Anything else is skipped."""
        try:
            info = os.lstat(path)
        except OSError:
            info = None
        if info is None or not stat.S_ISREG(info.st_mode):
            return None, f"unreadable failed-task record ({reason}); skipped"
        record = FailedRecord(str(path), *names, details=None, mtime=info.st_mtime, empty=False,
                              no_details_reason=reason)
        return record, f"failed-task record's details cannot be read ({reason}); counted, details ignored"
