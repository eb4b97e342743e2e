"""The terminal driver: Textual's own, made to end the console when its terminal is gone.

A closed terminal (tmux window, ssh dropped) makes every write fail with EIO.
Textual's output thread died on the first one, and its bounded queue then filled
and blocked the app for ever: a console stopping its local run after a hangup
never exited. Writes to a gone terminal are dropped instead (`SafeStream`).

A terminal can also go without a SIGHUP: a pseudo-terminal that is not the
console's controlling terminal (started with ``setsid`` or
``start_new_session``, as a bench or an expect script does) just hangs up. Its
input then reads end-of-file at once, for ever, and Textual's input thread spun
on it, a whole CPU, with the console running on unseen. Now a hang-up of the
input (`HangupWatch`), an input error (EIO) or output lost for good are taken as
the hangup they are: the input loop ends and the console gets SIGHUP, so it ends
exactly as a closed terminal ends it (a local run's task stopped and recorded,
exit 129; under ``nohup`` it stays, idle).
"""
from __future__ import annotations

import errno
import os
import signal
import threading

from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from backends.watch.terminal import SafeStream

from .hangup import HangupWatch


class TerminalOutput(SafeStream):
    """A `SafeStream` that says when its output is lost (for good: `SafeStream` never writes again)."""

    def __init__(self, stream, lost) -> None:
        super().__init__(stream)
        self._lost = lost

    def lose(self) -> None:
        super().lose()
        self._lost()


class SurvivingLinuxDriver(LinuxDriver):
    """LinuxDriver whose terminal going away ends the console as a hangup does."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._hung_up = threading.Event()
        self._in_application_mode = False
        if hasattr(self, "_file"):     # Textual's private output (8.x); without it, Textual's own behaviour
            self._file = TerminalOutput(self._file, self._terminal_gone)

    def start_application_mode(self) -> None:
        self._in_application_mode = True
        super().start_application_mode()

    def stop_application_mode(self) -> None:
        # leaving the screen after a normal quit writes too: its EIO is no hangup to signal
        self._in_application_mode = False
        super().stop_application_mode()

    def run_input_thread(self) -> None:
        """Textual's input loop, ended (not spun) when the terminal hangs up or fails."""
        watch = HangupWatch(self.fileno, self._terminal_gone)
        watch.start()
        try:
            super().run_input_thread()
        except OSError as error:
            if error.errno != errno.EIO:
                raise
            self._terminal_gone()
        finally:
            watch.stop()

    def _terminal_gone(self) -> None:
        """The hangup the kernel sent no signal for: stop reading, and signal it once."""
        if self._hung_up.is_set() or not self._in_application_mode:
            return
        self._hung_up.set()
        self.exit_event.set()                 # Textual's input loop ends instead of reading EOF for ever
        os.kill(os.getpid(), signal.SIGHUP)   # the app's handler: as a closed terminal ends the console


def surviving(driver: type[Driver]) -> type[Driver]:
    """`driver`, with a surviving output where it is the Linux terminal driver (tests run headless)."""
    return SurvivingLinuxDriver if driver is LinuxDriver else driver
