"""hyperion-jobs watch: a live table on a terminal, one line per change elsewhere."""
from __future__ import annotations

import argparse
import sys
import threading
import time
from datetime import datetime
from typing import Sequence

from backends.cli.jobs.commands import record_dirs
from backends.cli.jobs.table import STATUS_HEADER, counts_text, fmt_exit, status_cells
from backends.errors import InputError
from backends.records.history import History, load_history
from backends.watch.finals import FinalsRecorder
from backends.watch.poller import Poller, PollUpdate
from backends.watch.rows import (
    LOCAL_JOB,
    TaskRow,
    exit_status,
    expected_tasks,
    history_rows,
    job_rows,
    local_rows,
    pending_tasks,
    state_counts,
)
from backends.watch.targets import Target, record_for_job, resolve, status


def cmd_watch(args: argparse.Namespace) -> int:
    if not args.cap >= 1 or args.cap == float("inf"):   # also refuses nan
        raise InputError("--cap", f"must be a number of seconds, at least 1, got {args.cap:g}")
    target = resolve(args.target)
    if target.record is not None and target.record.backend == "local":
        return _watch_local(target)
    return _watch_slurm(target, args)


def _watch_expected(target: Target, history: History | None) -> dict[str, tuple[int, ...] | None]:
    if history is not None:
        return expected_tasks([t for t in pending_tasks(history) if t.job_id != LOCAL_JOB])
    assert target.job_id is not None
    return {target.job_id: (target.task_id,) if target.task_id is not None else None}


def _rows_for(history: History | None, update: PollUpdate, record) -> list[TaskRow]:
    if history is not None:
        return history_rows(history, update.states)
    return job_rows(update.states, record)


def _watch_slurm(target: Target, args: argparse.Namespace) -> int:
    if target.record is None and not status(target, record_dirs(args)):
        # A record's jobs may be too new for sacct, but squeue knows them at once:
        # a bare id neither knows would be watched forever.
        raise InputError("JOB", f"Slurm knows no job {args.target}")
    history = load_history(target.record.path) if target.record is not None else None
    record = target.record or record_for_job(target.job_id, record_dirs(args))
    poller = Poller(_watch_expected(target, history), cap=args.cap)
    finals = FinalsRecorder(history.record_path, pending_tasks(history)) if history is not None else None
    view = LiveView(args.target) if sys.stdout.isatty() else PlainView(args.target)
    stop = threading.Event()

    def observe(update: PollUpdate) -> None:
        if finals is not None:
            finals.observe(update.changed)
        view.show(update, _rows_for(history, update, record))

    try:
        with view:
            final = poller.run(observe, stop)
    except KeyboardInterrupt:
        stop.set()
        return 130
    rows = _rows_for(history, final, record)
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
