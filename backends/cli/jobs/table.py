"""Plain-text tables of task rows, as status, list and watch print them."""
from __future__ import annotations

from typing import Sequence

from backends.watch.rows import TaskRow, state_counts


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
    return (row.slurm_id, "-" if row.value is None else str(row.value), row.state_text,
            fmt_exit(row), fmt_elapsed(row.elapsed), row.node or "-", row.log or row.slurm_out or "-")


def columns(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def counts_text(rows: Sequence[TaskRow]) -> str:
    return ", ".join(f"{state} {n}" for state, n in sorted(state_counts(rows).items()))
