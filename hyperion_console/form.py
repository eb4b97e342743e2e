"""The Submit form's fields as a hyperion-submit argv, so the core parses them as the CLI does.

Blank fields are left out, so the site YAML's defaults apply exactly as on the
command line; nothing here validates values: the core's InputError does.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from backends.errors import InputError, SiteError

# form field -> hyperion-submit option (memory is special: its scope picks the option)
OPTION_OF: dict[str, str] = {
    "num_gpus": "--num-gpus",
    "num_threads": "--num-threads",
    "time": "--time",
    "array": "--array",
    "max_jobs_run": "--max-jobs-run",
    "output_file": "--output-file",
}
MEM_SCOPES: dict[str, str] = {"node": "--mem", "cpu": "--mem-per-cpu"}


@dataclass(frozen=True)
class FormValues:
    backend: str
    cfg: str
    num_gpus: str = ""
    num_threads: str = ""
    mem: str = ""
    mem_scope: str = "node"
    time: str = ""
    array: str = ""
    max_jobs_run: str = ""
    output_file: str = ""
    env: str = ""
    command: str = ""


def form_argv(form: FormValues) -> list[str]:
    """`[backend, --cfg, PATH, ..., --, command...]` (no program name)."""
    argv = [form.backend, "--cfg", form.cfg]
    # --option=VALUE: a value starting with "-" ("-5G") is then the option's, and the core says what is
    # wrong with it, rather than "expected one argument"
    for field, option in OPTION_OF.items():
        value = getattr(form, field).strip()
        if value:
            argv.append(f"{option}={value}")
    if form.mem.strip():
        argv.append(f"{MEM_SCOPES[form.mem_scope]}={form.mem.strip()}")
    argv += [f"--env={item}" for item in _words("env", form.env)]
    return argv + ["--", *_words("command", form.command)]


def _words(field: str, text: str) -> list[str]:
    """The field split as a shell would split it (quotes kept together), nothing expanded."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise InputError(field, f"cannot split into words: {exc}") from exc


def field_of_error(error: BaseException) -> str | None:
    """The form field an error names (`--mem-per-cpu` -> `mem`); the site selector for any problem of
    the site file (its `time` key is not the time field)."""
    if isinstance(error, SiteError):
        return "cfg"
    name = str(getattr(error, "field", "")).strip().lstrip("-").replace("-", "_")
    if name in {"mem", "mem_per_cpu", "memory"}:
        return "mem"
    if name in {"cfg", "site", "config"}:
        return "cfg"
    if name in OPTION_OF or name in {"command", "env"}:
        return name
    return None
