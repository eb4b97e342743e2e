"""What every console screen shares: worker failures shown as notifications."""
from __future__ import annotations

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from ..errors import describe_error


class ConsoleScreen(Screen):
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Worker.StateChanged does not bubble, so each screen reports its own workers."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(describe_error(event.worker.error), title=event.worker.name or "error",
                        severity="error", timeout=10)
