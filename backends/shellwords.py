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
    # its UTF-8 bytes (a byte surrogateescape stood in for: that byte), each as \xHH, which bash reads
    # alike in every locale: `\u202e` stays six characters under LC_ALL=C, and `\x85` is one byte
    # where U+0085 is two. Two hex digits always: bash reads no more, a digit after one stays itself.
    try:
        data = char.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:          # a lone surrogate no argument can hold
        return f"\\u{code:04x}"
    return "".join(f"\\x{byte:02x}" for byte in data)


def shell_quote(word: str) -> str:
    """`word` as one bash word, in ANSI-C quoting when it holds a control or invisible character."""
    if not UNSAFE.search(word):
        return shlex.quote(word)
    return "$'" + "".join(map(_ansi_c, word)) + "'"


def shell_join(words: Iterable[str]) -> str:
    """`words` as one line of bash words (`shell_quote` of each), for showing and pasting."""
    return " ".join(shell_quote(word) for word in words)


def shell_join_around(words: Iterable[str], name: str) -> list[str]:
    """`shell_join(words)` cut where `name` (a shell variable name) stands in an argument: for any
    digits, ``digits.join(pieces) == shell_join(w.replace(name, digits) for w in words)``.

    Cut per argument, before quoting: the quoted text of an argument may hold `name`'s letters
    where the argument does not (``$'a\\nb'`` holds an ``n``). A name and digits are both words
    `shlex.quote` leaves bare and `_ansi_c` keeps as they are, so a substitution changes no
    argument's quoting."""
    pieces = [""]
    for number, word in enumerate(words):
        parts = word.split(name)
        if UNSAFE.search(word):
            quoted, opening = ["".join(map(_ansi_c, part)) for part in parts], "$'"
        elif shlex.quote(word) != word:
            quoted, opening = [part.replace("'", "'\"'\"'") for part in parts], "'"
        else:
            quoted, opening = parts, ""
        if opening:
            quoted[0] = opening + quoted[0]
            quoted[-1] += "'"
        pieces[-1] += (" " if number else "") + quoted[0]
        pieces += quoted[1:]
    return pieces
