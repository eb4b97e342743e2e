"""hyperion-jobs: list, status, watch, logs, cancel, history and retry Slurm (and local) submissions.

Targets are a job id (``1234``), one array task (``1234_5``, the physical
SLURM_ARRAY_TASK_ID), or a submit record (``exp/log/q/extract.JOB.submit.json``,
or a ``q/`` directory holding one record); for logs also ``RECORD:VALUE`` with the
logical array value.
"""
from __future__ import annotations

import errno
import importlib
import sys
from collections.abc import Callable, Sequence

from backends.cli.jobs.parser import PROG, build_parser
from backends.errors import InputError, check_working_dir, interrupt_status, reader_gone
from backends.printable import escape_unencodable_output, printable
from backends.watch.slurm.runner import QueryError
from backends.watch.slurm.cancel import CancelError

# Each command's module is imported only when it runs: `status` need not load
# what `retry` plans and submits with (site YAML, the planner, the launcher).
COMMANDS = {"list": "commands", "status": "commands", "watch": "watching", "logs": "commands",
            "cancel": "commands", "history": "history", "retry": "retrying", "usage": "usage"}


def command(name: str) -> Callable[..., int]:
    module = importlib.import_module(f"backends.cli.jobs.{COMMANDS[name]}")
    return getattr(module, f"cmd_{name}")


ACTING = ("retry", "cancel")      # commands that change something: a broken pipe is not their success


def main(argv: Sequence[str] | None = None) -> int:
    escape_unencodable_output()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = None
    try:
        args = build_parser().parse_args(argv)
        check_working_dir()
        status = command(args.command)(args)
        sys.stdout.flush()   # here, not at the interpreter's exit, where a reader gone is exit 120
        return status
    except InputError as err:   # escaped: the line may quote a hostile record, path or argument
        print(f"{PROG}: error: {printable(str(err))}", file=sys.stderr)
        return 2
    except (QueryError, CancelError) as err:
        print(f"{PROG}: {printable(str(err))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:   # a local retry's runner stopped by SIGHUP/SIGTERM: 129/143, as it exits
        return interrupt_status(exc)
    except BrokenPipeError:           # `| head`: quiet; but a retry or cancel cut short is no success
        status = reader_gone()        # (a --dry-run acts on nothing: `retry --dry-run | head` is read)
        acting = args is not None and args.command in ACTING and not getattr(args, "dry_run", False)
        return 1 if acting else status
    except OSError as err:            # a retry onto a full disk: the file it could not write, no traceback
        where = f" {err.filename}" if err.filename else ""
        what = "cannot write" if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS) else "failed on"
        print(printable(f"{PROG}: {what}{where}: {err.strerror or err}"), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
