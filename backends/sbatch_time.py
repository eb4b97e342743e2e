"""sbatch's --time syntax read as minutes: a shared bottom module, since the submitter checks and
writes a limit and the watchers read a record's limit back (a bare ``10`` is minutes, not seconds as
in what sacct prints)."""
from __future__ import annotations


def time_minutes(text: str) -> int:
    """A checked Slurm time as whole minutes, seconds rounded up as Slurm does."""
    days, dash, clock = text.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if dash:             # D-HH[:MM[:SS]]
        parts += [0] * (3 - len(parts))
        seconds = int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    elif len(parts) == 1:  # minutes
        seconds = parts[0] * 60
    elif len(parts) == 2:  # MM:SS
        seconds = parts[0] * 60 + parts[1]
    else:                  # HH:MM:SS
        seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return -(-seconds // 60)
