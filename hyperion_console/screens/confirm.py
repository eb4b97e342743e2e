"""A yes/no dialog in front of every action that starts or stops jobs."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from ..shown import shown
from ..widgets.path_text import PathText
from .base import HidesToastsBelow, console_footer

OTHER = "other"    # the answer of a confirmation's second yes (`other`)


class ConfirmScreen(HidesToastsBelow, ModalScreen["bool | str"]):
    """Dismisses with True only on an explicit yes; with OTHER on the second yes, `other` (a button
    between yes and no, e.g. Resubmit with proposed sizes), when there is one."""

    # Its own footer lists them: the screen's footer behind the dialog showed that screen's keys
    # (ctrl+s, 1/2/3), none of which work while it is up, and not the y / n / escape that do.
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "cancel", "Cancel"),     # its own action: the footer shows one key per action
        # The text scrolls from the buttons too (the focus opens there): a Resubmit's windows and argv
        # went on below the box at 80x24, and only tab to the text, which nothing says, reached them.
        Binding("down", "scroll_detail('scroll_down')", show=False),
        Binding("up", "scroll_detail('scroll_up')", show=False),
        Binding("pagedown", "scroll_detail('scroll_page_down')", show=False),
        Binding("pageup", "scroll_detail('scroll_page_up')", show=False),
        Binding("end", "scroll_detail('scroll_end')", show=False),
        Binding("home", "scroll_detail('scroll_home')", show=False),
    ]

    def __init__(self, title: str, detail: str = "", yes: str = "Yes", other: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.detail = detail
        self.yes = yes
        self.other = other
        self.answer: bool | None = None     # set as the answer is given, before the dismissal runs

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label(shown(self.title_text), id="confirm-title")
            with VerticalScroll(id="confirm-detail"):
                yield PathText(shown(self.detail, layout=True))   # a path wraps after a `/`, not inside a name
            with Horizontal(id="confirm-buttons"):
                yield Button(self.yes, variant="error", id="confirm-yes", compact=True)
                if self.other is not None:
                    yield Button(self.other, variant="warning", id="confirm-other", compact=True)
                yield Button("No", variant="primary", id="confirm-no", compact=True)
        yield console_footer()

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(OTHER if event.button.id == "confirm-other" else event.button.id == "confirm-yes")

    def action_scroll_detail(self, how: str) -> None:
        getattr(self.query_one("#confirm-detail", VerticalScroll), how)(animate=False)

    def action_cancel(self) -> None:
        """Escape: no."""
        self.action_answer(False)

    def action_answer(self, value: bool | str) -> None:
        """The first answer counts: a `y n` read at once (or a click and a key) answers once."""
        if self.answer is None:
            self.answer = value
            self.dismiss(value)
