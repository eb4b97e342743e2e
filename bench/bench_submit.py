"""Launcher overhead figures: a 100-task local array and --dry-run start-up, each vs a baseline.

Prints times and ratios (measured in the same run); no thresholds: read the
figures. Run: python bench/bench_submit.py
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "conf" / "submit_test_cluster.yaml"
TASKS = 100
RUNS = 5


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def _timed(argv: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=_env(), check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def local_array(cwd: str) -> tuple[float, float]:
    """(hyperion-submit local --array of `true`, a bash loop running `true`)."""
    ours = _timed(["hyperion-submit", "local", "--cfg", str(SITE), "--array", f"JOB=1:{TASKS}",
                   "--output-file", "log/t.JOB.log", "--", "true"], cwd)
    loop = _timed(["bash", "-c", f"for i in $(seq {TASKS}); do /bin/true; done"], cwd)
    return ours, loop


def dry_run_startup(cwd: str) -> tuple[float, float]:
    """Median (hyperion-submit slurm --dry-run, python -c pass) wall times."""
    argv = ["hyperion-submit", "slurm", "--cfg", str(SITE), "--dry-run", "--array", "JOB=1:100",
            "--output-file", "log/t.JOB.log", "--", "true"]
    ours = statistics.median(_timed(argv, cwd) for _ in range(RUNS))
    base = statistics.median(_timed([sys.executable, "-c", "pass"], cwd) for _ in range(RUNS))
    return ours, base


def main() -> None:
    with tempfile.TemporaryDirectory() as cwd:
        ours, loop = local_array(cwd)
        print(f"local array of {TASKS} x true: hyperion-submit {ours:.3f} s, bash loop {loop:.3f} s, "
              f"ratio {ours / loop:.1f}x, per task {1000 * (ours - loop) / TASKS:.1f} ms overhead")
        ours, base = dry_run_startup(cwd)
        print(f"--dry-run start-up (median of {RUNS}): {ours:.3f} s, python -c pass {base:.3f} s, "
              f"ratio {ours / base:.1f}x")


if __name__ == "__main__":
    main()
