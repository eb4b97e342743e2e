"""Where a submission's files live: q/ beside the output file, named after the log's stem.

Kept apart from the record's reader and writer so that planning a submission
(``hyperion-submit --dry-run``) names these paths without importing them.
"""
from __future__ import annotations

import os
from pathlib import Path

RECORD_SUFFIX = ".submit.json"
ATTEMPTS_DIR = "attempts"          # q/attempts/<N>/: an attempt's record and the files a rerun moved aside


def is_file_name(value: object) -> bool:
    """Whether a path read from a record or ledger is text the OS takes as a file name: open() of one
    holding a NUL, or a lone surrogate the JSON spelled ("\\ud800", no byte stands for it), traces back."""
    if not isinstance(value, str) or not value or "\0" in value:
        return False
    try:
        os.fsencode(value)
    except UnicodeEncodeError:
        return False
    return True


def moved_name(array_name: object, output_file: object, value: int | None, log: str) -> str:
    """The name a rerun gives a task's log in q/attempts/<N>/ (before `.2`, `.3`... when taken):
    its own basename, or ``<value>.<basename>`` when NAME is only in the log's folder (the moved
    logs of different values would have one name). One function, so that a reader can find a log
    whose ``moved`` line a kill kept from being written (History.log_of)."""
    name = os.path.basename(log)
    prefixed = isinstance(array_name, str) and isinstance(output_file, str) and \
        array_name not in os.path.basename(output_file)
    return f"{value}.{name}" if prefixed else name


def q_dir(output_file: str | Path) -> Path:
    """The ``q`` directory beside the output file (absolute)."""
    return Path(os.path.abspath(output_file)).parent / "q"


def log_stem(output_file: str | Path) -> str:
    """The output file's basename without its last suffix, NAME left in."""
    name = Path(output_file).name
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem else name


def window_script_path(base: str | Path, number: int, offset: int) -> str:
    """The batch script of window `number` (0 first) at `offset`: ``q/<stem>.sh`` for the first window,
    ``q/<stem>.offset<offset>.sh`` for the others. One function, so that a rerun can tell which
    earlier attempt wrote a script of that name from its record (plan_moves)."""
    return f"{base}.sh" if number == 0 else f"{base}.offset{offset}.sh"


def record_path(output_file: str) -> Path:
    return q_dir(output_file) / f"{log_stem(output_file)}{RECORD_SUFFIX}"
