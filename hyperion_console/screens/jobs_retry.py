"""The Jobs screen's Retry, from the key to the new attempt on screen.

R opens the preview (hyperion_console.screens.retry) over the rows the screen
holds, unless the core refuses at once (live tasks, nothing to retry): then
one line, and nothing opens. A confirmed preview runs in a thread worker
(hyperion_console.retrying.run_retry: planned again from Slurm's answer of
that moment, run in the record's directory as the next attempt); its record
is announced as a Submitted message, and the app opens it on the Jobs screen.
"""
from __future__ import annotations

from functools import partial

from backends.client import QueryStopped
from backends.records.history import History
from backends.watch.slurm.accounting import stoppable

from ..errors import RECORD_FIELDS, describe_error
from ..launch import PartlySubmitted, sbatch_teller
from ..messages import RetryRefused, RetryRequested, Submitted
from ..retrying import Refused, preview, run_retry
from ..shown import tell
from ..task_rows import rows_now
from .retry import RetryDecision, RetryScreen


class RetryFlow:
    """Owned by the Jobs screen; its workers are the screen's (errors shown as notifications)."""

    def __init__(self, screen) -> None:
        self.screen = screen

    @property
    def app(self):
        return self.screen.app

    def start(self, history: History, tasks: dict, states: dict, values: str = "") -> None:
        """Plan once in a worker with `values` (blank: every failed value); open the preview or refuse."""
        self.screen.run_worker(partial(self._prepare, history, tasks, states, values), name="retry",
                               group="retry", exclusive=True, thread=True, exit_on_error=False)

    def _prepare(self, history: History, tasks: dict, states: dict, values: str) -> None:
        rows = rows_now(history, tasks, states)
        first = preview(history, rows, {"values": values})
        if first.retry is None:
            self.app.call_from_thread(self.refuse, first.error or "retry: nothing to retry")
            return
        self.app.call_from_thread(self._open, history, rows, values)

    def _open(self, history: History, rows: list, values: str) -> None:
        if history is self.screen.history:          # not another record opened meanwhile
            self.app.push_screen(RetryScreen(history, rows, values), self.decided)

    def refuse(self, reason: str) -> None:
        self.screen.post_message(RetryRefused(self.screen.record_path or "", reason))
        tell(self.screen, reason, title="retry", severity="warning", timeout=10)

    def decided(self, decision: RetryDecision | None) -> None:
        if decision is None:
            return
        self.screen.post_message(RetryRequested(decision.record_path, decision.attempt, decision.values,
                                                decision.argv))
        self.screen.run_worker(partial(self._run, decision), name="retry", group="retry-run",
                               thread=True, exit_on_error=False)

    def _run(self, decision: RetryDecision) -> None:
        """As hyperion-jobs retry; the Jobs screen opens the new attempt as soon as its record exists."""
        def announce(path: str) -> None:
            self.app.call_from_thread(self.app.post_message, Submitted(path))

        def told(line: str) -> None:
            self.app.call_from_thread(tell, self.screen, line, title="retry", severity="warning", timeout=10)

        def begun() -> None:       # said once nothing refused it: the dialog may be older than the table
            self.app.call_from_thread(tell, self.screen,
                                      f"retrying values {decision.values} as attempt {decision.attempt}")

        try:
            status = run_retry(decision.record_path, decision.request, decision.confirmed, announce,
                               self.app.local_runs, begun, sbatch_teller(self.app, self.app),
                               stoppable(self.screen.screen_gone), told)
        except QueryStopped:             # the console closed while Slurm was asked: nothing ran, nobody to tell
            return
        except Refused as refused:
            self.app.call_from_thread(self.refuse, str(refused))
            return
        except PartlySubmitted as exc:    # some windows went in and are opened: not "refused, nothing ran"
            self.app.call_from_thread(tell, self.screen, describe_error(exc), title="retry partly submitted",
                                      severity="error", timeout=10)
            return
        except Exception as exc:       # sbatch refused, a live task appeared: one line, not `record: ...`
            self.app.call_from_thread(self.refuse, describe_error(exc, RECORD_FIELDS))
            return
        if status is not None:
            self.app.call_from_thread(tell, self.screen, f"local retry finished: exit status {status}",
                                      severity="information" if status == 0 else "error")
