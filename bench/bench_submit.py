"""Launcher figures a user waits on: local arrays against a bash loop, and start-up against `import yaml`.

    python bench/bench_submit.py [--tasks 100,2000,10000] [--repeat 3] [--startup-runs 7]

1. ``hyperion-submit local --array JOB=1:N -- true`` against a bash loop that
   runs ``/bin/true`` writing one log per task (best of --repeat, the two
   alternating: this VM's speed drifts by 2x within minutes). Bookkeeping is
   an append per task start and end, so the ratio should not grow with N.
   For small N the start-up dominates: the floor figure is
   ``python3 -c 'import jsonargparse'`` alone against the same loop.
2. Start-up: ``hyperion-submit slurm --dry-run``, ``hyperion-jobs status`` of a
   local record and ``hyperion-checkpoint retry`` of a small checkpoint, each
   against ``python3 -c 'import yaml'`` (median of --startup-runs), and the
   dry run's floor ``python3 -c 'import jsonargparse'`` against the same.

The project's modules are byte-compiled first, as ``pip install`` does for an
installed package: with PYTHONDONTWRITEBYTECODE set (as on the development VM)
an editable checkout would otherwise compile every module at every start.

Every figure is a ``bench: NAME VALUE UNIT baseline VALUE ratio R`` line.
"""
from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from report import emit  # noqa: E402  (bench/ is on sys.path when run as a script)

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "conf" / "submit_test_cluster.yaml"


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def _timed(argv: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=_env(), check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def local_array(n: int, repeat: int) -> None:
    """Ours against the bash loop, each in a fresh directory (no earlier attempt to move aside)."""
    ours, loop = [], []
    for run in range(repeat):
        with tempfile.TemporaryDirectory() as cwd:
            ours.append(_timed(["hyperion-submit", "local", "--cfg", str(SITE), "--array", f"JOB=1:{n}",
                                "--output-file", f"log{run}/t.JOB.log", "--", "true"], cwd))
            loop.append(_timed(["bash", "-c", f"mkdir -p loop; for i in $(seq {n}); do /bin/true > loop/t.$i.log; done"],
                               cwd))
    emit(f"local_array_{n}", min(ours), "s", baseline=min(loop))
    emit(f"local_array_{n}_per_task", 1000 * min(ours) / n, "ms", baseline=1000 * min(loop) / n)
    if n <= 100:
        # What no launcher on this interpreter can go below: starting Python and importing the
        # parser the contract names (jsonargparse, for --cfg), against the same loop.
        floor = [_timed([sys.executable, "-c", "import jsonargparse"], tempfile.gettempdir())
                 for _ in range(max(repeat, 5))]
        emit(f"local_array_{n}_floor_python_jsonargparse", min(floor), "s", baseline=min(loop))


def _median(argv: list[str], cwd: str, runs: int) -> float:
    return statistics.median(_timed(argv, cwd) for _ in range(runs))


def startup(runs: int) -> None:
    with tempfile.TemporaryDirectory() as cwd:
        _timed(["hyperion-submit", "local", "--cfg", str(SITE), "--array", "JOB=1:3",
                "--output-file", "log/s.JOB.log", "--", "true"], cwd)
        _make_checkpoint(Path(cwd) / "ck")
        base = _median([sys.executable, "-c", "import yaml"], cwd, runs)
        commands = {
            "startup_submit_dry_run": ["hyperion-submit", "slurm", "--cfg", str(SITE), "--dry-run", "--array",
                                       "JOB=1:100", "--output-file", "log/t.JOB.log", "--", "true"],
            "startup_jobs_status": ["hyperion-jobs", "status", "log/q/s.JOB.submit.json"],
            "startup_checkpoint_retry": ["hyperion-checkpoint", "retry", "ck"],
        }
        for name, argv in commands.items():
            emit(name, _median(argv, cwd, runs), "s", baseline=base)
        # The dry run's floor: the parser the contract names for --cfg, imported and nothing else.
        emit("startup_floor_python_jsonargparse", _median([sys.executable, "-c", "import jsonargparse"], cwd, runs),
             "s", baseline=base)


def _make_checkpoint(path: Path) -> None:
    from sharding.store import Checkpoint, RunConfig

    store = Checkpoint(path)
    store.ensure_run(RunConfig(1, 100))
    for shard in range(1, 101, 2):
        store.write_completion(shard)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="100,2000,10000", help="comma list of array sizes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--startup-runs", type=int, default=7)
    args = parser.parse_args()
    for package in ("backends", "sharding", "hyperion_console"):
        compileall.compile_dir(str(REPO / package), quiet=2)
    print("# the project's modules byte-compiled first, as an installed package is", flush=True)
    for n in (int(t) for t in args.tasks.split(",") if t):
        local_array(n, args.repeat)
    startup(args.startup_runs)


if __name__ == "__main__":
    main()
