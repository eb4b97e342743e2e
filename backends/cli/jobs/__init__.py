"""hyperion-jobs: list, status, watch, logs, cancel, history and retry Slurm (and local) submissions.

Targets are a job id (``1234``), one array task (``1234_5``, the physical
SLURM_ARRAY_TASK_ID), or a submit record (``exp/log/q/extract.JOB.submit.json``,
or a ``q/`` directory holding one record); for logs also ``RECORD:VALUE`` with the
logical array value.
"""
from __future__ import annotations

import sys
from typing import Sequence

from backends.cli.jobs.commands import cmd_cancel, cmd_list, cmd_logs, cmd_status
from backends.cli.jobs.history import cmd_history
from backends.cli.jobs.parser import PROG, build_parser
from backends.cli.jobs.retrying import cmd_retry
from backends.cli.jobs.usage import cmd_usage
from backends.cli.jobs.watching import cmd_watch
from backends.errors import InputError
from backends.printable import printable
from backends.watch.slurm.accounting import QueryError
from backends.watch.slurm.cancel import CancelError


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        return COMMANDS[args.command](args)
    except InputError as err:   # escaped: the line may quote a hostile record, path or argument
        print(f"{PROG}: error: {printable(str(err))}", file=sys.stderr)
        return 2
    except (QueryError, CancelError) as err:
        print(f"{PROG}: {printable(str(err))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


COMMANDS = {"list": cmd_list, "status": cmd_status, "watch": cmd_watch, "logs": cmd_logs,
            "cancel": cmd_cancel, "history": cmd_history, "retry": cmd_retry, "usage": cmd_usage}

if __name__ == "__main__":
    sys.exit(main())
