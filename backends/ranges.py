"""Integer sets as Slurm-style range expressions, and windows under an array limit.

Shared by the retry planner and the Slurm backend so that both split a set of
logical indices into the same windows.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass


def compress(values: Iterable[int]) -> str:
    """Sorted, de-duplicated values as ``1-2,5-10,99`` (empty string for no values)."""
    ordered = sorted(set(values))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def expand(expression: str) -> tuple[int, ...]:
    """Inverse of `compress`: ``"1-2,5"`` -> ``(1, 2, 5)``; a ``%N`` suffix is ignored.

    Slurm also writes evenly spaced values with a step (``6-24:3`` for 6, 9, ..., 24: the
    pending rest of ``--array=3,6,...,24``, or every 7th task left to retry), in sacct's and
    squeue's job ids alike. Raises ValueError on anything that is not a list of non-negative ranges.
    """
    return tuple(sorted({value for start, end, step in _spans(expression) for value in range(start, end + 1, step)}))


def _spans(expression: str) -> Iterator[tuple[int, int, int]]:
    """(first, last, step) of each part of a range list (``1-2,6-24:3``; a ``%N`` suffix ignored),
    no range expanded. ValueError on anything that is not a list of non-negative ranges."""
    body = expression.strip().split("%", 1)[0]
    for part in body.split(",") if body else ():
        span, colon, step_text = part.partition(":")
        lo, sep, hi = span.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()) or (colon and not (sep and step_text.isdigit())):
            raise ValueError(f"not a range list: {expression!r}")
        start, end = int(lo), int(hi) if sep else int(lo)
        step = int(step_text) if colon else 1
        if end < start:
            raise ValueError(f"range {part!r} ends before it starts")
        if step < 1:
            raise ValueError(f"range {part!r} has a step of 0")
        yield start, end, step


@dataclass(frozen=True)
class Window:
    """One submission under an array limit: physical index = logical value - offset."""

    offset: int
    values: tuple[int, ...]  # logical values, sorted

    @property
    def physical(self) -> tuple[int, ...]:
        return tuple(v - self.offset for v in self.values)

    @property
    def expression(self) -> str:
        """The physical ``--array`` expression of this window (without ``%max``)."""
        return compress(self.physical)


def split_windows(values: Iterable[int], max_array_size: int | None = None) -> tuple[Window, ...]:
    """Group logical values into windows whose physical indices stay below the limit.

    Without a limit, or when every value is already below it, there is one
    window with offset 0. Otherwise value ``s`` goes to ``offset = s // M * M``
    with physical index ``s - offset``, as NeMo Curator's retry helper does.
    """
    ordered = sorted(set(values))
    if not ordered:
        return ()
    if max_array_size is None or ordered[-1] < max_array_size:
        return (Window(0, tuple(ordered)),)
    if max_array_size <= 0:
        raise ValueError("max_array_size must be positive")
    groups: dict[int, list[int]] = {}
    for value in ordered:
        groups.setdefault(value // max_array_size * max_array_size, []).append(value)
    return tuple(Window(offset, tuple(vals)) for offset, vals in sorted(groups.items()))


# --- runs: sets too large to list, kept as inclusive (first, last) pairs --------------------
# A checkpoint of 10**12 shards with a thousand manifests has a thousand and one
# gaps; everything below costs time in the number of runs, never in their length.

Run = tuple[int, int]


def runs_of(ordered: Sequence[int]) -> tuple[Run, ...]:
    """Consecutive runs of sorted, distinct values: ``[1, 2, 5]`` -> ``((1, 2), (5, 5))``."""
    out: list[Run] = []
    for value in ordered:
        if out and value == out[-1][1] + 1:
            out[-1] = (out[-1][0], value)
        else:
            out.append((value, value))
    return tuple(out)


def parse_runs(expression: str) -> tuple[Run, ...]:
    """Inverse of `compress_runs`: ``"1-4,9"`` -> ``((1, 4), (9, 9))``, sorted, no range expanded (a
    hand-edited ledger may say ``1-1000000000``). ValueError as `expand`, and for a range with a step."""
    runs = []
    for start, end, step in _spans(expression):
        if step != 1 and end > start:
            raise ValueError(f"not runs: {expression!r} has a range with a step")
        runs.append((start, end))
    return tuple(sorted(runs))


def gaps(ordered: Sequence[int], first: int, last: int) -> tuple[Run, ...]:
    """The runs of [first, last] that sorted, distinct `ordered` leaves uncovered."""
    out: list[Run] = []
    start = first
    for value in ordered:
        if value < start:
            continue
        if value > last:
            break
        if value > start:
            out.append((start, value - 1))
        start = value + 1
    if start <= last:
        out.append((start, last))
    return tuple(out)


def count_runs(runs: Iterable[Run]) -> int:
    return sum(hi - lo + 1 for lo, hi in runs)


def compress_runs(runs: Iterable[Run], offset: int = 0) -> str:
    """Runs as a Slurm-style expression, each value minus `offset` (``1-2,5``)."""
    return ",".join(str(lo - offset) if lo == hi else f"{lo - offset}-{hi - offset}" for lo, hi in runs)


def iter_runs(runs: Iterable[Run]) -> Iterator[int]:
    for lo, hi in runs:
        yield from range(lo, hi + 1)


@dataclass(frozen=True)
class RunWindow:
    """One submission under an array limit, its logical values kept as runs."""

    offset: int
    runs: tuple[Run, ...]

    @property
    def count(self) -> int:
        return count_runs(self.runs)

    @property
    def expression(self) -> str:
        """The physical ``--array`` expression (logical value - offset)."""
        return compress_runs(self.runs, self.offset)

    @property
    def logical(self) -> str:
        return compress_runs(self.runs)


def count_run_windows(runs: Sequence[Run], max_array_size: int | None) -> int:
    """How many windows `split_run_windows` would make, without making them."""
    if not runs:
        return 0
    if max_array_size is None or runs[-1][1] < max_array_size:
        return 1
    count, last = 0, None
    for lo, hi in runs:
        first, final = lo // max_array_size, hi // max_array_size
        count += final - first + 1 - (first == last)
        last = final
    return count


def split_run_windows(runs: Sequence[Run], max_array_size: int | None = None) -> tuple[RunWindow, ...]:
    """As `split_windows`, for runs: value ``s`` goes to ``offset = s // M * M``.

    Costs time in the number of runs plus windows; callers that cannot afford
    every window check `count_run_windows` first.
    """
    if not runs:
        return ()
    if max_array_size is None or runs[-1][1] < max_array_size:
        return (RunWindow(0, tuple(runs)),)
    if max_array_size <= 0:
        raise ValueError("max_array_size must be positive")
    groups: dict[int, list[Run]] = {}
    for lo, hi in runs:
        while lo <= hi:
            offset = lo // max_array_size * max_array_size
            end = min(hi, offset + max_array_size - 1)
            groups.setdefault(offset, []).append((lo, end))
            lo = end + 1
    return tuple(RunWindow(offset, tuple(parts)) for offset, parts in sorted(groups.items()))


def share_slots(demands: Sequence[int], limit: int) -> tuple[int, ...]:
    """Split `limit` concurrently running tasks among windows wanting `demands` tasks each.

    Every window with work gets one slot first (in order, while slots last), so
    none has to be held; the rest go to the earliest windows, never more than
    a window has tasks. A window given 0 must not start anything.
    """
    slots = [0] * len(demands)
    left = limit
    for i, demand in enumerate(demands):
        if demand > 0 and left > 0:
            slots[i], left = 1, left - 1
    for i, demand in enumerate(demands):
        extra = min(max(demand - slots[i], 0), left)
        slots[i] += extra
        left -= extra
    return tuple(slots)
