"""The sbatch command line of one submission window (pure).

Order: submitter-owned options first (--parsable, --export=ALL, job name,
q/ output files, array, CPUs, memory, time), then the site's base_options,
then the CPU or GPU policy, then the script. Site YAML values are single
argument strings; nothing here goes through a shell.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from backends.records.paths import log_stem, q_dir

if TYPE_CHECKING:
    from backends.ranges import Window
    from backends.submit.config import SiteConfig
    from backends.submit.model import SubmitOptions


def slurm_file_pattern(options: SubmitOptions, suffix: str) -> str:
    """Slurm's own stdout/stderr pattern in q/: slurm-%j.out, or slurm-%A_%a.out for arrays.

    A ``%`` in the directory is doubled: sbatch would read ``exp/100%j/`` as a pattern too.
    """
    name = "slurm-%A_%a" if options.array is not None else "slurm-%j"
    return str(q_dir(options.output_file)).replace("%", "%%") + f"/{name}.{suffix}"


def request_options(options: SubmitOptions) -> list[str]:
    """--cpus-per-task, then --mem or --mem-per-cpu, then --time (each only when set)."""
    argv = [f"--cpus-per-task={options.num_threads}"]
    if options.mem is not None:
        argv.append(f"--mem={options.mem}")
    elif options.mem_per_cpu is not None:
        argv.append(f"--mem-per-cpu={options.mem_per_cpu}")
    if options.time is not None:
        argv.append(f"--time={options.time}")
    return argv


def array_expression(options: SubmitOptions, window: Window | None,
                     throttle: int | None = None) -> str | None:
    """What goes to ``--array`` for a window: its physical expression[%throttle]; None if no array.

    `throttle` is the window's share of --max-jobs-run when the array is split
    into windows (all shares sum to it); by default the whole --max-jobs-run.
    """
    if window is None:
        return None
    limit = throttle if throttle is not None else options.max_jobs_run
    return window.expression + (f"%{limit}" if limit else "")


def array_option(options: SubmitOptions, window: Window | None, throttle: int | None = None) -> list[str]:
    """``--array=...`` for an array window, else nothing."""
    expression = array_expression(options, window, throttle)
    return [] if expression is None else [f"--array={expression}"]


def sbatch_argv(site: SiteConfig, options: SubmitOptions, window: Window | None,
                script_path: Path | str, throttle: int | None = None, held: bool = False) -> list[str]:
    """The full sbatch argv submitting `script_path` for one window (None: not an array).

    A `held` window (no share of --max-jobs-run left for it yet) is submitted
    with ``--hold``; whoever waits for the submission releases it when a slot frees.
    """
    return [
        site.sbatch_command,
        "--parsable",
        "--export=ALL",
        f"--job-name={log_stem(options.output_file)}",
        f"--output={slurm_file_pattern(options, 'out')}",
        f"--error={slurm_file_pattern(options, 'err')}",
        "--open-mode=append",     # a requeue reopens them: truncated, the run before's reason was lost
        *array_option(options, window, throttle),
        *(["--hold"] if held else []),
        *request_options(options),
        *site.sbatch_options(options.num_gpus),
        str(script_path),
    ]
