"""A console and a `hyperion-jobs watch` left open for hours: memory and CPU while an array runs and after.

    python bench/bench_console_idle.py [--tasks 120] [--max-jobs-run 2] [--idle 300] [--long 180] [--every 2]

Users leave `hyperion-console --record R` (on the Jobs screen, a task's log open
and followed) and `hyperion-jobs watch R` running overnight on the login node,
where a few MB a poll of growth or a busy idle loop is everyone's problem. Both
faces run in pseudo-terminals through counting squeue/sacct/scontrol wrappers
(bench_queries.py's), and every --every seconds the bench reads each one's RSS
and CPU time from /proc. Two phases on the real cluster:

1. array: --tasks short tasks, --max-jobs-run at a time (every 10th writes ~3 MB
   of tqdm-like `\\r` progress, every 7th fails), the console's log pane following
   task 10's big log; the watch exits at the end, the console is kept --idle s more;
2. long job: one job sleeping --long s, when nothing changes between its start and end.

The poll interval cannot be shortened (the site key `poll_interval` only raises
it), so hours are counted in polls (squeue calls the face made) or scaled:

- `{console,watch}_rss_growth_per_100_polls` (KB), array phase, from a quarter
  into it (rows filled, the log read) to its end; baseline: the RSS then.
- `{console,watch}_cpu_busy` (CPU s a minute while the array runs).
- `console_rss_growth_idle_per_hour` (KB) and `console_cpu_idle` (CPU s a minute)
  from 30 s after the end; baseline: a bare Textual app with a 1 s timer in a
  pty, the framework's floor, measured in the same run.
- `console_queries_idle` (Slurm calls a minute after the end); baseline the idle budget, 6.
- `{console,watch}_cpu_long_job` (baseline the bare app), `_rss_growth_long_job_per_hour`,
  `_queries_long_job` (baseline 6), from 20 s after the long job's start to 5 s before its end.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_queries import (SITE, Terminal, calls, console_terminal, die_with_bench, exit_on_signal,  # noqa: E402
                           face_env, make_wrappers)
from report import emit  # noqa: E402

IDLE_BUDGET = 6
TICK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024

TASK = """\
#!/usr/bin/env python3
import sys, time
i = int(sys.argv[1])
steps = 30000 if i % 10 == 0 else 300
began = time.time()
for s in range(steps):
    sys.stdout.write(f"\\rtrain {i}: {100 * s // steps:3d}%|{'#' * (s * 40 // steps):<40}| {s}/{steps} [12.3it/s]")
    if s % 1000 == 0:
        sys.stdout.flush()
print(flush=True)
time.sleep(max(0.0, 2.0 - (time.time() - began)))
if i % 7 == 0:
    print(f"ValueError: task {i} failed", file=sys.stderr)
    sys.exit(3)
"""

BARE_APP = """\
import sys
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("idle")
    def on_mount(self):
        self.set_interval(1.0, self.refresh)

Bare().run()
"""


def usage(pid: int) -> tuple[int, float] | None:
    """(RSS in KB, CPU seconds) of a live process, None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return pages * PAGE_KB, (int(fields[11]) + int(fields[12])) / TICK


class Samples:
    """(when, RSS KB, CPU s) of one process, taken while it lives."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.rows: list[tuple[float, int, float]] = []

    def take(self) -> None:
        got = usage(self.pid)
        if got is not None:
            self.rows.append((time.time(), *got))

    def at(self, when: float) -> tuple[float, int, float]:
        """The first sample at or after `when` (else the last one)."""
        return next((row for row in self.rows if row[0] >= when), self.rows[-1])

    def last_before(self, when: float) -> tuple[float, int, float]:
        return [row for row in self.rows if row[0] <= when][-1]


def per_minute(first: tuple[float, int, float], last: tuple[float, int, float]) -> float:
    return (last[2] - first[2]) * 60 / max(last[0] - first[0], 1e-9)


def polls(log: Path, since: float, until: float) -> int:
    """squeue calls of a face within [since, until]: one per poll."""
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines()
               if line.endswith(" squeue") and since <= float(line.split()[0]) <= until)


def bare_floor(seconds: float, cwd: Path) -> float:
    """CPU s per minute of a bare Textual app with a 1 s timer in a pty: what the framework costs."""
    bare = Terminal([sys.executable, "-c", BARE_APP], dict(os.environ), cwd)
    try:
        end = time.monotonic() + 5
        while time.monotonic() < end:      # start-up is not idling
            bare.drain()
            time.sleep(0.2)
        first = usage(bare.proc.pid)
        began = time.time()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            bare.drain()
            time.sleep(0.2)
        last = usage(bare.proc.pid)
    finally:
        bare.close()
    assert first is not None and last is not None
    return (last[1] - first[1]) * 60 / (time.time() - began)


def watched_run(cwd: Path, bin_dir: Path, name: str, argv: list[str], record: Path, after: float,
                every: float, follow: bytes | None) -> tuple[dict[str, Samples], dict[str, Path], float, float]:
    """hyperion-submit ARGV (it waits), a watch and a console on its record in pseudo-terminals,
    sampled every `every` s until `after` s past the end; (samples, call logs, began, ended)."""
    logs = {face: cwd / f"{name}.{face}.log" for face in ("submit", "watch", "console")}
    submit = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(SITE), *argv], cwd=cwd,
                              env=face_env(bin_dir, logs["submit"]), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, preexec_fn=die_with_bench)
    watch_tty = console = None
    try:
        while not record.exists():
            if submit.poll() is not None:
                raise SystemExit(f"bench_console_idle: hyperion-submit ended before writing {record}")
            time.sleep(0.1)
        # the watch on a terminal, as users leave it: its live table
        watch_tty = Terminal(["hyperion-jobs", "watch", str(record)], face_env(bin_dir, logs["watch"]), cwd)
        console = console_terminal(str(record), face_env(bin_dir, logs["console"]), str(cwd))
        began = time.time()
        faces = {"console": Samples(console.proc.pid), "watch": Samples(watch_tty.proc.pid)}
        typed = follow is None
        ended = None
        while ended is None or time.time() < ended + after:
            if ended is None and submit.poll() is not None:
                ended = time.time()
                print(f"{name}: {ended - began:.0f} s, hyperion-submit exit {submit.returncode}", flush=True)
            console.drain()
            watch_tty.drain()
            if not typed and time.time() - began > 5:     # the log pane follows this task's log
                os.write(console.master, follow)
                typed = True
            for samples in faces.values():
                samples.take()
            time.sleep(every)
    finally:
        if console is not None:
            console.close()
        if watch_tty is not None:
            watch_tty.close()
        if submit.poll() is None:       # stopped early: hyperion-submit cancels its jobs on SIGTERM
            submit.terminate()
            try:
                submit.wait(60)
            except subprocess.TimeoutExpired:
                submit.kill()
    return faces, logs, began, ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=120)
    parser.add_argument("--max-jobs-run", type=int, default=2)
    parser.add_argument("--idle", type=float, default=300, help="seconds the console is kept after the end")
    parser.add_argument("--long", type=float, default=180, help="seconds the long job runs (0: leave it out)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    args = parser.parse_args()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on_signal)
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        cwd = Path(tmp)
        bin_dir = make_wrappers(cwd)
        task = cwd / "task.py"
        task.write_text(TASK)
        task.chmod(0o755)

        faces, logs, began, ended = watched_run(
            cwd, bin_dir, "array", ["--array", f"JOB=1:{args.tasks}", "--max-jobs-run", str(args.max_jobs_run),
                                    "--output-file", "log/t.JOB.log", "--", str(task), "JOB"],
            cwd / "log" / "q" / "t.JOB.submit.json", args.idle, args.every, b":10\r")
        warm = began + (ended - began) / 4
        for face, samples in faces.items():
            first, last = samples.at(warm), samples.last_before(ended)
            n = polls(logs[face], first[0], last[0])
            print(f"{face}: RSS {first[1] / 1024:.1f} MB at warm-up, {last[1] / 1024:.1f} MB at the end, "
                  f"{n} polls between")
            emit(f"{face}_rss_growth_per_100_polls", (last[1] - first[1]) * 100 / max(n, 1), "KB", first[1])
            emit(f"{face}_cpu_busy", per_minute(samples.at(began + 5), last), "s/min")
        idle = faces["console"]
        first, last = idle.at(ended + 30), idle.rows[-1]
        hours = max(last[0] - first[0], 1e-9) / 3600
        print(f"console after the end: RSS {first[1] / 1024:.1f} MB -> {last[1] / 1024:.1f} MB "
              f"in {last[0] - first[0]:.0f} s")
        emit("console_rss_growth_idle_per_hour", (last[1] - first[1]) / hours, "KB")
        floor = bare_floor(min(args.idle, 60), cwd)
        emit("console_cpu_idle", per_minute(first, last), "s/min", floor)
        queries = len(calls(logs["console"], first[0], last[0]))
        emit("console_queries_idle", queries * 60 / max(last[0] - first[0], 1e-9), "calls/min", IDLE_BUDGET)

        if args.long <= 0:
            return
        # a long job: nothing changes between its start and its end, both faces poll it
        faces, logs, began, ended = watched_run(
            cwd, bin_dir, "long", ["--output-file", "log/l.log", "--", "sleep", str(int(args.long))],
            cwd / "log" / "q" / "l.submit.json", 0, args.every, None)
        for face, samples in faces.items():
            first, last = samples.at(began + 20), samples.last_before(ended - 5)
            hours = max(last[0] - first[0], 1e-9) / 3600
            emit(f"{face}_cpu_long_job", per_minute(first, last), "s/min", floor)
            emit(f"{face}_rss_growth_long_job_per_hour", (last[1] - first[1]) / hours, "KB")
            queries = len(calls(logs[face], first[0], last[0]))
            emit(f"{face}_queries_long_job", queries * 60 / max(last[0] - first[0], 1e-9), "calls/min",
                 IDLE_BUDGET)


if __name__ == "__main__":
    main()
