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
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from backends.watch.triage import FailureGroup

from ..shown import shown
from .states import style_of


def group_title(group: FailureGroup) -> str:
    """``FAILED exit 3 signal 9``: what a user greps for."""
    how = group.state
    if group.exit_code is not None:
        how += f" exit {group.exit_code}"
    if group.signal:
        how += f" signal {group.signal}"
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


def failures_head(groups: list[FailureGroup], total: int) -> Text:
    """``3 of 40 task(s) did not succeed, in 2 group(s) · enter: show them · R: retry them``."""
    if not groups:
        return Text(f"no failed tasks: every one of {total} task(s) completed or is still live",
                    style="green")
    failed = sum(g.count for g in groups)
    text = Text(f"{failed} of {total} task(s) did not succeed, in {len(groups)} group(s)", style="bold")
    text.append(" · enter: its tasks · R: retry it", style="dim")
    return text
