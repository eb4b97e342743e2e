"""Errors of bad array configuration, task ids or checkpoint metadata.

`ShardingError` shares `backends.errors.FieldError`'s shape (``field: problem``),
so every face shows it as one line, exit 2.
"""
from __future__ import annotations

from backends.errors import FieldError


class ShardingError(FieldError):
    """Bad array configuration, task ids or checkpoint metadata, found before work starts."""


class ReadStopped(Exception):
    """The caller's stop event was set while a checkpoint was read: there is no result (a console
    quitting in the middle of 10,000 manifests on NFS ends now, not when the read would have)."""
