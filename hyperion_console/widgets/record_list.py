"""The list of recent submissions on the Jobs screen: q/*.submit.json records found under a few dirs.

Read again whenever something may have changed it (a submission, a resubmit,
a cancel, a run that ended, coming back to the screen), and looked at in the
background every few seconds while the screen shows (`look_again`): a record
written by `hyperion-submit` in another terminal is listed without a key, and
the list is redrawn only when what it lists changed, its cursor kept on the
record it was on. Labels come from the records, i.e. from files: every piece is
shown through `printable`, as text.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.widgets import OptionList
from textual.widgets.option_list import Option
from textual.worker import Worker, get_current_worker

from backends.records.attempts import archived_record_path, ledger_path
from backends.records.history import History, archived_numbers, load_history, totals
from backends.records.paths import RECORD_SUFFIX
from backends.records.record import find_records, records_within

from ..messages import RecordsListed
from ..pacing import LookPacer
from ..record_cache import cached_record, file_key
from ..shown import shown
from .list_keys import LIST_KEYS

RECENT = 50
# A look no user asked for walks the search folders this long at most; paced by LookPacer: after a
# few cut short in a row the list is read on actions only, never by a pile of background walks,
# until an action's listing ends.
LOOK_SECONDS = 2.0
CURRENT_MARK = "▸ "
MAX_LABELS = 500
# A label needs the whole record (and its attempts' records and ledger) parsed (half a second for 100k tasks): bigger files found on
# the way are listed by name and size until opened.
LABEL_MAX_BYTES = 4 * 1024 * 1024
JOBS_WIDTH = 12          # the job ids' column: `10748,10782…` (every id is in `hyperion-jobs list`)
# ((path, mtime, size, inode), name shown) -> label: the list is read again after every action, the
# records are not.
_labels: dict[tuple[tuple[str, int, int, int], str], Text] = {}


def describe(history: History, name: str) -> Text:
    """backend, job ids, task count, attempt count, submission time and file name of one record, in
    columns of fixed width (the dates of a retried and a plain record sat at different columns, a
    long job list pushed the name off the screen), the counts `hyperion-jobs list` shows (`totals`)."""
    record = history.current
    counted = totals(history)
    jobs = fit_ids(counted.jobs, JOBS_WIDTH) or record.backend
    when = record.submitted_at[5:16].replace("T", " ")
    attempts = f"att {counted.attempts}" if counted.attempts > 1 else ""
    noun = "task" if counted.tasks == 1 else "tasks"
    return Text.assemble(shown(f"{record.backend:<5} ", "bold"), shown(f"{jobs:<{JOBS_WIDTH}} ", "cyan"),
                         f"{counted.tasks:>5} {noun:<5} ", (f"{attempts:<6} ", "yellow"),
                         shown(f"{when}  ", "dim"), shown(name, "dim"))


def fit_ids(ids: tuple[str, ...], width: int) -> str:
    """`ids` comma-joined within `width` characters: as many whole ids as fit, then `…` (never a
    cut id, which would name a job that is not the record's)."""
    text = ",".join(ids)
    if len(text) <= width:
        return text
    kept: list[str] = []
    for job in ids:
        if len(",".join(kept + [job])) + 1 > width:     # room for the "…"
            break
        kept.append(job)
    return ",".join(kept) + "…" if kept else ids[0][: width - 1] + "…"


def remember(history: History) -> None:
    """The Jobs screen has this record's history in hand: its label needs no second read."""
    key = file_key(history.record_path)
    if key is not None:
        name = Path(history.record_path).name
        for label_name in {name, *without_shared_suffix({name: name}).values()}:
            _labels[key, label_name] = describe(history, label_name)


def history_bytes(path: Path) -> int:
    """The bytes a label reads: the record, its ledger and every attempt's archived record (the
    current record is a hard link of its own archived copy: counted once)."""
    seen: dict[tuple[int, int], int] = {}
    for one in (path, ledger_path(path), *(archived_record_path(path, n) for n in archived_numbers(str(path)))):
        try:
            info = os.stat(one)
        except OSError:
            continue
        seen[info.st_dev, info.st_ino] = info.st_size
    return sum(seen.values())


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


def without_shared_suffix(names: dict[str, str]) -> dict[str, str]:
    """The names shown without the `.submit.json` every one of them ends with: at 80 columns the
    name's column holds about 24 cells, and 12 went to the suffix all records share
    (`a/exp/log/q/extract.JOB.…`), not to what tells them apart. Where one name lacks the suffix
    (a record opened by a name of its own) every name stays whole. The path itself is the option's
    id: the record opened, and every dialog naming it, have it whole."""
    if names and all(name.endswith(RECORD_SUFFIX) and len(name) > len(RECORD_SUFFIX) for name in names.values()):
        return {path: name[: -len(RECORD_SUFFIX)] for path, name in names.items()}
    return names


def record_label(path: Path, current: bool = False, name: str | None = None) -> Text:
    mark = Text(CURRENT_MARK if current else "  ", style="bold")
    name = name or path.name
    key = file_key(path)
    label = _labels.get((key, name)) if key is not None else None
    size = history_bytes(path) if label is None and key is not None else 0
    if label is None and size > LABEL_MAX_BYTES:
        return mark + Text.assemble(shown(name, "dim"),
                                    (f"  ({size / 1e6:.0f} MB record: enter opens it)", "dim"))
    if label is None:
        try:
            record = cached_record(path)
            label = describe(load_history(record.path, record), name)
        except Exception:
            return mark + shown(name, "red") + Text("  (unreadable)", style="red")
        if key is not None:
            if len(_labels) >= MAX_LABELS:
                _labels.clear()
            _labels[key, name] = label
    return mark + label


@dataclass(frozen=True)
class Listing:
    """What the list shows, as found on disk: the records (newest first), the name shown for each,
    each file's (path, mtime, size, inode) (a rewritten record has a new label), the open record
    and the folders that could not be listed. Two equal listings draw the same list."""

    paths: tuple[str, ...]
    names: tuple[str, ...]
    keys: tuple[tuple[str, int, int, int] | None, ...]
    current: str | None
    unlisted: tuple[tuple[str, str], ...]


def list_records(dirs: list[Path], current: str | None, seconds: float | None = None) -> Listing | None:
    """The newest RECENT records under `dirs` (the open record `current` first when the walk misses
    it), stat'ed only, never read. With `seconds`, a walk cut short after that long is None: a part of
    the tree is no listing to replace the one shown with."""
    unlisted: list[tuple[str, str]] = []
    if seconds is None:
        found = find_records(dirs, unlisted=unlisted)
    else:
        found, cut = records_within(dirs, seconds, unlisted=unlisted)
        if cut:
            return None
    paths = [str(p) for p in found[:RECENT]]
    current = os.path.realpath(current) if current else None   # Path.resolve raises on a symlink loop
    if current and current not in paths and Path(current).is_file():
        paths.insert(0, current)
    names = without_shared_suffix(distinct_names(paths))
    return Listing(tuple(paths), tuple(names[p] for p in paths), tuple(file_key(p) for p in paths),
                   current, tuple(unlisted))


def listing_options(listing: Listing) -> list[Option]:
    """One option a record (its label read from the file once per file version)."""
    return [Option(record_label(Path(p), p == listing.current, name), id=p)
            for p, name in zip(listing.paths, listing.names)]


class RecordList(OptionList):
    """Newest first; each option's id is the record's path; the open record is marked."""

    BINDINGS = LIST_KEYS

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.current: str | None = None
        self.paths: list[str] = []
        self.shown_listing: Listing | None = None    # what the list was last drawn from
        self._listings = 0            # find_recent calls: a background look begun before one is dropped
        self._looking: Worker | None = None
        self._finding: Worker | None = None     # the last action's listing
        self.pacer = LookPacer()

    def find_recent(self, dirs: list[Path], current: str | None = None) -> None:
        """The records listed again after an action, the open one highlighted."""
        self._listings += 1
        self._finding = self._find_recent(dirs, current)

    @work(thread=True, exclusive=True, group="records", exit_on_error=False)
    def _find_recent(self, dirs: list[Path], current: str | None = None) -> None:
        """Walking a big experiment tree takes a while: off the UI thread."""
        listing = list_records(dirs, current)
        assert listing is not None
        options = listing_options(listing)
        self.app.call_from_thread(self._show, listing, options, get_current_worker())

    def look_again(self, dirs: list[Path], current: str | None) -> None:
        """A background look (the Jobs screen's timer): the list is redrawn only if what it lists
        changed. Never a second look while one is under way, nor during an action's listing."""
        if (not self.pacer.ready()
                or any(w is not None and not w.is_finished for w in (self._looking, self._finding))):
            return
        self._looking = self._look(dirs, current, self._listings)

    @work(thread=True, group="records-look", exit_on_error=False)
    def _look(self, dirs: list[Path], current: str | None, listings: int) -> None:
        began = time.monotonic()
        listing = list_records(dirs, current, LOOK_SECONDS)
        worker = get_current_worker()
        if worker.is_cancelled:      # the console quit meanwhile
            return
        self.app.call_from_thread(self.pacer.looked, time.monotonic() - began, listing is not None)
        if listing is None or listing == self.shown_listing:
            return
        options = listing_options(listing)      # labels of new or rewritten records only are read
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_looked, listing, options, listings)

    def _show_looked(self, listing: Listing, options: list[Option], listings: int) -> None:
        """A look's listing, unless an action listed the records since it began (its open record
        may be another), or the list was meanwhile drawn from the same."""
        if listings != self._listings or listing == self.shown_listing:
            return
        self._draw(listing, options, keep_cursor=True)

    def _show(self, listing: Listing, options: list[Option], worker: Worker) -> None:
        # A newer listing (another record opened meanwhile) cancelled this one, on this UI thread;
        # the thread ran on regardless, and its list would mark the record opened before as open.
        if worker.is_cancelled:
            return
        self.pacer.reset()
        self._draw(listing, options, keep_cursor=False)

    def _draw(self, listing: Listing, options: list[Option], keep_cursor: bool) -> None:
        """Draw `listing`. After an action the cursor goes to the open record; after a background
        look it stays on the record it was on, and the list keeps its scroll position (clearing
        the options scrolled it to the top)."""
        was_on = self.paths[self.highlighted] if self.highlighted is not None and self.highlighted < len(self.paths) else None
        highlighted, scroll_y = self.highlighted, self.scroll_y
        paths, current = list(listing.paths), listing.current
        self.paths, self.current, self.shown_listing = paths, current, listing
        self.clear_options()
        self.add_options(options)
        if keep_cursor:
            self.scroll_to(y=scroll_y, animate=False, immediate=True)
        if keep_cursor and was_on in paths:
            self.highlighted = paths.index(was_on)
        elif current in paths:
            self.highlighted = paths.index(current)
        elif paths:     # none highlighted, Enter would open nothing until an arrow key was pressed
            self.highlighted = 0 if highlighted is None else min(highlighted, len(paths) - 1)
        self.post_message(RecordsListed(paths, listing.unlisted))

    def neighbour(self, step: int) -> str | None:
        """The record `step` places after (before, if negative) the open one in the list."""
        if not self.paths:
            return None
        if self.current not in self.paths:
            return self.paths[0]
        position = self.paths.index(self.current) + step
        return self.paths[position] if 0 <= position < len(self.paths) else None
