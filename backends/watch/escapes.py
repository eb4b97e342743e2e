"""The escape sequences of a log line that a terminal face drops: colours and cursor moves are not text.

Loguru, rich, tqdm and colorlog write colour (SGR: ``ESC[32m``, ``ESC[38;5;208m``,
``ESC[38;2;r;g;bm``) and the cursor and erase sequences of progress bars
(``ESC[K``, ``ESC[2K``, ``ESC[A``, ``ESC[?25l``) into the log file. Shown as
escapes (`printable`), a coloured line read ``\\x1b[32m2026-...\\x1b[0m | INFO``.
Passed through, a log could drive the user's terminal. So a face shows neither:
a complete CSI sequence (ESC ``[`` parameters, intermediates, one final byte) is
dropped, never rendered (no colour, no Rich markup: the text stays literal).
Two are interpreted, for `line_screen`: an erase in line (``ESC[K``, ``ESC[2K``)
means what follows the line's last ``\\r`` is the redraw, and a move to column 1
(``ESC[G``, ``ESC[1G``) is a ``\\r``. Everything else that is not text stays for
`printable` to spell as escapes: an OSC (``ESC]52;...BEL`` writes the clipboard),
a lone ESC, a sequence cut short or too long to be a real one.

Linear in the text: one regex pass, each match bounded; a sequence split
between two writes is held back (at most OPEN_MAX characters) until the rest comes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

PARAMS_MAX = 128       # parameter characters of a sequence dropped (truecolour fg+bg needs 34)
INTERMEDIATES_MAX = 16
OPEN_MAX = 2 + PARAMS_MAX + INTERMEDIATES_MAX   # the longest start of a sequence held back

# ESC [ params intermediates final (ECMA-48), or the character set selection `tput sgr0` writes (ESC ( B).
_SEQUENCE = re.compile(f"\x1b\\[([0-?]{{0,{PARAMS_MAX}}})([ -/]{{0,{INTERMEDIATES_MAX}}})([@-~])|\x1b[()][AB0]")
_INTERPRETED = re.compile(f"\x1b\\[[0-?]{{0,{PARAMS_MAX}}}[GK]")   # an erase in line, a column move
_OPEN = re.compile(f"\x1b(?:\\[[0-?]{{0,{PARAMS_MAX}}}[ -/]{{0,{INTERMEDIATES_MAX}}})?|\x1b[()]")


@dataclass(frozen=True)
class Stripped:
    """A piece of a line without its sequences; `erases`: it held an erase in line (ESC[K)."""

    text: str
    erases: bool


def _shown(match: re.Match[str]) -> str:
    final = match.group(3)
    if final == "G" and match.group(1) in ("", "0", "1") and not match.group(2):
        return "\r"                     # cursor to column 1: what \r does
    return ""


def strip_sequences(text: str) -> Stripped:
    """`text` with every complete CSI sequence dropped (a move to column 1 as ``\\r``)."""
    if "\x1b" not in text:
        return Stripped(text, False)
    if not _INTERPRETED.search(text):          # colours only (most lines): no call per sequence
        return Stripped(_SEQUENCE.sub("", text), False)
    erases = False

    def shown(match: re.Match[str]) -> str:
        nonlocal erases
        if match.group(3) == "K" and not match.group(2):
            erases = True
        return _shown(match)

    return Stripped(_SEQUENCE.sub(shown, text), erases)


def split_open(text: str) -> tuple[str, str]:
    """(`text` but its end, that end) when `text` ends in the start of a sequence the next piece may
    complete (``ESC[38;5``); else (`text`, "")."""
    start = text.rfind("\x1b", max(0, len(text) - OPEN_MAX))
    if start < 0 or not _OPEN.fullmatch(text, start):
        return text, ""
    return text[:start], text[start:]
