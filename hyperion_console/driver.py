"""The terminal driver: Textual's own, with an output that survives the terminal closing.

A closed terminal (tmux window, ssh dropped) makes every write fail with EIO.
Textual's output thread died on the first one, and its bounded queue then filled
and blocked the app for ever: a console stopping its local run after a hangup
never exited. Writes to a gone terminal are dropped instead (`SafeStream`).
"""
from __future__ import annotations

from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from backends.watch.terminal import SafeStream


class SurvivingLinuxDriver(LinuxDriver):
    """LinuxDriver whose output thread writes through a `SafeStream`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if hasattr(self, "_file"):     # Textual's private output (8.x); without it, Textual's own behaviour
            self._file = SafeStream(self._file)


def surviving(driver: type[Driver]) -> type[Driver]:
    """`driver`, with a surviving output where it is the Linux terminal driver (tests run headless)."""
    return SurvivingLinuxDriver if driver is LinuxDriver else driver
