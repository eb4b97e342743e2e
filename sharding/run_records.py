"""Which submit records belong to a checkpoint's run: the ones whose command names it.

`hyperion-checkpoint retry CKPT` (without --submit) asks these records whether
their tasks still run, so shards listed missing only because they have not
ended are said to be. The records are found where `hyperion-jobs` finds them by
default (`find_records` under the current folder: every `q/` up to 5 levels
down, hidden folders skipped), so `--output-file log/x.SHARD.log`'s `log/q/` is
searched too. Only reading here: the records are read once and handed on whole
(`FoundRecord`), and the launcher the bridge (`sharding.resubmit`) loads is not
needed to find them, so a plain preview in a folder of other runs starts as fast.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from backends.errors import InputError
from backends.records.record import SubmitRecord, load_record, records_within
from sharding.store import Checkpoint

MAX_ARGS_LOOKED_AT = 1000
CHECKPOINT_WORDS = ("checkpoint", "ckpt")   # in the option that names a recipe's own checkpoint
RECORDS_LOOKED_AT = 20                  # records (the newest) a preview reads to find the checkpoint's
RECORD_BYTES_LOOKED_AT = 16 * 1024 * 1024   # each at most (a 100,000-task record is ~50 MB: give --record)
SEARCHED = (".",)                       # where, as `hyperion-jobs list`/`status` look without --dir
WALK_SECONDS = 3.0                      # the longest a preview looks for them
UNLISTED_TOLD = 3                       # folders that could not be listed, named


@dataclass(frozen=True)
class FoundRecord:
    """A record as read from `path`: whoever asks about it next does not read it again."""

    path: str
    record: SubmitRecord


def flag_values(command: Sequence[str]) -> Iterator[tuple[str, str]]:
    """``(--flag, value)`` for every ``--flag value`` and ``--flag=value`` of a command."""
    for index, arg in enumerate(command[:MAX_ARGS_LOOKED_AT]):
        if not arg.startswith("--"):
            continue
        flag, equals, value = arg.partition("=")
        if equals:
            yield flag, value
        elif index + 1 < len(command):
            yield flag, command[index + 1]


def named_checkpoints(command: Sequence[str], cwd: str) -> set[str]:
    """The checkpoints (folders with a run.json) the command's checkpoint options name, resolved.

    A recipe names its own checkpoint in an option (``--checkpoint ckpt``,
    ``--checkpoint-path=ckpt``, ``checkpoint_path=ckpt``, ``--ckpt``) or in a file
    the command names: the first can be checked, the second cannot, so finding
    none proves nothing. Other arguments may name other checkpoints (a previous
    stage's, as input): they say nothing about which run this is.
    """
    found = set()
    for name, value in [*flag_values(command), *(arg.partition("=")[::2] for arg in command[:MAX_ARGS_LOOKED_AT]
                                                 if not arg.startswith("-") and "=" in arg)]:
        if not any(word in name.lower() for word in CHECKPOINT_WORDS) or not value or len(value) >= 4096:
            continue
        path = os.path.join(cwd, value)
        try:
            if Checkpoint(path).run_path.is_file():
                found.add(os.path.realpath(path))
        except (OSError, ValueError):   # a name too long, a NUL byte: not a checkpoint
            continue
    return found


def record_command(record: SubmitRecord) -> tuple[str, ...] | None:
    """The record's command (a non-empty list of strings, as a rerun reads it); None otherwise."""
    command = record.options.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(word, str) for word in command):
        return None
    return tuple(command)


def record_checkpoint(record: SubmitRecord) -> str | None:
    """The one checkpoint (a folder with a run.json) the record's command names in a checkpoint
    option (``--checkpoint``, ``--ckpt``, ``checkpoint_path=``...), resolved in its submission
    directory; None when it names none, or several (which one is this run's cannot be told).

    The console opens it when started without ``--checkpoint``: a run submitted from its Submit
    screen could reach the Checkpoint screen only by quitting and starting again with that flag.
    A resubmission with this record over any other checkpoint is refused (``_check_same_run``).
    """
    command = record_command(record)
    if command is None:
        return None
    named = named_checkpoints(command, record.cwd)
    return next(iter(named)) if len(named) == 1 else None


def records_naming(checkpoint: str, dirs: Sequence[str] = SEARCHED,
                   told: list[str] | None = None) -> list[FoundRecord]:
    """The records under `dirs` whose command names `checkpoint` (`record_checkpoint`): the runs a
    preview asks about without --record. Found as `hyperion-jobs` finds records (`find_records`: its
    depth bound, hidden folders skipped), newest first. Bounded: only regular files are read (a FIFO
    would hang, a symlink may lead anywhere), the newest RECORDS_LOOKED_AT of them, each of at most
    RECORD_BYTES_LOOKED_AT; a record that cannot be read is skipped (it is not this run's to judge).
    The walk stops after WALK_SECONDS (a preview run from a folder of a million data files must not
    wait on it); that, and folders that could not be listed, are added to `told` as sentences: a
    warning may be missing because of them."""
    unlisted: list[tuple[str, str]] = []
    paths, cut = records_within([Path(d) for d in dirs], WALK_SECONDS, unlisted=unlisted)
    if told is not None:
        where = ", ".join(dirs)
        told.extend(f"cannot list {folder} ({reason}): records in it were not asked about"
                    for folder, reason in unlisted[:UNLISTED_TOLD])
        if len(unlisted) > UNLISTED_TOLD:
            told.append(f"and {len(unlisted) - UNLISTED_TOLD} more folders that cannot be listed")
        if cut:
            told.append(f"stopped looking for submit records under {where} after {WALK_SECONDS:g} s; "
                        "name the run's record with --record to hear which shards still run")
    wanted, found, looked_at = os.path.realpath(checkpoint), [], 0
    for path in paths:
        if looked_at == RECORDS_LOOKED_AT:
            break
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > RECORD_BYTES_LOOKED_AT:
            continue
        looked_at += 1
        try:
            record = load_record(path)
        except InputError:
            continue
        if record_checkpoint(record) == wanted:
            found.append(FoundRecord(str(path), record))
    if told is not None and not found and looked_at == RECORDS_LOOKED_AT and len(paths) > looked_at:
        told.append(f"none of the newest {looked_at} of {len(paths)} submit records under {', '.join(dirs)} "
                    "names the checkpoint; name the run's record with --record to hear which shards still run")
    return found
