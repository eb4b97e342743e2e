"""Usage errors of Hyperion's argparse CLIs as one `prog: error: field: problem` line, exit 2.

argparse would print the whole usage text; the project's rule for bad input is
one line naming the field. hyperion-checkpoint, hyperion-shard-example and
hyperion-console share this parser so that they say it the same way.
"""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from backends.errors import FieldError, refuse_dash_values
from backends.printable import printable


def fail(prog: str, field: str, problem: str) -> NoReturn:
    """One line, escaped: the field or problem may quote a hostile path, file or argument."""
    print(printable(f"{prog}: error: {field}: {problem}"), file=sys.stderr)
    raise SystemExit(2)


def usage_error(message: str) -> tuple[str, str]:
    """argparse's error text as (field, problem)."""
    if message.startswith("argument "):
        field, _, problem = message[len("argument "):].partition(": ")
        return ("command" if field.startswith("{") else field.split("/")[-1]), problem
    if message.startswith("the following arguments are required: "):
        names = message.split(": ", 1)[1]
        if names.startswith("{"):   # the commands' metavar: named as an invalid choice names them
            return "command", f"required (choose from {_choices(names.partition('}')[0].strip('{').split(','))})"
        return names, "required"
    if message.startswith("unrecognized arguments: "):
        return message.split(": ", 1)[1], "unrecognized argument"
    return "arguments", message


def _choices(names: list[str]) -> str:
    """``'show', 'shards'``: as argparse lists the choices of an invalid one."""
    return ", ".join(repr(name) for name in names)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser (and its subparsers) whose errors are one line under the program's name."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog.split()[0], *usage_error(message))

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        """argparse's, after refusing an option given ``--`` (`refuse_dash_values`): argparse
        would hand it an empty list past its type and choices checks."""
        tokens = sys.argv[1:] if args is None else list(args)
        try:
            refuse_dash_values(tokens)
        except FieldError as err:
            fail(self.prog.split()[0], err.field, err.problem)
        return super().parse_known_args(tokens, namespace)
