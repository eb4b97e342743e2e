"""Slurm resource values: memory sizes and time limits, checked before anything runs.

Slurm would reject bad values only after the job was queued (or silently
reinterpret them); checking here gives the one-line error the user needs.
"""
from __future__ import annotations

import re

from backends.errors import InputError
from backends.sbatch_time import time_minutes
from backends.printable import quoted

_MEMORY = re.compile(r"([0-9]{1,18})([KMGTkmgt]?)")
# Upper bounds: far above any real request, low enough that no number wraps or
# overflows anywhere (Slurm keeps memory in MiB as a 64-bit number).
MAX_MEMORY_MIB = 2 ** 30                 # 1 PiB
MAX_COUNT = 1_000_000                    # any count option unless a smaller bound is given
MAX_GPUS = 1024                          # per task (one node)
MAX_THREADS = 100_000                    # per task (one node)
_MIB_PER_UNIT = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 ** 2}
_TIME_FORMS = (
    re.compile(r"[0-9]+\Z"),                              # minutes
    re.compile(r"[0-9]+:[0-9]{1,2}\Z"),                   # MM:SS
    re.compile(r"[0-9]+:[0-9]{1,2}:[0-9]{1,2}\Z"),        # HH:MM:SS
    re.compile(r"[0-9]+-[0-9]+\Z"),                       # D-HH
    re.compile(r"[0-9]+-[0-9]+:[0-9]{1,2}\Z"),            # D-HH:MM
    re.compile(r"[0-9]+-[0-9]+:[0-9]{1,2}:[0-9]{1,2}\Z"), # D-HH:MM:SS
)
# The longest limit Slurm's tools handle: squeue prints INVALID for anything above
# 365 days (while sbatch accepts it and scontrol wraps it), so it is refused here.
MAX_TIME_MINUTES = 365 * 24 * 60


def check_memory(field: str, value: object) -> str | None:
    """A Slurm memory size (``8G``, ``100M``, ``2048``) as text, or None if unset."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(field, f"expected a size such as 8G, got {quoted(value)}")
    text = str(value).strip()
    match = _MEMORY.fullmatch(text)
    if not match or int(match[1]) == 0:
        raise InputError(field, f"{_short(text)!r} is not a memory size (a positive integer with optional K, M, G or T suffix, e.g. 8G)")
    if int(match[1]) * _MIB_PER_UNIT[match[2].upper()] > MAX_MEMORY_MIB:
        raise InputError(field, f"{quoted(text)} is more than {MAX_MEMORY_MIB // 1024 ** 2}T")
    return match[1] + match[2].upper()


def _short(text: str, limit: int = 40) -> str:
    """A value as an error message may quote it: a 5000-digit number is not worth repeating."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def check_time(field: str, value: object, *, from_yaml: bool = False) -> str | None:
    """A Slurm time limit as text, or None if unset.

    PyYAML reads an unquoted ``168:00:00`` as the base-60 integer 604800, so an
    integer that is not a plain small minute count from YAML is refused with advice.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(field, f"expected a time such as \"168:00:00\", got {quoted(value)}")
    if isinstance(value, int) and from_yaml:
        advice = 'quote it: time: "168:00:00"'
        try:   # the minutes reading is offered only when it is a limit Slurm would take
            advice += f', or time: "{check_time(field, str(value))}" for {value} minutes'
        except InputError:
            pass
        raise InputError(field, f"YAML read the value as the number {value}, which is ambiguous (an "
                         f"unquoted H:M:S is read as a base-60 number); {advice}")
    text = str(value).strip()
    if len(text) > 40 or not any(form.match(text) for form in _TIME_FORMS):
        raise InputError(field, f"{_short(text)!r} is not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)")
    days, _, clock = text.rpartition("-")
    if any(int(part) >= 60 for part in clock.split(":")[1:]):
        raise InputError(field, f"{quoted(text)}: minutes and seconds after the first field must be below 60")
    minutes = time_minutes(text)
    if minutes == 0:
        raise InputError(field, f"{quoted(text)} is zero, which Slurm reads as no time limit at all; "
                         "give a positive limit such as 168:00:00")
    if minutes > MAX_TIME_MINUTES:
        raise InputError(field, f"{quoted(text)} is above 365-00:00:00, the longest time limit Slurm "
                         "handles (squeue shows longer ones as INVALID)")
    return text


def check_count(field: str, value: object, *, minimum: int, maximum: int = MAX_COUNT) -> int:
    """An integer option (``--num-gpus``, ``--num-threads``) in [`minimum`, `maximum`].

    The text is checked before ``int()``: Python refuses to convert more than
    4300 digits (a ValueError that would otherwise be a traceback).
    """
    if isinstance(value, bool):
        raise InputError(field, f"expected an integer, got {quoted(value)}")
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise InputError(field, f"expected an integer, got {_short(value)!r}")
        if len(text.lstrip("+-").lstrip("0")) > len(str(maximum)):
            raise InputError(field, f"{_short(text)} is more than {maximum}")
        value = int(text)
    if not isinstance(value, int):
        raise InputError(field, f"expected an integer, got {_short(repr(value))}")
    if value < minimum:
        kind = "non-negative" if minimum == 0 else "positive" if minimum == 1 else f">= {minimum}"
        raise InputError(field, f"must be a {kind} integer, got {value}")
    if value > maximum:
        raise InputError(field, f"{value if value.bit_length() <= 64 else 'the value'} is more than {maximum}")
    return value
