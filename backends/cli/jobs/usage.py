"""hyperion-jobs usage: what a submission's tasks used, summed up for right-sizing --mem and --time."""
from __future__ import annotations

import argparse
from typing import Sequence

from backends import jsontext
from backends.cli.jobs.commands import record_dirs, say_shown_as_recorded
from backends.printable import printable
from backends.watch.rows import LOCAL_JOB, TaskRow
from backends.watch.targets import history_of, history_status, resolve
from backends.watch.usage_summary import format_summary, summarize, summarize_rows


def cmd_usage(args: argparse.Namespace) -> int:
    history = history_of(resolve(args.target), record_dirs(args))
    problems: list[str] = []
    rows = history_status(history, problems=problems)
    say_shown_as_recorded(problems)
    used = {(row.job_id, row.task_id): row.usage for row in rows if row.usage is not None}
    summary = summarize_rows({(row.job_id, row.task_id): row for row in rows}) or summarize({})
    if args.json:
        print(jsontext.dumps({"record": history.record_path, "summary": summary.to_json(),
                              "tasks": [row.to_json() for row in rows]}, indent=2))
        return 0
    print(printable(f"{history.record_path}: {usage_heading(rows, summary.tasks, len(used))}"))
    for line in format_summary(summary):
        print(printable(line))
    return 0


def usage_heading(rows: Sequence[TaskRow], summarized: int, measured: int) -> str:
    """``usage of 4 of 10 task(s) (4 ended; ...)``: the count the summary's ``(0 of 4 tasks)`` is of.

    It said "usage of 0 of 200" (the tasks accounting measured) above "(0 of 7 tasks)" (the tasks
    with any figure, a local task's elapsed time too): two totals for one summary."""
    ended = sum(1 for row in rows if row.state is not None and row.state.is_terminal)
    source = ("run locally: elapsed time only" if all(row.job_id == LOCAL_JOB for row in rows)
              else f"accounting measured {measured}")
    return f"usage of {summarized} of {len(rows)} task(s) ({ended} ended; {source})"
