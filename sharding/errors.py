"""Errors of bad array configuration, task ids or checkpoint metadata.

`ShardingError` shares `backends.errors.FieldError`'s shape (``field: problem``),
so every face shows it as one line, exit 2.
"""
from __future__ import annotations

from backends.errors import FieldError


class ShardingError(FieldError):
    """Bad array configuration, task ids or checkpoint metadata, found before work starts."""
