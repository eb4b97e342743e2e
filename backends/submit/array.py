"""Array specifications: ``NAME=A:B[,C:D|,E...]`` parsed into a name and its values.

Kept apart from planning so the console and the retry bridge can build arrays
from values they already hold.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from backends.errors import InputError
from backends.printable import printable
from backends.ranges import compress
from backends.shard_env import names

FIELD = "--array"
# Far beyond any real recipe (a record lists every task); a typo such as
# JOB=1:100000000 is refused before its values are built, not after memory runs out.
MAX_VALUES = 100_000
# The largest array value: far above any shard count, far below where a 64-bit
# NAME would wrap (2**63 became a negative NAME) or a shell's $(( )) overflows.
MAX_VALUE = 10 ** 9
# A shell identifier: an array NAME, an --env name, a variable of the batch script.
SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_POSITIVE = re.compile(r"[0-9]{1,18}\Z")
# NAME is exported to the task and replaced in every argument, so it may not be a
# variable the task's shell, loader, interpreter, Slurm or the GPU runtime depends on.
RESERVED_NAMES = frozenset({
    "PATH", "HOME", "IFS", "SHELL", "USER", "LOGNAME", "PWD", "OLDPWD", "TERM", "TMPDIR", "TMP",
    "TEMP", "LANG", "LANGUAGE", "TZ", "MAIL", "HOSTNAME", "HOSTTYPE", "OSTYPE", "MACHTYPE",
    "PS1", "PS2", "PS3", "PS4", "ENV", "CDPATH", "GLOBIGNORE", "SHELLOPTS", "SHLVL", "OPTIND",
    "OPTARG", "OPTERR", "PPID", "UID", "EUID", "GROUPS", "RANDOM", "SECONDS", "LINENO",
    "HISTFILE", "PROMPT_COMMAND", "DISPLAY", "EDITOR", "PAGER", "MANPATH", "INFOPATH",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "CPATH", "LIBRARY_PATH", "PKG_CONFIG_PATH",
    "GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "VIRTUAL_ENV", "CONDA_PREFIX", "PERL5LIB", "NODE_OPTIONS",
    # variables bash itself sets or reads in the batch script: NAME=value would not hold there
    "EPOCHSECONDS", "EPOCHREALTIME", "SRANDOM", "FUNCNAME", "FUNCNEST", "HISTCMD", "DIRSTACK",
    "PIPESTATUS", "REPLY", "COPROC", "MAPFILE", "POSIXLY_CORRECT", "EXECIGNORE", "TIMEFORMAT",
    "COLUMNS", "LINES", "HISTSIZE", "HISTFILESIZE", "HISTCONTROL", "HISTIGNORE", "HISTTIMEFORMAT",
    "INPUTRC", "IGNOREEOF", "MAILCHECK", "MAILPATH", "FIGNORE", "CHILD_MAX", "auto_resume", "histchars",
    "_",   # bash sets $_ to the previous command's last argument: every task got one log
})
INTERNAL_PREFIX = "_hyperion_"   # the batch script's own variables (slurm/script.py)
# Where a sharded program reads its shard: sharding.arrayenv's name first, then NeMo Curator's (else
# SLURM_ARRAY_TASK_ID, the physical index in a window at an offset: Curator's submit_array.sh exports
# SLURM_ARRAY_TASK_ID + SHARD_INDEX_OFFSET there). A Slurm array task gets NAME's value under both,
# over any left in the submitting shell (which --export=ALL passes on: every task ran that shard); a
# local one where its environment gives a total (`local_shard_env`). An --env of them comes later, wins.
SHARD_INDEX_ENVS = names("SHARD_INDEX")
TOTAL_SHARDS_ENVS = names("TOTAL_SHARDS")


def local_shard_env(has_total: bool, value: int) -> dict[str, str | None]:
    """A local array task's shard index variables (None: unset). Set to its value where the task's
    environment gives a total (`TOTAL_SHARDS_ENVS`: a checkpoint retry's, an --env, the shell's): a
    sharded program would run no shard, or one left in the shell, where under Slurm
    SLURM_ARRAY_TASK_ID shards it. Else unset: a program with no total runs unsharded, as before."""
    return dict.fromkeys(SHARD_INDEX_ENVS, str(value) if has_total else None)
RESERVED_PREFIXES = ("LD_", "PYTHON", "SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "LC_", "BASH",
                     "CUDA_", "NCCL_", "XDG_", "SSH_", "MUNGE_", "PMI", "OMPI_", "TORCH",
                     "COMP_", "READLINE_", INTERNAL_PREFIX)


@dataclass(frozen=True)
class ArraySpec:
    """An array's substitution name and its logical values (sorted, unique, positive)."""

    name: str
    values: tuple[int, ...]

    def __post_init__(self) -> None:
        check_name(self.name)
        if not self.values:
            raise InputError(FIELD, "the array has no values")
        if len(self.values) > MAX_VALUES:
            raise InputError(FIELD, _too_many(len(self.values)))
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in self.values):
            raise InputError(FIELD, "array values must be positive integers")
        if max(self.values) > MAX_VALUE:
            raise InputError(FIELD, f"array values must be at most {MAX_VALUE}")
        object.__setattr__(self, "values", tuple(sorted(set(self.values))))

    def slurm_expression(self, max_jobs_run: int | None = None) -> str:
        """The logical values as Slurm's ``--array`` text, e.g. ``1-2,5%4``."""
        text = compress(self.values)
        return f"{text}%{max_jobs_run}" if max_jobs_run else text

    @property
    def text(self) -> str:
        """The ``--array`` argument that recreates this spec (``JOB=1:2,5``)."""
        parts = []
        for part in compress(self.values).split(","):
            lo, _, hi = part.partition("-")
            parts.append(f"{lo}:{hi}" if hi else lo)
        return f"{self.name}={','.join(parts)}"


def is_reserved(name: str) -> bool:
    """True for a variable the environment of a task depends on (see RESERVED_NAMES/PREFIXES)."""
    return name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES)


def check_name(name: str) -> None:
    """NAME must be a shell identifier that is not a variable the task's environment depends on."""
    if not SHELL_NAME.match(name):
        raise InputError(FIELD, f"name {_quoted(name)} is not a shell identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if is_reserved(name):
        raise InputError(FIELD, f"name {name} is a variable the task's environment or its batch script "
                         "depends on (PATH, HOME, LD_*, PYTHON*, SLURM_*, bash's RANDOM, EPOCHSECONDS, ...); "
                         "pick another NAME, e.g. JOB")


def _too_many(count: int) -> str:
    return (f"{count} values; at most {MAX_VALUES} tasks per submission "
            "(split the work into fewer, larger tasks or several submissions)")


def _endpoint(text: str, whole: str, field: str) -> int:
    if not _POSITIVE.match(text) or int(text) < 1:
        raise InputError(field, f"{_quoted(whole)}: endpoints must be positive integers, got {_quoted(text)}")
    if int(text) > MAX_VALUE:
        raise InputError(field, f"{_quoted(whole)}: {text} is more than {MAX_VALUE}, the largest array value")
    return int(text)


def _quoted(text: str, limit: int = 60) -> str:
    """`text` fit for a one-line message: escaped, and cut when long (a 5000-digit number)."""
    shown = printable(text if len(text) <= limit else f"{text[:limit]}...")
    return f"'{shown}'" + (f" ({len(text)} characters)" if len(text) > limit else "")


_DASH_RANGE = re.compile(r"\s*([0-9]{1,18})\s*-\s*([0-9]{1,18})\s*\Z")
_STEP = re.compile(r"[^:]*:[^:]*:")
_SLURM_STEP = re.compile(r"\s*[0-9]+\s*-\s*[0-9]+\s*:")   # Slurm's 1-10:3


def _check_spelling(part: str, whole: str, field: str, separators: str) -> None:
    """How to write a range given in another spelling: the tools print values as 1-3,7 (Slurm's
    way), and Slurm's 1-10:3 steps; --array takes START:END only, so say how, not "endpoints must
    be positive integers, got '1-3'"."""
    form = "NAME=START:END[,START:END...]" if field == FIELD else "START:END[,START:END...]"
    if "%" in part and field == FIELD:
        raise InputError(field, f"{_quoted(whole)}: Slurm's %N limit is --max-jobs-run N here ({form})")
    dash = _DASH_RANGE.match(part)
    if dash and "-" not in separators:
        low, high = sorted((int(dash[1]), int(dash[2])))     # 3-1 as 3:1 was refused next for START > END
        raise InputError(field, f"{_quoted(whole)}: write the range {dash[1]}-{dash[2]} as "
                         f"{low}:{high} ({form})")
    if _STEP.match(part) or _SLURM_STEP.match(part):   # not -1:3 or 1:-3: a negative endpoint, said next
        raise InputError(field, f"{_quoted(whole)}: steps are not supported: {_quoted(part.strip())} "
                         f"names every few values; list them, or give whole ranges ({form})")


def parse_array(text: str) -> ArraySpec:
    """Parse ``NAME=START:END`` (or a comma list of ranges and single values)."""
    name, sep, body = text.partition("=")
    if not sep or not body:
        raise InputError(FIELD, f"{_quoted(text)} is not NAME=START:END")
    check_name(name)
    return ArraySpec(name, parse_values(body, whole=text))


def parse_values(body: str, field: str = FIELD, separators: str = ":", whole: str | None = None) -> tuple[int, ...]:
    """``1:2,5,7:9`` -> sorted unique values; a range's START and END are split at the first of
    `separators` in it (``hyperion-jobs retry --values`` also takes ``1-2``). Errors quote `whole`
    (the full argument, by default `body`) as the user typed it."""
    whole = body if whole is None else whole
    values: set[int] = set()
    for part in body.split(","):
        _check_spelling(part, whole, field, separators)
        lo, sep, hi = part.partition(next((s for s in separators if s in part), separators[0]))
        start = _endpoint(lo.strip(), whole, field)
        end = _endpoint(hi.strip(), whole, field) if sep else start
        if end < start:
            raise InputError(field, f"{_quoted(whole)}: range {_quoted(part)} has START > END")
        if end - start + 1 > MAX_VALUES:  # refused before its values are built
            raise InputError(field, f"{_quoted(whole)}: " + _too_many(end - start + 1))
        values.update(range(start, end + 1))
        if len(values) > MAX_VALUES:
            raise InputError(field, f"{_quoted(whole)}: " + _too_many(len(values)))
    return tuple(sorted(values))
