"""What each attempt asked sbatch for (memory per node, time limit), read from its record.

Slurm's accounting may not say it: for a few seconds after a job ends sacct can show its row
with an empty Timelimit and ReqMem, and a usage taken then is kept. The record knows what it
submitted, so every face fills those two figures from it rather than showing `-`.
"""
from __future__ import annotations

import weakref
from dataclasses import replace

from backends.records.history import History
from backends.records.record import SubmitRecord
from backends.sbatch_time import time_minutes
from backends.watch.usage import Usage, parse_size


_ASKED: dict[int, tuple[weakref.ref, Usage]] = {}    # id(record) -> (the record, what it asked)


def asked_of(record: SubmitRecord) -> Usage:
    """The memory (per node) and time limit `record`'s options asked for, each None where the record
    does not say it readably (one edited by hand: accounting alone decides then). Asked per row
    (every row of a job without a time limit lacks one): a history's records are read once, not
    at each of 100,000 rows; held weakly, so a console open all day keeps no record it let go."""
    known = _ASKED.get(id(record))
    if known is not None and known[0]() is record:
        return known[1]
    usage = _asked_of(record)
    if len(_ASKED) >= 256:
        _ASKED.clear()
    _ASKED[id(record)] = (weakref.ref(record), usage)
    return usage


def _asked_of(record: SubmitRecord) -> Usage:
    options = record.options
    threads = options.get("num_threads") if isinstance(options.get("num_threads"), int) else 1
    # a bare number is MiB, as sbatch reads --mem=2048
    mem, per_cpu = (parse_size(str(options[k]), "M") if isinstance(options.get(k), (str, int)) else None
                    for k in ("mem", "mem_per_cpu"))
    mem_bytes = mem if mem is not None else per_cpu * max(1, threads) if per_cpu is not None else None
    return Usage(req_mem_bytes=mem_bytes, time_limit_seconds=_limit_seconds(options.get("time")))


def _limit_seconds(text: object) -> float | None:
    """sbatch's --time (``10`` minutes, ``00:10:00``, ``1-12``) as seconds; None if unreadable."""
    if not isinstance(text, (str, int)) or isinstance(text, bool):
        return None
    try:
        return time_minutes(str(text).strip()) * 60.0
    except (ValueError, IndexError):
        return None


def asked_by_attempt(history: History) -> dict[int, Usage]:
    """`asked_of` each attempt of `history` by its number."""
    return {number: asked_of(record) for number, record in history.attempt_records.items()}


def with_request(usage: Usage, asked: Usage | None) -> Usage:
    """`usage` with what the attempt asked for where Slurm's accounting did not say it."""
    if asked is None:
        return usage
    return replace(usage, req_mem_bytes=usage.req_mem_bytes or asked.req_mem_bytes,
                   time_limit_seconds=usage.time_limit_seconds or asked.time_limit_seconds)


def lacks_request(usage: Usage | None) -> bool:
    """Usage told without the request or the limit (not usage that is missing whole: that one the
    table leaves out and `status` says accounting has not given yet)."""
    return usage is not None and (not usage.req_mem_bytes or not usage.time_limit_seconds)
