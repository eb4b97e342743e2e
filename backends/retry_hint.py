"""The line hyperion-submit ends a failed run with: the command that reruns only what failed.

A recipe that fails in 4 of 150 tasks should not make its user find and type
the record's path: the last line names `hyperion-jobs retry RECORD` whole, so
the next step is a copy and paste. Shared by both backends (and by
`hyperion-jobs retry` and the checkpoint bridge, which run plans the same way).
The command fits how the run was launched: a run of the checkpoint bridge
names `hyperion-checkpoint retry CHECKPOINT --submit RECORD` (`rerun`), which
finds again what is still missing; `hyperion-jobs retry` would rerun that
run's shard windows as they were.
"""
from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence

from backends.printable import printable
from backends.ranges import compress, parse_runs
from backends.shellwords import shell_join, shell_quote

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from backends.records.record import SubmitRecord
    from backends.submit.model import SubmitPlan
    from backends.records.history import History
    from backends.records.attempts import Ledger, NewAttempt


RAN_OUT = (("OUT_OF_MEMORY", "--mem"), ("TIMEOUT", "--time"))   # a state, the size it ran out of


def ran_out_of(ended: Iterable[str]) -> tuple[str, ...]:
    """``--mem`` when a task ran OUT_OF_MEMORY, ``--time`` when one hit its TIMEOUT (of the
    states `ended`): the sizes a rerun as before would run out of again."""
    states = set(ended)
    return tuple(flag for state, flag in RAN_OUT if state in states)


def auto_sizes(ended: Iterable[str]) -> tuple[str, ...]:
    """``--mem auto`` / ``--time auto`` for the sizes the states `ended` ran out of (`ran_out_of`):
    the rerun asks for more, where the same sizes would end the same way."""
    return tuple(part for flag in ran_out_of(ended) for part in (flag, "auto"))


def with_auto_sizes(argv: Sequence[str], ended: Iterable[str]) -> tuple[str, ...]:
    """`argv` (a launcher's own rerun command: `hyperion-checkpoint retry CKPT --submit RECORD`) asking
    for more of what the states `ended` ran out of (`auto_sizes`): the bridge's rerun line named the
    same command after an OUT_OF_MEMORY, which reran the shard with the same --mem and ran out again.
    A size the command already gives (``--mem 400M``, ``--mem=400M``) is replaced, never given twice."""
    wanted = auto_sizes(ended)
    if not wanted:
        return tuple(argv)
    replaced = set(wanted[::2])
    kept: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        flag = word.split("=", 1)[0]
        if flag in replaced:
            skip = "=" not in word        # `--mem 400M`: its value goes with it
            continue
        kept.append(word)
    return (*kept, *wanted)


def _retry_argv(record_path: str, values: Sequence[int], ended: Iterable[str]) -> str:
    """``hyperion-jobs retry /abs/RECORD [--values V] [--mem auto] [--time auto]``, quoted."""
    chosen = ("--values", compress(values)) if values else ()
    return shell_join(("hyperion-jobs", "retry", os.path.abspath(record_path), *chosen, *auto_sizes(ended)))


def retry_command(plan: SubmitPlan, rerun: Sequence[str] | None = None, ended: Iterable[str] = (),
                  values: Sequence[int] = ()) -> str | None:
    """``hyperion-jobs retry /abs/q/<stem>.submit.json`` (with ``--values`` `values`, and the
    `auto_sizes` of the states `ended`; or `rerun`, the launcher's own command, quoted, with those
    sizes too: `with_auto_sizes`), or None
    when no retry could run it. A run that was itself a retry names its values: after `retry
    --values 211,422` the plain command reran every value still failing (1029 where 2 failed).

    A site file given as a pipe (``--cfg <(...)``) is gone once the run ended and
    `hyperion-jobs retry` (and `hyperion-checkpoint retry --submit`, which reads it too)
    refuses such a record, so no command is offered for it.
    """
    if not os.path.isfile(plan.options.cfg):
        return None
    rerun = rerun if rerun is not None else plan.rerun
    if rerun is not None:
        return shell_join(with_auto_sizes(rerun, ended))
    return _retry_argv(plan.record_path, values, ended)


def record_retry_command(record: SubmitRecord, ended: Iterable[str] = (), values: Sequence[int] = ()) -> str:
    """The command that reruns what failed in the run `record` is of, by the rule `retry_command`
    follows at submit time: the launcher's own when it had one (kept in the record as `rerun`: a
    run of `hyperion-checkpoint retry --submit` names that command again), else
    `hyperion-jobs retry RECORD` (``--values`` `values`, when given); either with the `auto_sizes` of
    the states `ended`. For the faces that tell it later: `hyperion-jobs watch`'s lines, the console's
    quit dialog."""
    if record.rerun is not None:
        try:
            words = shlex.split(record.rerun)
        except ValueError:          # the record checks its rerun is shell words; as it is, if not
            return printable(record.rerun)
        return shell_join(with_auto_sizes(words, ended))
    return _retry_argv(record.path, values, ended)


def usable_retry_command(record: SubmitRecord, ended: Iterable[str] = (), values: Sequence[int] = ()) -> str | None:
    """`record_retry_command` (`hyperion-jobs retry RECORD` with the `auto_sizes` of the states
    `ended`), or None when the site file a retry reads is gone (a ``--cfg <(...)`` pipe), as
    `retry_command` rules at submit time: a command that can only be refused is not offered."""
    return record_retry_command(record, ended, values) if os.path.isfile(record.cfg) else None


def rerun_failed(command: str, name: str | None = None, unsubmitted: Sequence[int] = ()) -> str:
    """``rerun only those with: COMMAND``, hyperion-submit's words after tasks that did not succeed, and
    `watch`'s; after a refused window the same command submits the values left out too ("only those"
    was untrue): ``rerun those and submit JOB=5 (not submitted, below) with: COMMAND``."""
    also = f" and submit {named_values(name, unsubmitted)} (not submitted, below)" if unsubmitted else ""
    return f"rerun {'those' if also else 'only those'}{also} with: {command}"


def state_groups(ended: Iterable[tuple[str, int | None]]) -> str:
    """``FAILED value 250 and NOT_RUN values 251-300``: each state of the (state, value) pairs with its
    values, the group of the lowest value first; a task without a value is ``FAILED task``. How watch
    names what a retry reruns, so that no group it reruns goes unsaid."""
    groups: dict[str, list[int]] = {}
    for state, value in ended:
        groups.setdefault(state, []).extend(() if value is None else (value,))
    named = [f"{state} value{'s' if len(values) > 1 else ''} {compress(values)}" if values else f"{state} task"
             for state, values in sorted(groups.items(), key=lambda g: (min(g[1], default=0), g[0]))]
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"


def named_values(name: str | None, values: Sequence[int], none: str = "the rest") -> str:
    """``JOB=5,2999``, as every line about a refused sbatch window names values: ``NAME=`` for a
    record without its array's name, `none` when there are no values to name."""
    return f"{name or 'NAME'}={compress(values)}" if values else none


def not_submitted(name: str | None, values: Sequence[int], attempt: int | None = None) -> str:
    """``JOB=2999 not submitted`` (``... of attempt 1 not submitted``): the one wording of the values a
    refused sbatch window left out, shared by hyperion-submit's lines and every later look."""
    of = f" of attempt {attempt}" if attempt is not None else ""
    return f"{named_values(name, values)}{of} not submitted"


def unsubmitted_line(history: History) -> str | None:
    """What every later look at a submission says while values a refused sbatch window left out
    have not been submitted by any attempt since: those values, sbatch's refusal and the retry that
    submits them (None when there are none). Its tasks alone looked like the whole run, all COMPLETED."""
    values, refused = history.unsubmitted()
    if refused is None:
        return None
    record = history.current
    left_out = not_submitted(record.array_name or refused.array_name, values, refused.attempt)
    return printable(f"{left_out}: {refused.refused}; submit them with: {record_retry_command(record)}")


STOPS_AT_FAILURE = "a local array stops at its first failure"


def local_retry_line(plan: SubmitPlan, stopped: int | None, rerun: Sequence[str] | None = None,
                     include_stopped: bool = True, unreached_only: bool = False,
                     why: str = STOPS_AT_FAILURE, kind: str = "submit") -> str | None:
    """After a local run stopped at the task of value `stopped` (None: a plain job): the values it
    never reached, and the command that reruns them, and `stopped` too when `include_stopped` (it
    failed or was interrupted; a COMPLETED one a retry leaves). `why` says why the rest did not run.

    `unreached_only`: None unless values were left unreached (a run stopped for a task's log: the
    line naming the log says the rest, as README promises); else a failed plain job, or the last
    value, still gets `rerun ... with: COMMAND`. None too when no retry could run it. A run of
    `kind` "retry" names its values in the command (see `retry_command`)."""
    array = plan.options.array
    later: Sequence[int] = ([] if array is None or stopped is None else
                            sorted(t.value for t in plan.tasks if t.value is not None and t.value > stopped))
    rerun_values = ([stopped] if include_stopped and stopped is not None else []) + list(later)
    command = retry_command(plan, rerun, values=rerun_values if kind == "retry" and array is not None else ())
    if command is None:
        return None
    if not later:
        if unreached_only or not include_stopped:
            return None
        return f"rerun it with: {command}" if array is None or stopped is None else \
            f"rerun {array.name}={stopped} with: {command}"
    assert array is not None and stopped is not None
    return (f"{array.name}={compress(later)} not run ({why}); "
            f"rerun {array.name}={compress(rerun_values)} with: {command}")


def rerun_line(record_path: str, number: int, kind: str = "submit", ahead: bool = False,
               array: bool = True, values: Sequence[int] = (), ledger: Ledger | None = None) -> str | None:
    """What hyperion-submit says when its command line ran before with the same --output-file:
    the run is attempt `number` and the earlier logs it rewrites were moved aside, not lost.

    Why: the same command rerun by accident (shell history, a recipe started again) printed
    only `submitted job(s) ...`; the user found yesterday's logs rewritten and nothing saying
    where the old ones went. A retry says its own lines (None for any kind but "submit").
    `ahead`: said before the run (a dry run, the console's confirmation), so the move is to come.
    `array`: the pattern is an array's (a plain job's log is named by its record alone).
    `values`: the array values this attempt runs. The `--attempt N` named is the attempt that last
    ran them (whose log is moved), not always the one before: after a retry of 5,9 (attempt 3) an
    attempt 4 of value 3 named `--attempt 3`, which has no value 3 (`logs` refused it, exit 2).
    `ledger`: the ledger's attempt lines, read already (`read_ledger(..., only=ATTEMPT_LINE)`).
    """
    if number <= 1 or kind != "submit":
        return None
    record = shell_quote(record_path)
    earlier = _last_runs(record_path, number, values, ledger) if array else {}
    if len(earlier) > 1:
        attempt = ", ".join(f"--attempt {n} (VALUE {compress(vs)})" for n, vs in sorted(earlier.items()))
    else:
        attempt = f"--attempt {next(iter(earlier), number - 1)}"
    return printable(f"attempt {number} of this --output-file (it ran before): the earlier logs it rewrites "
                     f"{'are' if ahead else 'were'} moved to {os.path.join(os.path.dirname(record_path), 'attempts')}/ first; "
                     f"hyperion-jobs history {record}; hyperion-jobs logs {record}{':VALUE' if array else ''} {attempt}")


def _last_runs(record_path: str, number: int, values: Sequence[int],
               ledger: Ledger | None = None) -> dict[int, list[int]]:
    """The attempts before `number` that last ran each of `values` (attempt -> its values, sorted);
    values no earlier attempt ran are left out; {} when the ledger cannot say (a record older than
    the ledger, a ledger that cannot be read): the caller names the attempt before. `ledger`: its
    attempt lines, read already."""
    if not values:
        return {}
    from backends.errors import InputError
    from backends.records.attempts import ATTEMPT_LINE, START_LINE, read_ledger

    try:
        ledger = read_ledger(record_path, only=ATTEMPT_LINE) if ledger is None else ledger
    except (InputError, OSError):
        return {}
    attempts = sorted(ledger.attempts, key=lambda a: -a.number)
    numbers = {a.number for a in attempts if a.number < number}
    if numbers != set(range(1, number)):   # an attempt without its ledger line: who ran what is unknown
        return {}
    started = None
    if any(a.backend == "local" and a.number < number for a in attempts):
        # A local array stops at its first failure: the values after it never started and wrote no
        # log (`logs --attempt N` refuses them, exit 2). Only the start lines are read (as the
        # attempt lines are: a fold of every line costs 0.8 s a 30,000-task ledger).
        try:
            started = read_ledger(record_path, only=START_LINE).starts
        except (InputError, OSError):
            return {}
    left, found = set(values), {}
    for entry in attempts:
        if entry.number >= number or not left:
            continue
        try:
            ran = _within(entry.values, left)
        except ValueError:
            return {}
        if entry.backend == "local" and started is not None:
            ran = {value for value in ran if (entry.number, value) in started}
        if ran:
            found[entry.number] = sorted(ran)
            left -= ran
    return found


def new_attempt_line(plan: SubmitPlan, attempt: NewAttempt) -> str | None:
    """`rerun_line` of the attempt a run of `plan` just began: what hyperion-submit says before the
    first task (local) or the first sbatch (Slurm), each backend in the same words."""
    return rerun_line(plan.record_path, attempt.number, attempt.kind, array=plan.options.array is not None,
                      values=_plan_values(plan))


def _within(expression: str, values: set[int]) -> set[int]:
    """Those of `values` an attempt line's ranges (`1-4,9`, as `compress` writes them) hold, found
    without expanding the ranges (a hand-edited ledger may say `1-1000000000`). ValueError: not ranges."""
    import bisect

    runs = parse_runs(expression)
    starts = [first for first, _ in runs]
    held = set()
    for value in values:
        index = bisect.bisect_right(starts, value) - 1
        if index >= 0 and runs[index][0] <= value <= runs[index][1]:
            held.add(value)
    return held


def _plan_values(plan: SubmitPlan) -> list[int]:
    return [t.value for t in plan.tasks if t.value is not None]


def ran_before_line(plan: SubmitPlan) -> str | None:
    """`rerun_line` before the run: what a dry run and the console's Submit confirmation say of an
    --output-file that ran before. A dry run said nothing of it and the console asked `Submit 8
    task(s) to slurm?` alone; the user learnt after the yes that yesterday's logs were being
    rewritten. None on a first run, or when the history cannot be read (the run says why)."""
    record_path = plan.record_path
    if not os.path.exists(record_path):      # a first run: the dry run loads no record reader
        return None
    from backends.attempt import next_attempt_number
    from backends.errors import InputError
    from backends.records.attempts import ATTEMPT_LINE, read_ledger

    try:
        ledger = read_ledger(record_path, only=ATTEMPT_LINE)     # its attempt lines, read once for both
        return rerun_line(record_path, next_attempt_number(record_path, ledger), ahead=True,
                          array=plan.options.array is not None, values=_plan_values(plan), ledger=ledger)
    except InputError:
        return None
