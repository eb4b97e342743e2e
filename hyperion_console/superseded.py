"""Showing a thread worker's result unless a newer run of the same work superseded it.

`@work(thread=True, exclusive=True)` cancels the run under way when a new one
starts, but a thread cannot be stopped: the old run goes on and hands its
result to the interface thread all the same. Computed from older rows, and
finishing after the newer run (a big array's failure groups take a second or
more), it replaced the newer result, and at the end of a run, when nothing
derives them again, the failure groups, attempts and usage summary stayed old.
"""
from __future__ import annotations

from typing import Any, Callable

from textual.worker import get_current_worker


def unless_superseded(show: Callable[..., Any]) -> Callable[..., None]:
    """Called in a thread worker: `show`, to be called on the interface thread, which does
    nothing once a newer run of the worker cancelled this one (checked there, where the
    newer run is started, so one of the two results is always shown: the newest)."""
    worker = get_current_worker()

    def shown_if_current(*args: Any) -> None:
        if not worker.is_cancelled:
            show(*args)
    return shown_if_current
