"""Which sbatch options a site YAML may carry, checked in every spelling sbatch accepts.

hyperion-submit itself owns the options that decide the environment, the logs,
the array and the resources a task gets (the contract's list). A site file that
set one of them, even as a short form (``-c4``), a separate value item
(``--time 10``) or an abbreviation that getopt_long would expand
(``--exp=NONE``), would silently change what was asked for, so it is refused.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from backends.errors import InputError
from backends.printable import cut, quoted

# Long options of sbatch 22.05 (man sbatch), with whether they take a value:
# "r" required, "o" optional (only as --opt=value), "n" none.
SBATCH_LONG_OPTIONS: dict[str, str] = {
    "account": "r", "acctg-freq": "r", "array": "r", "batch": "r", "bb": "r", "bbf": "r",
    "begin": "r", "chdir": "r", "cluster-constraint": "r", "clusters": "r", "comment": "r",
    "constraint": "r", "container": "r", "contiguous": "n", "core-spec": "r",
    "cores-per-socket": "r", "cpu-freq": "r", "cpus-per-gpu": "r", "cpus-per-task": "r",
    "deadline": "r", "delay-boot": "r", "dependency": "r", "distribution": "r", "error": "r",
    "exclude": "r", "exclusive": "o", "export": "r", "export-file": "r",
    "extra-node-info": "r", "get-user-env": "o", "gid": "r", "gpu-bind": "r", "gpu-freq": "r",
    "gpus": "r", "gpus-per-node": "r", "gpus-per-socket": "r", "gpus-per-task": "r",
    "gres": "r", "gres-flags": "r", "help": "n", "hint": "r", "hold": "n", "ignore-pbs": "n",
    "input": "r", "job-name": "r", "kill-on-invalid-dep": "r", "licenses": "r",
    "mail-type": "r", "mail-user": "r", "mcs-label": "r", "mem": "r", "mem-bind": "r",
    "mem-per-cpu": "r", "mem-per-gpu": "r", "mincpus": "r", "network": "r", "nice": "o",
    "no-kill": "o", "no-requeue": "n", "nodefile": "r", "nodelist": "r", "nodes": "r",
    "ntasks": "r", "ntasks-per-core": "r", "ntasks-per-gpu": "r", "ntasks-per-node": "r",
    "ntasks-per-socket": "r", "open-mode": "r", "output": "r", "overcommit": "n",
    "oversubscribe": "n", "parsable": "n", "partition": "r", "power": "r", "prefer": "r",
    "priority": "r", "profile": "r", "propagate": "o", "qos": "r", "quiet": "n",
    "reboot": "n", "requeue": "n", "reservation": "r", "signal": "r",
    "sockets-per-node": "r", "spread-job": "n", "switches": "r", "test-only": "n",
    "thread-spec": "r", "threads-per-core": "r", "time": "r", "time-min": "r", "tmp": "r",
    "uid": "r", "usage": "n", "use-min-nodes": "n", "verbose": "n", "version": "n",
    "wait": "n", "wait-all-nodes": "r", "wckey": "r", "wrap": "r",
}
SBATCH_SHORT_OPTIONS: dict[str, str] = {
    "A": "account", "a": "array", "b": "begin", "B": "extra-node-info", "C": "constraint",
    "c": "cpus-per-task", "D": "chdir", "d": "dependency", "e": "error", "F": "nodefile",
    "G": "gpus", "H": "hold", "h": "help", "i": "input", "J": "job-name", "k": "no-kill",
    "L": "licenses", "M": "clusters", "m": "distribution", "N": "nodes", "n": "ntasks",
    "O": "overcommit", "o": "output", "p": "partition", "Q": "quiet", "q": "qos",
    "S": "core-spec", "s": "oversubscribe", "t": "time", "V": "version", "v": "verbose",
    "W": "wait", "w": "nodelist", "x": "exclude",
}
GPU_SELECTION = frozenset({"gres", "gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket"})
# Generic resources that are GPUs or shares of one (MPS, sharding): selecting them is GPU selection.
# Any other --gres (a file system, a licence-like node resource) is site policy like --constraint.
GPU_GRES_NAMES = frozenset({"gpu", "mps", "shard"})
# The contract's submitter-owned options, plus those that would break how
# hyperion-submit drives sbatch (--wrap replaces the script, --wait blocks, ...,
# --cpus-per-gpu, which sbatch refuses beside the --cpus-per-task we always pass).
SUBMITTER_OWNED = frozenset({
    "export", "export-file", "parsable", "output", "error", "array", "cpus-per-task",
    "cpus-per-gpu", "mem", "mem-per-cpu", "mem-per-gpu", "time", "wrap", "wait", "test-only",
    "help", "usage", "version",
}) | GPU_SELECTION
# sbatch takes an option it was not given from SBATCH_<NAME> in its environment (man sbatch, "INPUT
# ENVIRONMENT VARIABLES"): a user's SBATCH_ARRAY_INX or SBATCH_GRES would change what hyperion-submit
# asked for as a site option would, and the record would not say so. These never reach sbatch.
OWNED_INPUT_VARIABLES = frozenset({
    "SBATCH_ARRAY_INX", "SBATCH_CPUS_PER_GPU", "SBATCH_ERROR", "SBATCH_EXPORT", "SBATCH_GPUS",
    "SBATCH_GPUS_PER_NODE", "SBATCH_GPUS_PER_SOCKET", "SBATCH_GPUS_PER_TASK", "SBATCH_GRES",
    "SBATCH_MEM_PER_CPU", "SBATCH_MEM_PER_GPU", "SBATCH_MEM_PER_NODE", "SBATCH_OUTPUT",
    "SBATCH_TIMELIMIT", "SBATCH_TRES_PER_TASK", "SBATCH_WAIT",
})
PLACEHOLDERS = frozenset({"num_gpus"})
# Slurm's node-feature expressions use & | ( ) as AND, OR and grouping (--constraint="[rack1|rack2]&ib").
# The value is one argv item that no shell reads, so there only what a shell would need is refused.
FEATURE_EXPRESSIONS = frozenset({"constraint", "cluster-constraint", "prefer"})
_SHELL_CHARS = re.compile(r"[\s'\"`;|&$<>()\\]")
_SHELL_CHARS_IN_EXPRESSION = re.compile(r"[\s'\"`;$<>\\]")
_BRACES = re.compile(r"\{([^{}]*)\}")


def resolve_long(spelled: str) -> tuple[str, ...]:
    """The sbatch long options `spelled` may name: the exact match, else every prefix match.

    getopt_long takes an exact match, else a unique prefix, and rejects an
    ambiguous one; so more than one result means sbatch would refuse it.
    """
    if spelled in SBATCH_LONG_OPTIONS:
        return (spelled,)
    return tuple(sorted(name for name in SBATCH_LONG_OPTIONS if name.startswith(spelled)))


def _check_text(field: str, item: object, expression_from: int | None = None) -> str:
    """`item` if it is one plain argument; from `expression_from` on it is a feature expression."""
    if not isinstance(item, str):
        raise InputError(field, f"expected an option string, got {quoted(item)}")
    plain, expression = (item, "") if expression_from is None else (item[:expression_from], item[expression_from:])
    if _SHELL_CHARS.search(plain):
        raise InputError(field, f"{quoted(item)} looks like a shell fragment; each item must be one "
                         "argument without whitespace, quotes or any of ;|&$`<>()\\")
    if _SHELL_CHARS_IN_EXPRESSION.search(expression):
        raise InputError(field, f"{quoted(item)} looks like a shell fragment; a feature expression is one "
                         "argument without whitespace, quotes or any of ;$`<>\\")
    for name in _BRACES.findall(item):
        if name not in PLACEHOLDERS:
            raise InputError(field, f"{quoted(item)} uses unknown placeholder {{{cut(name)}}}; only {{num_gpus}} is allowed")
    if _BRACES.sub("", item).count("{") or _BRACES.sub("", item).count("}"):
        raise InputError(field, f"{quoted(item)} has an unmatched brace; only {{num_gpus}} is allowed")
    return item


def _attached_value(item: str) -> tuple[str | None, int]:
    """The option whose value `item` carries after its name, and where that value starts
    (``--constraint=a|b``, ``-Ca|b``); (None, 0) when it carries none or the name is unknown."""
    if item.startswith("--"):
        name, equals, _ = item[2:].partition("=")
        found = resolve_long(name) if name and equals else ()
        return (found[0], 3 + len(name)) if len(found) == 1 else (None, 0)
    for pos, letter in enumerate(item[1:], start=1):
        option = SBATCH_SHORT_OPTIONS.get(letter)
        if option is None:
            return None, 0
        if SBATCH_LONG_OPTIONS[option] == "r":
            return (option, pos + 1) if pos < len(item) - 1 else (None, 0)
    return None, 0


def _checked_item(field: str, item: object, value_of: str | None) -> str:
    """`_check_text` with the feature-expression part of `item` told apart: all of it when it is
    the separate value of `value_of`, or the value it carries itself."""
    if not isinstance(item, str):
        return _check_text(field, item)
    if value_of is not None and not item.startswith("-"):
        return _check_text(field, item, 0 if value_of in FEATURE_EXPRESSIONS else None)
    option, start = _attached_value(item) if item.startswith("-") else (None, 0)
    return _check_text(field, item, start if option in FEATURE_EXPRESSIONS else None)


def is_gpu_gres(value: str) -> bool:
    """Whether a --gres value (``name[:type][:count]``, comma-separated) asks for a GPU or a share of one."""
    names = (entry.split(":", 1)[0].strip().lower().removeprefix("gres/") for entry in value.split(","))
    return any(name in GPU_GRES_NAMES for name in names)


def _refuse(field: str, item: str, option: str, allow_gpu: bool, value: str | None = None) -> None:
    """Refuse a submitter-owned `option`; a --gres is GPU selection only when its `value` names a GPU
    (None: the value is the next item, checked by `_gres_value`)."""
    if option == "gres" and value is not None and not value.strip(" ,"):
        raise InputError(field, f"{quoted(item)} names no generic resource")
    if option == "gres" and not allow_gpu and (value is None or not is_gpu_gres(value)):
        return
    if option in SUBMITTER_OWNED and not (allow_gpu and option in GPU_SELECTION):
        why = ("GPU selection belongs in gpu_types" if option in GPU_SELECTION
               else "hyperion-submit sets it itself")
        raise InputError(field, f"{quoted(item)} sets --{option}, which site options may not set ({why})")


def _gres_value(field: str, option_item: str, value: str) -> None:
    """The separate value of a --gres outside gpu_types: a generic resource that is not a GPU."""
    if value.startswith("-"):
        raise InputError(field, f"{quoted(option_item)} needs its generic resource as the next item, got {quoted(value)}")
    _refuse(field, f"{option_item} {value}", "gres", False, value)


def _long(field: str, item: str, allow_gpu: bool) -> str | None:
    """Check one long option item; the option if it still needs the next item as its value."""
    spelled, has_value, value = item[2:].partition("=")
    candidates = resolve_long(spelled) if spelled else []   # '--=x': an empty name prefixes every option
    if not candidates:
        raise InputError(field, f"{quoted(item)} is not an sbatch option")
    for option in candidates:  # refused if any reading of the prefix is owned
        _refuse(field, item, option, allow_gpu, value if has_value else None)
    if len(candidates) > 1:
        names = ", ".join(f"--{c}" for c in candidates)
        raise InputError(field, f"{quoted(item)} is an ambiguous sbatch option (could be {names})")
    return candidates[0] if SBATCH_LONG_OPTIONS[candidates[0]] == "r" and not has_value else None


def _short(field: str, item: str, allow_gpu: bool) -> str | None:
    """Check a short-option cluster (``-c4``, ``-HQ``); the option if the next item is its value."""
    for pos, letter in enumerate(item[1:], start=1):
        option = SBATCH_SHORT_OPTIONS.get(letter)
        if option is None:
            raise InputError(field, f"{quoted(item)}: -{letter} is not an sbatch option")
        _refuse(field, item, option, allow_gpu)
        if SBATCH_LONG_OPTIONS[option] == "r":
            return option if pos == len(item) - 1 else None
    return None


def check_options(field: str, items: object, *, allow_gpu: bool = False) -> tuple[str, ...]:
    """Validate a list of site sbatch options; return them as a tuple.

    `allow_gpu` is true only for a gpu_types entry, the one place GPU selection belongs.
    """
    if items is None:
        return ()
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise InputError(field, f"expected a list of option strings, got {quoted(items)}")
    checked: list[str] = []
    awaiting: str | None = None        # the option whose value the next item may be
    for raw in items:
        item = _checked_item(field, raw, awaiting)
        checked.append(item)
        if awaiting == "gres" and not allow_gpu:
            _gres_value(field, checked[-2], item)
        if awaiting is not None:
            awaiting = None
            if not item.startswith("-"):
                continue
        if not item.startswith("-") or item in ("-", "--"):
            raise InputError(field, f"{quoted(item)} is not an option (items must start with -)")
        if item.startswith("--"):
            awaiting = _long(field, item, allow_gpu)
        else:
            awaiting = _short(field, item, allow_gpu)
    if awaiting is not None:
        raise InputError(field, f"{quoted(checked[-1])} needs a value")
    return tuple(checked)


def option_value(items: Sequence[str], wanted: str) -> str | None:
    """The value the last item of a checked option list that sets the long option `wanted` gives it,
    in any spelling sbatch reads (``--clusters=a``, ``--clu a``, ``-Ma``, ``-M a``); None if none does."""
    found = None
    for pos, item in enumerate(items):
        following = items[pos + 1] if pos + 1 < len(items) else None
        if item.startswith("--"):
            name, equals, value = item[2:].partition("=")
            if name and resolve_long(name) == (wanted,):
                found = value if equals else following
        elif item.startswith("-") and (pos == 0 or not _takes_next(items[pos - 1])):
            for at, letter in enumerate(item[1:], start=1):
                option = SBATCH_SHORT_OPTIONS.get(letter)
                if option is None:
                    break
                if SBATCH_LONG_OPTIONS[option] == "r":
                    if option == wanted:
                        found = item[at + 1:] or following
                    break
    return found


def _takes_next(item: str) -> bool:
    """Whether a checked option item leaves its value to the next item (``--clusters``, ``-M``)."""
    if item.startswith("--"):
        name, equals, _ = item[2:].partition("=")
        found = resolve_long(name) if name and not equals else ()
        return len(found) == 1 and SBATCH_LONG_OPTIONS[found[0]] == "r"
    if item.startswith("-"):
        for at, letter in enumerate(item[1:], start=1):
            option = SBATCH_SHORT_OPTIONS.get(letter)
            if option is None:
                return False
            if SBATCH_LONG_OPTIONS[option] == "r":
                return at == len(item) - 1
    return False


def gres_items(items: Sequence[str]) -> tuple[str, ...]:
    """The items of a checked option list that set --gres, as written (``--gres x`` for a separate value)."""
    found = []
    for pos, item in enumerate(items):
        name, equals, _ = item[2:].partition("=") if item.startswith("--") else ("", "", "")
        if name and resolve_long(name) == ("gres",):
            found.append(item if equals or pos + 1 == len(items) else f"{item} {items[pos + 1]}")
    return tuple(found)


def owned_inputs(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The SBATCH_* variables of `environ` that would set a submitter-owned option, sorted."""
    return tuple(sorted(name for name in environ if name in OWNED_INPUT_VARIABLES))


def ignored_inputs_line(environ: Mapping[str, str]) -> str | None:
    """What a user is told when their environment holds SBATCH_* variables that are not passed on."""
    names = owned_inputs(environ)
    if not names:
        return None
    return (f"not passing {', '.join(names)} from the environment to sbatch: hyperion-submit sets the "
            "array, logs, memory, time and GPUs itself")
