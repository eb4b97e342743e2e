"""How the console turns the core's errors into notifications.

The console computes nothing the CLIs do not: screens import and call the core
(backends, sharding) directly; this module only decides how a failure is shown.
"""
from __future__ import annotations

import functools

from backends.errors import FieldError, InputError
from backends.submit.slurm.sbatch import SubmitError


RECORD_FIELDS = ("record", "RECORD")     # how the core names a record it cannot read or pick
# The CLIs' positional arguments the core names its refusals by (`hyperion-jobs retry TARGET`, the
# JOB|RECORD typed): a console user typed none of them, but acted on the record open on the screen,
# which the problem itself names (`RECORD still has 2 live task(s) ...`, `values 3 last ran ...`).
CLI_POSITIONALS = ("TARGET",)


def describe_error(exc: BaseException, unnamed: tuple[str, ...] = ()) -> str:
    """One line for a notification: InputError already reads `field: problem`, but for a field
    only the CLI's command line has (CLI_POSITIONALS), or one of `unnamed` (`record` in a retry of
    the record on the screen), said without it."""
    if isinstance(exc, FieldError) and (exc.field in CLI_POSITIONALS or exc.field in unnamed):
        return exc.problem
    text = str(exc) or type(exc).__name__
    if isinstance(exc, (FieldError, SubmitError)):
        return text  # InputError / ShardingError: `field: problem`; SubmitError: the CLI's own line
    return f"{type(exc).__name__}: {text}"




def as_typed(exc: BaseException, option: str) -> BaseException:
    """`exc` naming the option the user typed the record into (`--record`, `PATH`) rather than the
    core's `record`/`RECORD`: the console's lines name what to fix where it was typed, as the CLIs'
    do for their own options. Any other error is returned as it is."""
    if isinstance(exc, FieldError) and exc.field in RECORD_FIELDS:
        return InputError(option, exc.problem)
    return exc


def guarded(method):
    """Run a screen's action or handler; any error becomes a notification, never a crash."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # the console shows errors; it must not die of them
            from .shown import tell
            tell(self, describe_error(exc), title="error", severity="error", timeout=10)
            return None

    return wrapper
