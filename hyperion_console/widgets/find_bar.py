"""The Jobs screen's one-line prompt: search the tasks, search the log, or go to a value.

Hidden until `/` or `:` opens it; Enter posts `FindBar.Done` with what was
typed, Escape closes it without doing anything. Either way the focus goes back
where it was, so the keys the user was pressing keep working.
"""
from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

from .field import Field

PROMPTS: dict[str, str] = {
    "tasks": "search tasks (enter: find, then n / N: next / previous)",
    "log": "search the log (enter: find, then n / N: next / previous)",
    "value": "go to the task with value (enter: go)",
}


class FindBar(Field):
    DEFAULT_CSS = """
    FindBar { display: none; height: 1; border: none; padding: 0 1; }
    FindBar.-open { display: block; }
    """
    BINDINGS = [Binding("escape", "close", "Close", show=False)]

    class Done(Message):
        """The user pressed Enter in mode `mode` ("tasks", "log" or "value")."""

        def __init__(self, mode: str, text: str) -> None:
            super().__init__()
            self.mode = mode
            self.text = text

    def __init__(self, **kwargs) -> None:
        super().__init__(compact=True, **kwargs)
        self.mode = "tasks"
        self._return_to = None

    def open(self, mode: str, value: str = "") -> None:
        self.mode = mode
        self.placeholder = PROMPTS[mode]
        self.value = value
        self._return_to = self.screen.focused
        self.add_class("-open")
        self.screen.set_focus(self)     # now: keys read in the same burst as `/` are typed here

    def action_close(self) -> None:
        self.remove_class("-open")
        target = self._return_to
        self._return_to = None
        if target is not None and target.is_attached:
            target.focus()
        else:
            self.screen.set_focus(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        mode, text = self.mode, event.value     # not self.value: keys read after Enter may be in it
        self.action_close()
        self.post_message(self.Done(mode, text))
