"""Which ``--env NAME`` the batch script cannot hand to the task unchanged.

On Slurm, ``--env NAME=VALUE`` becomes ``export NAME=VALUE`` in a bash batch
script; the local backend puts the pair straight into the task's environment.
A name bash itself sets, resets or refuses never arrives on Slurm as typed
(``_`` became the path of the script's last command, ``SECONDS`` the seconds
since the export, ``UID`` is read-only), so the same line gave two backends two
values. Such names are refused on both, as ``--array`` refuses its NAME.

Narrower than the array's RESERVED_NAMES on purpose: an array NAME takes every
task's integer, an ``--env`` is a value the user chose, and ``PATH``, ``HOME``,
``LANG``, ``LC_*``, ``PYTHONPATH``, ``OMP_NUM_THREADS``, ``TMPDIR``, ``BASH_ENV``
arrive as given (checked with bash 5.2 running the script's export-then-exec),
so a user may export them.

``CUDA_VISIBLE_DEVICES`` is refused on Slurm only: the contract's generated
script preserves the value Slurm set for the GPUs it allocated (an export
would point the task at GPUs it was not given, or at none), and GPUs are asked
for with ``--num-gpus``. On ``local`` there is no allocation to preserve: the
task inherits the user's shell, and choosing a GPU there is the user's own call
(``local`` already leaves the variable as the shell has it).
"""
from __future__ import annotations

from backends.errors import InputError
from backends.shard_env import WINDOW_OFFSET_ENV
from backends.submit.array import INTERNAL_PREFIX

FIELD = "--env"

# Set, reset or computed by bash as the script runs (bash manual, "Bash Variables"), or read-only
# there: `export NAME=VALUE` is lost, replaced or refused before the task starts.
BASH_SETS = frozenset({
    "_", "BASHOPTS", "BASHPID", "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV", "BASH_CMDS",
    "BASH_COMMAND", "BASH_LINENO", "BASH_MONOSECONDS", "BASH_REMATCH", "BASH_SOURCE",
    "BASH_SUBSHELL", "BASH_TRAPSIG", "BASH_VERSINFO", "DIRSTACK", "EPOCHREALTIME", "EPOCHSECONDS",
    "EUID", "FUNCNAME", "GROUPS", "HISTCMD", "LINENO", "OPTIND", "PIPESTATUS", "PPID", "RANDOM",
    "SECONDS", "SHELLOPTS", "SRANDOM", "UID",
})
# Arrive as typed, but change how the rest of the batch script runs: its word splitting (IFS, which
# no bash task would read from its environment anyway), POSIX mode, the compatibility level, or
# which programs command search skips (the task's own program or the script's mkdir).
BASH_READS = frozenset({"IFS", "POSIXLY_CORRECT", "BASH_COMPAT", "EXECIGNORE"})
# What Slurm sets and the batch script or sharding read after the exports: a typed value made the
# log say "restarted", or every task take another shard.
SCRIPT_READS = frozenset({"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_RESTART_COUNT",
                          WINDOW_OFFSET_ENV})
# What Slurm sets for the allocation and the contract says the batch script preserves (Slurm only).
SLURM_ALLOCATES = frozenset({"CUDA_VISIBLE_DEVICES"})


def env_problem(name: str, backend: str) -> str | None:
    """Why `name` cannot be an ``--env`` name on `backend` (None when it can); `name` is a shell
    identifier. The bash lists hold on both backends (one command line means the same on both);
    what Slurm allocates only where Slurm does."""
    if backend == "slurm" and name in SLURM_ALLOCATES:
        return (f"{name} is set by Slurm to the GPUs it allocated and the batch script keeps Slurm's "
                "value; ask for GPUs with --num-gpus")
    if name in BASH_SETS:
        return (f"{name} is a variable bash sets or resets itself in the Slurm batch script, so the task "
                "would get another value; pick another name")
    if name in BASH_READS:
        return (f"{name} changes how bash runs the Slurm batch script itself (word splitting, POSIX "
                "mode, command search); pick another name")
    if name in SCRIPT_READS or name.startswith(INTERNAL_PREFIX):
        return (f"{name} is set by Slurm or hyperion-submit and read by the batch script or sharding "
                "(the task index, offset, restart count); pick another name")
    return None


def check_env_name(name: str, backend: str) -> None:
    """Raise the one-line ``--env`` error for a name the task would not get as typed on `backend`."""
    problem = env_problem(name, backend)
    if problem is not None:
        raise InputError(FIELD, problem)
