"""The attempts of a submission, as `hyperion-jobs history` lists them: one line each, oldest first.

Number, kind (submit, retry, resubmit), when, job ids, task count, how its
tasks ended (their newest run: the core's `attempt_counts`) and the options it
changed. Highlighting an attempt shows its tasks in the table below it, each
with its log where it is now (a later rerun moved it aside), and the log pane
follows the task selected there. Every piece comes from a record or the
ledger: shown through `printable`, as text, one line cut with an ellipsis.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from backends.cli.jobs.history import attempt_counts, changed_text, changes
from backends.records.history import History
from backends.watch.rows import TaskRow

from ..messages import AttemptShown, AttemptsListed
from ..shown import shown
from ..superseded import unless_superseded
from ..task_rows import attempt_rows, attempt_tasks, rows_now
from .fit_line import FitLine
from .keyed_line import KeyedLine
from .list_keys import LIST_KEYS
from .states import abbreviation_of, ordered, style_of
from .task_table import TaskTable

JOBS_WIDTH = 12


@dataclass(frozen=True)
class AttemptLine:
    """One attempt, as `hyperion-jobs history` prints it."""

    number: int
    kind: str
    time: str
    job_ids: tuple[str, ...]
    tasks: int
    values: str
    counts: Mapping[str, int]
    overrides: Mapping[str, object]

    def as_tuple(self) -> tuple:
        return (self.number, self.kind, self.time, self.job_ids, self.tasks, dict(self.counts))


def attempt_lines(history: History, latest_rows: list[TaskRow]) -> list[AttemptLine]:
    """Every attempt of `history`, with the counts of its tasks' newest runs (`latest_rows`)."""
    counts = attempt_counts(history, latest_rows)
    out = []
    for number in history.numbers:
        record = history.records[number]
        entry = history.entry(number)
        out.append(AttemptLine(
            number, entry.kind if entry else record.kind, entry.time if entry else record.submitted_at,
            tuple(job.job_id for job in record.jobs), len(record.tasks), entry.values if entry else "",
            counts[number], changes(history, number)))
    return out


def when(time: str) -> str:
    """``2026-09-21T12:05:33...`` -> ``09-21 12:05`` (the list's column; the detail line has it all)."""
    return time[5:16].replace("T", " ") if len(time) >= 16 else time


HEAD = f"{'#':>3} {'kind':<8} {'submitted':<11} {'jobs':<{JOBS_WIDTH}} {'tasks':>6}  states · changed"


def attempt_text(line: AttemptLine) -> Text:
    """`  2 retry    09-21 12:05 4243           3  CD 2 F 1 · mem=300M`, one line."""
    jobs = ",".join(line.job_ids) or "local"
    if len(jobs) > JOBS_WIDTH:
        jobs = jobs[: JOBS_WIDTH - 1] + "…"
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    text.append(f"{line.number:>3} ", style="bold")
    text.append_text(shown(f"{line.kind:<8} {when(line.time):<11} "))
    text.append_text(shown(f"{jobs:<{JOBS_WIDTH}} ", "cyan"))
    text.append(f"{line.tasks:>6} ")
    for name in ordered(line.counts):
        text.append(" ")
        text.append(abbreviation_of(name), style=style_of(name))
        text.append(f" {line.counts[name]}")
    changed = changed_text(line.overrides)
    if changed:
        text.append(" · ", style="dim")
        text.append_text(shown(changed, "yellow"))
    return text


def attempt_detail(line: AttemptLine) -> str:
    """Everything of one attempt on one line (cut with an ellipsis on screen)."""
    jobs = ",".join(line.job_ids) or "local"
    # attempt 1 has nothing before it to change: "changed nothing" read as a retry that changed nothing
    changed = "first submission" if line.number == 1 else f"changed {changed_text(line.overrides) or 'nothing'}"
    return (f"attempt {line.number} ({line.kind}): values {line.values or '-'}, {changed}, "
            f"{line.tasks} task(s), job(s) {jobs}, at {line.time}")


class AttemptList(OptionList):
    """The attempts, oldest first; the option id is the attempt number."""

    BINDINGS = LIST_KEYS

    def __init__(self, **kwargs) -> None:
        super().__init__(compact=True, **kwargs)
        self.lines: list[AttemptLine] = []

    def show_attempts(self, lines: list[AttemptLine], number: int | None) -> None:
        """Replace the list; highlight attempt `number` (default: the newest)."""
        self.lines = list(lines)
        self.clear_options()
        self.add_options([Option(attempt_text(line), id=str(line.number)) for line in self.lines])
        numbers = [line.number for line in self.lines]
        if numbers:
            self.highlighted = numbers.index(number) if number in numbers else len(numbers) - 1
            # the list is 3 rows high: the newest of 4 attempts was highlighted below them, out of
            # sight (lines are laid out at the next refresh, so scrolling to it now does nothing)
            self.call_after_refresh(self.scroll_to_highlight)

    def on_resize(self) -> None:
        """Grown to its 3 rows after the scroll above ran (a loaded machine lays out later): the
        highlighted attempt is brought into sight again, not left below the rows shown."""
        self.call_after_refresh(self.scroll_to_highlight)

    def line_of(self, number: int) -> AttemptLine | None:
        return next((line for line in self.lines if line.number == number), None)


class AttemptsView(Vertical):
    """The attempts (head, list, the highlighted one in full) over the highlighted attempt's tasks."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.history: History | None = None
        self.latest: tuple[dict, dict] = ({}, {})     # the screen's (tasks, states) when derived
        self.number: int | None = None

    def compose(self) -> ComposeResult:
        yield FitLine(shown(HEAD, "bold"), id="attempts-head")
        yield AttemptList(id="attempt-list")
        yield KeyedLine(id="attempt-detail")     # the keys after it were cut (`· enter: its tasks…` at 120)
        yield TaskTable(id="attempt-tasks")

    @property
    def listing(self) -> AttemptList:
        return self.query_one(AttemptList)

    @property
    def table(self) -> TaskTable:
        return self.query_one("#attempt-tasks", TaskTable)

    def reset(self) -> None:
        """Another record: nothing of the last one stays."""
        self.history, self.number, self.latest = None, None, ({}, {})
        self.listing.clear_options()
        self.query_one("#attempt-detail", KeyedLine).show_head(Text(""), None)
        self.table.show_tasks((), ())

    @work(thread=True, exclusive=True, group="attempts", exit_on_error=False)
    def derive(self, history: History, tasks: dict, states: dict) -> None:
        """Every attempt, as hyperion-jobs history lists them (`tasks`, `states`: the screen's, copied)."""
        lines = attempt_lines(history, rows_now(history, tasks, states))
        self.app.call_from_thread(unless_superseded(self.show), history, lines, (tasks, states))

    def show(self, history: History, lines: list[AttemptLine], latest: tuple[dict, dict]) -> None:
        """The attempts again; the attempt shown keeps its place, its rows follow the live states."""
        same = self.history is not None and history.record_path == self.history.record_path
        self.history, self.latest = history, latest
        if not same:
            self.number = None
        self.listing.show_attempts(lines, self.number)
        if same and self.number is not None:
            tasks = attempt_tasks(history, self.number)
            self._in_table(self.table.apply, attempt_rows(history, tasks, latest[1], latest[0]))
        self.post_message(AttemptsListed(history.record_path, [line.as_tuple() for line in lines]))

    @on(OptionList.OptionHighlighted, "#attempt-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option.id is not None and self.history is not None:
            self.show_attempt(int(event.option.id))

    @on(OptionList.OptionSelected, "#attempt-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.table.focus()

    def show_attempt(self, number: int) -> None:
        """Attempt `number`'s tasks in the table: the ledger's final states, or the live row of a
        task that is still the newest run of its value."""
        line = self.listing.line_of(number)
        if line is not None:
            self.query_one("#attempt-detail", KeyedLine).show_head(shown("▸ " + attempt_detail(line), "dim"),
                                                                   "enter: its tasks · escape: back")
        if number == self.number or self.history is None:
            return
        self.number = number
        tasks = attempt_tasks(self.history, number)
        latest_tasks, states = self.latest
        self._in_table(self.table.show_tasks, tasks, attempt_rows(self.history, tasks, states, latest_tasks))
        self.post_message(AttemptShown(self.history.record_path, number, len(tasks)))

    def _in_table(self, method, *args) -> None:
        """Run a table method from the table's own message loop: the TaskHighlighted it posts then
        bubbles up to the screen (Textual stops a message at the widget that posted it)."""
        self.table.call_later(method, *args)
