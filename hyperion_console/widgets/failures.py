"""Failure triage on the Jobs screen: the tasks that did not succeed, grouped by what went wrong.

The groups are the core's (`backends.watch.triage.failure_groups`, what
`hyperion-jobs status --failures` prints): one Slurm state, exit code and
signal, and the last line the program wrote. Each option is two lines, cut
with an ellipsis: the count, state and values, then that last line. Enter
posts OptionSelected; the Jobs screen shows the group's tasks. The last line
comes from a log: it is shown through `printable`, as text.
"""
from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from backends.records.history import History
from backends.states import exit_note, signal_text
from backends.watch.triage import FailureGroup, failure_groups, failures_summary

from ..messages import FailureGroupsListed
from ..shown import shown
from ..superseded import unless_superseded
from ..task_rows import rows_now
from .keyed_line import KeyedLine
from .list_keys import LIST_KEYS
from .states import style_of


def group_title(group: FailureGroup) -> str:
    """``FAILED exit 3 signal 9``: what a user greps for."""
    how = group.state
    if group.exit_code is not None:
        how += f" exit {group.exit_code}{exit_note(group.exit_code, group.signal)}"
    if group.signal:
        how += f" {signal_text(group.signal)}"
    return how


def group_text(group: FailureGroup) -> Text:
    """Two lines: ``   4 FAILED exit 3 · values 3,7-9``, then the log's last line (or why none)."""
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    text.append(f"{group.count:>5} ", style="bold")
    text.append_text(shown(group_title(group), style_of(group.state)))
    text.append_text(shown(f" · values {group.value_ranges}"))
    text.append("\n      ")
    if group.last_line:
        text.append("last line: ", style="dim")
        text.append_text(shown(group.last_line))
    else:
        text.append("no line from the program" if group.example_log else "never ran: no log", style="dim")
    return text


class FailureList(OptionList):
    """The groups, largest first; the option id is the group's position in `groups`."""

    BINDINGS = LIST_KEYS

    def __init__(self, **kwargs) -> None:
        super().__init__(compact=True, **kwargs)
        self.groups: list[FailureGroup] = []

    def show_groups(self, groups: list[FailureGroup]) -> None:
        """Replace the groups, keeping the highlight on the same position."""
        highlighted = self.highlighted
        self.groups = list(groups)
        self.clear_options()
        self.add_options([Option(group_text(g), id=str(i)) for i, g in enumerate(self.groups)])
        if self.groups:
            self.highlighted = min(highlighted or 0, len(self.groups) - 1)

    def selected_group(self) -> FailureGroup | None:
        if self.highlighted is None or not self.groups:
            return None
        return self.groups[self.highlighted]


KEYS_HINT = "enter: its tasks · R: retry it"


def failures_head(groups: list[FailureGroup], total: int) -> Text:
    """``3 of 40 task(s) did not succeed (failed 2, timeout 1), in 2 group(s)``: the CLI's
    `status --failures` head (the keys are FailuresHead's second part)."""
    if not groups:
        return Text(failures_summary(groups, total), style="green")
    return Text(failures_summary(groups, total), style="bold")


class FailuresHead(KeyedLine):
    """The head, then the keys (KeyedLine): with the breakdown of states the head took 73 columns and
    the keys after it were cut to `· ent…` at 80; a head wider than the screen (failed, timeout and
    cancelled at 80 columns) was cut in turn, losing its group count."""


class FailuresView(Vertical):
    """The head line and the groups of the open record."""

    class Highlighted(Message):
        """The cursor is on this group (None: no failures)."""

        def __init__(self, group: FailureGroup | None) -> None:
            super().__init__()
            self.group = group

    class Chosen(Message):
        """Enter on a group: show its tasks."""

        def __init__(self, group: FailureGroup) -> None:
            super().__init__()
            self.group = group

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.record_path: str | None = None

    def compose(self) -> ComposeResult:
        yield FailuresHead(id="failures-head")
        yield FailureList(id="failure-list")

    @property
    def listing(self) -> FailureList:
        return self.query_one(FailureList)

    def selected_group(self) -> FailureGroup | None:
        return self.listing.selected_group()

    @work(thread=True, exclusive=True, group="failures", exit_on_error=False)
    def derive(self, history: History, tasks: dict, states: dict) -> None:
        """The core's failure groups of the rows the screen holds (`tasks`, `states`: copies)."""
        self.record_path = history.record_path
        groups = failure_groups(rows_now(history, tasks, states))
        self.app.call_from_thread(unless_superseded(self.show), history.record_path, groups, len(tasks))

    def show(self, path: str, groups: list[FailureGroup], total: int) -> None:
        if path != self.record_path:        # another record was opened meanwhile
            return
        self.query_one("#failures-head", FailuresHead).show_head(failures_head(groups, total),
                                                                 KEYS_HINT if groups else None)
        self.listing.show_groups(groups)
        if not groups:
            self.post_message(self.Highlighted(None))
        self.post_message(FailureGroupsListed(path, [(g.state, g.exit_code, g.signal, g.last_line, g.count,
                                                      g.value_ranges) for g in groups]))

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self.post_message(self.Highlighted(self.selected_group()))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        group = self.selected_group()
        if group is not None:
            self.post_message(self.Chosen(group))
