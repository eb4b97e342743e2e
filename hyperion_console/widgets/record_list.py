"""The list of recent submissions on the Jobs screen: q/*.submit.json records found under a few dirs."""
from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from backends.records.record import find_records, load_record

RECENT = 50


def record_label(path: Path) -> Text:
    """backend, job ids, task count, submission time and file name of one record."""
    try:
        record = load_record(path)
    except Exception:
        return Text(f"{path.name}  (unreadable)", style="red")
    jobs = ",".join(j.job_id for j in record.jobs) or record.backend
    when = record.submitted_at[5:16].replace("T", " ")
    return Text.assemble((f"{record.backend:<5} ", "bold"), (f"{jobs:<14} ", "cyan"),
                         f"{len(record.tasks):>5} tasks  ", (f"{when}  ", "dim"),
                         (path.name, "dim"))


class RecordList(OptionList):
    """Newest first; each option's id is the record's path."""

    @work(thread=True, exclusive=True, group="records", exit_on_error=False)
    def find_recent(self, dirs: list[Path]) -> None:
        """Walking a big experiment tree takes a while: off the UI thread."""
        paths = find_records(dirs)[:RECENT]
        options = [Option(record_label(Path(p)), id=str(p)) for p in paths]
        self.app.call_from_thread(self._show, options)

    def _show(self, options: list[Option]) -> None:
        self.clear_options()
        self.add_options(options)
