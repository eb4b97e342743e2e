"""Jobs figures: parsing a 10k-task sacct answer, and tailing a 1 GB log against tail(1), reading a junk ledger, a line that never ends.

    python bench/bench_jobs.py [--tasks 10000] [--log-gb 1] [--ledger-mb 100] [--line-mb 200] [--repeat 5]

1. `parse_sacct` + `merge` on a synthetic sacct answer of N array tasks (finished,
   failed, running rows and one pending range row), best of --repeat; target < 50 ms
   for 10k tasks. A bare ``str.split`` of the same text is printed as the floor.
2. `parse_usage` on the answer of the usage query (``sacct`` without ``-X``) for N
   tasks with 3 step rows each (batch, extern, 0), against the existing parse of
   the ``-X`` answer of the same tasks as baseline.
3. `last_lines(path, 100)` on a generated log of --log-gb GB in /tmp against
   ``tail -n 100`` on the same file (ratio = ours / tail, both wall-clock in this
   run; tail includes its process start, ours runs in-process). The file is
   deleted afterwards.
4. `read_ledger` of a ledger of --ledger-mb MB of 3-byte junk lines (about the
   MAX_LEDGER_LINES cap at 100 MB) after one valid line, against ``bytes.split``
   of the same bytes as the floor (one C step per line). Before the junk was
   skipped unparsed, a Python step per line: about 14 s per 100 MB.
5. What ``hyperion-jobs logs`` shows on a terminal (`print_last` to a stream that
   says it is a tty) of a log that is one dense line of --line-mb MB of ``x``
   that never ends, against ``tail -n 1`` of the same file to /dev/null (which
   reads the line whole). Before only its end was read: 1.84 s for 200 MB.
"""
from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from report import emit  # noqa: E402
from timing import best  # noqa: E402  (bench/ is on sys.path when run as a script)

from backends.watch.slurm.accounting import merge, parse_sacct_rows  # noqa: E402
from backends.cli.jobs.log_output import print_last  # noqa: E402
from backends.records.attempts import FinalState, append_entries, ledger_path, read_ledger  # noqa: E402
from backends.watch.tail import last_lines  # noqa: E402
from backends.watch.usage import parse_usage  # noqa: E402


def sacct_text(tasks: int, job: int = 4242) -> str:
    """What sacct prints for an array of `tasks`: most ended, some running, the rest pending."""
    rows = []
    running_from, pending_from = int(tasks * 0.8), int(tasks * 0.9)
    for i in range(1, running_from):
        state, code = ("FAILED", "3:0") if i % 17 == 0 else ("COMPLETED", "0:0")
        rows.append(f"{job}_{i}|{job + i}|{state}|{code}|00:12:{i % 60:02d}|vm|"
                    f"2026-12-02T10:00:00|2026-12-02T10:12:00")
    for i in range(running_from, pending_from):
        rows.append(f"{job}_{i}|{job + i}|RUNNING|0:0|00:03:{i % 60:02d}|vm|2026-12-02T10:20:00|Unknown")
    rows.append(f"{job}_[{pending_from}-{tasks}%50]|{job}|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown")
    return "\n".join(rows) + "\n"


def bench_parse(tasks: int, repeat: int) -> None:
    text = sacct_text(tasks)
    seconds, merged = best(lambda: merge(parse_sacct_rows(text), []), repeat)
    floor, _ = best(lambda: [line.split("|") for line in text.splitlines()], repeat)
    assert len(merged) == tasks, len(merged)
    emit(f"sacct_parse_merge_{tasks}_tasks", seconds * 1000, "ms", baseline=floor * 1000)  # target < 50 ms


def usage_text(tasks: int, job: int = 4242) -> str:
    """The usage query's answer for `tasks`: allocation row + batch, extern and srun step rows
    for the ended and running ones (MaxRSS only on ended steps), one pending range row."""
    rows = []
    running_from, pending_from = int(tasks * 0.8), int(tasks * 0.9)
    limits = "00:30:00|4000M|2|billing=2,cpu=2,mem=4000M,node=1"
    for i in range(1, pending_from):
        ended = i < running_from
        state = ("FAILED" if i % 17 == 0 else "COMPLETED") if ended else "RUNNING"
        cpu = f"12:{i % 60:02d}.{i % 1000:03d}" if ended else "00:00:00"
        rows.append(f"{job}_{i}|{state}||{cpu}|00:12:{i % 60:02d}|{limits}")
        for step, share in (("batch", 1), ("extern", 0), ("0", 3)):
            step_rss = f"{(100000 + i * 37) * share}K" if ended and share else "0" if ended else ""
            rows.append(f"{job}_{i}.{step}|{state}|{step_rss}|{cpu}|00:12:{i % 60:02d}|||2|")
    rows.append(f"{job}_[{pending_from}-{tasks}%50]|PENDING||00:00:00|00:00:00|{limits}")
    return "\n".join(rows) + "\n"


def bench_usage(tasks: int, repeat: int) -> None:
    text, plain = usage_text(tasks), sacct_text(tasks)
    seconds, usage = best(lambda: parse_usage(text), repeat)
    baseline, rows = best(lambda: parse_sacct_rows(plain), repeat)
    assert len(usage) == tasks and len(rows.own) + len(rows.ranged) == tasks
    emit(f"usage_parse_{tasks}_tasks_3_steps", seconds * 1000, "ms", baseline=baseline * 1000)


def write_log(path: Path, size: int) -> None:
    """Real, varied lines; a 4 MiB block repeated (with a changing prefix) so writing stays fast."""
    block = "".join(f"[step {i:07d}] loss={i * 0.001:.4f} lr=0.0003 tokens/s={1000 + i % 977}\n"
                    for i in range(60_000)).encode()
    with open(path, "wb") as handle:
        written = n = 0
        while written < size:
            chunk = f"epoch {n} begins\n".encode() + block
            handle.write(chunk)
            written += len(chunk)
            n += 1
        handle.write(b"the last line, no newline")


def bench_tail(gigabytes: float, repeat: int) -> None:
    fd, name = tempfile.mkstemp(prefix="hyperion-bench-", suffix=".log", dir="/tmp")
    os.close(fd)
    path = Path(name)
    try:
        write_log(path, int(gigabytes * 1024 ** 3))
        ours_s, ours = best(lambda: last_lines(path, 100), repeat)
        tail_s, tail = best(lambda: subprocess.run(["tail", "-n", "100", str(path)], capture_output=True,
                                                   text=True, check=True).stdout, repeat)
        assert ours == tail.splitlines(), "last_lines disagrees with tail -n 100"
        emit(f"last_100_lines_of_{gigabytes:g}_gb_log".replace(".", "_"), ours_s * 1000, "ms", baseline=tail_s * 1000)
    finally:
        path.unlink(missing_ok=True)


def bench_junk_ledger(megabytes: float, repeat: int) -> None:
    with tempfile.TemporaryDirectory(prefix="hyperion-bench-", dir="/tmp") as tmp:
        record = Path(tmp) / "q" / "x.JOB.submit.json"
        append_entries(record, [FinalState(1, 3, "12", 3, "FAILED", 3)])
        with open(ledger_path(record), "ab") as handle:
            handle.write(b"xy\n" * int(megabytes * 1000 ** 2 / 3))
        data = ledger_path(record).read_bytes()
        ours_s, ledger = best(lambda: read_ledger(record), repeat)
        floor_s, _ = best(lambda: data.split(b"\n"), repeat)
        assert len(ledger.finals) == 1 and ledger.skipped == int(megabytes * 1000 ** 2 / 3)
        emit(f"ledger_of_{megabytes:g}_mb_junk_lines".replace(".", "_"), ours_s, "s", baseline=floor_s)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def bench_long_line(megabytes: float, repeat: int) -> None:
    fd, name = tempfile.mkstemp(prefix="hyperion-bench-", suffix=".log", dir="/tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            block = b"x" * 1024 ** 2
            for _ in range(int(megabytes)):
                handle.write(block)

        def shown() -> str:
            out = _Terminal()
            print_last(name, 20, raw=False, out=out)
            return out.getvalue()
        ours_s, text = best(shown, repeat)
        tail_s, _ = best(lambda: subprocess.run(["tail", "-n", "1", name], stdout=subprocess.DEVNULL, check=True),
                         repeat)
        assert "x" * 1000 in text and text.count("\n") == 1, text[:200]
        emit(f"logs_on_a_terminal_of_a_{megabytes:g}_mb_line".replace(".", "_"), ours_s * 1000, "ms",
             baseline=tail_s * 1000)
    finally:
        os.unlink(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--log-gb", type=float, default=1.0)
    parser.add_argument("--ledger-mb", type=float, default=100)
    parser.add_argument("--line-mb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bench_parse(args.tasks, args.repeat)
    bench_usage(args.tasks, args.repeat)
    bench_tail(args.log_gb, args.repeat)
    bench_junk_ledger(args.ledger_mb, min(args.repeat, 3))
    bench_long_line(args.line_mb, args.repeat)


if __name__ == "__main__":
    main()
