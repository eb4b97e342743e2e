"""The retry preview: which values rerun, in which windows, with which overrides, and the exact command.

Fields as `hyperion-jobs retry` has options (values, states, --mem or
--mem-per-cpu, --time, --num-threads; "auto" for --mem/--time where the core
proposes sizes); every change is planned again by the core in a worker
(hyperion_console.retrying.preview) and shown: the owner warning of a record
that is not the user's alone, `describe_retry`'s lines (values, windows,
directory, command) and the sizes the core would propose. A refusal (a bad
field, live tasks, nothing to retry) is one line and disables Retry. Retry
asks once more (the confirmation repeats the preview), then dismisses with
the request and what was confirmed; the Jobs screen runs it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from backends.records.history import History
from backends.retry import AUTO, RetryRequest
from backends.watch.rows import TaskRow

from ..errors import guarded
from ..messages import RetryPreviewed
from ..retrying import FIELDS, Preview, preview
from ..shown import shown
from ..widgets.field import Field
from ..widgets.path_text import PathText
from ..widgets.fit_line import FitLine
from .base import HidesToastsBelow, console_footer
from .confirm import ConfirmScreen

LABELS = {"values": "values", "state": "states", "mem": "--mem", "mem_per_cpu": "--mem-per-cpu",
          "time": "--time", "num_threads": "--num-threads"}
PLACEHOLDERS = {"values": "all failed", "state": "any (FAILED,...)", "mem": "as before",
                "mem_per_cpu": "as before", "time": "as before", "num_threads": "as before"}
if AUTO:
    PLACEHOLDERS.update(mem=f"as before | {AUTO}", time=f"as before | {AUTO}")


@dataclass(frozen=True)
class RetryDecision:
    """What the user confirmed: the request, and the plan's identity to check again before it runs."""

    record_path: str
    request: RetryRequest
    confirmed: tuple
    attempt: int
    values: str
    argv: tuple[str, ...]


class RetryScreen(HidesToastsBelow, ModalScreen["RetryDecision | None"]):
    # The dialog is 78x22; in a smaller terminal (a split tmux pane) its fields stack and its
    # blank lines go, so the preview keeps lines and the buttons stay on screen (console.tcss).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (78, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (22, "-tall")]

    # Its own footer lists them (as a confirmation's does): the Jobs screen's footer behind it listed
    # `f Filter v Views ... q Quit`, keys typed into a field here or doing nothing, and not these.
    # (The app's tab moves the focus, a priority binding; this one only names it in the footer.)
    BINDINGS = [
        Binding("ctrl+r", "retry", "Retry", priority=True),
        Binding("escape", "close", "Close"),
        Binding("tab", "app.focus_next", "Next field", priority=True),
    ]

    def __init__(self, history: History, rows: Sequence[TaskRow], values: str = "") -> None:
        super().__init__()
        self.history = history
        self.rows = tuple(rows)
        self.initial = {"values": values}
        self.current: Preview | None = None
        self._generation = 0
        self._planned: dict[str, str] | None = None    # the fields `current` was planned from

    def compose(self) -> ComposeResult:
        with Vertical(id="retry-dialog"):
            yield FitLine(shown(f"Retry tasks of {Path(self.history.record_path).name}", "bold"),
                          id="retry-title")
            for left, right in (("values", "state"), ("mem", "mem_per_cpu"), ("time", "num_threads")):
                with Horizontal(classes="retry-row"):
                    for name in (left, right):
                        yield Label(LABELS[name], classes="retry-label")
                        # a failure group's values, wider than the field: shown from the first
                        yield Field(self.initial.get(name, ""), placeholder=PLACEHOLDERS[name],
                                    id=f"retry-{name.replace('_', '-')}", compact=True,
                                    start_shown=name == "values")
            yield FitLine(id="retry-error")
            with VerticalScroll(id="retry-preview"):
                yield PathText("planning…", id="retry-text")     # a path wraps after a `/`, not inside a name
            with Horizontal(id="retry-buttons"):
                yield Button("Use proposed sizes", id="retry-use-sizes", compact=True, disabled=True)
                yield Button("Close", id="retry-close", variant="primary", compact=True)
                yield Button("Retry…", id="retry-run", variant="error", compact=True, disabled=True)
        yield console_footer()

    def on_mount(self) -> None:
        self.field("values").focus()        # a form: typing fills it; escape closes
        self.replan()

    # -- fields ----------------------------------------------------------------------
    def field(self, name: str) -> Input:
        return self.query_one(f"#retry-{name.replace('_', '-')}", Input)

    def fields(self) -> dict[str, str]:
        return {name: self.field(name).value for name in FIELDS}

    def set_field(self, name: str, value: str) -> None:
        """Tests and the proposal button: set a field as if typed (the preview follows)."""
        self.field(name).value = value

    @on(Input.Changed)
    def _changed(self) -> None:
        self.replan()

    def action_close(self) -> None:
        """Escape closes the preview, nothing retried, from a field too: as every other dialog does.
        It used to leave the field first, and a user whose one Escape left the dialog up pressed
        keys meant for the Jobs screen into it."""
        self.dismiss(None)

    # -- planning (worker) ---------------------------------------------------------------
    def replan(self) -> None:
        self._generation += 1
        self.plan_preview(self.fields(), self._generation)

    @work(thread=True, exclusive=True, group="retry-plan", exit_on_error=False)
    def plan_preview(self, fields: dict[str, str], generation: int) -> None:
        result = preview(self.history, self.rows, fields)
        self.app.call_from_thread(self.show_preview, result, generation, fields)

    def show_preview(self, result: Preview, generation: int, fields: dict[str, str] | None = None) -> None:
        if generation != self._generation:      # typed on meanwhile: a newer plan comes
            return
        self.current, self._planned = result, fields
        error = self.query_one("#retry-error", FitLine)
        error.update(shown(result.error, "bold red") if result.error else shown(""))
        # under a field's error, "nothing would run" read as if there were nothing to retry
        idle = "nothing runs until the field in red is mended" if result.error else "nothing would run"
        self.query_one("#retry-text", PathText).update(shown(result.text or idle, layout=True))
        run = self.query_one("#retry-run", Button)
        run.disabled = result.retry is None
        label = "Retry…" if result.retry is None else f"Retry {len(result.retry.values)} task(s)…"
        if str(run.label) != label:
            run.label = label
            # A Button's label is drawn in the width laid out for the label before it: `Retry…` (drawn
            # before the plan came, or while a field was refused) left `Retry 3 task(s)…` wrapped in
            # it, the screen showing `Retry 3`, cut without a mark. Lay the row out again.
            run.refresh(layout=True)
        sizes = result.sizes
        self.query_one("#retry-use-sizes", Button).disabled = sizes is None or not (sizes.mem or sizes.time)
        self.post_message(RetryPreviewed(result.record_path, result.attempt,
                                         None if result.retry is None else result.retry.value_ranges,
                                         result.command, result.error))

    # -- buttons ---------------------------------------------------------------------------
    @on(Button.Pressed, "#retry-close")
    def _close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#retry-use-sizes")
    def _use_sizes(self) -> None:
        sizes = self.current.sizes if self.current else None
        if sizes is None:
            return
        if sizes.mem:
            self.set_field("mem_per_cpu", "")
            self.set_field("mem", sizes.mem)
        if sizes.time:
            self.set_field("time", sizes.time)

    @on(Button.Pressed, "#retry-run")
    def _run_pressed(self) -> None:
        self.action_retry()

    @guarded
    def action_retry(self) -> None:
        """Ask once more; on yes, dismiss with what was confirmed (the Jobs screen runs it)."""
        result = self.current
        # Refusals are said in the dialog's error line: no toast shows over the dialog (console.tcss),
        # and one shown after it closed would speak of a preview no longer there.
        error = self.query_one("#retry-error", FitLine)
        if result is not None and self._planned != self.fields():   # typed since: not what is shown
            self.replan()        # its preview replaces this line
            error.update(shown("the fields changed: planning again; Retry once the preview shows them",
                               "bold yellow"))
            return
        if result is None or result.retry is None or result.identity is None:
            error.update(shown(result.error if result and result.error else "nothing to retry yet (planning…)",
                               "bold red" if result and result.error else "bold yellow"))
            return
        retry = result.retry
        decision = RetryDecision(result.record_path, result.request, result.identity, result.attempt or 0,
                                 retry.value_ranges, tuple(retry.plan.argv))

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(decision)

        self.app.push_screen(ConfirmScreen(
            f"Retry {len(retry.values)} task(s) as attempt {decision.attempt}?", result.confirm_text, yes="Retry"),
            answered)
