"""What a usage figure may be, for the attempt history and the usage parser alike.

No figure of a real task comes near MAX_FIGURE (an exabyte, 30 billion years): a
ledger line with a 400-digit number, a NaN or a negative limit is damage, and read
as "not said", never as a figure that replaces one recorded before.
"""
from __future__ import annotations

import math

MAX_FIGURE = 10 ** 18


def is_figure(value: object) -> bool:
    """A number a usage field can hold: finite, 0 or more, at most MAX_FIGURE (int() of an
    infinity, float() of a 400-digit int, and a negative limit that a retry would halve all fail)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 0 <= value <= MAX_FIGURE if isinstance(value, int) else math.isfinite(value) and 0 <= value <= MAX_FIGURE
