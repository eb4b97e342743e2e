"""Where the console reaches the headless core.

Only lazy look-ups live here, so that a core function that is missing shows as a
"not available" notification instead of an import error at start-up. The
console itself computes nothing the CLIs do not: it calls these functions.
"""
from __future__ import annotations

import importlib
from typing import Any


class Unavailable(RuntimeError):
    """A core function the console needs is not (yet) in this installation."""


def need(module: str, name: str) -> Any:
    """Return `module.name`, or raise Unavailable with a message for the user."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise Unavailable(f"{module}.{name} not available ({exc})") from exc
    try:
        return getattr(mod, name)
    except AttributeError as exc:
        raise Unavailable(f"{module}.{name} not available") from exc


def describe_error(exc: BaseException) -> str:
    """One line for a notification: InputError already reads `field: problem`."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, Unavailable) or (hasattr(exc, "field") and hasattr(exc, "problem")):
        return text  # InputError / ShardingError: already `field: problem`
    return f"{type(exc).__name__}: {text}"


def guarded(method):
    """Run a screen's action or handler; any error becomes a notification, never a crash."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # the console shows errors; it must not die of them
            self.notify(describe_error(exc), title="error", severity="error", timeout=10)
            return None

    return wrapper
