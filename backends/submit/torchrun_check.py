"""Whether a command given more than one GPU will start under the contract's torchrun prefix.

torchrun runs its first argument as ``python -u ARG``: `-- python train.py` becomes
``python -u python train.py`` and a console-script name is looked for in the working directory,
not on PATH. The README says so, but the run was accepted without a word and the user learnt it
from the log after waiting in the queue. A warning, not a refusal: the prefix is the contract's.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence

_INTERPRETER = re.compile(r"python[0-9.]*")
_HEAD = 256                     # the first line of a script is all that is read of it


def torchrun_warning(num_gpus: int, command: Sequence[str], cwd: str = ".") -> str | None:
    """One line saying why torchrun will not start `command`, or None when it may (or one GPU)."""
    if num_gpus <= 1 or not command:
        return None
    first = command[0]
    if first.startswith("-"):     # torchrun's own option (-m MODULE)
        return None
    lead = f"--num-gpus {num_gpus} runs the command under torchrun, which starts its first word as a Python script"
    if _INTERPRETER.fullmatch(os.path.basename(first)):
        return (f"{lead} (`python -u {first} ...`: the interpreter read as a script): give the script "
                f"first (-- train.py ARGS) or -- -m MODULE ARGS")
    why = _not_a_python_file(os.path.join(cwd, first))
    if why is None:
        return None
    hint = f'-- "$(command -v {first})" ...' if os.sep not in first else "-- SCRIPT.py ..."
    return f"{lead}: {first} {why}; give a Python file ({hint})"


def _not_a_python_file(path: str) -> str | None:
    """Why `path` will not run as ``python -u PATH``, None when it may. Only a regular file is
    opened (a FIFO would hang the submission), and only its first bytes are read."""
    if path.endswith(".py"):
        return None
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "is not a file in the working directory (torchrun does not look on PATH)"
    if not stat.S_ISREG(mode):
        return None if stat.S_ISDIR(mode) else "is not a regular file"   # a folder with __main__.py runs
    try:
        with open(path, "rb", buffering=0) as handle:
            head = handle.read(_HEAD)
    except OSError:
        return None
    if b"\0" in head:
        return "is a compiled program, not a Python script"
    line = head.split(b"\n", 1)[0]
    if line.startswith(b"#!") and b"python" not in line:
        return "is a script for another interpreter (its first line names no python)"
    return None
