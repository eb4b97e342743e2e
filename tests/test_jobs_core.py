"""Status rows from records (slurm and local), target syntax, and the CLI's bad-input lines."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends.cli.jobs import main
from backends.cli.jobs.watching import render_watch
from backends.errors import InputError
from backends.records.record import JobRecord, SubmitRecord, TaskRecord, save_record
from backends.states import JobState
from backends.watch.poller import PollUpdate
from backends.watch.rows import exit_status, expected, job_rows, local_rows, record_rows
from backends.watch.slurm.accounting import parse_sacct
from backends.watch.targets import TaskLogs, resolve, task_logs


def make_record(tmp_path: Path, backend: str = "slurm", values=(1, 2, 3)) -> SubmitRecord:
    q = tmp_path / "exp" / "log" / "q"
    job = "local" if backend == "local" else "500"
    tasks = tuple(TaskRecord(v, job, None if backend == "local" else v,
                             str(tmp_path / "exp" / "log" / f"x.{v}.log"),
                             None if backend == "local" else str(q / f"slurm-500_{v}.out"),
                             None if backend == "local" else str(q / f"slurm-500_{v}.err"))
                  for v in values)
    record = SubmitRecord(
        path=str(q / "x.JOB.submit.json"), backend=backend, argv=("hyperion-submit", backend),
        cfg="conf/submit_test_cluster.yaml", options={}, script=None, array_name="JOB",
        jobs=(JobRecord(job, 0, "1-3"),), tasks=tasks, submitted_at="2026-12-02T13:00:00",
        cwd=str(tmp_path))
    save_record(record)
    return record


def test_resolve_job_task_and_record(tmp_path):
    assert resolve("1234_5").job_id == "1234" and resolve("1234_5").task_id == 5
    assert resolve("1234").task_id is None
    record = make_record(tmp_path)
    assert resolve(record.path).record == record
    assert resolve(str(Path(record.path).parent)).record == record   # the q/ dir
    with pytest.raises(InputError) as err:
        resolve("12a")
    assert err.value.field == "JOB|RECORD"


def test_record_rows_join_states_and_keep_unknown_tasks(tmp_path):
    record = make_record(tmp_path)
    assert expected(record) == {"500": (1, 2, 3)}
    states = {t.key: t for t in parse_sacct("500_1|501|COMPLETED|0:0|00:00:03|vm|a|b\n"
                                            "500_2|502|FAILED|3:0|00:00:01|vm|a|b\n")}
    rows = record_rows(record, states)
    assert [r.state_label for r in rows] == ["COMPLETED", "FAILED", "UNKNOWN"]
    assert rows[1].exit_code == 3 and rows[1].log.endswith("x.2.log")
    assert exit_status(rows) == 1
    assert exit_status(rows[:1]) == 0


def test_job_rows_use_record_offset_for_values(tmp_path):
    states = {t.key: t for t in parse_sacct("500_[1-2]|500|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n")}
    rows = job_rows(states, make_record(tmp_path))
    assert [(r.slurm_id, r.value, r.state_label) for r in rows] == [("500_1", 1, "PENDING"), ("500_2", 2, "PENDING")]


def test_local_rows_from_results_file(tmp_path):
    record = make_record(tmp_path, "local")
    results = Path(record.path).with_name("x.JOB.local.json")
    results.write_text(json.dumps({"tasks": {
        "1": {"state": "COMPLETED", "exit_code": 0, "start": "2026-12-02T13:00:00", "end": "2026-12-02T13:00:05"},
        "2": {"state": "FAILED", "exit_code": 4, "start": "2026-12-02T13:00:05", "end": "2026-12-02T13:00:06"}}}))
    rows = local_rows(record)
    assert [r.state_label for r in rows] == ["COMPLETED", "FAILED", "NOT_RUN"]
    assert rows[0].elapsed == 5 and rows[1].exit_code == 4


def test_task_logs_by_record_value_and_job_task(tmp_path):
    record = make_record(tmp_path)
    logs = task_logs(f"{record.path}:2")
    assert logs == TaskLogs(f"{record.path}:2", record.tasks[1].log, record.tasks[1].slurm_out, record.tasks[1].slurm_err)
    assert task_logs("500_3", dirs=[tmp_path]).log == record.tasks[2].log
    with pytest.raises(InputError, match="no task with value 9"):
        task_logs(f"{record.path}:9")
    with pytest.raises(InputError, match="add :VALUE"):
        task_logs(record.path)


def test_logs_prints_last_lines_of_the_program_log(tmp_path, capsys):
    record = make_record(tmp_path)
    Path(record.tasks[0].log).write_text("".join(f"line {i}\n" for i in range(50)))
    assert main(["logs", f"{record.path}:1", "-n", "3"]) == 0
    assert capsys.readouterr().out == "line 47\nline 48\nline 49\n"


@pytest.mark.parametrize("argv,field", [
    (["status"], "JOB|RECORD"),
    (["status", "nonsense"], "JOB|RECORD"),
    (["logs", "1_2", "-n", "x"], "-n/--lines"),
    (["cancel", "12;ls", "--yes"], "JOB"),
    (["list", "/does/not/exist"], "DIR"),
    (["frobnicate"], "COMMAND"),
    (["watch", "1", "--cap", "nan"], "--cap"),
    (["watch", "1", "--cap", "inf"], "--cap"),
    (["watch", "1", "--cap", "0.5"], "--cap"),
])
def test_bad_input_is_one_line_and_exit_2(argv, field, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hyperion-jobs: error: {field}: ") and err.count("\n") == 1


@pytest.mark.parametrize("text,problem", [
    ("[]", "(a JSON array, not an object)"), ('"x"', "(a JSON string, not an object)"),
    ("null", "(a JSON null, not an object)"), ("3", "(a JSON number, not an object)"), ('{"path": "p"}', "(no 'backend' key)"),
    ("{", "is not JSON: "), (b"\xff\xfe", "is not JSON: "),
])
def test_corrupt_record_is_one_line_naming_the_problem(tmp_path, capsys, text, problem):
    path = tmp_path / "q" / "x.submit.json"
    path.parent.mkdir()
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert main(["status", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hyperion-jobs: error: record: {path} ") and err.count("\n") == 1
    assert problem in err


def test_logs_of_a_task_without_a_log_yet_is_one_line_exit_2(tmp_path, capsys):
    record = make_record(tmp_path)
    assert main(["logs", f"{record.path}:2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"hyperion-jobs: error: TASK: {record.path}:2 has no log yet: "
                            f"{tmp_path / 'exp' / 'log' / 'x.2.log'} does not exist "
                            "(not started, or never run; -f waits for it)\n")


def test_watch_view_shows_counts_progress_and_error(tmp_path):
    from rich.console import Console
    record = make_record(tmp_path)
    states = {t.key: t for t in parse_sacct("500_1|501|COMPLETED|0:0|00:00:03|vm|a|b\n"
                                            "500_2|502|RUNNING|0:0|00:00:01|vm|a|Unknown\n")}
    update = PollUpdate(states, (), "squeue failed (rc 1): Unable to contact slurm controller", False, 4.0)
    console = Console(width=160, record=True, color_system=None)
    console.print(render_watch("x", update, record_rows(record, states)))
    text = console.export_text()
    assert "1/3 tasks ended" in text and "━" in text and "COMPLETED 1" in text and "RUNNING 1" in text
    assert "UNKNOWN 1" in text and "500_2" in text and "Unable to contact" in text
    assert JobState.RUNNING.value in text


def test_task_logs_of_an_array_job_needs_a_task(tmp_path):
    make_record(tmp_path)
    with pytest.raises(InputError, match="is an array; name one task, e.g. 500_1"):
        task_logs("500", dirs=[tmp_path])
    with pytest.raises(InputError, match="has no task 500_9"):
        task_logs("500_9", dirs=[tmp_path])


def test_plain_watch_lines_show_reasons_restarts_and_how_old_the_states_are():
    import io
    import re

    from backends.cli.jobs.watching import PlainView
    from backends.states import TaskState
    from backends.watch.terminal import SafeStream

    out = io.StringIO()
    view = PlainView("x", SafeStream(out))
    waiting = TaskState("9", 1, JobState.PENDING, reason="BeginTime", restart_count=1)
    view.show(PollUpdate({waiting.key: waiting}, (waiting,), None, False, 3.0, None, 1000.0), [])
    problem = "accounting (sacct) not answering for 40 s: sacct failed (rc 1): Connection refused"
    view.show(PollUpdate({waiting.key: waiting}, (), problem, False, 2.0, problem, 1000.0), [])
    view.show(PollUpdate({waiting.key: waiting}, (), None, False, 3.0, None, 1042.0), [])
    lines = [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in out.getvalue().splitlines()]
    assert lines[0] == "9_1 PENDING (BeginTime; restart 1)"
    assert lines[1].startswith(problem + "; states as of ")
    assert lines[2] == "Slurm answering again"


def test_status_rows_carry_reason_and_restart_count_into_json(tmp_path):
    from backends.states import TaskState

    record = make_record(tmp_path)
    states = {("500", 1): TaskState("500", 1, JobState.PENDING, reason="Priority"),
              ("500", 2): TaskState("500", 2, JobState.RUNNING, restart_count=2)}
    rows = record_rows(record, states)
    assert [r.state_text for r in rows[:2]] == ["PENDING (Priority)", "RUNNING (restart 2)"]
    assert rows[0].to_json()["reason"] == "Priority" and rows[1].to_json()["restart_count"] == 2
