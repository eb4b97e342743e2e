"""Slurm resource values: memory sizes and time limits, checked before anything runs.

Slurm would reject bad values only after the job was queued (or silently
reinterpret them); checking here gives the one-line error the user needs.
"""
from __future__ import annotations

import re

from backends.errors import InputError

_MEMORY = re.compile(r"([0-9]+)([KMGTkmgt]?)")
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
        raise InputError(field, f"expected a size such as 8G, got {value!r}")
    match = _MEMORY.fullmatch(str(value).strip())
    if not match or int(match[1]) == 0:
        raise InputError(field, f"{str(value)!r} is not a memory size (a positive integer with optional K, M, G or T suffix, e.g. 8G)")
    return match[1] + match[2].upper()


def check_time(field: str, value: object, *, from_yaml: bool = False) -> str | None:
    """A Slurm time limit as text, or None if unset.

    PyYAML reads an unquoted ``168:00:00`` as the base-60 integer 604800, so an
    integer that is not a plain small minute count from YAML is refused with advice.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(field, f"expected a time such as \"168:00:00\", got {value!r}")
    if isinstance(value, int) and from_yaml:
        raise InputError(field, f"YAML read the value as the number {value} (unquoted H:M:S is base 60); "
                         "quote it, e.g. time: \"168:00:00\"")
    text = str(value).strip()
    if not any(form.match(text) for form in _TIME_FORMS):
        raise InputError(field, f"{text!r} is not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)")
    _, _, clock = text.rpartition("-")
    if any(int(part) >= 60 for part in clock.split(":")[1:]):
        raise InputError(field, f"{text!r}: minutes and seconds after the first field must be below 60")
    minutes = time_minutes(text)
    if minutes == 0:
        raise InputError(field, f"{text!r} is zero, which Slurm reads as no time limit at all; "
                         "give a positive limit such as 168:00:00")
    if minutes > MAX_TIME_MINUTES:
        raise InputError(field, f"{text!r} is above 365-00:00:00, the longest time limit Slurm "
                         "handles (squeue shows longer ones as INVALID)")
    return text


def time_minutes(text: str) -> int:
    """A checked Slurm time as whole minutes, seconds rounded up as Slurm does."""
    days, dash, clock = text.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if dash:             # D-HH[:MM[:SS]]
        parts += [0] * (3 - len(parts))
        seconds = int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    elif len(parts) == 1:  # minutes
        seconds = parts[0] * 60
    elif len(parts) == 2:  # MM:SS
        seconds = parts[0] * 60 + parts[1]
    else:                  # HH:MM:SS
        seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return -(-seconds // 60)


def check_count(field: str, value: object, *, minimum: int) -> int:
    """An integer option (``--num-gpus``, ``--num-threads``) at least `minimum`."""
    if isinstance(value, bool):
        raise InputError(field, f"expected an integer, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise InputError(field, f"expected an integer, got {value!r}")
        value = int(text)
    if not isinstance(value, int):
        raise InputError(field, f"expected an integer, got {value!r}")
    if value < minimum:
        kind = "non-negative" if minimum == 0 else "positive" if minimum == 1 else f">= {minimum}"
        raise InputError(field, f"must be a {kind} integer, got {value}")
    return value
