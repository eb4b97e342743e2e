"""What the user names on the command line: a job id, a task, a record (or its q/ directory).

`resolve` turns the text into a Target, `status` asks Slurm (or the local
results) about it, and `task_logs` finds the log files of one task.
"""
from __future__ import annotations

import os
import pwd
import re
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from backends.errors import InputError
from backends.ranges import compress
from backends.records.attempts import read_ledger
from backends.records.history import History, load_history
from backends.records.paths import RECORD_SUFFIX
from backends.records.record import SubmitRecord, TaskRecord, find_records, load_record
from backends.states import TaskState
from backends.watch.by_cluster import by_cluster, forgotten_keys, merged_answers, task_keys, without_unended
from backends.watch.finals import FinalsRecorder
from backends.watch.never_started import told_states
from backends.watch.requeued import reopened, requeuable
from backends.watch.rows import (
    LOCAL_JOB,
    TaskRow,
    expected_tasks,
    final_row,
    history_rows,
    job_rows,
    pending_tasks,
    task_row,
    unended_tasks,
    unknown_row,
    usage_missing,
    with_plan,
)
from backends.watch.slurm.runner import QueryError, Runner, run_command
from backends.cluster import cluster_words, for_cluster

# Slurm's answers (`backends.watch.slurm.accounting`: sacct and squeue, their parsers, the usage and
# states they give) are imported by each function that asks Slurm: `status` of a local record, or of
# one whose every end and usage the ledger holds, asks nothing and loads none of it.
TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (as backends.client)
if TYPE_CHECKING:
    from backends.watch.slurm.accounting import Failed, Snapshot, Told
    from backends.watch.usage import Usage

Key = tuple[str, "int | None"]
# Bounded: int() refuses 4300+ digits. No job is 0 (squeue refused it: "squeue failed", exit 1), and
# 007 is not how Slurm or a record spells job 7.
_JOB = re.compile(r"^([1-9][0-9]{0,17})(?:_([0-9]{1,18}))?$")
# What Slurm can hold, verified on Slurm 22.05: squeue refuses a job id above 2**31 - 1 ("Invalid job
# id"), and scontrol wrapped 4294967296 into another job (logs named its log). Local ids stay below
# 2**26 (MaxJobId); a federation's ids set bits above them, still within 2**31 - 1 for squeue. An
# array task id is below MaxArraySize, which Slurm caps at 4000001.
MAX_JOB_ID = 2**31 - 1
MAX_TASK_ID = 4_000_000


def _job_match(text: str, field: str) -> re.Match[str] | None:
    """`_JOB`'s match of a job id or JOB_TASK, or None for anything else; an id Slurm cannot hold is
    refused here, before any Slurm command is asked about it (or answers for another job)."""
    match = _JOB.match(text)
    if match is None:
        return None
    if int(match.group(1)) > MAX_JOB_ID:
        raise InputError(field, f"{text!r}: job ids go up to {MAX_JOB_ID}; Slurm holds no job {match.group(1)}")
    if match.group(2) is not None and int(match.group(2)) > MAX_TASK_ID:
        raise InputError(field, f"{text!r}: array task ids go up to {MAX_TASK_ID} (Slurm's largest "
                         f"MaxArraySize is {MAX_TASK_ID + 1}); no job has task {match.group(2)}")
    return match



@dataclass(frozen=True)
class Target:
    """What the user named: a record, or a Slurm job (optionally one task of it)."""

    record: SubmitRecord | None
    job_id: str | None = None
    task_id: int | None = None


def current_user() -> str:
    """Who Slurm knows this process as: the uid's name, not `$USER`, which `su`, `sudo` or a
    container can leave naming someone else (squeue -u would then answer for them, and the
    check for jobs still running the pattern's scripts would quietly find none)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:            # a uid without a passwd entry: squeue -u takes the number too
        return str(os.getuid())


Unlisted = list[tuple[str, str]]   # (folder, reason) of each folder a search could not list


def record_file(text: str) -> Path | None:
    """A record path, or a directory/output-file pointing at exactly one record.

    Anything named like a record that is not a directory is returned, so that
    `load_record` says what is wrong with it (a FIFO, too large, not JSON).
    """
    path = Path(text)
    try:
        info = os.stat(path)
    except OSError:                 # missing, a folder you may not enter, a symlink loop, a name too long
        # named like a record: load_record says which ("is neither a job id" hid a teammate's q/ under 077)
        return path if path.name.endswith(RECORD_SUFFIX) else None
    except ValueError:              # a NUL byte
        return None
    if path.name.endswith(RECORD_SUFFIX) and not stat.S_ISDIR(info.st_mode):
        return path
    if stat.S_ISDIR(info.st_mode):
        unlisted: Unlisted = []
        found = find_records([path], max_depth=1, unlisted=unlisted)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InputError("RECORD", f"{text} holds {len(found)} records; name one of them: "
                             f"{_some(text, path, found)}")
        # a teammate's q/ under umask 077 was "neither a job id nor a submit record" (another folder
        # there that cannot be listed, a checkpoint's data, would hold no records: not named)
        for folder, reason in unlisted:
            if Path(folder).name == "q" or folder == str(path):
                raise InputError("RECORD", f"cannot list {folder} ({reason}); its records cannot be read")
    return None


NAMED = 3   # records named when a folder holds several: enough to pick from, one line still


def _some(text: str, folder: Path, found: list[Path]) -> str:
    """The newest few, each as the folder was typed plus its own name (ready to paste), then how many more."""
    try:
        base = folder.resolve()
    except (OSError, RuntimeError):
        base = None
    shown = []
    for record in found[:NAMED]:
        try:
            shown.append(os.path.join(text, record.relative_to(base)) if base else str(record))
        except ValueError:          # reached through a symlink out of the folder
            shown.append(str(record))
    more = len(found) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def resolve(text: str, field: str = "JOB|RECORD") -> Target:
    """``1234``, ``1234_5`` or a path to a ``.submit.json`` (or a dir holding one)."""
    match = _job_match(text, field)
    if match:
        task = match.group(2)
        return Target(None, match.group(1), int(task) if task is not None else None)
    path = record_file(text)
    if path is None:
        _refuse_local_id(text, field)
        head, value = _record_value(text)
        if value is not None and record_file(head) is not None:   # `logs`'s form, typed to status or watch
            raise InputError(field, f"{text!r} names one task of a record (RECORD:VALUE, the form logs "
                                    f"takes); give the record itself, {head!r}")
        raise InputError(field, f"{text!r} is neither a job id (1234, 1234_5) nor a submit record")
    return Target(load_record(path))


def _record_value(text: str) -> tuple[str, int | None]:
    """``RECORD:VALUE`` split into the record's text and the value; (text, None) when it has no such end."""
    head, sep, tail_text = text.rpartition(":")
    if sep and tail_text.isascii() and tail_text.isdigit() and len(tail_text) <= 18:
        return head, int(tail_text)
    return text, None


def _refuse_local_id(text: str, field: str) -> None:
    """`local_5`, as the TASK column shows a local run's task: every local run has one, so its record says which."""
    head, _, value = text.partition("_")
    if head == LOCAL_JOB and (not value or value.isdigit()):
        what = f"RECORD:{value or 'VALUE'}" if field == "TASK" else "its record"
        raise InputError(field, f"{text!r} names a task of a local run, and every local run has one; "
                         f"give {what} (hyperion-jobs list shows the records)")


def history_for_job(job_id: str, dirs: Sequence[Path], unlisted: Unlisted | None = None) -> History | None:
    """The newest submission under `dirs` one of whose attempts submitted `job_id` (for log paths).

    Folders that could not be listed are added to `unlisted` (as `find_records` does for `list`):
    the record of a teammate's q/ under umask 077 was missed without a word."""
    for path in find_records(dirs, unlisted=unlisted):
        try:
            record = load_record(path)
            if any(job.job_id == job_id for job in record.jobs):
                return load_history(path, record)
            if any(job_id in entry.job_ids for entry in read_ledger(path).attempts):
                return load_history(path, record)
        except InputError:
            continue
    return None


def array_task_of(job_id: str, runner: Runner = run_command,
                  looked: list[Told] | None = None) -> tuple[str, int] | None:
    """The array task a bare job id stands for, as (array job id, task id); None if it is none or
    Slurm cannot say.

    Slurm gives every array task a job id of its own: the SLURM_JOB_ID a program prints, a
    failed-task record's slurm_job_* folder, Slurm's mails. Records know the array's id.
    With `looked` (`status J`, which asks both next), sacct and squeue are asked at once and the look
    is added to it, to be taken again: with squeue hung `status J` waited for it here and then again.
    """
    from backends.watch.slurm.accounting import ask_at_once

    if looked is not None:
        told = ask_at_once([job_id], runner)
        looked.append(told)
        answers: Iterable[list[TaskState] | None] = (
            told.squeue.states if told.squeue is not None else None, told.sacct.own if told.sacct is not None else None)
    else:
        answers = _asked_in_turn(job_id, runner)
    for rows in answers:
        # the controller first: accounting may still file a task that ended a moment ago under its own
        # id; accounting only when the controller does not know the job (any more) or does not answer
        if rows is None:
            continue
        keys = {(row.job_id, row.task_id) for row in rows}
        if len(keys) == 1:
            ((job, task),) = keys
            if job != job_id and task is not None:
                return job, task
        if keys:
            return None
    return None


def _asked_in_turn(job_id: str, runner: Runner) -> Iterator[list[TaskState] | None]:
    """squeue's rows of `job_id`, then (only if asked for them) sacct's own rows; None for one that failed."""
    from backends.watch.slurm.accounting import run_sacct, run_squeue

    for ask in (run_squeue, lambda ids, run: run_sacct(ids, run).own):
        try:
            yield ask([job_id], runner)
        except QueryError:
            yield None


def history_of(target: Target, dirs: Sequence[Path] = (Path("."),), runner: Runner = run_command,
               unlisted: Unlisted | None = None) -> History:
    """The submission a target belongs to: its record's history, or the one a job id was found in
    (an array task's own job id counts as its array's)."""
    return located(target, dirs, runner, unlisted)[1]


def located(target: Target, dirs: Sequence[Path] = (Path("."),), runner: Runner = run_command,
            unlisted: Unlisted | None = None) -> tuple[Target, History]:
    """`history_of`, with the target as the record knows it (an array task's own job id as
    ARRAY_TASK): a command that goes on to ask Slurm (`job_status`) need not search `dirs` again."""
    if target.record is not None:
        return target, load_history(target.record.path)
    assert target.job_id is not None
    found, history = job_history(target, dirs, runner, unlisted)
    if history is None:
        raise InputError("JOB", f"no submit record under {', '.join(map(str, dirs))} submitted job "
                         f"{target.job_id}; name the record instead (e.g. exp/log/q/NAME.submit.json)")
    return found, history


def job_history(target: Target, dirs: Sequence[Path], runner: Runner = run_command,
                unlisted: Unlisted | None = None, looked: list[Told] | None = None) -> tuple[Target, History | None]:
    """A job target and the submission under `dirs` that made it; an array task's own job id that no
    record submitted becomes ARRAY_TASK, which records know. `looked`: `array_task_of`'s."""
    assert target.job_id is not None
    history = history_for_job(target.job_id, dirs, unlisted)
    if history is None and target.task_id is None:
        named = array_task_of(target.job_id, runner, looked)
        if named is not None:
            return Target(None, *named), history_for_job(named[0], dirs)   # the same folders: told once
    return target, history


def attempt_record(history: History, job_id: str) -> SubmitRecord:
    """The record of the attempt of `history` that submitted `job_id` (the newest if none did)."""
    return next((history.records[n] for n in history.numbers
                 if any(job.job_id == job_id for job in history.records[n].jobs)), history.current)


def job_status(target: Target, history: History | None, runner: Runner = run_command,
               unknown: list[str] | None = None, lagging: bool = False, looked: Sequence[Told] = (),
               knows_none: set[str] | None = None) -> list[TaskRow]:
    """One sacct + squeue for a job target `job_history` has found (or not found) the submission
    of, as rows (QueryError if Slurm does not answer). With `unknown` (`status`), sacct and squeue
    are asked at once and a failed look shows what answered, as `history_status` does, and says so
    in `unknown`; with nothing to show, QueryError names every source that failed, in one line.
    `lagging` (`watch J` asking whether Slurm knows J): a waiting task only accounting still names
    counts (`query`'s); the watch then sees it gone and says it was cancelled while pending.
    `looked` (with `unknown`): `job_history`'s look at the job id a moment ago, taken as this one's
    when the target is that id, else (an array task's own id, now ARRAY_TASK) what failed to answer
    then is not asked again: one timeout, as README says, not one for each look.
    A record's job Slurm, both sources answering, knows nothing of (purged, another cluster's): with
    `unknown`, `status RECORD`'s line (`knows_none_line`) when tasks of it have no recorded end, and
    the job added to `knows_none` (no usage is promised of it): `status J` showed them UNKNOWN
    without a word and promised the ended tasks' usage on every run."""
    from backends.watch.slurm.accounting import ask_at_once, failed_text, query, query_what_answers

    assert target.job_id is not None
    failed: Failed = []
    # the cluster of the attempt that submitted the job, not every attempt's (`History.cluster_of`)
    runner = for_cluster(runner, attempt_record(history, target.job_id).cluster if history is not None else None)
    if unknown is not None:
        told = None
        if looked:
            told = looked[-1] if looked[-1].job_ids == (target.job_id,) else \
                ask_at_once([target.job_id], runner, not_again=looked[-1])
        answer, failed = query_what_answers([target.job_id], runner, told=told)
    else:
        answer = query([target.job_id], runner, lagging=lagging)      # with usage: `status 4711` shows what `status RECORD` shows
    states = told_states(answer, [history] if history is not None else [])
    unended: list[TaskRecord] = []
    if history is not None:
        unended = [t for t in history.tasks_of_job(target.job_id) if history.final(t) is None
                   and (target.task_id is None or t.array_task_id == target.task_id)]
    if target.task_id is not None:
        states = {k: v for k, v in states.items() if k[1] == target.task_id}
    rows = job_rows(states, history, answer.shown_usage(), (target.job_id, target.task_id))
    forgotten = [] if history is not None else \
        [key for key in answer.unknown if target.task_id is None or key[1] == target.task_id]
    if forgotten:      # a job no record names, the controller forgot: its unended tasks UNKNOWN, as `watch J` shows
        rows = sorted([*rows, *(unknown_row(*key) for key in forgotten)],
                      key=lambda row: (row.job_id, -1 if row.task_id is None else row.task_id))
    if unknown is not None and not failed and history is not None:
        say_unknown_jobs(unnamed_jobs(answer, [target.job_id]), history, unended, states, unknown, knows_none)
    if failed and unknown is not None:
        if not rows:     # nothing to show, and "Slurm knows no job" would be untrue: what failed, in one line
            raise QueryError(failed_text(failed))
        line = unanswered_line(failed, unended, states) if history is not None else \
            _unrecorded_job_line(failed, states, len(forgotten))
        if line is not None:
            unknown.append(settled(failed, line))
    return rows


def say_unknown_jobs(gone: Iterable[str], history: History, tasks: Sequence[TaskRecord],
                     states: Mapping[Key, TaskState], unknown: list[str], knows_none: set[str] | None) -> None:
    """Jobs of `history` Slurm, both sources answering, knows nothing of (`gone`): added to
    `knows_none`, and `knows_none_line` of those of `tasks` (without a recorded end) no state was
    given, a Settled line in `unknown`: `status RECORD`'s and `status J`'s words alike."""
    gone = set(gone)
    if knows_none is not None:
        knows_none.update(gone)
    of_gone = [t for t in tasks if t.job_id in gone and (t.job_id, t.array_task_id) not in states]
    if of_gone:
        jobs = sorted({t.job_id for t in of_gone}, key=lambda job: (len(job), job))
        unknown.append(Settled(knows_none_line(history.record_path, jobs, len(of_gone))))


class Settled(str):
    """A line of `unknown` about tasks Slurm did answer about, whose states no later look will tell
    (`settled`): said, but no failure to answer (`status` exits 0, as for a job Slurm has no trace of)."""


def settled(failed: Failed, line: str) -> str:
    """`line`, a Settled one when every source that gave nothing to take is a controller that knows
    none of a job accounting still has running ("forgotten"): asking again would tell no more."""
    return Settled(line) if all(err.kind == "forgotten" for _, err in failed) else line


def _unrecorded_job_line(failed: Failed, states: Mapping[Key, TaskState], forgotten: int = 0) -> str:
    """What a failed look leaves of a job no record names (`status J`), whose tasks are those the
    source that answered named: accounting's unended ones may be behind while the controller fails,
    and the controller no longer lists tasks that ended a while ago. `status J` of such a job
    said only `sacct failed (rc 1): ...` (never squeue, nor that the other source answered)."""
    from backends.watch.slurm.accounting import LABELS, failed_text

    unended = [state for state in states.values() if not state.state.is_terminal and state.source != "squeue"]
    if forgotten and not unended and all(err.kind == "forgotten" for _, err in failed):
        # `status RECORD`'s and `watch J`'s words for them (it said "shown as accounting has them",
        # and, with every task unended, no table at all)
        return f"{failed_text(failed)}; the {forgotten} task(s) with no recorded end are not known (UNKNOWN)"
    if any(source == "sacct" for source, _ in failed):
        left = f"shown as {LABELS['squeue']} has them (tasks that ended a while ago it no longer lists)"
    elif unended:
        left = f"the {len(unended)} unended task(s) are shown as {LABELS['sacct']} has them, which may be behind"
    else:
        left = f"shown as {LABELS['sacct']} has them"
    return f"{failed_text(failed)}; {left}"


def jobs_slurm_knows_none(job_ids: Sequence[str], runner: Runner = run_command,
                          unaccounted: bool = False) -> frozenset[str]:
    """Those of `job_ids` Slurm has no trace of: sacct and squeue both answered, as `status` takes
    answers (`query_what_answers`: an empty answer of a site wrapper is no answer, unless squeue,
    asked about one job alone, says it knows no such job), and neither names it. None of them while
    either fails: a job Slurm did not answer about is not a job it does not know. `unaccounted`:
    sacct answered a moment ago with no row of any of them; squeue alone is asked (`ask_controller`)."""
    from backends.watch.slurm.accounting import SacctRows, ask_controller, query_what_answers

    told = ask_controller(job_ids, runner, SacctRows([], [])) if unaccounted else None
    answer, failed = query_what_answers(list(job_ids), runner, told=told)
    return frozenset() if failed else unnamed_jobs(answer, job_ids)


def unnamed_jobs(answer: Snapshot, job_ids: Iterable[str]) -> frozenset[str]:
    """Those of `job_ids` an answer of both sources (`query_what_answers` with nothing failed) names
    nothing of: no task's state, no accounting row, no live task. Slurm knows none of them."""
    named = {job for job, _ in answer.states} | answer.accounted_jobs | (answer.live_jobs or frozenset())
    return frozenset(job for job in job_ids if job not in named)


def knows_none_line(record: str, jobs: Sequence[str], not_known: int | None = None) -> str:
    """``Slurm knows no job 4242, which /x/log/q/x.JOB.submit.json submitted``, and with `not_known`
    the tasks it leaves UNKNOWN (``; the 2 task(s) with no recorded end are not known (UNKNOWN)``):
    `watch RECORD`'s, the console's and `status RECORD`'s words for a record's jobs Slurm has no
    trace of (`jobs_slurm_knows_none`)."""
    ids = ",".join(jobs)
    said = f"no job {ids}" if len(jobs) == 1 else f"none of jobs {ids}"
    line = f"Slurm knows {said}, which {record} submitted"
    if not_known is None:
        return line
    return f"{line}; the {not_known} task(s) with no recorded end are not known (UNKNOWN)"


@dataclass(frozen=True)
class LaterRun:
    """The values of a job's unsuccessful tasks that one later attempt ran again, each with its end
    by the ledger (None while none is recorded: that attempt still runs, or nobody has looked since)."""

    attempt: int
    values: tuple[int | None, ...]
    ends: tuple[str | None, ...]


def rerun_later(history: History | None, rows: Sequence[TaskRow]) -> list[LaterRun]:
    """Which later attempts of its submission ran a job's unsuccessful `rows` again, oldest first.
    `status 4711 --failures` of an attempt since retried said `7 of 40 task(s) did not succeed`,
    with nothing to say that all 7 were rerun and completed."""
    runs: dict[int, list[tuple[int | None, str | None]]] = {}
    for _, later in _newest_runs(history, rows):
        if later is None:
            continue
        final = history.final(later) if history is not None else None
        runs.setdefault(later.attempt, []).append((later.value, final.state if final is not None else None))
    return [LaterRun(number, tuple(v for v, _ in ran), tuple(e for _, e in ran))
            for number, ran in sorted(runs.items())]


def later_run_text(run: LaterRun) -> str:
    """``attempt 2 reran values 2,5 (COMPLETED 2)``, ``attempt 2 reruns values 2,5 (no end recorded
    yet)``: the words of `status RECORD`'s ATTEMPT column and `history`. It said `(now not ended 2)`,
    which named neither the attempt nor the values, and read as a state."""
    numbers = [v for v in run.values if v is not None]
    what = (f"value{'s' if len(numbers) > 1 else ''} {compress(numbers)}" if numbers else "the job")
    counts: dict[str, int] = {}
    for end in run.ends:
        if end is not None:
            counts[end] = counts.get(end, 0) + 1
    unrecorded = sum(1 for end in run.ends if end is None)
    said = [f"{state} {n}" for state, n in sorted(counts.items())]
    if unrecorded:
        said.append("no end recorded yet" if not counts else f"{unrecorded} with no end recorded yet")
    verb = "reruns" if unrecorded == len(run.ends) else "reran"
    return f"attempt {run.attempt} {verb} {what} ({', '.join(said)})"


def failed_last(history: History | None, rows: Sequence[TaskRow]) -> list[TaskRow]:
    """A job's unsuccessful `rows` that no later attempt ran again: what `hyperion-jobs retry RECORD
    --values` reruns for a watch of that job (a plain retry would rerun every value still failing,
    another job's too; one a later attempt ran again is not this job's to rerun)."""
    return [row for row, later in _newest_runs(history, rows) if later is None]


def _newest_runs(history: History | None, rows: Sequence[TaskRow]) -> Iterator[tuple[TaskRow, TaskRecord | None]]:
    """Each unsuccessful row the submission's ledger knows, with its value's run in a later
    attempt (None when this row's run is still the newest)."""
    if history is None:
        return
    newest = {task.value: task for task in history.latest_tasks()}
    ran = {(t.job_id, t.array_task_id): t for job in {row.job_id for row in rows} for t in history.tasks_of_job(job)}
    for row in rows:
        task = ran.get((row.job_id, row.task_id))     # a row Slurm knows and no record names: no attempt
        later = newest.get(task.value) if task is not None else None
        if row.ok or task is None or later is None:
            continue
        yield row, later if later.attempt > task.attempt else None


def recorded_job(history: History, target: Target) -> tuple[list[TaskRow] | None, bool]:
    """The rows of `target`'s job (or its one task) from the ledger alone, when every task has its
    end and usage recorded, else None: `usage JOB` of a finished job needs no Slurm (with slurmdbd
    down it failed, though the ledger held everything). And whether the controller may have queued
    a task of the job again since its recorded end (`requeuable`): then its rows are asked of Slurm,
    the ledger's standing if Slurm is down."""
    tasks = [t for t in history.tasks_of_job(target.job_id or "")
             if target.task_id is None or t.array_task_id == target.task_id]
    again = {(t.job_id, t.array_task_id) for t in requeuable(history)}
    may_run_again = any((t.job_id, t.array_task_id) in again for t in tasks)
    finals = [history.final(t) for t in tasks]
    if not tasks or any(f is None or not f.usage for f in finals):
        return None, may_run_again
    return [with_plan(history, t, final_row(t, f, history.log_of(t))) for t, f in zip(tasks, finals) if f is not None], \
        may_run_again


def shown_as_recorded(problem: str) -> str:
    """What every face says when a look for usage or requeues failed: no error (the recorded ends
    stand), but what is shown may be behind; one wording, so the console and the CLIs agree."""
    return f"{problem}; shown as last recorded"


def history_status(history: History, runner: Runner = run_command,
                   problems: list[str] | None = None, unknown: list[str] | None = None,
                   knows_none: set[str] | None = None) -> list[TaskRow]:
    """The latest outcome of every value across attempts, with what each task used (`history_look`)."""
    return history_rows(history, *history_look(history, runner, problems, unknown, knows_none))


@dataclass(frozen=True)
class SlurmAsks:
    """What `history_look` asks Slurm about a history's tasks."""

    pending: list[TaskRecord]        # each value's newest Slurm task without a final state in the ledger
    superseded: list[TaskRecord]     # tasks of earlier attempts without one: a later attempt ran them again
    missing: dict[Key, tuple[TaskRecord, Mapping | None]]   # ended tasks whose usage the ledger lacks
    again: list[TaskRecord]          # ended tasks the controller may have queued again (`requeuable`)

    def __bool__(self) -> bool:
        return bool(self.pending or self.superseded or self.missing or self.again)

    @property
    def tasks(self) -> list[TaskRecord]:
        """Every task asked about, each once per list it is in."""
        return [*self.pending, *self.superseded, *(task for task, _ in self.missing.values()), *self.again]


def slurm_asks(history: History) -> SlurmAsks:
    """The tasks `history_look` asks Slurm about (`SlurmAsks`): none at all when the ledger holds an
    end, and its usage, of every Slurm task of every attempt and no end may have been queued again."""
    pending = [t for t in pending_tasks(history) if t.job_id != LOCAL_JOB]
    newest = {(t.job_id, t.array_task_id) for t in pending}
    superseded = [t for t in unended_tasks(history) if (t.job_id, t.array_task_id) not in newest]
    again = requeuable(history)
    return SlurmAsks(pending, superseded, usage_missing(history), again)


def asks_slurm(history: History) -> bool:
    """Whether `history_status` would ask Slurm anything about `history` (`slurm_asks`): a caller that
    spends a budget of Slurm queries (the console's) spends none on a history that asks nothing."""
    return bool(slurm_asks(history))


def history_look(history: History, runner: Runner = run_command, problems: list[str] | None = None,
                 unknown: list[str] | None = None,
                 knows_none: set[str] | None = None) -> tuple[dict[Key, TaskState], dict[Key, Usage] | None]:
    """What Slurm says of `history`'s tasks, and the usage to show, for `history_rows`.

    Only tasks without a final state in the ledger are asked about (of every
    attempt: one a later attempt ran again before anyone saw it end too), ended tasks
    whose usage the ledger does not hold yet, and ended tasks the controller may
    have queued again (`requeuable`): one sacct, plus one squeue when a task may
    still be live (one squeue alone when only a requeue may be news); the final
    states and usage Slurm reports are written into the ledger on the way.
    A query about only usage, requeues or superseded tasks that fails leaves the ledger's states
    standing; its message is added to `problems`, for the caller to say so.

    A query about tasks without a recorded end that fails raises QueryError, unless `unknown` is
    given (`status`, which shows what it can): then the rows are what did answer (accounting's
    word while squeue fails, as a watch shows it; UNKNOWN where nothing answered, or answered
    with no row: `query_what_answers`), and one line saying which query failed and how many
    tasks it leaves stale or not known is added to `unknown`. `status` with squeue hung printed
    nothing for 30 s and exited 1 without its table, though the ledger held most ends.

    With `unknown`, when both sources answered: the jobs asked about that Slurm knows none of
    (`unnamed_jobs`, as `watch RECORD` decides it: purged from accounting, another cluster's) are
    added to `knows_none`, so that no usage is promised of them (of a record whose tasks all ended,
    a job whose ends lack usage accounting names nothing of is looked at: `jobs_slurm_knows_none`),
    and when some of the tasks without a recorded end are theirs (UNKNOWN), `watch`'s line saying
    so (`knows_none_line`) is added to `unknown` as a Settled line: `status` showed them UNKNOWN
    with no word why.
    """
    asks = slurm_asks(history)
    if not asks:
        return {}, None
    from backends.watch.slurm.accounting import failed_text

    pending, superseded, missing, again = asks.pending, asks.superseded, asks.missing, asks.again
    asked = [*pending, *superseded, *(task for task, _ in missing.values())]
    parts: list[tuple[frozenset[Key], Snapshot]] = []
    failed: Failed = []
    forgotten: list[frozenset[str]] = []
    for cluster, group in split_asks(history, asks).items():
        try:
            told, group_failed, gone = _ask_cluster(group, for_cluster(runner, cluster), unknown is not None,
                                                    knows_none)
        except QueryError as err:
            if group.pending:
                raise
            if problems is not None:
                problems.append(str(err))
            continue   # only usage, requeues or superseded tasks were asked about: the ledger's states stand
        parts.append((task_keys(group.tasks), told))
        failed.extend(group_failed)
        forgotten.append(gone)
    if not parts:
        return {}, None
    answer = merged_answers(parts)
    states = told_states(answer, [history])
    rerun = reopened(history, again, states)
    keys = {(t.job_id, t.array_task_id) for t in rerun}
    ended = {key: told for key, told in missing.items() if key not in keys}   # a new run's usage is not the first's
    recorder = FinalsRecorder(history.record_path, [*pending, *superseded, *rerun], ended, since=history.ledger.size)
    recorder.observe(states.values(), answer.usage)
    if gone_keys := forgotten_keys(parts, forgotten):
        # slurmdbd missed their end: not RUNNING, as `status` says (a retry was refused for ever as live)
        states = without_unended(states, gone_keys)
    if pending and unknown is not None and not failed:
        say_unknown_jobs(unnamed_jobs(answer, {t.job_id for t in asked}), history, pending, states, unknown, knows_none)
    if failed:
        # counted after this look's own recordings: the first `status` after a cancel said "of the 3
        # task(s) with no recorded end" of tasks it had just recorded CANCELLED (unless the write failed)
        unended = pending if recorder.error is not None else [
            t for t in pending if not _terminal(states.get((t.job_id, t.array_task_id)))]
        line = unanswered_line(failed, unended, states)
        if line is None:
            if problems is not None:
                problems.append(failed_text(failed))
        elif unknown is not None:
            unknown.append(settled(failed, line))
    return states, answer.shown_usage()


def split_asks(history: History, asks: SlurmAsks) -> dict[str | None, SlurmAsks]:
    """`asks` by the cluster each task's attempt queued it on (`History.cluster_of`), the newest
    attempt's cluster last (`by_cluster`): one entry, `asks` itself, when all are on one."""
    order = by_cluster(asks.tasks, history.cluster_of)
    if len(order) <= 1:
        return {cluster: asks for cluster in order}

    def of(cluster: str | None, tasks: Iterable[TaskRecord]) -> list[TaskRecord]:
        return [task for task in tasks if history.cluster_of(task) == cluster]

    return {cluster: SlurmAsks(of(cluster, asks.pending), of(cluster, asks.superseded),
                               {key: told for key, told in asks.missing.items()
                                if history.cluster_of(told[0]) == cluster}, of(cluster, asks.again))
            for cluster in order}


def _ask_cluster(asks: SlurmAsks, runner: Runner, unknown: bool,
                 knows_none: set[str] | None) -> tuple[Snapshot, Failed, frozenset[str]]:
    """`history_look`'s questions about one cluster's tasks, asked with `runner` (which asks that
    cluster): the answer, what gave nothing to take (with `unknown`: `query_what_answers`), and the
    jobs the controller forgot (`forgotten_jobs`, of `query`'s answer, which takes accounting's word
    for them). QueryError when a query fails (without `unknown`, or of tasks without an end)."""
    from backends.watch.slurm.accounting import Snapshot, forgotten_jobs, query, query_what_answers

    pending, superseded, missing, again = asks.pending, asks.superseded, asks.missing, asks.again
    asked = [*pending, *superseded, *(task for task, _ in missing.values())]
    if asked and pending and unknown:
        answer, failed = query_what_answers(list(expected_tasks(asked)), runner,
                                            controller_also=list(expected_tasks(again)))
        return answer, failed, frozenset()
    if not asked:
        return Snapshot(controller_states(again, runner), {}), [], frozenset()
    answer = query(list(expected_tasks([*asked, *again])), runner, controller=bool(pending or superseded or again))
    if knows_none is not None and missing:
        # all ended: accounting naming none of a job whose ends lack usage, the look that tells
        # whether Slurm knows it at all (both sources), for that job alone: `status` of a record
        # accounting purged promised its usage on every run, for ever
        unnamed = unnamed_jobs(answer, {task.job_id for task, _ in missing.values()})
        if unnamed:     # accounting, asked just now, had no row of them: the controller alone is asked
            knows_none.update(jobs_slurm_knows_none(sorted(unnamed), runner, unaccounted=True))
    return answer, [], forgotten_jobs(answer, runner)


def _terminal(state: TaskState | None) -> bool:
    return state is not None and state.state.is_terminal


def _are(count: int) -> str:
    return "is" if count == 1 else "are"


def unanswered_line(failed: Failed, pending: Sequence[TaskRecord], states: dict[Key, TaskState]) -> str | None:
    """What a failed look leaves of the tasks without a recorded end: `failed`'s words, then how many
    are shown as accounting has them while the controller did not answer (stale, maybe), and how
    many not known (UNKNOWN). None when every one of them is known to have ended (accounting's
    ends stand, as the ledger's do: only a requeue could be missed, `shown_as_recorded`). A task
    the controller did answer about is not stale: an empty answer about an earlier attempt's job
    left the newest tasks, which squeue listed running, "shown as accounting has them". `status`'s
    line, and `list`'s of all its records' tasks."""
    from backends.watch.slurm.accounting import LABELS, failed_text

    controller_failed = any(source == "squeue" and err.kind not in ("empty", "forgotten") for source, err in failed)
    unlisted = {job for source, err in failed if source == "squeue" for job in err.jobs}
    stale = unknown = 0
    for task in pending:
        state = states.get((task.job_id, task.array_task_id))
        controller_said = not controller_failed and task.job_id not in unlisted
        if state is None:
            unknown += 1
        elif not state.state.is_terminal and not (controller_said and state.source == "squeue"):
            stale += 1
    if not stale and not unknown:
        return None
    shown = f"shown as {LABELS['sacct']} has them, which may be behind"
    if stale == len(pending) or unknown == len(pending):
        left = shown if stale else "not known (UNKNOWN)"
        return f"{failed_text(failed)}; the {len(pending)} task(s) with no recorded end are {left}"
    said = ([f"{stale} {_are(stale)} {shown}"] if stale else []) + \
        ([f"{unknown} {_are(unknown)} not known (UNKNOWN)"] if unknown else [])
    return f"{failed_text(failed)}; of the {len(pending)} task(s) with no recorded end, {', and '.join(said)}"


def histories_states(histories: Sequence[History], runner: Runner = run_command,
                     failed: Failed | None = None, knows_none: set[str] | None = None) -> dict[Key, TaskState]:
    """What Slurm says of several records' tasks, for `list`: one sacct and one squeue for the jobs
    with a task without a final state, and the jobs of ended tasks the controller may have queued
    again (`requeuable`) added to that squeue, or asked in one squeue alone when nothing else is.

    QueryError when the tasks without a final state cannot be asked about, unless `failed` is given:
    then what answered (`query_what_answers`), each query that gave nothing to take added to
    `failed` (an empty answer too). A look for requeues alone that fails leaves the recorded ends
    standing, as in `history_status`, and is added to `failed` too: `list` waited 30 s for it and
    30 s more for its `squeue -u`, then blamed only that.
    `knows_none` (with `failed`): the jobs asked about that Slurm, both sources answering, names
    nothing of (`unnamed_jobs`), for `list` to say so (`knows_none_lines`), as `status RECORD` does.
    """
    asked = by_cluster([*((h, t, True) for h in histories for t in pending_tasks(h) if t.job_id != LOCAL_JOB),
                        *((h, t, False) for h in histories for t in requeuable(h))],
                       lambda item: item[0].cluster_of(item[1]), lambda item: item[1].attempt)
    parts: list[tuple[frozenset[Key], Snapshot]] = []
    for cluster, group in asked.items():     # records (or attempts) of several clusters: each asks its own
        pending = sorted({task.job_id for _, task, unended in group if unended})
        again = [task for _, task, unended in group if not unended]
        answer = _cluster_states(pending, again, for_cluster(runner, cluster), failed, knows_none)
        if answer is not None:
            parts.append((task_keys(task for _, task, _ in group), answer))
    return told_states(merged_answers(parts), histories) if parts else {}


def _cluster_states(pending: list[str], again: list[TaskRecord], runner: Runner,
                    failed: Failed | None, knows_none: set[str] | None = None) -> Snapshot | None:
    """`histories_states`'s look at one cluster (`runner` asks it): its jobs with a task without a
    final state (`pending`) and its ended tasks that may have been queued again; None when only
    those were asked about and squeue failed (added to `failed`). The jobs of `pending` both
    sources answered with no row of are added to `knows_none`."""
    from backends.watch.slurm.accounting import Snapshot, query, query_what_answers

    if pending:
        if failed is None:
            return query(pending, runner, controller_also=list(expected_tasks(again)))
        answer, told = query_what_answers(pending, runner, controller_also=list(expected_tasks(again)))
        failed.extend(told)
        if knows_none is not None and not told:
            knows_none.update(unnamed_jobs(answer, pending))
        return answer
    try:
        return Snapshot(controller_states(again, runner), {})
    except QueryError as err:     # the recorded ends stand; said, and a hung squeue not asked again
        if failed is not None:
            failed.append(("squeue", err))
        return None


def knows_none_lines(histories: Sequence[History], states: Mapping[Key, TaskState], gone: Iterable[str]) -> list[str]:
    """`status RECORD`'s line (`knows_none_line`) of each record whose tasks without a recorded end wait
    in jobs Slurm knows nothing of (`gone`): `list` showed `UNKNOWN 3` with no word why."""
    lines: list[str] = []
    for history in histories:
        pending = [t for t in pending_tasks(history) if t.job_id != LOCAL_JOB]
        say_unknown_jobs(gone, history, pending, states, lines, None)
    return lines


def controller_states(tasks: Sequence[TaskRecord], runner: Runner = run_command) -> dict[Key, TaskState]:
    """One squeue alone about the jobs of `tasks`: whether Slurm queued an ended task again is the
    controller's word only (its restart count), so accounting is not asked."""
    from backends.watch.slurm.accounting import run_squeue

    return {state.key: state for state in run_squeue(list(expected_tasks(tasks)), runner)}


def fill_missing_usage(history: History, runner: Runner = run_command) -> dict[Key, Usage]:
    """What ended tasks used, for those whose usage the ledger lacks (`usage_missing`): one sacct per
    cluster their attempts ran on (`by_cluster`), written into the ledger as `history_status` writes
    it. {} when nothing is missing."""
    missing = usage_missing(history)
    if not missing:
        return {}
    from backends.watch.slurm.accounting import query

    tasks = [task for task, _ in missing.values()]
    answer = merged_answers([(task_keys(group), query(list(expected_tasks(group)), for_cluster(runner, cluster),
                                                      controller=False))
                             for cluster, group in by_cluster(tasks, history.cluster_of).items()])
    FinalsRecorder(history.record_path, [], missing).observe((), answer.usage)
    return {key: used for key, used in answer.usage.items() if key in missing}


@dataclass(frozen=True)
class TaskLogs:
    """The files a task writes: its program log and Slurm's own .out/.err in q/."""

    name: str                  # what the user asked for, for messages
    log: str | None
    slurm_out: str | None
    slurm_err: str | None
    ended: str | None = None   # the final state the ledger holds: a log not there now never comes
    # a task its attempt never ran (NOT_RUN) that an earlier one did: (its attempt, the earlier one, its end)
    ran_before: tuple[int, int, str] | None = None
    # whose end `logs -f` waits for: the task and its submission when a record has it, else Slurm's key
    history: History | None = None
    task: TaskRecord | None = None
    key: Key | None = None


def _pick_task(tasks: Sequence[TaskRecord], text: str, value: int | None, where: str) -> TaskRecord:
    if value is None:
        if len(tasks) != 1:
            raise InputError("TASK", f"{text} has {len(tasks)} tasks; add :VALUE (e.g. {text}:"
                             f"{next((t.value for t in tasks if t.value is not None), 1)})")
        return tasks[0]
    for task in tasks:
        if task.value == value:
            return task
    raise InputError("TASK", f"{where} has no task with value {value}")


def task_logs(text: str, dirs: Sequence[Path] = (Path("."),),
              runner: Runner = run_command, attempt: int | None = None,
              unlisted: Unlisted | None = None, cluster: str | None = None) -> TaskLogs:
    """Logs of ``JOB_TASK``, ``JOB``, ``RECORD`` or ``RECORD:VALUE`` (VALUE: the logical NAME).

    For a record, the task of the newest attempt that ran VALUE, or of attempt
    `attempt`; a log a later rerun moved aside is read where it was moved.
    `cluster`: the one a job id no record names is asked of (-M; None: the local one).
    """
    match = _job_match(text, "TASK")
    if match:
        if attempt is not None:
            raise InputError("--attempt", "a job id names its attempt already; use RECORD:VALUE --attempt N")
        return _job_task_logs(text, match.group(1), match.group(2), dirs, runner, unlisted, cluster)
    path_text, value = _record_value(text)
    path = record_file(path_text)
    if path is None:
        _refuse_local_id(text, "TASK")
        raise InputError("TASK", f"{text!r} is not JOB_TASK, JOB, RECORD or RECORD:VALUE")
    history = load_history(load_record(path).path)
    if attempt is None:
        tasks, where = history.latest_tasks(), history.record_path
    elif attempt in history.records:
        tasks, where = history.tasks_of(attempt), f"attempt {attempt} of {history.record_path}"
    else:
        raise InputError("--attempt", f"{history.record_path} has attempts {_numbers(history)}, not {attempt}")
    if attempt is not None and value is not None and not any(t.value == value for t in tasks):
        raise InputError("TASK", _not_in_attempt(history, attempt, value))
    task = _pick_task(tasks, text, value, where)
    log = history.log_of(task)
    if log is None and task.slurm_out is None:
        now = f"{task.log} is a later attempt's" if os.path.lexists(task.log) else f"nothing is at {task.log}"
        raise InputError("TASK", f"{text} did not run in {where}: it left no log ({now})")
    ended = _ended(history, task)
    before = _ran_before(history, task) if ended == "NOT_RUN" else None
    return TaskLogs(text, log, task.slurm_out, task.slurm_err, ended, before, history, task,
                    (task.job_id, task.array_task_id))


def _not_in_attempt(history: History, attempt: int, value: int) -> str:
    """Why `--attempt N` has no log of VALUE: the values N ran (a retry reruns a few), and the
    attempts whose `--attempt` shows one, so the user's next command is not a guess."""
    ran = [n for n in history.numbers if any(t.value == value for t in history.tasks_of(n))]
    text = (f"attempt {attempt} of {history.record_path} has no task with value {value} "
            f"(its values: {compress(t.value for t in history.tasks_of(attempt) if t.value is not None) or 'none'})")
    if not ran:
        return text
    return f"{text}; value {value} ran in attempt(s) {', '.join(map(str, ran))}: --attempt {ran[-1]} shows the newest"


def _ran_before(history: History, task: TaskRecord) -> tuple[int, int, str] | None:
    earlier = earlier_run(history, task)
    return None if earlier is None else (task.attempt, *earlier)


def earlier_run(history: History, task: TaskRecord) -> tuple[int, str] | None:
    """The newest attempt before `task`'s that ran its value, and how that run ended: a rerun that
    stopped early leaves the value NOT_RUN, while the log of the run before is kept."""
    for number in sorted((n for n in history.numbers if n < task.attempt), reverse=True):
        earlier = next((t for t in history.tasks_of(number) if t.value == task.value), None)
        if earlier is None:
            continue
        final = history.final(earlier)
        state = final.state if final is not None else task_row(history, earlier, {}).state_label
        if state not in ("NOT_RUN", "UNKNOWN", "PENDING") and history.log_of(earlier) is not None:
            return number, state
    return None


def not_run_text(history: History, task: TaskRecord) -> str:
    """Why a local task its ended run never reached has no log, and which attempt ran it before."""
    text = f"not run in attempt {task.attempt} (its local run ended first)"
    earlier = earlier_run(history, task)
    return text if earlier is None else f"{text}; attempt {earlier[0]} ran it ({earlier[1]})"


def left_no_log(ended: str, path: str, program_log: str | None = None) -> str:
    """``ended CANCELLED and left no log: PATH does not exist``: why a task that ended has no log to
    read (cancelled while pending, it never started). `program_log`: the task's own log path, which
    a later attempt wrote, when `path` is Slurm's file read in its place. `logs` says it after the
    task's name, the console's log pane in its title: one wording for both."""
    where = (f"{program_log} is a later attempt's, and Slurm's {path} does not exist" if program_log
             else f"{path} does not exist")
    return f"ended {ended} and left no log: {where}"


def no_log_reason(history: History, task: TaskRecord, ended: str | None = None) -> str | None:
    """What `hyperion-jobs logs RECORD:VALUE --attempt N` says of one attempt's task that left no log
    (`task` as the record holds it, `ended` its state when the ledger has none yet); None when
    there is a file to read, or the task may still write it. The console's log pane showed
    `none for this task` of a value a later attempt reran after it was cancelled while pending."""
    log = history.log_of(task)
    path = log or task.slurm_out
    ended = _ended(history, task) or ended
    if path is None:
        now = f"{task.log} is a later attempt's" if os.path.lexists(task.log) else f"nothing is at {task.log}"
        return f"did not run in attempt {task.attempt}: it left no log ({now})"
    if ended is None or ended == "NOT_RUN" or os.path.lexists(path):
        return None
    return left_no_log(ended, path, task.log if log is None else None)


def _ended(history: History, task: TaskRecord) -> str | None:
    """The state of a task that will write no more of its log: the ledger's final state, or a local
    task's run that ended before reaching it (NOT_RUN) or whose runner died with it (LOST), which
    `logs -f` waited for for ever."""
    final = history.final(task)
    if final is not None:
        return final.state
    if task.job_id == LOCAL_JOB:
        label = task_row(history, task, {}).state_label
        return label if label in ("NOT_RUN", "LOST") else None
    return None


def _numbers(history: History) -> str:
    return ", ".join(map(str, history.numbers))


def _job_task_logs(text: str, job: str, task_text: str | None, dirs: Sequence[Path],
                   runner: Runner, unlisted: Unlisted | None = None, cluster: str | None = None) -> TaskLogs:
    asked = Target(None, job, int(task_text) if task_text is not None else None)
    runner = for_cluster(runner, cluster)
    target, history = job_history(asked, dirs, runner, unlisted)
    if target != asked:       # an array task's own job id (its SLURM_JOB_ID): read as ARRAY_TASK
        text = f"{target.job_id}_{target.task_id}"
    job, task_id = str(target.job_id), target.task_id
    if history is not None:
        ran = history.tasks_of_job(job)
        for task in ran:
            if task.array_task_id == task_id:
                return TaskLogs(text, history.log_of(task), task.slurm_out, task.slurm_err,
                                _ended(history, task), history=history, task=task, key=(job, task_id))
        if task_id is None:
            raise InputError("TASK", f"job {job} is an array; name one task, e.g. {job}_"
                                     f"{next((t.array_task_id for t in ran), 1)}")
        raise InputError("TASK", f"{history.record_path} has no task {text}")
    from backends.watch.slurm.accounting import job_std_paths

    files = job_std_paths(text, runner)
    out, err = files.out, files.err
    if task_id is None and files.array_task is not None:
        raise InputError("TASK", f"job {job} is an array; name one task, e.g. {job}_{files.array_task}")
    if out is None and err is None:
        # as status and watch say it: the job may be one that never was (a mistyped id), not one purged
        raise InputError("TASK", f"no record under {', '.join(map(str, dirs))} and Slurm knows no job "
                                 f"{text} (scontrol on {cluster_words(cluster)}); name the record instead "
                                 f"(RECORD:VALUE){'' if cluster else ' or another cluster (-M NAME)'}")
    return TaskLogs(text, None, out, err, key=(job, task_id))
