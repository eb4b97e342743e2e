"""Failure triage: the tasks that did not succeed, grouped by what went wrong.

Two hundred failed tasks usually fail for two or three reasons. A group is one
Slurm state, exit code and signal, and the last line the program wrote to its
log (the line a user reads first) with its numbers set aside, so "bad input 7"
and "bad input 27" are one cause; the group shows the values as ranges and the
line and log of its first task. Live tasks are not failures yet and are left out.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from backends.logheader import RUNNING_PREFIX, STARTED_PREFIX, parse_ended
from backends.ranges import compress
from backends.states import end_counts, ends_text
from backends.watch.rows import LOCAL_JOB, TaskRow
from backends.watch.line_screen import shown_line
from backends.watch.tail import last_lines

# The last line that matters is rarely further up than this in a log's tail.
TAIL_LINES = 40
MAX_LINE = 200
MAX_KEPT = 4096       # characters of a line's last redraw looked at (a bar never ends)
_NUMBER = re.compile(r"\d+")


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
    """The last non-empty line of a task log that the program wrote (not our header or footer),
    as a terminal showed it: a coloured traceback's text, without its colour sequences."""
    if not path:
        return ""
    try:
        lines = last_lines(path, TAIL_LINES)
    except OSError:
        return ""
    for line in reversed(lines):
        # what a terminal showed: a progress bar's last redraw, not its first 200 characters
        text = shown_line(line, MAX_KEPT).strip()
        if text.startswith(STARTED_PREFIX):   # above it only the header: a command may span lines
            return ""
        if text and not text.startswith(RUNNING_PREFIX) and parse_ended(text) is None:
            # cut with a mark: a traceback's 250-character message read as if it ended there
            return text if len(text) <= MAX_LINE else _cut(text, MAX_LINE - 1) + "…"
    return ""


def _cut(text: str, size: int) -> str:
    """The first `size` characters, or fewer so as not to part a letter from its marks (`é` as e and
    U+0301 showed `e…`) nor leave an emoji's joiner or variation selector hanging before the mark."""
    import unicodedata

    while 0 < size < len(text) and (unicodedata.combining(text[size]) or text[size] in _JOINERS):
        size -= 1
    return text[:size].rstrip(_JOINERS)


_JOINERS = "\u200d\ufe0f"


def line_shape(line: str) -> str:
    """The line with every number as ``#``: what tasks failing for one reason have in common."""
    return _NUMBER.sub("#", line)


def is_failure(row: TaskRow) -> bool:
    """Ended without success (LOST included), or never run: what a retry would rerun."""
    if row.ok:
        return False
    return row.state is None or row.state.is_terminal


def _never_ran(row: TaskRow) -> bool:
    """A local task the run never reached (NOT_RUN): its planned log path holds no file to open."""
    return row.state is None and row.job_id == LOCAL_JOB


def failure_groups(rows: Sequence[TaskRow], read_line: Callable[[str | None], str] = last_program_line,
                   has_log: Callable[[str], bool] = os.path.isfile) -> list[FailureGroup]:
    """Groups of failed rows, largest first; tasks that never ran have no log line to read.

    A group's example is the first log that is there: a Slurm task cancelled before it
    started has a planned log path but no file, and `e.g. <path>` sent the user to it.
    """
    groups: dict[tuple, list[tuple[TaskRow, str]]] = {}
    for row in rows:
        if not is_failure(row):
            continue
        line = read_line(row.log) if row.state is not None else ""
        key = (row.state_label, row.exit_code, row.signal, line_shape(line))
        groups.setdefault(key, []).append((row, line))
    out = []
    for (state, code, sig, _), members in groups.items():
        # the first member with a log file: one stat per member until then, not for all of them
        example = next(((r, line) for r, line in members if r.log and not _never_ran(r) and has_log(r.log)), None)
        line, log = (example[1], example[0].log) if example else ("", None)
        out.append(FailureGroup(state, code, sig, line, tuple(r.value for r, _ in members), log))
    return sorted(out, key=lambda g: (-g.count, g.state, g.exit_code or 0, g.last_line))


def group_ends(groups: Sequence[FailureGroup]) -> dict[str, int]:
    """The groups' tasks by how they ended (`end_counts`): {"failed": 3, "timeout": 2, "cancelled": 1}."""
    return end_counts((group.state, group.signal) for group in groups for _ in group.values)


def failures_summary(groups: Sequence[FailureGroup], total: int) -> str:
    """``6 of 20 task(s) did not succeed (failed 3, timeout 2, cancelled 1), in 3 group(s)``: the
    head of `hyperion-jobs status --failures` and of the console's failure groups (one text)."""
    if not groups:
        return f"no failed tasks: every one of {total} task(s) completed or is still live"
    failed = sum(group.count for group in groups)
    return (f"{failed} of {total} task(s) did not succeed ({ends_text(group_ends(groups))}), "
            f"in {len(groups)} group(s)")
