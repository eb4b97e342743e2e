"""A real terminal for tests: a tmux session on a tmux server of its own.

One server per terminal, because sessions opened one after another on tmux's shared default server
raced its exit: killing the last session ends the server, and a `new-session` that reached the
dying server's socket failed with "server exited unexpectedly" (a whole-suite CI run, once)."""
from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path


class Terminal:
    """A `cols` x `lines` terminal running `command` (a shell line) in `cwd`, PATH set to `path`."""

    def __init__(self, command: str, cols: int, lines: int, cwd: Path, path: str) -> None:
        self.name = f"hyperion-{uuid.uuid4().hex[:8]}"
        self.tmux("new-session", "-d", "-s", self.name, "-x", str(cols), "-y", str(lines),
                  "-e", f"PATH={path}", command, cwd=cwd)
        self.socket = Path(self.tmux("display-message", "-p", "#{socket_path}").strip())

    def tmux(self, *args: str, cwd: Path | None = None) -> str:
        done = subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null", *args], capture_output=True,
                              text=True, cwd=cwd)
        assert done.returncode == 0, f"tmux {' '.join(args[:1])} failed: {done.stderr.strip()}"
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.name, "has-session", "-t", self.name],
                              capture_output=True).returncode == 0

    def wait_for_text(self, *needles: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if all(n in text for n in needles):
                return text
            time.sleep(0.2)
        raise AssertionError(f"{needles} not on screen after {timeout}s:\n{text}")

    def close(self) -> None:
        """Close the terminal (its programs get SIGHUP, as when a window is closed) and its server."""
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)
        self.socket.unlink(missing_ok=True)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
