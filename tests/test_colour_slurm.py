"""A user's coloured array on the real cluster: loguru-style logs, a tqdm bar that erases with ESC[K,
a coloured traceback. `hyperion-jobs status --failures`, `logs` on a terminal and the console in
tmux read the text; they showed `\\x1b[1;31mValueError\\x1b[0m` escapes. Piped, the bytes stay."""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import run_cli
from terminal import Terminal
from test_jobs_tail import _on_a_terminal

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[1]

WORK = r'''
import sys, time
part = int(sys.argv[1])
G, B, C, R, RED = "\x1b[32m", "\x1b[1m", "\x1b[36m", "\x1b[0m", "\x1b[1;31m"
def log(level, msg):
    print(f"{G}2026-12-05 11:00:0{part}{R} | {B}{level:<8}{R} | {C}work{R}:{C}12{R} - {B}{msg}{R}", flush=True)
log("INFO", f"part {part} starting [bold]literal[/]")
sys.stdout.write("\x1b[?25l")
for i in range(0, 101, 25):
    sys.stdout.write(f"\r\x1b[38;5;208m{i:3d}%|{'#' * (i // 10):<10}|\x1b[0m {i}/100\x1b[K")
    sys.stdout.flush(); time.sleep(0.1)
sys.stdout.write("\x1b[?25h\n")
if part % 2 == 0:
    print(f"{RED}Traceback (most recent call last):{R}", file=sys.stderr)
    print(f"{RED}ValueError{R}: {RED}bad shard {part}{R}", file=sys.stderr, flush=True)
    sys.exit(3)
log("SUCCESS", f"part {part} done")
'''


def test_a_coloured_array_s_failures_and_logs_read_as_text(slurm_cluster, tmp_path: Path, cli_env) -> None:
    (tmp_path / "work.py").write_text(WORK)
    done = run_cli("hyperion-submit", "slurm", "--cfg", str(REPO / "conf" / "submit_test_cluster.yaml"),
                   "--mem", "100M", "--array", "PART=1:4", "--output-file", str(tmp_path / "log" / "colour.PART.log"),
                   "--", "python3", str(tmp_path / "work.py"), "PART", cwd=tmp_path, env=cli_env, timeout=300)
    assert done.returncode == 1, done.stderr
    record = str(tmp_path / "log" / "q" / "colour.PART.submit.json")

    status, out = _on_a_terminal(["hyperion-jobs", "status", record, "--failures"], cli_env)
    shown = out.decode()
    assert "2 FAILED exit 3  values 2,4  last line: ValueError: bad shard 2  e.g." in shown, shown
    status, out = _on_a_terminal(["hyperion-jobs", "logs", f"{record}:2"], cli_env)
    shown = out.decode().replace("\r\n", "\n")
    assert status == 0 and "\\x1b" not in shown and "\x1b" not in shown, shown
    assert ("2026-12-05 11:00:02 | INFO     | work:12 - part 2 starting [bold]literal[/]\n"
            "100%|##########| 100/100\nTraceback (most recent call last):\nValueError: bad shard 2\n") in shown
    piped = subprocess.run(["hyperion-jobs", "logs", f"{record}:2", "-n", "100"], env=cli_env, capture_output=True)
    assert piped.stdout == (tmp_path / "log" / "colour.2.log").read_bytes()

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    with Terminal(f"hyperion-console --cfg-dir {REPO / 'conf'} {record}", 110, 34, tmp_path, cli_env["PATH"]) as term:
        term.wait_for_text("FAILED 2", "part 1 done")
        term.keys("Down")
        term.wait_for_text("ValueError: bad shard 2", "100%|##########| 100/100")
        time.sleep(0.3)
        term.keys("t")
        text = term.wait_for_text("last line: ValueError: bad shard 2")
        assert "\\x1b" not in text and "2026-12-05 11:00:02 | INFO     | work:12 - part 2 starting" in term.screen()
