"""The one error type for bad input, shared by the whole core (backends and sharding).

Every face (CLI, console) shows it as a single line naming the field and the
problem; the CLIs exit with status 2 and print no traceback. `sharding`'s
ShardingError derives from `FieldError` too, so every face shows both the same way.
"""
from __future__ import annotations

from collections.abc import Sequence


class FieldError(ValueError):
    """Bad input named by its field; CLIs print it as one line and exit 2."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"


class InputError(FieldError):
    """Bad input from a YAML file or the command line, found before anything runs."""


class SiteError(InputError):
    """Bad input found in a site YAML file: its field is the file's key, and it says which file.

    A key shares its name with a command-line option (`time`, `mem`): the
    console marks the site selector for it, not the option's field.
    """


def interrupt_status(exc: KeyboardInterrupt) -> int:
    """The exit status of a command stopped by `exc`: 128 + the signal, as a shell reports one that
    killed it. Ctrl-C is 130; the local runner raises its SIGTERM/SIGHUP/SIGQUIT as KeyboardInterrupts
    carrying `signum` (143, 129, 131), and a command running it (hyperion-jobs retry) exits as it does."""
    import signal

    return 128 + getattr(exc, "signum", signal.SIGINT)


def check_working_dir() -> None:
    """InputError when the working directory is gone (deleted or moved away under the shell).

    Relative paths then resolve nowhere, and os.getcwd, which abspath and
    jsonargparse call, raises FileNotFoundError deep inside a command: a
    traceback, or hyperion-submit's misleading 'cannot write'.
    """
    import os

    try:
        os.getcwd()
    except OSError as err:
        raise InputError("working directory", f"cannot be reached ({err.strerror or err}): it was deleted "
                         "or moved; cd to a folder that exists") from None


def refuse_dash_values(tokens: Sequence[str]) -> None:
    """InputError naming the option given ``--`` as its value (``--env=--``, ``-n=--``, ``-n--``).

    argparse (3.11, and jsonargparse on it) drops a ``--`` it reads as an option's value and
    hands the option an empty list, past its type and choices checks: a traceback later
    (``--limit=--``), or a wrong run (``--output-file=--`` planned its log as ``./[]``). Checked
    on the tokens, before any parser, so that every option of every CLI is covered alike; only
    the options: after a bare ``--`` come positional arguments or hyperion-submit's command.
    """
    for token in tokens:
        if token == "--":
            return
        if token.startswith("--"):
            name, sep, value = token.partition("=")
            if sep and value == "--":
                raise InputError(name, "'--' is not a value")
        elif token.startswith("-") and token.endswith("--"):   # -n=-- and -n-- (also -fn--: -n's)
            head = token[:-2].removesuffix("=")
            if len(head) >= 2 and head[-1].isalpha():          # -n5-- is -n given "5--"
                raise InputError(f"-{head[-1]}", "'--' is not a value")


def discard_output(stream: object) -> None:
    """Point `stream`'s file descriptor at /dev/null: its reader is gone (EPIPE, EIO), and the
    interpreter's own flush at exit must not fail on it again and print a traceback."""
    import os

    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):   # no descriptor to point anywhere
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)
    except OSError:
        pass


def reader_gone() -> int:
    """Exit status 0 once stdout's reader went away (`| head`): what it wanted it read."""
    import sys

    discard_output(sys.stdout)
    return 0
