"""The hyperion-jobs command line: subcommands, options, and usage errors as one line."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from backends.errors import InputError, refuse_dash_values

PROG = "hyperion-jobs"
DESCRIPTION = ("hyperion-jobs: list, status, watch, logs, usage, history, retry and cancel Slurm (and local) "
               "submissions.")


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as one ``field: problem`` line, exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        field, problem = _field_problem(message)
        commands = [action.choices for action in self._actions if isinstance(action, argparse._SubParsersAction)]
        if problem == "required" and field == "COMMAND" and commands:   # say which, as for an invalid one
            problem += f" (choose from {', '.join(repr(name) for name in commands[0])})"
        raise InputError(field, problem)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        """argparse's, after refusing an option given ``--`` (`refuse_dash_values`): argparse
        would hand it an empty list past its type and choices checks (--limit=-- traced back)."""
        tokens = sys.argv[1:] if args is None else list(args)
        refuse_dash_values(tokens)
        return super().parse_known_args(tokens, namespace)


def _field_problem(message: str) -> tuple[str, str]:
    if message.startswith("argument "):
        field, _, problem = message[len("argument "):].partition(": ")
        return field, problem
    if message.startswith("the following arguments are required: "):
        return message.split(": ", 1)[1], "required"
    if message.startswith("unrecognized arguments: "):
        return message.split(": ", 1)[1], "unrecognized argument"
    return "arguments", message


def _clusters(p: argparse.ArgumentParser) -> None:
    """``-M NAME`` / ``--clusters NAME``, as squeue, sacct and scancel take it (`clusters.asked_cluster`)."""
    p.add_argument("-M", "--clusters", metavar="NAME",
                   help="the Slurm cluster a job id no record names is asked of (as squeue -M); "
                        "a record's jobs are asked of the cluster it names")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    p = sub.add_parser("list", help="submit records under DIRs and your live Slurm jobs")
    p.add_argument("dirs", nargs="*", metavar="DIR", default=["."])
    p.add_argument("--limit", type=int, default=20, help="newest records to show (default 20)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("status", help="per-task state, exit code, elapsed, node and log (latest attempt per value)")
    p.add_argument("target", metavar="JOB|RECORD")
    p.add_argument("--json", action="store_true")
    p.add_argument("--failures", action="store_true",
                   help="group the tasks that did not succeed by state, exit code and last log line")
    p.add_argument("--dir", action="append", type=Path, help="where to look for records of a job id")
    _clusters(p)

    p = sub.add_parser("history", help="the attempts of a submission: time, job ids, counts, overrides")
    p.add_argument("target", metavar="JOB|RECORD")
    p.add_argument("--json", action="store_true")
    p.add_argument("--dir", action="append", type=Path)
    _clusters(p)

    p = sub.add_parser("usage", help="what the tasks used: MaxRSS, elapsed, CPU efficiency, tasks near a limit")
    p.add_argument("target", metavar="JOB|RECORD")
    p.add_argument("--json", action="store_true")
    p.add_argument("--dir", action="append", type=Path)
    _clusters(p)

    p = sub.add_parser("retry", help="rerun the tasks whose latest attempt did not complete with exit code 0")
    p.add_argument("target", metavar="JOB|RECORD")
    p.add_argument("--state", metavar="STATE[,STATE...]", help="only tasks in these states (e.g. FAILED,TIMEOUT)")
    p.add_argument("--values", metavar="LIST", help="only these values (1-5,9 or 1:5,9); any state unless --state")
    p.add_argument("--num-threads", type=int)
    memory = p.add_mutually_exclusive_group()
    memory.add_argument("--mem", metavar="SIZE", help="memory per node, or auto: proposed from what was used")
    memory.add_argument("--mem-per-cpu", metavar="SIZE")
    p.add_argument("--time", metavar="DURATION", help="time limit, or auto: twice the limit of TIMEOUT tasks")
    p.add_argument("--max-jobs-run", type=int)
    p.add_argument("--dry-run", action="store_true", help="print the plan (values, windows, sbatch argv, script)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("--trust-record", action="store_true",
                   help="run a record another user owns or others may write (its command runs as you)")
    p.add_argument("--dir", action="append", type=Path)

    p = sub.add_parser("watch", help="live table until every task has ended")
    p.add_argument("target", metavar="JOB|RECORD")
    p.add_argument("--cap", type=float, default=30.0, help="longest poll interval, seconds (default 30)")
    p.add_argument("--dir", action="append", type=Path)
    _clusters(p)

    p = sub.add_parser("logs", help="last lines of a task's log; -f follows it")
    p.add_argument("task", metavar="TASK", help="JOB_TASK, JOB (not an array: name one task), RECORD or RECORD:VALUE")
    p.add_argument("-n", "--lines", type=int, default=20)
    p.add_argument("-f", "--follow", action="store_true")
    p.add_argument("--attempt", type=int, metavar="N", help="the log of attempt N (RECORD:VALUE)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--out", action="store_true", help="Slurm's q/slurm-*.out instead of the program log")
    which.add_argument("--err", action="store_true", help="Slurm's q/slurm-*.err")
    p.add_argument("--raw", action="store_true",
                   help="print control characters as they are (default on a terminal: shown as escapes)")
    p.add_argument("--dir", action="append", type=Path)
    _clusters(p)

    p = sub.add_parser("cancel", help="scancel jobs or tasks (asks first unless --yes)")
    p.add_argument("targets", nargs="+", metavar="JOB[_TASK]|RECORD")
    p.add_argument("--yes", "-y", action="store_true")
    p.add_argument("--dir", action="append", type=Path, help="where to look for records of a job id")
    _clusters(p)
    return parser
