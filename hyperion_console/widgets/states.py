"""How a job state looks: colour only; what a state means comes from backends.states."""
from __future__ import annotations

from rich.text import Text

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


def state_name(state) -> str:
    return getattr(state, "value", None) or str(state or "UNKNOWN")


def state_text(state) -> Text:
    """A coloured cell; terminal non-success states not listed above are red."""
    name = state_name(state)
    style = STYLE.get(name)
    if style is None:
        style = FAILURE_STYLE if getattr(state, "is_terminal", False) else "dim"
    return Text(name, style=style)


def elapsed_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
