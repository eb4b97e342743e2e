"""Command palette entries: every action of every screen, by name."""
from __future__ import annotations

from functools import partial
from typing import Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .task_index import FILTERS

# (title, help, screen or None for the app, action)
ACTIONS: tuple[tuple[str, str, str | None, str], ...] = (
    ("Show Submit screen", "form, validation and dry-run preview", None, "show('submit')"),
    ("Show Jobs screen", "recent submissions and live task states", None, "show('jobs')"),
    ("Show Checkpoint screen", "coverage, failed tasks and retry", None, "show('checkpoint')"),
    ("Submit job", "submit the Submit form (asks first)", "submit", "submit"),
    ("Cancel selected task", "scancel JOB_TASK (asks first)", "jobs", "cancel_task"),
    ("Cancel whole job", "scancel JOB (asks first)", "jobs", "cancel_job"),
    ("Cycle state filter", "Jobs: all, not completed, PENDING, RUNNING, ...", "jobs", "cycle_filter(1)"),
    ("Show state map", "Jobs: one cell per task, coloured and lettered by state", "jobs", "toggle_map"),
    ("Show failure groups", "Jobs: failed tasks by state, exit code and last log line", "jobs",
     "show_view('failures-view')"),
    ("Show attempts", "Jobs: every attempt of the submission, its tasks and logs", "jobs",
     "show_view('attempts-view')"),
    ("Show task table", "Jobs: the newest attempt of every value", "jobs", "show_view('tasks-view')"),
    ("Toggle usage columns", "Jobs: memory used/requested, CPU efficiency, time used/limit", "jobs",
     "toggle_usage"),
    ("Retry failed tasks", "Jobs: preview values, windows and overrides, then retry (asks first)", "jobs",
     "retry"),
    ("Search tasks", "Jobs: find text in the task table (n / N: next / previous)", "jobs", "find"),
    ("Go to task value", "Jobs: put the cursor on the task with a value", "jobs", "go_to_value"),
    ("Choose a recent submission", "Jobs: focus the list of records (enter opens)", "jobs", "focus_records"),
    ("Open newer submission", "Jobs: the record above the open one", "jobs", "neighbour_record(-1)"),
    ("Open older submission", "Jobs: the record below the open one", "jobs", "neighbour_record(1)"),
    *((f"Filter jobs: {state}", "Jobs: show every task" if state == "all" else f"Jobs: show only {state} tasks",
       "jobs", f"filter('{state}')") for state in FILTERS),
    ("Switch log source", "Jobs: program log, q/ .err, q/ .out", "jobs", "cycle_log"),
    ("Zoom log", "Jobs: the selected task's log over the whole screen (z / escape: back)", "jobs", "zoom_log"),
    ("Reload recent submissions", "Jobs: search for q/*.submit.json again", "jobs", "reload"),
    ("Reload checkpoint", "Checkpoint: read it again", "checkpoint", "reread"),
    ("Resubmit missing shards", "Checkpoint: retry through the core (asks first)", "checkpoint",
     "resubmit"),
    ("Help", "keys and screens", None, "help"),
    ("Quit", "leave the console", None, "quit"),
)


class ConsoleCommands(Provider):
    """Runs each action on its screen, switching to that screen first."""

    def _callback(self, screen: str | None, action: str) -> Callable[[], object]:
        return partial(self.app.run_screen_action, screen, action)

    async def discover(self) -> Hits:
        for title, help_text, screen, action in ACTIONS:
            yield DiscoveryHit(title, self._callback(screen, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, screen, action in ACTIONS:
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), self._callback(screen, action),
                          text=title, help=help_text)
