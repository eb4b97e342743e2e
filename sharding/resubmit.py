"""The bridge from a retry plan to hyperion-submit's core: rerun only the missing shards.

The only `sharding` module that imports `backends` beyond its range math and
error type. It reuses the original submission's record (q/<stem>.submit.json)
so the retry runs the same command with the same resources, logs and site file; only the array changes (to the
missing shards) and the run's shard configuration is exported so a program
reading HYPERION_ARRAY_* or Curator's NEMO_CURATOR_SLURM_ARRAY_* keeps the original total and minimum.
"""
from __future__ import annotations

import bisect
import dataclasses
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence, TextIO

from backends.attempt import FIELD as ATTEMPT_FIELD
from backends.attempt import (LiveCheck, check_not_live, live_task_answer, live_task_records_of, refuse_live,
                              slurm_keys)
from backends.errors import InputError
from backends.launch import check_rerun, run_plan, working_dir
from backends.printable import printable
from backends.ranges import compress
from backends.watch.rows import LOCAL_JOB
from backends.records.history import History, load_history
from backends.records.record import SubmitRecord, TaskRecord, load_record, reattach_command
from backends.records.trust import check_trusted
from backends.retry import AUTO, Advice, RetryRequest, plan_sizes, size_lines, size_option
from backends.retry_sizes import SizeProposal
from backends.submit.array import MAX_VALUES, ArraySpec
# site_array_limit too: sharding's CLI reaches backends.submit only through this bridge
from backends.submit.array_limit import NO_LIMIT, ArrayLimit, retry_limit, site_array_limit  # noqa: F401
from backends.submit.config import load_site
from backends.submit.from_record import array_name, array_values, submit_options
from backends.submit.model import SubmitOptions, SubmitPlan
from backends.submit.plan import build_plan, describe_plan
from backends.shellwords import shell_join
from sharding.arrayenv import PREFIXES
from sharding.retry import RetryPlan, plan_retry, skipped_line
from sharding.run_records import FoundRecord, flag_values, named_checkpoints, record_command
from sharding.store import Checkpoint

if TYPE_CHECKING:
    from backends.watch.slurm.accounting import Runner

PROG = "hyperion-checkpoint"
RUN_AGAIN = "run it again to plan from what is missing now"    # a refused resubmission's advice
# The run's shard configuration, exported to a retry under both prefixes sharding.arrayenv reads: a
# Curator pipeline reads only NEMO_CURATOR_SLURM_ARRAY_*, else SLURM_ARRAY_TASK_COUNT, which in a retry
# counts the retried shards ("shard_index 3 is outside the shard range [1, 2]" at every retry).
RUN_KEYS = ("TOTAL_SHARDS", "MINIMUM_SHARD_INDEX")
RUN_ENV = tuple(prefix + key for prefix in PREFIXES for key in RUN_KEYS)
# A recipe's own flags for the run's shard configuration (hyperion-shard-example's, and their
# underscore spellings): a record passing other values than run.json is another run's.
SHARD_FLAGS = {"--total-shards": "TOTAL_SHARDS", "--total_shards": "TOTAL_SHARDS",
               "--minimum-shard-index": "MINIMUM_SHARD_INDEX", "--minimum_shard_index": "MINIMUM_SHARD_INDEX"}


def _array_name(record: SubmitRecord, shown: str) -> str:
    name = record.array_name or array_name(record.options)
    if not name:
        raise InputError("record", f"{printable(shown)} is not an array submission: nothing to restrict to "
                         "the missing shards")
    return str(name)


def _check_same_run(plan: RetryPlan, record: SubmitRecord, base: SubmitOptions, shown: str,
                    field: str = "--submit") -> None:
    """Refuse a record of another run: it would rerun that run's command over this checkpoint's shards
    (moving its logs aside), with this run's total exported in place of its own."""
    run = plan.run
    expected_of = {"TOTAL_SHARDS": run.total_shards, "MINIMUM_SHARD_INDEX": run.minimum_shard_index}
    for name, value in base.env:
        key = next((name[len(p):] for p in PREFIXES if name.startswith(p)), None)
        if key in expected_of and value.strip() != str(expected_of[key]):
            raise InputError(field, f"{printable(shown)} ran with {name}={printable(value)[:40]}, but "
                             f"{plan.checkpoint}'s run.json says {expected_of[key]}: it is another run's record")
    values = array_values(record.options)
    outside = [v for v in values if v not in run.shards]
    if outside:
        raise InputError(field, f"{printable(shown)} ran shard(s) {compress(outside)[:80]}, outside "
                         f"{plan.checkpoint}'s shards {run.minimum_shard_index}-{run.maximum_shard_index}: "
                         "it is another run's record")
    for flag, value in flag_values(base.command):
        key = SHARD_FLAGS.get(flag)
        if key is not None and _as_int(value) != expected_of[key]:
            raise InputError(field, f"{printable(shown)}'s command passes {printable(flag)} "
                             f"{printable(value)[:40]}, but {plan.checkpoint}'s run.json says "
                             f"{expected_of[key]}: it is another run's record")
    named = named_checkpoints(base.command, record.cwd)
    if named and os.path.realpath(plan.checkpoint) not in named:
        raise InputError(field, f"{printable(shown)}'s command works on the checkpoint "
                         f"{printable(sorted(named)[0])}, not {plan.checkpoint}: it is another run's record")


def _as_int(text: str) -> int | None:
    try:
        return int(text) if len(text) < 40 else None
    except ValueError:
        return None


@dataclass(frozen=True)
class ShardSizes:
    """The --mem / --time a resubmission asks for instead of the record's (None: the record's), what
    ``auto`` chose and why, and what auto would ask for where the shards ran out of a size kept."""

    mem: str | None = None
    time: str | None = None
    proposal: SizeProposal | None = None
    advice: tuple[Advice, ...] = ()

    def lines(self) -> list[str]:
        """``sizes: ...``: `hyperion-jobs retry`'s preview words (`size_lines`)."""
        return size_lines(self.proposal, self.advice)

    def proposed(self) -> tuple[str | None, str | None]:
        """The ``--mem`` / ``--time`` to resubmit with the sizes the advice proposes: ``auto`` for each
        size it names (the shards ran out of it and auto would change it), None for the others;
        (None, None) without advice. `hyperion-checkpoint retry --submit RECORD --mem auto --time auto`
        for those sizes alone, as the console's Resubmit with proposed sizes asks it."""
        flags = {flag for flag, _ in self.advice}
        return (AUTO if "--mem" in flags else None), (AUTO if "--time" in flags else None)


def size_flags(mem: str | None, time: str | None) -> tuple[str, ...]:
    """``--mem MEM --time TIME`` of `hyperion-checkpoint retry --submit`, the ones given."""
    return tuple(word for flag, value in (("--mem", mem), ("--time", time)) if value is not None
                 for word in (flag, value))


def check_sizes(mem: str | None, time: str | None) -> tuple[str | None, str | None]:
    """``--mem SIZE|auto`` and ``--time TIME|auto`` checked as `hyperion-jobs retry` checks them
    (InputError naming the flag), before anything is read or asked."""
    return size_option("--mem", mem), size_option("--time", time)


def shard_sizes(retry: RetryPlan, record_path: str, mem: str | None = None, time: str | None = None,
                history: History | None = None, runner: Runner | None = None) -> ShardSizes:
    """The sizes a resubmission of ``retry``'s missing shards asks for, by `hyperion-jobs retry`'s rule
    (`plan_sizes`) over the record's rows, the rows of the missing shards being the ones rerun.
    Without it an OUT_OF_MEMORY shard was resubmitted with the record's --mem, and ran out again.

    With a size ``auto`` the rows are read as `hyperion-jobs retry` reads them (`history_status`: the
    ledger, and one sacct for the usage it lacks); otherwise, for the advice alone, the ledger's
    (`check_not_running` just wrote the ends Slurm told): a plan asks Slurm no more than it did.
    InputError on the flag asked as auto when the rows cannot be read. `runner`: how that sacct is
    asked (`run_command` by default)."""
    from backends.watch.rows import history_rows
    from backends.watch.slurm.accounting import QueryError, run_command
    from backends.watch.targets import history_status

    auto = "--mem" if mem == "auto" else "--time" if time == "auto" else None
    try:
        history = history if history is not None else load_history(os.path.abspath(record_path))
        rows = history_status(history, runner or run_command) if auto else history_rows(history, {})
    except (InputError, QueryError) as err:
        if auto is None:
            raise
        problem = err.problem if isinstance(err, InputError) else str(err)
        raise InputError(auto, f"auto needs what the shards used, which cannot be read: {problem}; "
                         "nothing resubmitted") from None
    missing = set(retry.missing)      # one look per row: scattered failures are thousands of runs
    chosen = [row for row in rows if row.value in missing]
    request, proposal, advice = plan_sizes(rows, chosen, history, RetryRequest(mem=mem, time=time))
    return ShardSizes(request.mem, request.time, proposal, advice)


def retry_options(plan: RetryPlan, record: SubmitRecord, shown: str | None = None,
                  sizes: ShardSizes | None = None) -> SubmitOptions:
    """The record's options with the array restricted to ``plan.missing``, the run exported, and the
    sizes of `sizes` in place of the record's (a --mem given drops its --mem-per-cpu, as
    `hyperion-jobs retry --mem` does)."""
    shown = record.path if shown is None else shown
    if plan.complete:
        raise InputError("checkpoint", f"{plan.checkpoint}: every shard is complete; nothing to resubmit")
    first = plan.missing_runs[0][0]
    if first < 1:
        raise InputError("run.json", f"shard {first} is missing but hyperion-submit array values start "
                         "at 1; submit shard 0 by hand (or use minimum_shard_index >= 1 for new runs)")
    if plan.missing_count > MAX_VALUES:   # refused before the values are built
        raise InputError("--array", f"{plan.missing_count} missing shards; at most {MAX_VALUES} tasks per "
                         f"submission (resubmit part of them: {plan.expression[:80]})")
    base = submit_options(record, shown)
    _check_same_run(plan, record, base, shown)
    env = tuple(pair for pair in base.env if pair[0] not in RUN_ENV)
    run = {"TOTAL_SHARDS": plan.run.total_shards, "MINIMUM_SHARD_INDEX": plan.run.minimum_shard_index}
    env += tuple((prefix + key, str(run[key])) for prefix in PREFIXES for key in RUN_KEYS)
    if sizes is not None and sizes.mem is not None:
        base = dataclasses.replace(base, mem=sizes.mem, mem_per_cpu=None)
    if sizes is not None and sizes.time is not None:
        base = dataclasses.replace(base, time=sizes.time)
    return dataclasses.replace(base, array=ArraySpec(_array_name(record, shown), plan.missing), env=env)


def record_array_limit(record: SubmitRecord | None, pipes: bool = True) -> ArrayLimit:
    """The limit a Resubmit with `record` windows by when none is given: its site file's, which
    `hyperion-checkpoint retry --submit RECORD` applies too (the console previews it)."""
    return NO_LIMIT if record is None or not record.cfg else site_array_limit(record.cfg, pipes)


def retry_array_limit(record: SubmitRecord | None, site: str = "", pipes: bool = True) -> ArrayLimit:
    """The limit a retry's windows start from: the record's site file's, which a Resubmit applies;
    without a record, the site file `site` the user is about to submit with (the console's Submit
    screen selection), as `hyperion-checkpoint retry --cfg SITE` applies it. Planning windows with
    no limit while the cluster's is known names array indices sbatch refuses. `pipes=False` (the
    console, planning at every key): a FIFO is refused at once, never waited for."""
    if record is not None:
        return record_array_limit(record, pipes)
    return site_array_limit(site, pipes) if site else NO_LIMIT


@dataclass(frozen=True)
class Resubmission:
    """What a retry would submit: ``plan`` is None when every shard is complete."""

    retry: RetryPlan
    record: SubmitRecord | None
    plan: SubmitPlan | None
    # a doubt about the record said before it runs (`unnamed_checkpoint`), None when there is none
    warning: str | None = None


def _check_completion_known(retry: RetryPlan) -> None:
    """Refuse while a manifest or the completion folder cannot be read: the shards it would have
    counted complete are planned as missing, and a retry would run them again over their output."""
    unknown = [p for p in retry.problems if p.unknown]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise InputError("checkpoint", f"{printable(unknown[0].path)}: {printable(unknown[0].message)}{more}: "
                         "which shards completed is not known, so finished ones could run again; "
                         "nothing resubmitted (make it readable, or move it out of the checkpoint)")


@dataclass(frozen=True)
class StillRunning:
    """The record's tasks that have not ended (pending or running): the checkpoint lists their shards
    as missing only because they have not written their manifest yet. A resubmission would run them
    a second time, two tasks writing one shard; it is refused until they end."""

    record_path: str
    shards: tuple[int, ...]        # the logical shards (the array's values) of those tasks
    jobs: tuple[str, ...]          # their Slurm job ids ("local" for a local run)
    tasks: int

    def summary(self, retry: RetryPlan | None = None) -> str:
        """`shard(s) 2-4 (3 of the 3 listed missing) still running in job(s) 4865 of RECORD`."""
        shards = f"shard(s) {compress(self.shards)[:80]}" if self.shards else f"{self.tasks} task(s)"
        among = ""
        if retry is not None and not retry.complete and self.shards:
            listed = sum(any(a <= s <= b for a, b in retry.missing_runs) for s in self.shards)
            among = f" ({listed} of the {retry.missing_count} listed missing)"
        where = "the local run" if self.jobs == (LOCAL_JOB,) else f"job(s) {', '.join(self.jobs)}"
        return f"{shards}{among} still running in {where} of {printable(self.record_path)}"

    def refusal(self, retry: RetryPlan | None = None) -> str:
        """The one line a resubmission is refused with: what runs, and the two ways on."""
        stop = "stop that run" if self.jobs == (LOCAL_JOB,) else f"cancel them (hyperion-jobs cancel {' '.join(self.jobs)})"
        return (f"{self.summary(retry)}: not missing, only unfinished, and a resubmission would run them twice; "
                f"wait for them ({printable(reattach_command(self.record_path))}) or {stop}, then retry; "
                "nothing resubmitted")


def still_running(record_path: str) -> StillRunning | None:
    """The record's tasks that have not ended, from its ledger and (for Slurm tasks the ledger has no
    end of) one sacct+squeue, as `hyperion-jobs retry` asks; None when every task ended. InputError
    on --submit when Slurm cannot say (a retry over tasks that may run is not made on a guess)."""
    return _asked(record_path)[0]


def _asked(record_path: str, runner: Runner | None = None) -> tuple[StillRunning | None,
                                                                    frozenset[tuple[str, str | None]]]:
    """`still_running`, and the Slurm tasks it asked about (`slurm_keys`); `runner`: how Slurm is
    asked (`live_tasks`)."""
    path = os.path.abspath(record_path)
    if not os.path.exists(path):
        return None, frozenset()
    try:
        history = load_history(path)
    except InputError as err:
        if err.field != ATTEMPT_FIELD:
            raise
        raise _about_record(err, record_path) from None
    return running_in(history, record_path, runner=runner), slurm_keys(history)


def _about_record(err: InputError, record_path: str) -> InputError:
    """`--output-file`'s wording of a history that cannot be read or asked about, as the record's."""
    return InputError("--submit", err.problem.replace(" of the earlier attempt", f" of {printable(record_path)}")
                      .replace("nothing was submitted", "nothing resubmitted"))


def running_in(history: History, record_path: str,
               settled: frozenset[tuple[str, str | None]] = frozenset(),
               runner: Runner | None = None) -> StillRunning | None:
    """`still_running` of a history already read; `settled`: Slurm tasks found not live a moment
    ago, not asked about again; `runner`: how Slurm is asked (`live_tasks`)."""
    return running_answer(history, record_path, settled, runner)[0]


def running_answer(history: History, record_path: str,
                   settled: frozenset[tuple[str, str | None]] = frozenset(),
                   runner: Runner | None = None) -> tuple[StillRunning | None, int | None]:
    """`running_in`, and the ledger's size once the ask wrote the ends it learned there, when nothing
    else was appended meanwhile (`LiveAnswer.ledger_known`): the console takes that write as known."""
    try:
        live, known = live_task_answer(history, settled=settled, runner=runner)
    except InputError as err:
        if err.field != ATTEMPT_FIELD:
            raise
        raise _about_record(err, record_path) from None
    return _still(live, record_path), known


def _still(live: Sequence[tuple[TaskRecord, str]], record_path: str) -> StillRunning | None:
    """The record's live tasks (`live_task_records`) as shards and jobs; None when none is live."""
    if not live:
        return None
    shards = sorted({task.value for task, _ in live if task.value is not None})
    jobs = sorted({task.job_id for task, _ in live})
    return StillRunning(os.path.abspath(record_path), tuple(shards), tuple(jobs), len(live))


def check_not_running(record_path: str, retry: RetryPlan | None = None,
                      runner: Runner | None = None) -> frozenset[tuple[str, str | None]]:
    """InputError on --submit while the record still has tasks that have not ended (`still_running`);
    else the Slurm tasks Slurm was asked about and said are not live (`settled` of `running_in`).
    `runner`: how Slurm is asked (`live_tasks`; the console's stoppable one, which its quit ends
    with QueryStopped)."""
    running, asked = _asked(record_path, runner)
    if running is not None:
        raise InputError("--submit", running.refusal(retry))
    return asked


def _same_file(one: str, other: str) -> bool:
    """Whether two paths name one file (a record given relatively, through a symlink...)."""
    try:
        return os.path.samefile(one, other)
    except (OSError, ValueError):
        return False


def _running_check(record_path: str, retry: RetryPlan, settled: frozenset[tuple[str, str | None]],
                   again: str) -> LiveCheck:
    """The refusal `begin_attempt` makes under the lock: `check_not_running`'s, asking Slurm only about
    tasks it did not just answer for (a submission that began meanwhile; the local run's are looked
    at again, which asks nobody); then `check_still_missing`."""
    def check(history: History, runner: Runner | None = None) -> None:
        running = running_in(history, record_path, settled, runner)
        if running is not None:
            raise InputError("--submit", running.refusal(retry))
        check_still_missing(retry, again)
    return check


def _unchanged_check(retry: RetryPlan, again: str) -> LiveCheck:
    """The check under the lock when the plan follows another record than the one given: its live
    tasks refused as a new submission's are (`refuse_live`), then `check_still_missing`."""
    def check(history: History, runner: Runner | None = None) -> None:
        refuse_live(history, runner)   # the history begin_attempt just read, not read again under the lock
        check_still_missing(retry, again)
    return check


def check_under_lock(record_path: str, plan_record_path: str, retry: RetryPlan,
                     settled: frozenset[tuple[str, str | None]], again: str = RUN_AGAIN) -> LiveCheck:
    """What `begin_attempt` asks under the lock of a resubmission of `retry` following `record_path`
    (the CLI's and the console's): its tasks not running, asked again only where Slurm did not just
    answer (`settled`, of `check_not_running`), and no shard it plans completed since (`again`: how
    the refusal says to plan anew, the CLI's words by default)."""
    if _same_file(record_path, plan_record_path):
        return _running_check(os.path.abspath(record_path), retry, settled, again)
    return _unchanged_check(retry, again)


def completed_since(retry: RetryPlan) -> list[int]:
    """The shards `retry` planned as missing that have a manifest now (one more listing of the
    completion folder)."""
    done, _ = Checkpoint(retry.checkpoint).completed(retry.run)
    starts = [first for first, _ in retry.missing_runs]
    since = []
    for shard in done:
        at = bisect.bisect_right(starts, shard) - 1
        if at >= 0 and shard <= retry.missing_runs[at][1]:
            since.append(shard)
    return sorted(since)


def check_still_missing(retry: RetryPlan, again: str = RUN_AGAIN) -> None:
    """InputError on --submit when a shard planned as missing completed after the checkpoint was read.

    Asked under the output pattern's lock, once no task of the record runs: tasks that ended between
    this one's read and its Slurm answer (another terminal's retry, or the record's own last ones)
    left them complete, and the plan made before would run them again over their output."""
    since = completed_since(retry)
    if since:
        raise InputError("--submit", f"shard(s) {compress(since)[:80]} ({len(since)} of the {retry.missing_count} "
                         f"planned) completed after this retry read {printable(retry.checkpoint)} (their "
                         f"tasks ended meanwhile: the record's own, or another retry's); nothing resubmitted: "
                         f"{again}")


def prepare_resubmit(path: str, record_path: str, max_array_size: int | None = None) -> Resubmission:
    """Plan without running anything (reads the checkpoint, the record and the site file).

    ``max_array_size`` (if given) also caps the site's own limit, so windows
    match what ``retry --format fields --max-array-size`` printed.
    """
    return prepare_from_retry(plan_retry(path, max_array_size), record_path)


def prepare_from_retry(retry: RetryPlan, record_path: str, record: SubmitRecord | None = None,
                       sizes: ShardSizes | None = None) -> Resubmission:
    """prepare_resubmit's plan from a retry already planned (the console's, from the coverage on
    screen): reads the record unless given, and its site file, never the checkpoint again; the
    sizes of `sizes` (`shard_sizes`) in place of the record's."""
    if record is None:
        record = load_record(os.path.abspath(record_path))  # a bad record is an error even with nothing to do
    if retry.complete:
        return Resubmission(retry, record, None)
    _check_completion_known(retry)
    check_rerun(record)
    site = load_site(record.cfg)
    limit = retry_limit(retry.max_array_size, ArrayLimit(site.max_array_size, site.path))
    site = dataclasses.replace(site, max_array_size=limit)
    plan = build_plan(site, retry_options(retry, record, record_path, sizes))
    # a failure's next step, here and in the record (watch and the console name it later): this bridge again
    plan = dataclasses.replace(plan, rerun=rerun_argv(retry.checkpoint, record_path, retry.max_array_size))
    return Resubmission(retry, record, plan, unnamed_checkpoint(retry, record, record_path))


def unnamed_checkpoint(retry: RetryPlan, record: SubmitRecord, shown: str) -> str | None:
    """One line when the record's command names no checkpoint (`named_checkpoints`: no --checkpoint DIR,
    --ckpt DIR, checkpoint_path=DIR naming a folder with a run.json), None when it names this one.
    Such a record (another stage's, paired with this checkpoint by mistake) passes every check of
    `_check_same_run`, and its rerun may never write this checkpoint's manifests: the shards stay
    missing, however often it is resubmitted. A command may name its checkpoint in a file it reads,
    so this is said, not refused. The CLI prints it on stderr; the console shows the same text."""
    command = record_command(record)
    if command is None or named_checkpoints(command, record.cwd):
        return None
    return printable(f"the command of {shown} names no checkpoint (no --checkpoint DIR, --ckpt DIR, ...): "
                     f"nothing shows that its rerun fills {retry.checkpoint}; if it does not, its shards stay "
                     "missing")


def resubmit(path: str, record_path: str, max_array_size: int | None = None, err: TextIO | None = None,
             trust: bool = False, dry_run: bool = False, mem: str | None = None, time: str | None = None) -> int:
    """Resubmit the missing shards of checkpoint ``path`` like ``record_path``; the exit status.

    0 when nothing is missing (nothing is submitted) or every resubmitted task
    succeeded; 1 when a task failed. Bad input raises InputError/ShardingError,
    and so does a record another user owns or others may write, unless `trust`
    (the record says what runs, as you). `dry_run` prints the plan on stdout instead. `mem` and
    `time` (checked: `check_sizes`; ``auto`` by `hyperion-jobs retry`'s rule) replace the record's;
    either way the plan says when the shards ran out of a size it keeps (`shard_sizes`).
    """
    err = err or sys.stderr
    check_trusted(os.path.abspath(record_path), trust)
    prepared = prepare_resubmit(os.path.abspath(path), os.path.abspath(record_path), max_array_size)
    retry, plan = prepared.retry, prepared.plan
    for problem in retry.problems:
        print(printable(f"{PROG}: warning: {problem.path}: {problem.message}"), file=err)
    skipped = skipped_line(retry)
    if plan is None or prepared.record is None:
        print(printable(f"{PROG}: every shard of {retry.checkpoint} is complete; nothing resubmitted"), file=err)
        if skipped is not None:
            print(printable(f"{PROG}: note: {skipped}"), file=err)
        return 0
    settled = check_not_running(record_path, retry)      # dry run too: what the run would refuse, it refuses
    sizes = shard_sizes(retry, record_path, mem, time)    # the rows of the ended tasks: the ledger's now
    if sizes.mem is not None or sizes.time is not None:
        prepared = prepare_from_retry(retry, os.path.abspath(record_path), prepared.record, sizes)
        plan = prepared.plan
        assert plan is not None and prepared.record is not None
    said = [printable(f"  {line}") for line in sizes.lines()]     # under the line naming the command
    if skipped is not None:            # only some shards resubmitted: the ones a rerun failed since are not
        said.append(printable(f"  note: {skipped}"))
    # The record the plan follows is (almost always) this one: Slurm is not asked again about it, by the
    # dry run or under the run's lock (where only a submission begun since is asked about)
    same = _same_file(record_path, plan.record_path)
    what = (f"{retry.missing_count} of {retry.run.total_shards} shard(s) ({retry.expression}) "
            f"in {prepared.record.cwd}: {shell_join(plan.argv)}{_windows_said(plan, max_array_size)}")
    if dry_run:
        if not same:
            check_not_live(plan.record_path)   # what the run would refuse, the dry run refuses
        _warn(prepared.warning, err)
        print("\n".join([printable(f"would resubmit {what}"), *said]))
        sys.stdout.write(printable(describe_plan(plan), layout=True))
        return 0
    check = check_under_lock(record_path, plan.record_path, retry, settled)     # before the chdir
    rerun = rerun_argv(path, record_path, max_array_size, trust)    # paths as given, from here
    plan = dataclasses.replace(plan, rerun=rerun)
    with working_dir(prepared.record.cwd):
        return run_plan(plan, "resubmit", lambda: _begin(prepared.warning, what, said, err),
                        rerun=rerun, live_check=check)


def _begin(warning: str | None, what: str, said: list[str], err: TextIO) -> None:
    """What a resubmission says once its run is not refused (`run_plan`'s on_begin): a refusal by the
    live check under the lock stays its one line."""
    _warn(warning, err)
    print("\n".join([printable(f"{PROG}: resubmitting {what}"), *said]), file=err, flush=True)


def _warn(warning: str | None, err: TextIO) -> None:
    """`unnamed_checkpoint`'s line, once every check passed: a refusal stays its one line."""
    if warning is not None:
        print(f"{PROG}: warning: {warning}", file=err, flush=True)


def _windows_said(plan: SubmitPlan, asked: int | None) -> str:
    """What the hyperion-submit command shown cannot say: windows cut by `--max-array-size` (the
    command alone would window by its site file's limit)."""
    limit = plan.site.max_array_size
    if asked is None or limit is None or asked > limit or plan.options.backend != "slurm":
        return ""     # none asked, or capped at the site's limit: the command alone windows the same
    return f", in windows of at most {limit} tasks (--max-array-size)"


def preview_record(retry: RetryPlan, record_path: str) -> FoundRecord:
    """`retry --record RECORD`: the record (read once, at its absolute path) once it is checked as
    --submit checks it (readable, an array, this checkpoint's run); InputError on --record otherwise.
    The preview only asks whether its tasks still run: nothing of it is run, so its owner is not checked."""
    path = os.path.abspath(record_path)
    try:
        record = load_record(path)
        _array_name(record, record_path)
        _check_same_run(retry, record, submit_options(record, record_path), record_path, "--record")
    except InputError as err:
        raise InputError("--record", err.problem) from None
    return FoundRecord(path, record)


@dataclass(frozen=True)
class RunningNote:
    """What a preview says of one record: its tasks still running, or why that is not known."""

    record_path: str
    running: StillRunning | None
    problem: str | None = None

    def line(self, retry: RetryPlan) -> str | None:
        """The warning line (None when every task of the record ended)."""
        if self.problem is not None:
            return self.problem
        if self.running is None:
            return None
        return (f"{self.running.summary(retry)}: not missing, only unfinished; --submit refuses until "
                "they end")

    def as_json(self) -> dict[str, object]:
        running = self.running
        return {"record": self.record_path, "shards": compress(running.shards) if running else "",
                "jobs": list(running.jobs) if running else [], "tasks": running.tasks if running else 0,
                "problem": self.problem}


def running_notes(found: Sequence[FoundRecord]) -> list[RunningNote]:
    """Whether each record's tasks still run (`still_running`), never raising: a preview says what
    Slurm cannot tell and goes on. Each record is used as already read (its history adds only the
    ledger), and Slurm is asked once for all of them: one sacct and one squeue naming every job
    (a preview over 20 records of one checkpoint asked 20 pairs)."""
    notes: dict[int, RunningNote] = {}
    histories: list[tuple[int, History]] = []
    for index, item in enumerate(found):
        try:
            histories.append((index, load_history(item.path, item.record)))
        except InputError as err:
            notes[index] = _unknown_note(item.path, _about_record(err, item.path) if err.field == ATTEMPT_FIELD
                                         else err)
    answers = live_task_records_of([history for _, history in histories])
    for (index, history), answer in zip(histories, answers):
        path = found[index].path
        if isinstance(answer, InputError):
            notes[index] = _unknown_note(path, _about_record(answer, path))
        else:
            notes[index] = RunningNote(path, _still(answer, path))
    return [notes[index] for index in range(len(found))]


def _unknown_note(path: str, err: InputError) -> RunningNote:
    """A record whose tasks cannot be told still running or not: the warning says why."""
    problem = err.problem.replace("; nothing resubmitted, try again", "")
    if printable(path) not in problem:
        problem = f"{printable(path)}: {problem}"
    return RunningNote(path, None, f"{problem}; shards it still runs may be listed as missing")


def rerun_argv(checkpoint: str, record_path: str, max_array_size: int | None = None,
               trust: bool = False) -> tuple[str, ...]:
    """The command a failed resubmission names as the next step: this one again, which finds
    what is still missing, not `hyperion-jobs retry RECORD` (it reruns this attempt's shard
    windows as they were). Absolute paths: pasted anywhere, it names the same run."""
    argv = (PROG, "retry", os.path.abspath(checkpoint), "--submit", os.path.abspath(record_path))
    if max_array_size is not None:
        argv += ("--max-array-size", str(max_array_size))
    return argv + (("--trust-record",) if trust else ())
