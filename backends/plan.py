"""Submission planning: portable options + site config -> a frozen, printable plan.

Pure: building a plan runs nothing and writes nothing, so ``--dry-run``, the
console and the retry bridge can all show exactly what would run.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from backends.array import ArraySpec
from backends.config import SiteConfig
from backends.errors import InputError
from backends.record import local_results_path, log_stem, q_dir, record_path
from backends.resources import check_count, check_memory, check_time

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


@dataclass(frozen=True)
class SubmitPlan:
    site: SiteConfig
    options: SubmitOptions
    argv: tuple[str, ...]            # "hyperion-submit", *submit_argv(options)
    tasks: tuple[PlannedTask, ...]
    windows: tuple[PlannedWindow, ...]   # slurm only; () for local
    q_dir: str
    record_path: str
    results_path: str | None         # q/<stem>.local.json for local, else None

    @property
    def script_path(self) -> str | None:
        return self.windows[0].script_path if self.windows else None


def parse_submit_argv(argv: Sequence[str]) -> tuple[SiteConfig, SubmitOptions]:
    """Parse ``<local|slurm> --cfg site.yaml [options] -- command...`` (no program name)."""
    from backends.cli_options import parse_submit_argv as parse  # jsonargparse is slow to import

    return parse(argv)


def submit_argv(options: SubmitOptions) -> list[str]:
    """The hyperion-submit command line (without the program name) that recreates `options`."""
    argv = [options.backend, "--cfg", options.cfg, "--output-file", options.output_file,
            "--num-gpus", str(options.num_gpus), "--num-threads", str(options.num_threads)]
    if options.mem is not None:
        argv += ["--mem", options.mem]
    if options.mem_per_cpu is not None:
        argv += ["--mem-per-cpu", options.mem_per_cpu]
    if options.time is not None:
        argv += ["--time", options.time]
    if options.array is not None:
        argv += ["--array", options.array.text]
    if options.max_jobs_run is not None:
        argv += ["--max-jobs-run", str(options.max_jobs_run)]
    for key, value in options.env:
        argv += ["--env", f"{key}={value}"]
    return [*argv, "--", *options.command]
