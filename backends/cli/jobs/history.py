"""hyperion-jobs history: the attempts of a submission, oldest first."""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence

from backends import jsontext
from backends.cli.jobs.clusters import asked_cluster, check_history_cluster
from backends.cli.jobs.commands import NOT_SUBMITTED, record_dirs, say_shown_as_recorded, told_unlisted
from backends.cli.jobs.table import columns
from backends.cluster import for_cluster
from backends.printable import printable
from backends.records.history import History
from backends.states import TaskState
from backends.watch.rows import Key, TaskRow, ended_counts, history_rows, state_counts, task_row
from backends.watch.slurm.accounting import run_command
from backends.watch.targets import history_look, located, resolve


def attempt_counts(history: History, latest_rows: list[TaskRow],
                   count: Callable[[Sequence[TaskRow]], dict[str, int]] = ended_counts,
                   states: Mapping[Key, TaskState] | None = None) -> dict[int, dict[str, int]]:
    """Per attempt, how its tasks ended (the newest run of a value: as `status` shows it); by
    `ended_label` (``FAILED (SIGHUP)``) for people, by state with `state_counts` for `--json`.
    `states`: what the look that made `latest_rows` was told (`history_look`), for a task a later
    attempt ran again with no end in the ledger (its end is written there on the way)."""
    current = {(row.attempt, row.value): row for row in latest_rows}
    return {number: count([current.get((number, task.value)) or task_row(history, task, states or {})
                                  for task in history.tasks_of(number)])
            for number in history.numbers}


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{state} {n}" for state, n in sorted(counts.items())) or "-"


def option_text(key: str, value: object) -> str:
    """An option as a user would type it: the command as a shell line, --env as NAME=VALUE pairs."""
    if isinstance(value, str):
        return value
    if key == "command" and isinstance(value, list):
        from backends.shellwords import shell_join

        return shell_join(str(part) for part in value)
    if key == "env" and isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        return ",".join(f"{name}={val}" for name, val in value) or "(none)"
    return json.dumps(value)


def changed_text(overrides: Mapping[str, object]) -> str:
    """``mem=300M env=A=1,B=2``: what an attempt changed, in `history`'s words and the console's alike
    (the console once printed --env and the command as raw JSON lists). Empty when nothing changed."""
    return " ".join(f"{k}={option_text(k, v)}" for k, v in overrides.items())


def _changed(overrides: dict) -> str:
    return changed_text(overrides) or "-"


def changes(history: History, number: int) -> dict[str, object]:
    """What attempt `number` changed against the attempt before it: the backend (its record says;
    the ledger's overrides hold options only, so a local run retried on Slurm read as unchanged),
    then the options."""
    entry = history.entry(number)
    earlier = [n for n in history.numbers if n < number]
    moved = bool(earlier) and history.records[earlier[-1]].backend != history.records[number].backend
    return ({"backend": history.records[number].backend} if moved else {}) | (dict(entry.overrides) if entry else {})


def cmd_history(args: argparse.Namespace) -> int:
    asked = asked_cluster(args)
    with told_unlisted() as unlisted:
        target, history = located(resolve(args.target), record_dirs(args), for_cluster(run_command, asked),
                                  unlisted=unlisted)
    check_history_cluster(history, asked, [str(target.job_id)] if target.record is None else [])
    problems: list[str] = []
    states, usage = history_look(history, problems=problems)
    rows = history_rows(history, states, usage)
    counts = attempt_counts(history, rows, states=states)
    # --json keeps state names as keys, as `status --json` does: a script summing "FAILED" still
    # counts a task a signal stopped
    by_state = attempt_counts(history, rows, state_counts, states)
    say_shown_as_recorded(problems)
    left_out, refused = history.unsubmitted()
    attempts = []
    for number in history.numbers:
        record = history.records[number]
        entry = history.entry(number)
        # the attempt that left values out, while no attempt since submitted them: `status`'s line names it
        unsubmitted = list(left_out) if refused is not None and refused.attempt == number else []
        if unsubmitted:
            counts[number] = {**counts[number], NOT_SUBMITTED: len(unsubmitted)}
        attempts.append({
            "attempt": number, "kind": entry.kind if entry else record.kind,
            "time": entry.time if entry else record.submitted_at,
            "job_ids": [j.job_id for j in record.jobs], "tasks": len(record.tasks),
            "values": entry.values if entry else "", "counts": by_state[number],
            "overrides": changes(history, number), **({"unsubmitted": unsubmitted} if unsubmitted else {})})
    if args.json:
        print(jsontext.dumps({"record": history.record_path, "attempts": attempts,
                              "problems": list(history.problems)}, indent=2))
        return 0
    print(printable(columns([("ATTEMPT", "KIND", "SUBMITTED", "JOBS", "TASKS", "STATES", "CHANGED")] + [
        (str(a["attempt"]), a["kind"], a["time"], ",".join(a["job_ids"]), str(a["tasks"]),
         _counts_text(counts[a["attempt"]]), _changed(a["overrides"])) for a in attempts]), layout=True))
    for problem in history.problems:
        print(printable(f"warning: {problem}"))
    return 0
