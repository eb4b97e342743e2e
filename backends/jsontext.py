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


def json_safe(value: Any) -> Any:
    """`value` with every string in it (keys too) free of surrogates; other values as they are."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` of `json_safe(value)`: printed, it is valid UTF-8 JSON of valid Unicode text."""
    return json.dumps(json_safe(value), **options)
