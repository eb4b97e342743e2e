"""The error type of the sharding package for bad input and unusable checkpoints.

`sharding` must not import `backends` (outside the bridge), so it cannot raise
`backends.errors.InputError`; this twin carries the same (field, problem) pair
and is a ValueError too, so callers that catch either see one shape.
"""
from __future__ import annotations


class ShardingError(ValueError):
    """Bad array configuration, task ids or checkpoint metadata, found before work starts."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"
