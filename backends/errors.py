"""The one error type for bad user input.

Every face (CLI, console) shows it as a single line naming the field and the
problem; the CLIs exit with status 2 and print no traceback.
"""
from __future__ import annotations


class InputError(ValueError):
    """Bad input from a YAML file or the command line, found before anything runs."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"
