"""Whether a record may be trusted to say what to run.

A retry runs the command a record names, as the user who retries. A record
owned by someone else, or that others may write, is a command someone else
chose: running it as root (or as you) without a word would let them run
anything as you. `check_trusted` refuses such a record unless the user says
they trust it (``--trust-record``; the console's confirmation names the owner).
"""
from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from backends.errors import InputError
from backends.fileio import kind_of_mode
from backends.printable import printable


def owner_name(uid: int) -> str:
    """``alice (uid 1000)``, or just the uid when the system does not know it."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def trust_problem(path: str | Path) -> str | None:
    """Why the record at `path` is not yours alone to change, or None when it is.

    Follows a symlink: what matters is the file that would be read.
    """
    try:
        info = os.stat(path)
    except OSError as err:
        raise InputError("record", f"cannot read {printable(str(path))}: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):   # /dev/zero is 0666: "may be changed by other users" misled
        raise InputError("record", f"cannot read {printable(str(path))}: not a regular file but "
                         f"{kind_of_mode(info.st_mode)}")
    reasons = []
    if info.st_uid != os.geteuid():
        reasons.append(f"is owned by {owner_name(info.st_uid)}, not by you")
    writable = [who for bit, who in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "other users"))
                if info.st_mode & bit]
    if writable:
        reasons.append(f"may be changed by {' and '.join(writable)} (mode {stat.S_IMODE(info.st_mode):04o})")
    return " and ".join(reasons) or None


def check_trusted(path: str | Path, trust: bool = False) -> None:
    """Refuse (InputError "record") a record another user owns or others may write, unless `trust`."""
    if trust:
        return
    problem = trust_problem(path)
    if problem is not None:
        raise InputError("record", f"{printable(str(path))} {problem}; its command would run as you. "
                         "Check it, then pass --trust-record to run it anyway")
