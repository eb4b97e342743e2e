"""When a background look (no user asked for it) may run again: spaced to its own length.

The Jobs screen's record list and the Checkpoint screen's change notice both walk trees that
may be big or on a slow file server, every few seconds for as long as they show.
"""
from __future__ import annotations

import time

# A look that finished but took a while waits this many times as long before the next: background
# walks of a big tree take at most a tenth of a core (a 1.5 s walk every 4 s took 40%).
LOOK_SPACING = 9.0
# A look cut short (a busy machine, a slow file server) is tried again after LOOK_PAUSE seconds;
# after CUT_SHORT_LOOKS in a row (a tree too big, a hung NFS folder) none until `reset`.
LOOK_PAUSE = 30.0
CUT_SHORT_LOOKS = 3


class LookPacer:
    """Mutable by design: one per view, touched on the interface thread only."""

    def __init__(self) -> None:
        self.cut_short = 0            # looks in a row that ran out of time
        self.after = 0.0              # (monotonic) no look before this

    def ready(self) -> bool:
        return self.cut_short < CUT_SHORT_LOOKS and time.monotonic() >= self.after

    def looked(self, took: float, finished: bool = True) -> None:
        """A look ended: the next waits LOOK_SPACING times its length, or LOOK_PAUSE if it was cut short."""
        self.cut_short = 0 if finished else self.cut_short + 1
        self.after = time.monotonic() + (LOOK_SPACING * took if finished else LOOK_PAUSE)

    def reset(self) -> None:
        """A listing a user asked for ended: background looks may begin again at once."""
        self.cut_short, self.after = 0, 0.0
