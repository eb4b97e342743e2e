"""The shard coverage map: one coloured cell per shard, statuses from sharding.coverage."""
from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

STATUS_STYLE: dict[str, str] = {
    "complete": "black on green",
    "incomplete": "black on yellow",
    "failed": "bold white on red",
}


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
        shards = self.coverage.shards
        digits = len(str(max((s.shard for s in shards), default=0)))
        cell = digits + 1 if len(shards) <= 400 else 1   # numbers while they fit, blocks beyond
        per_line = max(1, options.max_width // cell)
        line = Text()
        for i, shard in enumerate(shards):
            label = f"{shard.shard:>{digits}} " if cell > 1 else "▮"
            line.append(label, style=STATUS_STYLE.get(shard.status.value, ""))
            if (i + 1) % per_line == 0:
                yield line
                line = Text()
        if line:
            yield line
