"""How soon a synchronous submit returns after its last task ended, against sbatch --wait and submitit.

    python bench/bench_return.py [--runs 5] [--tasks 20] [--sleep 5]

On the real cluster, for a single job and an array of --tasks tasks (each
sleeping --sleep seconds), each tool submits and waits --runs times:

- hyperion-submit slurm (the tool measured);
- sbatch --wait (Slurm's own: checks at 2, 10, 42, 74 s, ... after submission);
- submitit (if it imports: ``pip install submitit``), job.result() for every task,
  the same sleep as a Python function.

The figure is the median of (the moment the tool returned) - (the last task's
End in sacct). sacct's End has whole seconds (cut, not rounded), so every figure
carries up to 1 s of that, the same for all tools. hyperion-submit's figures
print sbatch --wait's as their baseline. Target: at most 2 s for hyperion-submit.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from report import emit  # noqa: E402

SITE = REPO / "conf" / "submit_test_cluster.yaml"
SLURM_OPTIONS = ["-p", "cpu", "-t", "10", "--mem=100M"]


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def last_end(job_ids: list[str]) -> float:
    """The latest End of the jobs' tasks (epoch seconds), once sacct has them all."""
    for _ in range(100):
        out = subprocess.run(["sacct", "-j", ",".join(job_ids), "-X", "-n", "-P", "-o", "State,End"],
                             capture_output=True, text=True).stdout.split()
        ends = [row.split("|")[1] for row in out]
        if ends and all(e not in ("Unknown", "None", "") for e in ends):
            return max(time.mktime(time.strptime(e, "%Y-%m-%dT%H:%M:%S")) for e in ends)
        time.sleep(0.2)
    raise SystemExit(f"bench_return: sacct has no End for every task of {job_ids}")


def run_hyperion(cwd: Path, tasks: int | None, sleep: int, n: int) -> tuple[float, list[str]]:
    stem = f"h{n}"
    array = ["--array", f"JOB=1:{tasks}"] if tasks else []
    log = f"log/{stem}.JOB.log" if tasks else f"log/{stem}.log"
    subprocess.run(["hyperion-submit", "slurm", "--cfg", str(SITE), *array, "--output-file", log,
                    "--", "sleep", str(sleep)], cwd=cwd, env=_env(), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    returned = time.time()
    import json

    record = cwd / "log" / "q" / f"{stem}{'.JOB' if tasks else ''}.submit.json"
    return returned, [j["job_id"] for j in json.loads(record.read_text())["jobs"]]


def run_sbatch_wait(cwd: Path, tasks: int | None, sleep: int, n: int) -> tuple[float, list[str]]:
    array = [f"--array=1-{tasks}"] if tasks else []
    done = subprocess.run(["sbatch", "--wait", "--parsable", *SLURM_OPTIONS, *array, "-o", "/dev/null",
                           "--wrap", f"sleep {sleep}"], cwd=cwd, capture_output=True, text=True, check=True)
    returned = time.time()
    return returned, [done.stdout.strip().split(";")[0]]


def run_submitit(cwd: Path, tasks: int | None, sleep: int, n: int) -> tuple[float, list[str]]:
    import submitit

    executor = submitit.AutoExecutor(folder=str(cwd / f"submitit{n}"), cluster="slurm")
    executor.update_parameters(slurm_partition="cpu", timeout_min=10, slurm_mem="100M")
    if tasks:
        with executor.batch():
            jobs = [executor.submit(time.sleep, sleep) for _ in range(tasks)]
    else:
        jobs = [executor.submit(time.sleep, sleep)]
    for job in jobs:
        job.result()
    returned = time.time()
    return returned, sorted({job.job_id.split("_")[0] for job in jobs})


def measure(run: Callable, cwd: Path, tasks: int | None, sleep: int, runs: int) -> float:
    """Median over `runs` of (return time - the last task's End)."""
    delays = []
    for n in range(runs):
        returned, jobs = run(cwd, tasks, sleep, n)
        delays.append(returned - last_end(jobs))
    print(f"  {run.__name__} {'array of ' + str(tasks) if tasks else 'single job'}: "
          + " ".join(f"{d:.2f}" for d in delays))
    return statistics.median(delays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--sleep", type=int, default=5)
    parser.add_argument("--shapes", default="job,array", help="job, array or both (default)")
    parser.add_argument("--tools", default="sbatch,hyperion,submitit",
                        help="which of sbatch, hyperion, submitit to measure (default: all)")
    args = parser.parse_args()
    tools = set(args.tools.split(","))
    try:
        import submitit  # noqa: F401
        has_submitit = True
    except ImportError:
        has_submitit = False
        print("submitit is not installed (pip install submitit): its figures are left out")
    with tempfile.TemporaryDirectory(prefix="bench-return-") as tmp:
        cwd = Path(tmp)
        shapes = [s for s in (("job", None), ("array", args.tasks)) if s[0] in args.shapes.split(",")]
        for shape, tasks in shapes:
            name = shape if tasks is None else f"array{tasks}"
            sbatch = measure(run_sbatch_wait, cwd, tasks, args.sleep, args.runs) if "sbatch" in tools else None
            if sbatch is not None:
                emit(f"return_sbatch_wait_{name}", sbatch, "s")
            if "hyperion" in tools:
                ours = measure(run_hyperion, cwd, tasks, args.sleep, args.runs)
                emit(f"return_hyperion_submit_{name}", ours, "s", sbatch)
            if has_submitit and "submitit" in tools:
                emit(f"return_submitit_{name}", measure(run_submitit, cwd, tasks, args.sleep, args.runs), "s")


if __name__ == "__main__":
    main()
