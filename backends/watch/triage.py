"""Failure triage: the tasks that did not succeed, grouped by what went wrong.

Two hundred failed tasks usually fail for two or three reasons. A group is one
Slurm state, exit code and signal, and the last line the program wrote to its
log (the line a user reads first), with the values as ranges and one log to
open. Live tasks are not failures yet and are left out.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from backends.logheader import RUNNING_PREFIX, STARTED_PREFIX, parse_ended
from backends.ranges import compress
from backends.watch.rows import TaskRow
from backends.watch.tail import last_lines

# The last line that matters is rarely further up than this in a log's tail.
TAIL_LINES = 40
MAX_LINE = 200


@dataclass(frozen=True)
class FailureGroup:
    state: str
    exit_code: int | None
    signal: int | None
    last_line: str               # "" when the log is missing or holds only our header/footer
    values: tuple[int | None, ...]
    example_log: str | None

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def value_ranges(self) -> str:
        numbers = [v for v in self.values if v is not None]
        return compress(numbers) if numbers else "-"

    def to_json(self) -> dict:
        return {"state": self.state, "exit_code": self.exit_code, "signal": self.signal,
                "last_line": self.last_line, "count": self.count, "values": self.value_ranges,
                "example_log": self.example_log}


def last_program_line(path: str | None) -> str:
    """The last non-empty line of a task log that the program wrote (not our header or footer)."""
    if not path:
        return ""
    try:
        lines = last_lines(path, TAIL_LINES)
    except OSError:
        return ""
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith((RUNNING_PREFIX, STARTED_PREFIX)) and parse_ended(text) is None:
            return text[:MAX_LINE]
    return ""


def is_failure(row: TaskRow) -> bool:
    """Ended without success (LOST included), or never run: what a retry would rerun."""
    if row.ok:
        return False
    return row.state is None or row.state.is_terminal


def failure_groups(rows: Sequence[TaskRow],
                   read_line: Callable[[str | None], str] = last_program_line) -> list[FailureGroup]:
    """Groups of failed rows, largest first; tasks that never ran have no log line to read."""
    groups: dict[tuple, list[TaskRow]] = {}
    for row in rows:
        if not is_failure(row):
            continue
        line = read_line(row.log) if row.state is not None else ""
        groups.setdefault((row.state_label, row.exit_code, row.signal, line), []).append(row)
    out = [FailureGroup(state, code, sig, line, tuple(r.value for r in members),
                        next((r.log for r in members if r.log), None))
           for (state, code, sig, line), members in groups.items()]
    return sorted(out, key=lambda g: (-g.count, g.state, g.exit_code or 0, g.last_line))
