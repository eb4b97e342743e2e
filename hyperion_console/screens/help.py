"""Key bindings and where each action lives, for a user who has not read the README."""
from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from .base import HidesToastsBelow, console_footer

KEYS: tuple[tuple[str, str, str], ...] = (
    ("everywhere", "1 / 2 / 3", "Submit / Jobs / Checkpoint screen"),
    ("everywhere", "ctrl+p", "command palette: every action by name"),
    ("everywhere", "tab / shift+tab", "next / previous part of the screen (the focused one is lit)"),
    ("everywhere", "escape", "leave a text field (then 1 / 2 / 3 / q work again)"),
    ("everywhere", "?", "this help"),
    ("everywhere", "q", "quit"),
    ("Submit", "ctrl+s / enter", "submit the form (asks first); elsewhere ctrl+s says so"),
    ("Submit", "tab", "next field; the core's error shows above the preview"),
    ("Jobs", "o", "choose a recent submission: up/down j/k, enter opens"),
    ("Jobs", "[ / ]", "open the newer / older submission in the list"),
    ("Jobs", "up/down j/k", "select a task; its log follows below"),
    ("Jobs", "home/end g/G", "first / last task (in the log: top / follow the end)"),
    ("Jobs", "pgup/pgdn", "a page up / down (also ctrl+b / ctrl+f)"),
    ("Jobs", ":", "go to the task with a value"),
    ("Jobs", "/  n / N", "search tasks (or the log, when it has the focus); next / previous"),
    ("Jobs", "f / F", "next / previous state filter (not completed, UNKNOWN, NOT_RUN, LOST...)"),
    ("Jobs", "v / V", "next / previous view: tasks, state map, failure groups, attempts"),
    ("Jobs", "m", "state map: a cell per task; arrows, enter shows the task"),
    ("Jobs", "t", "failure groups (state, exit, last log line); enter shows a group's tasks"),
    ("Jobs", "a", "attempts of the submission; up/down j/k shows each one's tasks and logs"),
    ("Jobs", "u", "usage columns (mem used/req, cpu, time used/limit) and summary"),
    ("Jobs", "R", "retry the failed tasks: preview, overrides, then asks (also ctrl+r)"),
    ("Jobs", "escape", "drop a failure group's selection; back to the tasks"),
    ("Jobs", "l", "switch log pane: program log / q/ .err / .out"),
    ("Jobs", "z", "zoom the log pane to the whole screen, still following (z / escape: back)"),
    ("Jobs", "x / X", "cancel the task / the whole job (asks first)"),
    ("Jobs", "r", "reload recent submissions"),
    ("Retry", "tab / escape", "next field / close (nothing retried)"),
    ("Retry", "ctrl+r", "retry as previewed (asks first)"),
    ("Checkpoint", "left/right", "Coverage / Failed / Retry tab (on the tab bar)"),
    ("Checkpoint", "r", "re-read the checkpoint"),
    ("Checkpoint", "ctrl+r", "resubmit the missing shards (asks first)"),
)


class HelpScreen(HidesToastsBelow, ModalScreen[None]):
    """Lists the keys; escape or ? closes it."""

    # Its own footer names the keys that close it (the Jobs screen's footer behind it listed
    # `f Filter ... q Quit`: f did nothing here, q closed the help) as one entry: the footer shows
    # one key per action.
    BINDINGS = [
        Binding("escape", "close", "Close", key_display="esc/?/q"),
        Binding("question_mark,q", "close", "Close", show=False),
    ]

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
            yield Label("up/down, page keys scroll · escape closes", id="help-hint")
        yield console_footer()

    def action_close(self) -> None:
        self.dismiss(None)
