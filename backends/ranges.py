"""Integer sets as Slurm-style range expressions, and windows under an array limit.

Shared by the retry planner and the Slurm backend so that both split a set of
logical indices into the same windows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence


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

    Raises ValueError on anything that is not a list of non-negative ranges.
    """
    body = expression.strip().split("%", 1)[0]
    if not body:
        return ()
    values: set[int] = set()
    for part in body.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"not a range list: {expression!r}")
        start, end = int(lo), int(hi) if sep else int(lo)
        if end < start:
            raise ValueError(f"range {part!r} ends before it starts")
        values.update(range(start, end + 1))
    return tuple(sorted(values))


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
