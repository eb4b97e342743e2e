"""Commands shown to a user: one line of bash words that, pasted, give back the same arguments.

`shlex.quote` keeps a control character as it is inside single quotes: an argument
holding ESC or a newline reached the terminal raw, or, through `printable`, as the
four characters ``\\x1b``, which pasted make another argument. A word holding any
character `printable` would escape is written in bash's ANSI-C quoting instead
(``$'esc\\x1b[31m'``, ``$'a\\nb'``, a byte that is not UTF-8 as ``$'\\xe9'``): visible,
on one line, and the same bytes once bash reads it.
"""
from __future__ import annotations

import shlex
from collections.abc import Iterable

from backends.printable import UNSAFE


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _ansi_c(char: str) -> str:
    code = ord(char)
    if char in "\\'":
        return "\\" + char
    if not UNSAFE.match(char):
        return char
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:        # the byte surrogateescape stood in for
        return f"\\x{code - 0xDC00:02x}"
    # always two (four) hex digits: bash reads no more, so a digit after the escape stays itself
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shell_quote(word: str) -> str:
    """`word` as one bash word, in ANSI-C quoting when it holds a control or invisible character."""
    if not UNSAFE.search(word):
        return shlex.quote(word)
    return "$'" + "".join(map(_ansi_c, word)) + "'"


def shell_join(words: Iterable[str]) -> str:
    """`words` as one line of bash words (`shell_quote` of each), for showing and pasting."""
    return " ".join(shell_quote(word) for word in words)
