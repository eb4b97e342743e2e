"""Whether a command given more than one GPU will start under the contract's torchrun prefix.

torchrun runs its first argument as ``python -u ARG``: `-- python train.py` becomes
``python -u python train.py`` and a console-script name is looked for in the working directory,
not on PATH. The README says so, but the run was accepted without a word and the user learnt it
from the log after waiting in the queue. A warning, not a refusal: the prefix is the contract's.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Sequence

from backends.printable import cut
from backends.shellwords import shell_quote
from backends.submit.model import SubmitPlan, substitute

_INTERPRETER = re.compile(r"python[0-9.]*")
_NOT_HERE = "is not a file in the working directory"
_NO_FILE = f"{_NOT_HERE} (torchrun does not look on PATH)"
_GIVE_FILE = "give a Python file (-- SCRIPT.py ...)"
_HEAD = 256                     # the first line of a script is all that is read of it


def plan_warning(plan: SubmitPlan) -> str | None:
    """`torchrun_warning` of a plan (hyperion-submit's and the console's preview alike): an array's
    first word is looked at as its first task runs it (`exp/JOB/train` is `exp/1/train` there)."""
    options = plan.options
    array = (options.array.name, plan.tasks[0].value) if options.array is not None and plan.tasks else None
    return torchrun_warning(options.num_gpus, options.command, array=array)


def torchrun_warning(num_gpus: int, command: Sequence[str], array: tuple[str, int | None] | None = None) -> str | None:
    """One line saying why torchrun will not start `command` in the working directory, or None when
    it may (or one GPU). `array`: (NAME, a value) the first word is looked at with (a task runs it
    substituted)."""
    if num_gpus <= 1 or not command:
        return None
    first = command[0]
    if first.startswith("-"):     # torchrun's own option (-m MODULE)
        return None
    named = cut(first, 80)        # a name of 100 KB is not repeated (twice) in the warning
    lead = f"--num-gpus {num_gpus} runs the command under torchrun, which starts its first word as a Python script"
    if _INTERPRETER.fullmatch(os.path.basename(first)):
        return (f"{lead} (`python -u {named} ...`: the interpreter read as a script): give the script "
                f"first (-- train.py ARGS) or -- -m MODULE ARGS")
    path = substitute(first, *array) if array is not None else first
    why = _not_a_python_file(path)
    if why is None:
        return None
    if os.sep in first or why != _NO_FILE:   # `-- run.sh`, a bash script here: `command -v run.sh` is empty
        return f"{lead}: {named} {why}; {_GIVE_FILE}"
    found = shutil.which(path)
    if found is None:           # `command -v NAME` pasted would hand torchrun an empty word
        return f"{lead}: {named} {_NOT_HERE}, nor a command on PATH; {_GIVE_FILE}"
    other = _not_a_python_file(found)
    if other is not None:       # `-- bash run.sh`: "$(command -v bash)" would not start either
        return f"{lead}: {named} {why}, and {cut(found, 80)} on PATH {other}; {_GIVE_FILE}"
    return f'{lead}: {named} {why}; give a Python file (-- "$(command -v {shell_quote(named)})" ...)'


def _not_a_python_file(path: str) -> str | None:
    """Why `path` will not run as ``python -u PATH``, None when it may. Only a regular file is
    opened (a FIFO would hang the submission), and only its first bytes are read."""
    if path.endswith(".py"):     # its text is Python's to judge; that it is there is ours
        return _NO_FILE if not os.path.lexists(path) else None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)   # a FIFO put there meanwhile opens at once
    except FileNotFoundError:
        return _NO_FILE
    except OSError as exc:        # a symbolic link loop, a file you may not read: torchrun cannot either
        return f"cannot be read ({exc.strerror or exc})"
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return None if stat.S_ISDIR(mode) else "is not a regular file"   # a folder with __main__.py runs
        head = os.read(fd, _HEAD)
    except OSError:
        return None
    finally:
        os.close(fd)
    if b"\0" in head:
        return "is a compiled program, not a Python script"
    line = head.split(b"\n", 1)[0]
    if line.startswith(b"#!") and b"python" not in line:
        return "is a script for another interpreter (its first line names no python)"
    return None
