"""The option and plan types of a submission, and the few facts derived from options alone.

The bottom of the submit half: the parser, the planner and the Slurm and local
renderers all take these plain frozen dataclasses, and this module imports
nothing of theirs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from backends.submit.array import ArraySpec
from backends.submit.config import SiteConfig

BACKENDS = ("local", "slurm")


@dataclass(frozen=True)
class SubmitOptions:
    """Portable options after YAML defaults + CLI overrides."""

    backend: str
    cfg: str
    output_file: str
    command: tuple[str, ...]
    num_gpus: int = 0
    num_threads: int = 1
    mem: str | None = None
    mem_per_cpu: str | None = None
    time: str | None = None
    array: ArraySpec | None = None
    max_jobs_run: int | None = None
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PlannedTask:
    """One launched process: a logical array value (None for a plain job)."""

    value: int | None
    argv: tuple[str, ...]            # NAME substituted, torchrun prefix included
    log: str                         # absolute, NAME substituted
    env: tuple[tuple[str, str], ...] # NAME=value plus options.env


@dataclass(frozen=True)
class PlannedWindow:
    """One sbatch submission: logical values whose physical index is value - offset."""

    offset: int
    values: tuple[int, ...]          # logical values; () for a non-array job
    array_expression: str | None     # what goes to --array (incl. %max), None for non-array
    script_path: str
    script: str
    sbatch_argv: tuple[str, ...]     # full command line, script path last
    held: bool = False               # submitted --hold: no share of --max-jobs-run yet


@dataclass(frozen=True)
class SubmitPlan:
    """Everything a backend runs or a dry run shows: the tasks, their windows and the record's path.

    (A docstring of its own also spares dataclass() computing one from the signature at import.)
    """

    site: SiteConfig
    options: SubmitOptions
    argv: tuple[str, ...]            # "hyperion-submit", *submit_argv(options)
    tasks: tuple[PlannedTask, ...]
    windows: tuple[PlannedWindow, ...]   # slurm only; () for local
    q_dir: str
    record_path: str
    # the launcher's own command that reruns what failed (the checkpoint bridge's); None: hyperion-jobs retry
    rerun: tuple[str, ...] | None = None

    @property
    def script_path(self) -> str | None:
        return self.windows[0].script_path if self.windows else None


def launch_prefix(num_gpus: int) -> tuple[str, ...]:
    """The contract's torchrun prefix for more than one GPU, nothing otherwise."""
    if num_gpus > 1:
        return ("torchrun", "--standalone", "--nnodes=1", f"--nproc-per-node={num_gpus}")
    return ()


def substitute(text: str, name: str | None, value: int | None) -> str:
    """Every literal occurrence of NAME replaced by the value, as slurm.pl does."""
    return text if name is None or value is None else text.replace(name, str(value))


def record_options(options: SubmitOptions) -> dict:
    """The resolved portable options as a record keeps them (JSON-ready)."""
    array = options.array
    return {
        "num_gpus": options.num_gpus, "num_threads": options.num_threads, "mem": options.mem,
        "mem_per_cpu": options.mem_per_cpu, "time": options.time,
        "array": None if array is None else {"name": array.name, "values": list(array.values)},
        "max_jobs_run": options.max_jobs_run, "output_file": os.path.abspath(options.output_file),
        "command": list(options.command), "env": [list(pair) for pair in options.env],
    }
