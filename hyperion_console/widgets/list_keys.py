"""The keys every list of the Jobs screen takes besides up/down and home/end: j/k and g/G, as the
task table and the log do."""
from __future__ import annotations

from textual.binding import Binding

# the attempts list took only up/down while j/k moved the task table under it (and the log);
# g/G (first/last) likewise moved only the task table, the state map and the log
LIST_KEYS = [
    Binding("k", "cursor_up", "Up", show=False),
    Binding("j", "cursor_down", "Down", show=False),
    Binding("g", "first", "First", show=False),
    Binding("G", "last", "Last", show=False),
]
