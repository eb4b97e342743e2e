"""hyperion-jobs list, status, cancel and logs."""
from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from backends import jsontext
from backends.cluster import cluster_words, for_cluster
from backends.cli.jobs.clusters import asked_cluster, check_history_cluster
from backends.cli.jobs.parser import PROG
from backends.cli.jobs.table import columns, counts_text, failure_line, fmt_elapsed, status_table, tasks_text
from backends.errors import InputError
from backends.fileio import kind_of_mode
from backends.printable import printable
from backends.records.history import History, load_history, totals
from backends.records.record import LOCAL_JOB, SubmitRecord, find_records
from backends.watch.rows import (
    Key,
    TaskRow,
    exit_status,
    history_rows,
    local_cancel_text,
    pending_tasks,
    state_counts,
    usage_missing,
)
from backends.watch.slurm.runner import QueryError, Runner, run_command
from backends.watch.slurm.cancel import CancelError, cancel, job_owners, others_jobs, whose
from backends.watch.targets import (
    left_no_log,
    attempt_record,
    current_user,
    histories_states,
    history_for_job,
    history_status,
    job_history,
    job_status,
    knows_none_line,
    knows_none_lines,
    later_run_text,
    rerun_later,
    resolve,
    Settled,
    Target,
    shown_as_recorded,
    task_logs,
    unanswered_line,
)
from backends.shellwords import shell_quote

# Slurm's answers (sacct and squeue, `backends.watch.slurm.accounting`) are imported where a command
# asks Slurm: `status` of a local record asks nothing and loads none of it.
TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (as backends.client)
if TYPE_CHECKING:
    from backends.watch.slurm.accounting import Failed, Told


NOT_SUBMITTED = "NOT_SUBMITTED"   # the count of values no attempt submitted (as `retry`'s plan names them)


def check_dirs(field: str, dirs: Sequence[str | Path]) -> None:
    """Each directory (or record) named on the command line must be there: a symlink loop made the
    record search trace back, a typo found nothing without saying why."""
    for d in dirs:
        try:
            mode = os.stat(d).st_mode
        except OSError as err:
            problem = {errno.ENOENT: "does not exist", errno.ELOOP: "a symlink loop"}.get(
                err.errno, f"cannot be read ({err.strerror or err})")
            raise InputError(field, f"{d}: {problem}") from None
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):    # a FIFO, /dev/zero: "no records" hid the typo
            raise InputError(field, f"{d}: not a directory or a record but {kind_of_mode(mode)}")


def record_dirs(args: argparse.Namespace) -> list[Path]:
    check_dirs("--dir", args.dir or ())
    return args.dir or [Path(".")]


def say_shown_as_recorded(problems: Sequence[str]) -> None:
    """A failed look for usage or requeues is no error (the recorded ends stand), but the user is
    told that what follows may be behind: it said nothing, and `usage` showed "0 of N" as if known."""
    for problem in problems:
        print(printable(f"{PROG}: {shown_as_recorded(problem)}"), file=sys.stderr)


def say_history_problems(history: History | None) -> None:
    """What of the history could not be read (an archived record, damaged ledger lines): the states
    shown may be wrong where it spoke, and a retry may rerun work that was done. Said nowhere but
    `history` before, while `status` showed a completed task as never run and `retry` planned it."""
    for problem in history.problems if history is not None else ():
        print(printable(f"{PROG}: warning: {problem}"), file=sys.stderr)


def cmd_status(args: argparse.Namespace) -> int:
    asked = asked_cluster(args)
    target = resolve(args.target)
    problems: list[str] = []
    history = load_history(target.record.path, target.record) if target.record is not None else None
    if history is not None:
        check_history_cluster(history, asked)
    say_history_problems(history)
    unknown: list[str] = []   # a failed look at tasks without a recorded end: what it left not known
    job_of = None       # a job target's submission
    knows_none: set[str] = set()   # jobs Slurm, answering, knows nothing of: no usage will come of them
    with told_unlisted() as unlisted:
        if history is not None:
            awaited = set(usage_missing(history))     # before the look: what it asks accounting for
            rows = history_status(history, problems=problems, unknown=unknown, knows_none=knows_none)
        else:
            looked: list[Told] = []    # the look at whether J is an array task's own id, taken again
            found, job_of = job_history(target, record_dirs(args), for_cluster(run_command, asked),
                                        unlisted=unlisted, looked=looked)
            if job_of is not None:
                check_history_cluster(job_of, asked, [str(found.job_id)])
            say_history_problems(job_of)
            awaited = set(usage_missing(job_of)) if job_of is not None else set()
            # a record's jobs are asked of its own cluster (`job_status`), the same one -M named
            rows = job_status(found, job_of, for_cluster(run_command, asked if job_of is None else None),
                              unknown=unknown, looked=looked, knows_none=knows_none)
    say_shown_as_recorded(problems)
    if not rows:
        if unknown:
            raise QueryError(unknown[0])
        raise InputError("JOB", no_job_text(args.target, attempt_record(job_of, str(found.job_id)).cluster
                                            if job_of is not None else asked,
                                            hint=job_of is None and asked is None))
    say_rerun_later(job_of, rows)
    # exit 1 with the table, as `Slurm not answering` is everywhere: the states shown are not all known
    # (not for tasks of a job the controller forgot while accounting has it running: no look will tell more)
    done = 1 if any(not isinstance(line, Settled) for line in unknown) else 0
    for line in unknown:
        print(printable(f"{PROG}: {line}"), file=sys.stderr)
    unsubmitted = list(history.unsubmitted()[0]) if history is not None else []
    if args.failures:
        _print_failures(args, rows)
        _say_unsubmitted(history)    # what never went in is no failure group, but the run is not whole
        return done
    if args.json:
        # at least 1 while values are left out: the status `watch` exits with for the same record
        status_code = max(exit_status(rows), 1) if unsubmitted or unknown else exit_status(rows)
        print(jsontext.dumps({"target": args.target, "exit_status": status_code,
                              "counts": state_counts(rows), "tasks": [r.to_json() for r in rows],
                              **({"unsubmitted": unsubmitted} if unsubmitted else {}),
                              **({"error": "; ".join(unknown)} if unknown else {})}, indent=2))
    else:
        print(columns(status_table(rows)))
        print(tasks_text(rows))
        if history is not None:
            _say_held(history.current, rows)
        else:
            _say_held(_whole_job_record(found, job_of), rows, jobs=(found.job_id,))
        # accounting that did not answer was said already (a Settled line: Slurm did answer)
        if not problems and all(isinstance(line, Settled) for line in unknown):
            _say_unmeasured(rows, knows_none, awaited)
    _say_unsubmitted(history)
    return done


def no_job_text(job: str, cluster: str | None, hint: bool = False) -> str:
    """``Slurm knows no job J: neither squeue nor accounting (sacct) on the local cluster has it``:
    both answered and named nothing of J. Which cluster was asked is said, and (`hint`, a job id no
    record names and no -M) how to ask another: a job sent elsewhere read as one that never was."""
    told = f"Slurm knows no job {job}: {neither_has(cluster)}"
    return f"{told} (another cluster's job: -M NAME)" if hint else told


def neither_has(cluster: str | None, jobs: int = 1) -> str:
    """Which cluster's squeue and sacct, both answering, named nothing of the job(s) asked about."""
    return f"neither squeue nor accounting (sacct) on {cluster_words(cluster)} has {'it' if jobs == 1 else 'them'}"


def _whole_job_record(target: Target, history: History | None) -> SubmitRecord | None:
    """The attempt that submitted a whole job asked for by id (`status 4711`), for its held line (of
    that job's windows alone). None for one task (`4711_7`): not all its job has left."""
    if history is None or target.task_id is not None or target.job_id is None:
        return None
    record = attempt_record(history, target.job_id)
    return record if any(j.job_id == target.job_id for j in record.jobs) else None


def _say_held(record: SubmitRecord | None, rows: Sequence[TaskRow], jobs: Sequence[str] | None = None) -> None:
    """`3 tasks held by you (scontrol release J)` when a hold is all that is left to run: the
    table's `PENDING (JobHeldUser)` did not say that nothing else will move them. Of a record and
    of a job asked for by id alike (`status 4711` said nothing of the hold `status RECORD` named):
    `jobs`, the windows asked about (`held_line`'s)."""
    if record is None or record.backend != "slurm":
        return                # the hold's module loads the scontrol and slot machinery: a Slurm record's only
    from backends.watch.throttle import held_line

    line = held_line(record, {(row.job_id, row.task_id): row for row in rows}, jobs)
    if line:
        print(printable(line))


def _say_unmeasured(rows: Sequence[TaskRow], knows_none: set[str] | frozenset[str] = frozenset(),
                    awaited: Collection[Key] = frozenset()) -> None:
    """Ended Slurm tasks whose usage accounting has not given yet: right after a run the memory, CPU
    and time columns were left out (or showed `-`) without a word, as if nothing were measured.
    Not those of a job Slurm knows nothing of (`knows_none`: purged from accounting, another
    cluster's), whose usage never comes: `status` promised it on every run, for ever. A task
    accounting told only its request and time of (its allocation row, the steps' MaxRSS not in yet)
    counts too while the next status asks for its peak (`awaited`, `usage_missing`'s keys): its
    `-/100M` was said by no word either."""
    unmeasured = sum(1 for row in rows if row.job_id != LOCAL_JOB and row.job_id not in knows_none
                     and row.state is not None and row.state.is_terminal
                     and row.elapsed is not None     # one that never started (cancelled while pending) has none
                     and (row.usage is None or ((row.job_id, row.task_id) in awaited
                                                and row.usage.max_rss_bytes is None)))
    if unmeasured:
        print(f"{PROG}: Slurm's accounting has not given the usage of {unmeasured} ended task(s) yet "
              "(memory, CPU and time used are shown once it has); the next status asks again", file=sys.stderr)


def say_rerun_later(history: History | None, rows: Sequence[TaskRow]) -> None:
    """Of a job whose failed tasks a later attempt ran again: so, which attempt ran which values, and
    how they ended (the record's status shows each value's newest run)."""
    runs = rerun_later(history, rows)
    if not runs:
        return
    assert history is not None
    again = sum(len(run.values) for run in runs)
    tasks = "1 of these tasks was" if again == 1 else f"{again} of these tasks were"
    print(printable(f"{PROG}: {tasks} submitted again: "
                    f"{', '.join(later_run_text(run) for run in runs)}; "
                    f"hyperion-jobs status {shell_quote(history.record_path)} shows every value's newest run"),
          file=sys.stderr)


def _say_unsubmitted(history: History | None) -> None:
    """A record sbatch refused a later window of: its tasks are not all that was asked for."""
    if history is None or not history.unsubmitted()[0]:
        return                # the wording's module loads the submit model (and yaml): only when needed
    from backends.retry_hint import unsubmitted_line

    line = unsubmitted_line(history)
    if line:
        print(f"{PROG}: {line}", file=sys.stderr)


def _print_failures(args: argparse.Namespace, rows: Sequence[TaskRow]) -> int:
    from backends.watch.triage import failure_groups, failures_summary, group_ends  # reads logs: only for --failures

    groups = failure_groups(rows)
    failed = sum(group.count for group in groups)
    if args.json:      # "failed" stays every task that did not succeed; "ends" says how each ended
        print(jsontext.dumps({"target": args.target, "failed": failed, "tasks": len(rows),
                              "ends": group_ends(groups), "groups": [g.to_json() for g in groups]}, indent=2))
        return 0
    if not groups:      # the console's words: "COMPLETED 3, RUNNING 1" left the user to add them up
        print(failures_summary(groups, len(rows)))
        return 0
    print(printable(f"{failures_summary(groups, len(rows))}:"))
    for group in groups:
        print(printable(failure_line(group)))
    return 0


UNLISTED_NAMED = 5   # folders named when many cannot be listed (`list /tmp`: others' private folders)


def say_unlisted(unlisted: Sequence[tuple[str, str]]) -> None:
    """Name the folders a search for records could not list (a teammate's q/ under umask 077): the
    records in them are missing from what follows, and saying nothing hid why."""
    for folder, reason in unlisted[:UNLISTED_NAMED]:
        print(printable(f"{PROG}: cannot list {folder} ({reason}); records in it are not shown"), file=sys.stderr)
    if len(unlisted) > UNLISTED_NAMED:
        print(f"{PROG}: and {len(unlisted) - UNLISTED_NAMED} more folders that cannot be listed", file=sys.stderr)


@contextmanager
def told_unlisted() -> Iterator[list[tuple[str, str]]]:
    """A list for a search under --dir to add the folders it could not list to, named on the way
    out, an error's way too (`status JOB --dir DIR` then says "Slurm knows no job")."""
    unlisted: list[tuple[str, str]] = []
    try:
        yield unlisted
    finally:
        say_unlisted(unlisted)


def cmd_list(args: argparse.Namespace) -> int:
    if args.limit <= 0:
        raise InputError("--limit", "must be positive")
    check_dirs("DIR", args.dirs)
    histories = []
    unlisted: list[tuple[str, str]] = []
    for path in find_records([Path(d) for d in args.dirs], unlisted=unlisted)[: args.limit]:
        try:
            histories.append(load_history(path))
        except InputError as err:
            print(printable(f"{PROG}: skipping {path}: {err.problem}"), file=sys.stderr)
    say_unlisted(unlisted)
    failed: Failed = []
    gone: set[str] = set()        # jobs Slurm, answering, knows nothing of
    states = histories_states(histories, failed=failed, knows_none=gone)
    states_problem = _states_problem(histories, states, failed)
    live, live_problem = _live_jobs(histories, states, failed)
    summaries = [_record_summary(h, states, _doubtful(failed)) for h in histories]
    problem = states_problem or live_problem
    if args.json:
        print(jsontext.dumps({"records": summaries, "live": [
            {"job_id": j.job_id, "state": j.state.value, "elapsed": j.elapsed, "node": j.node,
             "name": j.name, "cluster": j.cluster} for j in live or ()], "error": problem}, indent=2))
        return 0
    if summaries:
        print(columns([("RECORD", "BACKEND", "JOBS", "TASKS", "SUBMITTED", "STATES")] + [
            (s["record"], s["backend"], ",".join(s["jobs"]), str(s["tasks"]), s["submitted_at"],
             s["states"]) for s in summaries]))
    else:
        print(printable(f"no submit records under {' '.join(args.dirs)}"))
    print()
    if live and any(j.cluster for j in live):      # a site file's --clusters: which cluster runs each
        print(columns([("JOBID", "CLUSTER", "STATE", "ELAPSED", "NODE", "NAME")] + [
            (j.job_id, j.cluster or "(local)", j.state.value, fmt_elapsed(j.elapsed), j.node or "-", j.name)
            for j in live]))
    elif live:
        print(columns([("JOBID", "STATE", "ELAPSED", "NODE", "NAME")] + [
            (j.job_id, j.state.value, fmt_elapsed(j.elapsed), j.node or "-", j.name) for j in live]))
    elif live is None:      # "no live Slurm jobs" when squeue did not answer sent users to resubmit
        print(f"live Slurm jobs for {current_user()}: not known")
    else:
        print(f"no live Slurm jobs for {current_user()}")
    problems = dict.fromkeys(p for p in (states_problem, live_problem) if p)
    for problem in [*knows_none_lines(histories, states, gone), *problems]:     # why some tasks are UNKNOWN first
        print(printable(f"{PROG}: {problem}"), file=sys.stderr)
    return 0


def _states_problem(histories: Sequence[History], states, failed: Failed) -> str | None:
    """What a failed look leaves of the records' tasks with no recorded end, in `status`'s words
    (`unanswered_line`: the tasks shown as accounting has them while squeue failed, which may be
    behind, and those not known), or what failed, `shown as last recorded` as `status` says it, when
    no such task is left unknown (accounting has them ended, or only a look for requeues failed)."""
    if not failed:
        return None
    from backends.watch.slurm.accounting import failed_text

    pending = [t for h in histories for t in pending_tasks(h) if t.job_id != LOCAL_JOB]
    return unanswered_line(failed, pending, states) or shown_as_recorded(failed_text(failed))


def _doubtful(failed: Failed) -> frozenset[str] | None:
    """The jobs whose states `list` cannot tell: None (all) while a query failed, else those an
    empty answer named none of (other records' states stand)."""
    if any(err.kind not in ("empty", "forgotten") for _, err in failed):
        return None
    return frozenset(job for _, err in failed if err.kind == "empty" for job in err.jobs)


def _live_jobs(histories: Sequence[History], states, failed: Failed) -> tuple[list | None, str | None]:
    """Your live jobs from `squeue -u`, or None and why not. Not asked when the controller has just
    timed out on the states' squeue (`list` waited 30 s more for it, 61 s in all, to say `not
    known`). An empty answer while jobs of your own records still run or wait (as the states'
    answers say, or they named none of them: `_doubtful`) is no answer either: `list` said "no
    live Slurm jobs" while 6 of them ran (a site wrapper printing nothing, exit 0).

    The local cluster is asked, and each cluster a listed record's jobs were queued on (a site
    file's --clusters, one squeue -M NAME each, its rows labelled with it): asked the local one
    only, a running -M record's jobs were missing and the empty answer was taken for a problem.
    A row the local answer has too (the named cluster is the local one) is kept once. When one
    look fails, the others' rows are shown with why the list may miss some; none then is not known."""
    hung = next((err for source, err in failed if source == "squeue" and err.kind == "timeout"), None)
    if hung is not None:
        return None, None               # said already, in the states' problem
    from backends.watch.slurm.accounting import source_problem, user_jobs

    live: list = []
    errors: list[str] = []
    # only records with a task without a recorded end: an old record of a cluster since gone (or down)
    # made every list say its squeue failed, and "not known" for the live jobs, of jobs long ended
    named = dict.fromkeys(name for h in histories if h.cluster and any(
        t.job_id != LOCAL_JOB for t in pending_tasks(h)) for name in h.cluster.split(","))
    for cluster in (None, *named):
        try:
            rows = user_jobs(current_user(), for_cluster(run_command, cluster))
        except (QueryError, ValueError) as err:
            errors.append(str(err))
            continue
        seen = {(j.job_id, j.state, j.name) for j in live}
        live.extend(replace(j, cluster=cluster) for j in rows if (j.job_id, j.state, j.name) not in seen)
    if errors:
        why = "; ".join(errors)
        return (live, f"{why} (the live jobs listed may miss some)") if live else (None, why)
    if live:
        return live, None
    silent = {job for _, err in failed if err.kind == "empty" for job in err.jobs}
    running = {key[0] for key, state in states.items() if not state.state.is_terminal}
    mine = sorted({t.job_id for h in histories if _owned(h.record_path) for t in pending_tasks(h)
                   if t.job_id != LOCAL_JOB and (t.job_id in running or t.job_id in silent)}, key=int)
    if not mine:
        return live, None
    though = ("Slurm's other answers have them running or waiting" if running.intersection(mine)
              else "their tasks have no recorded end")
    return None, source_problem("squeue", f"squeue -u {current_user()} exited 0 with no row, though {though}",
                                "empty", what=f"job(s) {','.join(mine)}")


def _owned(path: str) -> bool:
    """Whether the record is yours: a teammate's record under a shared folder is of jobs `squeue -u`
    rightly leaves out."""
    try:
        return os.stat(path).st_uid == os.getuid()
    except OSError:
        return False


def _record_summary(history: History, states, doubtful: frozenset[str] | None) -> dict:
    """One line of `list`: the newest outcome of every value, over all attempts; "?" only when Slurm
    did not answer about tasks whose end is not recorded and nothing that did answer has them (the
    recorded ends stand, and accounting's word while squeue fails, as in `status`): `doubtful` the
    jobs of a failed look (None: every job). A record `status` showed with accounting's states during
    a squeue outage was `?` here."""
    record = history.current
    rows = history_rows(history, states)
    known = record.backend == "local" or not any(
        t.job_id != LOCAL_JOB and (doubtful is None or t.job_id in doubtful)
        and (t.job_id, t.array_task_id) not in states for t in pending_tasks(history))
    text = counts_text(rows) if known else "?"
    unsubmitted = history.unsubmitted()[0]
    if unsubmitted:   # values a refused sbatch window left out: its tasks alone read as the whole run
        text = f"{text}, {NOT_SUBMITTED} {len(unsubmitted)}"
    counted = totals(history)       # as the console's record list says them
    return {"record": record.path, "backend": record.backend,
            "jobs": list(counted.jobs), "tasks": counted.tasks, "attempts": counted.attempts,
            "submitted_at": record.submitted_at, "states": text, "counts": state_counts(rows),
            **({"unsubmitted": list(unsubmitted)} if unsubmitted else {})}


def cmd_cancel(args: argparse.Namespace) -> int:
    asked = asked_cluster(args)
    named: dict[str | None, list[tuple[str, list[str]]]] = {}   # per cluster: (what the user typed, its scancel ids)
    for text in args.targets:
        target = resolve(text, "JOB")
        if target.record is not None:
            if target.record.backend != "slurm":
                raise InputError("JOB", local_cancel_text(text, load_history(target.record.path, target.record)))
            ids = [j.job_id for j in target.record.jobs]     # the newest attempt's: on its cluster
            if asked is not None:
                check_history_cluster(load_history(target.record.path, target.record), asked, ids)
            cluster = target.record.cluster if asked is None else asked    # the same cluster, as -M spells it
            named.setdefault(cluster, []).append((text, ids))
        else:
            named.setdefault(_job_cluster(target, asked, record_dirs(args)), []).append((text, [text]))
    groups = [_Cancelling(cluster, for_cluster(run_command, cluster), targets, len(named) > 1)
              for cluster, targets in named.items()]
    said = ", and ".join(group.text for group in groups)
    if not args.yes:
        print(f"Cancel {said}? [y/N] ", end="", flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer not in {"y", "yes"}:
            print("not cancelled")
            return 1
    done: list[str] = []
    for group in groups:
        try:
            cancel(group.ids, group.runner)
        except CancelError as err:    # scancel's "Access/permission denied" does not say whose job it is
            before = f"; cancelled {', and '.join(done)} before it" if done else ""
            raise CancelError(f"{err}{group.owned}{before}") from None
        done.append(group.where(group.ids))
    print(f"cancelled {', and '.join(done)}")
    return 0


def _job_cluster(target: Target, asked: str | None, dirs: Sequence[Path]) -> str | None:
    """The cluster to cancel a job id on: that of the attempt of a record under `dirs` that
    submitted it, as `status J` finds it (checked against -M), else -M's, else the local one. `cancel
    4711` of a record's job on gpu-west asked the local cluster, where `status 4711` found it: "Slurm
    knows no job 4711", or a job 4711 of yours there was the one cancelled."""
    assert target.job_id is not None
    history = history_for_job(target.job_id, dirs)
    if history is None:
        return asked
    check_history_cluster(history, asked, [target.job_id])
    return attempt_record(history, target.job_id).cluster if asked is None else asked


class _Cancelling:
    """The targets `cancel` asks one cluster about (each record's own; the job ids' -M or the local
    one): with one runner for all of them, the job ids of `cancel RECORD J` were asked of the
    record's cluster, and the jobs of records of two clusters of both (scancel -M a,b)."""

    def __init__(self, cluster: str | None, runner: Runner, targets: Sequence[tuple[str, list[str]]],
                 among: bool = False) -> None:
        self.cluster, self.runner, self.among = cluster, runner, among
        self.ids = _live_ids(targets, runner, cluster)
        owners = job_owners(sorted({i.partition("_")[0] for i in self.ids}), runner)
        self.owned = printable(whose(others_jobs(self.ids, owners, os.getuid())))
        self.text = f"{self.where(self.ids)}{self.owned}"

    def where(self, ids: Sequence[str]) -> str:
        """``4711 4712_3``, and ``on cluster NAME`` for a named one (``on the local cluster`` beside
        another cluster's group, `among`)."""
        where = f" on cluster {self.cluster}" if self.cluster else " on the local cluster" if self.among else ""
        return " ".join(ids) + where


def _live_ids(named: Sequence[tuple[str, list[str]]], runner: Runner = run_command,
              cluster: str | None = None) -> list[str]:
    """The scancel ids that still have a task to cancel.

    scancel exits 0 for a job that already ended, so without this check
    ``cancel`` would report "cancelled" for a no-op. A target Slurm does not
    know, or whose every task has ended, is refused before anything is cancelled.
    """
    from backends.watch.slurm.accounting import snapshot

    states = snapshot(sorted({i.partition("_")[0] for _, ids in named for i in ids}), runner)
    live: list[str] = []
    for text, ids in named:
        known = [s for i in ids for s in _states_of(i, states)]
        if not known:     # a record's jobs (`ids`) are named, not the record as if it were a job id
            raise InputError("JOB", _unknown_to_slurm(text, states, cluster) if ids == [text]
                             else f"{knows_none_line(text, ids)}: {neither_has(cluster, len(ids))}; nothing to cancel")
        kept = [i for i in ids if any(not s.state.is_terminal for s in _states_of(i, states))]
        if not kept:
            ended = ", ".join(sorted({s.state.value for s in known}))
            raise InputError("JOB", f"{text} already ended ({ended}); nothing to cancel")
        live.extend(kept)
    return live


def _unknown_to_slurm(text: str, states, cluster: str | None = None) -> str:
    """Why there is nothing to cancel for a target Slurm did not report. A pending array task
    cancelled before Slurm split it off leaves no accounting row: a second `cancel 4711_3` said
    "Slurm knows no job 4711_3" of a task the user had just cancelled. A record under the current
    folder that holds its end says which; else that Slurm knows the job but not that task."""
    job, _, task = text.partition("_")
    if not task or not task.isdigit() or not _states_of(job, states):
        return f"{no_job_text(text, cluster)}; nothing to cancel"
    history = history_for_job(job, [Path(".")])
    final = None
    if history is not None:
        ran = [t for t in history.tasks_of_job(job) if t.array_task_id == int(task)]
        final = next((f for f in map(history.final, ran) if f is not None), None)
    if final is not None:
        return f"{text} already ended ({final.state}); nothing to cancel"
    return (f"Slurm knows job {job} but no task {task} of it (a task cancelled while pending leaves "
            "no accounting record); nothing to cancel")


def _states_of(slurm_id: str, states) -> list:
    job, _, task = slurm_id.partition("_")
    return [s for (j, t), s in states.items() if j == job and (not task or t == int(task))]


def cmd_logs(args: argparse.Namespace) -> int:
    if args.lines < 0:
        raise InputError("-n", "must be zero or more")
    if args.attempt is not None and args.attempt < 1:
        raise InputError("--attempt", f"attempts are numbered from 1, got {args.attempt}")
    asked = asked_cluster(args)
    with told_unlisted() as unlisted:
        logs = task_logs(args.task, record_dirs(args), attempt=args.attempt, unlisted=unlisted, cluster=asked)
    if logs.history is not None:
        # the task read (and followed) ran on its attempt's cluster
        check_history_cluster(logs.history, asked, [logs.task.job_id] if logs.task is not None else [])
    path = logs.slurm_err if args.err else logs.slurm_out if args.out else (logs.log or logs.slurm_out)
    if path is None:
        which = "--err" if args.err else "--out" if args.out else "program"
        if (args.err or args.out) and logs.task is not None and logs.task.job_id == LOCAL_JOB and logs.log:
            raise InputError("TASK", f"no {which} log is known for {args.task}: a local task has no Slurm "
                             f"files, its one log holds stdout and stderr (hyperion-jobs logs {shell_quote(args.task)})")
        raise InputError("TASK", f"no {which} log is known for {args.task}")
    in_place = not (args.err or args.out) and logs.log is None and logs.task is not None    # Slurm's, for its own
    _check_log_file(path, args.task, must_exist=not args.follow or logs.ended is not None, ended=logs.ended,
                    earlier=_earlier_run(logs, args.task), program_log=logs.task.log if in_place else None)
    from backends.cli.jobs import log_output   # the tail readers: only `logs` needs them, not status

    if args.follow:
        from backends.cli.jobs.signals import signals_stop
        from backends.watch.task_end import end_watch   # the Poller: only `logs -f` needs it

        task = logs.task
        record = attempt_record(logs.history, task.job_id) if logs.history and task else None
        # SIGHUP (its tmux pane killed) and SIGTERM end it as Ctrl-C does: the open line ended, the
        # query under way killed with its group, exit 129 / 143 (they killed it where it stood)
        with signals_stop():
            end = end_watch(logs.name, logs.key, logs.history, task, floor=site_floor(record), cluster=asked)
            try:
                return log_output.follow(path, args.lines, args.raw, end=end, name=logs.name)
            finally:
                if end is not None:
                    end.close()      # Ctrl-C or a signal: a query under way is killed (with its group) before we exit
    log_output.print_last(path, args.lines, args.raw)
    if path != logs.log and _empty(path):
        # nothing on stdout and exit 0 read like a command that failed to find the file, or a bug
        # (also without --out: a job no record submitted shows Slurm's stdout file as its log)
        from backends.watch.tail import empty_words    # the words the console's log pane says too

        print(printable(f"{PROG}: {path} is empty ({empty_words(args.task, 'err' if args.err else 'out')})"),
              file=sys.stderr, flush=True)
    from backends.watch.nudge import footer_code     # the `# Ended (code N)` line, if the log ends with it

    note = slurm_ended_note(args.task, logs.ended, logs.slurm_err, program_log=path == logs.log,
                            attempt=args.attempt, program_code=footer_code(path) if path == logs.log else None)
    if note:
        print(note, file=sys.stderr, flush=True)
    return 0


def _empty(path: str) -> bool:
    """Whether the log (a regular file, `_check_log_file` made sure) holds no byte now."""
    try:
        return os.stat(path).st_size == 0
    except OSError:
        return False


def slurm_ended_note(task: str, ended: str | None, slurm_err: str | None, program_log: bool,
                     attempt: int | None = None, program_code: int | None = None) -> str | None:
    """After the program log of a task Slurm ended (TIMEOUT, CANCELLED, ...): one line saying so.

    Slurm kills the batch script with the program, so such a log mostly stops mid-run without
    its `# Ended` line and reads like a task still running or hung; Slurm's reason is in q/.err.
    `program_code`: the code of the log's `# Ended (code N)` footer, when it is its last line: a
    program that ran to its end is said to have (`task_end.program_end_words`), as the console's
    log pane title says it."""
    from backends.states import JobState, ended_by_slurm
    from backends.watch.task_end import program_end_words

    try:
        state = JobState(ended) if ended is not None else None
    except ValueError:
        return None
    if not program_log or slurm_err is None or state is None or not ended_by_slurm(state):
        return None
    again = f" --attempt {attempt}" if attempt is not None else ""
    told = program_end_words(state.value, program_code)
    how = f": {told}" if told else " (Slurm ended it, not the program)"
    return printable(f"hyperion-jobs: {task} ended {state.value}{how}; "
                     f"Slurm's reason: hyperion-jobs logs {shell_quote(task)}{again} --err")


def site_floor(record: SubmitRecord | None) -> float | None:
    """The site's poll_interval from the record's site file (None if unset or unreadable): what
    `watch` and `logs -f` poll Slurm no more often than."""
    if record is None or not record.cfg:
        return None
    from backends.submit.config import load_site  # the site file is the submit half's

    try:
        return load_site(record.cfg).poll_interval
    except (InputError, OSError):
        return None


def _earlier_run(logs, task: str) -> tuple[str, str]:
    """Which attempt did not run `task`, and where to read the log of the run before it: a rerun
    that stopped early names a value it never reached (empty strings if no attempt ran it before)."""
    if logs.ran_before is None:
        return "", ""
    attempt, number, state = logs.ran_before
    return (f" in attempt {attempt}", f"; attempt {number} ran it ({state}): hyperion-jobs logs "
            f"{shell_quote(task)} --attempt {number}")


def _check_log_file(path: str, task: str, must_exist: bool, ended: str | None = None,
                    earlier: tuple[str, str] = ("", ""), program_log: str | None = None) -> None:
    """The log must be a regular file we may read, opened as `logs` will open it: a FIFO or device
    at a log's path would block or never end, a teammate's log under umask 077 gave an empty
    success (or -f waiting in silence). A task that ended without one (cancelled while pending)
    will never write it: -f does not wait. `program_log`: the task's log path, which a later attempt
    wrote (this run wrote none, so none was moved aside), when `path` is Slurm's file read in its
    place (the message named Slurm's file alone)."""
    from backends.watch.tail import NotRegularLog, open_regular_log   # only `logs` needs the tail readers

    where = (f"{program_log} is a later attempt's, and Slurm's {path} does not exist" if program_log
             else f"{path} does not exist")
    try:
        open_regular_log(path).close()
    except FileNotFoundError:
        if ended == "NOT_RUN":
            raise InputError("TASK", f"{task} was not run{earlier[0]} (NOT_RUN: its local run ended first) and "
                             f"has no log: {path} does not exist{earlier[1]}") from None
        if ended is not None:
            raise InputError("TASK", f"{task} {left_no_log(ended, path, program_log)}") from None
        if must_exist:
            raise InputError("TASK", f"{task} has no log yet: {where} "
                             "(not started, or never run; -f waits for it)") from None
    except NotRegularLog:
        raise InputError("TASK", f"the log {path} is not a regular file") from None
    except OSError as err:
        raise InputError("TASK", f"cannot read the log {path}: {err.strerror or err}") from None
