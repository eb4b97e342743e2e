"""The keys every list of the Jobs screen takes besides up/down: j/k, as the task table and the log do."""
from __future__ import annotations

from textual.binding import Binding

# the attempts list took only up/down while j/k moved the task table under it (and the log)
LIST_KEYS = [
    Binding("k", "cursor_up", "Up", show=False),
    Binding("j", "cursor_down", "Down", show=False),
]
