"""Timing shared by the bench scripts: the best of several runs, since this machine is noisy."""
from __future__ import annotations

import time
from typing import Callable


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The fastest of `repeat` calls of `fn` in seconds, and the last call's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result
