"""Running a SubmitPlan from a console worker thread, as hyperion-submit's core does.

Slurm: the core's `submit` (sbatch per window, record written), then the Jobs
screen watches with the core's Poller; the console does not block on `wait`.
Local: the core's `run_local_plan`, synchronously in the worker, while the
Jobs screen reads the ledger the core appends to as each task starts and ends.
Either way the run is a new attempt of its output pattern, as on the command line.
"""
from __future__ import annotations

from typing import Callable

from backends.launch import run_local_plan
from backends.launch_slurm import refusal_line, rest_command, submit
from backends.submit.slurm.sbatch import SubmitError
from backends.attempt import LiveCheck

from .local_runs import LocalRuns
from .shown import tell


class PartlySubmitted(SubmitError):
    """sbatch refused a later window: the windows before it went in, are recorded and watched.
    Not "submit failed" (jobs run), nor a retry refused ("nothing ran"): its own title says so."""


def sbatch_teller(app, target) -> Callable[[tuple[str, ...]], None]:
    """`launch`'s `warn` for a worker thread: what an sbatch that queued its window said on stderr,
    one notification per call on `target` (titled sbatch, its lines joined), as the CLIs print it."""
    def warn(lines: tuple[str, ...]) -> None:
        app.call_from_thread(tell, target, " | ".join(lines), title="sbatch", severity="warning", timeout=10)
    return warn


def launch(plan, announce: Callable[[str], None], kind: str = "submit",
           on_begin: Callable[[], None] | None = None, local_runs: LocalRuns | None = None,
           warn: Callable[[tuple[str, ...]], None] | None = None, live_check: LiveCheck | None = None) -> int | None:
    """Run `plan`; `on_begin()` once it is not refused, `announce(record_path)` once its record
    exists, `warn(lines)` with what each sbatch that queued its window said on stderr (as
    hyperion-submit prints them: escaped, bounded; one notification per call); `live_check`, asked
    under the pattern's lock, as `begin_attempt` asks it. Local: the exit status; while it runs it is
    one of `local_runs`, which a quit stops.
    Slurm: PartlySubmitted after the announce when sbatch refused a later window (those before it
    went in and are watched), in the words hyperion-submit uses.
    Either way the checks before the run (`begin_attempt`'s questions to Slurm) end when the console
    closes (`LocalRuns.closing`): QueryStopped, nothing moved, run or submitted."""
    local_runs = local_runs or LocalRuns()
    if plan.options.backend == "slurm":
        record = submit(plan, kind, on_begin, live_check=live_check, warn=warn, stop=local_runs.closing)
        announce(str(record.path))
        refusal = refusal_line(record, rest_command(plan, record, kind=kind))
        if refusal:   # what went in is watched; the refusal is told in hyperion-submit's words
            raise PartlySubmitted(refusal)
        return None
    announced: list[bool] = []

    def on_event(_event) -> None:
        if not announced:          # run_local saves the record before the first event
            announced.append(True)
            announce(str(plan.record_path))

    with local_runs.running(str(plan.record_path)) as stop:
        status = run_local_plan(plan, on_event, kind, on_begin, stop, live_check=live_check)
    if not announced:
        announce(str(plan.record_path))
    return status
