"""Status rows from records (slurm and local), target syntax, and the CLI's bad-input lines."""
from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_fifo, make_sparse, make_symlink_loop, run_cli, terminal_row

from backends.cli.jobs import main
from backends.cli.jobs.watching import render_watch
from backends.errors import InputError
from backends.printable import printable
from backends.records.history import load_history
from backends.records.record import JobRecord, SubmitRecord, TaskRecord, save_record
from backends.states import JobState
from backends.watch.poller import PollUpdate
from backends.watch.rows import exit_status, expected, job_rows, local_rows, record_rows
from backends.watch.slurm.accounting import parse_sacct
from backends.watch.targets import LaterRun, later_run_text, resolve, task_logs


# A job id above Slurm's largest (MaxJobId, 67043328 by default): the shared test cluster never knows
# it, so `logs -f` of a made-up record follows until stopped (its task never ends), whatever ids the
# cluster has given out (job 500 is someone's real job there by now, long ended).
NEVER_JOB = "99999999"


def make_record(tmp_path: Path, backend: str = "slurm", values=(1, 2, 3), job: str = "500") -> SubmitRecord:
    q = tmp_path / "exp" / "log" / "q"
    job = "local" if backend == "local" else job
    tasks = tuple(TaskRecord(v, job, None if backend == "local" else v,
                             str(tmp_path / "exp" / "log" / f"x.{v}.log"),
                             None if backend == "local" else str(q / f"slurm-{job}_{v}.out"),
                             None if backend == "local" else str(q / f"slurm-{job}_{v}.err"))
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


@pytest.mark.parametrize("command", ["status", "watch", "usage", "history"])
def test_record_value_typed_to_a_command_of_the_whole_record_names_the_record_to_give(tmp_path, cli_env, command):
    """`logs RECORD:VALUE` works, so users type `watch RECORD:VALUE` too: it was 'neither a job id nor a
    submit record' of a record that exists. One line names the record to give instead, exit 2."""
    record = make_record(tmp_path)
    result = run_cli("hyperion-jobs", command, f"{record.path}:2", env=cli_env, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"hyperion-jobs: error: JOB|RECORD: '{record.path}:2' names one task of a record "
                             f"(RECORD:VALUE, the form logs takes); give the record itself, '{record.path}'\n")


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
    rows = job_rows(states, load_history(make_record(tmp_path).path))
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


@pytest.mark.parametrize("command", ["status", "history", "watch"])
def test_a_results_file_with_odd_times_and_exit_codes_is_read_not_a_traceback(tmp_path, cli_env, command):
    """An older local run's q/<stem>.local.json holding one time with a UTC offset and one without made
    every command on the record trace back (can't subtract offset-naive and offset-aware datetimes);
    an exit code of true was shown as "True"."""
    record = make_record(tmp_path, "local", values=(1, 2))
    Path(record.path).with_name("x.JOB.local.json").write_text(json.dumps({"tasks": {
        "1": {"state": "COMPLETED", "exit_code": True, "start": "2026-12-02T13:00:00",
              "end": "2026-12-02T13:00:05+00:00"},
        "2": {"state": "FAILED", "exit_code": 10 ** 30, "start": "2026-12-02T13:00:05+00:00",
              "end": "2026-12-02T13:00:09+00:00"}}}))
    result = run_cli("hyperion-jobs", command, record.path, env=cli_env, timeout=60)
    assert result.returncode == (1 if command == "watch" else 0) and result.stderr == "", result.stderr
    assert "True" not in result.stdout and str(10 ** 30) not in result.stdout, result.stdout
    if command == "status":
        rows = [line.split() for line in result.stdout.splitlines()[1:3]]
        assert rows[0][1:5] == ["1", "COMPLETED", "-", "-"], rows     # no exit code, no elapsed
        assert rows[1][1:5] == ["2", "FAILED", "-", "0:00:04"], rows


def test_task_logs_by_record_value_and_job_task(tmp_path):
    record = make_record(tmp_path)
    logs = task_logs(f"{record.path}:2")
    assert (logs.name, logs.log, logs.slurm_out, logs.slurm_err, logs.ended) == (
        f"{record.path}:2", record.tasks[1].log, record.tasks[1].slurm_out, record.tasks[1].slurm_err, None)
    assert (logs.task, logs.key) == (record.tasks[1], ("500", 2))     # whose end `logs -f` waits for
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


@pytest.mark.parametrize("written", ["", "exp/log/q/x.JOB.submit.json", "/", 5])
@pytest.mark.parametrize("command", ["status", "history", "watch", "usage"])
def test_a_record_that_names_itself_by_no_absolute_path_is_one_line_exit_2(tmp_path, capsys, monkeypatch,
                                                                           written, command):
    """`"path": ""` in a hand-edited record traced back (ValueError: PosixPath('.') has an empty
    name) in status and watch; a relative path read the ledger from the working directory, and
    status said every task of a run that completed NOT_RUN."""
    record = make_record(tmp_path, backend="local")
    path = Path(record.path)
    path.write_text(json.dumps({**json.loads(path.read_text()), "path": written}))
    monkeypatch.chdir(tmp_path)
    assert main([command, str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"hyperion-jobs: error: record: {path}: path: expected the record's absolute "
                            f"path (this file's is {path}), got {json.dumps(written)}\n")


def test_an_archived_attempt_record_without_an_absolute_path_is_told_the_path_it_stands_for(tmp_path, capsys):
    """An attempt's copy under q/attempts/1/ stands for q/ (hyperion-submit writes that path into
    it): the error named the copy's own path, which then read as a moved record (a review)."""
    record = make_record(tmp_path, backend="local")
    path = Path(record.path)
    archived = path.parent / "attempts" / "1" / path.name
    archived.parent.mkdir(parents=True)
    archived.write_text(json.dumps({**json.loads(path.read_text()), "path": path.name}))
    assert main(["status", str(archived)]) == 2
    assert f"(this file's is {path}), got " in capsys.readouterr().err


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


@pytest.mark.parametrize("log", ["/exp/x[/bold]y.1.log", "/exp/[bold red]x[/]/m[i].1.log", "/exp/\x1b[31mred.1.log"])
def test_watch_view_shows_a_log_path_as_written_not_as_markup(tmp_path, log):
    """A path with "[/bold]" made the live view raise MarkupError (a traceback on the terminal); one with
    "[bold red]x[/]" lost its brackets and turned red."""
    import io

    from rich.console import Console

    from backends.watch.rows import TaskRow

    row = TaskRow(1, "500", 1, JobState.FAILED, 1, None, 3.0, "vm", log, None, None)
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    console.print(render_watch("x", PollUpdate({}, (), None, False, 4.0), [row]))
    text = console.export_text()
    assert log.replace("\x1b", "\\x1b") in text and "\x1b" not in text


def test_task_logs_of_an_array_job_needs_a_task(tmp_path):
    make_record(tmp_path)
    with pytest.raises(InputError, match="is an array; name one task, e.g. 500_1"):
        task_logs("500", dirs=[tmp_path])
    with pytest.raises(InputError, match="has no task 500_9"):
        task_logs("500_9", dirs=[tmp_path])


# --- hyperion-jobs logs: control characters escaped on a terminal, as-is when piped (issue 13) ------

HOSTILE_LOG = ("plain line\n"
               "\x1b]52;c;cm0gLXJmIH4vKg==\x07clipboard\n"      # OSC 52: writes `rm -rf ~/*` to the clipboard
               "\x1b]0;owned\x07title\n"                          # OSC 0: the window title
               "\x1b[2J\x1b[31mred\x1b[0m\n"                      # CSI: clear screen, colour
               "tab\there\n"
               "bidi \u202eevil\u202c text\n"
               "c1 \x9b31m csi\n")


def _on_a_pty(argv: list[str], env: dict[str, str]) -> str:
    """What `argv` writes to a terminal (a pty), with the terminal's CRLF turned back into LF."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:    # EIO: the child closed its end
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(master)
    return out.decode("utf-8").replace("\r\n", "\n")


def test_logs_escapes_control_characters_on_a_terminal(tmp_path, cli_env):
    record = make_record(tmp_path)
    Path(record.tasks[0].log).write_text(HOSTILE_LOG)
    shown = _on_a_pty(["hyperion-jobs", "logs", f"{record.path}:1"], cli_env)
    escaped = "".join(printable(line, layout=True) + "\n" for line in HOSTILE_LOG.splitlines())
    assert shown == escaped.replace("\\x1b[2J\\x1b[31mred\\x1b[0m", "red")   # complete CSI: dropped
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown and "\x9b" not in shown
    assert "\\x1b]52;c;cm0gLXJmIH4vKg==\\x07clipboard\n" in shown and "tab\there\n" in shown
    assert "bidi \\u202eevil\\u202c text" in shown


def test_logs_prints_the_bytes_as_they_are_when_piped_or_raw(tmp_path, cli_env):
    record = make_record(tmp_path)
    Path(record.tasks[0].log).write_text(HOSTILE_LOG)
    piped = run_cli("hyperion-jobs", "logs", f"{record.path}:1", env=cli_env)
    assert piped.returncode == 0 and piped.stdout == HOSTILE_LOG
    raw = _on_a_pty(["hyperion-jobs", "logs", f"{record.path}:1", "--raw"], cli_env)
    assert raw == HOSTILE_LOG


def test_bytes_of_a_log_that_are_not_utf8_show_as_a_replacement_on_a_terminal_and_as_they_are_piped(tmp_path, cli_env):
    """A program that printed latin-1 (`caf\\xe9`): a terminal shows `\ufffd` as `less` does (README),
    never the raw byte nor a traceback; a pipe gets the byte itself."""
    record = make_record(tmp_path)
    Path(record.tasks[0].log).write_bytes(b"caf\xe9 au lait\nnext\n")
    shown = _on_a_pty(["hyperion-jobs", "logs", f"{record.path}:1"], cli_env)
    assert shown == "caf\ufffd au lait\nnext\n"
    piped = subprocess.run(["hyperion-jobs", "logs", f"{record.path}:1"], env=cli_env, capture_output=True,
                           timeout=60)
    assert piped.returncode == 0 and piped.stdout == b"caf\xe9 au lait\nnext\n"


class _OnAPty:
    """`argv` running with stdout on a terminal (a pty), what it writes read as it comes."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.argv, self.env, self.out = argv, env, b""

    def __enter__(self) -> "_OnAPty":
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(self.argv, stdout=slave, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL, env=self.env)
        os.close(slave)
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self.master)

    @property
    def text(self) -> str:
        """What it wrote, the terminal's CRLF turned back into LF."""
        return self.out.decode(errors="replace").replace("\r\n", "\n")

    def shows(self, done, timeout: float = 30) -> bool:
        """Whether `done(text)` comes true within `timeout` s (checked once the output pauses)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([self.master], [], [], 0.2)[0]:
                self.out += os.read(self.master, 65536)
            elif done(self.text):
                return True
        return False


def test_logs_follow_escapes_appended_lines_on_a_terminal(tmp_path, cli_env):
    record = make_record(tmp_path, job=NEVER_JOB)
    log = Path(record.tasks[0].log)
    log.write_text("start\n")
    with _OnAPty(["hyperion-jobs", "logs", f"{record.path}:1", "-f"], cli_env) as term:
        with open(log, "a") as handle:
            handle.write("\x1b]0;owned\x07appended\n")
        assert term.shows(lambda text: "appended" in text)
        assert "start\n\\x1b]0;owned\\x07appended\n" in term.text and "\x1b" not in term.text


def _screen(output: str) -> list[str]:
    """The rows a terminal shows after `output`."""
    return [terminal_row(row).rstrip() for row in output.split("\n")]


PROGRESS = "".join(f"\r{p:3d}%|{'#' * (p // 10):<10}|" for p in range(0, 101, 5))   # tqdm's redraws


def test_logs_shows_a_progress_bar_as_its_last_redraw_on_a_terminal(tmp_path, cli_env):
    """A tqdm line on a terminal was every redraw, 21 of them, each `\\x0d` spelled out."""
    record = make_record(tmp_path)
    log = Path(record.tasks[0].log)
    log.write_text("epoch 1\n" + PROGRESS + " 2.1it/s\n" + "\x1b]0;owned\x07end\n")
    shown = _on_a_pty(["hyperion-jobs", "logs", f"{record.path}:1"], cli_env)
    assert shown == "epoch 1\n100%|##########| 2.1it/s\n\\x1b]0;owned\\x07end\n"
    assert run_cli("hyperion-jobs", "logs", f"{record.path}:1", env=cli_env).stdout == log.read_text()


def test_logs_on_a_terminal_says_how_much_above_a_line_over_32_mib_is_not_shown(tmp_path, cli_env):
    """A task that printed 40 MiB without a newline: `logs` showed `(the start of a line of over
    32 MiB not read; --raw prints it) …` and its end, neither how much of the log was left out (the
    lines above it too) nor which file holds it; the console's pane said nothing at all."""
    record = make_record(tmp_path, backend="local")
    log = Path(record.tasks[0].log)
    with open(log, "wb") as handle:
        handle.write(b"epoch 1\n" + b"x" * (40 << 20) + b"end")
    shown = _on_a_pty(["hyperion-jobs", "logs", f"{record.path}:1", "-n", "2"], cli_env).split("\n")
    left = log.stat().st_size - 512 * 1024                        # all but the line's last 512 KiB
    assert shown[0] == (f"… {left / 1e6:.1f} MB of the log above not shown (only about its last 512 KiB are read): "
                        f"less {log}")     # 32 MiB read of a 41.9 MB log, of which 41.4 MB not shown: untrue
    assert shown[0].startswith("… 41.4 MB of the log above not shown")
    assert shown[1] == "…" + "x" * (512 * 1024 - 3) + "end" and shown[2:] == [""]


def test_logs_follow_redraws_the_progress_bar_in_place_on_a_terminal(tmp_path, cli_env):
    """`logs -f` showed nothing of a running progress bar until its line ended."""
    record = make_record(tmp_path, job=NEVER_JOB)
    log = Path(record.tasks[0].log)
    log.write_text("start\n")
    with _OnAPty(["hyperion-jobs", "logs", f"{record.path}:1", "-f"], cli_env) as term:
        def screen_becomes(rows: list[str]) -> bool:
            return term.shows(lambda text: _screen(text) == rows)

        with open(log, "a") as handle:
            handle.write("\r 10%|#         |")
        assert screen_becomes(["start", " 10%|#         |"])
        with open(log, "a") as handle:
            handle.write("\r 20%|##\x1b]0;t\x07")     # an escape: that redraw whole, the longer one covered
        assert screen_becomes(["start", " 20%|##\\x1b]0;t\\x07"])
        with open(log, "a") as handle:
            handle.write(PROGRESS + " done\nnext\n")
        assert screen_becomes(["start", "100%|##########| done", "next", ""])
        assert "\x1b" not in term.text


def test_logs_follow_cuts_a_wide_open_line_to_one_row_of_a_narrow_terminal(tmp_path, cli_env):
    """The open line of `logs -f` is cut to the terminal's row by cells: a CJK progress line (two
    cells a character) on 40 columns stays one row at each redraw, none left behind above it. The
    width is the terminal's, not an exported `$COLUMNS` (80 here, from a wider window): taken from
    shutil, the line was cut to 79 cells, wrapped, and each redraw left its first row behind."""
    from rich.cells import cell_len
    from terminal import Terminal

    record = make_record(tmp_path, job=NEVER_JOB)
    log = Path(record.tasks[0].log)
    log.write_text("start\n")
    command = f"env COLUMNS=80 LINES=24 hyperion-jobs logs {record.path}:1 -f"
    with Terminal(command, 40, 10, tmp_path, cli_env["PATH"]) as term:
        term.wait_for_text("start")
        for percent in (10, 20, 30):
            with open(log, "a") as handle:
                handle.write(f"\r進捗 {percent}%: データを読み込んでいます、しばらくお待ちください")
            rows = [row for row in term.wait_for_text(f"進捗 {percent}%").splitlines() if row.strip()]
            assert rows[0] == "start" and len(rows) == 2, rows
            assert rows[1].startswith(f"進捗 {percent}%: データ") and cell_len(rows[1]) <= 39, rows


# --- hostile records and logs: one line, exit 2, never a hang (issue 13) ----------------------------

def _hostile_targets(tmp_path: Path) -> dict[str, str]:
    record = make_record(tmp_path)
    make_fifo(Path(record.tasks[0].log))                     # a FIFO where task 1's log should be
    Path(record.tasks[1].log).symlink_to("/dev/zero")
    q = tmp_path / "hostile" / "q"
    q.mkdir(parents=True)
    make_fifo(q / "fifo.submit.json")
    make_sparse(q / "sparse.submit.json", 1 << 30)
    (q / "bigint.submit.json").write_text(json.dumps({**json.loads(Path(record.path).read_text()),
                                                      "jobs": []})[:-1] + ', "x": ' + "9" * 5000 + "}")
    (q / "nested.submit.json").write_text("[" * 100_000 + "]" * 100_000)
    (q / "esc.submit.json").write_text('{"path": "\\u001b]0;owned\\u0007"}')
    return {"RECORD": record.path, "FIFO_RECORD": str(q / "fifo.submit.json"),
            "SPARSE_RECORD": str(q / "sparse.submit.json"), "BIGINT_RECORD": str(q / "bigint.submit.json"),
            "NESTED_RECORD": str(q / "nested.submit.json"), "ESC_RECORD": str(q / "esc.submit.json")}


@pytest.mark.parametrize("argv,field", [
    (["status", "FIFO_RECORD"], "record"),
    (["status", "SPARSE_RECORD"], "record"),
    (["status", "BIGINT_RECORD"], "record"),
    (["watch", "NESTED_RECORD"], "record"),
    (["status", "ESC_RECORD"], "record"),
    (["logs", "FIFO_RECORD:1"], "record"),
    (["logs", "RECORD:1"], "TASK"),                # its log is a FIFO
    (["logs", "RECORD:1", "-f"], "TASK"),
    (["logs", "RECORD:2"], "TASK"),                # its log is /dev/zero
    (["logs", "RECORD:" + "9" * 5000], "TASK"),
    (["logs", "1_" + "9" * 5000], "TASK"),
    (["status", "9" * 5000], "JOB|RECORD"),
    (["cancel", "9" * 5000 + "_1", "--yes"], "JOB"),
    (["logs", "RECORD:1", "-n", "9" * 5000], "-n/--lines"),
    (["list", "--limit", "9" * 5000], "--limit"),
    (["status", "\x1b]0;owned\x07"], "JOB|RECORD"),
    (["status", "0"], "JOB|RECORD"),            # no Slurm job is 0: squeue's refusal was "squeue failed", exit 1
    (["cancel", "0", "--yes"], "JOB"),
    (["logs", "00_1"], "TASK"),
])
def test_hostile_records_and_logs_are_one_line_exit_2(tmp_path, cli_env, argv, field):
    paths = _hostile_targets(tmp_path)

    def filled(text: str) -> str:
        for name, value in sorted(paths.items(), key=lambda item: -len(item[0])):
            text = text.replace(name, value)
        return text

    before = sorted(tmp_path.rglob("*"))
    result = run_cli("hyperion-jobs", *map(filled, argv), env=cli_env, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hyperion-jobs: error: {field}: "), result.stderr
    assert lines[0].isprintable() and "Traceback" not in result.stderr
    assert sorted(tmp_path.rglob("*")) == before


def test_a_record_nested_too_deep_is_said_in_a_users_words(tmp_path, cli_env):
    """It said `is not JSON: maximum recursion depth exceeded while decoding a JSON object from a
    unicode string`, Python's words, of a file that is JSON."""
    paths = _hostile_targets(tmp_path)
    result = run_cli("hyperion-jobs", "status", paths["NESTED_RECORD"], env=cli_env, timeout=60)
    assert result.stderr == (f"hyperion-jobs: error: record: {paths['NESTED_RECORD']} is not a record: "
                             "JSON nested deeper than Python reads\n"), result.stderr


TASK_FIELD_EDITS = [
    ("value", "1", 'tasks[0].value: expected an integer from 0 to 1000000000 or null, got "1"'),
    ("value", [1], "tasks[0].value: expected an integer"),
    ("array_task_id", {"a": 1}, "tasks[0].array_task_id: expected an integer"),
    ("log", ["a"], 'tasks[0].log: expected a path, got ["a"]'),
    ("log", None, "tasks[0].log: expected a path, got null"),
    ("log", 5, "tasks[0].log: expected a path, got 5"),          # os.stat(5) was the descriptor 5
]


@pytest.mark.parametrize("key,value,problem", TASK_FIELD_EDITS)
def test_a_record_with_a_task_field_of_the_wrong_type_is_one_line_and_list_skips_it(
        tmp_path, cli_env, key, value, problem):
    """A hand-edited task field made every command trace back, and `list` show no record at all."""
    good = make_record(tmp_path / "good")
    bad = make_record(tmp_path / "bad")
    data = json.loads(Path(bad.path).read_text())
    data["tasks"][0][key] = value
    Path(bad.path).write_text(json.dumps(data))
    for argv in (["status", bad.path], ["history", bad.path], ["usage", bad.path], ["logs", f"{bad.path}:2"],
                 ["retry", bad.path, "--dry-run"]):
        result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, (argv, result.stderr)
        assert result.stderr.startswith(f"hyperion-jobs: error: record: {bad.path}: {problem}"), result.stderr
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=cli_env, timeout=60)
    assert listed.returncode == 0 and good.path in listed.stdout and bad.path not in listed.stdout
    assert f"skipping {bad.path}: " in listed.stderr and "Traceback" not in listed.stderr


def test_a_record_holding_a_100000_digit_number_says_so_not_pythons_advice(tmp_path, cli_env):
    """A value of 100000 digits was refused in Python's words, "Exceeds the limit (4300 digits) for integer
    string conversion: value has 100000 digits; use sys.set_int_max_str_digits() to increase the limit":
    advice to change the interpreter, on every command and in `list`'s skip line."""
    bad = make_record(tmp_path)
    text = Path(bad.path).read_text()
    Path(bad.path).write_text(text.replace('"value": 1\n', '"value": ' + "1" * 100000 + "\n", 1))
    problem = f"hyperion-jobs: error: record: {bad.path} is not JSON: a number of 100000 digits (at most 4300)\n"
    for argv in (["status", bad.path], ["history", bad.path], ["usage", bad.path], ["logs", f"{bad.path}:2"],
                 ["retry", bad.path, "--dry-run"]):
        result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
        assert result.returncode == 2 and result.stderr == problem, (argv, result.stderr)
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=cli_env, timeout=60)
    assert "a number of 100000 digits" in listed.stderr and "sys.set_int_max_str_digits" not in listed.stderr


def test_a_record_whose_array_name_is_not_a_shell_identifier_is_refused_by_every_command(tmp_path, cli_env):
    """`"array_name": "J\\u001b[31mOB"` was shown by status, list and history; only retry refused it, as
    `--array: name ... is not a shell identifier`, a flag the user never gave."""
    good = make_record(tmp_path / "good")
    bad = make_record(tmp_path / "bad")
    path = Path(bad.path)
    path.write_text(path.read_text().replace('"array_name": "JOB"', '"array_name": "J\\u001b[31mOB\\u0007[bold]"', 1))
    problem = (f'hyperion-jobs: error: record: {bad.path}: array_name: "J\\u001b[31mOB\\u0007[bold]" '
               "is not a shell identifier ([A-Za-z_][A-Za-z0-9_]*)\n")
    for argv in (["status", bad.path], ["history", bad.path], ["usage", bad.path], ["retry", bad.path, "--dry-run"]):
        result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
        assert result.returncode == 2 and result.stderr == problem, (argv, result.stderr)
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=cli_env, timeout=60)
    assert listed.returncode == 0 and good.path in listed.stdout and bad.path not in listed.stdout
    assert f"skipping {bad.path}: " in listed.stderr and "array_name: " in listed.stderr
    assert "\x1b" not in listed.stdout + listed.stderr


def test_a_record_naming_no_site_file_is_still_read(tmp_path, cli_env):
    """`"cfg": ""` (a record made by hand or by a tool that had none): refusing it as "expected a path"
    made `logs JOB_1 -f` follow Slurm's .out instead of the task's log, and `status` lose the record."""
    record = make_record(tmp_path, values=(1,))
    path = Path(record.path)
    path.write_text(path.read_text().replace('"cfg": "conf/submit_test_cluster.yaml"', '"cfg": ""', 1))
    Path(record.tasks[0].log).write_text("the task's own line\n")
    shown = run_cli("hyperion-jobs", "logs", f"{record.path}:1", env=cli_env, timeout=60)
    assert shown.returncode == 0 and shown.stdout == "the task's own line\n", shown.stderr


RECORD_EDITS = [   # (what a hand or a damaged disk did to the record's text, the line that says so)
    (lambda t: t.replace('"job_id": "500"', '"job_id": "--user=root"', 1),
     'jobs[0].job_id: expected a Slurm job id (digits) or "local", got "--user=root"'),
    (lambda t: t.replace('"offset": 0', '"offset": 1e999'), "jobs[0].offset: expected an integer from 0 to"),
    (lambda t: t.replace('"attempt": 1,', '"attempt": 1000000000000000000,', 1),
     "attempt: expected an integer from 1 to 1000000, got 1000000000000000000"),
    (lambda t: t.replace('"value": 1\n', '"value": null\n'),
     "tasks[0].value: has no value, but the record is an array"),
    (lambda t: t.replace('x.1.log"', 'x.1\\u0000.log"'), "tasks[0].log: expected a path, got"),
    (lambda t: t.replace('x.1.log"', 'x.1\\ud800.log"'), "tasks[0].log: expected a path, got"),   # no file name
    (lambda t: t.replace('"cfg": "conf/', '"cfg": "\\ud800conf/'), "cfg: expected a path, got"),
    # a retry moving the earlier batch scripts aside traced back ('int' object has no attribute 'endswith')
    (lambda t: t.replace('"script": null', '"script": 5'), "script: expected a path or null, got 5"),
    (lambda t: t.replace('"script": null', '"script": ["x.sh"]'), 'script: expected a path or null, got ["x.sh"]'),
]


@pytest.mark.parametrize("edit,problem", RECORD_EDITS,
                         ids=["job_id", "offset", "attempt", "value", "nul", "surrogate", "cfg_surrogate",
                              "script_number", "script_list"])
def test_a_record_that_contradicts_itself_or_slurm_is_one_line_and_neighbours_skip_it(tmp_path, cli_env, edit,
                                                                                    problem):
    """`"offset": 1e999` made every command and a neighbour's submission trace back; a job id reached
    sacct as an option; a task without a value made a retry run the command once, without --array."""
    bad = make_record(tmp_path)
    text = Path(bad.path).read_text()
    assert edit(text) != text
    Path(bad.path).write_text(edit(text))
    for argv in (["status", bad.path], ["usage", bad.path], ["logs", f"{bad.path}:2"], ["cancel", bad.path],
                 ["retry", bad.path, "--dry-run"]):
        result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60, input="")
        assert result.returncode == 2 and result.stderr.count("\n") == 1, (argv, result.stderr)
        assert result.stderr.startswith(f"hyperion-jobs: error: record: {bad.path}: {problem}"), result.stderr
    # A submission to a log the damaged record names reads it as a neighbour: skipped, not a traceback.
    site = Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml"
    mine = run_cli("hyperion-submit", "local", "--cfg", str(site),
                   "--output-file", str(tmp_path / "exp" / "log" / "x.2.log"), "--", "true", env=cli_env, timeout=60)
    assert mine.returncode == 0 and "Traceback" not in mine.stderr, mine.stderr


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


def test_plain_watch_reattached_says_the_ends_the_ledger_held_in_task_order():
    """A watch into a pipe after a `status` recorded 500_2 CANCELLED: those ends are never polled, so the
    log of states read `500_1 COMPLETED`, `500_3 RUNNING` and nothing of 500_2 until the summary."""
    import io
    import re

    from backends.cli.jobs.watching import PlainView
    from backends.states import TaskState
    from backends.watch.rows import TaskRow
    from backends.watch.terminal import SafeStream

    def row(task: int, state: JobState, code: int | None = None) -> TaskRow:
        return TaskRow(task, "500", task, state, code, None, None, None, f"/exp/log/x.{task}.log", None, None)

    out = io.StringIO()
    view = PlainView("x", SafeStream(out))
    done, running = TaskState("500", 1, JobState.COMPLETED, 0), TaskState("500", 3, JobState.RUNNING)
    rows = [row(1, JobState.COMPLETED, 0), row(2, JobState.CANCELLED), row(3, JobState.RUNNING),
            row(4, JobState.FAILED, 3)]
    view.show(PollUpdate({done.key: done, running.key: running}, (running, done), None, False, 3.0), rows)
    ended = TaskState("500", 3, JobState.COMPLETED, 0)
    rows[2] = row(3, JobState.COMPLETED, 0)
    view.show(PollUpdate({done.key: done, ended.key: ended}, (ended,), None, True, 3.0), rows)
    lines = [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in out.getvalue().splitlines()]
    assert lines == ["500_1 COMPLETED exit 0", "500_2 CANCELLED", "500_3 RUNNING", "500_4 FAILED exit 3",
                     "500_3 COMPLETED exit 0"]


def test_watch_summary_ends_with_the_retry_hyperion_submit_names(tmp_path, capsys):
    """hyperion-submit ends failures with `rerun only those with: hyperion-jobs retry RECORD`; a watch,
    how to reattach to that wait, listed the failed tasks and left the user to find the record."""
    from backends.cli.jobs.watching import _ended
    from backends.retry_hint import usable_retry_command
    from backends.watch.rows import TaskRow
    from backends.watch.terminal import SafeStream

    record = make_record(tmp_path)
    rows = [TaskRow(v, "500", v, state, None, None, None, None, f"/exp/log/x.{v}.log", None, None)
            for v, state in ((1, JobState.COMPLETED), (2, JobState.CANCELLED))]
    command = usable_retry_command(record)
    assert command is not None and record.path in command
    assert _ended(SafeStream(sys.stdout), rows, command) == 1
    assert capsys.readouterr().out.splitlines()[-1] == f"  rerun only those with: {command}"
    assert _ended(SafeStream(sys.stdout), rows, command, "JOB", (7, 8)) == 1
    assert capsys.readouterr().out.splitlines()[-1] == \
        f"  rerun those and submit JOB=7-8 (not submitted, below) with: {command}"
    _ended(SafeStream(sys.stdout), rows[:1], command)                 # all succeeded: nothing to rerun
    assert "rerun" not in capsys.readouterr().out


def test_lines_and_the_live_title_show_a_hostile_record_path_escaped(tmp_path):
    """A record made before hyperion-submit refused such paths (or by hand) still reaches the terminal as text:
    every progress line and the live view's title escape it."""
    import io

    from rich.console import Console

    from backends.cli.jobs.watching import render_watch
    from backends.watch.terminal import SafeStream

    out = io.StringIO()
    SafeStream(out).line("record /exp\x1b]0;owned\x07/q/t.JOB.submit.json; slurm said \x9b31m")
    assert out.getvalue() == "record /exp\\x1b]0;owned\\x07/q/t.JOB.submit.json; slurm said \\x9b31m\n"
    console = Console(width=160, record=True, color_system=None, file=io.StringIO())
    console.print(render_watch("/exp\x1b]0;owned\x07/q/t.JOB.submit.json", PollUpdate({}, (), None, False, 4.0), []))
    text = console.export_text()
    assert "/exp\\x1b]0;owned\\x07/q/t.JOB.submit.json" in text and "\x1b" not in text and "\x07" not in text


def test_status_rows_carry_reason_and_restart_count_into_json(tmp_path):
    from backends.states import TaskState

    record = make_record(tmp_path)
    states = {("500", 1): TaskState("500", 1, JobState.PENDING, reason="Priority"),
              ("500", 2): TaskState("500", 2, JobState.RUNNING, restart_count=2)}
    rows = record_rows(record, states)
    assert [r.state_text for r in rows[:2]] == ["PENDING (Priority)", "RUNNING (restart 2)"]
    assert rows[0].to_json()["reason"] == "Priority" and rows[1].to_json()["restart_count"] == 2


def test_watch_says_while_squeue_hangs_and_ctrl_c_ends_it_at_once(tmp_path, cli_env):
    """hyperion-jobs watch into a pipe while squeue hangs: after 5 s a line says the controller
    has not answered (nothing was printed until the 30 s timeout), after the recorded ends; Ctrl-C then exits 130 at once
    and the hung squeue is gone with it."""
    import re
    import signal

    from test_console_fixtures import build_history

    bin_dir, pids = tmp_path / "bin", tmp_path / "pids"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 3600\n")
    (bin_dir / "squeue").chmod(0o755)
    record = build_history(tmp_path, Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml",
                           unfinished=(7, 8))
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    proc = subprocess.Popen(["hyperion-jobs", "watch", str(record)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        said = b""               # the ends the ledger holds (values 1-6) come first, then the notice
        while b"not answering" not in said and select.select([proc.stdout], [], [], 15)[0]:
            more = os.read(proc.stdout.fileno(), 65536)
            said += more
            if not more:
                break
        lines = said.decode().splitlines()
        assert [line.split()[1] for line in lines[:-1]] == [f"4242_{task}" for task in range(1, 7)], lines
        assert re.search(r"controller \(squeue\) not answering for [56] s: squeue has not returned yet",
                         lines[-1]), lines
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 130, proc.stderr.read()
        assert time.monotonic() - asked < 2.0
    finally:
        if proc.poll() is None:
            proc.kill()
    pgid = int(pids.read_text().split()[0])
    deadline = time.monotonic() + 2
    while _group_runs(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_runs(pgid)


def _group_runs(pgid: int) -> bool:
    """Whether a process of group `pgid` runs (zombies left for init to reap do not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


@pytest.mark.parametrize("argv,field", [
    (["status", "5", "--dir", "LOOP"], "--dir"),
    (["history", "5", "--dir", "LOOP"], "--dir"),
    (["logs", "5_1", "--dir", "LOOP"], "--dir"),
    (["list", "LOOP"], "DIR"),
])
def test_a_directory_argument_that_is_a_symlink_loop_is_one_line_exit_2(tmp_path, cli_env, argv, field):
    """`--dir` naming a symlink loop traced back (RuntimeError from Path.resolve) before Slurm was asked."""
    loop = make_symlink_loop(tmp_path / "loop")
    result = run_cli("hyperion-jobs", *[str(loop) if a == "LOOP" else a for a in argv], env=cli_env, timeout=60)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr == f"hyperion-jobs: error: {field}: {loop}: a symlink loop\n"


@pytest.mark.parametrize("argv,field,kind", [
    (["list", "FIFO"], "DIR", "a FIFO"),
    (["list", "/dev/zero"], "DIR", "a character device"),
    (["status", "5", "--dir", "FIFO"], "--dir", "a FIFO"),
])
def test_a_directory_argument_that_is_a_fifo_or_a_device_is_one_line_exit_2(tmp_path, cli_env, argv, field, kind):
    """`list FIFO` said "no submit records under ..." and exited 0, as if an empty folder."""
    fifo = make_fifo(tmp_path / "fifo")
    argv = [str(fifo) if a == "FIFO" else a for a in argv]
    named = next(a for a in argv if a in (str(fifo), "/dev/zero"))
    result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=60)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr == f"hyperion-jobs: error: {field}: {named}: not a directory or a record but {kind}\n"


@pytest.mark.parametrize("follow", [False, True], ids=["logs", "logs -f"])
def test_a_log_the_user_may_not_read_is_one_line_not_an_empty_success(rightless_dir, cli_env, follow):
    """A teammate's log under umask 077: `logs` printed nothing and exited 0, `logs -f` waited in silence."""
    from conftest import without_rights

    record = make_record(rightless_dir, backend="local")
    log = Path(record.tasks[0].log)
    log.write_text("private\n")
    log.chmod(0o000)
    argv = ["hyperion-jobs", "logs", f"{record.path}:1", *(["-f"] if follow else [])]
    result = run_cli(*without_rights(*argv), env=cli_env, timeout=30)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr == f"hyperion-jobs: error: TASK: cannot read the log {log}: Permission denied\n"


@pytest.mark.parametrize("follow", [False, True], ids=["logs", "logs -f"])
@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_log_path_that_is_not_a_regular_file_is_one_line_not_a_hang(tmp_path, cli_env, kind, follow):
    record = make_record(tmp_path, backend="local")
    log = Path(record.tasks[0].log)
    {"fifo": lambda: os.mkfifo(log), "device": lambda: log.symlink_to("/dev/zero"), "folder": log.mkdir}[kind]()
    argv = ["hyperion-jobs", "logs", f"{record.path}:1", *(["-f"] if follow else [])]
    result = run_cli(*argv, env=cli_env, timeout=30)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr == f"hyperion-jobs: error: TASK: the log {log} is not a regular file\n"


@pytest.mark.parametrize("command", ["status", "logs"])
def test_a_record_in_a_folder_the_user_may_not_enter_is_named_so(rightless_dir, cli_env, command):
    """A teammate's q/ under umask 077: the record was '... is neither a job id nor a submit record'."""
    from conftest import without_rights

    record = make_record(rightless_dir, backend="local")
    Path(record.path).parent.chmod(0o000)
    target = record.path + (":1" if command == "logs" else "")
    result = run_cli(*without_rights("hyperion-jobs", command, target), env=cli_env, timeout=30)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr == f"hyperion-jobs: error: record: cannot read {record.path}: Permission denied\n"


@pytest.mark.parametrize("locked", ["q", "log"])
def test_list_names_a_folder_it_may_not_list_instead_of_no_records(rightless_dir, cli_env, locked):
    """A teammate's q/ (or the folder above it) under umask 077: `list` said only "no submit records
    under DIR", exit 0, as if nothing had ever been submitted there."""
    from conftest import without_rights

    record = make_record(rightless_dir, backend="local")
    folder = Path(record.path).parent if locked == "q" else Path(record.path).parent.parent
    folder.chmod(0o000)
    result = run_cli(*without_rights("hyperion-jobs", "list", str(rightless_dir)), env=cli_env, timeout=60)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert f"no submit records under {rightless_dir}" in result.stdout
    assert f"hyperion-jobs: cannot list {folder} (Permission denied); records in it are not shown\n" \
        in result.stderr


@pytest.mark.parametrize("command", ["history", "status"])
def test_an_attempts_folder_named_by_a_digit_int_refuses_is_ignored(tmp_path, cli_env, command):
    """q/attempts/² (a Unicode digit: str.isdigit() says yes, int() says no) holding a copy of the
    record made every reader of the record's history (history, status, logs, retry, the console)
    trace back with "invalid literal for int()"."""
    record = make_record(tmp_path, backend="local")
    odd = Path(record.path).parent / "attempts" / "\u00b2"
    odd.mkdir(parents=True)
    shutil.copy(record.path, odd)
    result = run_cli("hyperion-jobs", command, record.path, env=cli_env, timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "NOT_RUN" in result.stdout, result.stdout


def test_a_large_ledger_is_held_once_in_memory_not_twice(tmp_path, cli_env):
    """Every bounded read (ledger, record, site file) joined 1 MiB chunks at the end, holding the file
    twice: `history` of a record whose ledger is 900 MB (within the 1 GiB cap) peaked at 1.9 GB."""
    record = make_record(tmp_path, backend="local")
    size = 256 * 1024 * 1024
    ledger = Path(record.path).with_name("x.JOB.attempts.jsonl")
    with open(ledger, "wb") as handle:
        handle.truncate(size)                            # sparse: costs no disk
    # A child's ru_maxrss counts the memory of the process it was forked from (pytest's, 384 MB late in
    # a whole-suite run): a small launcher starts the command and reports the command's own peak.
    launcher = ("import os, subprocess, sys; child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, "
                "stderr=subprocess.DEVNULL); _, status, usage = os.wait4(child.pid, 0); "
                "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", launcher, "hyperion-jobs", "history", record.path], env=cli_env,
                          capture_output=True, text=True, timeout=300)
    returncode, maxrss = (int(word) for word in done.stdout.split())
    assert returncode == 0
    assert maxrss * 1024 < size * 1.5, f"peak {maxrss // 1024} MB for a {size >> 20} MB ledger"


def test_no_command_lists_the_commands(capsys):
    """`hyperion-jobs` alone said "COMMAND: required" and left the user to find out which there are."""
    assert main([]) == 2
    assert capsys.readouterr().err == ("hyperion-jobs: error: COMMAND: required (choose from 'list', 'status', "
                                       "'history', 'usage', 'retry', 'watch', 'logs', 'cancel')\n")


def test_a_folder_of_several_records_names_a_few_of_them(tmp_path, capsys, monkeypatch):
    """`status exp/log/q` said "holds 2 records; name one of them" and named none."""
    (tmp_path / "log" / "q").mkdir(parents=True)
    for age, name in enumerate("abcd"):
        record = tmp_path / "log" / "q" / f"{name}.JOB.submit.json"
        record.write_text("{}")
        os.utime(record, (1000 + age, 1000 + age))
    monkeypatch.chdir(tmp_path)
    assert main(["status", "log/q"]) == 2
    assert capsys.readouterr().err == ("hyperion-jobs: error: RECORD: log/q holds 4 records; name one of them: "
                                       "log/q/d.JOB.submit.json, log/q/c.JOB.submit.json, log/q/b.JOB.submit.json "
                                       "and 1 more\n")


def test_watch_view_at_80_columns_keeps_the_end_of_a_long_log_path(tmp_path):
    """Rich cut the LOG cell on the right: every row read '/tmp/h25/work/e…', the file name that tells
    the tasks apart was gone. The cell now keeps the path's end, on one line."""
    import io

    from rich.console import Console

    from backends.watch.rows import TaskRow

    logs = [f"/home/researcher/recipes/voxceleb/v1/exp/feats/log/make_feats.{v}.log" for v in (7, 13)]
    rows = [TaskRow(v, "500", v, JobState.FAILED, 3, None, 3.0, "vm", log, None, None)
            for v, log in zip((7, 13), logs)]
    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    console.print(render_watch("x", PollUpdate({}, (), None, False, 4.0), rows))
    lines = console.export_text().splitlines()
    for value in (7, 13):
        (line,) = [line for line in lines if f"500_{value} " in line]
        assert f"…/make_feats.{value}.log" in line or f"/log/make_feats.{value}.log" in line, line
        assert len(line) <= 80
    assert len([line for line in lines if "500_" in line]) == 2      # one line per row, never wrapped
    wide = Console(width=200, record=True, color_system=None, file=io.StringIO())
    wide.print(render_watch("x", PollUpdate({}, (), None, False, 4.0), rows))
    assert logs[0] in wide.export_text()                              # whole where it fits


def test_watch_of_a_big_array_shows_its_running_tasks_when_not_all_rows_fit(tmp_path):
    """A 300-task array at 80x24: in value order its 40 early failures filled the table and the two
    tasks running now were among `... and 260 more`. Running tasks come first, then failures, then
    the waiting, and the last line says what was left out."""
    import io

    from rich.console import Console

    from backends.watch.rows import TaskRow

    def state(value: int) -> JobState:
        return (JobState.FAILED if value <= 40 else JobState.COMPLETED if value <= 60
                else JobState.RUNNING if value <= 62 else JobState.PENDING)

    rows = [TaskRow(v, "500", v, state(v), 1 if state(v) is JobState.FAILED else None, None, 3.0, "vm",
                    f"/exp/log/t.{v}.log", None, None) for v in range(1, 301)]
    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    console.print(render_watch("x", PollUpdate({}, (), None, False, 4.0), rows, max_rows=10))
    lines = console.export_text().splitlines()
    listed = [line.split()[1] for line in lines if "500_" in line]
    assert listed == ["500_61", "500_62"] + [f"500_{v}" for v in range(1, 9)], lines
    assert lines[-1] == "... and 270 more: FAILED 32, PENDING 238", lines
    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    console.print(render_watch("x", PollUpdate({}, (), None, False, 4.0), rows[35:65], max_rows=20))
    listed = [line.split()[1] for line in console.export_text().splitlines() if "500_" in line]
    assert listed == [f"500_{v}" for v in (*range(36, 41), *range(61, 66))]     # all fit: value order


def test_keep_tail_counts_wide_characters_as_two_cells():
    from rich.cells import cell_len

    from backends.cli.jobs.tail_cell import keep_tail

    assert keep_tail("/a/b.log", 20) == "/a/b.log"
    assert keep_tail("/exp/語音/log/x.1.log", 14) == "…/log/x.1.log"     # 音 needs 2 cells, 1 is left
    cut = keep_tail("/exp/語音語音/x.log", 10)
    assert cut.startswith("…") and cut.endswith("x.log") and cell_len(cut) <= 10


@pytest.mark.parametrize("command", ["status", "history", "logs"])
def test_a_job_id_looked_up_under_dir_names_the_folders_it_may_not_list(rightless_dir, cli_env, command):
    """`status JOB --dir DIR` walks DIR for the record that submitted JOB; a teammate's q/ under umask 077
    was skipped without a word (`list` names it), so the job showed without its record and logs."""
    from conftest import without_rights

    record = make_record(rightless_dir, backend="local")
    folder = Path(record.path).parent
    folder.chmod(0o000)
    result = run_cli(*without_rights("hyperion-jobs", command, "999999990", "--dir", str(rightless_dir)),
                     env=cli_env, timeout=60)
    assert "Traceback" not in result.stderr and result.returncode in (1, 2), result.stderr
    assert f"hyperion-jobs: cannot list {folder} (Permission denied); records in it are not shown\n" \
        in result.stderr, result.stderr


@pytest.mark.parametrize("named", ["q", "log"])
@pytest.mark.parametrize("command", ["status", "logs"])
def test_a_folder_named_whose_q_may_not_be_listed_says_so(rightless_dir, cli_env, command, named):
    """`status exp/log/q` (or exp/log) of a teammate's q/ under umask 077 said "'exp/log/q' is neither a
    job id nor a submit record", as if the folder held none: it names the folder it could not list."""
    from conftest import without_rights

    record = make_record(rightless_dir, backend="local")
    q = Path(record.path).parent
    q.chmod(0o000)
    folder = q if named == "q" else q.parent
    target = str(folder) + (":1" if command == "logs" else "")
    result = run_cli(*without_rights("hyperion-jobs", command, target), env=cli_env, timeout=30)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr == f"hyperion-jobs: error: RECORD: cannot list {q} (Permission denied); " \
                            "its records cannot be read\n", result.stderr


def test_a_records_values_left_out_by_a_refused_window_are_checked_and_its_refusal_shown_as_text(tmp_path):
    """A record of a submission sbatch refused a later window of keeps the values left out and sbatch's
    line; a hand-edited one is refused naming the field, and the line (a file's text) is never markup
    or control codes when status tells it."""
    from backends.records.record import load_record, record_json

    record = make_record(tmp_path)
    path = Path(record.path)
    assert "unsubmitted" not in json.loads(path.read_text())          # every window went in: as before
    data = record_json(record)
    data.update(unsubmitted=[2999], refused="sbatch failed: \x1b[31m[bold]no[/bold]\u202e")
    path.write_text(json.dumps(data))
    assert load_record(path).unsubmitted == (2999,)
    status = run_cli("hyperion-jobs", "status", str(path), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    # (a line saying Slurm knows no job 500 may come first: whether the test cluster has had a job 500 yet)
    assert any(line.startswith("hyperion-jobs: JOB=2999 of attempt 1 not submitted: sbatch failed: "
                               "\\x1b[31m[bold]no[/bold]\\u202e; submit them with: hyperion-jobs retry ")
               for line in status.stderr.splitlines()), status.stderr
    assert "\x1b" not in status.stderr and "\u202e" not in status.stderr
    for bad in (["x"], [0], "2999", [True]):
        path.write_text(json.dumps({**data, "unsubmitted": bad}))
        refused = run_cli("hyperion-jobs", "status", str(path), cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "unsubmitted" in refused.stderr and "Traceback" not in refused.stderr
    # as hyperion-submit never writes them: without sbatch's line, a value twice, a value the record ran
    for edit, problem in (({"refused": None}, "unsubmitted: values left out without sbatch's reason "
                           "(refused is missing or null)"),
                          ({"unsubmitted": [2999, 2999]}, "unsubmitted[1]: 2999 is listed twice"),
                          ({"unsubmitted": [2999, 2]}, "unsubmitted[1]: 2 is also one of the record's tasks, "
                           "which ran it")):
        path.write_text(json.dumps({**data, **edit}))
        refused = run_cli("hyperion-jobs", "status", str(path), cwd=tmp_path)
        assert refused.returncode == 2 and refused.stdout == "", refused.stderr
        assert refused.stderr == f"hyperion-jobs: error: record: {path}: {problem}\n", refused.stderr


def test_every_look_at_a_record_with_values_left_out_says_so(tmp_path):
    """A record sbatch refused a later window of, its tasks all COMPLETED: `status --failures` said
    `no failed tasks` and returned before the line, `status --json` gave exit_status 0 (watch exits 1),
    and `list` and `history` read `COMPLETED 2` as if the run were whole."""
    from test_console_fixtures import build_local_record

    path = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("COMPLETED", 0)})
    data = json.loads(path.read_text())
    data.update(unsubmitted=[3, 4], refused="sbatch failed (exit 1): Invalid job array specification")
    path.write_text(json.dumps(data))
    line = (f"hyperion-jobs: JOB=3-4 of attempt 1 not submitted: sbatch failed (exit 1): Invalid job array "
            f"specification; submit them with: hyperion-jobs retry {path}\n")
    failures = run_cli("hyperion-jobs", "status", str(path), "--failures", cwd=tmp_path)
    assert failures.returncode == 0 and failures.stderr == line, failures.stderr
    as_json = json.loads(run_cli("hyperion-jobs", "status", str(path), "--json", cwd=tmp_path).stdout)
    assert as_json["exit_status"] == 1 and as_json["unsubmitted"] == [3, 4]
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), cwd=tmp_path)
    assert listed.returncode == 0 and "COMPLETED 2, NOT_SUBMITTED 2" in listed.stdout, listed.stdout
    assert json.loads(run_cli("hyperion-jobs", "list", str(tmp_path), "--json", cwd=tmp_path).stdout)[
        "records"][0]["unsubmitted"] == [3, 4]
    history = run_cli("hyperion-jobs", "history", str(path), cwd=tmp_path)
    assert history.returncode == 0 and "COMPLETED 2, NOT_SUBMITTED 2" in history.stdout, history.stdout
    assert json.loads(run_cli("hyperion-jobs", "history", str(path), "--json", cwd=tmp_path).stdout)[
        "attempts"][0]["unsubmitted"] == [3, 4]


def test_status_of_an_archived_attempt_record_names_the_live_record_to_retry(tmp_path):
    """`status q/attempts/1/x.submit.json` (an attempt's kept record) tells the values left out with the
    retry of the live record, q/x.submit.json: a retry of the archived copy is not what submits them."""
    import shutil

    from test_console_fixtures import build_local_record

    path = build_local_record(tmp_path, {1: ("COMPLETED", 0)})
    data = json.loads(path.read_text())
    data.update(unsubmitted=[3], refused="sbatch failed (exit 1): Invalid job array specification")
    path.write_text(json.dumps(data))
    archived = path.parent / "attempts" / "1" / path.name
    archived.parent.mkdir(parents=True)
    shutil.copy(path, archived)
    status = run_cli("hyperion-jobs", "status", str(archived), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert status.stderr.endswith(f"; submit them with: hyperion-jobs retry {path}\n"), status.stderr


def test_status_says_when_accounting_has_not_given_the_usage_of_ended_tasks(tmp_path, cli_env,
                                                                             slurm_knows_none_of_these_jobs):
    """Right after a run, sacct had not the tasks' usage yet: the memory, CPU and time columns were left
    out without a word, as if nothing were measured; the next status showed them."""
    from test_console_fixtures import build_history, ended_just_now

    record = build_history(tmp_path, Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml")
    # the fixture's Slurm (first on PATH), that knows none of its jobs, before this interpreter's scripts
    env = {**cli_env, "PATH": f"{os.environ['PATH'].split(os.pathsep)[0]}{os.pathsep}{cli_env['PATH']}"}
    early = run_cli("hyperion-jobs", "status", str(record), cwd=tmp_path, env=env)
    assert early.returncode == 0, early.stderr
    assert "MEM USED/REQ" not in early.stdout
    assert early.stderr == ("hyperion-jobs: Slurm's accounting has not given the usage of 8 ended task(s) yet "
                            "(memory, CPU and time used are shown once it has); the next status asks again\n")
    ended_just_now(record)                               # the ledger holds what each used
    later = run_cli("hyperion-jobs", "status", str(record), cwd=tmp_path, env=env)
    assert "MEM USED/REQ" in later.stdout and later.stderr == "", later.stderr


def test_status_says_when_accounting_gave_only_the_allocation_row_of_ended_tasks(tmp_path, cli_env):
    """Right after a run sacct had each task's allocation row (its request, limit and time) but not yet
    its batch step's MaxRSS and CPU time: `status` showed `-/100M` and `-` in the memory and CPU
    columns without a word, where README says it names the tasks accounting has not measured yet.
    Once the hour in which a peak is still asked for is over, it no longer promises one."""
    from test_console_fixtures import build_history

    record = build_history(tmp_path, Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml")
    bin_dir = tmp_path / "slurm-bin"
    bin_dir.mkdir()
    rows = "".join(f"4242_{v}|{4242 + v}|COMPLETED|0:0|00:00:31|node01|2026-09-21T11:59:29|"
                   f"2026-09-21T12:00:00|None|||00:06:00|100M|1|billing=1,cpu=1,mem=100M,node=1\n"
                   for v in range(1, 9))      # MaxRSS and TotalCPU empty: the steps not in yet
    (bin_dir / "sacct").write_text(f"#!/bin/sh\ncat <<'EOF'\n{rows}EOF\n")
    (bin_dir / "squeue").write_text("#!/bin/sh\nexit 0\n")
    for name in ("sacct", "squeue"):
        (bin_dir / name).chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    early = run_cli("hyperion-jobs", "status", str(record), cwd=tmp_path, env=env)
    assert early.returncode == 0, early.stderr
    assert "-/100M" in early.stdout, early.stdout
    assert early.stderr == ("hyperion-jobs: Slurm's accounting has not given the usage of 8 ended task(s) yet "
                            "(memory, CPU and time used are shown once it has); the next status asks again\n")
    # the ends were recorded long ago (the fixture's 2026-09-21): past the hour, no peak is asked for
    # again, and none is promised
    later = run_cli("hyperion-jobs", "status", str(record), cwd=tmp_path, env=env)
    assert later.returncode == 0 and "-/100M" in later.stdout, later.stdout
    assert later.stderr == "", later.stderr


def test_watch_summary_says_a_log_never_written_is_missing(tmp_path, capsys):
    """A task cancelled while pending wrote no log: watch's end named the path as if there to read;
    hyperion-submit's own report says `(missing)`."""
    from backends.cli.jobs.watching import _ended
    from backends.watch.rows import TaskRow
    from backends.watch.terminal import SafeStream

    written = tmp_path / "x.1.log"
    written.write_text("# Running: true\n")
    rows = [TaskRow(v, "500", v, JobState.CANCELLED, None, None, None, None, str(tmp_path / f"x.{v}.log"), None, None)
            for v in (1, 2)]
    _ended(SafeStream(sys.stdout), rows)
    out = capsys.readouterr().out.splitlines()
    assert f"  500_1 CANCELLED exit - log {written}" in out
    # it never started (no node, no time): no log was ever to be, not one lost; said once, not as
    # `log no log (never started)`, the word `log` twice
    assert "  500_2 CANCELLED exit - no log (never started)" in out
    assert not any("log no log" in line for line in out), out


def test_watch_table_says_no_log_of_a_task_cancelled_while_pending_as_status_does(tmp_path):
    """watch's live table named the log path of a task cancelled while pending (none was ever written),
    where `status` and watch's own closing lines say `no log (never started)` (h200)."""
    import io

    from rich.console import Console

    from backends.watch.rows import TaskRow

    never = TaskRow(3, "500", 3, JobState.CANCELLED, None, None, None, None, str(tmp_path / "slow.3.log"), None, None)
    running = TaskRow(1, "500", 1, JobState.RUNNING, None, None, 5.0, "vm", str(tmp_path / "slow.1.log"), None, None)
    console = Console(width=160, record=True, color_system=None, file=io.StringIO())
    console.print(render_watch("x", PollUpdate({}, (), None, False, 4.0), [running, never]))
    text = console.export_text()
    line = next(line for line in text.splitlines() if "500_3" in line)
    assert "no log (never started)" in line and "slow.3.log" not in line, text
    assert str(tmp_path / "slow.1.log") in text       # a running task's log is named, unlooked at


@pytest.mark.parametrize(("run", "said"), [
    (LaterRun(2, (2, 5), (None, None)), "attempt 2 reruns values 2,5 (no end recorded yet)"),
    (LaterRun(3, (5,), ("COMPLETED",)), "attempt 3 reran value 5 (COMPLETED 1)"),
    (LaterRun(2, (2, 3, 7), ("FAILED", None, "COMPLETED")),
     "attempt 2 reran values 2-3,7 (COMPLETED 1, FAILED 1, 1 with no end recorded yet)"),
    (LaterRun(2, (None,), (None,)), "attempt 2 reruns the job (no end recorded yet)"),
])
def test_a_later_attempt_names_its_values_and_their_ends(run, said):
    """`status JOB` of a job a retry reran said `(now not ended 1)`: no attempt, no values, and a state
    that is none; it names them as `status RECORD`'s ATTEMPT column and `history` do."""
    assert later_run_text(run) == said


def test_status_marks_a_missing_log_of_a_task_that_did_not_complete_and_leaves_completed_ones_unlooked(tmp_path):
    """A task that started and wrote no log (Slurm could not open it: FAILED 0:53 on a node) was
    unmarked once only never-started tasks were looked at (a review); a completed task's log is not
    looked for (a stat per row of a 100,000-task array on a cold NFS cache)."""
    from backends.cli.jobs.table import log_cell
    from backends.watch.rows import TaskRow

    def row(state: JobState, name: str, node: str | None = "vm", elapsed: float | None = 3.0) -> TaskRow:
        return TaskRow(1, "99", 1, state, None, None, elapsed, node, str(tmp_path / name), None, None)

    (tmp_path / "there.log").write_text("x\n")
    assert log_cell(row(JobState.FAILED, "gone.log")) == f"{tmp_path / 'gone.log'} (missing)"
    assert log_cell(row(JobState.CANCELLED, "gone.log", None, 0.0)) == "no log (never started)"   # cancelled pending
    assert log_cell(row(JobState.CANCELLED, "gone.log")) == f"{tmp_path / 'gone.log'} (missing)"   # it ran
    assert log_cell(row(JobState.FAILED, "there.log")) == str(tmp_path / "there.log")
    assert log_cell(row(JobState.COMPLETED, "gone.log")) == str(tmp_path / "gone.log")
    assert log_cell(row(JobState.RUNNING, "gone.log")) == str(tmp_path / "gone.log")


def test_the_owners_of_others_jobs_are_found_by_uid_and_named():
    """`cancel` names whose job it asks about (a mistyped id of a colleague's job read `Cancel 3025?`
    alone): by uid, as a container without a passwd entry for you knows you by number and squeue by
    name; a job squeue did not list is nobody's to name."""
    from backends.watch.slurm.cancel import others_jobs, whose
    owners = {"41": ("1001", "ana"), "42": ("1000", "me"), "43": ("1002", "")}
    others = others_jobs(["41_2", "41_3", "42", "43", "44"], owners, 1000)
    assert others == {"41": "ana", "43": "1002"}
    assert whose(others) == " (job 41 is ana's) (job 43 is 1002's)"
    assert others_jobs(["42"], {"42": ("1000", "1000")}, 1000) == {}


def test_help_names_every_command_in_its_first_line(capsys):
    """`hyperion-jobs --help` said 'list, status, watch, logs and cancel': usage, history and retry,
    which users look for there, were only in the list of commands below it."""
    from backends.cli.jobs.parser import build_parser

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    described = capsys.readouterr().out.split("\n\n")[1].replace("\n", " ")
    commands = build_parser()._subparsers._group_actions[0].choices
    assert commands and all(name in described for name in commands), (described, list(commands))
