"""hyperion-jobs: list, status, watch, logs and cancel Slurm (and local) submissions.

Targets are a job id (``1234``), one array task (``1234_5``, the physical
SLURM_ARRAY_TASK_ID), or a submit record (``exp/log/q/extract.JOB.submit.json``,
or a ``q/`` directory holding one record); for logs also ``RECORD:VALUE`` with the
logical array value.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Sequence

from backends.errors import InputError
from backends.jobs import (
    Target, TaskRow, current_user, exit_status, expected, job_rows, local_rows, record_for_job,
    record_rows, resolve, state_counts, status, task_logs,
)
from backends.poller import Poller, PollUpdate
from backends.record import find_records, load_record
from backends.slurm.accounting import QueryError, snapshot, user_jobs
from backends.slurm.cancel import CancelError, cancel
from backends.tail import Follower, complete_end, last_lines

PROG = "hyperion-jobs"


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as one ``field: problem`` line, exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(*_field_problem(message))


def _field_problem(message: str) -> tuple[str, str]:
    if message.startswith("argument "):
        field, _, problem = message[len("argument "):].partition(": ")
        return field, problem
    if message.startswith("the following arguments are required: "):
        return message.split(": ", 1)[1], "required"
    if message.startswith("unrecognized arguments: "):
        return message.split(": ", 1)[1], "unrecognized argument"
    return "arguments", message


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    p = sub.add_parser("list", help="submit records under DIRs and your live Slurm jobs")
    p.add_argument("dirs", nargs="*", metavar="DIR", default=["."])
    p.add_argument("--limit", type=int, default=20, help="newest records to show (default 20)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("status", help="per-task state, exit code, elapsed, node and log")
    p.add_argument("target", metavar="JOB|RECORD")
    p.add_argument("--json", action="store_true")
    p.add_argument("--dir", action="append", type=Path, help="where to look for records of a job id")

    p = sub.add_parser("watch", help="live table until every task has ended")
    p.add_argument("target", metavar="JOB|RECORD")
    p.add_argument("--cap", type=float, default=30.0, help="longest poll interval, seconds (default 30)")
    p.add_argument("--dir", action="append", type=Path)

    p = sub.add_parser("logs", help="last lines of a task's log; -f follows it")
    p.add_argument("task", metavar="TASK", help="JOB_TASK, JOB, RECORD or RECORD:VALUE")
    p.add_argument("-n", "--lines", type=int, default=20)
    p.add_argument("-f", "--follow", action="store_true")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--out", action="store_true", help="Slurm's q/slurm-*.out instead of the program log")
    which.add_argument("--err", action="store_true", help="Slurm's q/slurm-*.err")
    p.add_argument("--dir", action="append", type=Path)

    p = sub.add_parser("cancel", help="scancel jobs or tasks (asks first unless --yes)")
    p.add_argument("targets", nargs="+", metavar="JOB[_TASK]|RECORD")
    p.add_argument("--yes", "-y", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        return COMMANDS[args.command](args)
    except InputError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    except (QueryError, CancelError) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


# ----------------------------------------------------------------- formatting

def fmt_elapsed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    clock = f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def fmt_exit(row: TaskRow) -> str:
    if row.exit_code is None:
        return "-"
    return f"{row.exit_code}" + (f" sig {row.signal}" if row.signal else "")


STATUS_HEADER = ("TASK", "VALUE", "STATE", "EXIT", "ELAPSED", "NODE", "LOG")


def status_cells(row: TaskRow) -> tuple[str, ...]:
    return (row.slurm_id, "-" if row.value is None else str(row.value), row.state_label,
            fmt_exit(row), fmt_elapsed(row.elapsed), row.node or "-", row.log or row.slurm_out or "-")


def columns(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def counts_text(rows: Sequence[TaskRow]) -> str:
    return ", ".join(f"{state} {n}" for state, n in sorted(state_counts(rows).items()))


# ----------------------------------------------------------------- commands

def _dirs(args: argparse.Namespace) -> list[Path]:
    return args.dir or [Path(".")]


def cmd_status(args: argparse.Namespace) -> int:
    target = resolve(args.target)
    rows = status(target, _dirs(args))
    if not rows:
        raise InputError("JOB", f"Slurm knows no job {args.target}")
    if args.json:
        print(json.dumps({"target": args.target, "exit_status": exit_status(rows),
                          "counts": state_counts(rows), "tasks": [r.to_json() for r in rows]}, indent=2))
    else:
        print(columns([STATUS_HEADER, *map(status_cells, rows)]))
        print(f"{len(rows)} tasks: {counts_text(rows)}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if args.limit <= 0:
        raise InputError("--limit", "must be positive")
    for d in args.dirs:
        if not Path(d).exists():
            raise InputError("DIR", f"{d} does not exist")
    records = []
    for path in find_records([Path(d) for d in args.dirs])[: args.limit]:
        try:
            records.append(load_record(path))
        except InputError as err:
            print(f"{PROG}: skipping {path}: {err.problem}", file=sys.stderr)
    states, problem = {}, None
    slurm_jobs = sorted({j.job_id for r in records if r.backend == "slurm" for j in r.jobs})
    if slurm_jobs:
        try:
            states = snapshot(slurm_jobs)
        except QueryError as err:
            problem = str(err)
    try:
        live = user_jobs(current_user())
    except QueryError as err:
        live, problem = [], problem or str(err)
    summaries = [_record_summary(r, states, problem is None) for r in records]
    if args.json:
        print(json.dumps({"records": summaries, "live": [
            {"job_id": j.job_id, "state": j.state.value, "elapsed": j.elapsed, "node": j.node,
             "name": j.name} for j in live], "error": problem}, indent=2))
        return 0
    if summaries:
        print(columns([("RECORD", "BACKEND", "JOBS", "TASKS", "SUBMITTED", "STATES")] + [
            (s["record"], s["backend"], ",".join(s["jobs"]), str(s["tasks"]), s["submitted_at"],
             s["states"]) for s in summaries]))
    else:
        print(f"no submit records under {' '.join(args.dirs)}")
    print()
    if live:
        print(columns([("JOBID", "STATE", "ELAPSED", "NODE", "NAME")] + [
            (j.job_id, j.state.value, fmt_elapsed(j.elapsed), j.node or "-", j.name) for j in live]))
    else:
        print(f"no live Slurm jobs for {current_user()}")
    if problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
    return 0


def _record_summary(record, states, slurm_ok: bool) -> dict:
    if record.backend == "local":
        rows = local_rows(record)
    else:
        rows = record_rows(record, states)
    text = counts_text(rows) if record.backend == "local" or slurm_ok else "?"
    return {"record": record.path, "backend": record.backend,
            "jobs": [j.job_id for j in record.jobs], "tasks": len(record.tasks),
            "submitted_at": record.submitted_at, "states": text, "counts": state_counts(rows)}


def cmd_cancel(args: argparse.Namespace) -> int:
    named: list[tuple[str, list[str]]] = []   # (what the user typed, its scancel ids)
    for text in args.targets:
        target = resolve(text, "JOB")
        if target.record is not None:
            if target.record.backend != "slurm":
                raise InputError("JOB", f"{text} is a local run; nothing to scancel")
            named.append((text, [j.job_id for j in target.record.jobs]))
        else:
            named.append((text, [text]))
    ids = _live_ids(named)
    if not args.yes:
        print(f"Cancel {' '.join(ids)}? [y/N] ", end="", flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer not in {"y", "yes"}:
            print("not cancelled")
            return 1
    cancel(ids)
    print(f"cancelled {' '.join(ids)}")
    return 0


def _live_ids(named: Sequence[tuple[str, list[str]]]) -> list[str]:
    """The scancel ids that still have a task to cancel.

    scancel exits 0 for a job that already ended, so without this check
    ``cancel`` would report "cancelled" for a no-op. A target Slurm does not
    know, or whose every task has ended, is refused before anything is cancelled.
    """
    states = snapshot(sorted({i.partition("_")[0] for _, ids in named for i in ids}))
    live: list[str] = []
    for text, ids in named:
        known = [s for i in ids for s in _states_of(i, states)]
        if not known:
            raise InputError("JOB", f"Slurm knows no job {text}; nothing to cancel")
        kept = [i for i in ids if any(not s.state.is_terminal for s in _states_of(i, states))]
        if not kept:
            ended = ", ".join(sorted({s.state.value for s in known}))
            raise InputError("JOB", f"{text} already ended ({ended}); nothing to cancel")
        live.extend(kept)
    return live


def _states_of(slurm_id: str, states) -> list:
    job, _, task = slurm_id.partition("_")
    return [s for (j, t), s in states.items() if j == job and (not task or t == int(task))]


def cmd_logs(args: argparse.Namespace) -> int:
    if args.lines < 0:
        raise InputError("-n", "must be zero or more")
    logs = task_logs(args.task, _dirs(args))
    path = logs.slurm_err if args.err else logs.slurm_out if args.out else (logs.log or logs.slurm_out)
    if path is None:
        which = "--err" if args.err else "--out" if args.out else "program"
        raise InputError("TASK", f"no {which} log is known for {args.task}")
    if not args.follow:
        if not Path(path).exists():
            raise InputError("TASK", f"{args.task} has no log yet: {path} does not exist "
                             "(not started, or never run; -f waits for it)")
        for line in last_lines(path, args.lines):
            print(line)
        return 0
    return _follow(path, args.lines)


def _follow(path: str, n: int) -> int:
    end = complete_end(path)
    for line in last_lines(path, n, end=end):
        print(line)
    if not Path(path).exists():
        print(f"{PROG}: waiting for {path}", file=sys.stderr)
    sys.stdout.flush()
    follower = Follower(path, end)
    while True:
        lines = follower.read_new()
        if lines:
            print("\n".join(lines), flush=True)
        else:
            time.sleep(0.25)


def cmd_watch(args: argparse.Namespace) -> int:
    if not args.cap >= 1 or args.cap == float("inf"):   # also refuses nan
        raise InputError("--cap", f"must be a number of seconds, at least 1, got {args.cap:g}")
    target = resolve(args.target)
    if target.record is not None and target.record.backend == "local":
        return _watch_local(target)
    return _watch_slurm(target, args)


def _watch_expected(target: Target) -> dict[str, tuple[int, ...] | None]:
    if target.record is not None:
        return expected(target.record)
    assert target.job_id is not None
    return {target.job_id: (target.task_id,) if target.task_id is not None else None}


def _rows_for(target: Target, update: PollUpdate, record) -> list[TaskRow]:
    if target.record is not None:
        return record_rows(target.record, update.states)
    return job_rows(update.states, record)


def _watch_slurm(target: Target, args: argparse.Namespace) -> int:
    if target.record is None and not status(target, _dirs(args)):
        # A record's jobs may be too new for sacct, but squeue knows them at once:
        # a bare id neither knows would be watched forever.
        raise InputError("JOB", f"Slurm knows no job {args.target}")
    record = target.record or record_for_job(target.job_id, _dirs(args))
    poller = Poller(_watch_expected(target), cap=args.cap)
    view = LiveView(args.target) if sys.stdout.isatty() else PlainView(args.target)
    stop = threading.Event()
    try:
        with view:
            final = poller.run(lambda u: view.show(u, _rows_for(target, u, record)), stop)
    except KeyboardInterrupt:
        stop.set()
        return 130
    rows = _rows_for(target, final, record)
    print(f"{len(rows)} tasks: {counts_text(rows)}")
    for row in rows:
        if not row.ok:
            print(f"  {row.slurm_id} {row.state_label} exit {fmt_exit(row)} log {row.log or row.slurm_out or '-'}")
    return exit_status(rows)


def _watch_local(target: Target) -> int:
    assert target.record is not None
    shown: dict = {}
    while True:
        rows = local_rows(target.record)
        for row in rows:
            if shown.get(row.value) != row.state_label:
                shown[row.value] = row.state_label
                print(f"{_now()} {row.value if row.value is not None else 'task'} {row.state_label}", flush=True)
        running = any(r.state is not None and not r.state.is_terminal for r in rows)
        failed = any(r.state is not None and r.state.is_terminal and not r.ok for r in rows)
        if not running and (failed or all(r.state is not None for r in rows)):
            print(f"{len(rows)} tasks: {counts_text(rows)}")
            return exit_status(rows)
        time.sleep(1.0)


def _now() -> str:
    return datetime.now().strftime("%H:%M:%S")


class PlainView:
    """Non-tty watch output: one line per change, and errors as they happen."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> "PlainView":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def show(self, update: PollUpdate, rows: Sequence[TaskRow]) -> None:
        for task in update.changed:
            code = f" exit {task.exit_code}" if task.exit_code is not None else ""
            print(f"{_now()} {task.slurm_id} {task.state.value}{code}", flush=True)
        if update.error:
            print(f"{_now()} query failed, retrying in {update.interval:.0f} s: {update.error}", flush=True)


class LiveView:
    """A rich live table: per-state counts, a progress bar, the unfinished tasks."""

    def __init__(self, name: str) -> None:
        from rich.console import Console
        from rich.live import Live

        self.name = name
        self.console = Console()
        self.live = Live(console=self.console, refresh_per_second=4, transient=False)

    def __enter__(self) -> "LiveView":
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def show(self, update: PollUpdate, rows: Sequence[TaskRow]) -> None:
        self.live.update(render_watch(self.name, update, rows))


def render_watch(name: str, update: PollUpdate, rows: Sequence[TaskRow], max_rows: int = 20):
    """The watch screen as a rich renderable (pure: easy to test)."""
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    done = sum(1 for r in rows if r.state is not None and r.state.is_terminal)
    counts = Table.grid(padding=(0, 2))
    counts.add_row(*(f"{state} [bold]{n}[/]" for state, n in sorted(state_counts(rows).items())))
    tasks = Table(*STATUS_HEADER[:-1], "LOG", expand=False)
    unfinished = [r for r in rows if r.state is None or not r.state.is_terminal or not r.ok]
    for row in unfinished[:max_rows]:
        tasks.add_row(*status_cells(row))
    header = Table.grid(padding=(0, 1))
    header.add_row(Text(name, style="bold"), ProgressBar(total=max(1, len(rows)), completed=done, width=40),
                   Text(f"{done}/{len(rows)} tasks ended"))
    parts = [header, counts, tasks]
    if len(unfinished) > max_rows:
        parts.append(Text(f"... and {len(unfinished) - max_rows} more"))
    if update.error:
        parts.append(Text(f"query failed, retrying in {update.interval:.0f} s: {update.error}", style="red"))
    return Group(*parts)


COMMANDS = {"list": cmd_list, "status": cmd_status, "watch": cmd_watch, "logs": cmd_logs,
            "cancel": cmd_cancel}

if __name__ == "__main__":
    sys.exit(main())
