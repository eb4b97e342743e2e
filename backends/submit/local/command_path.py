"""Where a local task's program is: found once per run, as a shell's `hash` remembers it.

Given a bare name (``true``), Popen searches the task environment's PATH in the
child, one failed execve per directory before the program's own, for every task
(nine on a login PATH): a 100-task array of ``true`` paid ~900 failed execs. The
run looks each distinct name up once in the PATH the task gets and starts that
file (Popen's `executable`); argv[0] stays what the user typed, so ``ps`` and the
program see the same as before.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

Env = Mapping[bytes, bytes]


class CommandPaths:
    """A run's lookups: (name, PATH directories) -> the file to start, or None where Popen searches
    PATH itself, as it always did (not found, found through a relative PATH entry, or a file that
    failed to start once in this run). A cache, hence not frozen."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, tuple[str, ...]], str | None] = {}

    def executable(self, name: str, env: Env) -> str | None:
        """The absolute file `name` is under `env`'s PATH, the one the child's own search would exec
        (`os.get_exec_path`: the default PATH when the task has none); None for a name holding a '/'
        (run as given, no search) or one to leave to Popen's search."""
        if not name or os.sep in name:
            return None
        key = (name, tuple(os.get_exec_path(env)))
        if key not in self._found:
            found = shutil.which(name, path=os.pathsep.join(key[1]))
            # a relative entry ("" or ".") is the cwd's: left to the search, as before
            self._found[key] = found if found is not None and os.path.isabs(found) else None
        return self._found[key]

    def failed(self, name: str, env: Env) -> None:
        """`name`'s file did not start (removed or replaced mid-run, not executable any more): the
        rest of the run searches PATH for it, as Popen did before, so that search's error stands."""
        self._found[(name, tuple(os.get_exec_path(env)))] = None
