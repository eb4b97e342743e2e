"""The one error type for bad user input to the submission and jobs core.

Every face (CLI, console) shows it as a single line naming the field and the
problem; the CLIs exit with status 2 and print no traceback. Its shape comes
from `sharding.errors.FieldError`, which the sharding errors share.
"""
from __future__ import annotations

from sharding.errors import FieldError


class InputError(FieldError):
    """Bad input from a YAML file or the command line, found before anything runs."""
