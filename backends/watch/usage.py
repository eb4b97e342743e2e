"""What each task used, from one sacct answer that includes the job steps.

MaxRSS is measured per step (``12_3.batch``, ``12_3.extern``, ``12_3.0``), never on
the task's allocation row, so the query runs without ``-X`` and a task's peak is
the largest over its steps; CPU time, elapsed time, the limit and the request
come from the allocation row. squeue's answer gives a task's time used and
request too (`controller_usage`), for the polls that ask no sacct. Pure text in,
frozen values out: the thin code that runs sacct and squeue lives with the poller.

Spellings are Slurm's: sizes with K/M/G/T suffixes (binary), ReqMem per node
(``100M`` in 22.05, ``4000Mn`` before) or per CPU (``4000Mc``, times the CPUs),
durations ``[D-]HH:MM:SS[.mmm]`` or ``MM:SS.mmm``, and UNLIMITED,
Partition_Limit or an empty field for "not known".
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

from backends.figures import is_figure
from backends.ranges import expand
from backends.states import JobState

# ReqTRES (cpu=, mem=) stands in when ReqMem or AllocCPUS say nothing (pending rows,
# versions that print ReqMem per CPU).
USAGE_FIELDS = ("JobID", "State", "MaxRSS", "TotalCPU", "Elapsed", "Timelimit",
                "ReqMem", "AllocCPUS", "ReqTRES")
_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGTP]?)([nc]?)\Z")
_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?\Z")

Key = tuple[str, "int | None"]
USAGE_KEYS = ("max_rss_bytes", "cpu_seconds", "elapsed_seconds", "time_limit_seconds", "req_mem_bytes",
              "alloc_cpus")


@dataclass(frozen=True, slots=True)
class Usage:
    """What one task used and was allowed; each field None when Slurm did not say."""

    max_rss_bytes: int | None = None        # largest MaxRSS over the task's steps
    cpu_seconds: float | None = None        # TotalCPU, known once the task ended
    elapsed_seconds: float | None = None
    time_limit_seconds: float | None = None
    req_mem_bytes: int | None = None        # the task's memory limit (per node)
    alloc_cpus: int | None = None

    def to_json(self) -> dict[str, int | float | None]:
        """Exactly the six fields, for ``--json`` and the attempt history."""
        return asdict(self)

    def filled_from(self, other: Usage | None) -> Usage:
        """These figures, each one not said taken from `other`: a later record of a task's usage
        that lacks its peak must not take away the peak an earlier answer showed."""
        if other is None:
            return self
        return Usage(**{name: other_value if value is None else value
                        for (name, value), other_value in zip(asdict(self).items(), asdict(other).values())})


def usage_from_json(raw: Mapping[str, object]) -> Usage | None:
    """A Usage from its `to_json` form (as the ledger keeps it); None when nothing in it is a number."""
    values = {}
    for name in USAGE_KEYS:
        value = raw.get(name)
        values[name] = value if is_figure(value) else None
    if all(v is None for v in values.values()):
        return None
    for name in ("max_rss_bytes", "req_mem_bytes", "alloc_cpus"):
        if values[name] is not None:
            values[name] = int(values[name])
    return Usage(**values)


def usage_argv(job_ids: Iterable[str]) -> list[str]:
    """sacct for all jobs at once, steps included (no ``-X``): MaxRSS lives on step rows."""
    return ["sacct", "-j", ",".join(job_ids), "--parsable2", "--noheader",
            "-o", ",".join(USAGE_FIELDS)]


@lru_cache(maxsize=4096)
def parse_size(text: str, default_unit: str = "") -> int | None:
    """``628368K`` -> 643448832 bytes; empty or unreadable -> None.

    A number without a suffix is in `default_unit` ("" bytes for MaxRSS, "M" for
    ReqMem, as sbatch reads ``--mem=2048``). A trailing n/c scope is ignored here.
    """
    match = _SIZE.match(text.strip())
    if not match:
        return None
    unit = match[2] or default_unit
    return round(float(match[1]) * 1024 ** _UNITS[unit])


@lru_cache(maxsize=4096)
def parse_duration(text: str) -> float | None:
    """``1-02:03:04``, ``01:02:03``, ``02:03.370``, ``07`` -> seconds; UNLIMITED etc. -> None."""
    days, dash, clock = text.strip().rpartition("-")
    parts = clock.split(":")
    if len(parts) > 3 or dash and not days.isdigit():
        return None
    if not _SECONDS.match(parts[-1]) or not all(p.isdigit() for p in parts[:-1]):
        return None   # UNLIMITED, Partition_Limit, INVALID, empty
    whole = 0
    for part in parts[:-1]:
        whole = whole * 60 + int(part)
    return (int(days) if days else 0) * 86400 + whole * 60 + float(parts[-1])


def _tres(text: str, name: str) -> str:
    """The value of `name` in a TRES list ``billing=1,cpu=2,mem=100M,node=1``, or ""."""
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key == name:
            return value
    return ""


def req_mem_bytes(req_mem: str, req_tres: str, cpus: int | None) -> int | None:
    """The task's memory limit: ReqMem per node, or per CPU (``c``) times `cpus`.

    22.05 prints the per-node total for --mem-per-cpu too (``100M`` for 50M x 2);
    older versions print ``50Mc``. ReqTRES's mem= (the job's total) is the fallback.
    """
    text = req_mem.strip()
    size = parse_size(text, "M")
    if size is not None and size > 0:
        if text.endswith("c"):
            return size * cpus if cpus else None
        return size
    return parse_size(_tres(req_tres, "mem"), "M") or None


def _cpus(alloc_cpus: str, req_tres: str) -> int | None:
    """AllocCPUS, or ReqTRES's cpu= while nothing is allocated yet (0 or empty)."""
    for text in (alloc_cpus.strip(), _tres(req_tres, "cpu")):
        if text.isdigit() and int(text) > 0:
            return int(text)
    return None


@lru_cache(maxsize=4096)
def controller_usage(time_used: str, time_limit: str, cpus: str, tres: str, nodes: str) -> Usage:
    """What squeue says of a task (TimeUsed, TimeLimit, NumCPUs, tres-alloc, NumNodes): the figures
    sacct gives a running task (its MaxRSS and CPU time come with its end), in the poll that asks
    only squeue. MinMemory is per CPU for --mem-per-cpu with no mark saying so, so the memory is
    tres-alloc's mem= (the job's) per node, as ReqMem is. Cached: most rows repeat one request."""
    count = _cpus(cpus, tres)
    total = parse_size(_tres(tres, "mem"), "M")
    nodes = nodes.strip()
    per_node = total // int(nodes) if total and nodes.isdigit() and int(nodes) > 0 else None
    return Usage(elapsed_seconds=parse_duration(time_used), time_limit_seconds=parse_duration(time_limit),
                 req_mem_bytes=per_node, alloc_cpus=count)


def with_live(usage: Mapping[Key, Usage], live: Mapping[Key, Usage]) -> dict[Key, Usage]:
    """What each task has used so far, for showing: accounting's `usage`, with the controller's
    time used and request (`live`, squeue's) first where it answered. Accounting may still list a
    task that just started in its pending range row (elapsed 0): `status` showed a running task's
    time used as 00:00:00 beside squeue's elapsed. Only accounting's figures are recorded."""
    if not live:
        return dict(usage)
    out = dict(usage)
    for key, now in live.items():
        out[key] = fill_in(now, out.get(key))
    return out


def fill_in(first: Usage | None, then: Usage | None) -> Usage | None:
    """`first`, its unknown figures taken from `then` (either may be None)."""
    if first is None or then is None:
        return first or then
    return Usage(*(getattr(first, name) if getattr(first, name) is not None else getattr(then, name)
                   for name in USAGE_KEYS))


@lru_cache(maxsize=256)
def _ended(text: str) -> bool:
    try:
        return JobState.parse(text).is_terminal
    except ValueError:
        return False


def _task_keys(base: str, line: str) -> tuple[Key, ...]:
    """``12_3`` -> (("12", 3),), ``12_[3-5%2]`` -> three keys, ``12`` -> (("12", None),)."""
    job, sep, task = base.partition("_")
    if sep and task.isdigit() and job.isdigit():   # the common row first
        return ((job, int(task)),)
    if not job.isdigit():
        raise ValueError(f"unexpected sacct line: {line!r}")
    if not sep:
        return ((job, None),)
    if task.startswith("[") and task.endswith("]"):
        return tuple((job, t) for t in expand(task[1:-1]))
    raise ValueError(f"unexpected sacct line: {line!r}")


@lru_cache(maxsize=1024)
def _request(time_limit: str, req_mem: str, alloc_cpus: str, req_tres: str) -> tuple[float | None, int | None, int | None]:
    """(limit, memory, CPUs) of an allocation row; the same for every task of an array, so cached."""
    cpus = _cpus(alloc_cpus, req_tres)
    return parse_duration(time_limit), req_mem_bytes(req_mem, req_tres, cpus), cpus


def _allocation_usage(fields: list[str], max_rss: int | None) -> Usage:
    """Usage from a task's allocation row, with the steps' peak already found."""
    limit, mem, cpus = _request(fields[5], fields[6], fields[7], fields[8])
    cpu = parse_duration(fields[3]) if _ended(fields[1]) else None   # 0 while running
    return Usage(max_rss, cpu, parse_duration(fields[4]), limit, mem, cpus)


def _projection(fields: Sequence[str]) -> tuple[int, ...] | None:
    """Where each of USAGE_FIELDS sits among `fields` (None: they are USAGE_FIELDS)."""
    if tuple(fields) == USAGE_FIELDS:
        return None
    missing = [name for name in USAGE_FIELDS if name not in fields]
    if missing:
        raise ValueError(f"the sacct fields lack {', '.join(missing)}")
    return tuple(list(fields).index(name) for name in USAGE_FIELDS)


def parse_usage(text: str, fields: Sequence[str] = USAGE_FIELDS) -> dict[Key, Usage]:
    """Usage per task from sacct's answer with step rows (`usage_argv`).

    `fields` names the columns of `text` when the query asked for more than
    USAGE_FIELDS (one query for states and usage); they must include them all.
    A pending range row (``12_[3-5%2]``) gives each of its tasks the request and
    the limit; a task's own row wins over it. Step rows of a task whose
    allocation row is missing still give its MaxRSS. Raises ValueError on a line
    that is not sacct's.
    """
    projection, width = _projection(fields), len(fields)
    rows: dict[Key, list[str]] = {}
    ranged: dict[Key, list[str]] = {}
    peaks: dict[Key, int] = {}
    for line in text.splitlines():
        if not line:
            continue
        fields = line.split("|")
        if len(fields) != width:
            raise ValueError(f"unexpected sacct line: {line!r}")
        if projection is not None:
            fields = [fields[i] for i in projection]
        base, dot, _step = fields[0].partition(".")
        keys = _task_keys(base, line)
        rss = parse_size(fields[2]) if fields[2] else None
        if rss is not None:   # on step rows; an allocation row's would count the same
            for key in keys:
                if rss > peaks.get(key, -1):
                    peaks[key] = rss
        if dot:
            continue
        target = rows if len(keys) == 1 and "[" not in base else ranged
        for key in keys:
            target[key] = fields
    out: dict[Key, Usage] = {}
    shared: dict[int, Usage] = {}   # one Usage per pending range row, not per task
    for key, fields in ranged.items():
        if key not in rows:
            usage = shared.get(id(fields))
            if usage is None:
                usage = shared[id(fields)] = _allocation_usage(fields, None)
            out[key] = usage if key not in peaks else _allocation_usage(fields, peaks[key])
    for key, fields in rows.items():
        out[key] = _allocation_usage(fields, peaks.get(key))
    for key in peaks.keys() - out.keys():
        out[key] = Usage(max_rss_bytes=peaks[key])
    return out
