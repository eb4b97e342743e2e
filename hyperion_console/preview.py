"""The Submit form's dry-run preview, built from a snapshot of the form by the core alone.

Kept off the screen so it can run in a worker thread: at ``--array JOB=1:100000``
the core plans for 0.4 s and more, and the form must show each key at once.
Pure but for what build_plan reads on disk (the site file, the logs' folders).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text

from backends.submit.commandline import parse_submit_argv
from backends.submit.model import SubmitPlan
from backends.submit.plan import build_plan, describe_plan, submit_argv
from backends.shellwords import shell_join
from backends.retry_hint import ran_before_line
from backends.submit.substitution_check import plan_notes
from backends.submit.torchrun_check import plan_warning

from .errors import describe_error
from .form import FormValues, field_of_error, form_argv
from .sbatch_env import ignored_sbatch_line
from .shown import shown

# Textual wraps every line of a Static again at each keystroke: the 100,000 task log lines of
# JOB=1:100000 took 4 s per key typed anywhere in the form. 2000 lines hold ~15 windows' scripts.
MAX_PREVIEW_LINES = 2000


def preview_text(preview: str, limit: int = MAX_PREVIEW_LINES) -> Text:
    """The dry run's text, its first `limit` lines when longer, and how many lines are left out."""
    lines = preview.splitlines(keepends=True)
    if len(lines) <= limit:
        return shown(preview, layout=True)
    text = shown("".join(lines[:limit]), layout=True)
    text.append(f"… {len(lines) - limit} more lines: the command above with --dry-run prints them all",
                style="dim")
    return text


@dataclass(frozen=True)
class Preview:
    """What the core says about one state of the form: its plan, or its one-line error."""

    form: FormValues
    argv: tuple[str, ...] | None = None      # the hyperion-submit argv (no program name); None: invalid
    plan: SubmitPlan | None = None
    command: str = ""                        # `hyperion-submit ...` as one shell line
    text: Text | None = None                 # the dry run's text, as the preview shows it
    error: str | None = None
    field: str | None = None                 # the form field the error names
    seconds: float = 0.0                     # how long the core took: a slow form is planned in a worker
    ran_before: str | None = None            # the output file ran before: the run's attempt, its logs moved
    warning: str | None = None               # hyperion-submit's torchrun warning (the preview's first line)
    # hyperion-submit's warnings of the array NAME replaced after `$` or inside a longer name (`$JOB`)
    substitution: tuple[str, ...] = ()


def confirm_question(plan: SubmitPlan, verb: str = "Submit", what: str = "task(s)") -> str:
    """The Submit confirmation's question, from the plan the preview shows: how many tasks, and for
    Slurm how many sbatch calls. `Submit to slurm?` alone hid that 100 tasks at a site limit of 40
    go out as 3 windows, which only the preview said. The Checkpoint screen's Resubmit asks it too
    (`Resubmit 46 shard(s) to slurm in 1 sbatch call?`): its title named the shards cut to 40
    characters and the length of the list, `(46 characters)`, which told nothing."""
    backend, tasks = plan.options.backend, len(plan.tasks)
    if backend == "local" or not plan.windows:
        if tasks == 1:
            return f"{verb} 1 {what} to {backend}, run here?"
        # as the preview says it: the rest do not run once one fails
        return f"{verb} {tasks} {what} to {backend}, run here one after another, stopping at the first failure?"
    calls = len(plan.windows)
    return f"{verb} {tasks} {what} to {backend} in {calls} sbatch call{'s' if calls > 1 else ''}?"


def confirm_windows(plan: SubmitPlan) -> str:
    """Why a Slurm plan is more than one sbatch call, in the preview's words ("" for one call)."""
    if len(plan.windows) < 2:
        return ""
    limit = plan.site.max_array_size
    line = f"{len(plan.windows)} array windows, as the preview lists them"
    return line + (f": at most {limit} task(s) each (the site's max_array_size)" if limit else "")


def build_preview(form: FormValues, no_site: str = "") -> Preview:
    """Plan `form` through the core exactly as `hyperion-submit --dry-run` would; never raises.
    `no_site`: the error when the form names no site file because there is none to pick (the
    screen says where it looked), rather than the core's `--cfg: expected a site YAML path, got ''`."""
    started = time.perf_counter()
    if not form.cfg and no_site:
        return Preview(form, error=no_site, field="cfg", seconds=time.perf_counter() - started)
    try:
        argv = form_argv(form)
        site, options = parse_submit_argv(argv, pipes=False)
        plan = build_plan(site, options)
        command = shell_join(["hyperion-submit", *submit_argv(options)])
        preview = describe_plan(plan)
        ran_before = ran_before_line(plan)     # as the dry run says it, first: a long plan is cut
        preview = f"# {ran_before}\n{preview}" if ran_before else preview
        ignored = ignored_sbatch_line(options.backend)
        if ignored:     # what `hyperion-submit slurm` says on stderr: its submissions drop them too
            preview = f"{ignored}\n{preview}"
        torchrun = plan_warning(plan)
        substitution = plan_notes(plan)
        # hyperion-submit's warnings, on stderr there in this order
        warnings = ([torchrun] if torchrun else []) + list(substitution)
        if warnings:
            preview = "".join(f"# hyperion-submit: warning: {line}\n" for line in warnings) + preview
        text = preview_text(preview)
    except Exception as exc:  # InputError and the like: shown, never raised
        return Preview(form, error=describe_error(exc), field=field_of_error(exc),
                       seconds=time.perf_counter() - started)
    return Preview(form, tuple(argv), plan, command, text, seconds=time.perf_counter() - started,
                   ran_before=ran_before, warning=torchrun, substitution=substitution)
