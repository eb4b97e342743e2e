"""Attempts: the ledger format, and retries of local runs as a user runs them (no Slurm needed)."""
from __future__ import annotations

import codecs
import json
import re
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TEST_SITE, kill_groups, reaped, retry_at_its_prompt, run_cli, without_rights

from backends.errors import InputError
from backends.records.attempts import (
    FinalState,
    LedgerWriter,
    append_entries,
    entry_lines,
    ledger_path,
    parse_ledger,
    read_ledger,
)
from backends.records.history import load_history
from backends.records.record import JobRecord, SubmitRecord, TaskRecord, save_record

PY = sys.executable
# Fails for the values listed in fail.txt (one per line) beside the working directory.
FLAKY = ("import pathlib, sys; v = sys.argv[1]; print('working on', v); "
         "bad = pathlib.Path('fail.txt').read_text().split() if pathlib.Path('fail.txt').exists() else []; "
         "print('ValueError: bad input', v) if v in bad else None; sys.exit(3 if v in bad else 0)")


def submit_local(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), *args, cwd=cwd, env=env, timeout=120)


def status_json(record: Path, env: dict, *extra: str) -> dict:
    shown = run_cli("hyperion-jobs", "status", str(record), "--json", *extra, env=env)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


# --- the ledger format ------------------------------------------------------------------------

def test_first_final_wins_and_torn_or_foreign_lines_are_skipped(tmp_path: Path) -> None:
    record = tmp_path / "q" / "x.JOB.submit.json"
    first = FinalState(1, 3, "12", 3, "FAILED", 3)
    append_entries(record, [first, FinalState(1, 3, "12", 3, "COMPLETED", 0)])
    with open(ledger_path(record), "ab") as handle:       # a writer killed mid-line, then junk
        handle.write(b'{"type":"final","attempt":1,"value":4,"sta')
    append_entries(record, [FinalState(1, 5, "12", 5, "TIMEOUT")])   # must not glue to the torn line
    with open(ledger_path(record), "ab") as handle:
        handle.write(b'[1, 2]\n{"type":"final","attempt":"x"}\n' + b"x" * 300_000 + b"\n")
    ledger = read_ledger(record)
    assert ledger.finals[(1, 3)] == first
    assert ledger.finals[(1, 5)].state == "TIMEOUT"
    assert (1, 4) not in ledger.finals
    assert ledger.skipped == 4


def test_a_final_line_whose_state_is_no_end_is_damage_not_an_end(tmp_path: Path, cli_env) -> None:
    """A final line saying `FAIL\\u001b[31m[bold]ED` made its task UNKNOWN in status and retry, over
    Slurm's FAILED, and was not counted as damage: nothing said the ledger was wrong."""
    record = tmp_path / "q" / "x.JOB.submit.json"
    kept = FinalState(1, 1, "12", 1, "FAILED", 3)
    append_entries(record, [kept, FinalState(1, 2, "12", 2, "FAIL\x1b[31m[bold]ED", 1),
                            FinalState(1, 3, "12", 3, "RUNNING"), FinalState(1, 4, "12", 4, "")])
    ledger = read_ledger(record)
    assert ledger.finals == {(1, 1): kept} and ledger.skipped == 3
    # as a user sees it: the usual warning, and the task is not UNKNOWN
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/z.JOB.log",
                        "--", "sh", "-c", "exit $((JOB - 1))").returncode == 1
    ours = tmp_path / "log" / "q" / "z.JOB.attempts.jsonl"
    ours.write_bytes(ours.read_bytes().replace(b'"state":"FAILED"', b'"state":"FAIL\\u001b[31m[bold]ED"'))
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / "z.JOB.submit.json"), env=cli_env)
    assert f"warning: 1 line(s) of its ledger {ours} could not be read" in shown.stderr, shown.stderr
    assert "UNKNOWN" not in shown.stdout and "\x1b" not in shown.stdout + shown.stderr, shown.stdout


def test_ledger_lines_with_negative_or_string_ids_are_counted_as_damage(tmp_path: Path, cli_env) -> None:
    """`"value": -1` or `"task_id": "2"` dropped the line without a word: a local run's tasks showed
    NOT_RUN (and a retry ran them again) with no warning that its ledger was damaged."""
    record = tmp_path / "q" / "x.JOB.submit.json"
    kept = FinalState(1, 1, "12", 1, "FAILED", 3)
    append_entries(record, [kept])
    with open(ledger_path(record), "ab") as handle:
        handle.write(b'{"type":"final","attempt":1,"value":-1,"job_id":"12","task_id":1,"state":"FAILED"}\n'
                     b'{"type":"final","attempt":1,"value":2,"job_id":"12","task_id":"2","state":"FAILED"}\n'
                     b'{"type":"final","attempt":1,"value":"3","job_id":"12","task_id":3,"state":"FAILED"}\n'
                     b'{"type":"start","attempt":1,"value":-2,"time":"t"}\n'
                     b'{"type":"child","attempt":1,"value":"2","pid":5}\n'
                     b'{"type":"usage","attempt":1,"value":true,"usage":{"max_rss_bytes":5}}\n')
    ledger = read_ledger(record)
    assert ledger.finals == {(1, 1): kept} and ledger.starts == {} and ledger.children == {}
    assert ledger.skipped == 6
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/z.JOB.log",
                        "--", "true").returncode == 0
    ours = tmp_path / "log" / "q" / "z.JOB.attempts.jsonl"
    ours.write_bytes(ours.read_bytes().replace(b'"value":1', b'"value":-1').replace(b'"task_id":2', b'"task_id":"2"'))
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / "z.JOB.submit.json"), env=cli_env)
    assert shown.returncode == 0 and "line(s) of its ledger" in shown.stderr, shown.stderr
    assert f"warning: 4 line(s) of its ledger {ours} could not be read" in shown.stderr, shown.stderr


def test_ledger_lines_with_ids_of_more_than_19_digits_are_counted_as_damage(tmp_path: Path, cli_env) -> None:
    """A value or task id of 20 digits was read as null (as a negative or string one was before
    0fe3b3b): its line was dropped without a word or, a final one, read as the end of a plain job's
    task (value null). It is one of the 'N line(s) of its ledger ... could not be read'; a long number
    elsewhere (a usage figure) is still read as not said, its line kept."""
    record = tmp_path / "q" / "x.JOB.submit.json"
    kept = FinalState(1, 1, "12", 1, "FAILED", 3)
    append_entries(record, [kept])
    long = b"12345678901234567890"
    with open(ledger_path(record), "ab") as handle:
        handle.write(b'{"type":"final","attempt":1,"value":' + long + b',"job_id":"12","task_id":null,"state":"FAILED"}\n'
                     b'{"type":"final","attempt":1,"value":null,"job_id":"12","task_id":' + long + b',"state":"FAILED"}\n'
                     b'{"type":"start","attempt":1,"value":-' + long + b',"time":"t"}\n'
                     b'{"type":"child","attempt":1,"value":' + long + b',"pid":5}\n'
                     b'{"type":"usage","attempt":1,"value":' + long + b',"usage":{"max_rss_bytes":5}}\n'
                     b'{"type":"final","attempt":1,"value":4,"job_id":"12","task_id":4,"state":"COMPLETED",'
                     b'"exit_code":0,"usage":{"max_rss_bytes":' + long + b'}}\n')
    ledger = read_ledger(record)
    assert ledger.finals == {(1, 1): kept, (1, 4): FinalState(1, 4, "12", 4, "COMPLETED", 0, usage={"max_rss_bytes": None})}
    assert ledger.starts == {} and ledger.children == {} and ledger.skipped == 5
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/z.JOB.log",
                        "--", "true").returncode == 0
    ours = tmp_path / "log" / "q" / "z.JOB.attempts.jsonl"
    ours.write_bytes(ours.read_bytes().replace(b'"value":1}', b'"value":' + long + b'}'))    # start, child, final
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / "z.JOB.submit.json"), env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert f"warning: 3 line(s) of its ledger {ours} could not be read" in shown.stderr, shown.stderr


def test_junk_lines_up_to_the_line_cap_are_counted_without_being_parsed(tmp_path: Path, monkeypatch) -> None:
    """A ledger of tiny junk lines (a Python step each: 14 s per 100 MB) keeps every valid line,
    and what is not a JSON object by its first byte never reaches json.loads."""
    record = tmp_path / "q" / "x.JOB.submit.json"
    first, last = FinalState(1, 3, "12", 3, "FAILED", 3), FinalState(1, 5, "12", 5, "TIMEOUT")
    append_entries(record, [first])
    with open(ledger_path(record), "ab") as handle:
        handle.write(b"xy\n" * 200_000 + b" \t\r\n\n\x0b\n" + b'"type" junk\n' * 1000 + b"[\"type\"]\n"
                     + b"z" * 3_000_000 + b"\n" + b" " * 3_000_000 + b"\n")
    append_entries(record, [last])
    with open(ledger_path(record), "ab") as handle:
        handle.write(codecs.BOM_UTF8 + b'{"type":"closed","attempt":1}\n  ')   # json.loads reads past a BOM
    parsed: list[bytes] = []
    real_loads = json.loads
    monkeypatch.setattr("backends.records.attempts.json.loads",
                        lambda text, **kw: parsed.append(text) or real_loads(text, **kw))
    ledger = read_ledger(record)
    assert ledger.finals == {(1, 3): first, (1, 5): last} and ledger.closed == {1}
    assert ledger.skipped == 200_000 + 1000 + 1 + 1       # blank lines are not problems
    assert len(parsed) == 3


def test_writer_appends_one_line_per_entry(tmp_path: Path) -> None:
    record = tmp_path / "q" / "x.submit.json"
    with LedgerWriter(ledger_path(record)) as writer:
        for value in range(3):
            writer.append(FinalState(1, value, "local", value, "COMPLETED", 0))
    lines = ledger_path(record).read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["type"] == "final" for line in lines)
    assert parse_ledger(b"").attempts == ()


def test_a_fifo_named_like_a_ledger_is_refused_not_waited_on_nor_read_as_empty(tmp_path: Path) -> None:
    """Read as empty, every task the ledger's attempts ran would show as never run."""
    record = tmp_path / "q" / "x.submit.json"
    record.parent.mkdir()
    os.mkfifo(ledger_path(record))
    with pytest.raises(InputError, match="x.attempts.jsonl: a FIFO, not a regular file"):
        read_ledger(record)


def _failed_local_array(root: Path, env: dict) -> Path:
    """A user's first attempt: JOB=1:3 where 2 fails (the run stops there)."""
    done = submit_local(root, env, "--array", "JOB=1:3", "--output-file", "log/t.JOB.log", "--",
                        "sh", "-c", 'echo "first $0"; exit $(( $0 == 2 ))', "JOB")
    assert done.returncode == 1, done.stderr
    return root / "log" / "q" / "t.JOB.submit.json"


def _spoil(q: Path, what: str, keep: Path) -> None:
    lock, ledger = q / "t.JOB.lock", q / "t.JOB.attempts.jsonl"
    if what.startswith("lock"):
        lock.unlink()
    if what.startswith("ledger"):
        keep.write_bytes(ledger.read_bytes())
        ledger.unlink()
    if what == "lock symlink to a file of yours":
        lock.symlink_to(keep)
    elif what == "lock hard link to a file of yours":
        os.link(keep, lock)
    elif what == "lock FIFO":
        os.mkfifo(lock)
    elif what == "ledger FIFO":
        os.mkfifo(ledger)
    elif what == "ledger symlink to /dev/zero":
        ledger.symlink_to("/dev/zero")
    elif what == "ledger symlink to a copy":
        ledger.symlink_to(keep)
    elif what == "ledger directory":
        ledger.mkdir()
    elif what == "attempts/1 a file":
        (q / "attempts" / "1").mkdir(parents=True, exist_ok=True)
        shutil.rmtree(q / "attempts" / "1")
        (q / "attempts" / "1").write_text("not a folder\n")


SPOILS = ["lock symlink to a file of yours", "lock hard link to a file of yours", "lock FIFO", "ledger FIFO",
          "ledger symlink to /dev/zero", "ledger symlink to a copy", "ledger directory", "attempts/1 a file"]


@pytest.mark.parametrize("what", SPOILS)
def test_a_q_file_that_is_not_what_we_wrote_refuses_the_rerun_before_anything_moves(tmp_path, cli_env, what):
    """A rerun writes the lock, the ledger and q/attempts/N: through a symlink it would overwrite
    another file, on a FIFO it would hang, and failing half-way would leave logs moved with nothing
    saying where. Each is refused at once, naming the file, before a log moves or a byte is written."""
    record = _failed_local_array(tmp_path, cli_env)
    keep = tmp_path / "notes.txt"
    keep.write_text("my notes\n")
    _spoil(record.parent, what, keep)
    kept = keep.read_bytes()
    again = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:3",
                    "--output-file", "log/t.JOB.log", "--", "echo", "second", cwd=tmp_path, env=cli_env, timeout=30)
    assert again.returncode == 2, (again.stdout, again.stderr)
    assert again.stderr.count("\n") == 1 and again.stderr.startswith("hyperion-submit: error: --output-file: ")
    assert "Traceback" not in again.stderr
    assert "first 1" in (tmp_path / "log" / "t.1.log").read_text()       # not moved, not rewritten
    assert keep.read_bytes() == kept
    if what.startswith("ledger") or what.startswith("attempts"):
        retried = run_cli("hyperion-jobs", "retry", str(record), "--yes", env=cli_env, timeout=30)
        assert retried.returncode == 2 and retried.stderr.count("\n") == 1, retried.stderr
        assert "first 1" in (tmp_path / "log" / "t.1.log").read_text()


@pytest.mark.parametrize("what", ["ledger FIFO", "ledger symlink to /dev/zero", "ledger directory", "huge",
                                  "countless lines"])
def test_status_of_a_ledger_that_cannot_be_ours_says_so_instead_of_showing_tasks_never_run(tmp_path, cli_env,
                                                                                          what):
    record = _failed_local_array(tmp_path, cli_env)
    if what == "huge":
        os.truncate(ledger_path(record), 1 << 31)      # sparse: no disk used
    elif what == "countless lines":       # under 1 GiB; one of newlines alone took 9 GB to split
        with open(ledger_path(record), "ab") as handle:
            handle.write(b"\n" * (40 << 20))
    else:
        _spoil(record.parent, what, tmp_path / "copy.jsonl")
    shown = run_cli("hyperion-jobs", "status", str(record), env=cli_env, timeout=30)
    assert shown.returncode == 2, shown.stdout
    assert shown.stderr.count("\n") == 1 and "t.JOB.attempts.jsonl" in shown.stderr, shown.stderr
    assert "NOT_RUN" not in shown.stdout


def legacy_local_record(root: Path) -> Path:
    """A local run as hyperion-submit wrote it before attempts existed: record + q/<stem>.local.json."""
    log_dir = root / "log"
    (log_dir / "q").mkdir(parents=True)
    tasks = []
    for value in (1, 2, 3):
        log = log_dir / f"t.{value}.log"
        log.write_text(f"# Running: old {value}\nold output {value}\n")
        tasks.append({"value": value, "job_id": "local", "array_task_id": value, "log": str(log),
                      "slurm_out": None, "slurm_err": None})
    record = log_dir / "q" / "t.JOB.submit.json"
    record.write_text(json.dumps({
        "path": str(record), "backend": "local",
        "argv": ["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:3",
                 "--output-file", str(log_dir / "t.JOB.log"), "--", PY, "-c", FLAKY, "JOB"],
        "cfg": str(TEST_SITE), "options": {
            "num_gpus": 0, "num_threads": 1, "mem": None, "mem_per_cpu": None, "time": None,
            "array": {"name": "JOB", "values": [1, 2, 3]}, "max_jobs_run": None,
            "output_file": str(log_dir / "t.JOB.log"), "command": [PY, "-c", FLAKY, "JOB"], "env": []},
        "script": None, "array_name": "JOB", "jobs": [{"job_id": "local", "offset": 0, "array_expression": "1-3"}],
        "tasks": tasks, "submitted_at": "2026-11-30T10:00:00+00:00", "cwd": str(root)}))
    (log_dir / "q" / "t.JOB.local.json").write_text(json.dumps({"tasks": {
        "1": {"state": "COMPLETED", "exit_code": 0, "start": "2026-11-30T10:00:00", "end": "2026-11-30T10:00:01"},
        "2": {"state": "FAILED", "exit_code": 3, "start": "2026-11-30T10:00:01", "end": "2026-11-30T10:00:02"}}}))
    return record


def test_a_record_written_before_attempts_reads_and_becomes_attempt_one(tmp_path, cli_env) -> None:
    record = legacy_local_record(tmp_path)
    before = status_json(record, cli_env)
    assert [(t["value"], t["state"], t["attempt"]) for t in before["tasks"]] == [
        (1, "COMPLETED", 1), (2, "FAILED", 1), (3, "NOT_RUN", 1)]

    retried = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
    assert retried.returncode == 0, retried.stderr
    after = status_json(record, cli_env)
    assert [(t["value"], t["state"], t["attempt"]) for t in after["tasks"]] == [
        (1, "COMPLETED", 1), (2, "COMPLETED", 2), (3, "COMPLETED", 2)]
    # the old record and the logs the retry replaced are kept under q/attempts/1/
    attempts = tmp_path / "log" / "q" / "attempts" / "1"
    assert json.loads((attempts / "t.JOB.submit.json").read_text())["submitted_at"] == "2026-11-30T10:00:00+00:00"
    assert (attempts / "t.2.log").read_text() == "# Running: old 2\nold output 2\n"
    old = run_cli("hyperion-jobs", "logs", f"{record}:2", "--attempt", "1", env=cli_env)
    assert old.returncode == 0 and "old output 2" in old.stdout
    assert "working on 1" not in (tmp_path / "log" / "t.1.log").read_text()   # value 1 was not rerun


# --- retries of local runs --------------------------------------------------------------------

def test_the_last_line_of_a_failure_is_never_a_line_of_a_multi_line_command(tmp_path, cli_env):
    """A `python -c` over several lines printing nothing: 'last line: sys.exit(3)' 1' was the end of
    the log header's `# Running:` command, not anything the program wrote."""
    script = "import sys\nsys.exit(3)"
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:1", "--output-file", "log/m.JOB.log",
                        "--", PY, "-c", script, "JOB").returncode == 1
    failures = status_json(tmp_path / "log" / "q" / "m.JOB.submit.json", cli_env, "--failures")
    assert [(g["state"], g["exit_code"], g["last_line"]) for g in failures["groups"]] == [("FAILED", 3, "")]


def test_local_retry_reruns_the_failed_and_not_run_values_and_keeps_the_first_logs(tmp_path, cli_env):
    (tmp_path / "fail.txt").write_text("3\n")
    first = submit_local(tmp_path, cli_env, "--array", "JOB=1:5", "--output-file", "log/t.JOB.log",
                         "--", PY, "-c", FLAKY, "JOB")
    assert first.returncode == 1
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    failures = status_json(record, cli_env, "--failures")
    assert [(g["state"], g["exit_code"], g["values"], g["last_line"]) for g in failures["groups"]] == [
        ("NOT_RUN", None, "4-5", ""), ("FAILED", 3, "3", "ValueError: bad input 3")]
    assert failures["groups"][0]["example_log"] is None          # never ran: no file to send the user to

    preview = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", cwd=tmp_path, env=cli_env)
    assert preview.returncode == 0 and "values: 3-5" in preview.stdout and "task JOB=3" in preview.stdout
    assert not (tmp_path / "log" / "q" / "attempts" / "2").exists()       # a dry run writes nothing

    (tmp_path / "fail.txt").write_text("")
    retried = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
    assert retried.returncode == 0, retried.stderr
    shown = status_json(record, cli_env)
    assert [(t["value"], t["state"], t["attempt"]) for t in shown["tasks"]] == [
        (1, "COMPLETED", 1), (2, "COMPLETED", 1), (3, "COMPLETED", 2), (4, "COMPLETED", 2), (5, "COMPLETED", 2)]
    assert shown["exit_status"] == 0
    assert "bad input 3" in (tmp_path / "log" / "q" / "attempts" / "1" / "t.3.log").read_text()
    kept = run_cli("hyperion-jobs", "logs", f"{record}:3", "--attempt", "1", env=cli_env)
    assert kept.returncode == 0 and "bad input 3" in kept.stdout
    # Value 4 never ran in attempt 1: the log at its path is attempt 2's, and is not passed off as 1's.
    never = run_cli("hyperion-jobs", "logs", f"{record}:4", "--attempt", "1", env=cli_env)
    assert never.returncode == 2 and never.stdout == ""
    assert "did not run in attempt 1" in never.stderr and len(never.stderr.splitlines()) == 1
    assert f"({tmp_path / 'log' / 't.4.log'} is a later attempt's)" in never.stderr

    history = run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env)
    attempts = json.loads(history.stdout)["attempts"]
    assert [(a["attempt"], a["kind"], a["tasks"], a["values"]) for a in attempts] == [
        (1, "submit", 5, "1-5"), (2, "retry", 3, "3-5")]
    assert attempts[0]["counts"] == {"COMPLETED": 2, "FAILED": 1, "NOT_RUN": 2}

    nothing = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
    assert nothing.returncode == 0 and "nothing to retry" in nothing.stdout
    assert len(load_history(record).numbers) == 2


def test_history_json_of_a_ledger_whose_overrides_nest_600_deep_prints_them_not_a_traceback(tmp_path, cli_env):
    """A ledger line is read by json.loads up to its nesting limit (near 1000); `history` showed
    overrides nested 600 lists deep, but `history --json` escaped them by recursion, two frames a
    level, and ended in a RecursionError traceback, exit 1."""
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log",
                        "--", "true").returncode == 0
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    ledger = ledger_path(record)
    text = ledger.read_text()
    assert text.count('"overrides":{}') == 1
    ledger.write_text(text.replace('"overrides":{}', '"overrides":{"mem":' + "[" * 600 + "]" * 600 + "}"))
    history = run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env)
    assert history.returncode == 0, history.stderr[-300:]
    assert "Traceback" not in history.stderr
    [attempt] = json.loads(history.stdout)["attempts"]
    nested, depth = attempt["overrides"]["mem"], 1
    while nested:
        nested, depth = nested[0], depth + 1
    assert depth == 600


def test_history_json_of_a_ledger_holding_nan_or_1e999_is_strict_json(tmp_path, cli_env):
    """json.loads reads NaN, Infinity and 1e999 (as inf) in a ledger line; `history --json` wrote an
    attempt's overrides holding them back as bare NaN and Infinity, which jq and every strict JSON
    reader refuse. Read as "not said", as a number of too many digits already was."""
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log",
                        "--", "true").returncode == 0
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    ledger = ledger_path(record)
    text = ledger.read_text()
    assert text.count('"overrides":{}') == 1
    ledger.write_text(text.replace('"overrides":{}', '"overrides":{"mem":NaN,"time":1e999,"x":-Infinity}'))
    history = run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env)
    assert history.returncode == 0, history.stderr[-300:]

    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")

    [attempt] = json.loads(history.stdout, parse_constant=refuse)["attempts"]
    assert attempt["overrides"] == {"mem": None, "time": None, "x": None}


def test_a_ledger_line_in_utf16_holding_1e999_reads_it_as_not_said_too():
    """json reads UTF-16 and UTF-32 as well: the bytes of such a line show no exponent to look for,
    and 1e999 came back as inf past the check that only lines with one pay for (a review)."""
    from backends.records.attempts import _object

    for encoding in ("utf-16-le", "utf-32-le"):
        assert _object('{"mem": 1e999, "n": 2}'.encode(encoding)) == {"mem": None, "n": 2}, encoding
    assert _object(b'{"mem": ' + b"9" * 400 + b'.5, "n": 1.5e3}') == {"mem": None, "n": 1500.0}


def test_a_submission_refused_by_a_running_retry_names_the_retry_not_hyperion_submit(tmp_path, cli_env):
    """Every holder of a pattern was called 'hyperion-submit (pid N)', also a hyperion-jobs retry or
    the console, whose user then looked for a hyperion-submit that was not there."""
    task = ("import pathlib, sys, time; v = sys.argv[1]; "
            "sys.exit(3) if v == '1' and pathlib.Path('fail.txt').exists() else None; "
            "time.sleep(float(pathlib.Path('sleep.txt').read_text())) if v == '2' else None")
    (tmp_path / "fail.txt").write_text("")
    (tmp_path / "sleep.txt").write_text("0")
    first = submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log",
                         "--", PY, "-c", task, "JOB")
    assert first.returncode == 1
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    (tmp_path / "fail.txt").unlink()
    (tmp_path / "sleep.txt").write_text("8")
    retry = subprocess.Popen(["hyperion-jobs", "retry", str(record), "--yes"], cwd=tmp_path, env=cli_env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "running" not in (status_json(record, cli_env)["tasks"][1]["state"].lower()):
            assert time.monotonic() < deadline and retry.poll() is None, retry.communicate()
            time.sleep(0.2)
        refused = submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log",
                               "--", "true")
        assert refused.returncode == 2
        assert refused.stderr == (f"hyperion-submit: error: --output-file: hyperion-jobs (pid {retry.pid} on "
                                  f"{socket.gethostname()}) is submitting or running {tmp_path / 'log' / 't.JOB'} right now; "
                                  "wait for it to end or choose another --output-file\n"), refused.stderr
    finally:
        out, err = retry.communicate(timeout=60)
    assert retry.returncode == 0, err          # the retry was not disturbed


def test_retry_choices_and_overrides_are_checked_before_anything_runs(tmp_path, cli_env):
    (tmp_path / "fail.txt").write_text("2\n")
    submit_local(tmp_path, cli_env, "--array", "JOB=1:3", "--output-file", "log/t.JOB.log",
                 "--", PY, "-c", FLAKY, "JOB")
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    ledger_before = ledger_path(record).read_bytes()
    for args, field in [(["--state", "FIALED"], "--state"), (["--values", "9"], "--values"),
                        (["--values", "3-1"], "--values"), (["--mem", "lots"], "--mem"),
                        (["--num-threads", "0"], "--num-threads"), (["--time", "soon"], "--time"),
                        (["--mem", "1G", "--mem-per-cpu", "1G"], "--mem-per-cpu")]:
        refused = run_cli("hyperion-jobs", "retry", str(record), "--yes", *args, cwd=tmp_path, env=cli_env)
        assert refused.returncode == 2, (args, refused.stderr)
        assert refused.stderr.count("\n") == 1 and field in refused.stderr and "Traceback" not in refused.stderr
    for typed in ("1-x", "3-1", ""):     # quoted back as typed, not in the --array spelling it is read as
        refused = run_cli("hyperion-jobs", "retry", str(record), "--yes", "--values", typed, env=cli_env)
        assert refused.returncode == 2 and (repr(typed) if typed else "empty") in refused.stderr
        assert not typed or typed.replace("-", ":") not in refused.stderr, refused.stderr
    assert ledger_path(record).read_bytes() == ledger_before

    # --values alone reruns the named values whatever their state; --state narrows
    only = run_cli("hyperion-jobs", "retry", str(record), "--values", "1", "--dry-run", env=cli_env)
    assert "values: 1" in only.stdout
    none = run_cli("hyperion-jobs", "retry", str(record), "--state", "TIMEOUT", "--yes", env=cli_env)
    assert none.returncode == 0 and "nothing to retry" in none.stdout
    declined = run_cli("hyperion-jobs", "retry", str(record), input="n\n", cwd=tmp_path, env=cli_env)
    assert declined.returncode == 1 and "Retry 2 task(s)?" in declined.stderr and "not retried" in declined.stderr


def test_retry_of_a_record_edited_to_a_wrong_option_type_names_the_option(tmp_path, cli_env):
    """A record is a file a user may edit: a command given as a string (which used to run as the
    command ``e c h o``) or a float GPU count (used to run with 1) is refused, naming the option."""
    (tmp_path / "fail.txt").write_text("2\n")
    submit_local(tmp_path, cli_env, "--array", "JOB=1:3", "--output-file", "log/t.JOB.log",
                 "--", PY, "-c", FLAKY, "JOB")
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    raw = json.loads(record.read_text())
    ledger_before = ledger_path(record).read_bytes()
    for key, value, says in [("command", "echo", "options.command: expected a non-empty list of strings"),
                             ("num_gpus", 1.5, "options.num_gpus: expected an integer, got 1.5")]:
        record.write_text(json.dumps({**raw, "options": {**raw["options"], key: value}}))
        refused = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith(f"hyperion-jobs: error: record: {record}: {says}")
        assert refused.stderr.count("\n") == 1
    assert ledger_path(record).read_bytes() == ledger_before


def test_two_submissions_to_one_output_at_the_same_instant_exactly_one_proceeds(tmp_path, cli_env):
    argv = ["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
            "--output-file", "log/s.JOB.log", "--", "sleep", "2"]
    runs = [subprocess.Popen(argv, cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    results = sorted((run.wait(timeout=60), run.stderr.read()) for run in runs)
    assert [code for code, _ in results] == [0, 2]
    assert "--output-file" in results[1][1] and "right now" in results[1][1] or "live task" in results[1][1]
    record = tmp_path / "log" / "q" / "s.JOB.submit.json"
    assert load_history(record).numbers == (1,)
    again = submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/s.JOB.log", "--", "true")
    assert again.returncode == 0 and load_history(record).numbers == (1, 2)   # after the end: the next attempt


def _line_of(record: Path, kind: str, attempt: int) -> dict | None:
    """The ledger's first `kind` line of `attempt` (start, child), if written yet."""
    path = ledger_path(record)
    lines = path.read_text().splitlines() if path.exists() else []
    return next((json.loads(line) for line in lines if f'"type":"{kind}"' in line
                 and json.loads(line)["attempt"] == attempt), None)


def test_a_retry_killed_mid_way_leaves_a_readable_history(tmp_path, cli_env):
    # exits 3 while mode.txt says "fail", sleeps while it says "slow", succeeds otherwise
    script = ("import pathlib, sys, time; mode = pathlib.Path('mode.txt').read_text().strip(); "
              "time.sleep(60 if mode == 'slow' else 0); sys.exit(3 if mode == 'fail' else 0)")
    (tmp_path / "mode.txt").write_text("fail")
    submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/k.JOB.log",
                 "--", PY, "-c", script, "JOB")
    record = tmp_path / "log" / "q" / "k.JOB.submit.json"
    (tmp_path / "mode.txt").write_text("slow")
    retry = subprocess.Popen(["hyperion-jobs", "retry", str(record), "--yes"], cwd=tmp_path, env=cli_env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    child = None
    try:
        deadline = time.monotonic() + 30
        while not _line_of(record, "child", 2):
            assert time.monotonic() < deadline, "the retry never started a task"
            time.sleep(0.1)
        child = _line_of(record, "child", 2)["pid"]
        os.killpg(retry.pid, signal.SIGKILL)      # the retry and the task it runs (its own group), at once
        os.killpg(child, signal.SIGKILL)
        retry.wait()
        shown = status_json(record, cli_env)
        assert [(t["value"], t["state"], t["attempt"]) for t in shown["tasks"]] == [
            (1, "LOST", 2), (2, "NOT_RUN", 2)]
        history = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
        assert [a["attempt"] for a in history["attempts"]] == [1, 2] and history["problems"] == []
        (tmp_path / "mode.txt").write_text("ok")
        again = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
        assert again.returncode == 0, again.stderr                       # the lock died with the runner
        assert [(t["attempt"], t["state"]) for t in status_json(record, cli_env)["tasks"]] == [
            (3, "COMPLETED"), (3, "COMPLETED")]
    finally:
        kill_groups(retry.pid, child)


def test_status_of_an_old_slurm_record_without_attempt_fields(tmp_path):
    record = SubmitRecord(str(tmp_path / "q" / "x.JOB.submit.json"), "slurm", ("hyperion-submit",), "site.yaml",
                          {}, None, "JOB", (JobRecord("7", 0, "1-2"),),
                          (TaskRecord(1, "7", 1, "l.1", None, None), TaskRecord(2, "7", 2, "l.2", None, None)),
                          "2026-11-30T10:00:00", str(tmp_path))
    save_record(record)
    raw = json.loads(Path(record.path).read_text())
    for task in raw["tasks"]:
        del task["attempt"]
    del raw["attempt"], raw["kind"]
    Path(record.path).write_text(json.dumps(raw))
    history = load_history(record.path)
    assert history.numbers == (1,) and [t.attempt for t in history.latest_tasks()] == [1, 1]


@pytest.mark.parametrize("text", ["FAILED,timeout", "OOM", "NOT_RUN,LOST"])
def test_state_names_as_slurm_spells_them(text):
    from backends.retry import parse_states
    assert parse_states(text) <= {"FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NOT_RUN", "LOST"}


def test_retry_of_a_record_others_may_write_needs_trust_record(tmp_path, cli_env):
    (tmp_path / "fail.txt").write_text("1\n")
    submit_local(tmp_path, cli_env, "--output-file", "log/t.log", "--", PY, "-c", FLAKY, "1")
    record = tmp_path / "log" / "q" / "t.submit.json"
    record.chmod(0o666)                      # anyone could have changed the command it runs
    ledger_before = ledger_path(record).read_bytes()
    refused = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "may be changed by its group and other users" in refused.stderr
    assert ledger_path(record).read_bytes() == ledger_before
    (tmp_path / "fail.txt").write_text("")
    trusted = run_cli("hyperion-jobs", "retry", str(record), "--yes", "--trust-record", cwd=tmp_path, env=cli_env)
    assert trusted.returncode == 0, trusted.stderr


def test_usage_learnt_after_the_end_is_kept_with_the_final_state(tmp_path: Path) -> None:
    from backends.states import JobState, TaskState
    from backends.watch.finals import FinalsRecorder
    from backends.watch.usage import Usage

    record = tmp_path / "q" / "u.JOB.submit.json"
    task = TaskRecord(3, "12", 3, "log.3", None, None, 1)
    recorder = FinalsRecorder(str(record), [task])
    ended = TaskState("12", 3, JobState.OUT_OF_MEMORY, 0, 125)
    recorder.observe([ended])                                  # the controller says it ended...
    assert read_ledger(record).finals[(1, 3)].usage is None
    used = Usage(max_rss_bytes=104_000_000, req_mem_bytes=100 * 1024 ** 2, alloc_cpus=1)
    recorder.observe([ended], {("12", 3): used})               # ...accounting tells what it used
    recorder.observe([ended], {("12", 3): used})               # the same again writes nothing
    ledger = read_ledger(record)
    assert ledger.finals[(1, 3)].state == "OUT_OF_MEMORY"
    assert ledger.finals[(1, 3)].usage["max_rss_bytes"] == 104_000_000
    assert len(ledger_path(record).read_text().splitlines()) == 2


def test_a_recorder_says_where_its_own_write_left_the_ledger_only_when_nothing_else_came_between(
        tmp_path: Path) -> None:
    """The console's Retry tab takes its ask's own write of the ends it learned as known, not as news
    to ask Slurm about again (`FinalsRecorder.known_to`): only when nothing another face wrote lies
    between the ledger it read and that write; such an end is news the ask may not know."""
    from backends.records.attempts import ledger_size
    from backends.states import JobState, TaskState
    from backends.watch.finals import FinalsRecorder

    record = tmp_path / "q" / "u.JOB.submit.json"
    append_entries(record, [FinalState(1, 1, "12", 1, "COMPLETED", 0)])
    tasks = [TaskRecord(v, "12", v, f"log.{v}", None, None, 1) for v in (3, 4, 5)]
    alone = FinalsRecorder(str(record), tasks, since=ledger_size(record))
    alone.observe([TaskState("12", 3, JobState.RUNNING)])
    assert alone.known_to is None                                  # nothing written
    alone.observe([TaskState("12", 3, JobState.FAILED, 1)])
    assert alone.known_to == ledger_size(record)
    crossed = FinalsRecorder(str(record), tasks, since=ledger_size(record))
    append_entries(record, [FinalState(1, 5, "12", 5, "COMPLETED", 0)])     # another face, meanwhile
    crossed.observe([TaskState("12", 4, JobState.FAILED, 1)])
    assert read_ledger(record).finals[(1, 4)].state == "FAILED" and crossed.known_to is None


def test_history_shows_a_changed_command_and_environment_as_typed(tmp_path, cli_env):
    """The CHANGED column of a resubmission: the command as a shell line, --env as NAME=VALUE, not JSON."""
    assert submit_local(tmp_path, cli_env, "--env", "A=1", "--output-file", "log/h.log", "--", "true").returncode == 0
    again = submit_local(tmp_path, cli_env, "--env", "A=2", "--env", "B=x y", "--output-file", "log/h.log",
                         "--", "echo", "two words")
    assert again.returncode == 0, again.stderr
    table = run_cli("hyperion-jobs", "history", str(tmp_path / "log" / "q" / "h.submit.json"), env=cli_env)
    assert table.returncode == 0, table.stderr
    last = table.stdout.splitlines()[-1]
    assert last.endswith("command=echo 'two words' env=A=2,B=x y"), last
    assert "[[" not in table.stdout


def test_json_of_a_run_in_a_folder_not_named_in_utf8_is_utf8_json(tmp_path: Path, cli_env: dict) -> None:
    """A run's folder renamed with byte 0xe9: every hyperion-jobs --json spelled it "\\udce9", a lone
    surrogate that strict JSON readers refuse and that fails to re-encode. It is now spelled \\xe9,
    as the terminal shows it."""
    work = tmp_path / "run"
    work.mkdir()
    assert submit_local(work, cli_env, "--array", "JOB=1:2", "--output-file", "log/a.JOB.log", "--",
                        "sh", "-c", "exit $(( JOB - 1 ))").returncode == 1
    moved = Path(os.fsdecode(os.fsencode(tmp_path) + b"/run\xe9"))
    work.rename(moved)
    record = str(moved / "log/q/a.JOB.submit.json")
    for argv in (["status", record], ["status", record, "--failures"], ["history", record], ["usage", record],
                 ["list", str(moved)]):
        shown = run_cli("hyperion-jobs", *argv, "--json", env=cli_env)
        assert shown.returncode in (0, 1), (argv, shown.stderr)
        data = json.loads(shown.stdout)
        json.dumps(data, ensure_ascii=False).encode("utf-8")       # raises on a surrogate anywhere
        assert f"{tmp_path}/run\\\\xe9/log/" in shown.stdout, argv      # JSON's spelling of \\xe9


# --- other patterns writing the same log files ------------------------------------------------------

def _wait_for_line(path: Path, kind: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and f'"type":"{kind}"' in path.read_text()):
        assert time.monotonic() < deadline, f"no {kind} line in {path}"
        time.sleep(0.1)


@pytest.mark.parametrize("array_log,single_log", [("log/c.JOB.log", "log/c.2.log"),      # NAME in the name
                                                  ("log/JOB/c.log", "log/2/c.log"),     # NAME in the folder
                                                  ("exp/JOB/log/c.log", "exp/2/log/c.log"),   # further up
                                                  ("exp/JOB/v2/c.log", "exp/2/v2/c.log"),   # a digit below it
                                                  ("log/1JOB/c.log", "log/12/c.log"),   # after a digit
                                                  ("real/c.JOB.log", "link/c.2.log")])  # a linked folder
def test_a_log_a_running_local_array_has_still_to_write_is_not_taken_by_another_pattern(
        tmp_path, cli_env, array_log, single_log):
    """Task 2 waits its turn behind task 1: `--output-file log/c.2.log` would write its log first, and the
    array would then truncate it. Refused while the array runs; afterwards the array's log is kept."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                               "--output-file", array_log, "--", "bash", "-c", "echo array; sleep 3"],
                              cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    q = tmp_path / os.path.dirname(array_log) / "q"
    try:
        _wait_for_line(q / "c.attempts.jsonl" if "JOB/" in array_log else q / "c.JOB.attempts.jsonl", "child")
        refused = submit_local(tmp_path, cli_env, "--output-file", single_log, "--", "echo", "single")
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert f"{tmp_path / single_log} is also a log of " in refused.stderr
        assert "whose task is still live (local 2)" in refused.stderr
    finally:
        runner.wait(timeout=60)
    assert runner.returncode == 0, runner.stderr
    assert (tmp_path / single_log).read_text().count("array") >= 1        # the array's own log, untouched
    after = submit_local(tmp_path, cli_env, "--output-file", single_log, "--", "echo", "single")
    assert after.returncode == 0, after.stderr
    assert "single" in (tmp_path / single_log).read_text()


def test_names_decide_cheaply_which_other_records_could_write_our_logs():
    from backends.attempt import could_share_logs

    assert could_share_logs("c.JOB", "c.1", None)               # task 1 of c.JOB writes c.1.log
    assert could_share_logs("c.1", "c.JOB", "JOB")              # and the other way round
    assert could_share_logs("x.IDX", "x.JOB", "JOB")            # another NAME, the same files
    assert could_share_logs("c", "c", None)                     # NAME only in the folder
    assert could_share_logs("x.12", "x.JOB", "JOB")             # a plain log that task 12 would write
    assert not could_share_logs("c.1", "c.2", None)
    assert not could_share_logs("a.JOB", "z.JOB", "JOB")
    assert not could_share_logs("x", "x.JOB", "JOB")
    assert not could_share_logs("r1.JOB", "r.JOB", "JOB")


def test_a_hostile_child_line_neither_crashes_status_nor_a_submission(tmp_path, cli_env):
    """A pid beyond C's int in the ledger (os.kill would raise OverflowError) judges no process."""
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/c.JOB.log",
                        "--", "true").returncode == 0
    ledger = tmp_path / "log" / "q" / "c.JOB.attempts.jsonl"
    kept = [line for line in ledger.read_text().splitlines() if '"final"' not in line and '"closed"' not in line]
    kept += ['{"type":"start","attempt":1,"value":1,"time":"x","pid":%d,"host":"%s","pid_start":5}'
             % (2 ** 70, socket.gethostname()),
             '{"type":"child","attempt":1,"value":1,"pid":%d,"pid_start":5}' % 2 ** 70]
    ledger.write_text("\n".join(kept) + "\n")
    record = tmp_path / "log" / "q" / "c.JOB.submit.json"
    status = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    for argv in (["--output-file", "log/c.1.log"], ["--array", "JOB=1:2", "--output-file", "log/c.JOB.log"]):
        other = submit_local(tmp_path, cli_env, *argv, "--", "true")
        assert "Traceback" not in other.stderr and other.returncode in (0, 2), other.stderr


@pytest.mark.parametrize("edit", ['"elapsed":Infinity', '"usage":{"max_rss_bytes":NaN,"cpu_seconds":Infinity}'])
def test_infinity_or_nan_in_a_final_line_shows_as_unknown(tmp_path, cli_env, edit):
    """json reads Infinity and NaN: int() of them made status, history, usage and list trace back."""
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/n.JOB.log",
                        "--", "true").returncode == 0
    ledger = tmp_path / "log" / "q" / "n.JOB.attempts.jsonl"
    lines = ledger.read_text().splitlines()
    final = next(i for i, line in enumerate(lines)
                 if json.loads(line).get("type") == "final" and json.loads(line).get("value") == 1)
    data = json.loads(lines[final])
    key = edit.split(":")[0].strip('"')
    data.pop(key, None)
    lines[final] = json.dumps(data)[:-1] + "," + edit + "}"
    ledger.write_text("\n".join(lines) + "\n")
    record = str(tmp_path / "log" / "q" / "n.JOB.submit.json")
    for argv in (["status", record], ["history", record], ["usage", record], ["list", str(tmp_path)]):
        result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
        assert result.returncode == 0 and "Traceback" not in result.stderr, (argv, result.stderr)
    status = run_cli("hyperion-jobs", "status", record, "--json", env=cli_env, timeout=60)
    assert [task["state"] for task in json.loads(status.stdout)["tasks"]] == ["COMPLETED", "COMPLETED"]


def test_a_ledger_line_nested_too_deep_or_naming_a_nul_path_is_skipped_like_a_torn_one(tmp_path, cli_env):
    """100000 '[' fit in a ledger line: json's RecursionError made every command of the record, `list`
    of its tree and the next submission to its pattern trace back (the last after taking the lock).
    A moved log's path holding a NUL made `status --failures` and `logs --raw` trace back, one holding a lone
    surrogate (no byte stands for it) `logs` too."""
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/d.JOB.log",
                        "--", "true").returncode == 0
    ledger = tmp_path / "log" / "q" / "d.JOB.attempts.jsonl"
    with ledger.open("a") as handle:
        handle.write("[" * 100_000 + "\n")
        handle.write('{"type":"moved","attempt":1,"value":1,"what":"log","source":"/x","target":"/tmp/a\\u0000b"}\n')
        handle.write('{"type":"moved","attempt":1,"value":2,"what":"log","source":"/x","target":"/tmp/a\\ud800b"}\n')
    record = str(tmp_path / "log" / "q" / "d.JOB.submit.json")
    for argv in (["status", record], ["status", record, "--failures"], ["history", record], ["usage", record],
                 ["logs", f"{record}:1"], ["logs", f"{record}:1", "--raw"], ["logs", f"{record}:2"],
                 ["retry", record, "--dry-run"], ["list", str(tmp_path)]):
        result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
        assert "Traceback" not in result.stderr and result.returncode in (0, 1), (argv, result.stderr)
    assert [t["state"] for t in status_json(Path(record), cli_env)["tasks"]] == ["COMPLETED", "COMPLETED"]
    again = submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/d.JOB.log", "--", "true")
    assert again.returncode == 0, again.stderr


def test_a_local_retry_of_one_value_names_it_in_its_rerun_line(tmp_path, cli_env):
    """Value 2 of a local array failed (3-4 never ran); `retry --values 2` failed again and named
    `hyperion-jobs retry RECORD`, which would run 3-4 too."""
    fails = "import sys; sys.exit(1 if sys.argv[1] == '2' else 0)"
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:4", "--output-file", "log/l.JOB.log",
                        "--", PY, "-c", fails, "JOB").returncode == 1
    record = tmp_path / "log" / "q" / "l.JOB.submit.json"
    retried = run_cli("hyperion-jobs", "retry", str(record), "--values", "2", "--yes", cwd=tmp_path, env=cli_env)
    assert retried.returncode == 1
    assert retried.stderr.splitlines()[-1] == (f"hyperion-submit: rerun JOB=2 with: hyperion-jobs retry {record} "
                                               "--values 2"), retried.stderr


def test_a_damaged_ledger_line_is_said_by_status_retry_and_watch_not_a_line_being_written(tmp_path, cli_env):
    """A byte flipped on disk in the line recording task 2's end: `status` showed 2 as LOST and
    `retry` planned to run it again, and nothing but `history` said a line was unreadable. A last
    line without its newline (a writer in the middle of it) is no damage and is not said."""
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:3", "--output-file", "log/d.JOB.log",
                        "--", "true").returncode == 0
    ledger = tmp_path / "log" / "q" / "d.JOB.attempts.jsonl"
    record = str(tmp_path / "log" / "q" / "d.JOB.submit.json")
    lines = ledger.read_bytes().split(b"\n")
    end = next(i for i, line in enumerate(lines) if b'"final"' in line and b'"value": 2' in line.replace(b'":2', b'": 2'))
    lines[end] = lines[end].replace(b'"final"', b'"fin\xffal"')
    ledger.write_bytes(b"\n".join(lines))
    said = f"hyperion-jobs: warning: 1 line(s) of its ledger {ledger} could not be read (damaged, cut short, or "
    for argv in (["status", record], ["retry", record, "--dry-run"], ["watch", record]):
        result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
        assert "Traceback" not in result.stderr and said in result.stderr, (argv, result.stderr)
        assert result.stderr.count("could not be read") == 1
    assert "values: 2" in run_cli("hyperion-jobs", "retry", record, "--dry-run", env=cli_env).stdout

    ledger.write_bytes(b"\n".join(lines[:end] + lines[end + 1:]) + b'{"type":"start","attempt":1,"val')
    result = run_cli("hyperion-jobs", "status", record, env=cli_env)
    assert result.returncode == 0 and "could not be read" not in result.stderr, result.stderr


def test_a_ledger_whose_end_a_crash_zeroed_says_so_rather_than_showing_its_tasks_never_ran(tmp_path, cli_env):
    """A crash can leave the end of a file it was writing as NUL bytes (delayed allocation), and a
    hostile ledger can end in a 300 MB run of them or a line of 100000 '[': a last line without its
    newline was taken for a line being written, so the ends it hid were lost without a word (`status`
    showed the values NOT_RUN and `retry` planned to run them again, also the ones that completed).
    Only a line hyperion writes ('{' first) may be one being written."""
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:3", "--output-file", "log/z.JOB.log",
                        "--", "true").returncode == 0
    ledger = tmp_path / "log" / "q" / "z.JOB.attempts.jsonl"
    record = str(tmp_path / "log" / "q" / "z.JOB.submit.json")
    original = ledger.read_bytes()
    said = f"hyperion-jobs: warning: 1 line(s) of its ledger {ledger} could not be read (damaged, cut short, or "
    first_start = original.index(b'"type":"start"')
    kept = original[:original.rfind(b"\n", 0, first_start) + 1]       # the attempt line alone
    for tail in (b"\0" * (len(original) - len(kept)), b"[" * 100000 + b"]" * 100000):
        ledger.write_bytes(kept + tail)
        if tail.startswith(b"\0"):
            with open(ledger, "r+b") as handle:          # and a sparse run of NULs far past MAX_LINE
                handle.truncate(300 * 1024 * 1024)
        for argv in (["status", record], ["retry", record, "--dry-run"]):
            result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
            assert "Traceback" not in result.stderr and said in result.stderr, (argv, result.stderr)
            assert result.stderr.count("could not be read") == 1, result.stderr
    ledger.write_bytes(kept + b'{"type":"start","attempt":1,"val')   # a line being written: said not
    result = run_cli("hyperion-jobs", "status", record, env=cli_env)
    assert result.returncode == 0 and "could not be read" not in result.stderr, result.stderr


@pytest.mark.parametrize("state,flag,figures,proposed", [
    ("OUT_OF_MEMORY", "--mem", '"max_rss_bytes":1%s,"req_mem_bytes":-1' % ("0" * 400), "--mem 200M"),
    ("TIMEOUT", "--time", '"elapsed_seconds":1e300,"time_limit_seconds":-5', "--time 00:20:00"),
], ids=["mem", "time"])
def test_usage_figures_out_of_range_are_not_said_and_a_retry_does_not_shrink(tmp_path, cli_env, state, flag,
                                                                             figures, proposed):
    """A 400-digit MaxRSS made status, usage and `retry --mem auto` trace back (float() of it), and a
    negative limit made the retry offer `--mem 1M` / `--time 1` for a task that ran out of 100M / 10 min."""
    fails = "import sys; sys.exit(1 if sys.argv[1] == '3' else 0)"
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:3", "--output-file", "log/u.JOB.log",
                        "--", PY, "-c", fails, "JOB").returncode == 1
    ledger = tmp_path / "log" / "q" / "u.JOB.attempts.jsonl"
    text = ledger.read_text().replace('"exit_code":1,', '"exit_code":null,').replace('"FAILED"', f'"{state}"')
    ledger.write_text(text + '{"type":"usage","attempt":1,"value":3,"usage":{%s}}\n' % figures)
    record = str(tmp_path / "log" / "q" / "u.JOB.submit.json")
    for argv in (["status", record], ["status", record, "--json"], ["usage", record], ["list", str(tmp_path)]):
        result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
        assert "Traceback" not in result.stderr and result.returncode in (0, 1), (argv, result.stderr)
    retry = run_cli("hyperion-jobs", "retry", record, "--dry-run", flag, "auto", env=cli_env, timeout=60)
    assert retry.returncode == 0, retry.stderr
    assert f"sizes: {proposed}: 1 task(s) {state}" in retry.stdout, retry.stdout
    assert f" {proposed} " in retry.stdout.split("command: ")[1], retry.stdout   # the value it runs with


def test_a_forged_child_line_never_names_another_users_process_group_to_kill(tmp_path, cli_env):
    """A teammate's ledger (one you may read, not write) named a group of yours (a shell, tmux) as
    its task's: status said it 'runs on as process group N', retry advised `kill -- -N`."""
    from backends.records.runner import process_start

    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:3", "--output-file", "log/f.JOB.log",
                        "--", "true").returncode == 0
    ledger = tmp_path / "log" / "q" / "f.JOB.attempts.jsonl"
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        def dropped(line: str) -> bool:   # task 3 started, never ended, its runner gone
            entry = json.loads(line)
            return entry.get("type") == "closed" or entry.get("type") in ("final", "child") \
                and entry.get("value") == 3

        kept = [line for line in ledger.read_text().splitlines() if not dropped(line)]
        kept.append(json.dumps({"type": "child", "attempt": 1, "value": 3, "pid": victim.pid,
                                "pid_start": process_start(victim.pid)}))
        ledger.write_text("\n".join(kept) + "\n")
        os.chown(ledger, 65534, 65534)         # the teammate's file; the sleep is ours
        status = run_cli("hyperion-jobs", "status", str(ledger.with_name("f.JOB.submit.json")), "--json",
                         env=cli_env)
        rows = {task["value"]: task for task in json.loads(status.stdout)["tasks"]}
        # never named (its digits may turn up inside a float, e.g. an elapsed time: not a name)
        named = re.compile(rf"(?<![\d.]){victim.pid}(?![\d.])")
        assert rows[3]["state"] == "LOST" and not named.search(status.stdout), rows[3]
        os.chown(ledger, os.getuid(), os.getgid())   # our own ledger: our own group is its task
        status = run_cli("hyperion-jobs", "status", str(ledger.with_name("f.JOB.submit.json")), "--json",
                         env=cli_env)
        rows = {task["value"]: task for task in json.loads(status.stdout)["tasks"]}
        assert rows[3]["state"] == "RUNNING" and str(victim.pid) in rows[3]["reason"], rows[3]
    finally:
        victim.kill()
        victim.wait()


def test_a_retry_never_reruns_values_with_a_command_they_did_not_run(tmp_path, cli_env):
    """After `JOB=1:4 -- sh -c 'exit 3'` and a new `JOB=1:2 -- true` on the same pattern, a retry of
    values 3-4 (never reached by the first run) planned them with `true`, a command they never ran."""
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:4", "--output-file", "log/r.JOB.log", "--",
                        "sh", "-c", "exit 3").returncode == 1
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/r.JOB.log", "--",
                        "true").returncode == 0
    record = str(tmp_path / "log" / "q" / "r.JOB.submit.json")
    retry = run_cli("hyperion-jobs", "retry", record, "--yes", cwd=tmp_path, env=cli_env)
    assert retry.returncode == 2 and retry.stderr.count("\n") == 1, retry.stderr
    assert (f"values 3-4 last ran `sh -c 'exit 3'` in {tmp_path} (local) (attempt 1), not `true` in "
            f"{tmp_path} (local) as the newest attempt") in retry.stderr
    assert "--values" in retry.stderr
    history = run_cli("hyperion-jobs", "history", record, env=cli_env)
    assert len([line for line in history.stdout.splitlines() if line[:1].isdigit()]) == 2   # nothing ran


def _refuses_rerun(record: str, where: Path, env: dict) -> None:
    before = sorted(where.rglob("*"))
    retry = run_cli("hyperion-jobs", "retry", record, "--values", "1", "--yes", cwd=where, env=env)
    assert retry.returncode == 2 and "was written under " in retry.stderr, retry.stderr
    assert "rerun from there, or submit anew" in retry.stderr
    assert sorted(where.rglob("*")) == before


def test_a_moved_or_copied_experiment_is_read_where_it_is_now(tmp_path, cli_env):
    """`mv exp exp_old`: status said 'cannot read .../exp/log/q/...' of the path the record was written
    at; a copy kept before a rerun showed the rerun's job and logs, and list showed it twice."""
    run = tmp_path / "run"
    run.mkdir()
    for word in ("first", "second"):
        assert submit_local(run, cli_env, "--array", "JOB=1:2", "--output-file", "exp/log/a.JOB.log", "--",
                            "sh", "-c", f"echo {word} JOB").returncode == 0
    moved = tmp_path / "moved"
    run.rename(moved)
    record = str(moved / "exp" / "log" / "q" / "a.JOB.submit.json")
    status = status_json(Path(record), cli_env)
    assert [t["log"] for t in status["tasks"]] == [str(moved / f"exp/log/a.{v}.log") for v in (1, 2)]
    assert "first 1" in run_cli("hyperion-jobs", "logs", f"{record}:1", "--attempt", "1", env=cli_env).stdout
    _refuses_rerun(record, moved, cli_env)    # it would write the old folder: run/exp/log
    assert not run.exists()
    shutil.copytree(moved / "exp" / "log", moved / "before")
    assert submit_local(moved, cli_env, "--array", "JOB=1:2", "--output-file", "exp/log/a.JOB.log", "--",
                        "sh", "-c", "echo third JOB").returncode == 0
    copy = str(moved / "before" / "q" / "a.JOB.submit.json")
    assert "second 1" in run_cli("hyperion-jobs", "logs", f"{copy}:1", env=cli_env).stdout
    assert [e["attempt"] for e in status_json(Path(copy), cli_env)["tasks"]] == [2, 2]
    listed = json.loads(run_cli("hyperion-jobs", "list", str(moved), "--json", env=cli_env).stdout)
    assert sorted(r["record"] for r in listed["records"]) == sorted([copy, record])
    _refuses_rerun(copy, moved, cli_env)      # it would rerun exp/log's pattern as another history's attempt


def test_a_live_run_in_a_ledger_another_user_created_stays_running_and_holds_the_pattern(tmp_path, cli_env):
    """A shared folder: the ledger stays owned by whoever created it. The first owner check showed a
    running task of another user's ledger as LOST, its successor NOT_RUN, and planned their retry."""
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                               "--output-file", "log/s.JOB.log", "--", "sleep", "30"], cwd=tmp_path, env=cli_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        ledger = tmp_path / "log" / "q" / "s.JOB.attempts.jsonl"
        _wait_for_line(ledger, "child")
        os.chown(ledger, 65534, 65534)
        record = ledger.with_name("s.JOB.submit.json")
        shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
        assert [t["state"] for t in shown["tasks"]] == ["RUNNING", "PENDING"]
        retry = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", cwd=tmp_path, env=cli_env)
        assert retry.returncode == 2 and "still has 2 live task(s)" in retry.stderr, retry.stderr
        assert retry.stderr.rstrip().endswith(f"(hyperion-jobs watch {record}) or stop them first"), retry.stderr
    finally:
        kill_groups(runner.pid)
        runner.wait()


def test_a_single_local_task_whose_runner_was_killed_is_named_with_the_way_to_end_it(tmp_path, cli_env):
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file", "log/one.log",
                               "--", "sleep", "60"], cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    child = None
    try:
        _wait_for_line(tmp_path / "log" / "q" / "one.attempts.jsonl", "child")
        child = next(json.loads(line)["pid"] for line in (tmp_path / "log" / "q" / "one.attempts.jsonl")
                     .read_text().splitlines() if '"child"' in line)
        runner.kill()
        runner.wait()
        again = submit_local(tmp_path, cli_env, "--output-file", "log/one.log", "--", "true")
        assert again.returncode == 2, again.stderr
        assert f"(local task, whose runner was killed: kill -- -{child} ends it)" in again.stderr
        assert "or stop them before" in again.stderr and "hyperion-jobs cancel" not in again.stderr
        retry = run_cli("hyperion-jobs", "retry", str(tmp_path / "log" / "q" / "one.submit.json"), "--yes",
                        cwd=tmp_path, env=cli_env)
        assert retry.returncode == 2
        assert f"task: its runner was killed; it runs on as process group {child}" in retry.stderr
        assert "kill -- -GROUP ends it" in retry.stderr and "stop them first" in retry.stderr
    finally:
        kill_groups(runner.pid, child)


def _log(record: Path, env: dict, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("hyperion-jobs", "logs", str(record), *extra, env=env)


def test_a_log_two_patterns_share_joins_the_history_of_the_run_that_wrote_it(tmp_path, cli_env):
    """log/t.JOB.log and log/t.1.log name one file. Each run moves the file it would overwrite into the
    history of the attempt that wrote it: before, the array's second run filed the single run's log as its
    own attempt 1, and the single run's record said it had no log."""
    args = ("--array", "JOB=1:2", "--output-file", "log/t.JOB.log", "--", "echo")
    assert submit_local(tmp_path, cli_env, *args, "array run 1, value", "JOB").returncode == 0
    assert submit_local(tmp_path, cli_env, "--output-file", "log/t.1.log", "--", "echo", "single run").returncode == 0
    assert submit_local(tmp_path, cli_env, *args, "array run 2, value", "JOB").returncode == 0
    array, single = tmp_path / "log" / "q" / "t.JOB.submit.json", tmp_path / "log" / "q" / "t.1.submit.json"
    assert "array run 1, value 1" in _log(Path(f"{array}:1"), cli_env, "--attempt", "1").stdout
    assert "single run" in _log(single, cli_env).stdout
    assert "array run 2, value 1" in _log(Path(f"{array}:1"), cli_env).stdout


def test_a_value_an_attempt_never_ran_is_not_given_another_runs_log(tmp_path, cli_env):
    """The array stopped at value 1, a single run then wrote log/t.2.log, the retry reran 1-2: value 2 of
    attempt 1 still has no log, and the single run's log stays its own."""
    done = submit_local(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log", "--",
                        "sh", "-c", "echo array $0; exit $(( $0 == 1 ))", "JOB")
    assert done.returncode == 1
    assert submit_local(tmp_path, cli_env, "--output-file", "log/t.2.log", "--", "echo", "single run").returncode == 0
    array, single = tmp_path / "log" / "q" / "t.JOB.submit.json", tmp_path / "log" / "q" / "t.2.submit.json"
    assert run_cli("hyperion-jobs", "retry", str(array), "--yes", env=cli_env).returncode == 1
    never = _log(Path(f"{array}:2"), cli_env, "--attempt", "1")
    assert never.returncode == 2 and "did not run in attempt 1" in never.stderr
    assert "single run" in _log(single, cli_env).stdout


def test_a_shared_log_whose_writers_history_may_not_be_written_stays_with_this_run(rightless_dir, cli_env):
    """A teammate's array wrote log/t.1.log and their ledger is read-only to us: the single run keeps the
    file in its own history (as before shared logs joined their writer's) instead of moving it into theirs
    and failing before saying where it went."""
    root = rightless_dir
    assert submit_local(root, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log", "--",
                        "echo", "theirs", "JOB").returncode == 0
    theirs = ledger_path(root / "log" / "q" / "t.JOB.submit.json")
    theirs.chmod(0o444)
    before = theirs.read_bytes()
    single = run_cli(*without_rights("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file",
                                     "log/t.1.log", "--", "echo", "mine"), cwd=root, env=cli_env)
    assert single.returncode == 0, single.stderr
    assert theirs.read_bytes() == before
    history = load_history(root / "log" / "q" / "t.1.submit.json")
    [moved] = history.ledger.moved.values()
    assert "theirs 1" in Path(moved.target).read_text()


@pytest.mark.parametrize("what", ["ledger", "attempts folder"])
def test_a_rerun_whose_history_you_may_not_write_is_refused_before_anything_moves(rightless_dir, cli_env, what):
    """A read-only ledger (a teammate's run, a read-only copy): the rerun moved every log, then traced
    back writing the ledger line that says where they went, leaving them in q/attempts/ unrecorded."""
    root = rightless_dir
    record = _failed_local_array(root, cli_env)
    assert submit_local(root, cli_env, "--array", "JOB=1:3", "--output-file", "log/t.JOB.log", "--",
                        "true").returncode == 0                    # attempt 2: q/attempts/1/ exists now
    spoilt = ledger_path(record) if what == "ledger" else record.parent / "attempts"
    spoilt.chmod(0o444 if what == "ledger" else 0o555)
    def files() -> list:                  # the lock aside: it names whoever took it last
        return sorted((p.relative_to(root), p.read_bytes() if p.is_file() else None)
                      for p in root.rglob("*") if p.suffix != ".lock")
    before = files()
    for argv in (["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:3", "--output-file",
                  "log/t.JOB.log", "--", "true"], ["hyperion-jobs", "retry", str(record), "--values", "1-3", "--yes"]):
        refused = run_cli(*without_rights(*argv), cwd=root, env=cli_env)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "cannot be written by you" in refused.stderr and "Traceback" not in refused.stderr
        assert files() == before


def test_each_log_moved_aside_is_in_the_ledger_as_soon_as_it_moved(tmp_path, cli_env):
    """The ledger lines were written once all the logs had moved: a Ctrl-C, a kill or a failing move
    in between (here the third) left the first ones in q/attempts/1/ with nothing saying whose."""
    from backends.attempt import PlannedMove, move_aside

    record = _failed_local_array(tmp_path, cli_env)
    logs = [tmp_path / "log" / f"t.{value}.log" for value in (1, 2, 3)]    # t.3.log was never written
    moves = [PlannedMove(str(log), str(record), 1, value, "log", log.name) for value, log in enumerate(logs, 1)]
    with pytest.raises(FileNotFoundError):
        move_aside(moves)
    history = load_history(record)
    assert sorted((m.value, Path(m.target).read_text().splitlines()[2]) for m in history.ledger.moved.values()) \
        == [(1, "first 1"), (2, "first 2")]
    shown = run_cli("hyperion-jobs", "logs", f"{record}:2", "--attempt", "1", env=cli_env)
    assert shown.returncode == 0 and "first 2" in shown.stdout, shown.stderr


# A rerun killed (SIGKILL) once its first log was moved aside and before the ledger line saying so.
_KILLED_AFTER_MOVE = """
import os, signal, sys
from backends.attempt import LedgerWriter
from backends.cli.submit import main
from backends.records.attempts import MovedFile
real = LedgerWriter.append
def append(self, *entries):
    if any(isinstance(e, MovedFile) for e in entries):
        os.kill(os.getpid(), signal.SIGKILL)
    real(self, *entries)
LedgerWriter.append = append
sys.argv = ["hyperion-submit", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("output", ["log/t.JOB.log", "log/JOB/t.log"])
def test_a_log_moved_aside_by_a_rerun_killed_before_its_ledger_line_is_still_found(tmp_path, cli_env, output):
    """SIGKILL between moving attempt 1's log into q/attempts/1/ and the `moved` line: `logs --attempt 1`
    looked at log/t.1.log (gone, then the next attempt's) and said attempt 1 had no log there."""
    def run(word: str) -> tuple[str, ...]:
        return ("--array", "JOB=1:2", "--output-file", output, "--", "sh", "-c", f'echo "{word} $0"', "JOB")
    assert submit_local(tmp_path, cli_env, *run("first")).returncode == 0
    record = next((tmp_path / "log").rglob("*.submit.json"))
    killed = subprocess.run([PY, "-c", _KILLED_AFTER_MOVE, "local", "--cfg", str(TEST_SITE), *run("second")],
                            cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (tmp_path / output.replace("JOB", "1")).exists() and not load_history(record).ledger.moved
    for moment in ("after the kill", "after the next attempt"):
        shown = _log(Path(f"{record}:1"), cli_env, "--attempt", "1")
        assert shown.returncode == 0 and "first 1" in shown.stdout, (moment, shown.stderr)
        assert "first 2" in _log(Path(f"{record}:2"), cli_env, "--attempt", "1").stdout
        if moment == "after the kill":
            again = submit_local(tmp_path, cli_env, *run("second"))
            assert again.returncode == 0, again.stderr
    assert "second 1" in _log(Path(f"{record}:1"), cli_env).stdout


def test_another_patterns_moved_log_of_the_same_name_is_not_taken_for_a_tasks_log(tmp_path, cli_env):
    """log/t.JOB.log's task 2 and a single run logging to log/t.2.log share q/attempts/1/ and the moved
    name t.2.log. With task 2's own log deleted before the rerun (nothing of it moved), the single
    run's moved log, written after the rerun, was shown as task 2's attempt-1 log."""
    def run(word: str, *options: str) -> None:
        done = submit_local(tmp_path, cli_env, *options, "--", "sh", "-c", f'echo "{word} $0"', "JOB")
        assert done.returncode == 0, done.stderr
        time.sleep(1.1)                  # the ledger's times are whole seconds

    array = ("--array", "JOB=1:3", "--output-file", "log/t.JOB.log")
    run("array-1", *array)
    (tmp_path / "log" / "t.2.log").unlink()
    run("array-2", *array)
    run("single-1", "--output-file", "log/t.2.log")
    run("single-2", "--output-file", "log/t.2.log")
    assert "single-1" in (tmp_path / "log" / "q" / "attempts" / "1" / "t.2.log").read_text()
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    shown = _log(Path(f"{record}:2"), cli_env, "--attempt", "1")
    assert "single-1" not in shown.stdout and shown.returncode == 2, (shown.stdout, shown.stderr)
    assert "array-1 1" in _log(Path(f"{record}:1"), cli_env, "--attempt", "1").stdout


def test_another_patterns_log_the_rerun_moved_for_it_is_not_taken_for_the_tasks_log(tmp_path, cli_env):
    """As above, the single run now logging to log/t.2.log between the array's two attempts: the rerun
    moves that file into q/attempts/1/ for the single run (whose ledger names it), and it was shown as
    the array's task 2 attempt-1 log (written in the time between the array's attempts)."""
    def run(word: str, *options: str) -> None:
        done = submit_local(tmp_path, cli_env, *options, "--", "sh", "-c", f'echo "{word} $0"', "JOB")
        assert done.returncode == 0, done.stderr
        time.sleep(1.1)

    array = ("--array", "JOB=1:3", "--output-file", "log/t.JOB.log")
    run("array-1", *array)
    (tmp_path / "log" / "t.2.log").unlink()
    run("single-1", "--output-file", "log/t.2.log")
    run("array-2", *array)
    moved = list((tmp_path / "log" / "q" / "attempts" / "1").glob("t.2.log*"))
    assert len(moved) == 1 and "single-1" in moved[0].read_text(), moved
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    shown = _log(Path(f"{record}:2"), cli_env, "--attempt", "1")
    assert "single-1" not in shown.stdout and shown.returncode == 2, (shown.stdout, shown.stderr)
    single = tmp_path / "log" / "q" / "t.2.submit.json"
    assert "single-1" in _log(single, cli_env, "--attempt", "1").stdout


def test_a_log_moved_aside_to_a_name_taken_after_the_look_overwrites_nothing(tmp_path, monkeypatch):
    """Two reruns moving a log aside to the same name at the same instant: each looked, found the name
    free, and renamed, so the second replaced the first's log. Here the other rerun's log appears at the
    name right after the look: both logs are kept, ours under the next free name."""
    import backends.attempt as attempt

    source = tmp_path / "log" / "r.log"
    source.parent.mkdir()
    source.write_text("ours\n")
    directory = tmp_path / "attempts" / "1"
    lexists = os.path.lexists
    planted: list[str] = []

    def look(path) -> bool:             # the other rerun moves its log there right after our look
        free = not lexists(path)
        if free and str(path).endswith("r.log") and not planted:
            planted.append(str(path))
            Path(path).write_text("the other rerun's\n")
        return not free

    monkeypatch.setattr(attempt.os.path, "lexists", look)
    target = attempt._move(str(source), directory, "r.log")
    monkeypatch.undo()
    assert planted == [str(directory / "r.log")]
    assert (directory / "r.log").read_text() == "the other rerun's\n"
    assert target == str(directory / "r.log.2") and Path(target).read_text() == "ours\n"
    assert not source.exists()


def test_where_hard_links_cannot_be_made_a_log_is_still_moved_aside(tmp_path, monkeypatch):
    """A folder on a filesystem without hard links (EPERM): the move is the rename it was."""
    import errno

    import backends.attempt as attempt

    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    source = tmp_path / "r.log"
    source.write_text("ours\n")
    (tmp_path / "attempts").mkdir()
    (tmp_path / "attempts" / "r.log").write_text("earlier\n")
    monkeypatch.setattr(attempt.os, "link", no_links)
    target = attempt._move(str(source), tmp_path / "attempts", "r.log")
    assert Path(target).read_text() == "ours\n" and target.endswith("r.log.2") and not source.exists()
    assert (tmp_path / "attempts" / "r.log").read_text() == "earlier\n"


def test_only_an_arrays_pattern_has_window_scripts(tmp_path):
    """`log/run.offset5.log` is another pattern's single job: its running job refused the first
    submission of `log/run.log`, as if it were a window of it."""
    from backends.attempt import _pattern_scripts

    q = tmp_path / "log" / "q"
    q.mkdir(parents=True)
    for name in ("run.sh", "run.offset5.sh", "run.JOB.sh", "run.JOB.offset1001.sh", "run.JOB.offsetx.sh"):
        (q / name).write_text("#!/bin/bash\n")
    assert _pattern_scripts(q / "run.submit.json", windowed=False) == {str(q / "run.sh")}
    assert _pattern_scripts(q / "run.JOB.submit.json", windowed=True) == {str(q / "run.JOB.sh"),
                                                                         str(q / "run.JOB.offset1001.sh")}


def test_another_patterns_attempt_folder_you_may_not_write_does_not_refuse_yours(rightless_dir, cli_env):
    """q/attempts/<N>/ is shared by the patterns of one q/: a teammate's read-only attempts/7 is
    not one this rerun writes."""
    root = rightless_dir
    assert submit_local(root, cli_env, "--array", "JOB=1:2", "--output-file", "log/m.JOB.log", "--",
                        "true").returncode == 0
    theirs = root / "log" / "q" / "attempts" / "7"
    theirs.mkdir(parents=True)
    theirs.chmod(0o555)
    again = run_cli(*without_rights("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                                    "--output-file", "log/m.JOB.log", "--", "true"), cwd=root, env=cli_env)
    assert again.returncode == 0, again.stderr
    assert load_history(root / "log" / "q" / "m.JOB.submit.json").numbers == (1, 2)


def test_logs_of_a_value_an_attempt_did_not_rerun_names_the_attempts_that_ran_it(tmp_path, cli_env):
    """A retry reruns a few values; `--attempt 2` of one it left alone said only 'has no task', and
    the user had to read the history to find the attempt that holds the log."""
    (tmp_path / "fail.txt").write_text("3\n")
    assert submit_local(tmp_path, cli_env, "--array", "JOB=1:5", "--output-file", "log/t.JOB.log",
                        "--", PY, "-c", FLAKY, "JOB").returncode == 1
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    (tmp_path / "fail.txt").write_text("")
    assert run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env).returncode == 0
    shown = run_cli("hyperion-jobs", "logs", f"{record}:1", "--attempt", "2", env=cli_env)
    assert shown.returncode == 2 and shown.stdout == ""
    assert shown.stderr == (f"hyperion-jobs: error: TASK: attempt 2 of {record} has no task with value 1 "
                            "(its values: 3-5); value 1 ran in attempt(s) 1: --attempt 1 shows the newest\n")
    unknown = run_cli("hyperion-jobs", "logs", f"{record}:9", "--attempt", "2", env=cli_env)
    assert unknown.returncode == 2
    assert unknown.stderr.endswith("has no task with value 9 (its values: 3-5)\n")


def test_a_large_ledger_is_read_in_bounded_memory_and_keeps_its_last_line(tmp_path: Path) -> None:
    """The ledger was read whole (up to its 1 GiB cap) and a watcher's look for ends another face
    wrote (`finals_since`) copied what it read once more: a 256 MB ledger cost 512 MB. Read a slice
    at a time, memory stays at a few slices, and the end recorded after the junk is still read."""
    import tracemalloc

    from backends.records.attempts import finals_since, read_ledger

    record = tmp_path / "q" / "t.JOB.submit.json"
    record.parent.mkdir()
    ledger = ledger_path(record)
    size = 256 * 1024 * 1024
    with open(ledger, "wb") as handle:
        handle.write(b'{"type": "final", "attempt": 1, "value": 1, "state": "FAILED", "exit_code": 3}\n')
        handle.truncate(size)                           # sparse: costs no disk
        handle.seek(size)
        handle.write(b'\n{"type": "final", "attempt": 1, "value": 2, "state": "COMPLETED", "exit_code": 0}\n')
        handle.write(b'{"type": "final", "attempt": 1, "value": 3, "state": "TIMEOUT", "restart_count": 2}\n')
    tracemalloc.start()
    try:
        read = read_ledger(record)
        _, peak_read = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        told, offset = finals_since(record, 0)
        _, peak_since = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert {k: f.state for k, f in read.finals.items()} == {(1, 1): "FAILED", (1, 2): "COMPLETED", (1, 3): "TIMEOUT"}
    assert read.skipped == 1 and read.size == ledger.stat().st_size
    assert told == {(1, 1): 0, (1, 2): 0, (1, 3): 2} and offset == ledger.stat().st_size
    assert peak_read < 64 << 20 and peak_since < 64 << 20, (peak_read >> 20, peak_since >> 20)


# --- the spare room a full disk's lines go to -------------------------------------------------

def test_a_spare_an_earlier_runner_of_the_same_pid_filled_keeps_its_lines(tmp_path: Path) -> None:
    """A local run on a full disk wrote its tasks' ends into q/<stem>.attempts.jsonl.<pid>.spare. A
    later run whose runner got the same pid (pid_max is 32768 on many login nodes) truncated that
    file to claim its own room, and removed it when it ended with none used: the earlier run's
    ends were gone, its tasks shown as LOST."""
    record = tmp_path / "q" / "t.JOB.submit.json"
    ended = FinalState(1, 2, "local", 2, "FAILED", 3, reason="cannot write the log: No space left on device")
    append_entries(record, [FinalState(1, 1, "local", 1, "COMPLETED", 0)])
    ledger = ledger_path(record)
    spare = ledger.with_name(f"{ledger.name}.{os.getpid()}.spare")
    spare.write_bytes(b"\n" + entry_lines([ended]) + b"\0" * 2000)
    assert read_ledger(record).finals[(1, 2)] == ended
    with LedgerWriter(ledger, reserve=4096) as writer:       # the later run, same pid, disk free again
        writer.append(FinalState(2, 1, "local", 1, "COMPLETED", 0))
    after = read_ledger(record)
    assert after.finals[(1, 2)] == ended
    assert after.finals[(2, 1)].state == "COMPLETED"


def _fill(disk: Path) -> None:
    fd = os.open(disk / "fill", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    try:
        while True:
            os.write(fd, b"\0")
    except OSError:
        pass
    os.close(fd)


def test_a_line_the_full_disk_cut_short_is_kept_whole_in_the_spare(small_disk: Path) -> None:
    """The disk filled up in the middle of a task's end line: its first bytes went into the ledger's
    last page, the rest into the spare room. Neither half is a line, so the task's end was lost
    (status: LOST); and once room came back, the next line was glued to the torn half and lost too."""
    record = small_disk / "q" / "t.JOB.submit.json"
    append_entries(record, [FinalState(1, 1, "local", 1, "COMPLETED", 0)])
    ledger = ledger_path(record)
    with LedgerWriter(ledger, reserve=4096) as writer:
        with open(ledger, "ab") as handle:                    # the ledger's last page nearly full
            handle.write(b" " * (4096 - ledger.stat().st_size % 4096 - 20) + b"\n")
        _fill(small_disk)
        ended = FinalState(1, 2, "local", 2, "FAILED", 1, reason="cannot write the log: No space left on device")
        writer.append(ended)
        assert not ledger.read_bytes().endswith(b"\n")    # cut short: the case this is about
        (small_disk / "fill").unlink()                        # room again: the next task's end
        writer.append(FinalState(1, 3, "local", 3, "COMPLETED", 0))
    after = read_ledger(record)
    assert after.finals[(1, 2)] == ended
    assert after.finals[(1, 3)].state == "COMPLETED"


def test_a_moved_log_named_like_a_record_is_not_overwritten_by_another_patterns_record(tmp_path: Path,
                                                                                      cli_env) -> None:
    """q/attempts/<N>/ holds the records of every pattern of q/ and the logs their reruns moved. A rerun
    of --output-file log/r.submit.json moved its log to q/attempts/1/r.submit.json: the very name
    under which log/r.log's first record is kept. Submitting log/r.log replaced that log with its
    record: `hyperion-jobs logs ... --attempt 1` showed JSON, the first run's output was gone."""
    for words in ("first run of r.submit.json", "second run"):
        done = submit_local(tmp_path, cli_env, "--output-file", "log/r.submit.json", "--", "echo", words)
        assert done.returncode == 0, done.stderr
    done = submit_local(tmp_path, cli_env, "--output-file", "log/r.log", "--", "echo", "r.log's run")
    assert done.returncode == 0, done.stderr
    shown = run_cli("hyperion-jobs", "logs", str(tmp_path / "log" / "q" / "r.submit.submit.json"),
                    "--attempt", "1", env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert "first run of r.submit.json" in shown.stdout
    assert load_history(tmp_path / "log" / "q" / "r.submit.json").records[1].options["output_file"] == str(
        tmp_path / "log" / "r.log")


def test_a_rerun_whose_moved_line_the_full_disk_refused_leaves_the_log_where_the_history_finds_it(
        small_disk: Path, cli_env) -> None:
    """A rerun moves each earlier log into q/attempts/<N>/ and writes a `moved` line saying where.
    When the disk was full, the rename went through and the line did not: the rerun stopped there,
    and the log sat in q/attempts/1/ with nothing pointing at it - `hyperion-jobs logs` said it was
    missing, and no later attempt ever found it. The move is undone when it cannot be recorded."""
    first = submit_local(small_disk, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log", "--",
                         "sh", "-c", 'echo "first run of $0"', "JOB")
    assert first.returncode == 0, first.stderr
    record = small_disk / "log" / "q" / "t.JOB.submit.json"
    ledger = ledger_path(record)
    with open(ledger, "ab") as handle:                 # its last page full: the next line needs a new one
        handle.write(b" " * (4096 - ledger.stat().st_size % 4096 - 1) + b"\n")
    _fill(small_disk)
    again = submit_local(small_disk, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log", "--",
                         "sh", "-c", 'echo "second run of $0"', "JOB")
    assert again.returncode == 1 and "No space left on device" in again.stderr, again.stderr
    assert "Traceback" not in again.stderr
    shown = run_cli("hyperion-jobs", "logs", f"{record}:1", env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert "first run of 1" in shown.stdout
    (small_disk / "fill").unlink()
    third = submit_local(small_disk, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log", "--",
                         "sh", "-c", 'echo "third run of $0"', "JOB")
    assert third.returncode == 0, third.stderr
    for value in (1, 2):
        earlier = run_cli("hyperion-jobs", "logs", f"{record}:{value}", "--attempt", "1", env=cli_env)
        assert f"first run of {value}" in earlier.stdout, earlier.stdout + earlier.stderr


def test_an_earlier_runs_end_written_late_does_not_hide_the_later_runs_peak_memory(tmp_path: Path) -> None:
    """Another face (a `status`) wrote a requeued task's second end (restart 1) without its peak,
    then its first end (restart 0) late, with that run's peak. A watch that had read the second end
    took the first run's figures for the second run's and never wrote the peak accounting told it
    next (the ledger's reader, ends_since, already left an earlier run's end out of the run held)."""
    from backends.records.attempts import ends_since, merged_figures
    from backends.states import JobState, TaskState
    from backends.watch.finals import FinalsRecorder
    from backends.watch.usage import Usage

    record = tmp_path / "q" / "u.JOB.submit.json"
    tasks = [TaskRecord(v, "42", v, f"log.{v}", None, None, 1) for v in (3, 4)]
    recorder = FinalsRecorder(str(record), tasks)
    append_entries(record, [FinalState(1, 3, "42", 3, "COMPLETED", 0, restart_count=1,     # the status
                                       usage={"elapsed_seconds": 5.0})])
    recorder.observe([TaskState("42", 4, JobState.COMPLETED, 0, elapsed=2.0, node="n1")])   # reads it
    append_entries(record, [FinalState(1, 3, "42", 3, "FAILED", 1, restart_count=0,        # late
                                       usage={"max_rss_bytes": 1024})])
    # one rule, whoever reads: the earlier run's end leaves the later run's figures as they were
    assert dict(ends_since(record, 0).usage)[(1, 3)] == (1, {"elapsed_seconds": 5.0})
    assert merged_figures((1, {"elapsed_seconds": 5.0}), 0, {"max_rss_bytes": 1024}) == (1, {"elapsed_seconds": 5.0})
    second = TaskState("42", 3, JobState.COMPLETED, 0, elapsed=5.0, node="n1", restart_count=1)
    recorder.observe([second], {("42", 3): Usage(max_rss_bytes=2048, elapsed_seconds=5.0)})
    lines = [json.loads(line) for line in ledger_path(record).read_text().splitlines()]
    assert [line["usage"]["max_rss_bytes"] for line in lines if line.get("type") == "usage"] == [2048], lines


def test_an_end_a_full_disk_refused_is_written_once_there_is_room_again(small_disk: Path) -> None:
    """A watcher (hyperion-submit's wait, the console) saw task 3 end while the disk was full: the
    end was shown but not kept, and never tried again though the watch went on for hours and the
    disk had room by then. Slurm forgets the job: a pending task cancelled before it had an
    accounting row, or one whose accounting was purged, was then UNKNOWN for ever."""
    from backends.states import JobState, TaskState
    from backends.watch.finals import FinalsRecorder

    record = small_disk / "q" / "u.JOB.submit.json"
    append_entries(record, [FinalState(1, 1, "12", 1, "COMPLETED", 0)])
    ledger = ledger_path(record)
    with open(ledger, "ab") as handle:                 # its last page full: the next line needs a new one
        handle.write(b" " * (4096 - ledger.stat().st_size % 4096 - 1) + b"\n")
    tasks = [TaskRecord(v, "12", v, f"log.{v}", None, None, 1) for v in (3, 4)]
    recorder = FinalsRecorder(str(record), tasks)
    _fill(small_disk)
    recorder.observe([TaskState("12", 3, JobState.CANCELLED)])
    assert recorder.error is not None and "No space left on device" in recorder.error
    (small_disk / "fill").unlink()
    recorder.observe([TaskState("12", 4, JobState.FAILED, 1, elapsed=3.0, node="n1")])   # the next poll
    finals = read_ledger(record).finals
    assert finals[(1, 3)].state == "CANCELLED"
    assert finals[(1, 4)].state == "FAILED"
    assert recorder.error is None         # kept after all: the console no longer warns they are not


def test_a_retry_confirmed_after_another_retry_ran_its_values_runs_nothing(tmp_path, cli_env):
    """Two terminals: `hyperion-jobs retry RECORD` shows its plan and waits at [y/N]; meanwhile the
    other terminal's `retry --yes` reruns the same values, which now COMPLETED. Answering y ran them
    all again as attempt 3 (its preview had said attempt 2), their newest runs the extra ones."""
    (tmp_path / "fail.txt").write_text("2\n4\n")
    first = submit_local(tmp_path, cli_env, "--array", "JOB=1:4", "--output-file", "log/t.JOB.log",
                         "--", PY, "-c", FLAKY, "JOB")
    assert first.returncode == 1
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    (tmp_path / "fail.txt").write_text("")
    waiting, prompt = retry_at_its_prompt(record, tmp_path, cli_env)
    with reaped(waiting):
        assert "as attempt 2: 3 task(s)" in prompt and "values: 2-4" in prompt, prompt
        other = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
        assert other.returncode == 0, other.stderr
        out, err = waiting.communicate("y\n", timeout=60)
    assert waiting.returncode == 2, err
    assert err == (f"hyperion-jobs: error: record: attempt 2 of {record} began after this rerun was planned "
                   f"(as attempt 2) and may have run the same values; nothing ran: the same retry run again "
                   f"plans from what it did\n"), err
    shown = status_json(record, cli_env)
    assert [(t["value"], t["state"], t["attempt"]) for t in shown["tasks"]] == [
        (1, "COMPLETED", 1), (2, "COMPLETED", 2), (3, "COMPLETED", 2), (4, "COMPLETED", 2)]
    assert load_history(record).numbers == (1, 2)


def test_a_retry_confirmed_after_its_folder_moved_away_runs_nothing(tmp_path, cli_env):
    """`mv log log_old` in another terminal while the retry's [y/N] is open: the y ran the planned
    values as attempt 1 of a new pattern in a new log/ (kind retry, two values of four), beside a
    history that now lives in log_old/. It is refused, nothing runs."""
    (tmp_path / "fail.txt").write_text("2\n3\n")
    first = submit_local(tmp_path, cli_env, "--array", "JOB=1:4", "--output-file", "log/t.JOB.log",
                         "--", PY, "-c", FLAKY, "JOB")
    assert first.returncode == 1
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    waiting, prompt = retry_at_its_prompt(record, tmp_path, cli_env)
    with reaped(waiting):
        (tmp_path / "log").rename(tmp_path / "log_old")
        out, err = waiting.communicate("y\n", timeout=60)
    assert waiting.returncode == 2, err
    assert err == f"hyperion-jobs: error: record: {record} is gone since this rerun was planned (moved or deleted); " \
                  "nothing ran\n", err
    assert [p.name for p in (tmp_path / "log").rglob("*") if p.is_file()] == ["t.JOB.lock"]   # its lock alone
    assert load_history(str(tmp_path / "log_old" / "q" / "t.JOB.submit.json")).numbers == (1,)


def test_a_retry_preview_names_the_attempt_number_it_will_record(tmp_path, cli_env):
    """An attempt that began and never wrote its record (its runner killed at that instant) left a
    ledger line ahead of the records: the preview said 'as attempt 2' and the retry recorded 3."""
    from backends.records.attempts import AttemptEntry, entry_lines, ledger_path

    (tmp_path / "fail.txt").write_text("2\n")
    first = submit_local(tmp_path, cli_env, "--array", "JOB=1:3", "--output-file", "log/t.JOB.log",
                         "--", PY, "-c", FLAKY, "JOB")
    assert first.returncode == 1
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    with open(ledger_path(record), "ab") as ledger:
        ledger.write(entry_lines([AttemptEntry(2, "submit", "2026-12-06T10:00:00+00:00", "local", ("local",),
                                               "1-3", {}, 3)]))
    preview = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", cwd=tmp_path, env=cli_env)
    assert f"retry of {record} as attempt 3: " in preview.stdout, preview.stdout + preview.stderr
    (tmp_path / "fail.txt").write_text("")
    assert run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env).returncode == 0
    assert load_history(str(record)).current.attempt == 3


def _a_third_run_of_one_value_names_attempt_1_whose_log_it_shows(tmp_path: Path, cli_env: dict[str, str],
                                                                 argv: list[str], command: list[str], record: Path,
                                                                 value: int) -> None:
    """Run `argv --array JOB=VALUE:VALUE command` as attempt 3 (file n says 3): its one line about the
    logs it moved ends `hyperion-jobs logs RECORD:VALUE --attempt 1`, and that command, pasted with
    VALUE filled in, shows attempt 1's log of the value."""
    (tmp_path / "n").write_text("3")
    third = run_cli(*argv, "--array", f"JOB={value}:{value}", *command, cwd=tmp_path, env=cli_env)
    assert third.returncode == 0, third.stderr
    said = [line for line in third.stderr.splitlines() if "attempt 3 of this --output-file" in line]
    assert len(said) == 1 and said[0].endswith(f"hyperion-jobs logs {record}:VALUE --attempt 1"), third.stderr
    pasted = said[0].rsplit("; ", 1)[1].replace("VALUE", str(value)).split()
    shown = run_cli(*pasted, cwd=tmp_path, env=cli_env)
    assert shown.returncode == 0 and f"value {value} of attempt 1" in shown.stdout, shown.stderr


def test_the_rerun_line_names_the_attempt_that_last_ran_the_values_whose_logs_it_moved(tmp_path, cli_env):
    """A curation day: the array ran (attempt 1), a retry reran value 2 (attempt 2), then the recipe was
    run again for value 1 alone (attempt 3). Its line said `hyperion-jobs logs RECORD:VALUE --attempt 2`,
    the attempt before, which never ran value 1: pasted with VALUE=1 it was refused (exit 2). It names
    the attempt that ran the value last, whose log was moved; several when the values' runs differ."""
    site = str(Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml")
    (tmp_path / "n").write_text("1")
    argv = ["hyperion-submit", "local", "--cfg", site, "--output-file", "log/c.JOB.log"]
    command = ["--", "sh", "-c", "echo value JOB of attempt $(cat n)"]
    first = run_cli(*argv, "--array", "JOB=1:3", *command, cwd=tmp_path, env=cli_env)
    assert first.returncode == 0, first.stderr
    record = tmp_path / "log" / "q" / "c.JOB.submit.json"
    (tmp_path / "n").write_text("2")
    retry = run_cli("hyperion-jobs", "retry", str(record), "--values", "2", "--yes", cwd=tmp_path, env=cli_env)
    assert retry.returncode == 0, retry.stderr
    ahead = run_cli(*argv, "--dry-run", "--array", "JOB=1:3", *command, cwd=tmp_path, env=cli_env)
    assert (f"hyperion-jobs logs {record}:VALUE --attempt 1 (VALUE 1,3), --attempt 2 (VALUE 2)\n"
            in ahead.stdout), ahead.stdout
    _a_third_run_of_one_value_names_attempt_1_whose_log_it_shows(tmp_path, cli_env, argv, command, record, 1)


def test_the_line_said_before_a_rerun_reads_the_ledgers_attempt_lines_once(tmp_path, cli_env, monkeypatch):
    """The dry run's line (and the console's Submit preview's, asked at each pause of the keys) read
    the ledger's attempt lines twice: for the next attempt's number, then for who last ran each value."""
    import backends.attempt
    from backends.records import attempts
    from backends.retry_hint import ran_before_line
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan

    argv = ["local", "--cfg", str(TEST_SITE), "--array", "JOB=1:3", "--output-file", str(tmp_path / "log/c.JOB.log"),
            "--", "true"]
    assert run_cli("hyperion-submit", *argv, cwd=tmp_path, env=cli_env).returncode == 0
    reads = []
    real = attempts.read_ledger

    def counted(record_path, only=None):
        reads.append(only)
        return real(record_path, only)

    for module in (attempts, backends.attempt):
        monkeypatch.setattr(module, "read_ledger", counted)
    line = ran_before_line(build_plan(*parse_submit_argv(argv)))
    assert line is not None and line.startswith("attempt 2 of this --output-file") and \
        line.endswith(":VALUE --attempt 1"), line
    assert reads.count(attempts.ATTEMPT_LINE) == 1, reads      # (a local run's start lines are read too)


def test_the_rerun_line_skips_an_attempt_whose_local_run_stopped_before_the_value(tmp_path, cli_env):
    """A local array stops at its first failure: attempt 2 of values 1-3 failed at 1, so 2 and 3 never
    started in it. A rerun of value 3 (attempt 3) named `--attempt 2`, which left no log of 3: pasted, it
    was refused (exit 2). The log of 3 that was kept is attempt 1's, and that is the attempt named."""
    site = str(Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml")
    (tmp_path / "n").write_text("1")
    argv = ["hyperion-submit", "local", "--cfg", site, "--output-file", "log/c.JOB.log"]
    command = ["--", "sh", "-c", "echo value JOB of attempt $(cat n); test ! -e fail.JOB"]
    assert run_cli(*argv, "--array", "JOB=1:3", *command, cwd=tmp_path, env=cli_env).returncode == 0
    record = tmp_path / "log" / "q" / "c.JOB.submit.json"
    (tmp_path / "n").write_text("2")
    (tmp_path / "fail.1").write_text("")
    assert run_cli(*argv, "--array", "JOB=1:3", *command, cwd=tmp_path, env=cli_env).returncode == 1
    (tmp_path / "fail.1").unlink()
    ahead = run_cli(*argv, "--dry-run", "--array", "JOB=1:3", *command, cwd=tmp_path, env=cli_env)
    assert f"hyperion-jobs logs {record}:VALUE --attempt 1 (VALUE 2-3), --attempt 2 (VALUE 1)\n" in ahead.stdout, \
        ahead.stdout
    _a_third_run_of_one_value_names_attempt_1_whose_log_it_shows(tmp_path, cli_env, argv, command, record, 3)


def test_a_corrected_peak_is_written_again_and_the_same_figures_once(tmp_path: Path) -> None:
    """Accounting told task 3's peak as 1 MiB at its end, then (a poll later, its batch step filed)
    as 8 MiB. The writer compared figure names, not values: the ledger held a `max_rss_bytes`, so the
    corrected one was never written and `hyperion-jobs usage` kept the early, wrong peak. A changed
    value is written (by this writer and by another face's, which reads the ledger's lines); the
    same values, told at every poll, are not."""
    from backends.records.attempts import merged_figures
    from backends.states import JobState, TaskState
    from backends.watch.finals import FinalsRecorder
    from backends.watch.usage import Usage

    held = (0, {"max_rss_bytes": 1024})
    assert merged_figures(held, None, {"max_rss_bytes": 8192}) == (0, {"max_rss_bytes": 8192})
    assert merged_figures(held, None, {"cpu_seconds": 1.0}) == (0, {"max_rss_bytes": 1024, "cpu_seconds": 1.0})

    record = tmp_path / "q" / "u.JOB.submit.json"
    task = TaskRecord(3, "12", 3, "log.3", None, None, 1)
    ended = TaskState("12", 3, JobState.COMPLETED, 0, elapsed=4.0, node="n1")
    early, corrected = Usage(max_rss_bytes=1024, elapsed_seconds=4.0), Usage(max_rss_bytes=8192, elapsed_seconds=4.0)
    watch = FinalsRecorder(str(record), [task])
    watch.observe([ended], {("12", 3): early})
    for _ in range(3):                                        # the next polls tell the same
        watch.observe([ended], {("12", 3): early})
    watch.observe([ended], {("12", 3): corrected})            # accounting's corrected peak
    for _ in range(3):
        watch.observe([ended], {("12", 3): corrected})
    assert read_ledger(record).finals[(1, 3)].usage["max_rss_bytes"] == 8192
    assert len(ledger_path(record).read_text().splitlines()) == 2      # the end, and one correction

    # another face (a `status` beside the watch), its usage of the ledger as first read: the same
    # figures are not written again, a value changed since is
    other = FinalsRecorder(str(record), [], {("12", 3): (task, early.to_json())}, since=0)
    other.observe((), {("12", 3): corrected})
    assert len(ledger_path(record).read_text().splitlines()) == 2
    other.observe((), {("12", 3): Usage(max_rss_bytes=9000, elapsed_seconds=4.0)})
    assert read_ledger(record).finals[(1, 3)].usage["max_rss_bytes"] == 9000
    assert len(ledger_path(record).read_text().splitlines()) == 3
