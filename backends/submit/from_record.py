"""A record's options read back as SubmitOptions for a rerun, every field checked by its type.

A record is a file anyone with access can edit or copy: a retry built from it
must refuse a wrong type (exit 2, naming the field) rather than trace back, or
worse, run ``"echo"`` as the command ``e c h o`` or 1.5 GPUs as 1.
"""
from __future__ import annotations

from backends.errors import InputError
from backends.printable import printable
from backends.records.record import SubmitRecord
from backends.submit.array import SHELL_NAME
from backends.submit.model import SubmitOptions



class _Bad(Exception):
    """One option's problem; `submit_options` adds the record and the key."""


def _shown(value: object) -> str:
    text = printable(repr(value))
    return text if len(text) <= 60 else text[:60] + "..."


def _text(value: object, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not (optional or value.strip()):
        raise _Bad(f"expected {'a string' if optional else 'a non-empty string'}, got {_shown(value)}")
    return value


def _integer(value: object, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"expected an integer, got {_shown(value)}")
    return value


def _command(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(word, str) for word in value):
        raise _Bad(f"expected a non-empty list of strings (the program and its arguments), got {_shown(value)}")
    return tuple(value)


def _env(value: object) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Bad(f"expected a list of [NAME, VALUE] pairs, got {_shown(value)}")
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair)):
            raise _Bad(f"expected [NAME, VALUE] pairs of strings, got {_shown(pair)}")
        if not SHELL_NAME.match(pair[0]):
            raise _Bad(f"{_shown(pair[0])} is not a shell identifier")
    return tuple((name, text) for name, text in value)


def _array(value: object) -> None:
    if value is None:
        return
    values = value.get("values") if isinstance(value, dict) else None
    if not (isinstance(value, dict) and isinstance(value.get("name"), str) and value["name"]
            and isinstance(values, list)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in values)):
        raise _Bad(f"expected {{\"name\": NAME, \"values\": [integers]}}, got {_shown(value)}")


def array_name(options: dict) -> str | None:
    """The array variable the options name (``{"array": {"name": ...}}``); None for a plain job or a
    malformed entry (`submit_options` refuses that one)."""
    array = options.get("array")
    name = array.get("name") if isinstance(array, dict) else None
    return name if isinstance(name, str) and name else None


def array_values(options: dict) -> tuple[int, ...]:
    """The array values the options name; () for a plain job or a malformed entry."""
    array = options.get("array")
    values = array.get("values") if isinstance(array, dict) else None
    if not isinstance(values, list):
        return ()
    return tuple(v for v in values if isinstance(v, int) and not isinstance(v, bool))


def submit_options(record: SubmitRecord, shown_path: str) -> SubmitOptions:
    """The options `record` ran with (no array yet: the caller narrows it); InputError("record", ...) naming
    `shown_path` and the option for a value of the wrong type."""
    options = record.options
    readers = {
        "output_file": lambda v: _text(v, optional=False), "command": _command,
        "num_gpus": lambda v: _integer(v, 0), "num_threads": lambda v: _integer(v, 1),
        "mem": lambda v: _text(v, optional=True), "mem_per_cpu": lambda v: _text(v, optional=True),
        "time": lambda v: _text(v, optional=True), "max_jobs_run": lambda v: _integer(v, None),
        "env": _env, "array": _array,
    }
    read: dict[str, object] = {}
    for key, reader in readers.items():
        try:
            read[key] = reader(options.get(key))
        except _Bad as err:
            raise InputError("record", f"{printable(shown_path)}: options.{key}: {err}") from None
    del read["array"]
    return SubmitOptions(backend=record.backend, cfg=record.cfg, **read)  # type: ignore[arg-type]
