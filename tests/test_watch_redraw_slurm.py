"""`hyperion-jobs watch` left open on a terminal while a long job runs draws when something happens.

rich's live display drew the whole screen 4 times a second whatever happened: on the login node a
watch of an overnight job spent about 1 s of CPU a minute (bench/bench_console_idle.py), and sent
its terminal (tmux, ssh) the same frame 240 times a minute. Measured here in a real pseudo-terminal
on the real cluster: the frames written while nothing changes, and a resize still filled at once.
"""
from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from conftest import submit_real_array

TITLE = "tasks ended"      # the header line of every frame: `RECORD ━━━━ 0/2 tasks ended`


def _size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _read_for(fd: int, seconds: float) -> str:
    out = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            out += os.read(fd, 65536)
        except BlockingIOError:
            time.sleep(0.05)
        except OSError:
            break
    return out.decode(errors="replace")


@pytest.mark.slurm
def test_a_watch_of_a_running_job_draws_no_frame_while_nothing_changes(slurm_cluster, tmp_path: Path) -> None:
    record = submit_real_array(tmp_path / "log" / "w.JOB.log", "JOB=1:2", "sleep", "60")
    master, slave = pty.openpty()
    _size(master, 30, 120)
    env = {**os.environ, "TERM": "xterm", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("LINES", None)
    env.pop("COLUMNS", None)
    watch = subprocess.Popen(["hyperion-jobs", "watch", record.path], stdin=slave, stdout=slave, stderr=slave,
                             env=env, cwd=tmp_path, start_new_session=True)
    os.close(slave)
    os.set_blocking(master, False)
    try:
        seen = ""
        deadline = time.monotonic() + 60
        while seen.count("RUNNING") < 2 and time.monotonic() < deadline:   # both tasks started
            seen += _read_for(master, 0.5)
            seen = seen[-20000:]
        assert "RUNNING" in seen, seen[-2000:]
        quiet = _read_for(master, 8.0)            # a poll every 10 s at most: one frame, maybe none
        assert quiet.count(TITLE) <= 1, f"{quiet.count(TITLE)} frames in 8 s of nothing changing"
        _size(master, 40, 100)                    # resized: filled at once, not at the next poll
        os.killpg(watch.pid, signal.SIGWINCH)
        resized = _read_for(master, 1.5)
        assert resized.count(TITLE) >= 1, resized[-2000:]
    finally:
        if watch.poll() is None:
            watch.send_signal(signal.SIGINT)
            try:
                watch.wait(10)
            except subprocess.TimeoutExpired:
                watch.kill()
        os.close(master)
        subprocess.run(["scancel", record.jobs[0].job_id], capture_output=True)
