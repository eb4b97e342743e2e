"""A console whose pseudo-terminal closes without a SIGHUP ends as a hangup ends it, and burns no CPU.

Started as bench/bench_queries.py starts it (the pty is stdin/stdout/stderr but, with
start_new_session, not its controlling terminal), the console got no SIGHUP when the master
closed: Textual's input thread read end-of-file in a loop, and the console ran on, unseen, at
a whole CPU (45 minutes on a login node).
"""
from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from conftest import kill_groups

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "conf" / "submit_test_cluster.yaml"
CSI = re.compile(r"\x1b\[[0-9;?<>=$]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b.")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` from /proc (what top shows it burning)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class PtyConsole:
    """hyperion-console in a pty of its own, in a new session (no SIGHUP when the master closes)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(["hyperion-console", "--cfg-dir", str(REPO / "conf"), *argv], cwd=cwd,
                                     stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm"},
                                     start_new_session=True)
        os.close(slave)
        self.shown = ""

    def wait_for(self, *needles: str, timeout: float = 30) -> None:
        """Read the screen's bytes until each needle was drawn (escape sequences left out)."""
        deadline = time.monotonic() + timeout
        raw = b""
        while time.monotonic() < deadline:
            if select.select([self.master], [], [], 0.2)[0]:
                try:
                    raw += os.read(self.master, 65536)
                except OSError:
                    break
                self.shown = CSI.sub("", raw.decode("utf-8", "replace"))
                if all(n in self.shown for n in needles):
                    return
        raise AssertionError(f"{needles} not drawn after {timeout}s:\n{self.shown[-3000:]}")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def hang_up(self, timeout: float = 5) -> tuple[int | None, float, float]:
        """Close the master as a killed bench does: (exit status or None, seconds to exit, CPU seconds
        the console spent from the close to its exit or the timeout)."""
        before = cpu_seconds(self.proc.pid)
        os.close(self.master)
        self.master = -1
        closed = time.monotonic()
        while time.monotonic() < closed + timeout:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                return self.proc.returncode, time.monotonic() - closed, usage.ru_utime + usage.ru_stime - before
            time.sleep(0.05)
        spent = cpu_seconds(self.proc.pid) - before
        self.kill()
        return None, timeout, spent

    def kill(self) -> None:
        if self.master >= 0:
            os.close(self.master)
            self.master = -1
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def local_record(tmp_path: Path, env: dict[str, str], script: str) -> None:
    """A local array of two tasks (log/q/t.JOB.submit.json), both run once by `t.sh`."""
    (tmp_path / "t.sh").write_text(script)
    subprocess.run(["hyperion-submit", "local", "--cfg", str(SITE), "--array", "JOB=1:2", "--output-file",
                    "log/t.JOB.log", "--", "bash", "t.sh", "JOB"], cwd=tmp_path, env=env, capture_output=True)


def test_a_console_whose_pty_closes_exits_at_once_without_spinning(tmp_path: Path, cli_env: dict[str, str]) -> None:
    local_record(tmp_path, cli_env, "exit 0\n")
    console = PtyConsole(["--record", "log/q/t.JOB.submit.json"], tmp_path, cli_env)
    try:
        console.wait_for("Hyperion Console", "COMPLETED")
        status, took, spent = console.hang_up()
    finally:
        console.kill()
    assert status is not None, f"the console still ran 5 s after its terminal closed, using {spent:.1f} s of CPU"
    assert status == 128 + signal.SIGHUP, status      # as a closed terminal's SIGHUP ends it
    assert took < 3, took
    assert spent < 0.5, f"{spent:.2f} s of CPU between the close and the exit"


def test_a_pty_closing_during_a_local_retry_stops_and_records_its_task(tmp_path: Path,
                                                                         cli_env: dict[str, str]) -> None:
    """Nothing the user ran is lost: the retry's task gets Ctrl-C and is recorded, then the console ends."""
    local_record(tmp_path, cli_env, "echo $$ > task.pid; echo $PPID > console.pid\nif [ -e ran.$1 ]; then sleep 60; fi\n"
                                    "touch ran.$1; exit 3\n")
    (tmp_path / "console.pid").unlink()
    console = PtyConsole(["log/q"], tmp_path, cli_env)
    try:
        console.wait_for("FAILED", "NOT_RUN")
        console.type("R")
        console.wait_for("Retry 2 task(s)")
        console.type("\x12")                         # Ctrl+R
        console.wait_for("as attempt 2?")
        console.type("y")
        pidfile = tmp_path / "console.pid"
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert int(pidfile.read_text()) == console.proc.pid     # the retry's task runs, in the console
        time.sleep(0.5)
        status, took, spent = console.hang_up(timeout=15)
    finally:
        console.kill()
        task = tmp_path / "task.pid"
        kill_groups(int(task.read_text()) if task.exists() and task.read_text().strip() else None)
    assert status == 128 + signal.SIGHUP, (status, spent)
    assert spent < 1, f"{spent:.2f} s of CPU between the close and the exit"
    shown = subprocess.run(["hyperion-jobs", "status", "log/q", "--json"], cwd=tmp_path, env=cli_env,
                           capture_output=True, text=True)
    states = {t["value"]: (t["state"], t["attempt"]) for t in json.loads(shown.stdout)["tasks"]}
    assert states == {1: ("FAILED", 2), 2: ("NOT_RUN", 2)}
