"""How a job state looks: colour, a one-letter symbol and a short name; what a state
means comes from backends.states.

Colour alone does not tell states apart (colour-blind users, monochrome
terminals, screenshots in print): every place that colours a state also shows
its name, its abbreviation or its symbol.
"""
from __future__ import annotations

import math

from rich.text import Text

from backends.states import JobState

STYLE: dict[str, str] = {
    "PENDING": "yellow",
    "RUNNING": "bold cyan",
    "COMPLETING": "cyan",
    "COMPLETED": "bold green",
    "CANCELLED": "magenta",
    "REQUEUED": "yellow",
    "SUSPENDED": "yellow",
}
FAILURE_STYLE = "bold red"
UNREPORTED_STYLE = "dim"

# Not Slurm states: a task Slurm has not reported (yet), a local task never reached.
UNREPORTED = ("UNKNOWN", "NOT_RUN")

# One cell of the state map. Letters where a word starts, symbols for "no state".
SYMBOL: dict[str, str] = {
    "PENDING": "P", "RUNNING": "R", "COMPLETING": "c", "CONFIGURING": "g", "COMPLETED": "C",
    "FAILED": "F", "CANCELLED": "X", "TIMEOUT": "T", "OUT_OF_MEMORY": "M", "NODE_FAIL": "N",
    "PREEMPTED": "E", "BOOT_FAIL": "B", "DEADLINE": "D", "LOST": "L", "REQUEUED": "Q",
    "SUSPENDED": "S", "UNKNOWN": "?", "NOT_RUN": "-",
}
OTHER_SYMBOL = "*"

# squeue's compact codes where Slurm has one; the console's own for the rest.
ABBREVIATION: dict[str, str] = {
    "PENDING": "PD", "RUNNING": "R", "COMPLETING": "CG", "CONFIGURING": "CF", "COMPLETED": "CD",
    "FAILED": "F", "CANCELLED": "CA", "TIMEOUT": "TO", "OUT_OF_MEMORY": "OOM", "NODE_FAIL": "NF",
    "PREEMPTED": "PR", "BOOT_FAIL": "BF", "DEADLINE": "DL", "REQUEUED": "RQ", "SUSPENDED": "S",
    "LOST": "LOST", "UNKNOWN": "UNK", "NOT_RUN": "NR",
}

# The order counts and legends list states in: the life of a task, then the bad endings.
ORDER: tuple[str, ...] = ("UNKNOWN", "NOT_RUN", "PENDING", "CONFIGURING", "RUNNING", "COMPLETING",
                          "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY",
                          "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "LOST")


def state_name(state) -> str:
    return getattr(state, "value", None) or str(state or "UNKNOWN")


def _state_and_note(name: str) -> tuple[str, str]:
    """``FAILED (SIGHUP)`` (`history`'s count of a task a signal stopped) -> (``FAILED``, `` (SIGHUP)``):
    the state it is drawn, ordered and abbreviated as, and what is said after it."""
    state, sep, note = name.partition(" (")
    return (state, sep + note) if sep and note.endswith(")") else (name, "")


def style_of(name: str) -> str:
    """Rich style of a state name; terminal non-success states not listed above are red. A
    state with a note (``FAILED (SIGHUP)``) has its state's style: it was dim, as if never reported."""
    name = _state_and_note(name)[0]
    style = STYLE.get(name)
    if style is not None:
        return style
    if name in UNREPORTED:
        return UNREPORTED_STYLE
    try:
        return FAILURE_STYLE if JobState(name).is_terminal else UNREPORTED_STYLE
    except ValueError:
        return UNREPORTED_STYLE


def state_text(state) -> Text:
    """A coloured cell."""
    name = state_name(state)
    return Text(name, style=style_of(name))


def symbol_of(name: str) -> str:
    return SYMBOL.get(name, OTHER_SYMBOL)


def abbreviation_of(name: str) -> str:
    """``FAILED`` -> ``F``; ``FAILED (SIGHUP)`` -> ``F (SIGHUP)``, beside the ``F`` of the others."""
    state, note = _state_and_note(name)
    return ABBREVIATION.get(state, state) + note


def ordered(names) -> list[str]:
    """State names in ORDER (unknown names last, alphabetically)."""
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(names, key=lambda n: (rank.get(_state_and_note(n)[0], len(ORDER)), n))


def elapsed_text(seconds: float | None) -> str:
    """`H:MM:SS`, `D-H:MM:SS` past a day, `<0:00:01` under a second (as hyperion-jobs prints it)."""
    if seconds is None:
        return ""
    if 0 < seconds < 1:
        return "<0:00:01"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    clock = f"{rest // 3600}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


# Cells of the state map: the state's colour as a background, its symbol on top.
CELL_STYLE: dict[str, str] = {
    "yellow": "black on yellow",
    "bold cyan": "black on cyan",
    "cyan": "black on dark_cyan",
    "bold green": "black on green",
    "magenta": "white on magenta",
    FAILURE_STYLE: "bold white on red",
    UNREPORTED_STYLE: "white on grey30",
}


def cell_style(name: str) -> str:
    return CELL_STYLE.get(style_of(name), "white on grey30")


def short_seconds(seconds: float | None) -> str:
    """At most four cells for a duration beside another: ``42s``, ``3.5m``, ``12m``, ``1.5h``, ``2d``;
    ``-`` when not known. (Tables with room use `elapsed_text`.)"""
    if seconds is None:
        return "-"
    if 0 < seconds < 1:
        return "<1s"          # a local task's 0.04 s: `0s` read as a time nobody measured
    for unit, size in (("s", 1), ("m", 60), ("h", 3600), ("d", 86400)):
        amount = seconds / size
        if unit == "d" or amount < {"s": 100, "m": 100, "h": 48}[unit]:
            break
    # gone by, never rounded up: a task 6 s under its 60 minutes read `60m/60m`
    if unit == "s" or amount >= 10:
        return f"{int(amount)}{unit}"
    return f"{math.floor(amount * 10) / 10:.1f}".rstrip("0").rstrip(".") + unit
