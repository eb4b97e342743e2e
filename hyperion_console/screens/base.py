"""What every console screen shares: its header, and worker failures shown as notifications."""
from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Header
from textual.worker import Worker, WorkerState

from ..errors import describe_error

# Textual's default palette icon (U+2B58) is missing from Fira Code, the font of the SVG
# screenshots, and from many terminal fonts; U+2261 is in Fira Code, DejaVu and Liberation Mono.
HEADER_ICON = "\u2261"


def console_header() -> Header:
    return Header(icon=HEADER_ICON)


class ConsoleScreen(Screen):
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Worker.StateChanged does not bubble, so each screen reports its own workers."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(describe_error(event.worker.error), title=event.worker.name or "error",
                        severity="error", timeout=10)
