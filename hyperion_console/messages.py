"""The console's own Messages: what screens tell each other, and what tests record."""
from __future__ import annotations

from typing import Any, Sequence

from textual.message import Message


class PreviewUpdated(Message):
    """The Submit form was re-planned: the equivalent command line, or the core's error."""

    def __init__(self, command_line: str | None, error: str | None) -> None:
        super().__init__()
        self.command_line = command_line
        self.error = error


class SubmitRequested(Message):
    """The user confirmed a submission of this hyperion-submit argv (without the prog name)."""

    def __init__(self, argv: Sequence[str]) -> None:
        super().__init__()
        self.argv = tuple(argv)


class Submitted(Message):
    """A submission (slurm or local) has a record the Jobs screen can open."""

    def __init__(self, record_path: str) -> None:
        super().__init__()
        self.record_path = record_path


class RecordOpened(Message):
    """The Jobs screen now shows this record."""

    def __init__(self, record_path: str, tasks: int) -> None:
        super().__init__()
        self.record_path = record_path
        self.tasks = tasks


class JobsUpdated(Message):
    """New task states from the core's poller; `changed` holds only what changed."""

    def __init__(self, record_path: str, changed: Sequence[Any], error: str | None = None,
                 all_terminal: bool = False) -> None:
        super().__init__()
        self.record_path = record_path
        self.changed = tuple(changed)
        self.error = error
        self.all_terminal = all_terminal


class LogUpdated(Message):
    """The tail of a followed log; a newer one replaces a pending older one (toolong style)."""

    def __init__(self, path: str, lines: Sequence[str]) -> None:
        super().__init__()
        self.path = path
        self.lines = tuple(lines)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LogUpdated) and message.path == self.path


class CancelRequested(Message):
    """The user confirmed cancelling these scancel targets (JOB or JOB_TASK)."""

    def __init__(self, targets: Sequence[str]) -> None:
        super().__init__()
        self.targets = tuple(targets)


class ResubmitRequested(Message):
    """The user confirmed resubmitting the missing shards of a checkpoint."""

    def __init__(self, checkpoint: str, record_path: str, max_array_size: int | None) -> None:
        super().__init__()
        self.checkpoint = checkpoint
        self.record_path = record_path
        self.max_array_size = max_array_size


class CheckpointLoaded(Message):
    """The Checkpoint screen has read a checkpoint and planned its retry."""

    def __init__(self, checkpoint: str, missing: Sequence[int]) -> None:
        super().__init__()
        self.checkpoint = checkpoint
        self.missing = tuple(missing)
