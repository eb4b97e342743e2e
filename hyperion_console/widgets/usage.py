"""The per-array usage summary above the task table's usage columns, in three lines of 80 columns.

The heading and the figures are the core's (`backends.watch.usage_summary`:
`heading_of`/`tally_names` and `summarize_rows`, what `hyperion-jobs usage` prints): how
many tasks the summary is of and how many ended, then median, p95 and max of
MaxRSS and elapsed, CPU efficiency, and how many tasks used more than 90% of
their memory or time limit. Until a task has a figure, each is "-".
"""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from backends.watch.usage_summary import (
    StateTally,
    UsageHeading,
    UsageSummary,
    human_bytes,
    human_seconds,
    summarize,
)

from .fit_line import FitLine


def usage_lines(summary: UsageSummary | None) -> tuple[Text, Text]:
    """``MaxRSS med 314M p95 1.2G max 1.5G (38 of 40) · CPU 85%`` and the elapsed / near-limit line;
    ``(38 of 40)`` as the CLI's ``(38 of 40 tasks)``: of the tasks summarized, not of every task."""
    empty = summary is None or not summary.tasks
    summary = summary or summarize({})
    rss, elapsed = summary.max_rss_bytes, summary.elapsed_seconds
    efficiency = "-" if summary.cpu_efficiency is None else f"{summary.cpu_efficiency:.0%}"
    first = Text.assemble(("MaxRSS", "bold"), f" med {human_bytes(rss.median)} p95 {human_bytes(rss.p95)} "
                          f"max {human_bytes(rss.max)} ({rss.count} of {summary.tasks}) · ", ("CPU", "bold"),
                          f" {efficiency}")
    near_mem, near_time = len(summary.near_memory_limit), len(summary.near_time_limit)
    said_mem = str(near_mem) if near_mem or summary.memory_limited else "-"       # no limit to be near
    said_time = str(near_time) if near_time or summary.time_limited else "-"
    second = Text.assemble(("elapsed", "bold"), f" med {human_seconds(elapsed.median)} "
                           f"p95 {human_seconds(elapsed.p95)} max {human_seconds(elapsed.max)} · >90% of ",
                           ("--mem", "bold"), " ", (said_mem, "bold red" if near_mem else ""), ", of ",
                           ("--time", "bold"), " ", (said_time, "bold red" if near_time else ""))
    if empty:
        first.stylize("dim")
        second.stylize("dim")
    return first, second


class UsageSummaryLines(Vertical):
    """The heading and two lines of figures, each cut with an ellipsis when the terminal is narrower.

    The heading's state counts are set apart (`show_counts`), with the counts line above, from the
    same per-state counts: worked out with the figures, up to DERIVED_DELAY after a live update,
    it said "4 running, 9 pending" under "RUNNING 6  PENDING 7"."""

    DEFAULT_CSS = "UsageSummaryLines { height: 3; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.heading: UsageHeading | None = None
        self.counts = StateTally()

    def compose(self) -> ComposeResult:
        yield FitLine(id="usage-heading")
        yield FitLine(id="usage-line-1")
        yield FitLine(id="usage-line-2")

    def show(self, summary: UsageSummary | None, heading: UsageHeading | None) -> None:
        """`heading`: the core's `heading_of` the same rows as `summary` (None: nothing yet)."""
        first, second = usage_lines(summary)
        self.heading = heading
        self._show_heading()
        self.query_one("#usage-line-1", FitLine).update(first)
        self.query_one("#usage-line-2", FitLine).update(second)

    def show_counts(self, counts: StateTally) -> None:
        """The state counts of the moment (the core's `tally_names` of what the counts line shows)."""
        if counts != self.counts:
            self.counts = counts
            self._show_heading()

    def _show_heading(self) -> None:
        text = "" if self.heading is None else self.heading.text(self.counts)
        self.query_one("#usage-heading", FitLine).update(Text(text))
