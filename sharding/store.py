"""Checkpoint metadata in NeMo Curator's on-disk layout.

```
<ckpt>/.nemo_curator_metadata/.slurm_array_completion/run.json
<ckpt>/.nemo_curator_metadata/.slurm_array_completion/completed_slurm_array_<16 hex>.json
<ckpt>/.nemo_curator_metadata/.failed_tasks/slurm_job_<J>/array_task_<A>/restart_<R>/shard_<i>/failed_tasks.json
```
Writers are atomic (temp + fsync + link/replace) because many array tasks
write into one directory at once. Readers never delete and never crash on a
corrupt or foreign file: they skip it and report it as a `Problem`.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from sharding.errors import ShardingError

METADATA_DIRNAME = ".nemo_curator_metadata"
COMPLETION_DIRNAME = ".slurm_array_completion"
FAILED_DIRNAME = ".failed_tasks"
RUN_FILENAME = "run.json"
MANIFEST_PREFIX = "completed_slurm_array_"
FAILED_FILENAME = "failed_tasks.json"
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def compact_json(payload: Mapping[str, Any]) -> str:
    """The byte-exact serialisation Curator uses for identities and metadata files."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True)


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
    """A file a reader skipped, and why."""

    path: str
    message: str


@dataclass(frozen=True)
class Attempt:
    """Where one try of one array task writes its failed-task records."""

    job: str          # SLURM_JOB_ID, or local_<pid>
    array_task: str   # SLURM_ARRAY_TASK_ID, or "local"
    restart: str      # SLURM_RESTART_COUNT, or "0"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Attempt":
        env = os.environ if env is None else env
        return cls(job=env.get("SLURM_JOB_ID") or f"local_{os.getpid()}",
                   array_task=env.get("SLURM_ARRAY_TASK_ID") or "local",
                   restart=env.get("SLURM_RESTART_COUNT") or "0")

    def relative_dir(self, shard: int) -> Path:
        return Path(f"slurm_job_{self.job}", f"array_task_{self.array_task}", f"restart_{self.restart}", f"shard_{shard}")


@dataclass(frozen=True)
class FailedRecord:
    """One attempt's failed-task marker; ``details`` is None for Curator's empty marker."""

    path: str
    job: str
    array_task: str
    restart: str
    shard: int
    details: Mapping[str, Any] | None
    mtime: float


def manifest_identity(run: RunConfig, shard: int) -> dict[str, int]:
    return {"minimum_shard_index": run.minimum_shard_index, "shard_index": shard, "total_shards": run.total_shards}


def manifest_name(run: RunConfig, shard: int) -> str:
    """``completed_slurm_array_<first 16 hex of sha256(compact identity)>.json``, as Curator names it."""
    digest = hashlib.sha256(compact_json(manifest_identity(run, shard)).encode("utf-8")).hexdigest()
    return f"{MANIFEST_PREFIX}{digest[:16]}.json"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory: Path, text: str) -> Path:
    """A durable temporary file beside its final name (same filesystem, so link/replace is atomic)."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide shared metadata from other users
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(name)


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one, never a part."""
    temp = _write_temp(path.parent, text)
    try:
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
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
        temp.unlink(missing_ok=True)
    _fsync_dir(path.parent)
    return True


def _strict_int(payload: Mapping[str, Any], key: str) -> int | None:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


class Checkpoint:
    """One checkpoint directory: its run configuration, completion manifests and failures."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).absolute()
        self.metadata_dir = self.path / METADATA_DIRNAME
        self.completion_dir = self.metadata_dir / COMPLETION_DIRNAME
        self.run_path = self.completion_dir / RUN_FILENAME
        self.failed_dir = self.metadata_dir / FAILED_DIRNAME

    def require_dir(self, field: str = "PATH") -> None:
        """A checkpoint given by a user must be an existing directory (a typo is not "run.json missing")."""
        if not self.path.exists():
            raise ShardingError(field, f"no such directory: {self.path}")
        if not self.path.is_dir():
            raise ShardingError(field, f"not a directory: {self.path}")

    # run.json ---------------------------------------------------------------
    def read_run(self) -> RunConfig | None:
        """The run configuration; None when absent. A corrupt run.json is an error: nothing can be planned."""
        if not self.run_path.is_file():
            return None
        try:
            payload = _read_json(self.run_path)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ShardingError("run.json", f"cannot read {self.run_path}: {exc}") from None
        if not isinstance(payload, dict):
            raise ShardingError("run.json", f"{self.run_path} does not hold a JSON object")
        minimum, total = _strict_int(payload, "minimum_shard_index"), _strict_int(payload, "total_shards")
        if minimum is None or total is None:
            raise ShardingError("run.json", f"{self.run_path} needs integer minimum_shard_index and total_shards, got {payload}")
        if total <= 0 or minimum < 0:
            raise ShardingError("run.json", f"{self.run_path} has total_shards={total}, minimum_shard_index={minimum}: "
                                "total must be > 0 and minimum non-negative")
        return RunConfig(minimum, total)

    def require_run(self) -> RunConfig:
        run = self.read_run()
        if run is None:
            raise ShardingError("run.json", f"not found at {self.run_path}; use the checkpoint path of the original array run")
        return run

    def ensure_run(self, run: RunConfig) -> bool:
        """Create run.json for ``run`` or check the existing one matches; True if created here."""
        if run.total_shards <= 0 or run.minimum_shard_index < 0:
            raise ShardingError("total_shards", f"invalid run total_shards={run.total_shards}, "
                                f"minimum_shard_index={run.minimum_shard_index}")
        created = self.run_path.is_file() is False and create_if_absent(self.run_path, compact_json(run.payload()))
        if created:
            return True
        self._check_same_run(run)
        return False

    def _check_same_run(self, run: RunConfig) -> None:
        try:
            payload = _read_json(self.run_path)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
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
        write_atomically(path, compact_json({**manifest_identity(run, shard), "status": "completed"}))
        return path

    def completed(self, run: RunConfig | None = None) -> tuple[set[int], list[Problem]]:
        """Shards with a valid manifest for this run, and the manifests that were skipped."""
        run = run or self.require_run()
        done: set[int] = set()
        problems: list[Problem] = []
        if not self.completion_dir.is_dir():
            return done, problems
        with os.scandir(self.completion_dir) as entries:
            names = sorted(e.name for e in entries if e.name.startswith(MANIFEST_PREFIX) and e.name.endswith(".json"))
        for name in names:
            path = self.completion_dir / name
            shard, problem = self._read_manifest(path, run)
            if problem is not None:
                problems.append(Problem(str(path), problem))
            elif shard is not None:
                done.add(shard)
        return done, problems

    @staticmethod
    def _read_manifest(path: Path, run: RunConfig) -> tuple[int | None, str | None]:
        try:
            payload = _read_json(path)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            return None, f"unreadable completion manifest ({exc.__class__.__name__}: {exc}); skipped"
        if not isinstance(payload, dict):
            return None, "completion manifest is not a JSON object; skipped"
        if payload.get("status") != "completed":
            return None, f"completion manifest has status {payload.get('status')!r}, not 'completed'; skipped"
        values = {k: _strict_int(payload, k) for k in ("minimum_shard_index", "shard_index", "total_shards")}
        missing = [k for k, v in values.items() if v is None]
        if missing:
            return None, f"completion manifest lacks integer {', '.join(missing)}; skipped"
        if (values["minimum_shard_index"], values["total_shards"]) != (run.minimum_shard_index, run.total_shards):
            return None, (f"completion manifest is for another run (minimum_shard_index={values['minimum_shard_index']}, "
                          f"total_shards={values['total_shards']}; run.json has {run.minimum_shard_index}, "
                          f"{run.total_shards}); skipped")
        shard = values["shard_index"]
        assert shard is not None
        if shard not in run.shards:
            return None, f"completion manifest shard_index {shard} is outside the run's range; skipped"
        return shard, None

    # failed-task records ----------------------------------------------------
    def write_failed(self, shard: int, attempt: Attempt | None = None,
                     details: Mapping[str, Any] | None = None) -> Path:
        """Record that ``shard`` had failed tasks in this attempt (a fresh directory per attempt)."""
        attempt = attempt or Attempt.from_env()
        path = self.failed_dir / attempt.relative_dir(shard) / FAILED_FILENAME
        write_atomically(path, compact_json(dict(details)) if details is not None else "")
        return path

    def scan_failed(self) -> tuple[list[FailedRecord], list[Problem]]:
        """Every failed-task record, oldest first, and the files that did not fit the layout."""
        records: list[FailedRecord] = []
        problems: list[Problem] = []
        if not self.failed_dir.is_dir():
            return records, problems
        for path in sorted(self.failed_dir.rglob(FAILED_FILENAME)):
            record, problem = self._read_failed(path)
            if record is not None:
                records.append(record)
            if problem is not None:
                problems.append(Problem(str(path), problem))
        records.sort(key=lambda r: (r.mtime, r.path))
        return records, problems

    def failed_records(self) -> list[FailedRecord]:
        return self.scan_failed()[0]

    def _read_failed(self, path: Path) -> tuple[FailedRecord | None, str | None]:
        parts = path.relative_to(self.failed_dir).parts
        prefixes = ("slurm_job_", "array_task_", "restart_", "shard_")
        if len(parts) != 5 or not all(p.startswith(x) for p, x in zip(parts, prefixes)):
            return None, "failed-task record outside the slurm_job_*/array_task_*/restart_*/shard_* layout; skipped"
        job, task, restart, shard_text = (p[len(x):] for p, x in zip(parts, prefixes))
        if not shard_text.lstrip("-").isdigit():
            return None, f"failed-task record with a non-integer shard {shard_text!r}; skipped"
        try:
            text = path.read_text(encoding="utf-8")
            mtime = path.stat().st_mtime
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"unreadable failed-task record ({exc}); skipped"
        details, problem = None, None
        if text.strip():
            try:
                loaded = json.loads(text)
            except json.JSONDecodeError as exc:
                loaded, problem = None, f"failed-task record is not JSON ({exc}); counted, details ignored"
            if isinstance(loaded, dict):
                details = loaded
            elif loaded is not None:
                details = {"value": loaded}
        return FailedRecord(str(path), job, task, restart, int(shard_text), details, mtime), problem
