"""JSON output that is UTF-8 text whatever file names and files held.

A file name that is not UTF-8 reaches Python as surrogate escapes (os.fsdecode
keeps byte 0xe9 as U+DCE9), and a JSON file may spell a lone surrogate
(``"\\ud800"``). ``json.dumps`` writes either as ``"\\udce9"``: Python reads it
back, but it is no Unicode text, so strict readers refuse or replace it and
re-encoding what was read fails. `json_safe` spells each surrogate as
`backends.printable` does on a terminal (the byte as the four characters
``\\xe9``, any other surrogate as ``\\ud800``), so a path in JSON reads as it
does in the warnings; every other character is left to JSON's own escapes.
"""
from __future__ import annotations

import json

from backends.printable import escape_surrogates

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (a status command loads this module)
if TYPE_CHECKING:
    from typing import Any


def _safe_key(key: Any) -> Any:
    return escape_surrogates(key) if isinstance(key, str) else key


def json_safe(value: Any) -> Any:
    """`value` with every string in it (keys too) free of surrogates; other values as they are.

    Walked with a stack of its own, not by recursion: a file's JSON (a failed-task record's details,
    a ledger line's overrides) nested 500 deep is read, and a recursive copy took two frames a
    level, so `failed --json` and `history --json` traced back (RecursionError) where json.dumps
    itself writes it."""
    top: list[Any] = [None]
    todo: list[tuple[Any, Any, Any]] = [(value, top, 0)]     # (what to copy, into which container, where)
    while todo:
        item, into, where = todo.pop()
        if isinstance(item, str):
            into[where] = escape_surrogates(item)
        elif isinstance(item, dict):
            copy = into[where] = dict.fromkeys(_safe_key(k) for k in item)
            # pushed last key first, so filled first key first: of two keys that read alike once
            # escaped, the later one's value wins, as a dict display's would
            todo.extend((v, copy, _safe_key(k)) for k, v in reversed(item.items()))
        elif isinstance(item, (list, tuple)):
            copy = into[where] = [None] * len(item)
            todo.extend((v, copy, i) for i, v in enumerate(item))
        else:
            into[where] = item
    return top[0]


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` of `json_safe(value)`: printed, it is valid UTF-8 JSON of valid Unicode text."""
    return json.dumps(json_safe(value), **options)
