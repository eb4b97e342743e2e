"""The log pane of the Jobs screen: a title naming the file, and its last lines re-read while shown.

Reading goes through the core's `backends.watch.tail` in a thread worker; each
read is a LogUpdated message, and a newer one replaces one still queued.
"""
from __future__ import annotations

import threading

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Log
from textual.worker import get_current_worker

from backends.watch.tail import last_lines

from ..errors import guarded
from ..messages import LogUpdated

LOG_SOURCES: tuple[str, ...] = ("log", "err", "out")


def task_log_path(task, source: str) -> str | None:
    """The task's program log, or Slurm's own .err / .out file."""
    return {"log": task.log, "err": task.slurm_err, "out": task.slurm_out}[source]


class LogPane(Vertical):
    """Title and lines always change together: a stale log under another title would be
    read as the wrong task's."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.source = "log"
        self.path: str | None = None
        self._stop = threading.Event()

    def compose(self) -> ComposeResult:
        yield Label("log: (select a task)", id="log-title")
        yield Log(id="log", max_lines=2000)

    def on_unmount(self) -> None:
        self._stop.set()

    def cycle_source(self) -> None:
        self.source = LOG_SOURCES[(LOG_SOURCES.index(self.source) + 1) % len(LOG_SOURCES)]

    def show_task(self, task) -> None:
        """Point the pane at the task's chosen log; without one (or no task), show nothing."""
        path = None if task is None else task_log_path(task, self.source)
        if path and path == self.path:
            return
        self._stop.set()
        self.path = path
        self.query_one("#log", Log).clear()
        title = self.query_one("#log-title", Label)
        if task is None:
            title.update(Text(f"log [{self.source}]: (select a task)"))
        elif not path:
            title.update(Text(f"log [{self.source}]: none for this task"))
        else:
            title.update(Text(f"log [{self.source}]: {path}"))
            self._stop = threading.Event()
            self.follow(path, self._stop)

    @work(thread=True, exclusive=True, group="log", exit_on_error=False)
    def follow(self, path: str, stop: threading.Event) -> None:
        """Re-read the tail through backends.watch.tail; each read replaces the pending one."""
        previous = None
        while not stop.is_set() and not get_current_worker().is_cancelled:
            try:
                lines = tuple(last_lines(path, 200))
            except FileNotFoundError:
                lines = (f"(no file yet: {path})",)
            if lines != previous:
                previous = lines
                self.app.call_from_thread(self.post_message, LogUpdated(path, lines))
            stop.wait(0.5)

    @guarded
    def on_log_updated(self, message: LogUpdated) -> None:
        if message.path != self.path:
            return
        log = self.query_one("#log", Log)
        log.clear()
        log.write_lines(message.lines)
