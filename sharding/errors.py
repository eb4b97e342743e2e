"""Errors for bad input that name their field, shared by the whole core.

`FieldError` lives here rather than in `backends` because `sharding` must not
import `backends` (outside the bridge) while `backends` may import `sharding`;
`backends.errors.InputError` derives from it, so every face shows both the
same way: one line, ``field: problem``.
"""
from __future__ import annotations


class FieldError(ValueError):
    """Bad input named by its field; CLIs print it as one line and exit 2."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"


class ShardingError(FieldError):
    """Bad array configuration, task ids or checkpoint metadata, found before work starts."""
