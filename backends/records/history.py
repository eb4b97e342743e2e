"""The attempts of one output-file pattern read together: each attempt's record, its ledger, the latest task per value.

q/<stem>.submit.json is always the newest attempt's record (what users and
tools open); each attempt's own record is kept in q/attempts/<N>/ under the
same name (a hard link of the same file while it is the newest). A record
written before attempts existed is attempt 1.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from backends.errors import InputError
from backends.logheader import iso_seconds
from backends.printable import printable
from backends.ranges import compress
from backends.records.attempts import (
    ATTEMPTS_DIR,
    LEDGER_SUFFIX,
    AttemptEntry,
    FinalState,
    Ledger,
    NewAttempt,
    append_entries,
    archived_record_path,
    attempt_dir,
    ledger_path,
    read_ledger,
)
from backends.records.paths import RECORD_SUFFIX, moved_name, window_script_path
from backends.records.record import LOCAL_JOB, SubmitRecord, TaskRecord, load_record, record_json, write_json_atomic

# A log moved aside unrecorded is looked for under its name and at most this many `.N` after it.
_MAX_SAME_NAME = 100
# q/attempts/<N>/ of a 1000001-task array holds its moved logs; more names than this were not ours.
MAX_ATTEMPT_FILES = 2_000_000
MAX_OTHER_LEDGERS = 1000     # histories in one q/ read to see which moved logs they name


class _Everything:
    """A set holding every name (a history that could not be read claims them all)."""

    def __contains__(self, _name: object) -> bool:
        return True


_EVERYTHING = _Everything()


@dataclass(frozen=True)
class History:
    """A submission's attempts: records by number, the ledger, and what is unreadable."""

    record_path: str
    current: SubmitRecord
    ledger: Ledger
    records: Mapping[int, SubmitRecord]
    problems: tuple[str, ...] = ()

    @property
    def numbers(self) -> tuple[int, ...]:
        return tuple(sorted(self.records))

    @property
    def latest_number(self) -> int:
        return max(self.records, default=self.current.attempt)

    @property
    def newest_number(self) -> int:
        """The newest attempt's number: its records', or a later one's ledger line (an attempt that
        began and never wrote its record). The next attempt is this plus one, as a preview says it."""
        return max(self.latest_number, self.ledger.last_number)

    @property
    def cluster(self) -> str | None:
        """The Slurm cluster its jobs were queued on (`SubmitRecord.cluster`; None: the local one):
        every attempt's, joined as `clusters_of` joins them when a site file changed between them."""
        from backends.cluster import clusters_of

        return clusters_of([record.cluster for record in self.attempt_records.values()])

    def cluster_of(self, task: TaskRecord) -> str | None:
        """The cluster `task`'s own attempt queued it on (None: the local one): the one to ask about
        it. Asked of `cluster`, every attempt's joined, an attempt of the local cluster was asked
        ``-M other`` after a retry went to another, and its tasks were UNKNOWN."""
        return self.attempt_records.get(task.attempt, self.current).cluster

    @cached_property
    def attempt_records(self) -> Mapping[int, SubmitRecord]:
        """Every attempt's record by number, oldest first, the current one among them (`records`
        leaves out an attempt whose archived record could not be read; the current one is always read)."""
        return dict(sorted({**self.records, self.current.attempt: self.current}.items()))

    def entry(self, number: int) -> AttemptEntry | None:
        return next((a for a in self.ledger.attempts if a.number == number), None)

    def unsubmitted(self) -> tuple[tuple[int, ...], SubmitRecord | None]:
        """The values a refused sbatch window left out of an attempt and no later attempt submitted,
        and the newest attempt that left some of them out (its `refused` says why). Across attempts:
        a retry of the failures alone (`--state`) left them out again, and they were forgotten.
        Worked out once: `status` and `retry` ask it up to three times, each a pass over every task."""
        return self._unsubmitted

    @cached_property
    def _unsubmitted(self) -> tuple[tuple[int, ...], SubmitRecord | None]:
        left: set[int] = set()
        refused: SubmitRecord | None = None
        for record in self.attempt_records.values():
            left -= {t.value for t in record.tasks if t.value is not None}
            if record.unsubmitted:
                left |= set(record.unsubmitted)
                refused = record
        return tuple(sorted(left)), refused if left else None

    def latest_tasks(self) -> tuple[TaskRecord, ...]:
        """For every value, the task of the newest attempt that ran it, in value order."""
        latest: dict[int | None, TaskRecord] = {}
        for number in self.numbers:
            for task in self.records[number].tasks:
                latest[task.value] = _with_attempt(task, number)
        return tuple(latest[v] for v in sorted(latest, key=lambda v: -1 if v is None else v))

    def tasks_of(self, number: int) -> tuple[TaskRecord, ...]:
        record = self.records.get(number)
        return () if record is None else tuple(_with_attempt(t, number) for t in record.tasks)

    def tasks_of_job(self, job_id: str) -> tuple[TaskRecord, ...]:
        """The tasks Slurm job `job_id` ran, of whichever attempt submitted it."""
        return tuple(t for n in self.numbers for t in self.tasks_of(n) if t.job_id == job_id)

    def final(self, task: TaskRecord) -> FinalState | None:
        return self.ledger.finals.get((task.attempt, task.value))

    def log_of(self, task: TaskRecord) -> str | None:
        """Where the task's log is now: moved aside by a later rerun, or where it was written.

        None when a later attempt planned the same path and nothing of this
        attempt was moved from it: this task never wrote it (it did not run),
        so the file there is the later attempt's, not this one's.
        """
        moved = self.ledger.moved.get((task.attempt, task.value, "log"))
        if moved is not None:   # in the terms of where that attempt's record was written
            return self.records.get(task.attempt, self.current).rebased(moved.target)
        unrecorded = self._unrecorded_move(task)
        if self._last_attempt_at.get(task.log, task.attempt) > task.attempt:
            return unrecorded
        if unrecorded is not None and not os.path.lexists(task.log):
            return unrecorded
        return task.log

    def _unrecorded_move(self, task: TaskRecord) -> str | None:
        """The task's log in q/attempts/<N>/ that a rerun moved there and was killed before its
        ``moved`` line was written (SIGKILL between the hard link and the line): the first of the
        names a move gives it (`moved_name`, then ``.2``, ``.3``...) that no moved line of this
        ledger names and that was written after the attempt was submitted (not another pattern's
        file of the same name, which its own ledger names). Found from one listing of the folder,
        made only when asked; no file is looked at for a task without such a name."""
        if not task.log or not self._may_have_written(task):
            return None
        names = self._attempt_files(task.attempt)
        if not names:
            return None
        record = self.records.get(task.attempt, self.current)
        base = moved_name(record.array_name, record.options.get("output_file"), task.value, task.log)
        if base not in names:        # every task of an ordinary history: no file is looked at
            return None
        claimed = self._claimed_names.get(task.attempt, frozenset())
        folder = attempt_dir(self.record_path, task.attempt)
        submitted = self._submitted_at(task.attempt)
        # moved by the next attempt that planned this log, so last written before it: a file written
        # later is another pattern's of the same name (log/t.2.log beside log/t.JOB.log)
        later = [n for n in self._planned_by.get(task.log, ()) if n > task.attempt]
        moved_by = self._submitted_at(later[0]) if later else None
        for counter in range(1, _MAX_SAME_NAME + 1):
            name = base if counter == 1 else f"{base}.{counter}"
            if name not in names:
                return None
            if name in claimed or name.endswith(RECORD_SUFFIX) or name in self._claimed_elsewhere(task.attempt):
                continue
            try:
                info = os.lstat(folder / name)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and (submitted is None or info.st_mtime >= submitted) \
                    and (moved_by is None or info.st_mtime < moved_by + 1):   # ISO times: whole seconds
                return str(folder / name)
        return None

    def _submitted_at(self, number: int) -> float | None:
        """When attempt `number` was submitted (its ledger line, else its record), in epoch seconds."""
        entry = self.entry(number)
        record = self.records.get(number)
        return iso_seconds(entry.time if entry else (record.submitted_at if record else None))

    def _claimed_elsewhere(self, number: int) -> frozenset[str] | _Everything:
        """The names in q/attempts/<number>/ that the moved lines of the other ledgers in this q/
        name (patterns sharing a log name share that folder); read only once a file named like a
        moved log is found. A ledger that cannot be read claims every name: when in doubt, a log
        shown missing is better than another pattern's shown as this task's."""
        cache = self._elsewhere
        if number not in cache:
            names: set[str] = set()
            ours = ledger_path(self.record_path).name
            try:
                ledgers = sorted(p for p in Path(self.record_path).parent.glob(f"*{LEDGER_SUFFIX}") if p.name != ours)
                if len(ledgers) > MAX_OTHER_LEDGERS:
                    raise InputError("q/", f"more than {MAX_OTHER_LEDGERS} histories")
                for ledger in ledgers:
                    record = ledger.with_name(ledger.name[:-len(LEDGER_SUFFIX)] + RECORD_SUFFIX)
                    names.update(os.path.basename(m.target) for m in read_ledger(record).moved.values()
                                 if m.attempt == number)
                cache[number] = frozenset(names)
            except (InputError, OSError, ValueError):
                cache[number] = _EVERYTHING
        return cache[number]

    @cached_property
    def _elsewhere(self) -> dict:
        return {}

    @cached_property
    def _planned_by(self) -> dict[str, tuple[int, ...]]:
        """The attempts that planned a task at each log path, oldest first (asked only when a file
        named like a moved log is found, so one pass over every task costs nothing ordinarily)."""
        planned: dict[str, list[int]] = {}
        for number in self.numbers:
            for task in self.records[number].tasks:
                planned.setdefault(task.log, []).append(number)
        return {log: tuple(numbers) for log, numbers in planned.items()}

    def _may_have_written(self, task: TaskRecord) -> bool:
        """Whether the task can have written a log (as `log_owner.writers` judges): a local task the
        ledger never saw start did not, nor did a task that ended without running. A file of its
        log's name in q/attempts/<N>/ is then another pattern's (log/t.2.log beside log/t.JOB.log,
        whose moved line is in that pattern's ledger), never this task's."""
        if task.job_id == LOCAL_JOB and (task.attempt, task.value) not in self.ledger.starts:
            return False
        final = self.final(task)
        return final is None or bool(final.elapsed or final.node)

    def _attempt_files(self, number: int) -> frozenset[str]:
        """The names in q/attempts/<number>/, listed once per history (bounded: a folder holding
        more than MAX_ATTEMPT_FILES names was not filled by us, and is not searched)."""
        cache = self._listings
        if number not in cache:
            names: set[str] = set()
            folder = attempt_dir(self.record_path, number)
            try:
                # only the folders hyperion made: a symlink in their place is followed by no reader
                if any(stat.S_ISLNK(os.lstat(path).st_mode) for path in (folder.parent, folder)):
                    raise NotADirectoryError(str(folder))
                with os.scandir(folder) as entries:
                    for entry in entries:
                        names.add(entry.name)
                        if len(names) > MAX_ATTEMPT_FILES:
                            names = set()
                            break
            except OSError:
                pass
            cache[number] = frozenset(names)
        return cache[number]

    @cached_property
    def _listings(self) -> dict[int, frozenset[str]]:
        return {}

    @cached_property
    def _claimed_names(self) -> dict[int, frozenset[str]]:
        """Per attempt, the names in its q/attempts/<N>/ that a moved line of this ledger names."""
        claimed: dict[int, set[str]] = {}
        for move in self.ledger.moved.values():
            claimed.setdefault(move.attempt, set()).add(os.path.basename(move.target))
        return {number: frozenset(names) for number, names in claimed.items()}

    @cached_property
    def _last_attempt_at(self) -> dict[str, int]:
        """The newest attempt that planned a task at each log path (one pass, not one per task)."""
        last: dict[str, int] = {}
        for number in self.numbers:
            for task in self.records[number].tasks:
                last[task.log] = number
        return last

    @cached_property
    def script_writers(self) -> dict[str, int]:
        """The newest attempt that wrote each batch script (a later one writing the same name moved
        the earlier file aside): attempt 1's q/<stem>.offset1001.sh, left in q/ by an attempt 2 that
        needed no such window, is attempt 1's when attempt 3 writes that name again."""
        found: dict[str, int] = {}
        for number in self.numbers:
            for script in record_scripts(self.records[number]):
                found[script] = number
        return found

    @property
    def array_name(self) -> str | None:
        return self.current.array_name


def record_scripts(record: SubmitRecord) -> tuple[str, ...]:
    """The batch scripts a record's submissions ran, where they are now: its first job's is
    `record.script`, each later window's is named after its offset beside it (`window_script_path`)."""
    if not record.script or not record.script.endswith(".sh"):
        return ()
    base = record.rebased(record.script)[: -len(".sh")]
    jobs = record.jobs or ()
    return tuple(window_script_path(base, number, job.offset) for number, job in enumerate(jobs)) or (f"{base}.sh",)


def _with_attempt(task: TaskRecord, number: int) -> TaskRecord:
    """Older records carry no attempt in their tasks: the record's number is theirs."""
    if task.attempt == number:
        return task
    return TaskRecord(task.value, task.job_id, task.array_task_id, task.log, task.slurm_out,
                      task.slurm_err, number)


@dataclass(frozen=True)
class Totals:
    """What `hyperion-jobs list` says of a submission over all its attempts: every attempt's job ids
    (oldest first: a job id remembered from attempt 1, a notification's or a colleague's, is found on
    its line), its values (each counted once, whichever attempt ran it last) and its attempts.
    The console's record list says the same: it named the newest attempt's jobs and tasks alone
    (`2 rerun` of a 12-task array, where `list` and the task table beside it said 12)."""

    jobs: tuple[str, ...]
    tasks: int
    attempts: int


def totals(history: History) -> Totals:
    """The jobs, task count and attempt count `list` shows for `history` (no Slurm asked: the task
    count is that of `latest_tasks`, one per value, without building the tasks)."""
    jobs = tuple(dict.fromkeys(j.job_id for record in history.attempt_records.values() for j in record.jobs))
    values = {task.value for number in history.numbers for task in history.records[number].tasks}
    return Totals(jobs, len(values), len(history.numbers))


def load_history(record_path: str | Path, current: SubmitRecord | None = None) -> History:
    """Every attempt of the submission whose newest record is `record_path`.

    An attempt whose archived record cannot be read is left out and named in
    `problems`; the current record must be readable (InputError otherwise).
    """
    path = str(record_path)
    current = current if current is not None else load_record(path)
    ledger = read_ledger(path)
    records: dict[int, SubmitRecord] = {current.attempt: current}
    problems: list[str] = []
    if ledger.skipped:
        problems.append(f"{ledger.skipped} line(s) of its ledger {printable(str(ledger_path(path)))} could not be "
                        "read (damaged, cut short, or written by a newer hyperion): a task they told of may "
                        "show as not run or LOST, and a retry would run it again")
    for number in sorted({entry.number for entry in ledger.attempts} | archived_numbers(path)):
        if number in records:
            continue
        try:
            records[number] = load_record(archived_record_path(path, number))
        except InputError as err:
            problems.append(f"attempt {number}: {err.problem}")
    return History(path, current, ledger, records, tuple(problems))


def archived_numbers(record_path: str) -> set[int]:
    """Attempts kept under q/attempts/<N>/ (a record from before the ledger has no ledger line)."""
    name = Path(record_path).name
    try:
        entries = os.scandir(Path(record_path).parent / ATTEMPTS_DIR)
    except OSError:
        return set()
    with entries:
        return {int(e.name) for e in entries
                if e.name.isascii() and e.name.isdigit() and len(e.name) < 10   # "²" is a digit int() refuses
                and os.path.isfile(os.path.join(e.path, name))}


def save_attempt_record(record: SubmitRecord) -> None:
    """Write attempt `record.attempt`'s record to q/attempts/<N>/ and make it q/<stem>.submit.json.

    The current name becomes a hard link of the archived file (readers never
    see half a record); where hard links are refused, a second copy is written.
    """
    current = Path(record.path)
    archived = archived_record_path(current, record.attempt)
    write_json_atomic(archived, record_json(record))
    temp = current.with_name(f".{current.name}.{os.getpid()}.link")
    try:
        temp.unlink(missing_ok=True)
        os.link(archived, temp)
        os.replace(temp, current)
    except OSError:
        temp.unlink(missing_ok=True)
        write_json_atomic(current, record_json(record))


def archive_current(record_path: str | Path) -> SubmitRecord | None:
    """Keep the current record of an older attempt under q/attempts/<N>/ before a new one replaces it.

    Records written before attempts existed live only at q/<stem>.submit.json.
    Returns the current record, or None when there is none (a first submission).
    """
    path = Path(record_path)
    if not path.exists():
        return None
    current = load_record(path)
    archived = archived_record_path(path, current.attempt)
    if not archived.exists():
        archived.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, archived)
        except OSError:
            write_json_atomic(archived, record_json(current))
    return current


def commit_attempt(record: SubmitRecord, attempt: NewAttempt) -> None:
    """Save attempt `record.attempt`'s record and add its line to the ledger."""
    save_attempt_record(record)
    values = compress(t.value for t in record.tasks if t.value is not None)
    append_entries(record.path, [AttemptEntry(
        record.attempt, record.kind, record.submitted_at, record.backend,
        tuple(j.job_id for j in record.jobs), values, dict(attempt.overrides), len(record.tasks))])
