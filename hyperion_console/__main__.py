"""`hyperion-console`: the Textual console over the headless core."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from backends.errors import FieldError, InputError, check_working_dir
from backends.printable import escape_unencodable_output, printable
from sharding.usage import OneLineParser

PROG = "hyperion-console"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument("path", nargs="?", metavar="PATH",
                        help="a record or a checkpoint to open: what --record or --checkpoint takes")
    parser.add_argument("--cfg-dir", help="directory of site YAML files (default: conf)")
    parser.add_argument("--checkpoint", help="open the Checkpoint screen on this checkpoint")
    parser.add_argument("--record", help="a q/NAME.submit.json record to watch / resubmit")
    parser.add_argument("--demo", action="store_true",
                        help="build a demo checkpoint with the local backend and open it")
    parser.add_argument("--demo-dir", help="where --demo builds (default ~/.cache/hyperion-console/demo)")
    return parser.parse_args(argv)


def check_args(args: argparse.Namespace) -> None:
    """Refuse bad paths given on the command line before the screen takes over the terminal.

    Inside the console the same failures (a checkpoint deleted meanwhile) are
    notifications; at start-up the user gets one line and exit 2 instead of an
    empty screen.
    """
    from backends.fileio import directory_problem
    from backends.watch.targets import record_file
    from sharding.store import Checkpoint

    from .errors import as_typed
    from .record_cache import cached_record

    for field, value in (("PATH", args.path), ("--cfg-dir", args.cfg_dir), ("--checkpoint", args.checkpoint),
                         ("--record", args.record), ("--demo-dir", args.demo_dir)):
        if value is not None and printable(value) != value:
            # a text field would show (and send to the terminal) what the path holds
            raise InputError(field, f"holds control, bidi or invisible characters or bytes that are not UTF-8: "
                             f"{printable(value)}")
    record_option = "PATH" if args.path is not None and _place_path(args) == "record" else "--record"
    if args.demo and (args.checkpoint or args.record):
        raise InputError("--demo", "builds its own checkpoint and record; leave out --checkpoint/--record")
    if args.cfg_dir is not None:
        problem = directory_problem(args.cfg_dir)   # Path.is_dir() raised for a name too long
        if problem is not None:
            raise InputError("--cfg-dir", problem)
    if args.checkpoint:
        store = Checkpoint(args.checkpoint)
        store.require_dir("--checkpoint")
        store.require_run()
    if args.record:
        try:
            args.record = str(record_file(args.record) or args.record)   # a folder holding one: that record
            cached_record(args.record)   # parsed once: the screen reuses it
        except FieldError as exc:       # named as typed: `--record: ...`, not the core's `record: ...`
            raise as_typed(exc, record_option) from None


def _place_path(args: argparse.Namespace) -> str:
    """PATH as --record or --checkpoint, by what it is: people type the path they have at hand
    (`hyperion-console exp/log/q/x.JOB.submit.json`), as `hyperion-jobs` and `hyperion-checkpoint`
    take it. Returns which of the two it is."""
    from backends.watch.targets import record_file
    from sharding.store import Checkpoint

    from .errors import as_typed

    try:
        is_record = record_file(args.path) is not None
    except FieldError as exc:         # a folder of several records: `PATH: ...`, as typed
        raise as_typed(exc, "PATH") from None
    if is_record:
        field = "record"
    elif os.path.isdir(args.path) and Checkpoint(args.path).read_run() is not None:   # a file: neither
        field = "checkpoint"
    else:
        raise InputError("PATH", "neither a submission record (q/NAME.submit.json, or a folder holding one) "
                         f"nor a checkpoint (a folder holding run.json): {args.path}")
    if getattr(args, field) is not None:
        raise InputError("PATH", f"a {field} given twice: {args.path} and --{field} {getattr(args, field)}")
    setattr(args, field, args.path)
    return field


def check_stdin() -> None:
    """InputError unless stdin is a terminal. With stdin a file or /dev/null, Textual's driver reads
    end-of-file again and again: the console spun at a full CPU under a screen no key reaches."""
    try:
        if os.isatty(0):
            return
    except OSError:
        pass
    raise InputError("stdin", "not a terminal: the console reads its keys from one (run it in a terminal, "
                     "not with input from a file or a pipe)")


def main(argv: Sequence[str] | None = None) -> int:
    escape_unencodable_output()
    args = parse_args(argv)
    from .app import make_app
    from .errors import describe_error
    try:
        check_working_dir()
        check_args(args)
        check_stdin()           # before --demo builds anything and before Textual starts
        if args.demo:           # a few seconds of local runs before the screen changes: say what they are
            from .demo import SHARDS, demo_root

            where = demo_root(Path(args.demo_dir) if args.demo_dir else None)
            print(printable(f"{PROG}: building the demo checkpoint in {where} (a local run of {SHARDS} shards)..."),
                  file=sys.stderr, flush=True)
        app = make_app(cfg_dir=args.cfg_dir or "conf", checkpoint=args.checkpoint, record=args.record,
                       demo=args.demo, demo_dir=args.demo_dir)
    except Exception as exc:  # InputError and friends: one line, exit 2
        print(f"{PROG}: error: {printable(describe_error(exc))}", file=sys.stderr)
        return 2
    app.run()
    return app.return_code or 0     # 143 or 129 after a kill or a closed terminal


if __name__ == "__main__":
    sys.exit(main())
