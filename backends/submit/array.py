"""Array specifications: ``NAME=A:B[,C:D|,E...]`` parsed into a name and its values.

Kept apart from planning so the console and the retry bridge can build arrays
from values they already hold.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from backends.errors import InputError
from backends.ranges import compress

FIELD = "--array"
# Far beyond any real recipe (a record lists every task); a typo such as
# JOB=1:100000000 is refused before its values are built, not after memory runs out.
MAX_VALUES = 100_000
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_POSITIVE = re.compile(r"[0-9]+\Z")


@dataclass(frozen=True)
class ArraySpec:
    """An array's substitution name and its logical values (sorted, unique, positive)."""

    name: str
    values: tuple[int, ...]

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise InputError(FIELD, f"name {self.name!r} is not a shell identifier ([A-Za-z_][A-Za-z0-9_]*)")
        if not self.values:
            raise InputError(FIELD, "the array has no values")
        if any(v < 1 for v in self.values):
            raise InputError(FIELD, "array values must be positive integers")
        if len(self.values) > MAX_VALUES:
            raise InputError(FIELD, _too_many(len(self.values)))
        object.__setattr__(self, "values", tuple(sorted(set(self.values))))

    def slurm_expression(self, max_jobs_run: int | None = None) -> str:
        """The logical values as Slurm's ``--array`` text, e.g. ``1-2,5%4``."""
        text = compress(self.values)
        return f"{text}%{max_jobs_run}" if max_jobs_run else text

    @property
    def text(self) -> str:
        """The ``--array`` argument that recreates this spec (``JOB=1:2,5``)."""
        parts = []
        for part in compress(self.values).split(","):
            lo, _, hi = part.partition("-")
            parts.append(f"{lo}:{hi}" if hi else lo)
        return f"{self.name}={','.join(parts)}"


def _too_many(count: int) -> str:
    return (f"{count} values; at most {MAX_VALUES} tasks per submission "
            "(split the work into fewer, larger tasks or several submissions)")


def _endpoint(text: str, whole: str) -> int:
    if not _POSITIVE.match(text) or int(text) < 1:
        raise InputError(FIELD, f"{whole!r}: endpoints must be positive integers, got {text!r}")
    return int(text)


def parse_array(text: str) -> ArraySpec:
    """Parse ``NAME=START:END`` (or a comma list of ranges and single values)."""
    name, sep, body = text.partition("=")
    if not sep or not body:
        raise InputError(FIELD, f"{text!r} is not NAME=START:END")
    if not _NAME.match(name):
        raise InputError(FIELD, f"name {name!r} is not a shell identifier ([A-Za-z_][A-Za-z0-9_]*)")
    values: set[int] = set()
    for part in body.split(","):
        lo, colon, hi = part.partition(":")
        start = _endpoint(lo.strip(), text)
        end = _endpoint(hi.strip(), text) if colon else start
        if end < start:
            raise InputError(FIELD, f"{text!r}: range {part!r} has START > END")
        if end - start + 1 > MAX_VALUES:  # refused before its values are built
            raise InputError(FIELD, f"{text!r}: " + _too_many(end - start + 1))
        values.update(range(start, end + 1))
        if len(values) > MAX_VALUES:
            raise InputError(FIELD, f"{text!r}: " + _too_many(len(values)))
    return ArraySpec(name, tuple(sorted(values)))
