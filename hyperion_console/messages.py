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
    """The Jobs screen now shows this record: one row per value (its newest attempt's task)."""

    def __init__(self, record_path: str, tasks: int, attempts: int = 1) -> None:
        super().__init__()
        self.record_path = record_path
        self.tasks = tasks
        self.attempts = attempts


class WatchStarted(Message):
    """The Jobs screen polls Slurm for these many tasks (those without a final state in the ledger;
    0: every state came from the attempt history, nothing is asked)."""

    def __init__(self, record_path: str, polled: int) -> None:
        super().__init__()
        self.record_path = record_path
        self.polled = polled


class JobsUpdated(Message):
    """New task states from the core's poller; `changed` holds only what changed.

    `as_of` (time.time()) is when the newest answer was current, None when this
    poll got no answer; `problem` is the query trouble while it lasts (shown on
    the status line), `error` the poll's own error text, `warning` what else went wrong
    (the attempt history cannot be written: the states are shown, not kept). `behind` is the
    core's "...; shown as last recorded" line when what is shown is the ledger's because a query
    failed: the ask for what ended tasks used (`usage_asked`: None then says it answered), or the
    last look for requeues of a run whose every task ended. `recorded`: every task ended and every
    end is the one the attempt history held (Slurm was asked only whether it ran one again).
    `slots`: what moving slots between the windows of a shared --max-jobs-run could not do (None:
    nothing failing), said on the status line while it lasts; `slots_news`: the core's `SlotsNotice`
    line to tell once (a refusal new while the trouble lasts, or that the slots move again).
    `forgotten`: `status`'s line of tasks of a job the controller knows none of while accounting
    has it running (UNKNOWN): kept on the status line, as `watch` ends with it.
    """

    def __init__(self, record_path: str, changed: Sequence[Any], error: str | None = None,
                 all_terminal: bool = False, as_of: float | None = None,
                 problem: str | None = None, warning: str | None = None, rows_only: bool = False,
                 usage_asked: bool = False, behind: str | None = None, recorded: bool = False,
                 slots: str | None = None, slots_news: str | None = None, troubles: tuple = (),
                 forgotten: str | None = None) -> None:
        super().__init__()
        self.forgotten = forgotten        # the core's line of tasks of a job the controller forgot (UNKNOWN)
        self.troubles = troubles          # the core's `problem` lines with when each began: ages that grow
        self.slots = slots                # the core's `slots_problem` line while moving slots fails
        self.slots_news = slots_news      # the core's `SlotsNotice` line: told once
        self.recorded = recorded
        self.usage_asked = usage_asked
        self.behind = behind
        self.rows_only = rows_only        # rows from beside the watch (usage): no word on its state
        self.record_path = record_path
        self.changed = tuple(changed)
        self.error = error
        self.all_terminal = all_terminal
        self.as_of = as_of
        self.problem = problem
        self.warning = warning


class TaskHighlighted(Message):
    """The cursor of a task table (or the state map) is on this task (None: no task shown);
    `table` is the id of the table ("tasks": the newest attempts, "attempt-tasks": one attempt)."""

    def __init__(self, key: tuple | None, task: Any, table: str | None = "tasks") -> None:
        super().__init__()
        self.key = key
        self.task = task
        self.table = table


class FilterChanged(Message):
    """The Jobs screen now shows the tasks passing this state filter."""

    def __init__(self, name: str, shown: int) -> None:
        super().__init__()
        self.name = name
        self.shown = shown


class LogUpdated(Message):
    """New lines of a followed log wait in the pane's buffer; a newer one replaces a pending older
    one (toolong style), and the handler takes everything buffered."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LogUpdated) and message.path == self.path


class LogAppended(Message):
    """The log view took `lines` new lines of `path`; `following` says whether it is at the end."""

    def __init__(self, path: str, lines: int, following: bool, restarted: bool = False) -> None:
        super().__init__()
        self.path = path
        self.lines = lines
        self.following = following
        self.restarted = restarted


class RecordsListed(Message):
    """The list of recent submissions was read again; `unlisted`: (folder, reason) of each folder
    that could not be listed, whose records are missing from it."""

    def __init__(self, paths: Sequence[str], unlisted: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__()
        self.paths = tuple(paths)
        self.unlisted = tuple(unlisted)


class CancelRequested(Message):
    """The user confirmed cancelling these scancel targets (JOB or JOB_TASK)."""

    def __init__(self, targets: Sequence[str]) -> None:
        super().__init__()
        self.targets = tuple(targets)


class ResubmitRequested(Message):
    """The user confirmed resubmitting the missing shards of a checkpoint."""

    def __init__(self, checkpoint: str, record_path: str, max_array_size: int | None,
                 mem: str | None = None, time: str | None = None) -> None:
        super().__init__()
        self.checkpoint = checkpoint
        self.record_path = record_path
        self.max_array_size = max_array_size
        self.mem = mem          # --mem / --time of `hyperion-checkpoint retry --submit` (auto: proposed sizes)
        self.time = time


class CheckpointLoaded(Message):
    """The Checkpoint screen has read a checkpoint and planned its retry."""

    def __init__(self, checkpoint: str, missing: Sequence[int]) -> None:
        super().__init__()
        self.checkpoint = checkpoint
        self.missing = tuple(missing)


class FailureGroupsListed(Message):
    """The failure groups of the open record: (state, exit code, signal, last line, count, values)."""

    def __init__(self, record_path: str, groups: Sequence[tuple]) -> None:
        super().__init__()
        self.record_path = record_path
        self.groups = tuple(groups)


class FailureGroupChosen(Message):
    """The task table now shows only one failure group's tasks (`values` as ranges)."""

    def __init__(self, record_path: str, state: str, values: str, shown: int) -> None:
        super().__init__()
        self.record_path = record_path
        self.state = state
        self.values = values
        self.shown = shown


class AttemptsListed(Message):
    """The attempts of the open record, oldest first: (number, kind, time, job ids, tasks, counts)."""

    def __init__(self, record_path: str, attempts: Sequence[tuple]) -> None:
        super().__init__()
        self.record_path = record_path
        self.attempts = tuple(attempts)


class AttemptShown(Message):
    """The attempt view shows attempt `number`'s tasks (their logs where they are now)."""

    def __init__(self, record_path: str, number: int, tasks: int) -> None:
        super().__init__()
        self.record_path = record_path
        self.number = number
        self.tasks = tasks


class RetryPreviewed(Message):
    """The retry preview was planned again: the next attempt, its values and command, or the refusal."""

    def __init__(self, record_path: str, attempt: int | None, values: str | None,
                 command: str | None, error: str | None) -> None:
        super().__init__()
        self.record_path = record_path
        self.attempt = attempt
        self.values = values
        self.command = command
        self.error = error


class RetryRefused(Message):
    """Retry said no (live tasks, nothing to retry, a bad override, a change since confirming):
    one line, nothing ran."""

    def __init__(self, record_path: str, reason: str) -> None:
        super().__init__()
        self.record_path = record_path
        self.reason = reason


class RetryRequested(Message):
    """The user confirmed a retry: it runs as attempt `attempt` with this hyperion-submit argv."""

    def __init__(self, record_path: str, attempt: int, values: str, argv: Sequence[str]) -> None:
        super().__init__()
        self.record_path = record_path
        self.attempt = attempt
        self.values = values
        self.argv = tuple(argv)
