"""What a failed-task record says about which tasks failed, as one bounded line of text.

NeMo Curator's writer records no task ids at all: its ``failed_tasks.json`` is an
empty marker (``record_failed_tasks`` touches it; an unreleased draft wrote
``{"status": "failed_tasks"}``, and one before that per-task ``failed_task_<hash>.json``
files of ``{"stage_name", "task_id"}``). Hyperion's example writes ``task_ids`` as a
list of strings. Anything else comes from a user's own writer, so every shape a
person would plausibly write is read: a list of strings or integers, one string
(a single id, or ids separated by commas), one integer, or Curator's draft
``task_id``. Whatever else is there is said to be unreadable, never shown as "no ids".
"""
from __future__ import annotations

from typing import Any, Mapping

MAX_TEXT = 100          # characters of ids listed before "(+N more)": 100,000 tasks are one line
MAX_ID_CHARS = 40       # characters of one id before it is cut with "..."


def _kind(value: Any) -> str:
    """A JSON value's kind in the words a user reading the file would use."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, float):
        return "a fractional number"
    if value is None:
        return "null"
    return type(value).__name__


def _id_text(value: Any) -> str | None:
    """One id as text; None when it is not a string or integer (true is no task id)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _listed(ids: list[str]) -> str:
    """Ids joined by commas up to MAX_TEXT characters, then how many more: the error text after
    them stays on the line whatever the record holds."""
    ids = [i if len(i) <= MAX_ID_CHARS else i[:MAX_ID_CHARS] + "..." for i in ids if i]
    if not ids:
        return "-"
    shown: list[str] = []
    length = -1
    for one in ids:
        if shown and length + 1 + len(one) > MAX_TEXT:
            break
        shown.append(one)
        length += 1 + len(one)
    more = len(ids) - len(shown)
    return ",".join(shown) + (f" (+{more} more)" if more else "")


def task_ids_text(details: Mapping[str, Any]) -> str:
    """``p1,p2``, ``-`` when the record names no task, ``(unreadable task_ids: ...)`` otherwise."""
    key = "task_ids" if "task_ids" in details else "task_id"
    value = details.get(key)
    if value is None:
        return "-"
    if isinstance(value, str):
        return _listed([one.strip() for one in value.split(",")])
    if isinstance(value, list):     # at most ~500,000 items fit the 1 MiB a record is read to
        ids = [_id_text(v) for v in value]
        bad = next((n for n, text in enumerate(ids) if text is None), None)
        if bad is not None:
            return f"(unreadable {key}: item {bad + 1} is {_kind(value[bad])})"
        return _listed([t for t in ids if t is not None])
    single = _id_text(value)
    if single is not None:
        return _listed([single])
    return f"(unreadable {key}: {_kind(value)})"
