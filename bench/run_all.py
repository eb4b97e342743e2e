"""Every bench/ script in one run, their figures gathered at the end.

    python bench/run_all.py [--quick] [--no-slurm]

Runs each script as its own process (one at a time: this machine has 2 cores
and the figures are ratios against a baseline measured in the same script),
passes its output through, and prints every ``bench:`` line again at the end,
so the README's figures can be copied from one place. ``--quick`` uses smaller
sizes; ``--no-slurm`` leaves out the scripts that need the test cluster
(query budget, return after the end, faces left open). Exit status 1 if any script failed.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (script, arguments, arguments with --quick, needs the Slurm test cluster)
SCRIPTS = [
    ("bench_submit.py", [], ["--tasks", "100,2000", "--repeat", "2", "--startup-runs", "5"], False),
    ("bench_jobs.py", [], ["--log-gb", "0.2", "--ledger-mb", "20", "--line-mb", "100", "--repeat", "3"], False),
    ("bench_sharding.py", [], ["--ids", "200000", "--shards", "20000", "--repeat", "2"], False),
    ("bench_console.py", ["--tasks", "1000", "--tasks", "10000", "--tasks", "100000"],
     ["--tasks", "1000", "--tasks", "10000", "--checkpoint-shards", "10000"], False),
    ("bench_typing.py", [], ["--tasks", "20000", "--shards", "20000"], False),
    ("bench_queries.py", [], [], True),
    ("bench_return.py", [], ["--runs", "3"], True),
    ("bench_console_idle.py", [], ["--tasks", "30", "--idle", "60", "--long", "60"], True),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--no-slurm", action="store_true", help="leave out what needs the test cluster")
    args = parser.parse_args()
    figures: list[str] = []
    failed: list[str] = []
    for script, full, quick, slurm in SCRIPTS:
        if slurm and args.no_slurm:
            continue
        argv = [sys.executable, str(HERE / script), *(quick if args.quick else full)]
        print(f"# {' '.join(argv[1:])}", flush=True)
        began = time.monotonic()
        with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                if line.startswith("bench: "):
                    figures.append(line.rstrip("\n"))
        if proc.returncode != 0:
            failed.append(script)
        print(f"# {script}: exit {proc.returncode}, {time.monotonic() - began:.0f} s", flush=True)
    print("\n# all figures")
    print("\n".join(figures))
    if failed:
        print(f"# failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
