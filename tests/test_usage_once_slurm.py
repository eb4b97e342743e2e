"""What an ended task used is written into the ledger once, however many faces watch it end.

hyperion-submit's wait, `hyperion-jobs watch`, `status` and the console each learn from
their own sacct what an ended task used, and each appended it as a `usage` line: four
faces watching a 30-task array left 108 lines, most tasks' usage three times alike. A
usage line is now written only when it says a figure no line of the ledger holds for
that task yet.
"""
from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from conftest import run_cli, submit_real_array

from backends.records.attempts import ledger_path, read_ledger

pytestmark = pytest.mark.slurm

USAGE_FIGURES = {"max_rss_bytes", "cpu_seconds", "elapsed_seconds", "time_limit_seconds", "req_mem_bytes",
                 "alloc_cpus"}


def repeated_usage(record_path: str) -> dict[tuple[int, int], int]:
    """Per task, the usage lines that say no figure the task's earlier lines (its final's usage, its
    usage lines) did not say already: lines that tell nothing new."""
    said: dict[tuple[int, int], set[str]] = {}
    repeats: dict[tuple[int, int], int] = {}
    for line in ledger_path(record_path).read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") not in ("final", "usage"):
            continue
        key = (entry["attempt"], entry["value"])
        figures = {name for name, value in (entry.get("usage") or {}).items() if value is not None}
        if entry["type"] == "usage" and figures <= said.get(key, set()):
            repeats[key] = repeats.get(key, 0) + 1
        said.setdefault(key, set()).update(figures)
    return repeats


def test_an_array_watched_by_two_faces_at_once_has_each_tasks_usage_written_once(slurm_cluster, tmp_path, cli_env):
    record = submit_real_array(tmp_path / "log" / "u.JOB.log", "JOB=1:8", "sh", "-c", "sleep 2", cwd=tmp_path)
    path = str(record.path)
    watch = subprocess.Popen(["hyperion-jobs", "watch", path], env=cli_env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    statuses: list[int] = []
    stop = threading.Event()

    def status_loop() -> None:            # a user's `while true; do hyperion-jobs status RECORD; done`
        while not stop.is_set():
            statuses.append(run_cli("hyperion-jobs", "status", path, env=cli_env).returncode)
            time.sleep(0.3)

    loop = threading.Thread(target=status_loop, daemon=True)
    loop.start()
    try:
        out, err = watch.communicate(timeout=600)
        time.sleep(5)                     # the loop goes on a while after the watch ended
    finally:
        stop.set()
        watch.kill()
        loop.join(60)
    assert watch.returncode == 0, (out, err)
    assert statuses and statuses[-1] == 0
    ledger = read_ledger(path)
    assert sorted(value for _, value in ledger.finals) == list(range(1, 9))
    assert all(final.usage for final in ledger.finals.values()), "every task's usage is recorded"
    # two processes reading and appending at the same instant may both write one (rare); before, every
    # task had its usage from both faces
    repeats = repeated_usage(path)
    assert sum(repeats.values()) <= 1, (repeats, ledger_path(path).read_text())
