"""The line hyperion-submit ends a failed run with: the command that reruns only what failed.

A recipe that fails in 4 of 150 tasks should not make its user find and type
the record's path: the last line names `hyperion-jobs retry RECORD` whole, so
the next step is a copy and paste. Shared by both backends (and by
`hyperion-jobs retry` and the checkpoint bridge, which run plans the same way).
"""
from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from backends.printable import printable
from backends.ranges import compress
from backends.submit.model import SubmitPlan


def retry_command(plan: SubmitPlan) -> str | None:
    """``hyperion-jobs retry /abs/q/<stem>.submit.json``, or None when no retry could run it.

    A site file given as a pipe (``--cfg <(...)``) is gone once the run ended and
    `hyperion-jobs retry` refuses such a record, so no command is offered for it.
    """
    if not os.path.isfile(plan.options.cfg):
        return None
    return printable(f"hyperion-jobs retry {shlex.quote(os.path.abspath(plan.record_path))}")


def local_retry_line(plan: SubmitPlan, failed: int | None) -> str | None:
    """After a local run stopped at the task of value `failed` (None: a plain job): the values
    it never reached, and the command that runs them and the failed one again."""
    command = retry_command(plan)
    if command is None:
        return None
    array = plan.options.array
    if array is None or failed is None:
        return f"rerun it with: {command}"
    later: Sequence[int] = sorted(t.value for t in plan.tasks if t.value is not None and t.value > failed)
    if not later:
        return f"rerun {array.name}={failed} with: {command}"
    return (f"{array.name}={compress(later)} not run (a local array stops at its first failure); "
            f"rerun {array.name}={compress([failed, *later])} with: {command}")
