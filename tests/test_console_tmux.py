"""Smoke test of the installed `hyperion-console --demo` binary in a real 80x24 terminal (tmux)."""
from __future__ import annotations

import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
REPO = Path(__file__).resolve().parents[1]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def screen_text(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def wait_for_text(session: str, *needles: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen_text(session)
        if all(n in text for n in needles):
            return text
        time.sleep(0.2)
    raise AssertionError(f"{needles} not on screen after {timeout}s:\n{text}")


def test_demo_binary_in_tmux(tmp_path: Path, cli_env: dict[str, str]) -> None:
    binary = shutil.which("hyperion-console", path=cli_env["PATH"])
    assert binary, "hyperion-console is not installed (pip install -e .)"
    session = f"hyperion-{uuid.uuid4().hex[:8]}"
    command = f"{binary} --demo --demo-dir {tmp_path / 'demo'} --cfg-dir {REPO / 'conf'}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24",
                    "-e", f"PATH={cli_env['PATH']}", command], check=True, cwd=tmp_path)
    try:
        text = wait_for_text(session, "complete 10", "incomplete 1", "failed 1")
        assert "Checkpoint" in text and "^r Resubmit" in text
        tmux("send-keys", "-t", session, "Right", "Right")
        wait_for_text(session, "missing 11-12", "11-12 0 1 12")
        tmux("send-keys", "-t", session, "C-r")
        wait_for_text(session, "Resubmit shards 11-12?")
        tmux("send-keys", "-t", session, "y")
        text = wait_for_text(session, "COMPLETED 12", "100%", timeout=60)   # attempt 2: every value
        assert "shard.SHARD.submit.json" in text
        tmux("send-keys", "-t", session, "?")
        wait_for_text(session, "Hyperion Console — keys")
        tmux("send-keys", "-t", session, "Escape")     # alone: escape + q would read as alt+q
        deadline = time.monotonic() + 10
        while "Hyperion Console — keys" in screen_text(session) and time.monotonic() < deadline:
            time.sleep(0.2)
        tmux("send-keys", "-t", session, "q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("q did not quit the console:\n" + screen_text(session))
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_keys_sent_in_one_burst_land_in_the_fields_tab_moved_to(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """`tmux send-keys Tab ... 4 Tab 'some text'` writes one burst, as an expect script, xdotool
    or a fast typist does: the text lands where the Tabs before it moved the focus."""
    binary = shutil.which("hyperion-console", path=cli_env["PATH"])
    assert binary, "hyperion-console is not installed (pip install -e .)"
    session = f"hyperion-{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "30",
                    "-e", f"PATH={cli_env['PATH']}", f"{binary} --cfg-dir {REPO / 'conf'}"],
                   check=True, cwd=tmp_path)
    try:
        wait_for_text(session, "Hyperion Console —")
        tmux("send-keys", "-t", session, "1")
        wait_for_text(session, "Hyperion Console — Submit", "site default")
        tmux("send-keys", "-t", session, "Tab", "Tab", "Tab", "4", "Tab", "some text")  # site, backend, GPUs
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = screen_text(session)
            if re.search(r"^ GPUs +4 ", text, re.M) and re.search(r"^ threads +some text ", text, re.M):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("GPUs 4 and threads 'some text' not on screen:\n" + text)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_a_closed_terminal_during_a_local_retry_ends_the_console(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """Closing the terminal (tmux window, ssh) while the console ran a local retry stopped the task but
    left the console running for ever: Textual's output thread died on EIO and the next writes filled
    its queue, blocking the exit. Now the console ends (129) once the task it stopped has ended."""
    import os
    import signal

    binary = shutil.which("hyperion-console", path=cli_env["PATH"])
    assert binary, "hyperion-console is not installed (pip install -e .)"
    (tmp_path / "t.sh").write_text("echo $PPID > console.pid\nif [ -e ran.$1 ]; then sleep 60; fi\n"
                                   "touch ran.$1; exit 3\n")
    subprocess.run(["hyperion-submit", "local", "--cfg", str(REPO / "conf" / "submit_test_cluster.yaml"),
                    "--array", "JOB=1:2", "--output-file", "log/t.JOB.log", "--", "bash", "t.sh", "JOB"],
                   cwd=tmp_path, env=cli_env, capture_output=True)
    (tmp_path / "console.pid").unlink()
    session = f"hyperion-{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "30",
                    "-e", f"PATH={cli_env['PATH']}", f"{binary} log/q"], check=True, cwd=tmp_path)
    pid = None
    try:
        wait_for_text(session, "FAILED", "NOT_RUN")
        tmux("send-keys", "-t", session, "R")
        wait_for_text(session, "Retry 2 task(s)")
        tmux("send-keys", "-t", session, "C-r")
        wait_for_text(session, "as attempt 2?")
        tmux("send-keys", "-t", session, "y")
        pidfile = tmp_path / "console.pid"
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.2)
        pid = int(pidfile.read_text())
        time.sleep(1)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the console still runs 20 s after its terminal closed")
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shown = subprocess.run(["hyperion-jobs", "status", "log/q", "--json"], cwd=tmp_path, env=cli_env,
                           capture_output=True, text=True)
    import json
    states = {t["value"]: (t["state"], t["attempt"]) for t in json.loads(shown.stdout)["tasks"]}
    assert states == {1: ("FAILED", 2), 2: ("NOT_RUN", 2)}
