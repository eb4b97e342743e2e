"""The list of recent submissions on the Jobs screen: q/*.submit.json records found under a few dirs.

Read again whenever something may have changed it (a submission, a resubmit,
a cancel, a run that ended, coming back to the screen), so task counts and new
records are never stale. Labels come from the records, i.e. from files: every
piece is shown through `printable`, as text.
"""
from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.widgets import OptionList
from textual.widgets.option_list import Option
from textual.worker import Worker, get_current_worker

from backends.records.record import find_records

from ..messages import RecordsListed
from ..record_cache import cached_record, file_key
from ..shown import shown

RECENT = 50
CURRENT_MARK = "▸ "
MAX_LABELS = 500
# A label needs the whole record parsed (half a second for 100k tasks): bigger files found on
# the way are listed by name and size until opened.
LABEL_MAX_BYTES = 4 * 1024 * 1024
# ((path, mtime, size, inode), name shown) -> label: the list is read again after every action, the
# records are not.
_labels: dict[tuple[tuple[str, int, int, int], str], Text] = {}


def describe(record, name: str) -> Text:
    """backend, job ids, task count, submission time and file name of one record."""
    jobs = ",".join(j.job_id for j in record.jobs) or record.backend
    when = record.submitted_at[5:16].replace("T", " ")
    attempt = f"att {record.attempt}  " if getattr(record, "attempt", 1) > 1 else ""   # as the table says
    # A retry's record holds only the values it reran; the table beside it shows every value.
    noun = ("rerun" if getattr(record, "kind", "submit") in ("retry", "resubmit")
            else "task" if len(record.tasks) == 1 else "tasks")
    return Text.assemble(shown(f"{record.backend:<5} ", "bold"), shown(f"{jobs:<10} ", "cyan"),
                         f"{len(record.tasks):>5} {noun:<5}  ", (attempt, "yellow"), shown(f"{when}  ", "dim"),
                         shown(name, "dim"))


def remember(record) -> None:
    """The Jobs screen has this record in hand: its label needs no second read."""
    key = file_key(record.path)
    if key is not None:
        name = Path(record.path).name
        _labels[key, name] = describe(record, name)


def distinct_names(paths: list[str]) -> dict[str, str]:
    """Each path's file name, with as many of its folders in front as tell it from the others.

    Records are named after their log pattern, so two experiments' `log/t.JOB.log` both
    have `t.JOB.submit.json`: by file name alone the list showed two identical lines.
    """
    parts = {path: Path(path).parts for path in paths}
    depth = dict.fromkeys(paths, 1)
    while True:
        groups: dict[tuple[str, ...], list[str]] = {}
        for path in paths:
            groups.setdefault(parts[path][-depth[path]:], []).append(path)
        clashing = [path for group in groups.values() if len(group) > 1 for path in group
                    if depth[path] < len(parts[path])]
        if not clashing:
            return {path: str(Path(*parts[path][-depth[path]:])) for path in paths}
        for path in clashing:
            depth[path] += 1


def record_label(path: Path, current: bool = False, name: str | None = None) -> Text:
    mark = Text(CURRENT_MARK if current else "  ", style="bold")
    name = name or path.name
    key = file_key(path)
    label = _labels.get((key, name)) if key is not None else None
    if label is None and key is not None and key[2] > LABEL_MAX_BYTES:
        return mark + Text.assemble(shown(name, "dim"),
                                    (f"  ({key[2] / 1e6:.0f} MB record: enter opens it)", "dim"))
    if label is None:
        try:
            label = describe(cached_record(path), name)
        except Exception:
            return mark + shown(name, "red") + Text("  (unreadable)", style="red")
        if key is not None:
            if len(_labels) >= MAX_LABELS:
                _labels.clear()
            _labels[key, name] = label
    return mark + label


class RecordList(OptionList):
    """Newest first; each option's id is the record's path; the open record is marked."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.current: str | None = None
        self.paths: list[str] = []

    @work(thread=True, exclusive=True, group="records", exit_on_error=False)
    def find_recent(self, dirs: list[Path], current: str | None = None) -> None:
        """Walking a big experiment tree takes a while: off the UI thread."""
        unlisted: list[tuple[str, str]] = []
        paths = [str(p) for p in find_records(dirs, unlisted=unlisted)[:RECENT]]
        current = str(Path(current).resolve()) if current else None
        if current and current not in paths and Path(current).is_file():
            paths.insert(0, current)
        names = distinct_names(paths)
        options = [Option(record_label(Path(p), p == current, names[p]), id=p) for p in paths]
        self.app.call_from_thread(self._show, paths, options, current, get_current_worker(), unlisted)

    def _show(self, paths: list[str], options: list[Option], current: str | None, worker: Worker,
              unlisted: list[tuple[str, str]] | None = None) -> None:
        # A newer listing (another record opened meanwhile) cancelled this one, on this UI thread;
        # the thread ran on regardless, and its list would mark the record opened before as open.
        if worker.is_cancelled:
            return
        self.paths, self.current = paths, current
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(options)
        if current in paths:
            self.highlighted = paths.index(current)
        elif paths:     # none highlighted, Enter would open nothing until an arrow key was pressed
            self.highlighted = 0 if highlighted is None else min(highlighted, len(paths) - 1)
        self.post_message(RecordsListed(paths, unlisted or ()))

    def neighbour(self, step: int) -> str | None:
        """The record `step` places after (before, if negative) the open one in the list."""
        if not self.paths:
            return None
        if self.current not in self.paths:
            return self.paths[0]
        position = self.paths.index(self.current) + step
        return self.paths[position] if 0 <= position < len(self.paths) else None
