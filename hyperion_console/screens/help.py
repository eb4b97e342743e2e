"""Key bindings and where each action lives, for a user who has not read the README."""
from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

KEYS: tuple[tuple[str, str, str], ...] = (
    ("everywhere", "1 / 2 / 3", "Submit / Jobs / Checkpoint screen"),
    ("everywhere", "ctrl+p", "command palette: every action by name"),
    ("everywhere", "?", "this help"),
    ("everywhere", "q", "quit"),
    ("Submit", "ctrl+s", "submit the form (asks first)"),
    ("Submit", "tab", "next field; the core's error shows above the preview"),
    ("Submit", "escape", "leave a text field (then 1 / 2 / 3 work again)"),
    ("Jobs", "up/down", "select a task; its log follows below"),
    ("Jobs", "f", "cycle the state filter"),
    ("Jobs", "l", "switch log pane: program log / q/ .err / .out"),
    ("Jobs", "x / X", "cancel the task / the whole job (asks first)"),
    ("Jobs", "r", "reload recent submissions"),
    ("Checkpoint", "r", "re-read the checkpoint"),
    ("Checkpoint", "ctrl+r", "resubmit the missing shards (asks first)"),
)


class HelpScreen(ModalScreen[None]):
    """Lists the keys; escape or ? closes it."""

    BINDINGS = [Binding("escape,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=True, header_style="bold", expand=True)
        table.add_column("screen", style="cyan", no_wrap=True)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("action")
        for screen, key, action in KEYS:
            table.add_row(screen, key, action)
        with Vertical(id="help-dialog"):
            yield Label("Hyperion Console — keys", id="help-title")
            with VerticalScroll():
                yield Static(table)
            yield Label("escape closes", id="help-hint")

    def action_close(self) -> None:
        self.dismiss(None)
