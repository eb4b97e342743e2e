"""Text from files and users made safe to show on a terminal: controls become visible escapes.

A log, a record, a path or a command may hold ESC sequences (OSC 52 writes the
clipboard, OSC 0 the window title), other C0/C1 controls or bidi overrides that
make text read differently than it is. Every face shows such text through
`printable`, which spells each of those characters as a visible escape
(``\\x1b``, ``\\u202e``) and leaves everything else as it is.
"""
from __future__ import annotations

import re
import sys

# C0 controls, DEL, C1 controls; bidi embeddings, overrides, isolates and marks;
# line and paragraph separators (a terminal may break the line there); surrogates:
# a byte that is not UTF-8 in a path or argument (os.fsdecode keeps 0x9b as U+DC9B),
# which would reach an 8-bit terminal as that byte (0x9b starts a CSI there); invisible
# format characters that hide text in a path or name (zero-width space, word joiner and the
# invisible operators, the deprecated format controls, the BOM). Zero-width (non-)joiners stay:
# Persian and Indic text and emoji sequences need them.
_INVISIBLE = "\u200b\u2060-\u2064\u206a-\u206f\ufeff"
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff" + _INVISIBLE + "]")
# Compiled at first use (`_compiled`): half a millisecond each at every start of a command that
# never shows multi-line text or writes JSON (hyperion-submit).
_KEEP_LAYOUT = ("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                "\u2066-\u2069\ud800-\udfff" + _INVISIBLE + "]")
_SURROGATES = "[\ud800-\udfff]"
# A byte that is not UTF-8 as repr spells its surrogate (``\udcff``) after an even run of backslashes
_SURROGATE_REPR = r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])"
_COMPILED: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    compiled = _COMPILED.get(pattern)
    if compiled is None:
        compiled = _COMPILED[pattern] = re.compile(pattern)
    return compiled


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:        # the byte surrogateescape stood in for
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, layout: bool = False) -> str:
    """`text` with every control and bidi character spelled as an escape.

    With `layout`, tabs and newlines stay as they are (multi-line text such as a
    log); otherwise they are escaped too (one cell, one line).
    """
    pattern = _compiled(_KEEP_LAYOUT) if layout else UNSAFE
    return pattern.sub(_escape, text) if pattern.search(text) else text


def escape_surrogates(text: str) -> str:
    """`text` with only its surrogates spelled as `printable` spells them (byte 0xe9 of a name that
    is not UTF-8 as ``\\xe9``): the rest is left for a format with escapes of its own (JSON)."""
    surrogate = _compiled(_SURROGATES)
    return surrogate.sub(_escape, text) if surrogate.search(text) else text


def escape_unencodable_output() -> None:
    """Print what the terminal's encoding cannot hold as escapes (``\\xe9``, ``\\u2713``), never a traceback.

    Under LANG=en_US.ISO-8859-1 or PYTHONIOENCODING=ascii a path or log line holding
    "é" or "✓" raised UnicodeEncodeError mid-table. Each CLI calls this first; a
    stream that already has a policy (surrogateescape under the C locale) keeps it.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):      # closed, or a wrapper that will not change
                pass


def quoted(value: object, limit: int = 80) -> str:
    """`value`'s repr for a one-line message, cut when long: a 60 KB site value is not worth repeating."""
    text = repr(value)
    if isinstance(value, str) and _compiled(_SURROGATES).search(value):
        text = _compiled(_SURROGATE_REPR).sub(r"\1\\x\2", text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def cut(name: str, limit: int = 40) -> str:
    """A key or name as a message's field shows it: a 60 KB YAML key is cut, not repeated."""
    return name if len(name) <= limit else f"{name[:limit]}..."
