"""Plain-text tables of task rows, as status, list and watch print them."""
from __future__ import annotations

from collections.abc import Sequence

from backends.printable import printable
from backends.states import JobState, exit_note, signal_name, signal_text
from backends.watch.rows import NO_LOG, TaskRow, log_said, never_started, no_log, state_counts, time_used

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from backends.watch.triage import FailureGroup


def fmt_elapsed(seconds: float | None) -> str:
    """``H:MM:SS`` of whole seconds gone by; ``<0:00:01`` for a local task's 0.04 s, which read
    ``0:00:00`` here while `usage` said ``<00:00:01``."""
    if seconds is None:
        return "-"
    if 0 < seconds < 1:
        return "<0:00:01"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    clock = f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def elapsed_cell(row: TaskRow) -> str:
    """``-`` for a task that never started (`never_started`), else the time it ran."""
    return "-" if never_started(row) else fmt_elapsed(row.elapsed)


def fmt_exit(row: TaskRow) -> str:
    """``3``, ``0 sig 9`` (Slurm's 0:9), ``sig 1 (SIGHUP)``: a task stopped by a signal told no code."""
    if row.exit_code is None:
        if not row.signal:
            return "-"
        name = signal_name(row.signal)
        return f"sig {row.signal} ({name})" if name.startswith("SIG") else f"sig {row.signal}"
    return f"{row.exit_code}" + (f" sig {row.signal}" if row.signal else "")


STATUS_HEADER = ("TASK", "VALUE", "STATE", "EXIT", "ELAPSED", "NODE", "LOG")


def status_cells(row: TaskRow) -> tuple[str, ...]:
    """A row's cells under STATUS_HEADER; its LOG the path, or `no log (never started)` for a task
    cancelled while pending (watch's live table named a log never written, where status and watch's
    closing lines say so; `status` marks a missing log too, `log_cell`)."""
    return (row.slurm_id, "-" if row.value is None else str(row.value), row.state_text,
            fmt_exit(row), elapsed_cell(row), row.node or "-",
            NO_LOG if no_log(row) else row.log or row.slurm_out or "-")


def log_cell(row: TaskRow) -> str:
    """The LOG of `status`: of a task that ended, ``PATH (missing)`` where no file is (`said_path`,
    as hyperion-submit's last lines say it): a task cancelled while pending never wrote its log
    nor Slurm's .out, and status named them as if there to read. Only a task that ended without
    completing is looked at (a stat per row of a 100,000-task array on a cold NFS cache was the
    cost of looking at every one); one that may still write its log is not."""
    path = row.log or row.slurm_out
    ended = row.state is not None and row.state.is_terminal or row.state_label == "NOT_RUN"
    if path is None or not ended or row.state is JobState.COMPLETED:
        return path or "-"
    return log_said(row)     # `no log (never started)` for a task cancelled while pending


USAGE_HEADER = ("MEM USED/REQ", "CPU", "TIME USED/LIMIT")


def usage_cells(row: TaskRow) -> tuple[str, str, str]:
    """``314M/1.00G``, ``87%``, ``00:01:10/00:10:00``: what the task used against what it had
    (``-/00:10:00`` for a task that never started: it used no time, none was measured)."""
    used = row.usage
    if used is None:
        return ("-", "-", "-")
    # Here, not at the top: a local record has no usage, and the summary module builds five dataclasses.
    from backends.watch.usage_summary import cpu_efficiency, human_bytes, human_seconds

    efficiency = cpu_efficiency([used])
    return (f"{human_bytes(used.max_rss_bytes)}/{human_bytes(used.req_mem_bytes)}",
            "-" if efficiency is None else f"{efficiency:.0%}",
            f"{human_seconds(time_used(row))}/{human_seconds(used.time_limit_seconds)}")


def status_table(rows: Sequence[TaskRow]) -> list[tuple[str, ...]]:
    """Header and cells of `status`: an ATTEMPT column once the submission has been retried,
    usage columns once accounting told what any task used."""
    attempts = any(row.attempt != 1 for row in rows)
    usage = any(row.usage is not None for row in rows)
    header = STATUS_HEADER[:2] + (("ATTEMPT",) if attempts else ()) + STATUS_HEADER[2:-1] \
        + (USAGE_HEADER if usage else ()) + STATUS_HEADER[-1:]
    table = [header]
    for row in rows:
        cells = status_cells(row)[:-1] + (log_cell(row),)
        table.append((*cells[:2], *((str(row.attempt),) if attempts else ()), *cells[2:-1],
                      *(usage_cells(row) if usage else ()), cells[-1]))
    return table


def failure_line(group: FailureGroup) -> str:
    """``  8 FAILED exit 1  values 7,27,31-33  last line: ValueError: ...  e.g. log/x.7.log``."""
    how = group.state + (f" exit {group.exit_code}{exit_note(group.exit_code, group.signal)}"
                         if group.exit_code is not None else "")
    how += f" {signal_text(group.signal)}" if group.signal else ""
    line = f"  {group.count:>5} {how}  values {group.value_ranges}"
    line += f"  last line: {group.last_line}" if group.last_line else ""
    return line + (f"  e.g. {group.example_log}" if group.example_log else "")


def columns(rows: Sequence[Sequence[str]]) -> str:
    """Aligned columns; every cell escaped (a path, job name or record may hold ESC sequences)."""
    rows = [[printable(str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def counts_text(rows: Sequence[TaskRow]) -> str:
    return ", ".join(f"{state} {n}" for state, n in sorted(state_counts(rows).items()))


def tasks_text(rows: Sequence[TaskRow]) -> str:
    """``3 tasks: COMPLETED 2, FAILED 1``, and ``1 task: COMPLETED 1`` for a single job."""
    return f"{len(rows)} task{'' if len(rows) == 1 else 's'}: {counts_text(rows)}"
