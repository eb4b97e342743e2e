"""The one output format of every bench/ script: ``bench: NAME VALUE UNIT`` lines.

A figure with a baseline measured in the same run adds ``baseline VALUE ratio R``
(this machine is noisy; ratios against a baseline of the same run are what to
compare across runs). Other text a script prints is commentary for people.
"""
from __future__ import annotations

import sys
from typing import TextIO


def bench_line(name: str, value: float, unit: str, baseline: float | None = None) -> str:
    """``bench: local_array_100 0.412 s baseline 0.201 ratio 2.05``."""
    if any(c.isspace() for c in name) or not name:
        raise ValueError(f"a bench name is one word: {name!r}")
    line = f"bench: {name} {_number(value)} {unit}"
    if baseline is not None:
        ratio = value / baseline if baseline else float("inf")
        line += f" baseline {_number(baseline)} ratio {ratio:.2f}"
    return line


def emit(name: str, value: float, unit: str, baseline: float | None = None,
         stream: TextIO | None = None) -> None:
    print(bench_line(name, value, unit, baseline), file=stream or sys.stdout, flush=True)


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1000:
        return str(int(value))
    return f"{value:.4g}"
