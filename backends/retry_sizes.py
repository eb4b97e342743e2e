"""Sizes to propose for a retry of OUT_OF_MEMORY and TIMEOUT tasks, with the reason for each.

Rules (what a user would do by hand, once, for all tasks retried together):

- OUT_OF_MEMORY: ``--mem`` = the larger of 1.5x the largest MaxRSS seen and 2x the
  largest request of the tasks that ran out. Under cgroup enforcement a task is
  killed at its limit, so its MaxRSS never shows the real need and 2x the request
  is what moves it on; where memory is only sampled, the peak can exceed the
  request and 1.5x of it is the better guess.
- TIMEOUT: ``--time`` = 2x the largest limit of the tasks that timed out.

Sizes are rounded up to what sbatch and hyperion-submit accept: whole MiB (``G``
when it divides evenly) and whole minutes (``HH:MM:SS``, ``D-HH:MM:SS`` from one day on).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from backends.states import JobState
from backends.submit.resources import MAX_TIME_MINUTES
from backends.watch.usage import Usage
from backends.watch.usage_summary import human_bytes, human_seconds

MIB = 1024 ** 2
MEM_RSS_FACTOR = 1.5
MEM_REQUEST_FACTOR = 2
TIME_FACTOR = 2


@dataclass(frozen=True)
class SizeProposal:
    """``--mem`` / ``--time`` to retry with (None: keep the old value), one "why" line each."""

    mem: str | None
    time: str | None
    reasons: tuple[str, ...]
    mem_why: str | None = None     # the reason about --mem among `reasons`
    time_why: str | None = None    # the reason about --time
    asked: tuple[str, ...] = ("--mem", "--time")   # the sizes proposed for (`only`)

    def to_json(self) -> dict[str, object]:
        return {"mem": self.mem, "time": self.time, "reasons": list(self.reasons)}

    def only(self, mem: bool, time: bool) -> SizeProposal:
        """The proposal for the sizes asked for alone: with `--mem auto` only, the --time reason
        read as if the limit were raised, where the retry keeps it."""
        mem_why, time_why = self.mem_why if mem else None, self.time_why if time else None
        asked = tuple(flag for flag, wanted in (("--mem", mem), ("--time", time)) if wanted)
        return SizeProposal(self.mem if mem else None, self.time if time else None,
                            tuple(why for why in (mem_why, time_why) if why), mem_why, time_why, asked)


def mem_spelling(size_bytes: float) -> str:
    """Bytes rounded up to whole MiB: ``200M``; ``2G`` when a whole number of GiB."""
    mib = max(1, math.ceil(size_bytes / MIB))
    return f"{mib // 1024}G" if mib % 1024 == 0 else f"{mib}M"


def time_spelling(seconds: float) -> str:
    """Seconds rounded up to whole minutes, spelled as the limit it doubles is shown: ``00:20:00``,
    ``1-12:00:00`` from a day on (a bare ``20``, minutes to Slurm, read as seconds next to ``00:10:00``)."""
    return human_seconds(max(1, math.ceil(seconds / 60)) * 60)


def _state(name: str) -> JobState | None:
    try:
        return JobState.parse(name)
    except ValueError:
        return None


def propose_mem(tasks: Sequence[tuple[str, Usage]]) -> tuple[str | None, str | None]:
    """(``--mem`` value, why) for the OUT_OF_MEMORY tasks among `tasks`; (None, None) if none."""
    oom = [u for state, u in tasks if _state(state) is JobState.OUT_OF_MEMORY]
    if not oom:
        return None, None
    peaks = [u.max_rss_bytes for _, u in tasks if u.max_rss_bytes]
    requests = [u.req_mem_bytes for u in oom if u.req_mem_bytes]
    peak, request = max(peaks, default=None), max(requests, default=None)
    if peak is None and request is None:
        return None, (f"{len(oom)} task(s) OUT_OF_MEMORY, but Slurm reported neither MaxRSS "
                      "nor the request: choose --mem by hand")
    by_rss = MEM_RSS_FACTOR * peak if peak else 0
    by_request = MEM_REQUEST_FACTOR * request if request else 0
    value = mem_spelling(max(by_rss, by_request))
    if by_request >= by_rss:
        rule = f"2x the request {human_bytes(request)}"
        other = f" (1.5x the largest MaxRSS {human_bytes(peak)} is less)" if peak else ""
    else:
        rule = f"1.5x the largest MaxRSS {human_bytes(peak)}"
        other = f" (2x the request {human_bytes(request)} is less)" if request else ""
    return value, f"--mem {value}: {len(oom)} task(s) OUT_OF_MEMORY; {rule}{other}"


def propose_time(tasks: Sequence[tuple[str, Usage]]) -> tuple[str | None, str | None]:
    """(``--time`` value, why) for the TIMEOUT tasks among `tasks`; (None, None) if none."""
    timed_out = [u for state, u in tasks if _state(state) is JobState.TIMEOUT]
    if not timed_out:
        return None, None
    limits = [u.time_limit_seconds for u in timed_out if u.time_limit_seconds]
    if not limits:
        return None, (f"{len(timed_out)} task(s) TIMEOUT, but Slurm reported no time limit: "
                      "choose --time by hand")
    limit = max(limits)
    wanted = TIME_FACTOR * limit
    if wanted > MAX_TIME_MINUTES * 60:
        value = time_spelling(MAX_TIME_MINUTES * 60)
        return value, (f"--time {value}: {len(timed_out)} task(s) TIMEOUT; 2x the limit {human_seconds(limit)} "
                       "is more than Slurm handles, so its longest limit")
    value = time_spelling(wanted)
    return value, f"--time {value}: {len(timed_out)} task(s) TIMEOUT; 2x the limit {human_seconds(limit)}"


def propose_sizes(tasks: Sequence[tuple[str, Usage]]) -> SizeProposal:
    """Proposed ``--mem`` and ``--time`` for retrying `tasks` (state name, usage) together.

    Tasks in other states only contribute their MaxRSS (a peak seen anywhere is
    a size the retried tasks may need too).
    """
    mem, mem_why = propose_mem(tasks)
    time, time_why = propose_time(tasks)
    return SizeProposal(mem, time, tuple(why for why in (mem_why, time_why) if why), mem_why, time_why)
