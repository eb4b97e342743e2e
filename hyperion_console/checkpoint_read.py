"""One read of a checkpoint for the Checkpoint screen, made off the interface thread.

Listing and parsing every completion manifest costs ~1.7 s for 100,000 shards
on local disk and ~10 s for 10,000 on NFS: the screen reads in a worker thread
and shows the result whole, so what it shows always comes from one read.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from threading import Event

from backends.attempt import slurm_keys
from backends.client import QueryStopped
from backends.records.attempts import ledger_path
from backends.records.history import load_history
from backends.watch.budget import QueryBudget
from backends.watch.slurm.accounting import Runner, stoppable
from sharding.coverage import Coverage, coverage
from sharding.errors import ShardingError
from sharding.resubmit import ShardSizes, StillRunning, running_answer, shard_sizes, size_flags
from sharding.retry import retry_from_coverage
from sharding.run_records import record_checkpoint, records_naming
from sharding.store import FAILED_FILENAME, MAX_FAILED_DEPTH, Checkpoint, parse_metadata_json

from .errors import as_typed, describe_error
from .record_cache import cached_record


@dataclass(frozen=True)
class Proposed:
    """Resubmit with proposed sizes: the ``--mem`` / ``--time`` of `hyperion-checkpoint retry --submit
    RECORD` it asks (``auto`` for the sizes the advice names, `ShardSizes.proposed`), and what auto
    chose (`shard_sizes`), or why that cannot be told (`problem`)."""

    mem: str | None
    time: str | None
    sizes: ShardSizes | None
    problem: str | None = None

    def flags(self) -> tuple[str, ...]:
        """``--mem auto`` / ``--time auto``, as the command line gives them."""
        return size_flags(self.mem, self.time)


@dataclass(frozen=True)
class CheckpointRead:
    """What one read found: the coverage and run.json's text, or why the checkpoint cannot be read
    (`error`); `run_problem` says why run.json's text is not shown when the coverage was read."""

    checkpoint: Path
    coverage: Coverage | None
    run_text: str = ""
    run_problem: str | None = None
    error: str | None = None
    found_by: str | None = None     # the record whose command named the checkpoint (no --checkpoint given)
    # the Retry tab's record's tasks that have not ended (Resubmit refuses them), or why that is not known
    running: StillRunning | None = None
    running_problem: str | None = None
    asked: bool = False             # whether `running` was asked (only for the Retry tab and Resubmit)
    running_stamp: tuple | None = None   # `ledger_stamp` of the record `running` answers for (`running_of`)
    # `hyperion-checkpoint retry --submit`'s `sizes: ...` lines for the missing shards (asked with `running`)
    size_lines: tuple[str, ...] = ()
    sizes_for: str | None = None    # the record (absolute) those lines are of
    # for a Resubmit whose shards ran out of a size the record keeps: the sizes auto would ask for
    proposed: Proposed | None = None
    stamp: tuple | None = None      # `change_stamp` just before the read: a later one that differs, a change
    # the records under the console's folders whose command names the checkpoint, newest first (None:
    # not looked for), and what the look could not do (a folder it could not list, its time up)
    records_named: tuple[str, ...] | None = None
    records_told: tuple[str, ...] = ()
    records_where: tuple[str, ...] = ()  # the folders looked in

    @property
    def record_found(self) -> str | None:
        """The record a Resubmit uses without one typed: the only one that names the checkpoint. With
        several none is chosen, as `hyperion-checkpoint retry --submit` takes only a record it is given."""
        return self.records_named[0] if self.records_named is not None and len(self.records_named) == 1 else None


RUNNING_QUERIES = 2     # the sacct and the squeue of one `still_running` ask


def ledger_stamp(record_path: str | None) -> tuple | None:
    """The record's ledger (q/<stem>.attempts.jsonl) as a stat sees it: every face writes a task's end
    there (hyperion-submit's wait, the Jobs screen's watch, `hyperion-jobs status`), so a stamp that
    differs from one taken before an ask is an end (or an attempt) the ask may not know. None: no ledger."""
    if not record_path:
        return None
    try:
        st = os.stat(ledger_path(record_path))
    except (OSError, ValueError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def runner_of(stop: Event | None) -> Runner | None:
    """How the screen's reads ask Slurm: ended by `stop` (the worker's cancel: a newer read, the
    screen gone, the console quit), as the Jobs screen's watch is (`stoppable`). A hung sacct or
    squeue kept a quit waiting for its timeout (30 s each)."""
    return stoppable(stop) if stop is not None else None


def running_of(record_path: str | None, budget: QueryBudget | None = None,
               stop: Event | None = None) -> tuple[StillRunning | None, str | None, tuple | None]:
    """`still_running` of the record (its ledger, and one Slurm query when tasks have no end there),
    never raising: (None, why, ...) when it cannot be told; a record that cannot be read is the
    preview's to say. The record is parsed once (the preview's cached copy), and Slurm is asked only
    when the ledger leaves a Slurm task open, its two calls spent from `budget` first (waiting for
    room, as the console's watch does; (None, None, ...) once `stop` is set meanwhile, also while Slurm
    is asked: the query is killed). Last, the `ledger_stamp` the answer accounts for (`answered_stamp`):
    a later stamp that differs is an end (or an attempt) it may not know."""
    before = ledger_stamp(record_path)     # before the ask: an end written during it is a change
    if not record_path:
        return None, None, before
    try:
        record = cached_record(record_path)
    except Exception:
        return None, None, before
    try:
        history = load_history(record_path, record)
        if budget is not None and slurm_keys(history):
            for _ in range(RUNNING_QUERIES):
                if not budget.spend(stop or Event()):
                    return None, None, before
        running, known = running_answer(history, record_path, runner=runner_of(stop))
        return running, None, answered_stamp(record_path, before, known)
    except QueryStopped:
        return None, None, before
    except Exception as exc:
        return None, describe_error(exc), before


def answered_stamp(record_path: str, before: tuple | None, known: int | None) -> tuple | None:
    """The ledger stamp an answer accounts for: the one taken before the ask, or the one after when the
    ledger's only change since is the ask's own write of the ends it learned (`known`, the ledger's
    size after that write, is its size now, in the same file). The Retry tab's look compared with the
    stamp before, saw that write as news, and asked Slurm again (two calls of the query budget) after
    every ask that learned an end while other tasks still ran. An end another face wrote during the
    ask makes the sizes differ: the stamp before is kept, and the look asks again."""
    if known is None:
        return before
    after = ledger_stamp(record_path)
    if after is None or after[1] != known or (before is not None and before[0] != after[0]):
        return before
    return after


def with_running(read: CheckpointRead, record_path: str | None, budget: QueryBudget | None = None,
                 stop: Event | None = None, propose: bool = False) -> CheckpointRead:
    """The read with whether the record's tasks still run, asked off the interface thread when the
    answer is shown (the Retry tab) or acted on (Resubmit), so the preview and Resubmit say what
    `retry --submit` would refuse; `asked` says the answer is there. `propose` (a Resubmit): also
    the sizes auto would ask for where the advice names some (`proposed_of`)."""
    if read.coverage is None:
        return read
    running, problem, stamp = running_of(record_path, budget, stop)
    advice = advice_of(record_path, read.coverage) if running is None and problem is None else None
    proposed = proposed_of(record_path, read.coverage, advice, budget, stop) if propose else None
    return replace(read, running=running, running_problem=problem, asked=True, running_stamp=stamp,
                   size_lines=tuple(advice.lines()) if advice is not None else (),
                   sizes_for=os.path.abspath(record_path) if record_path else None, proposed=proposed)


def advice_of(record_path: str | None, cov: Coverage | None) -> ShardSizes | None:
    """`shard_sizes` of the shards missing in `cov` with the record's sizes: that they last ended
    OUT_OF_MEMORY or TIMEOUT, and what ``--mem auto`` / ``--time auto`` would ask for (its advice),
    never raising: None when not known. From the record's ledger, asked once its tasks are known to
    have ended (`running_of` wrote their ends there): no Slurm call of its own."""
    if not record_path or cov is None:
        return None
    try:
        history = load_history(record_path, cached_record(record_path))
        return shard_sizes(retry_from_coverage(cov), record_path, history=history)
    except Exception:
        return None


def sizes_of(record_path: str | None, cov: Coverage | None) -> tuple[str, ...]:
    """The ``sizes: ...`` lines `hyperion-checkpoint retry CKPT --submit RECORD --dry-run` prints for
    the shards missing in `cov` (`advice_of`), () when not known."""
    advice = advice_of(record_path, cov)
    return () if advice is None else tuple(advice.lines())


def proposed_of(record_path: str | None, cov: Coverage | None, advice: ShardSizes | None,
                budget: QueryBudget | None = None, stop: Event | None = None) -> Proposed | None:
    """For a Resubmit whose `advice` names sizes the shards ran out of: `shard_sizes` with ``auto``
    for those (`ShardSizes.proposed`), read as `hyperion-checkpoint retry --submit RECORD --mem auto
    --time auto` reads them (the ledger, and Slurm for the usage it lacks: its calls spent from
    `budget` first). None without such advice (or once `stop` is set while waiting for the budget or
    while Slurm is asked);
    its `problem` when the sizes cannot be told. Never raises."""
    if not record_path or cov is None or advice is None:
        return None
    mem, time = advice.proposed()
    if mem is None and time is None:
        return None
    try:
        from backends.watch.targets import asks_slurm

        history = load_history(record_path, cached_record(record_path))
        if budget is not None and asks_slurm(history):   # what `history_status` (``auto``'s read) asks
            for _ in range(RUNNING_QUERIES):
                if not budget.spend(stop or Event()):
                    return None
        return Proposed(mem, time, shard_sizes(retry_from_coverage(cov), record_path, mem, time, history,
                                               runner_of(stop)))
    except QueryStopped:
        return None
    except Exception as exc:
        return Proposed(mem, time, None, describe_error(exc))


def with_records_naming(read: CheckpointRead, dirs: list[str]) -> CheckpointRead:
    """The read with the records under `dirs` whose command names its checkpoint: what
    `hyperion-checkpoint retry CKPT` asks about without --record (`records_naming`, the same walk and
    bounds: the newest 20 regular records, each read up to 16 MB, the walk stopped after 3 s), looked
    for only when shards are missing, as there. Off the interface thread: the walk and the reads may
    take seconds. A look that fails is said (`records_told`), never raised: the read still shows."""
    cov = read.coverage
    if cov is None or len(cov.completed) >= cov.run.total_shards:
        return read
    told: list[str] = []
    try:
        found = tuple(f.path for f in records_naming(str(read.checkpoint), dirs, told=told))
    except Exception as exc:
        found = ()
        told.append(f"submit records not looked for: {describe_error(exc)}")
    return replace(read, records_named=found, records_told=tuple(told), records_where=tuple(dirs))


def change_stamp(checkpoint: Path) -> tuple:
    """What changes when a shard completes or fails, or run.json is written again: the (mtime,
    inode, size) of the completion folder (a manifest is added or replaced there) and of run.json
    (None: not there), and `failed_tree_stamp` of the failed-task folder. A failed-task record sits
    four folders down (slurm_job_J/array_task_A/restart_R/shard_i/): one added to a job folder that
    exists left the failed-task folder's own stat as it was, and the change went unsaid."""
    store = Checkpoint(checkpoint)
    stamp: list = []
    for path in (store.completion_dir, store.run_path):
        try:
            info = os.stat(path)
        except (OSError, ValueError):        # ValueError: a path holding NUL
            stamp.append(None)
            continue
        stamp.append((info.st_mtime_ns, info.st_ino, info.st_size))
    stamp.append(failed_tree_stamp(store.failed_dir))
    return tuple(stamp)


def failed_tree_stamp(failed_dir: Path) -> str | None:
    """A digest of the failed-task folder as the coverage read walks it (the same caps: folders at
    most MAX_FAILED_DEPTH down, symlinks not followed): every folder's entry names (an added record
    or folder, whatever the file system's time resolution) and every failed_tasks.json's (mtime,
    inode, size) (a record rewritten). Stats only, no file is read. None: no folder (or a symlink,
    which the read does not search either)."""
    try:
        if not os.path.isdir(failed_dir) or os.path.islink(failed_dir):
            return None
    except ValueError:                       # a path holding NUL
        return None
    digest = hashlib.blake2b(digest_size=16)
    stack: list[tuple[str, int]] = [(str(failed_dir), 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            digest.update(f"{folder}\0!{exc.errno}\n".encode("utf-8", "surrogateescape"))
            continue
        for entry in entries:
            line = f"{entry.path}\0"
            try:
                if entry.name == FAILED_FILENAME:
                    info = entry.stat(follow_symlinks=False)
                    line += f"{info.st_mtime_ns} {info.st_ino} {info.st_size}"
                elif depth + 1 <= MAX_FAILED_DEPTH and entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, depth + 1))
            except OSError:                  # gone meanwhile: its name is enough
                pass
            digest.update((line + "\n").encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def one_line(text: str) -> str:
    """run.json's JSON on one line, keys in the file's order (ours and Curator's are written so):
    a hand-edited, indented run.json read `{\\x0a  "total_shards": ...` through `shown`. Text that
    does not parse is shown as it is (the coverage line under it says what is wrong)."""
    try:
        return json.dumps(parse_metadata_json(text), separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return text.strip()


def read_checkpoint(checkpoint: Path, stop: Event | None = None) -> CheckpointRead:
    """Read as the core reads (a FIFO put there must not hang the console); never raises. Once
    `stop` is set the read ends at its next file, with an error nobody is meant to see. The
    `stamp` is taken first: a manifest written during the read counts as a change."""
    stamp = change_stamp(checkpoint)
    try:
        cov = coverage(checkpoint, stop)
    except Exception as exc:      # shown on the screen, as the core words it
        return CheckpointRead(checkpoint, None, error=describe_error(exc))
    try:
        return CheckpointRead(checkpoint, cov, one_line(Checkpoint(checkpoint).read_run_text()), stamp=stamp)
    except ShardingError as exc:
        return CheckpointRead(checkpoint, cov, run_problem=exc.problem, stamp=stamp)


@dataclass(frozen=True)
class NoneNamed:
    """No checkpoint to read from `record`: its command names none, or (`problem`) the record itself
    cannot be read. Told apart: a mistyped record path was said to "name none", as if it were read."""

    record: str
    problem: str | None = None


def read_named_checkpoint(record_path: str, stop: Event | None = None,
                          option: str | None = None) -> CheckpointRead | NoneNamed:
    """The checkpoint `record_path`'s command names, read (see `read_checkpoint`); `NoneNamed` when the
    record cannot be read or names none. Off the interface thread too: the names are looked at on disk.
    `option`: the field the user typed the record into (`--record`), named by a problem with it."""
    try:
        record = cached_record(record_path)
    except Exception as exc:      # a missing or foreign file: said, as the Jobs screen says it
        return NoneNamed(record_path, describe_error(exc if option is None else as_typed(exc, option)))
    found = record_checkpoint(record)
    if found is None:
        return NoneNamed(record_path)
    return replace(read_checkpoint(Path(found), stop), found_by=record_path)
