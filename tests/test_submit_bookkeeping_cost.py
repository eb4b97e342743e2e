"""What a local run does once rather than for every task (issue 14, speed).

A local array's own cost is bookkeeping around each child: these tests run real
tasks and count, without changing them, the calls that used to repeat per task,
and check that what is written stays exactly what it was.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
from dataclasses import asdict
from pathlib import Path

from conftest import TEST_SITE

from backends.records.attempts import FinalState, TaskChild, TaskStart, entry_lines, ledger_path
from backends.records.record import load_record, record_json
from backends.submit.commandline import parse_submit_request
from backends.submit.local.run import run_local
from backends.submit.plan import build_plan

TASKS = 20


def _plan(tmp_path: Path, monkeypatch, tasks: int = TASKS):
    monkeypatch.chdir(tmp_path)
    request = parse_submit_request(["local", "--cfg", str(TEST_SITE), "--array", f"JOB=1:{tasks}",
                                    "--output-file", "log/t.JOB.log", "--", "true"])
    return build_plan(request.site, request.options)


def test_a_local_array_does_not_make_its_log_folder_again_for_every_task(tmp_path, monkeypatch):
    plan = _plan(tmp_path, monkeypatch)
    made: list[str] = []
    mkdir = os.mkdir
    monkeypatch.setattr(os, "mkdir", lambda path, *a, **k: (made.append(os.fspath(path)), mkdir(path, *a, **k))[1])
    assert run_local(plan) == 0
    assert sorted(p.name for p in (tmp_path / "log").glob("t.*.log")) == sorted(f"t.{v}.log" for v in range(1, TASKS + 1))
    assert made.count(str(tmp_path / "log")) <= 1, made


def test_a_log_folder_missing_when_its_task_starts_is_made_then(tmp_path, monkeypatch):
    """A task that removes the next task's folder: that task's log is written all the same."""
    monkeypatch.chdir(tmp_path)
    request = parse_submit_request(["local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                                    "--output-file", "out/JOB/t.log", "--", "sh", "-c",
                                    "if [ JOB = 1 ]; then rm -rf out/2; fi"])
    plan = build_plan(request.site, request.options)
    (tmp_path / "out" / "2").mkdir(parents=True)
    assert run_local(plan) == 0
    assert (tmp_path / "out" / "2" / "t.log").read_text().startswith("# Running: sh -c 'if [ 2 = 1 ]; then")


def test_ctrl_z_is_handled_by_one_handler_for_the_whole_run(tmp_path, monkeypatch):
    """Setting and resetting the SIGTSTP handler around each task cost two system calls a task."""
    plan = _plan(tmp_path, monkeypatch)
    before = signal.getsignal(signal.SIGTSTP)
    calls: list[int] = []
    set_handler = signal.signal
    monkeypatch.setattr(signal, "signal", lambda signum, handler: (calls.append(signum), set_handler(signum, handler))[1])
    assert run_local(plan) == 0
    assert calls.count(signal.SIGTSTP) == 2        # set at the start of the run, reset at its end
    assert signal.getsignal(signal.SIGTSTP) == before


def test_a_local_arrays_program_is_looked_up_on_path_once_not_by_every_task(tmp_path, monkeypatch):
    """Popen given a bare name searched PATH in each child: a failed exec in every directory before
    /usr/bin (nine on a login PATH) for every task of `-- true`. The run looks the name up once and
    starts that file; each task's argv[0] is still what the user typed."""
    plan = _plan(tmp_path, monkeypatch)
    started: list[tuple[str, str | None]] = []
    looked: list[str] = []
    popen, which = subprocess.Popen, shutil.which

    class Recorded(popen):
        def __init__(self, args, *rest, **options) -> None:
            started.append((args[0], options.get("executable")))
            super().__init__(args, *rest, **options)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: (looked.append(name), which(name, *a, **k))[1])
    assert run_local(plan) == 0
    assert started == [("true", which("true"))] * TASKS
    assert looked == ["true"]


def test_the_record_is_what_asdict_made_without_copying_each_value(tmp_path, monkeypatch):
    plan = _plan(tmp_path, monkeypatch, tasks=50)
    assert run_local(plan) == 0
    record = load_record(plan.record_path)
    expected = asdict(record)
    del expected["moved"], expected["unsubmitted"], expected["refused"]   # a whole submission writes neither
    del expected["cluster"]       # nor, on the local cluster, a cluster (records were always so)
    copies = []
    deepcopy = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda value, *a: (copies.append(value), deepcopy(value, *a))[1])
    data = record_json(record)
    assert data == expected and json.dumps(data, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert copies == []
    assert json.loads(Path(plan.record_path).read_text()) == json.loads(json.dumps(expected))


def test_ledger_lines_are_written_as_before(tmp_path, monkeypatch):
    """One compact JSON object a line, keys sorted, ASCII only: what readers and older faces expect."""
    entries = [TaskStart(1, 7, "2026-12-05T17:00:00+00:00", 42, "nodé", 123),
               TaskChild(1, 7, 43, None),
               FinalState(1, 7, "local", 7, "FAILED", 3, None, 0.25, "nodé", reason="its log \u202e",
                          usage={"b": 1, "a": [1.5, None]}, time="t", start="s")]
    kinds = ["start", "child", "final"]
    expected = b"".join((json.dumps({"type": kind, **vars(entry)}, sort_keys=True, separators=(",", ":")) + "\n")
                        .encode() for kind, entry in zip(kinds, entries))
    assert entry_lines(entries) == expected
    plan = _plan(tmp_path, monkeypatch, tasks=3)
    assert run_local(plan) == 0
    lines = [json.loads(line) for line in ledger_path(plan.record_path).read_text().splitlines()]
    assert [line["type"] for line in lines] == ["attempt"] + ["start", "child", "final"] * 3 + ["closed"]
    assert all(line["pid_start"] for line in lines if line["type"] in ("start", "child"))
