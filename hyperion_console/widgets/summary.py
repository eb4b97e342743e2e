"""The Jobs screen's one-line summaries: per-state counts, and how fresh the states are.

Counts keep every state visible at 80 columns: full names while they fit,
squeue's short codes (CD, F, R, PD...) when not, an ellipsis only beyond that.
The status line says how old the states are and, while it lasts, what went
wrong asking Slurm: a frozen table must never look like a quiet array.
"""
from __future__ import annotations

import time
from typing import Mapping

from rich.text import Text

from backends.watch.ages import age_text
from backends.watch.poller import troubles_text

from ..shown import shown
from .fit_line import FitLine, fit_text, wrap_text
from .states import abbreviation_of, ordered, style_of


def counts_text(counts: Mapping[str, int], total: int, short: bool = False) -> Text:
    """`40 tasks  COMPLETED 20  FAILED 2 ...`, `1 task  COMPLETED 1` (short: `40: CD 20 F 2 ...`)."""
    text = Text(f"{total}:" if short else f"{total} task{'' if total == 1 else 's'} ", style="bold")
    for name in ordered(n for n, count in counts.items() if count):
        text.append(" ")
        text.append(abbreviation_of(name) if short else name, style=style_of(name))
        text.append(f" {counts[name]}" + ("" if short else " "))
    text.rstrip()
    return text


class StateCounts(FitLine):
    """Counts per state for the open record; `content` always holds the full names."""

    def __init__(self, **kwargs) -> None:
        super().__init__(Text("no submission selected"), **kwargs)
        self.counts: dict[str, int] = {}
        self.total = 0

    def show_counts(self, counts: Mapping[str, int], total: int) -> None:
        self.counts, self.total = dict(counts), total
        self.update(counts_text(self.counts, total))

    def render(self) -> Text:
        width = self.size.width
        full = self.content if isinstance(self.content, Text) else Text(str(self.content))
        if full.cell_len <= width or not self.counts:
            return fit_text(full, width)
        return fit_text(counts_text(self.counts, self.total, short=True), width)


STATUS_LINES = 3     # what a Slurm outage says, at most: the task table keeps the rest of the screen


class PollStatus(FitLine):
    """`states from Slurm 3 s ago`, or the query problem and the age of the last good answer.

    Drawn from the time now, so a once-a-second refresh keeps the age true
    between polls. A problem (`⚠`) wider than the screen wraps onto up to
    STATUS_LINES lines: beside the progress bar at 80 columns, squeue's error was cut after
    `retrying: controller (squeue) not answer…`, the cause itself out of sight.
    """

    DEFAULT_CSS = "PollStatus { height: auto; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(Text(""), **kwargs)
        self.source = ""
        self.as_of: float | None = None
        self.problem: str | None = None
        self.troubles: tuple = ()          # the problem's lines with when each began: their ages grow
        self.final = False
        self.behind: dict[str, str] = {}   # what did not answer (per ask), so some figures are the ledger's
        # the core's `unsubmitted_line`: values a refused sbatch window left out. Kept while the record
        # is open (a new watch's `start` keeps it): its tasks alone read `COMPLETED 1` as if whole
        self.left_out: str | None = None

    def start(self, source: str) -> None:
        """A new record: nothing known yet (`source`: "Slurm" or "local results")."""
        self.source, self.as_of, self.problem, self.final, self.behind = source, None, None, False, {}
        self.troubles = ()
        self.refresh(layout=True)

    def report(self, as_of: float | None, problem: str | None, final: bool = False, troubles: tuple = ()) -> None:
        """`troubles`: the core's lines of `problem` with when each began (`Trouble`), so its ages are
        said as of each redraw; without them `problem` is shown as it is."""
        if as_of is not None:
            self.as_of = as_of if self.as_of is None else max(self.as_of, as_of)
        self.problem = problem
        self.troubles = tuple(troubles) if problem else ()
        self.final = final
        self.refresh(layout=True)

    def note(self, ask: str, behind: str | None) -> None:
        """Keep `behind` (the core's "...; shown as last recorded") of one `ask` after the line;
        None clears it (that ask answered since)."""
        if self.behind.get(ask) == behind:       # said at every look that finds nothing missing
            return
        if behind:
            self.behind[ask] = behind
        else:
            self.behind.pop(ask, None)
        self.refresh(layout=True)

    @property
    def ages(self) -> bool:
        """Whether the line changes with the time alone (`states from Slurm 3 s ago`, a problem's
        `not answering for 7 s`): a console left open overnight after the end redrew an unchanging
        `every task ended` line every second."""
        return bool(self.source) and not self.final and (self.as_of is not None or bool(self.troubles))

    def show_left_out(self, line: str | None) -> None:
        """The record just opened: what it left unsubmitted (None: nothing)."""
        self.left_out = line
        self.refresh(layout=True)

    def line(self, now: float | None = None) -> Text:
        text = self._states_line(now)
        notes = [*self.behind.values(), *([self.left_out] if self.left_out else [])]
        if not (notes and self.source):
            return text
        if not text.plain.startswith("⚠"):      # in sight at 80 columns, where the note is cut
            text = Text("⚠ ", style="bold yellow") + text
        for behind in notes:
            text.append(" · ", style="dim")
            text.append_text(shown(behind, "yellow"))
        return text

    def _states_line(self, now: float | None = None) -> Text:
        now = time.time() if now is None else now
        if not self.source:
            return Text("")
        if self.final:           # nothing will change: an age would only grow, a problem is not retried
            return Text(f"every task ended: final states from {self.source}", style="dim")
        if self.problem:
            age = "no answer yet" if self.as_of is None else f"states {age_text(now - self.as_of)} old"
            text = Text(f"⚠ {age}, retrying: ", style="bold yellow")
            text.append_text(shown(troubles_text(self.troubles, now) or self.problem, "yellow"))
            return text
        if self.as_of is None:
            return Text(f"asking {self.source}…", style="dim")
        return Text(f"states from {self.source} {age_text(now - self.as_of)} ago", style="dim")

    def _lines(self, width: int) -> list[Text]:
        """A problem (`⚠ ...`) wrapped; the plain age one line (in a 60-column pane its last word
        alone took a second line, a row of the table)."""
        line = self.line()
        if not line.plain.startswith("⚠"):
            return [fit_text(line, width)]
        return wrap_text(line, width, self.app.console, STATUS_LINES)

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._lines(width))

    def render(self) -> Text:
        lines = self._lines(self.size.width)
        if len(lines) != self.size.height:      # the age grew a digit and the problem a line: lay out again
            self.call_after_refresh(self.refresh, layout=True)
        return Text("\n", end="").join(lines)
