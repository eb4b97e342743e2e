"""How long ago: one wording for every age a face shows.

`age_text` is the one format of an age (`3 s`, `2 min 05 s`, `1 h 03 min`): the console's status
line said `states 1 min 18 s old` beside the poller's `not answering for 60 s`, and `hyperion-jobs
watch` said `(92 s ago)`.
"""
from __future__ import annotations


def age_text(seconds: float) -> str:
    """3 s, 2 min 05 s, 1 h 03 min: how long ago something was (whole seconds, never negative)."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"
