"""What every console screen shares: its header, Escape out of text fields, worker failures
shown as notifications, and the pause after typing a form plans at."""
from __future__ import annotations

from typing import Callable

from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.timer import Timer
from textual.widgets import Footer, Header, Input
from textual.worker import Worker, WorkerState

from ..errors import describe_error
from ..shown import tell

# Textual's default palette icon (U+2B58) is missing from Fira Code, the font of the SVG
# screenshots, and from many terminal fonts; U+2261 is in Fira Code, DejaVu and Liberation Mono.
HEADER_ICON = "\u2261"
# A form whose plan (Submit's preview, Checkpoint's retry windows) took the core longer than this is
# planned again once the keys pause for TYPING_PAUSE, not at every key: each key must show at once
# (50 ms is three frames), and JOB=1:100000 took 0.4 s and more per key. A quicker one, at every key.
SLOW_TO_PLAN = 0.05
TYPING_PAUSE = 0.25


class TypingPause:
    """Calls `callback` once the keys pause for TYPING_PAUSE: each key starts the wait again.

    The debounce of both screens that plan a form (Submit's preview, Checkpoint's retry windows)."""

    def __init__(self, screen: Screen, callback: Callable[[], object]) -> None:
        self._screen, self._callback = screen, callback
        self._timer: Timer | None = None

    @property
    def pending(self) -> bool:
        """A key came and the pause after it has not yet come."""
        return self._timer is not None

    def restart(self) -> None:
        self.cancel()
        self._timer = self._screen.set_timer(TYPING_PAUSE, self._paused)

    def cancel(self) -> None:
        """Nothing waits for a pause any more (the form was planned as it is now)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _paused(self) -> None:
        self._timer = None
        self._callback()


def console_header() -> Header:
    return Header(icon=HEADER_ICON)


def console_footer() -> Footer:
    """The keys of the screen. Without `^p palette`: at 80 columns it pushed the screen's own
    keys off the line (ctrl+p is in the help, and the header's icon opens the palette)."""
    return Footer(compact=True, show_command_palette=False)


UNDER_DIALOG = "-under-dialog"    # a screen below a dialog: its toasts hidden (console.tcss)


def mark_screens_under_dialogs(app, leaving: Screen | None = None) -> None:
    """Give every screen below a dialog of the stack (but `leaving`, one being closed) UNDER_DIALOG,
    and take it from the others."""
    above = False
    for screen in reversed(app.screen_stack):
        screen.set_class(above, UNDER_DIALOG)
        above = above or (isinstance(screen, HidesToastsBelow) and screen is not leaving)


class HidesToastsBelow:
    """A dialog (every confirmation, the retry preview, the help), while it is up, hides the toasts
    of the screens below it too, not only its own (console.tcss). Textual keeps a toast on the rack
    of the screen it was shown on, and a modal screen draws that screen behind it: at 100x30 and
    larger, and under a confirmation at 80x24 too, a toast shown just before the dialog opened stayed
    beside it. Those not timed out show again once the dialog is closed."""

    def on_screen_resume(self) -> None:          # pushed, or back on top once a dialog above it closed
        mark_screens_under_dialogs(self.app)

    def on_unmount(self) -> None:                # closed
        mark_screens_under_dialogs(self.app, leaving=self)


class ConsoleScreen(Screen):
    # A text field takes 1/2/3/q as text; Escape gives them back to the console.
    BINDINGS = [Binding("escape", "leave_field", "Leave field", show=False)]

    def action_leave_field(self) -> None:
        if isinstance(self.focused, Input):
            self.set_focus(self.home_focus())

    def action_submit_elsewhere(self) -> None:
        """ctrl+s away from the Submit screen: said where it works, not silently nothing (a user
        coming from the form presses it out of habit, or to submit again)."""
        tell(self, "ctrl+s submits the form on the Submit screen (1 goes there): nothing submitted here",
             severity="warning")

    def home_focus(self) -> Widget | None:
        """Where the focus goes when it leaves a text field (None: nowhere)."""
        return None

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Worker.StateChanged does not bubble, so each screen reports its own workers."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            tell(self, describe_error(event.worker.error), title=event.worker.name or "error",
                 severity="error", timeout=10)
