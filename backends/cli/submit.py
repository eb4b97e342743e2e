"""hyperion-submit: run a command locally or as a Slurm job (array), synchronously.

Exit status: 0 every task exited 0; 1 a task or the submission failed;
2 bad input (one line on stderr, nothing run or written); 130 interrupted;
143 a local run terminated (SIGTERM).
"""
from __future__ import annotations

import gc
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from backends.errors import InputError, check_working_dir, reader_gone
from backends.printable import escape_unencodable_output, printable

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from backends.submit.model import SubmitPlan

PROG = "hyperion-submit"
USAGE = f"""\
usage: {PROG} <local|slurm> --cfg SITE.yaml --output-file LOG [options] -- COMMAND [ARGS...]

options:
  --cfg PATH            site YAML (defaults and sbatch policy); required
  --output-file PATH    combined stdout/stderr log; must contain NAME for arrays; required
  --num-gpus N          GPUs per task (default from the site file, normally 0)
  --num-threads N       CPU threads per task (default from the site file, normally 1)
  --mem SIZE            memory per node, e.g. 8G (excludes --mem-per-cpu)
  --mem-per-cpu SIZE    memory per CPU, e.g. 2G (excludes --mem)
  --time DURATION       wall-clock limit, e.g. 168:00:00
  --array NAME=A:B[,C:D|,E...]  one task per value; NAME is substituted in args and log
  --max-jobs-run N      concurrently running Slurm array tasks (needs --array)
  --env NAME=VALUE      extra variable exported to every task (repeatable)
  --dry-run             print what would run (sbatch argv and script, or local commands)
"""
OK, FAILED, BAD_INPUT, INTERRUPTED = 0, 1, 2, 130


def _wants_help(argv: Sequence[str]) -> bool:
    head = list(argv)[: list(argv).index("--")] if "--" in argv else list(argv)
    return any(a in ("-h", "--help") for a in head)


@contextmanager
def _start_up_uncollected() -> Iterator[Callable[[], None]]:
    """No cyclic garbage collection while the start-up imports and parses; the callable it gives
    ends that, with what was loaded frozen (`gc.freeze`), before the first task runs.

    The start-up makes some 25 000 objects that live as long as the process (jsonargparse, the
    record classes) and almost no garbage, yet the collector walked them about 40 times: 7-11 ms
    of a 100-task run, 7-21 ms of a 1000-task one. Frozen, the collections a long run of tasks
    still needs (their garbage is collected as before) walk only what the run made; merely
    re-enabled, the first one walked them all (8-16 ms). Undone at the end, for an in-process
    caller: its objects are collected as before.
    """
    enabled = gc.isenabled()
    frozen = False

    def start() -> None:
        nonlocal frozen
        if enabled and not frozen:
            gc.freeze()
            frozen = True
            gc.enable()

    gc.disable()
    try:
        yield start
    finally:
        if frozen:
            gc.unfreeze()
        if enabled:
            gc.enable()


def _run(argv: Sequence[str]) -> int:
    with _start_up_uncollected() as start_collecting:
        return _run_collected_after_start(argv, start_collecting)


def _run_collected_after_start(argv: Sequence[str], start_collecting: Callable[[], None]) -> int:
    from backends.submit.commandline import parse_submit_request
    from backends.submit.plan import build_plan, describe_plan

    try:
        check_working_dir()
        request = parse_submit_request(argv)
        plan = build_plan(request.site, request.options)
    except InputError as err:   # escaped: the line may quote a hostile file or argument
        print(f"{PROG}: error: {printable(str(err))}", file=sys.stderr)
        return BAD_INPUT
    _warn_torchrun(plan)
    _warn_substitution(plan)
    if request.dry_run:   # on a terminal, control characters in paths or arguments are shown escaped
        text = describe_plan(plan)
        from backends.retry_hint import ran_before_line

        ran_before = ran_before_line(plan)
        text = f"# {ran_before}\n{text}" if ran_before else text     # first: a long plan scrolls past its end
        try:
            sys.stdout.write(printable(text, layout=True) if sys.stdout.isatty() else text)
            sys.stdout.flush()   # here, not at the interpreter's exit, where a reader gone is exit 120
        except BrokenPipeError:   # `--dry-run | head`: what was wanted was read, as hyperion-jobs says
            reader_gone()
        if plan.options.backend == "slurm":
            _tell_ignored_inputs()
        return OK
    from backends.launch import run_plan

    start_collecting()   # a run of many tasks makes garbage: collected as usual from here on
    try:
        return run_plan(plan)
    except InputError as err:   # refused before anything ran: another attempt is live
        print(f"{PROG}: error: {printable(str(err))}", file=sys.stderr)
        return BAD_INPUT


def _warn_torchrun(plan: SubmitPlan) -> None:
    """Before anything runs (and in a dry run): a command torchrun will not start."""
    if plan.options.num_gpus <= 1:
        return
    from backends.submit.torchrun_check import plan_warning

    line = plan_warning(plan)
    if line:
        print(printable(f"{PROG}: warning: {line}"), file=sys.stderr)


def _warn_substitution(plan: SubmitPlan) -> None:
    """Before anything runs (and in a dry run): an array NAME replaced after `$` or inside a longer name."""
    if plan.options.array is None:
        return
    from backends.submit.substitution_check import plan_notes

    for line in plan_notes(plan):
        print(printable(f"{PROG}: warning: {line}"), file=sys.stderr)


def _tell_ignored_inputs() -> None:
    import os

    from backends.submit.site_options import ignored_inputs_line

    line = ignored_inputs_line(os.environ)
    if line:
        print(f"{PROG}: {line}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    escape_unencodable_output()
    argv = list(sys.argv[1:] if argv is None else argv)
    if _wants_help(argv) or not argv:
        (sys.stdout if argv else sys.stderr).write(USAGE)
        return OK if argv else BAD_INPUT
    try:
        return _run(argv)
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", None)   # backends.submit.local.run.Terminated: SIGTERM, HUP, QUIT
        said = {signal.SIGHUP: "hangup", signal.SIGQUIT: "quit"}.get(signum, "terminated") if signum else "interrupted"
        try:
            print(f"{PROG}: {said}", file=sys.stderr)       # the words slurm's runs use
        except OSError:   # the terminal that hung up is gone (EIO): the status still says what stopped it
            pass
        return 128 + signum if signum else INTERRUPTED
    except OSError as err:  # e.g. the q/ directory beside the log is not writable
        where = f" {err.filename}" if err.filename else ""
        print(printable(f"{PROG}: error: cannot write{where}: {err.strerror or err}"), file=sys.stderr)
        return FAILED


if __name__ == "__main__":
    sys.exit(main())
