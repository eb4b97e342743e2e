"""One array's usage at a glance: spread of memory and time, CPU efficiency, tasks near a limit.

Users size the next run from this: the p95 of MaxRSS says what ``--mem`` most
tasks need, the tasks above 90% of a limit say which ones are about to fail.
Pure: usages in, a frozen summary out, then text or JSON.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from backends.records.record import LOCAL_JOB
from backends.states import RUNNING_NOW, WAITING, JobState
from backends.watch.rows import never_started
from backends.watch.usage import Key, Usage

NEAR_LIMIT = 0.9   # a task above this fraction of its memory or time limit is "near" it


@dataclass(frozen=True)
class Spread:
    """Median, 95th percentile (nearest rank) and maximum of the tasks that reported a value."""

    count: int
    median: float | None
    p95: float | None
    max: float | None

    def to_json(self) -> dict[str, float | int | None]:
        return {"count": self.count, "median": self.median, "p95": self.p95, "max": self.max}


@dataclass(frozen=True)
class NearLimit:
    """A task above NEAR_LIMIT of a limit: its id (``12_3``) and the fraction used, or one that hit
    it (Slurm ended it OUT_OF_MEMORY or TIMEOUT: the sampled peak may read well under the limit)."""

    task: str
    fraction: float | None
    hit: bool = False


@dataclass(frozen=True)
class UsageSummary:
    tasks: int
    max_rss_bytes: Spread
    elapsed_seconds: Spread
    cpu_efficiency: float | None            # all CPU time / all allocated CPU time
    near_memory_limit: tuple[NearLimit, ...]
    near_time_limit: tuple[NearLimit, ...]
    # Whether any task had a limit to be near: a local run has none, and "over 90% of --mem: none"
    # read as if the tasks had been measured against one.
    memory_limited: bool = True
    time_limited: bool = True

    def to_json(self) -> dict[str, object]:
        return {
            "tasks": self.tasks,
            "max_rss_bytes": self.max_rss_bytes.to_json(),
            "elapsed_seconds": self.elapsed_seconds.to_json(),
            "cpu_efficiency": self.cpu_efficiency,
            "near_memory_limit": [{"task": n.task, "fraction": n.fraction, "hit": n.hit}
                                  for n in self.near_memory_limit],
            "near_time_limit": [{"task": n.task, "fraction": n.fraction, "hit": n.hit}
                                for n in self.near_time_limit],
            # an empty list above is "none near" only where a task had the limit (not a local run)
            "memory_limit_enforced": self.memory_limited,
            "time_limit_enforced": self.time_limited,
        }


def spread(values: Sequence[float]) -> Spread:
    """Median, nearest-rank p95 and max; all None for no values."""
    import statistics  # with fractions and decimal: only when usage is summarised

    if not values:
        return Spread(0, None, None, None)
    ordered = sorted(values)
    rank = max(1, math.ceil(0.95 * len(ordered)))
    return Spread(len(ordered), statistics.median(ordered), ordered[rank - 1], ordered[-1])


def task_label(key: Key) -> str:
    """``("12", 3)`` -> ``12_3``; a plain job is its id."""
    job, task = key
    return job if task is None else f"{job}_{task}"


def _near(pairs: list[tuple[Key, int | float | None, int | float | None]],
          hit: frozenset[Key] = frozenset()) -> tuple[NearLimit, ...]:
    """Tasks that hit the limit, then those whose used/limit is above NEAR_LIMIT, most loaded first."""
    near = [(used / limit if used is not None and limit else None, key) for key, used, limit in pairs
            if key in hit or used is not None and limit and used / limit > NEAR_LIMIT]
    near.sort(key=lambda item: (item[1] not in hit, -(item[0] or 0), item[1][0], item[1][1] or 0))
    return tuple(NearLimit(task_label(key), None if fraction is None else round(fraction, 4), key in hit)
                 for fraction, key in near)


def cpu_efficiency(usages: Sequence[Usage]) -> float | None:
    """CPU time over allocated CPU time (elapsed x CPUs), over the tasks that report all three."""
    used = allocated = 0.0
    for u in usages:
        if u.cpu_seconds is not None and u.elapsed_seconds and u.alloc_cpus:
            used += u.cpu_seconds
            allocated += u.elapsed_seconds * u.alloc_cpus
    return used / allocated if allocated else None


def summarize(usages: Mapping[Key, Usage], out_of_memory: Iterable[Key] = (),
              timed_out: Iterable[Key] = ()) -> UsageSummary:
    """The summary of every task given (pass one array's or one record's tasks); the tasks Slurm
    ended OUT_OF_MEMORY or TIMEOUT count as at their limit whatever their sampled figures say."""
    oom, late = frozenset(out_of_memory), frozenset(timed_out)
    items = list(usages.items()) + [(key, Usage()) for key in sorted(oom | late, key=str) if key not in usages]
    values = [u for _, u in items]
    return UsageSummary(
        tasks=len(items),
        max_rss_bytes=spread([u.max_rss_bytes for u in values if u.max_rss_bytes is not None]),
        elapsed_seconds=spread([u.elapsed_seconds for u in values if u.elapsed_seconds is not None]),
        cpu_efficiency=cpu_efficiency(values),
        near_memory_limit=_near([(k, u.max_rss_bytes, u.req_mem_bytes) for k, u in items], oom),
        near_time_limit=_near([(k, u.elapsed_seconds, u.time_limit_seconds) for k, u in items], late),
        memory_limited=any(u.req_mem_bytes for u in values),
        time_limited=any(u.time_limit_seconds for u in values),
    )


def summarize_rows(rows: Mapping[Key, object]) -> UsageSummary | None:
    """The summary of task rows by key (`hyperion-jobs usage` and the console alike): their usage,
    and which of them Slurm ended at a limit; None when no row says anything."""
    used = {key: used for key, row in rows.items() if (used := usage_of(row)) is not None}
    ended = {key: getattr(row, "state", None) for key, row in rows.items()}
    oom = [key for key, state in ended.items() if state is JobState.OUT_OF_MEMORY]
    late = [key for key, state in ended.items() if state is JobState.TIMEOUT]
    if not (used or oom or late):
        return None
    return summarize(used, oom, late)


@dataclass(frozen=True)
class StateTally:
    """How many tasks ended, run and wait: the counts a usage heading says."""

    ended: int = 0
    running: int = 0
    pending: int = 0

    def said(self) -> str:
        """``111 ended, 7 running, 32 pending``; running and pending only when there are any."""
        return ", ".join([f"{self.ended} ended"] + [f"{n} {what}" for n, what in
                                                    ((self.running, "running"), (self.pending, "pending")) if n])


def tally(counts: Iterable[tuple[JobState | None, int]]) -> StateTally:
    """Tasks per state -> ended (a terminal state), running (RUNNING_NOW), pending (WAITING): the one
    rule for `hyperion-jobs usage` (over rows) and the console (over the per-state counts its
    counts line shows, so the heading under that line can never say other numbers)."""
    ended = running = pending = 0
    for state, n in counts:
        if state is None:
            continue
        ended += n if state.is_terminal else 0
        running += n if state in RUNNING_NOW else 0
        pending += n if state in WAITING else 0
    return StateTally(ended, running, pending)


_STATES = {state.value: state for state in JobState}


def tally_names(counts: Mapping[str, int]) -> StateTally:
    """`tally` of counts by state name (``RUNNING``, ``NOT_RUN``, ``UNKNOWN``: a name no Slurm state
    has is in none of the three, as a row without a state)."""
    return tally((_STATES.get(name), n) for name, n in counts.items())


@dataclass(frozen=True)
class UsageHeading:
    """What a usage heading says besides the state counts: how many tasks the summary is of, of how
    many, and where the figures come from. The costly part (a pass over every row): the console
    works it out after live updates, and says it with the counts of the moment (`text`)."""

    summarized: int
    total: int
    measured: int
    local: bool

    def text(self, counts: StateTally) -> str:
        source = "run locally: elapsed time only" if self.local else f"accounting measured {self.measured}"
        untimed = counts.ended - self.summarized if self.local else 0
        if untimed > 0:    # a LOST task (its runner killed): "usage of 17 ... (18 ended" said no more
            source += f", {untimed} ended without one recorded"
        return f"usage of {self.summarized} of {self.total} task(s) ({counts.said()}; {source})"


def heading_of(summary: UsageSummary | None, rows: Iterable[object], tasks: Collection[Key]) -> UsageHeading:
    """`usage_heading` less its state counts."""
    measured = sum(getattr(row, "usage", None) is not None and not never_started(row) for row in rows)
    local = bool(tasks) and all(job == LOCAL_JOB for job, _ in tasks)
    return UsageHeading(summary.tasks if summary else 0, len(tasks), measured, local)


def usage_heading(summary: UsageSummary | None, rows: Iterable[object], tasks: Collection[Key]) -> str:
    """``usage of 4 of 10 task(s) (4 ended, 2 running, 4 pending; accounting measured 6)``: how
    many tasks the summary is of (its ``(0 of 4 tasks)``), how many ended, run and wait (those two
    said when there are any: mid-run, "111 ended; accounting measured 118" left the 7 running
    tasks to be worked out) and where the figures come from; `hyperion-jobs usage` heads its
    summary with it and the console shows it above its own.

    `rows` are the task rows known (`summarize_rows`' summary of them), `tasks` the key of every task
    of the record, job id first. The CLI said "usage of 0 of 200" (the tasks accounting measured)
    above "(0 of 7 tasks)" (the tasks with any figure, a local task's elapsed time too), and the
    console counted MaxRSS "(0 of 200)": two totals for one summary."""
    rows = list(rows)
    return heading_of(summary, rows, tasks).text(tally((getattr(row, "state", None), 1) for row in rows))


def usage_of(row: object) -> Usage | None:
    """A row's usage as the summary counts it, and the console's usage columns show it (their
    `time/limit` said `-` for local tasks under a summary of their elapsed times), with the elapsed time its final state holds where Slurm did not give one:
    a local task has no accounting, but the ledger says how long it ran. None for a task that never
    started: the controller's request and 0:00 of a pending task are no measure (the summary of a
    running array said "accounting measured 40" of 40, 18 of them pending, its median elapsed 1 s)."""
    if never_started(row):
        return None
    usage = getattr(row, "usage", None)
    state, elapsed = getattr(row, "state", None), getattr(row, "elapsed", None)
    if elapsed is None or state is None or not state.is_terminal or (usage and usage.elapsed_seconds is not None):
        return usage
    return replace(usage or Usage(), elapsed_seconds=elapsed)


def human_bytes(value: float | None) -> str:
    """``328732672`` -> ``314M`` (binary units, 3 significant digits); None -> ``-``."""
    if value is None:
        return "-"
    for unit in ("", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            break
        value /= 1024
    return f"{value:.0f}{unit}" if value >= 100 or not unit else f"{value:.3g}{unit}"


def human_seconds(value: float | None) -> str:
    """``93780`` -> ``1-02:03:00``, ``6.7`` -> ``00:00:06`` (Slurm's spelling, whole seconds
    gone by, as every elapsed time is shown); None -> ``-``. A local task's 0.04 s is
    ``<00:00:01``: as ``00:00:00`` it read as a time nobody measured (0.7 s read 00:00:01 here
    and 0:00:00 in `status`)."""
    if value is None:
        return "-"
    if 0 < value < 1:
        return "<00:00:01"
    total = int(value)
    days, rest = divmod(total, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def _task_list(prefix: str, near: tuple[NearLimit, ...], limited: bool = True, width: int = 80) -> str:
    """``PREFIX 12_3 (98%), 12_7 (93%) and 4 more``: the most loaded first, within `width`; ``-
    (no limit enforced)`` where no task had the limit to compare with (`limited` false)."""
    if not near:
        return prefix + ("none" if limited else "- (no limit enforced)")
    shown: list[str] = []
    for i, n in enumerate(near):
        item = f"{n.task} ({'reached it' if n.hit else format(n.fraction, '.0%')})"
        rest = len(near) - i - 1
        tail = f" and {rest} more" if rest else ""
        line = prefix + ", ".join(shown + [item]) + tail
        if shown and len(line) > width:
            break
        shown.append(item)
    more = len(near) - len(shown)
    return prefix + ", ".join(shown) + (f" and {more} more" if more else "")


def format_summary(summary: UsageSummary) -> list[str]:
    """Lines of at most 80 columns (unless task ids are very long) for the CLI and the console."""
    rss, elapsed = summary.max_rss_bytes, summary.elapsed_seconds
    eff = "-" if summary.cpu_efficiency is None else f"{summary.cpu_efficiency:.0%}"
    return [
        f"MaxRSS   median {human_bytes(rss.median)}  p95 {human_bytes(rss.p95)}  "
        f"max {human_bytes(rss.max)}  ({rss.count} of {summary.tasks} tasks)",
        f"elapsed  median {human_seconds(elapsed.median)}  p95 {human_seconds(elapsed.p95)}  "
        f"max {human_seconds(elapsed.max)}",
        f"CPU efficiency {eff} (CPU time / elapsed x CPUs)",
        _task_list("over 90% of --mem: ", summary.near_memory_limit, summary.memory_limited),
        _task_list("over 90% of --time: ", summary.near_time_limit, summary.time_limited),
    ]
