"""hyperion-jobs usage: what a submission's tasks used, summed up for right-sizing --mem and --time."""
from __future__ import annotations

import argparse

from backends import jsontext
from backends.cli.jobs.clusters import asked_cluster, check_history_cluster
from backends.cli.jobs.commands import record_dirs, told_unlisted, say_shown_as_recorded
from backends.cluster import for_cluster
from backends.printable import printable
from backends.watch.rows import task_key
from backends.watch.slurm.accounting import QueryError, run_command
from backends.watch.targets import (
    history_status,
    job_status,
    located,
    recorded_job,
    resolve,
)
from backends.watch.usage_summary import format_summary, summarize, summarize_rows, usage_heading


def cmd_usage(args: argparse.Namespace) -> int:
    asked = asked_cluster(args)
    with told_unlisted() as unlisted:
        target, history = located(resolve(args.target), record_dirs(args), for_cluster(run_command, asked),
                                  unlisted=unlisted)
    check_history_cluster(history, asked, [str(target.job_id)] if target.record is None else [])
    problems: list[str] = []
    if target.record is None:
        # a job id is that job's tasks, as `status JOB` shows them: `usage 6958` of attempt 1 summed up
        # the record's newest runs (a retry's), said "over 90% of --mem: none" of a job whose tasks
        # ran out of memory, and counted 40 tasks for a retry job of 4
        recorded, may_run_again = recorded_job(history, target)
        rows = recorded or []
        if recorded is None or may_run_again:
            try:
                rows = job_status(target, history)
            except QueryError as err:
                if recorded is None:
                    raise
                problems.append(str(err))       # only a requeue was asked about: the recorded ends stand
        name = f"job {args.target} of {history.record_path}"
    else:
        rows = history_status(history, problems=problems)
        name = history.record_path
    say_shown_as_recorded(problems)
    keys = [task_key(row.job_id, row.task_id, row.value) for row in rows]   # as the console keys them
    summary = summarize_rows(dict(zip(keys, rows))) or summarize({})
    if args.json:
        print(jsontext.dumps({"record": history.record_path, "target": args.target, "summary": summary.to_json(),
                              "tasks": [row.to_json() for row in rows]}, indent=2))
        return 0
    print(printable(f"{name}: {usage_heading(summary, rows, keys)}"))
    for line in format_summary(summary):
        print(printable(line))
    return 0
