"""Retrying a submission's failed tasks: which values, with what options, as a new attempt.

Works for any array (checkpoint or not) and for a plain job: the values whose
newest attempt did not complete with exit code 0 are rerun with the original
backend, site file, command, NAME and log pattern, the overrides applied.
Planning is pure given the history and its rows; `backends.launch.run_plan`
runs the plan as the next attempt.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from backends.errors import InputError
from backends.launch import check_rerun
from backends.printable import printable
from backends.ranges import compress
from backends.records.history import History
from backends.records.record import SubmitRecord, reattach_command
from backends.retry_hint import ran_out_of
from backends.retry_sizes import SizeProposal, propose_sizes
from backends.states import JobState
from backends.submit.array import ArraySpec
from backends.submit.config import load_site
from backends.submit.from_record import array_name, submit_options
from backends.submit.model import SubmitOptions, SubmitPlan
from backends.submit.plan import build_plan
from backends.submit.resources import check_memory, check_time, time_minutes
from backends.watch.asked import asked_by_attempt, with_request
from backends.watch.rows import LOCAL_JOB, TaskRow, rerun_by_default, state_counts
from backends.watch.usage import Usage, parse_size
from backends.shellwords import shell_join, shell_quote

# Labels a row can have besides Slurm's states (see TaskRow.state_label).
EXTRA_LABELS = ("NOT_RUN", "UNKNOWN")
AUTO = "auto"   # --mem auto / --time auto: sizes proposed from what the tasks used
Advice = tuple[str, str]    # a size kept that tasks ran out of (--mem, --time), what auto would ask for and why


@dataclass(frozen=True)
class RetryRequest:
    """What the user asked for; None everywhere means: every failed value, options unchanged."""

    states: frozenset[str] | None = None
    values: tuple[int, ...] | None = None
    num_threads: int | None = None
    mem: str | None = None
    mem_per_cpu: str | None = None
    time: str | None = None
    max_jobs_run: int | None = None


@dataclass(frozen=True)
class RetryPlan:
    """The rows chosen and the submission that reruns them (None when nothing needs a retry)."""

    history: History
    chosen: tuple[TaskRow, ...]
    plan: SubmitPlan | None
    sizes: SizeProposal | None = None     # what --mem auto / --time auto chose, and why
    unsubmitted: tuple[int, ...] = ()     # values a refused sbatch window left out, submitted now
    advice: tuple[Advice, ...] = ()       # what --mem auto / --time auto would ask for, when not asked

    @property
    def values(self) -> tuple[int | None, ...]:
        return tuple(row.value for row in self.chosen) + self.unsubmitted

    @property
    def value_ranges(self) -> str:
        numbers = [v for v in self.values if v is not None]
        return compress(numbers) if numbers else "the job"


def parse_states(text: str) -> frozenset[str]:
    """``FAILED,TIMEOUT`` (case-insensitive, Slurm's short forms too) -> state labels."""
    labels: set[str] = set()
    for word in (w.strip() for w in text.split(",")):
        if not word:
            raise InputError("--state", f"{text!r}: empty state name")
        upper = word.upper()
        if upper in EXTRA_LABELS:
            labels.add(upper)
            continue
        try:
            labels.add(JobState.parse(upper).value)
        except ValueError:
            raise InputError("--state", f"{word!r} is not a job state (e.g. FAILED, TIMEOUT, "
                             "OUT_OF_MEMORY, CANCELLED, LOST, NOT_RUN)") from None
    return frozenset(labels)


def live_rows(rows: Sequence[TaskRow]) -> list[TaskRow]:
    return [row for row in rows if row.state is not None and not row.state.is_terminal]


def left_out(history: History, request: RetryRequest) -> tuple[int, ...]:
    """The values no attempt has submitted yet (sbatch refused their window: `History.unsubmitted`), which a retry
    submits too: all of them by default, those named with --values; none for --state (they have
    no state: they never ran)."""
    values, _ = history.unsubmitted()
    if request.states is not None:
        return ()
    if request.values is not None:
        wanted = set(request.values)
        return tuple(v for v in values if v in wanted)
    return tuple(values)


def choose(rows: Sequence[TaskRow], request: RetryRequest, unsubmitted: Sequence[int] = ()) -> list[TaskRow]:
    """By default every row that did not complete with exit code 0; --state and --values narrow it.

    Named values are rerun whatever their state unless --state is given too; a named value
    the newest attempt never submitted (`unsubmitted`) is known, though no row has it.
    """
    if request.values is not None:
        known = {row.value for row in rows} | set(unsubmitted)
        unknown = [v for v in request.values if v not in known]
        if unknown:
            raise InputError("--values", f"the submission has no task with value(s) {compress(unknown)}")
        wanted = set(request.values)
        rows = [row for row in rows if row.value in wanted]
        if request.states is None:
            return list(rows)
    if request.states is not None:
        return [row for row in rows if row.state_label in request.states]
    return rerun_by_default(rows)


def retry_options(history: History, chosen: Sequence[TaskRow], request: RetryRequest,
                  unsubmitted: Sequence[int] = ()) -> SubmitOptions:
    """The newest attempt's options, the array narrowed to the chosen values, the overrides applied;
    the resources not overridden are those the chosen tasks last ran with (`ran_with`)."""
    base = ran_with(history, chosen, submit_options(history.current, history.record_path))
    mem, mem_per_cpu = base.mem, base.mem_per_cpu
    if request.mem is not None:
        mem, mem_per_cpu = request.mem, None
    if request.mem_per_cpu is not None:
        mem, mem_per_cpu = None, request.mem_per_cpu
    values = tuple(row.value for row in chosen if row.value is not None) + tuple(unsubmitted)
    array = ArraySpec(_array_name(history), values) if values else None
    return replace(
        base, mem=mem, mem_per_cpu=mem_per_cpu, array=array,
        num_threads=request.num_threads if request.num_threads is not None else base.num_threads,
        time=request.time if request.time is not None else base.time,
        max_jobs_run=(request.max_jobs_run if request.max_jobs_run is not None
                      else base.max_jobs_run if array is not None else None))


def ran_with(history: History, chosen: Sequence[TaskRow], newest: SubmitOptions) -> SubmitOptions:
    """`newest` with the memory, time and threads the chosen tasks' own attempts asked for: the
    largest of each where those attempts differ, so no task is rerun with less than it had.

    The newest attempt's were used: `retry --state OUT_OF_MEMORY --mem 600M` and then `retry
    --state TIMEOUT --time 3` ran the timed-out tasks with 600M too (6x the memory they had and
    needed; `history` said only `time=3`), and a later retry of the FAILED ones with both."""
    attempts = sorted({row.attempt for row in chosen})
    if not attempts or attempts == [history.current.attempt]:
        return newest
    asked = []
    for number in attempts:
        record = history.current if number == history.current.attempt else history.records.get(number)
        if record is None:
            return newest
        try:
            options = submit_options(record, history.record_path)
            mem = check_memory("mem", options.mem)
            per_cpu = check_memory("mem_per_cpu", options.mem_per_cpu)
            time = check_time("time", options.time)
        except InputError:        # a record edited by hand: the newest attempt's, as before
            return newest
        per_node = (parse_size(mem, "M") if mem else parse_size(per_cpu, "M") * max(1, options.num_threads)
                    if per_cpu else None)
        asked.append((options, per_node, time_minutes(time) if time else None))
    # an unset size is the site's default, which the newest attempt's options carry as well
    memory = max(asked, key=lambda a: -1 if a[1] is None else a[1])[0]
    limit = max(asked, key=lambda a: -1 if a[2] is None else a[2])[0]
    return replace(newest, mem=memory.mem, mem_per_cpu=memory.mem_per_cpu, time=limit.time,
                   num_threads=max(a[0].num_threads for a in asked))


def _array_name(history: History) -> str:
    name = history.array_name or array_name(history.current.options)
    if not name:
        raise InputError("record", f"{history.record_path} names no array")
    return str(name)


def _refuse_other_commands(history: History, chosen: Sequence[TaskRow]) -> None:
    """A retry reruns the newest attempt's command: refused for values an older attempt ran with another.

    After `--array JOB=1:6 -- python t.py JOB`, a new submission of the same
    output pattern `--array JOB=1:2 -- python q.py JOB` is the newest attempt;
    retrying values 3-6 would have run q.py, a program they never ran.
    """
    newest = _how_run(history.current, history.record_path)
    for number in sorted({row.attempt for row in chosen} - {history.current.attempt}):
        record = history.records.get(number)
        if record is None:      # its record is unreadable: said in history's problems
            continue
        ran = _how_run(record, history.record_path)
        if ran != newest:
            values = compress([row.value for row in chosen if row.attempt == number and row.value is not None])
            raise InputError("TARGET", f"values {values or 'task'} last ran {_said(ran)} (attempt {number}), not "
                             f"{_said(newest)} as the newest attempt, which a retry reruns; choose --values of "
                             "the newest attempt, or rerun those with hyperion-submit")


def _how_run(record: SubmitRecord, shown: str) -> tuple[str, tuple[str, ...], str]:
    """What makes two runs of one value the same program: backend, command and where it ran."""
    return record.backend, submit_options(record, shown).command, record.cwd


def _said(how: tuple[str, tuple[str, ...], str]) -> str:
    backend, command, cwd = how
    return f"`{shell_join(command)}` in {shell_quote(cwd)} ({backend})"


def plan_retry(history: History, rows: Sequence[TaskRow], request: RetryRequest) -> RetryPlan:
    """Refuse while tasks are live; choose the rows; plan the rerun (no plan when nothing is chosen)."""
    live = live_rows(rows)
    if live:
        counts = ", ".join(f"{state} {n}" for state, n in sorted(state_counts(live).items()))
        jobs = ", ".join(sorted({row.job_id for row in live}))
        orphans = [f"{'task' if row.value is None else row.value}: {row.reason}" for row in live
                   if row.job_id == LOCAL_JOB and row.reason]
        note = f" ({'; '.join(orphans[:3])}; kill -- -GROUP ends it)" if orphans else ""
        slurm = sorted({row.job_id for row in live} - {LOCAL_JOB})   # a local run's runner stops it
        stop = f"cancel them (hyperion-jobs cancel {' '.join(slurm)})" if slurm else "stop them"
        raise InputError("TARGET", f"{history.record_path} still has {len(live)} live task(s) ({counts}) "
                         f"of job(s) {jobs}{note}; wait for them to end ({reattach_command(history.record_path)}) "
                         f"or {stop} first")
    extra = left_out(history, request)
    chosen = tuple(choose(rows, request, history.unsubmitted()[0]))
    if not chosen and not extra:
        return RetryPlan(history, (), None)
    _refuse_other_commands(history, chosen)
    check_rerun(history.current)
    request, sizes, advice = plan_sizes(rows, chosen, history, request)
    try:
        site = load_site(history.current.cfg)
    except InputError as err:
        raise InputError("--cfg", f"the submission's site file cannot be used any more: {err}") from None
    return RetryPlan(history, chosen, build_plan(site, retry_options(history, chosen, request, extra)), sizes,
                     extra, advice)


def plan_sizes(rows: Sequence[TaskRow], chosen: Sequence[TaskRow], history: History,
               request: RetryRequest) -> tuple[RetryRequest, SizeProposal | None, tuple[Advice, ...]]:
    """The request with ``auto`` resolved, what auto chose and why, and the advice for the sizes kept
    that chosen tasks ran out of: the one rule of `hyperion-jobs retry` and of the checkpoint bridge
    (`hyperion-checkpoint retry --submit`, whose shards are `chosen`). The proposal is read only when
    a size is auto or advised (it walks every row's usage)."""
    proposal = propose(rows, chosen, history) if AUTO in (request.mem, request.time) or \
        _advised(request, chosen) else None
    advice = size_advice(request, chosen, proposal)
    request, sizes = resolve_auto(request, proposal)
    return request, sizes, advice


def size_option(flag: str, text: str | None) -> str | None:
    """``--mem`` / ``--time`` of a retry as typed: ``auto``, or a size checked as hyperion-submit checks
    it (InputError naming `flag`); None when not given. `hyperion-jobs retry`'s and the bridge's."""
    if text == AUTO:
        return AUTO
    return check_memory(flag, text) if flag == "--mem" else check_time(flag, text)


def resolve_auto(request: RetryRequest, proposal: SizeProposal | None) -> tuple[RetryRequest, SizeProposal | None]:
    """``--mem auto`` / ``--time auto``: the sizes of `proposal` (`propose`), or the request unchanged."""
    if AUTO not in (request.mem, request.time) or proposal is None:
        return request, None
    sizes = proposal.only(request.mem == AUTO, request.time == AUTO)
    return replace(request,
                   mem=sizes.mem if request.mem == AUTO else request.mem,
                   time=sizes.time if request.time == AUTO else request.time), sizes


def _advised(request: RetryRequest, chosen: Sequence[TaskRow]) -> tuple[str, ...]:
    """The sizes (``--mem``, ``--time``) chosen tasks ran out of that the retry keeps as before."""
    kept = {"--mem": request.mem is None and request.mem_per_cpu is None, "--time": request.time is None}
    return tuple(flag for flag in ran_out_of(row.state_label for row in chosen) if kept[flag])


def size_advice(request: RetryRequest, chosen: Sequence[TaskRow], proposal: SizeProposal | None) -> tuple[Advice, ...]:
    """For a retry that keeps the sizes its OUT_OF_MEMORY or TIMEOUT tasks ran out of: what
    ``--mem auto`` / ``--time auto`` would ask for, (flag, why) each (`size_lines` words them). Without
    it the plan showed the old `--mem 100M` and nothing else, and a user who followed it got the same
    OUT_OF_MEMORY. Its flags are the sizes ``auto`` would change: the checkpoint screen's Resubmit asks
    auto for these alone, as `hyperion-checkpoint retry --submit RECORD --mem auto --time auto` would."""
    advised = _advised(request, chosen)
    if proposal is None or not advised:
        return ()
    return tuple((flag, why) for flag, value, why in
                 (("--mem", proposal.mem, proposal.mem_why), ("--time", proposal.time, proposal.time_why))
                 if flag in advised and value is not None)


def propose(rows: Sequence[TaskRow], chosen: Sequence[TaskRow], history: History) -> SizeProposal:
    """Sizes for the chosen tasks by their states (OUT_OF_MEMORY, TIMEOUT); every task's MaxRSS
    counts, since a peak seen anywhere may be what the rerun needs."""
    picked = {id(row) for row in chosen}
    asked = asked_by_attempt(history)
    observed = [(row.state_label, with_request(row.usage or Usage(), asked.get(row.attempt))) if id(row) in picked
                else ("COMPLETED", row.usage)
                for row in rows if id(row) in picked or row.usage is not None]
    return propose_sizes(observed)


def describe_retry(retry: RetryPlan) -> str:
    """What the retry would do, in the words of the preview and the confirmation."""
    assert retry.plan is not None
    plan = retry.plan
    counts = ", ".join(f"{state} {n}" for state, n in sorted(state_counts(retry.chosen).items()))
    if retry.unsubmitted:
        counts = ", ".join(filter(None, [counts, f"NOT_SUBMITTED {len(retry.unsubmitted)}"]))
    lines = [f"retry of {retry.history.record_path} as attempt {retry.history.newest_number + 1}: "
             f"{len(retry.values)} task(s) ({counts})",
             f"  values: {retry.value_ranges}"]
    if plan.windows:
        lines.append("  windows: " + "; ".join(
            f"--array={w.array_expression} offset {w.offset}" if w.array_expression else "single job"
            for w in plan.windows))
    lines += [f"  {line}" for line in size_lines(retry.sizes, retry.advice)]
    lines.append(f"  runs in: {retry.history.current.cwd}")
    lines.append(f"  command: {shell_join(plan.argv)}")
    return printable("\n".join(lines), layout=True)


def size_lines(sizes: SizeProposal | None, advice: Sequence[Advice]) -> list[str]:
    """``sizes: ...`` lines: why auto chose each size (or that no task ran out of it), and for the
    sizes kept that tasks ran out of, what auto would ask for. The preview's words in `describe_retry`
    and in the checkpoint bridge's plan (`hyperion-checkpoint retry --submit`)."""
    lines: list[str] = []
    if sizes is not None:
        ran_out = " or ".join({"--mem": "memory", "--time": "time"}[flag] for flag in sizes.asked)
        lines += [f"sizes: {why}" for why in sizes.reasons] or \
            [f"sizes: no task ran out of {ran_out}: {' and '.join(sizes.asked)} as before"]
    return lines + [f"sizes: as before; {flag} auto would ask for {why}" for flag, why in advice]
