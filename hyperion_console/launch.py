"""Running a SubmitPlan from a console worker thread, as hyperion-submit's core does.

Slurm: the core's `submit` (sbatch per window, record written), then the Jobs
screen watches with the core's Poller; the console does not block on `wait`.
Local: the core's `run_local`, synchronously in the worker, while the Jobs
screen reads the results file the core writes as each task ends.
"""
from __future__ import annotations

from typing import Callable

from backends.launch import submit
from backends.submit.local.run import run_local


def launch(plan, announce: Callable[[str], None]) -> int | None:
    """Run `plan`; `announce(record_path)` once its record exists. Local: the exit status."""
    if plan.options.backend == "slurm":
        record = submit(plan)
        announce(str(record.path))
        return None
    announced: list[bool] = []

    def on_event(_event) -> None:
        if not announced:          # run_local saves the record before the first event
            announced.append(True)
            announce(str(plan.record_path))

    status = run_local(plan, on_event=on_event)
    if not announced:
        announce(str(plan.record_path))
    return status
