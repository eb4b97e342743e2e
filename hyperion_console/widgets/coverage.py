"""The shard coverage map: one coloured cell per shard, statuses from sharding.coverage.

Up to 400 shards each cell shows the shard's number; up to MAX_CELLS one
block per shard; beyond that each block stands for a bucket of shards and takes
the colour of the worst status in it (failed, else incomplete, else complete).
Counting a bucket is two bisections in the sorted completed and failed shards,
so the map costs the same at 10**12 shards as at a few thousand.
"""
from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

STATUS_STYLE: dict[str, str] = {
    "complete": "black on green",
    "incomplete": "black on yellow",
    "failed": "bold white on red",
}
NUMBERED = 400      # shards shown with their numbers up to this many
MAX_CELLS = 2000    # blocks drawn at most (about 25 rows at 80 columns)


class CoverageMap:
    """Renders shards as numbered cells wrapped to the width; legend with counts on top."""

    def __init__(self, coverage) -> None:
        self.coverage = coverage

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        counts = self.coverage.counts()
        legend = Text()
        for status, style in STATUS_STYLE.items():
            legend.append(f" {status} {counts.get(status, 0)} ", style=style)
            legend.append(" ")
        yield legend
        run = self.coverage.run
        if run.total_shards <= NUMBERED:
            yield from self._numbered(options.max_width)
        else:
            yield from self._blocks(options.max_width)

    def _numbered(self, width: int) -> RenderResult:
        run = self.coverage.run
        digits = len(str(run.maximum_shard_index))
        per_line = max(1, width // (digits + 1))
        line = Text()
        for i, shard in enumerate(run.shards):
            line.append(f"{shard:>{digits}} ", style=STATUS_STYLE[self.coverage.status_of(shard).value])
            if (i + 1) % per_line == 0:
                yield line
                line = Text()
        if line:
            yield line

    def _blocks(self, width: int) -> RenderResult:
        run = self.coverage.run
        size = -(-run.total_shards // MAX_CELLS)          # shards per block, rounded up
        if size > 1:
            yield Text(f"each block: {size} shards, coloured by the worst status among them", style="dim")
        per_line = max(1, width)
        line = Text()
        first, cell = run.minimum_shard_index, 0
        while first <= run.maximum_shard_index:
            last = min(first + size - 1, run.maximum_shard_index)
            line.append("▮", style=STATUS_STYLE[_worst(self.coverage.count_in(first, last))])
            cell += 1
            if cell % per_line == 0:
                yield line
                line = Text()
            first = last + 1
        if line:
            yield line


def _worst(counts: dict[str, int]) -> str:
    for status in ("failed", "incomplete"):
        if counts.get(status):
            return status
    return "complete"
