"""Smoke test of the installed `hyperion-console --demo` binary in a real 80x24 terminal (tmux)."""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from terminal import Terminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
REPO = Path(__file__).resolve().parents[1]


def test_demo_binary_in_tmux(tmp_path: Path, cli_env: dict[str, str]) -> None:
    binary = shutil.which("hyperion-console", path=cli_env["PATH"])
    assert binary, "hyperion-console is not installed (pip install -e .)"
    # the shell stays to show what the terminal holds once the console has quit
    command = f"{binary} --demo --demo-dir {tmp_path / 'demo'} --cfg-dir {REPO / 'conf'}; echo exited $?; sleep 60"
    with Terminal(command, 80, 24, tmp_path, cli_env["PATH"]) as term:
        text = term.wait_for_text("complete 10", "incomplete 1", "failed 1")
        assert "Checkpoint" in text and "^r Resubmit" in text
        term.keys("Right", "Right")
        term.wait_for_text("missing 11-12", "11-12 0 1 12")
        term.keys("C-r")
        term.wait_for_text("Resubmit 2 shard(s) to local")
        term.keys("y")
        text = term.wait_for_text("COMPLETED 12", "100%", timeout=60)   # attempt 2: every value
        assert "shard.SHARD" in text      # the record list: its name, without the .submit.json all share
        term.keys("?")
        term.wait_for_text("Hyperion Console — keys")
        term.keys("Escape")     # alone: escape + q would read as alt+q
        deadline = time.monotonic() + 10
        while "Hyperion Console — keys" in term.screen() and time.monotonic() < deadline:
            time.sleep(0.2)
        term.keys("q")
        # q quit, status 0; above it the line said while the demo was built (seconds of a blank terminal)
        text = term.wait_for_text("exited 0", timeout=10)
        assert f"hyperion-console: building the demo checkpoint in {tmp_path / 'demo'}" in text.replace("\n", ""), text


def test_keys_sent_in_one_burst_land_in_the_fields_tab_moved_to(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """`tmux send-keys Tab ... 4 Tab 'some text'` writes one burst, as an expect script, xdotool
    or a fast typist does: the text lands where the Tabs before it moved the focus."""
    binary = shutil.which("hyperion-console", path=cli_env["PATH"])
    assert binary, "hyperion-console is not installed (pip install -e .)"
    with Terminal(f"{binary} --cfg-dir {REPO / 'conf'}", 100, 30, tmp_path, cli_env["PATH"]) as term:
        term.wait_for_text("Hyperion Console —")
        term.keys("1")
        term.wait_for_text("Hyperion Console — Submit", "site default")
        term.keys("Tab", "Tab", "Tab", "4", "Tab", "some text")  # site, backend, GPUs
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = term.screen()
            if re.search(r"^ GPUs +4 ", text, re.M) and re.search(r"^ threads +some text ", text, re.M):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("GPUs 4 and threads 'some text' not on screen:\n" + text)


def test_started_in_an_experiment_folder_the_submit_screen_says_where_site_files_go(
        tmp_path: Path, cli_env: dict[str, str]) -> None:
    """`cd exp && hyperion-console`, then 1: the selector was empty and the form said only
    `--cfg: expected a site YAML path, got ''`. It names the folder looked in and --cfg-dir."""
    binary = shutil.which("hyperion-console", path=cli_env["PATH"])
    assert binary, "hyperion-console is not installed (pip install -e .)"
    exp = tmp_path / "exp"
    exp.mkdir()
    with Terminal(binary, 120, 30, exp, cli_env["PATH"]) as term:
        term.wait_for_text("Hyperion Console — Submit")
        term.keys("1")
        text = term.wait_for_text("no site file", "--cfg-dir DIR")
        pane = "".join("".join(line.split("▕", 1)[-1].split()) for line in text.splitlines()[1:8])
        said = (f"--cfg: no site file in {exp / 'conf'} (no such folder): start the console with --cfg-dir "
                "DIR, the folder of your site YAML files")
        assert "".join(said.split()) in pane, text       # wrapped in the preview pane, a long path mid-word
        assert "got ''" not in text


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
    pid = None
    with Terminal(f"{binary} log/q", 100, 30, tmp_path, cli_env["PATH"]) as term:
        term.wait_for_text("FAILED", "NOT_RUN")
        term.keys("R")
        term.wait_for_text("Retry 2 task(s)")
        term.keys("C-r")
        term.wait_for_text("as attempt 2?")
        term.keys("y")
        pidfile = tmp_path / "console.pid"
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.2)
        pid = int(pidfile.read_text())
        time.sleep(1)
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
