"""Retry of a submission's failed tasks from the console, planned and run as `hyperion-jobs retry` does.

The preview's fields become a RetryRequest through the CLI's own
`request_of` (the same checks, the same one-line errors); the core plans it
(`backends.retry.plan_retry`: refused while tasks are live, nothing when
every value completed) and describes it (`describe_retry`), after the
Submit preview's line on SBATCH_* variables its sbatch does not get. A record
another user owns, or others may write, is named with its owner in a warning
(`backends.records.trust.trust_problem`), as the Checkpoint screen's
Resubmit does. What runs is planned again from Slurm's answer of that moment
(`history_status`, as the CLI asks); if it differs from what the user
confirmed, nothing runs. It runs in the record's directory (`working_dir`)
as the next attempt (`launch(..., "retry")`).
"""
from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

from backends.cli.jobs.retrying import request_of
from backends.errors import InputError
from backends.launch import working_dir
from backends.printable import printable
from backends.records.history import History, load_history
from backends.records.trust import trust_problem
from backends.retry import RetryPlan, RetryRequest, describe_retry, plan_retry, propose
from backends.retry_sizes import SizeProposal
from backends.watch.rows import TaskRow
from backends.watch.slurm.accounting import Runner, run_command
from backends.watch.targets import history_status, shown_as_recorded
from backends.shellwords import shell_join
from backends.attempt import unchanged_since

from .errors import RECORD_FIELDS, describe_error
from .launch import launch
from .local_runs import LocalRuns
from .sbatch_env import ignored_sbatch_line

# The preview's fields, named as hyperion-jobs retry's options.
FIELDS = ("values", "state", "mem", "mem_per_cpu", "time", "num_threads")


class Refused(Exception):
    """A retry that will not run, with the one line that says why."""


@dataclass(frozen=True)
class Preview:
    """One planning of the retry: the plan (None when refused or nothing to do) and what to show."""

    record_path: str
    retry: RetryPlan | None
    text: str                           # the preview: warning, describe_retry, proposed sizes
    error: str | None                   # the one-line refusal, when there is no plan
    sizes: SizeProposal | None
    untrusted: str | None
    request: RetryRequest | None = None
    confirm_text: str = ""              # the text the confirmation repeats: the preview's, less its button

    @property
    def attempt(self) -> int | None:
        return None if self.retry is None else self.retry.history.newest_number + 1

    @property
    def command(self) -> str | None:
        if self.retry is None or self.retry.plan is None:
            return None
        return shell_join(self.retry.plan.argv)

    @property
    def identity(self) -> tuple | None:
        """What the user confirms: values, command, directory and whose record it is."""
        return identity_of(self.retry, self.untrusted)


def identity_of(retry: RetryPlan | None, untrusted: str | None) -> tuple | None:
    if retry is None or retry.plan is None:
        return None
    return (retry.values, tuple(retry.plan.argv), retry.history.current.cwd, untrusted)


def request_from(fields: Mapping[str, str]) -> RetryRequest:
    """The preview's fields as hyperion-jobs retry's options (blank: not given), checked by the CLI."""
    given = {name: (str(fields.get(name) or "").strip() or None) for name in FIELDS}
    if given["mem"] is not None and given["mem_per_cpu"] is not None:
        raise InputError("--mem-per-cpu", "not allowed with --mem: give one of them")
    return request_of(Namespace(state=given["state"], values=given["values"], num_threads=given["num_threads"],
                                mem=given["mem"], mem_per_cpu=given["mem_per_cpu"], time=given["time"],
                                max_jobs_run=None))


def nothing_to_retry(history: History, request: RetryRequest, tasks: int) -> str:
    what = "in the states asked for" if request.states or request.values else "that did not complete"
    return f"nothing to retry: no task of {history.record_path} {what} ({tasks} task(s))"


def proposed_sizes(history: History, rows: Sequence[TaskRow], chosen: Sequence[TaskRow]) -> SizeProposal:
    """What `--mem auto --time auto` would choose for these rows, and why: the CLI's own rule."""
    return propose(rows, chosen, history)


def warning_lines(record_path: str, untrusted: str | None) -> list[str]:
    if untrusted is None:
        return []
    return [f"WARNING: the record {printable(record_path)} {printable(untrusted)}.",
            "Its command runs as you. Retry only if you trust it.", ""]


def size_lines(retry: RetryPlan, sizes: SizeProposal, request: RetryRequest | None = None,
               button: bool = True) -> list[str]:
    """The sizes the core proposes and why, and whether this retry gives them: the fields `request`
    holds (the button fills them in, or typed alike). `button`: the preview's words, which name its
    Use proposed sizes; the confirmation has no such button. The preview kept saying `(Use proposed
    sizes fills them in)` once the button had filled `--mem 200M` in, and the confirmation repeated it."""
    if retry.sizes is not None:      # "auto" asked for: describe_retry says it
        return []
    if not sizes.reasons:
        return ["proposed sizes: - (no task ran out of memory or time)"]
    proposed = [(flag, value) for flag, value in (("--mem", sizes.mem), ("--time", sizes.time)) if value]
    given = {"--mem": request.mem if request else None, "--time": request.time if request else None}
    used = [flag for flag, value in proposed if given[flag] == value]
    left = [flag for flag, _ in proposed if flag not in used]
    if not left:
        how = "given"
    elif button:
        how = "Use proposed sizes fills them in" if not used else \
            f"{' '.join(used)} given; Use proposed sizes fills in {' '.join(left)}"
    else:
        how = "not given" if not used else f"{' '.join(used)} given, {' '.join(left)} not"
    return [f"proposed sizes ({how}):"] + [f"  {why}" for why in sizes.reasons]


def preview(history: History, rows: Sequence[TaskRow], fields: Mapping[str, str]) -> Preview:
    """Plan the retry the fields ask for; a refusal is one line in `error`, never an exception."""
    path = history.record_path
    try:
        untrusted = trust_problem(path)
        request = request_from(fields)
        retry = plan_retry(history, rows, request)
    except InputError as err:
        return Preview(path, None, "", printable(describe_error(err, RECORD_FIELDS)), None, None)
    if retry.plan is None:
        return Preview(path, None, "", nothing_to_retry(history, request, len(rows)), None, untrusted)
    sizes = proposed_sizes(history, rows, retry.chosen)
    ignored = ignored_sbatch_line(retry.plan.options.backend)
    # what auto would ask for is this preview's own `proposed sizes` block, with its button
    lines = (warning_lines(path, untrusted) + ([ignored] if ignored else []) + [describe_retry(replace(retry, advice=()))])
    return Preview(path, retry, "\n".join(lines + size_lines(retry, sizes, request)), None, sizes, untrusted, request,
                   "\n".join(lines + size_lines(retry, sizes, request, button=False)))


def run_retry(record_path: str, request: RetryRequest, confirmed: tuple,
              announce: Callable[[str], None], local_runs: LocalRuns | None = None,
              on_begin: Callable[[], None] | None = None,
              warn: Callable[[tuple[str, ...]], None] | None = None,
              runner: Runner = run_command, told: Callable[[str], None] | None = None) -> int | None:
    """Plan again from Slurm's answer now and run it as the next attempt; Refused if it changed.

    `on_begin()` once nothing refuses it (a retry started elsewhere meanwhile does); `warn(lines)`
    for what an sbatch that queued a window said on stderr, as `launch` tells it. Returns the
    local run's exit status (None for Slurm, which the Jobs screen watches). Slurm is asked through
    `runner` (a quit must not wait on a hung query: the console's is stoppable), and what it could
    not say is `told`, as hyperion-jobs retry says it (the states are the ledger's).
    """
    history = load_history(record_path)
    problems: list[str] = []
    rows = history_status(history, runner, problems)
    for problem in problems if told is not None else ():
        told(shown_as_recorded(problem))
    try:
        retry = plan_retry(history, rows, request)
    except InputError as err:
        raise Refused(printable(describe_error(err, RECORD_FIELDS))) from None
    if retry.plan is None:
        raise Refused(nothing_to_retry(history, request, len(rows)))
    if identity_of(retry, trust_problem(record_path)) != confirmed:
        raise Refused("the retry changed since it was confirmed (values, command, directory or record "
                      "owner); nothing ran: press R again")
    with working_dir(history.current.cwd):      # as hyperion-jobs retry: relative paths of the command
        # between the comparison above and the lock, another terminal's retry may begin
        return launch(retry.plan, announce, "retry", on_begin, local_runs=local_runs, warn=warn,
                      live_check=unchanged_since(history, "press R again to plan from what it did"))
