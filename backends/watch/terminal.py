"""Writing to a terminal that may go away: a write error ends the output, never the wait.

A detached hyperion-submit (``setsid``, ssh dropped) gets EIO on its next
progress line, a closed pipe gives EPIPE, a closed stream ValueError. Waiting
for the jobs and reporting the right exit status matter more than the text, so
`SafeStream` swallows those errors, remembers that the stream is gone, and
points its file descriptor at /dev/null so that nothing later (the
interpreter's own flush at exit included) fails on it again.
"""
from __future__ import annotations

from typing import TextIO

from backends.errors import discard_output
from backends.printable import printable


class SafeStream:
    """A text stream whose write/flush never raise; `broken` says output was lost."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if self.broken:
            return 0
        try:
            return self.stream.write(text)
        except (OSError, ValueError):
            self.lose()
            return 0

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self.stream.flush()
        except (OSError, ValueError):
            self.lose()

    def isatty(self) -> bool:
        try:
            return not self.broken and self.stream.isatty()
        except (AttributeError, OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self.stream.fileno()

    def line(self, text: str) -> None:
        """`text` as one line, controls escaped, then flushed (print(..., flush=True), safely).

        Lines name paths and Slurm's words; a directory named with an ESC sequence
        must not retitle the terminal.
        """
        self.write(printable(text) + "\n")
        self.flush()

    def lose(self) -> None:
        self.broken = True
        discard_output(self.stream)


def safe(stream: TextIO | SafeStream) -> SafeStream:
    return stream if isinstance(stream, SafeStream) else SafeStream(stream)
