"""Starting a new attempt of a submission: one at a time, never over live tasks, nothing overwritten.

Every submission to an ``--output-file`` pattern is an attempt of that
pattern's history. `begin_attempt` holds the pattern's lock (q/<stem>.lock)
while the attempt starts: it refuses while the newest attempt still has live
tasks, keeps the current record under q/attempts/<N>/, moves aside every file
of an earlier attempt that the new one would overwrite (a rerun task's log,
the batch scripts) and says which number the new attempt has. A local run
holds the lock until it ends; a Slurm submission until its record is written.
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import socket
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from backends.errors import InputError
from backends.fileio import UnreadableFile, kind_of, open_regular
from backends.printable import printable
from backends.records.attempts import (ATTEMPT_LINE, Ledger, LedgerWriter, MovedFile, NewAttempt, attempt_dir,
                                       ledger_path, read_ledger)
from backends.records.history import History, archive_current, archived_numbers, load_history
from backends.records.log_owner import Writer, last_writer, writers
from backends.records.paths import RECORD_SUFFIX, log_stem, moved_name
from backends.records.record import LOCAL_JOB, SubmitRecord, TaskRecord, load_record, reattach_command
from backends.submit.model import SubmitPlan, record_options

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (as backends.client)
if TYPE_CHECKING:
    import threading

    from backends.watch.slurm.accounting import Runner

FIELD = "--output-file"
# mkdir failures that mean the path given cannot hold logs (checked before anything is written,
# but access() lets root through where the filesystem still refuses, e.g. under /proc).
UNUSABLE_PATH = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EROFS, errno.EEXIST})
# Options an attempt may change; the ledger keeps the ones that differ from the attempt before.
COMPARED = ("num_gpus", "num_threads", "mem", "mem_per_cpu", "time", "max_jobs_run", "command", "env")


def lock_path(record_path: str | Path) -> Path:
    path = Path(record_path)
    return path.with_name(path.name[: -len(RECORD_SUFFIX)] + ".lock")


@contextmanager
def output_lock(record_path: str | Path) -> Iterator[None]:
    """Exclusive use of one output pattern; a second submitter is refused at once, naming the first."""
    path = lock_path(record_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        if err.errno not in UNUSABLE_PATH:
            raise        # a full disk, an I/O error: the submission failed, the input was fine
        raise InputError(FIELD, f"cannot create {err.filename or path.parent}: {err.strerror or err}") from None
    fd = _open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            raise InputError(FIELD, f"{holder} is submitting or running {_pattern(record_path)} right now; "
                             "wait for it to end or choose another --output-file") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{_program()} (pid {os.getpid()} on {socket.gethostname()})".encode(), 0)
        except OSError as err:   # a full disk: the line must say where
            raise OSError(err.errno, err.strerror, str(path)) from None
        yield
    finally:
        os.close(fd)


def _program() -> str:
    """The tool holding the lock, as its user started it: hyperion-jobs for a retry, hyperion-console
    for a run from the console, whose user was told another 'hyperion-submit' held their own run."""
    path = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    name = path.parent.name.replace("_", "-") if path.name == "__main__.py" else path.name   # python -m
    return name if name.startswith("hyperion-") and name.isprintable() and len(name) <= 40 else "hyperion-submit"


def _open_lock(path: Path) -> int:
    """The lock file, created if absent; never through a symlink or into a FIFO, device or a
    file linked elsewhere: it is truncated and written to."""
    shown = printable(str(path))
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT)
    except UnreadableFile as err:
        raise InputError(FIELD, f"the lock {shown} is {err}, not a regular file; move it away") from None
    except OSError as err:
        if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        raise InputError(FIELD, f"the lock {shown} cannot be opened ({err.strerror}); move it away") from None
    if os.fstat(fd).st_nlink > 1:
        os.close(fd)
        raise InputError(FIELD, f"the lock {shown} has other hard links; move it away")
    return fd


def check_bookkeeping(record_path: str | Path) -> None:
    """InputError unless the pattern's q/ files a new attempt writes are usable, checked before
    anything is moved: a ledger that is not a regular file, or an attempts folder that is not a folder,
    would fail the attempt halfway, with logs moved and nothing saying where."""
    ledger = ledger_path(record_path)
    if os.path.lexists(ledger) and not stat.S_ISREG(os.lstat(ledger).st_mode):
        raise InputError(FIELD, f"its ledger {printable(str(ledger))} is {kind_of(ledger)}, not a regular "
                         "file; move it away")
    root = attempt_dir(record_path, 0).parent
    folders = [root] + ([root / name for name in os.listdir(root) if name.isdigit()]
                        if os.path.isdir(root) and not os.path.islink(root) else [])
    for folder in folders:
        if os.path.lexists(folder) and not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise InputError(FIELD, f"{printable(str(folder))} is {kind_of(folder)}, not a folder; move it away")
    # A ledger you may read but not write (a teammate's run, a read-only copy): the logs were moved
    # and then the ledger line saying where traced back, leaving them unrecorded.
    # q/ (the record is replaced there, the ledger made there), the ledger, and q/attempts/ itself:
    # its numbered folders are shared by every pattern of q/, and a teammate's that this attempt
    # never writes must not refuse it.
    for path in (Path(record_path).parent, ledger, root):
        if os.path.lexists(path) and not os.access(path, os.W_OK | (os.X_OK if os.path.isdir(path) else 0)):
            raise InputError(FIELD, f"{printable(str(path))} cannot be written by you; a new attempt would move "
                             "the earlier logs and not record where (ask its owner, or choose another "
                             "--output-file)")


def _pattern(record_path: str | Path) -> str:
    return str(Path(record_path).parent.parent / Path(record_path).name[: -len(RECORD_SUFFIX)])


def load_history_if_any(record_path: str) -> History | None:
    """The pattern's history, None before its first attempt; InputError when it cannot be read."""
    if not Path(record_path).exists():
        return None
    try:
        return load_history(record_path)
    except InputError as err:
        raise InputError(FIELD, f"the earlier submission's record cannot be read ({err.problem}); move it "
                         "away or choose another --output-file, so that nothing of it is lost") from None


def live_tasks(history: History, logs: frozenset[str] | None = None, runner: Runner | None = None) -> list[str]:
    """Slurm ids (or local values) of the newest attempts' tasks that are still pending or running.

    With `logs`, only tasks writing one of those logs are asked about. Final
    states seen on the way are written into the ledger. Raises InputError
    when Slurm cannot say (running over live tasks would mix two attempts).
    `runner`: how Slurm is asked (None: `run_command`; a console's stoppable one, which a quit ends
    with QueryStopped).
    """
    return [name for _, name in live_task_records(history, logs, runner=runner)]


@dataclass(frozen=True)
class LiveAnswer:
    """One history's answer of `_live_of`: its live tasks, or the InputError saying Slurm could not
    tell; and `ledger_known`, the ledger's size once the ask appended the ends it learned, when no
    other face appended between the history's reading and that write (`FinalsRecorder.known_to`;
    None when it wrote nothing). The console's Retry tab takes the ledger up to there as answered:
    its own write is no end to ask Slurm about again."""

    live: list[tuple[TaskRecord, str]] | InputError
    ledger_known: int | None = None


def slurm_keys(history: History) -> frozenset[tuple[str, str | None]]:
    """(job id, array task id) of the history's Slurm tasks without an end in the ledger: the ones
    `live_task_records` asks Slurm about."""
    from backends.watch.rows import pending_tasks

    return frozenset((t.job_id, t.array_task_id) for t in pending_tasks(history) if t.job_id != LOCAL_JOB)


def live_task_records(history: History, logs: frozenset[str] | None = None,
                      settled: frozenset[tuple[str, str | None]] = frozenset(),
                      runner: Runner | None = None) -> list[tuple[TaskRecord, str]]:
    """`live_tasks` with each task's record: a checkpoint retry names the logical shards (values)
    still running, not only their Slurm ids, which a window's offset makes differ from the shards.
    `settled`: Slurm tasks (`slurm_keys`) the caller found not live a moment ago, not asked again
    (a ledger it could not write the ends to would have had the same pair sent twice). `runner`: as
    `live_tasks`'s."""
    return live_task_answer(history, logs, settled, runner)[0]


def live_task_answer(history: History, logs: frozenset[str] | None = None,
                     settled: frozenset[tuple[str, str | None]] = frozenset(),
                     runner: Runner | None = None) -> tuple[list[tuple[TaskRecord, str]], int | None]:
    """`live_task_records`, and how far the ask's own write of the ends it learned took the ledger
    (`LiveAnswer.ledger_known`)."""
    # only a pattern submitted before asks: a first submission does without the row builder and
    # the state and usage modules under it (3 ms of its start-up)
    from backends.watch.rows import pending_tasks

    pending = [t for t in pending_tasks(history) if (logs is None or t.log in logs)
               and (t.job_id == LOCAL_JOB or (t.job_id, t.array_task_id) not in settled)]
    answer = _live_of([(history, pending)], runner)[0]
    if isinstance(answer.live, InputError):
        raise answer.live
    return answer.live, answer.ledger_known


def live_task_records_of(histories: Sequence[History]) -> list[list[tuple[TaskRecord, str]] | InputError]:
    """`live_task_records` of several histories, asking Slurm once for them all: one sacct and one
    squeue name every job whose tasks have no end in their ledger (a checkpoint's preview over N
    records asked N pairs). Each history gets its live tasks, or the InputError `live_task_records`
    raises when Slurm could not tell about its jobs (one failed answer fails each history that asked)."""
    from backends.watch.rows import pending_tasks

    return [answer.live for answer in _live_of([(history, pending_tasks(history)) for history in histories])]


def _live_of(asked: Sequence[tuple[History, Sequence[TaskRecord]]],
             runner: Runner | None = None) -> list[LiveAnswer]:
    """The live ones among each history's tasks without an end: local ones by their runner, Slurm
    ones from one sacct+squeue about all of them (squeue alone when sacct fails), whose ends are
    written to each history's ledger, with CANCELLED for those the answer and the disk show were
    cancelled while pending (`told_states`, the rule `status` applies): a task a new attempt
    supersedes has its end recorded as it is superseded, before the new attempt writes its log
    (which made the rule refuse it for ever: every later `status`, `history` and retry asked
    Slurm about it again). A job the controller knows none of while accounting still has it running
    (`forgotten_jobs`) has no live task: it ended, as `status` and `watch` say."""
    from backends.watch.rows import expected_tasks   # loaded already: the callers' pending_tasks

    slurm_of = [[t for t in tasks if t.job_id != LOCAL_JOB] for _, tasks in asked]
    states: dict = {}
    known: dict[int, int | None] = {}      # by the history's place in `asked`: `LiveAnswer.ledger_known`
    failure: str | None = None
    if any(slurm_of):
        from backends.watch.finals import FinalsRecorder  # only a Slurm history asks Slurm
        from backends.watch.never_started import told_states
        from backends.watch.by_cluster import without_unended
        from backends.watch.slurm.accounting import QueryError, run_command

        groups = _by_cluster([(history, slurm) for (history, _), slurm in zip(asked, slurm_of)],
                             runner or run_command)
        try:
            answer, forgotten = _asked_of_each(groups)
            states = dict(answer.states)
            for place, ((history, _), slurm) in enumerate(zip(asked, slurm_of)):
                if slurm:
                    told = told_states(answer, [history], tasks=slurm)
                    states.update(told)
                    recorder = FinalsRecorder(history.record_path, slurm, since=history.ledger.size)
                    recorder.observe(told.values())
                    known[place] = recorder.known_to
            # a job the controller knows none of while accounting has it running (slurmdbd missed its
            # end): `status` and `watch` say its tasks ended UNKNOWN and offer a retry, which this
            # refused for ever as live, with "wait for them" (nothing to wait for) or a cancel Slurm refuses
            states = without_unended(states, forgotten)
        except QueryError:
            try:
                states = _controller_of_each(groups)
            except QueryError as err:
                failure = str(err)
    answers: list[LiveAnswer] = []
    for place, ((history, tasks), slurm) in enumerate(zip(asked, slurm_of)):
        local = [(t, _local_live(history, t)) for t in tasks if t.job_id == LOCAL_JOB]
        live: list[tuple[TaskRecord, str]] = [(t, name) for t, name in local if name is not None]
        if slurm and failure is not None:
            answers.append(LiveAnswer(InputError(FIELD, f"cannot tell whether job(s) {', '.join(expected_tasks(slurm))} "
                                                 f"of the earlier attempt still run ({failure}); nothing was "
                                                 "submitted, try again")))
            continue
        for task in slurm:
            state = states.get((task.job_id, task.array_task_id))
            if state is not None and not state.state.is_terminal:
                live.append((task, task.job_id if task.array_task_id is None else f"{task.job_id}_{task.array_task_id}"))
        answers.append(LiveAnswer(live, known.get(place)))
    return answers


def _by_cluster(asked: Sequence[tuple[History, Sequence[TaskRecord]]], runner: Runner) -> list[tuple[Runner, list]]:
    """The Slurm tasks of each history grouped by the cluster their attempt queued them on, each group
    with `runner` asking that cluster: a retry's look at an attempt of the local cluster asked
    ``-M other`` after an earlier retry went there, found nothing live and recorded no end."""
    from backends.cluster import for_cluster
    from backends.watch.by_cluster import by_cluster

    pairs = [(history, task) for history, tasks in asked for task in tasks]
    groups = by_cluster(pairs, lambda pair: pair[0].cluster_of(pair[1]), lambda pair: pair[1].attempt)
    return [(for_cluster(runner, cluster), [task for _, task in group]) for cluster, group in groups.items()]


def _asked_of_each(groups: Sequence[tuple[Runner, list]]):
    """One sacct and one squeue per cluster (`_by_cluster`), merged, and the tasks of the jobs each
    controller forgot (`forgotten_keys`). QueryError when any fails."""
    from backends.watch.by_cluster import forgotten_keys, merged_answers, task_keys
    from backends.watch.rows import expected_tasks
    from backends.watch.slurm.accounting import forgotten_jobs, query

    parts, forgotten = [], []
    for run, tasks in groups:
        answer = query(list(expected_tasks(tasks)), run)
        parts.append((task_keys(tasks), answer))
        forgotten.append(forgotten_jobs(answer, run))
    return merged_answers(parts), forgotten_keys(parts, forgotten)


def _controller_of_each(groups: Sequence[tuple[Runner, list]]) -> dict:
    """One squeue per cluster (`_by_cluster`), merged: the states while accounting fails."""
    from backends.watch.by_cluster import merged_answers, task_keys
    from backends.watch.rows import expected_tasks
    from backends.watch.slurm.accounting import Snapshot, run_squeue

    return merged_answers([(task_keys(tasks), Snapshot({t.key: t for t in run_squeue(list(expected_tasks(tasks)), run)}, {}))
                           for run, tasks in groups]).states


def _local_live(history: History, task) -> str | None:
    """How a refusal names a local task still to run or running; by pid once its runner was killed."""
    from backends.watch.rows import orphaned_child, run_goes_on, start_runner_gone

    name = f"{LOCAL_JOB} task" if task.value is None else f"{LOCAL_JOB} {task.value}"
    start = history.ledger.starts.get((task.attempt, task.value))
    if start is None:      # its turn in a run that goes on is still to come
        return name if run_goes_on(history, task.attempt) else None
    if not start_runner_gone(start):
        return name
    orphan = orphaned_child(history, task)
    return None if orphan is None else f"{name}, whose runner was killed: kill -- -{orphan} ends it"


def refuse_live(history: History, runner: Runner | None = None) -> None:
    """InputError while `history`'s newest attempt has live tasks (asks Slurm about those it must,
    with `runner`: see `live_tasks`)."""
    live = live_tasks(history, runner=runner)
    if live:
        _refuse_live(history, live)


def _refuse_live(history: History, live: list[str]) -> None:
    jobs = sorted({item.split("_")[0].split(" ")[0] for item in live})
    shown = ", ".join(live[:5]) + (f" and {len(live) - 5} more" if len(live) > 5 else "")
    slurm = [job for job in jobs if job != LOCAL_JOB]     # a local run has no job to cancel: its runner stops it
    stop = f"cancel them (hyperion-jobs cancel {' '.join(slurm)})" if slurm else "stop them"
    raise InputError(FIELD, f"{history.record_path} still has {len(live)} live task(s) ({shown}) of job(s) "
                     f"{', '.join(jobs)}; wait for them ({reattach_command(history.record_path)}) or {stop} "
                     "before submitting to the same --output-file again")


SCRIPT_QUERY_SECONDS = 10.0   # a hung squeue delays a submission no longer than this, then is not asked


def _pattern_scripts(record_path: str | Path, windowed: bool) -> set[str]:
    """The batch scripts this pattern's submissions wrote, real paths: q/<stem>.sh, and for an array
    (its stem holds NAME) q/<stem>.offset<N>.sh; a single job's pattern has no windows, and
    `log/run.offset5.log` is another pattern's single job, not a window of `log/run.log`."""
    q, name = Path(record_path).parent, Path(record_path).name
    stem = name[: -len(RECORD_SUFFIX)]
    try:
        names = os.listdir(q)
    except OSError:
        return set()
    offset = stem + ".offset"
    return {os.path.realpath(q / entry) for entry in names
            if entry == stem + ".sh" or (windowed and entry.startswith(offset) and entry.endswith(".sh")
                                          and entry[len(offset):-3].isdigit())}


def site_cluster(plan: SubmitPlan) -> str | None:
    """The cluster the plan's site file sends its jobs to (its last ``--clusters``/``-M``), where a
    job whose sbatch never answered is looked for; None for the local one (or a value that is no
    plain cluster name: it would reach argv)."""
    from backends.cluster import is_cluster_name
    from backends.submit.site_options import option_value

    if plan.site is None:
        return None
    try:
        named = option_value(plan.site.sbatch_options(plan.options.num_gpus), "clusters")
    except InputError:
        return None
    return named if is_cluster_name(named) else None


def script_jobs(scripts: set[str], timeout: float, stop: threading.Event | None = None,
                cluster: str | None = None) -> list[str]:
    """The user's live jobs whose batch script is one of `scripts` (real paths), on `cluster` (None:
    the local one); QueryError when squeue cannot say within `timeout` s. `stop` set while squeue
    runs: QueryStopped (its process killed)."""
    from functools import partial

    from backends.cluster import for_cluster
    from backends.watch.slurm.accounting import jobs_running_scripts, run_command
    from backends.watch.targets import current_user

    return jobs_running_scripts(scripts, current_user(),
                                for_cluster(partial(run_command, timeout=timeout, stop=stop), cluster))


def live_script_jobs(scripts: set[str], timeout: float, stop: threading.Event | None = None,
                     cluster: str | None = None) -> list[str]:
    """`script_jobs`, [] when squeue cannot say: neither a refusal nor a cancel is made on a guess."""
    from backends.watch.slurm.accounting import QueryError

    try:
        return script_jobs(scripts, timeout, stop, cluster)
    except QueryError:
        return []


def refuse_unrecorded_jobs(record_path: str | Path, windowed: bool = True,
                           stop: threading.Event | None = None, cluster: str | None = None) -> None:
    """InputError while Slurm runs a job from one of this pattern's batch scripts.

    The newest attempt's live tasks are refused by its history; this finds the jobs no history
    names as live: a submission killed after sbatch answered and before its record was written
    (or an sbatch that answered too late), or a task requeued after its end was recorded. A new
    attempt would write the same logs as they do. One squeue, only where such a script exists;
    when it cannot answer, nothing is refused (as before this check). `stop`: see `live_script_jobs`.
    `cluster`: where to look (the site file's --clusters, `site_cluster`; None: the local cluster).
    """
    from backends.cluster import copyable

    scripts = _pattern_scripts(record_path, windowed)
    jobs = live_script_jobs(scripts, SCRIPT_QUERY_SECONDS, stop, cluster) if scripts else []
    if jobs:
        raise InputError(FIELD, f"Slurm still runs job(s) {', '.join(jobs)} from a batch script of "
                         f"{printable(str(Path(record_path).parent))}, which no record counts as live (a "
                         "submission killed after sbatch answered, a task requeued after it ended): it "
                         f"writes these logs too; wait for it or {copyable(['scancel', *jobs], cluster)} before "
                         "submitting to the same --output-file again")


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _differ_at_a_name(theirs: str, ours: str) -> bool:
    """Whether `ours` can be `theirs` with its NAME (unknown here) replaced by a value.

    Up to their NAME's first place the two are equal; there theirs has a letter
    or _ and ours a digit: so the first difference must look like that.
    """
    i = len(os.path.commonprefix([theirs, ours]))
    return i < len(theirs) and i < len(ours) and theirs[i] in _NAME_START and ours[i].isdigit()


def could_share_logs(theirs: str, ours: str, name: str | None) -> bool:
    """Whether a pattern whose log stem is `theirs` could write a log whose stem is one of ours.

    Ours is the stem `ours` with `name` (our array's NAME) replaced by each value;
    a cheap test on the names only, so that other patterns' records are read whole
    only when they might name one of our logs.
    """
    if theirs == ours or name is None or name not in ours:
        return theirs == ours or _differ_at_a_name(theirs, ours)
    prefix = ours[:ours.index(name)]          # every stem of ours has it, then a digit
    i = len(os.path.commonprefix([theirs, prefix]))
    if i < len(prefix):
        return i < len(theirs) and theirs[i] in _NAME_START and prefix[i].isdigit()
    return len(theirs) > i and (theirs[i] in _NAME_START or theirs[i].isdigit())


# How far up from a log's folder a folder named after NAME is looked for (exp/JOB/log/x.log: 2).
NAME_FOLDER_DEPTH = 3


def _q_folders(plan: SubmitPlan) -> set[Path]:
    """The q/ beside each of the plan's logs, and the q/ of patterns with NAME in a folder.

    ``exp/1/log/c.log`` may be task 1 of ``exp/JOB/log/c.log``, whose q/ is
    exp/JOB/log/q: each of a log's last few folders that holds a digit, and
    beside it every folder whose name could be it with a NAME in place of
    the number (listed once per parent, whatever the number of tasks). Only
    those are looked into: ``/scratch/user7/exp/log`` looked for a q/ under
    each of /scratch's thousands of folders, at every submission.
    """
    folders = {Path(plan.q_dir)}
    places: set[tuple[str, str, tuple[str, ...]]] = set()   # (parent, the numbered folder, the folders below it)
    for folder in {os.path.dirname(task.log) for task in plan.tasks}:
        folders.add(Path(folder) / "q")
        parts = Path(folder).parts
        for depth in range(1, min(NAME_FOLDER_DEPTH, len(parts) - 1) + 1):
            # every such folder, not the nearest alone: exp/5/v2/c.log is task 5 of exp/JOB/v2/c.log
            if any(ch.isdigit() for ch in parts[-depth]):
                places.add((str(Path(*parts[:-depth])), parts[-depth], parts[len(parts) - depth + 1:]))
    listed: dict[str, list[str]] = {}
    for parent, numbered, below in places:
        if parent not in listed:
            try:
                # names only (no stat of each: a shared parent on NFS holds thousands); one that is
                # no folder has no q/ to list below
                with os.scandir(parent) as entries:
                    listed[parent] = [e.name for e in entries if not _NAME_START.isdisjoint(e.name)]
            except OSError:
                listed[parent] = []
        folders |= {Path(parent, other, *below, "q") for other in listed[parent]
                    if _differ_at_a_name(other, numbered)}
    return folders


def _file_key(path: str, real: dict[str, str]) -> str:
    """The log's path with its folder resolved (link/c.1.log and real/c.1.log are one file)."""
    folder, name = os.path.split(path)
    if folder not in real:
        real[folder] = os.path.realpath(folder)
    return os.path.join(real[folder], name)


def _neighbours(plan: SubmitPlan) -> list[Path]:
    """Records of other output patterns that could name one of the plan's logs."""
    array = plan.options.array
    ours = log_stem(plan.options.output_file)
    found: list[Path] = []
    for folder in sorted(_q_folders(plan)):
        try:
            with os.scandir(folder) as entries:
                found += [Path(e.path) for e in entries if e.name.endswith(RECORD_SUFFIX) and could_share_logs(
                    e.name[: -len(RECORD_SUFFIX)], ours, array.name if array else None) and e.is_file()]
        except OSError:
            continue
    seen = {os.path.realpath(plan.record_path)}       # a folder reached twice (a symlink) is one folder
    unique = []
    for path in found:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append(path)
    return unique


def refuse_shared_live_logs(plan: SubmitPlan, neighbours: list[Path] | None = None,
                            runner: Runner | None = None) -> None:
    """Refuse when another pattern's submission still has a task to run or running that writes one of the
    plan's logs (``--output-file log/c.1.log`` while ``log/c.JOB.log``'s task 1 runs or waits: the new
    run would truncate the log it writes). Only records whose names could name our logs are read;
    `neighbours`: those records when the caller found them already (`_neighbours`); `runner`: how
    Slurm is asked (`live_tasks`).
    """
    real: dict[str, str] = {}
    logs = {_file_key(task.log, real): task.log for task in plan.tasks}
    for path in _neighbours(plan) if neighbours is None else neighbours:
        try:
            current = load_record(path)
        except InputError:
            continue            # unreadable: it cannot be judged, and its own faces say why
        shared = frozenset(t.log for t in current.tasks if _file_key(t.log, real) in logs)
        if not shared:
            continue
        ours = logs[_file_key(sorted(shared)[0], real)]
        try:
            live = live_tasks(load_history(str(path), current), shared, runner)
        except InputError as err:
            raise InputError(FIELD, f"{ours} is also a log of {path}, and whether its task still runs "
                             f"cannot be told ({err.problem})") from None
        if live:
            raise InputError(FIELD, f"{ours} is also a log of {path}, whose task is still live "
                             f"({'; '.join(live[:3])}); wait for it (hyperion-jobs watch {path}) or choose "
                             "another --output-file")


def overrides(previous: SubmitRecord | None, plan: SubmitPlan) -> dict[str, object]:
    """The options this attempt changes against the attempt before it (JSON-ready)."""
    if previous is None:
        return {}
    new = record_options(plan.options)
    return {key: new.get(key) for key in COMPARED if previous.options.get(key) != new.get(key)}


@dataclass(frozen=True)
class PlannedMove:
    """A file a new attempt would overwrite, and the history it joins: whose attempt wrote it."""

    source: str
    record_path: str
    attempt: int
    value: int | None
    what: str                        # "log" | "script"
    name: str                        # its name in q/attempts/<attempt>/


def _own_writers(history: History | None) -> dict[tuple[int | None, str], int]:
    """(value, log path) -> the newest attempt of our pattern that planned that task."""
    if history is None:
        return {}
    return {(t.value, t.log): n for n in history.numbers for t in history.tasks_of(n)}


def _log_writers(histories: Sequence[History], real: dict[str, str]) -> dict[str, list[Writer]]:
    """Per log file (folder resolved), the attempts of these histories whose file may still be
    there (`log_owner.writers`)."""
    found: dict[str, list[Writer]] = {}
    for each in histories:
        for log, writer in writers(each):
            found.setdefault(_file_key(log, real), []).append(writer)
    return found


def _sharing_histories(plan: SubmitPlan, neighbours: list[Path] | None = None) -> dict[str, History]:
    """The readable histories of the patterns that could share the plan's logs, by record path."""
    found = {}
    for path in _neighbours(plan) if neighbours is None else neighbours:
        try:
            found[str(path)] = load_history(str(path))
        except InputError:
            continue
    return found


def _can_join(record_path: str) -> bool:
    """Whether a file can be moved into another pattern's history and its ledger told so."""
    try:
        check_bookkeeping(record_path)
    except InputError:
        return False
    return True


def plan_moves(plan: SubmitPlan, history: History | None,
               neighbours: list[Path] | None = None) -> list[PlannedMove]:
    """Every existing file the plan would write (task logs, batch scripts), and whose attempt it joins:
    a log goes to the attempt, of this pattern or another sharing it, that wrote it last
    (`log_owner.last_writer`); when that cannot be told, to our newest attempt that planned it, else to
    our newest attempt (0 before the first). A batch script goes to our newest attempt that submitted
    it (`History.script_writers`), else to our newest attempt. `neighbours`: see `refuse_shared_live_logs`."""
    real: dict[str, str] = {}
    others = _sharing_histories(plan, neighbours)
    candidates = _log_writers([*([history] if history is not None else []), *others.values()], real)
    own = _own_writers(history)
    latest = history.latest_number if history is not None else 0
    naming = {plan.record_path: (plan.options.array.name if plan.options.array else None, plan.options.output_file)}
    moves = []
    for task in plan.tasks:
        if not os.path.lexists(task.log):
            continue
        writer = last_writer(task.log, candidates.get(_file_key(task.log, real), []))
        if writer is not None and writer.record_path != plan.record_path and not _can_join(writer.record_path):
            writer = None                # its history cannot take the move: ours keeps it, as before
        if writer is None:
            writer = Writer(plan.record_path, own.get((task.value, task.log), latest), task.value, None)
        if writer.record_path not in naming:
            current = others[writer.record_path].current
            naming[writer.record_path] = (current.array_name, current.options.get("output_file"))
        moves.append(PlannedMove(task.log, writer.record_path, writer.attempt, writer.value, "log",
                                 moved_name(*naming[writer.record_path], writer.value, task.log)))
    scripts = history.script_writers if history is not None else {}
    for window in plan.windows:
        if os.path.lexists(window.script_path):    # the attempt that wrote it; unknown: our newest
            moves.append(PlannedMove(window.script_path, plan.record_path,
                                     scripts.get(window.script_path, latest), None, "script",
                                     os.path.basename(window.script_path)))
    return moves


def _move(source: str, directory: Path, name: str) -> str:
    """Move `source` into `directory` as `name`, or `name.2`, `name.3`... when that is taken.

    Never as `<x>.submit.json`: q/attempts/<N>/ keeps the records of every pattern of q/ under
    that name, and a record written later (log/r.log's first) would replace a moved log named so
    (log/r.submit.json's). A name taken between the look and the move (another rerun moving a log
    of the same name at the same instant) is never overwritten: the next free name is taken."""
    directory.mkdir(parents=True, exist_ok=True)
    counter = 1
    while True:
        target = directory / (name if counter == 1 else f"{name}.{counter}")
        counter += 1
        if target.name.endswith(RECORD_SUFFIX) or os.path.lexists(target):
            continue
        try:
            _move_to_free_name(source, str(target))
        except FileExistsError:
            continue
        return str(target)


# A hard link cannot be made here (a directory, a filesystem without them, another filesystem, a
# file of another owner under protected_hardlinks): the move is made as before, a rename.
_NO_HARD_LINK = frozenset({errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS,
                           errno.EMLINK})


def _move_to_free_name(source: str, target: str) -> None:
    """Move `source` to `target`; FileExistsError when `target` exists, even if it appeared after
    the caller looked: a rename would replace it, and a log moved aside by another rerun at the same
    instant was lost. link() fails on an existing name, atomically; the source is then unlinked."""
    try:
        os.link(source, target, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as err:
        if err.errno not in _NO_HARD_LINK:
            raise
        _rename(source, target)
        return
    try:
        os.unlink(source)
    except FileNotFoundError:      # gone meanwhile: the file is at `target` all the same
        pass
    except OSError:                # it stays where it was: no second name of it is left behind
        os.unlink(target)
        raise


def _rename(source: str, target: str) -> None:
    """The move without a hard link: a rename (across filesystems, a copy), `target` looked at first."""
    if os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target)
    try:
        os.rename(source, target)
    except OSError as err:
        if err.errno != errno.EXDEV:
            raise
        shutil.move(source, target)


def move_aside(moves: Sequence[PlannedMove]) -> None:
    """Move the planned files, each move written to the ledger of the history it joins as it is made.

    Written once after all of them, a Ctrl-C, a kill or a failing move in between left hundreds of
    logs in q/attempts/N/ with nothing saying whose they were.
    """
    with ExitStack() as open_ledgers:
        ledgers: dict[str, LedgerWriter] = {}
        for move in moves:
            ledger = ledgers.get(move.record_path)
            if ledger is None:
                ledger = ledgers[move.record_path] = open_ledgers.enter_context(
                    LedgerWriter(ledger_path(move.record_path)))
            target = _move(move.source, attempt_dir(move.record_path, move.attempt), move.name)
            try:
                ledger.append(MovedFile(move.attempt, move.value, move.what, move.source, target))
            except OSError:              # the line is not there (a torn part of it is skipped)
                _move_back(target, move.source)
                raise


def _move_back(target: str, source: str) -> None:
    """Undo a move its ledger line could not record (a full disk, a quota): unrecorded, the file sat
    in q/attempts/<N>/ where no history looks, and its task's log read as missing. A rename needs no
    room; a file copied across filesystems stays where it went."""
    try:
        if not os.path.lexists(source):
            os.rename(target, source)
    except OSError:
        pass


def _refusal(kind: str, exc: InputError) -> InputError:
    """A retry has no --output-file of its own: its refusals name the record it reruns."""
    if kind == "submit" or exc.field != FIELD:
        return exc
    return InputError("record", exc.problem.replace(" or choose another --output-file", ""))


# What a rerun asks about the history it would follow (InputError to refuse it); None: `live_tasks`
# refused as a new submission is. A checkpoint retry passes its own (which shards still run), so that
# Slurm is asked once, under the lock, rather than once before it for the wording and once in it.
# Its second argument is the runner it asks Slurm with (`live_tasks`'s): the caller's stop ends it.
LiveCheck = Callable[[History, "Runner | None"], None]


def next_attempt_number(record_path: str, ledger: Ledger | None = None) -> int:
    """The number the pattern's next attempt gets, read without its whole history: the console's
    Submit preview asks it at each pause of the keys, and loading a 1000-task history of six
    attempts took half a second there. InputError when the record cannot be read. `ledger`: its
    attempt lines, read already (`read_ledger(record_path, only=ATTEMPT_LINE)`)."""
    ledger = read_ledger(record_path, only=ATTEMPT_LINE) if ledger is None else ledger
    return max(load_record(record_path).attempt, *archived_numbers(record_path), ledger.last_number) + 1


def unchanged_since(planned: History, again: str) -> LiveCheck:
    """The check under the lock of a rerun planned from `planned` some time before (a retry's
    [y/N] left open while another terminal retried the same record): refused when an attempt
    began since, which may have rerun the same values (COMPLETED now, they would run again and
    their newest run be the extra one); `again` says how to plan from what is there now.
    Else refused for live tasks, as a new submission is."""
    expected = planned.newest_number

    def check(history: History, runner: Runner | None = None) -> None:
        now = history.newest_number
        if now != expected:
            began = "an attempt" if now < expected else f"attempt {now}"
            raise InputError(FIELD, f"{began} of {history.record_path} began after this rerun was planned "
                             f"(as attempt {expected + 1}) and may have run the same values; nothing ran: "
                             f"{again}")
        refuse_live(history, runner)
    return check


def check_not_live(record_path: str, live_check: LiveCheck | None = None,
                   runner: Runner | None = None) -> History | None:
    """The pattern's history (None before its first attempt); InputError while its newest attempt
    still has live tasks (`live_check`'s refusal, when given). `begin_attempt` asks again under the
    lock: a caller may ask first, so that it says nothing about a rerun that would be refused.
    `runner`: how Slurm is asked (`live_tasks`)."""
    history = load_history_if_any(record_path)
    if history is not None:
        if live_check is not None:
            live_check(history, runner)
            return history
        refuse_live(history, runner)
    return history


@contextmanager
def begin_attempt(plan: SubmitPlan, kind: str = "submit",
                  on_begin: Callable[[], None] | None = None,
                  live_check: LiveCheck | None = None,
                  stop: threading.Event | None = None) -> Iterator[NewAttempt]:
    """Hold the output pattern and prepare attempt N+1; the caller runs or submits it inside.

    InputError (exit 2, nothing submitted) when another submitter holds the
    pattern or its newest attempt still has live tasks. `on_begin` runs once
    neither refuses, so a caller's "resubmitting ..." line is never followed by
    a refusal. `live_check`: see `LiveCheck`.

    `stop` (a caller off the main thread: the console, which a quit closes): set while the checks
    ask Slurm, their query is killed and QueryStopped raised; set once they are done, QueryStopped
    too. Either way before anything is moved or submitted: a quit waited for a hung squeue up to a
    minute, and then the submission went on with nobody left to see it. What the caller does inside
    (sbatch) is not stopped by it: a job queued must get its record.
    """
    runner = None
    if stop is not None:
        from backends.watch.slurm.accounting import stoppable

        runner = stoppable(stop)
    with ExitStack() as held:
        try:
            held.enter_context(output_lock(plan.record_path))
            history = check_not_live(plan.record_path, live_check, runner)
            if history is None and kind != "submit":
                # its folder moved away while the retry's [y/N] was open: the rerun of a few values
                # would begin a new pattern as its attempt 1
                raise InputError(FIELD, f"{printable(plan.record_path)} is gone since this rerun was planned "
                                 "(moved or deleted); nothing ran")
            refuse_unrecorded_jobs(plan.record_path, plan.options.array is not None, stop, site_cluster(plan))
            neighbours = _neighbours(plan)     # looked for once: under the lock, both see the same folders
            refuse_shared_live_logs(plan, neighbours, runner)
            check_bookkeeping(plan.record_path)
            moves = plan_moves(plan, history, neighbours)
        except InputError as exc:
            raise _refusal(kind, exc) from None
        if stop is not None and stop.is_set():     # stopped while a check that asked nobody ran
            from backends.client import QueryStopped

            raise QueryStopped("stopped before the attempt began: nothing was moved or submitted")
        if on_begin is not None:
            on_begin()
        if history is not None:
            archive_current(plan.record_path)
        number = 1 if history is None else history.newest_number + 1
        move_aside(moves)
        yield NewAttempt(number, kind, overrides(history.current if history else None, plan))
