"""hyperion-jobs retry: rerun the failed tasks of a submission as its next attempt."""
from __future__ import annotations

import argparse
import sys

from backends.attempt import unchanged_since
from backends.cli.jobs.commands import record_dirs, say_history_problems, say_shown_as_recorded, told_unlisted
from backends.cli.jobs.parser import PROG
from backends.errors import InputError
from backends.launch import run_plan, working_dir
from backends.printable import printable
from backends.records.trust import check_trusted
from backends.retry import RetryPlan, RetryRequest, describe_retry, parse_states, plan_retry, size_option
from backends.submit.array import parse_values
from backends.submit.plan import describe_plan
from backends.submit.resources import check_count, check_memory
from backends.watch.targets import history_of, history_status, resolve


def _values(text: str) -> tuple[int, ...]:
    """``1-5,9`` or ``1:5,9`` (the --array spelling) -> values."""
    if not text.strip():
        raise InputError("--values", "empty; give values such as 1-5,9")
    return parse_values(text, field="--values", separators="-:")


def request_of(args: argparse.Namespace) -> RetryRequest:
    """The command line's choices and overrides, each checked as hyperion-submit checks it."""
    return RetryRequest(
        states=parse_states(args.state) if args.state is not None else None,
        values=_values(args.values) if args.values is not None else None,
        num_threads=None if args.num_threads is None else check_count("--num-threads", args.num_threads, minimum=1),
        mem=size_option("--mem", args.mem),
        mem_per_cpu=check_memory("--mem-per-cpu", args.mem_per_cpu),
        time=size_option("--time", args.time),
        max_jobs_run=None if args.max_jobs_run is None else check_count("--max-jobs-run", args.max_jobs_run,
                                                                         minimum=1))


def _confirmed(retry: RetryPlan) -> bool:
    print(describe_retry(retry), file=sys.stderr)
    print(f"Retry {len(retry.values)} task(s)? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in {"y", "yes"}


def cmd_retry(args: argparse.Namespace) -> int:
    request = request_of(args)
    with told_unlisted() as unlisted:
        history = history_of(resolve(args.target), record_dirs(args), unlisted=unlisted)
    check_trusted(history.record_path, args.trust_record)
    say_history_problems(history)
    problems: list[str] = []
    retry = plan_retry(history, history_status(history, problems=problems), request)
    say_shown_as_recorded(problems)
    if retry.plan is None:
        what = "in the states asked for" if request.states or request.values else "that did not complete"
        print(f"nothing to retry: no task of {printable(history.record_path)} {what} "
              f"({len(history.latest_tasks())} task(s))")
        return 0
    if args.dry_run:
        print(describe_retry(retry))
        sys.stdout.write(printable(describe_plan(retry.plan), layout=True))
        return 0
    if not args.yes and not _confirmed(retry):
        print("not retried", file=sys.stderr)
        return 1
    line = (f"{PROG}: retrying {len(retry.values)} task(s) of {printable(history.record_path)} "
            f"(values {retry.value_ranges})")
    # the plan is from before the prompt: another terminal's retry may have rerun its values since
    again = "the same retry run again plans from what it did"     # with the user's own --values, --mem...
    with working_dir(history.current.cwd):
        return run_plan(retry.plan, "retry", lambda: print(line, file=sys.stderr, flush=True),
                        live_check=unchanged_since(history, again))
