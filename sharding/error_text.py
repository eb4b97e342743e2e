"""What a failed-task record says went wrong, as the first line of one error.

Hyperion's README tells a writer to record ``task_ids`` and ``errors``; the example
pipeline writes ``errors`` as ``{task_id: text}`` and also ``error`` (the first one).
A user following the README writes ``errors`` as a list of strings, or one string.
Every one of these is read, so ``hyperion-checkpoint failed`` never says "no error
text" about a record that holds some (it read ``error`` alone, and did).
"""
from __future__ import annotations

from typing import Any, Mapping


def _texts(value: Any) -> list[str]:
    """The error strings of an ``errors`` value: a list's or an object's string items, or one string."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def error_text(details: Mapping[str, Any]) -> str:
    """The first line of the record's first error, ``(+N more)`` when ``errors`` names more;
    empty when the record gives none."""
    errors = [t for t in _texts(details.get("errors")) if t.strip()]
    single = details.get("error")
    first = _first_line(str(single)) if single else ""    # a non-string error is shown as it reads
    if not first and errors:
        first = _first_line(errors[0])
    if not first:
        return ""
    more = len(errors) - 1
    return first + (f" (+{more} more)" if more > 0 else "")
