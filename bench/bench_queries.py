"""Slurm queries per minute made by each face that waits: hyperion-submit, hyperion-jobs watch, the console.

    python bench/bench_queries.py [--tasks 36] [--max-jobs-run 3] [--idle 100]

Counting wrappers for squeue, sacct and scontrol are put first on PATH; each
appends one line per call to its face's own log, then execs the real tool.
Two phases on the real cluster, watched by all three faces at once (the console
runs in a pseudo-terminal with ``--record``):

1. changing: an array of --tasks tasks sleeping 3-9 s, --max-jobs-run at a
   time, so that tasks start and end all the time for over a minute;
2. idle: one job sleeping --idle seconds; the calls are counted from 20 s after
   it started to 5 s before it ended, when nothing changes (a face polling
   every 10 s may see the start up to 10 s late, and a change seen is followed
   by one quicker poll).

Each figure is the most calls the face made in any 60 s of the phase (or, for
a phase shorter than a minute, in the whole phase scaled to a minute), printed
with the budget as baseline: 30 a minute while tasks change, 6 when nothing
does (ratio <= 1 keeps the budget).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import pty
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from report import emit  # noqa: E402

SITE = REPO / "conf" / "submit_test_cluster.yaml"
TOOLS = ("squeue", "sacct", "scontrol")
FACES = ("submit", "watch", "console")
BUSY_BUDGET, IDLE_BUDGET = 30, 6
WRAPPER = """\
#!/bin/bash
echo "$(date +%s.%N) {tool}" >> "$HYPERION_BENCH_QUERY_LOG"
exec {real} "$@"
"""


PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)     # loaded here: a child between fork and exec only calls it
BENCH_PID = os.getpid()


def die_with_bench() -> None:
    """`preexec_fn` of every face: SIGTERM when the bench dies, however (kill -9 too).

    A killed bench left its console running in a pty nobody read, for ever; SIGTERM
    ends each face as a user's `kill` would (hyperion-submit cancels its jobs).
    """
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != BENCH_PID:     # the bench died before the line above: no signal will come
        os.kill(os.getpid(), signal.SIGTERM)


def exit_on_signal(signum: int, _frame: object) -> None:
    """SIGTERM/SIGHUP unwind the bench (SystemExit), so its `finally` blocks stop the faces."""
    raise SystemExit(f"bench_queries: ended by signal {signum}; stopping the faces")


def make_wrappers(where: Path) -> Path:
    """A directory of counting squeue/sacct/scontrol wrappers around the real tools."""
    bin_dir = where / "counting-bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        real = shutil.which(tool)
        if real is None:
            raise SystemExit(f"bench_queries: {tool} not found; this bench needs the Slurm cluster")
        path = bin_dir / tool
        path.write_text(WRAPPER.format(tool=tool, real=real))
        path.chmod(0o755)
    return bin_dir


def face_env(bin_dir: Path, log: Path) -> dict[str, str]:
    path = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "HYPERION_BENCH_QUERY_LOG": str(log)}


def tool_calls(log: Path, since: float, until: float) -> list[tuple[float, str]]:
    """(when, tool) of each call the face's wrappers logged within [since, until]."""
    if not log.exists():
        return []
    rows = [line.split()[:2] for line in log.read_text().splitlines() if line.strip()]
    return sorted((float(stamp), tool) for stamp, tool in rows if since <= float(stamp) <= until)


def calls(log: Path, since: float, until: float) -> list[float]:
    return [t for t, _ in tool_calls(log, since, until)]


def busiest_minute(rows: list[tuple[float, str]]) -> str:
    """The calls of the busiest 60 s, so that an excess can be traced to its cause."""
    best = max(((t, [r for r in rows if t <= r[0] < t + 60]) for t, _ in rows), key=lambda x: len(x[1]))
    start, within = best
    return " ".join(f"{t - start:+.1f}{tool[:2]}" for t, tool in within)


def most_in_a_minute(stamps: list[float], since: float, until: float) -> float:
    """Most calls in any 60 s of [since, until]; a shorter phase is scaled to a minute."""
    span = until - since
    if span < 60:
        return len(stamps) * 60 / max(span, 1e-9)
    return max((sum(1 for u in stamps if t <= u < t + 60) for t in [since, *stamps] if t + 60 <= until + 1e-9),
               default=0)


class Terminal:
    """A command in a pseudo-terminal of its own, its output drained and dropped (as a user's tmux)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                                     env={**env, "TERM": "xterm"}, start_new_session=True,
                                     preexec_fn=die_with_bench)
        os.close(slave)
        os.set_blocking(self.master, False)

    def drain(self) -> None:
        try:
            while os.read(self.master, 65536):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self.master)


def console_terminal(record: str, env: dict[str, str], cwd: str) -> Terminal:
    """hyperion-console --record RECORD in a pseudo-terminal, its output drained and dropped."""
    return Terminal(["hyperion-console", "--cfg-dir", str(REPO / "conf"), "--record", record], env, cwd)


def wait_with_drain(proc: subprocess.Popen, console: Terminal, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("bench_queries: hyperion-submit did not finish in time")
        console.drain()
        time.sleep(0.2)
    return proc.returncode


def run_phase(name: str, argv: list[str], cwd: Path, bin_dir: Path, logs: dict[str, Path],
              record_name: str, timeout: float) -> tuple[float, float, str]:
    """Run hyperion-submit (counted) with a watch and a console (counted) on its record."""
    began = time.time()
    submit = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(SITE), *argv], cwd=cwd,
                              env=face_env(bin_dir, logs["submit"]), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, preexec_fn=die_with_bench)
    record = cwd / "log" / "q" / f"{record_name}.submit.json"
    watch = console = None
    try:
        while not record.exists():
            if submit.poll() is not None:
                raise SystemExit(f"bench_queries: hyperion-submit ended before writing {record}")
            time.sleep(0.1)
        watch = subprocess.Popen(["hyperion-jobs", "watch", str(record)], cwd=cwd,
                                 env=face_env(bin_dir, logs["watch"]), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, preexec_fn=die_with_bench)
        console = console_terminal(str(record), face_env(bin_dir, logs["console"]), str(cwd))
        status = wait_with_drain(submit, console, timeout)
        ended = time.time()
        watch.wait(timeout=60)
        console.drain()
    finally:
        if console is not None:
            console.close()
        if watch is not None and watch.poll() is None:
            watch.kill()
        if submit.poll() is None:     # the bench is stopping early: hyperion-submit cancels its jobs on SIGTERM
            submit.terminate()
            try:
                submit.wait(60)
            except subprocess.TimeoutExpired:
                submit.kill()
    if status != 0:
        raise SystemExit(f"bench_queries: phase {name}: hyperion-submit exited {status}")
    return began, ended, str(record)


def job_times(record: str) -> tuple[float, float]:
    """Start and End (epoch seconds) of the record's single job, from sacct."""
    import json

    job = json.loads(Path(record).read_text())["jobs"][0]["job_id"]
    for _ in range(50):
        out = subprocess.run(["sacct", "-j", job, "-X", "-n", "-P", "-o", "Start,End"],
                             capture_output=True, text=True).stdout.strip().split("|")
        if len(out) == 2 and out[1] not in ("Unknown", ""):
            return tuple(time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%S")) for t in out)  # type: ignore
        time.sleep(0.2)
    raise SystemExit(f"bench_queries: sacct has no End for job {job}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=36)
    parser.add_argument("--max-jobs-run", type=int, default=3)
    parser.add_argument("--idle", type=int, default=100, help="seconds the idle job sleeps")
    args = parser.parse_args()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on_signal)
    with tempfile.TemporaryDirectory(prefix="bench-queries-") as tmp:
        cwd = Path(tmp)
        bin_dir = make_wrappers(cwd)
        task = cwd / "task.sh"
        task.write_text("#!/bin/bash\nsleep $(( 3 + $1 * 5 % 7 ))\n")
        task.chmod(0o755)

        logs = {face: cwd / f"busy.{face}.log" for face in FACES}
        began, ended, _ = run_phase("changing", ["--array", f"JOB=1:{args.tasks}", "--max-jobs-run",
                                                 str(args.max_jobs_run), "--output-file", "log/b.JOB.log",
                                                 "--", str(task), "JOB"],
                                    cwd, bin_dir, logs, "b.JOB", timeout=1200)
        print(f"changing phase: {args.tasks} tasks, {ended - began:.0f} s")
        for face in FACES:
            stamps = calls(logs[face], began, ended)
            most = most_in_a_minute(stamps, began, ended)
            emit(f"queries_{face}_changing", most, "calls/min", BUSY_BUDGET)
            if most > BUSY_BUDGET:
                print(f"# {face}: busiest minute (s, sq/sa/sc): {busiest_minute(tool_calls(logs[face], began, ended))}")

        logs = {face: cwd / f"idle.{face}.log" for face in FACES}
        _, _, record = run_phase("idle", ["--output-file", "log/i.log", "--", "sleep", str(args.idle)],
                                 cwd, bin_dir, logs, "i", timeout=args.idle + 300)
        start, end = job_times(record)
        since, until = start + 20, end - 5
        print(f"idle phase: counted from {time.strftime('%H:%M:%S', time.localtime(since))} "
              f"to {time.strftime('%H:%M:%S', time.localtime(until))}")
        for face in FACES:
            stamps = calls(logs[face], since, until)
            most = most_in_a_minute(stamps, since, until)
            emit(f"queries_{face}_idle", most, "calls/min", IDLE_BUDGET)
            if most > IDLE_BUDGET:   # say when, so that an excess can be traced to its cause
                every = calls(logs[face], start - 30, end + 30)
                print(f"# {face}: calls at " + " ".join(f"{t - start:+.1f}" for t in every)
                      + " s from the job's Start")


if __name__ == "__main__":
    main()
