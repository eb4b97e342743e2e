"""The header and footer lines of every task log, local and Slurm alike.

Defined once so that the local runner (Python) and the Slurm batch script
(bash, rendered by backends.submit.slurm.script) write identical lines that tools can
parse: ``# Running: ...``, ``# Started at ... on HOST``, ``# Ended (code N) at ...``; a Slurm task
Slurm runs again writes ``# Restarted by Slurm (restart N); ...`` and a new header below the run before.
"""
from __future__ import annotations

import re
import shlex
from datetime import datetime

from backends.shellwords import shell_join

RUNNING_PREFIX = "# Running: "
STARTED_PREFIX = "# Started at "
ENDED_PREFIX = "# Ended (code "
RESTARTED_PREFIX = "# Restarted by Slurm (restart "   # between a Slurm task's runs, in one log
# The bash command whose output matches `iso_now()` (both: 2026-12-02T13:04:05+00:00).
BASH_DATE = "date --iso-8601=seconds"
ENDED_RE = re.compile(r"^# Ended \(code (-?\d+)\) at (\S+), elapsed time (\d+) seconds$")


def iso_now() -> str:
    """Local time, ISO-8601 with seconds and UTC offset, as `date --iso-8601=seconds`."""
    return datetime.now().astimezone().isoformat(timespec="seconds")


def iso_seconds(text: str | None) -> float | None:
    """Seconds since the epoch of an ISO time as `iso_now` writes it; None for anything else."""
    try:
        return datetime.fromisoformat(text).timestamp() if text else None
    except (TypeError, ValueError):
        return None


def running_line(argv: list[str] | tuple[str, ...]) -> str:
    """The header's command, on one line whatever the arguments hold (`shell_join`: a newline or
    another control character in ANSI-C quoting, ``$'a\\nb'``), pasteable as it reads."""
    return f"{RUNNING_PREFIX}{shell_join(argv)}"


def started_line(when: str, host: str) -> str:
    return f"{STARTED_PREFIX}{when} on {host}"


def ended_line(code: int, when: str, elapsed: int) -> str:
    return f"{ENDED_PREFIX}{code}) at {when}, elapsed time {elapsed} seconds"


def bash_header(running_word: str) -> str:
    """Bash lines printing `running_line` and `started_line` and noting the start time.

    `running_word` is a bash word that expands to ``shell_join(argv)`` of the launched command
    (`backends.submit.slurm.script` splices the array variable into it).
    """
    return (
        f"echo {shlex.quote(RUNNING_PREFIX)}{running_word}\n"
        "_hyperion_start=$(date +%s)\n"
        f"echo {shlex.quote(STARTED_PREFIX)}\"$({BASH_DATE}) on $(hostname)\"\n"
    )


def bash_footer(rc_var: str = "rc") -> str:
    """Bash line printing the footer from ``$<rc_var>`` and ``$_hyperion_start``."""
    return (
        f"echo {shlex.quote(ENDED_PREFIX)}\"${{{rc_var}}}) at $({BASH_DATE}), elapsed time "
        "$(( $(date +%s) - _hyperion_start )) seconds\"\n"
    )


def parse_ended(line: str) -> tuple[int, str, int] | None:
    """(code, time, elapsed) from a footer line, or None if it is not one."""
    match = ENDED_RE.match(line.rstrip("\n"))
    return (int(match[1]), match[2], int(match[3])) if match else None
