"""hyperion-jobs on a record of a real local run (no Slurm needed)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import kill_groups, run_cli

from backends.records.attempts import parse_ledger
from backends.records.runner import child_running, process_start, runner_fields, runner_gone


def test_status_and_watch_of_a_local_array_that_stopped_at_a_failure(tmp_path, cli_env, test_site):
    (tmp_path / "task.sh").write_text('echo "value $IDX"; [ "$IDX" = 2 ] && exit 4; exit 0\n')
    submitted = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
                        "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", cwd=tmp_path, env=cli_env)
    assert submitted.returncode == 1, submitted.stderr
    record = tmp_path / "log" / "q" / "r.IDX.submit.json"

    status = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert [(t["value"], t["state"], t["exit_code"]) for t in shown["tasks"]] == [
        (1, "COMPLETED", 0), (2, "FAILED", 4), (3, "NOT_RUN", None)]
    assert shown["exit_status"] == 1
    assert [t["node"] for t in shown["tasks"][:2]] == [socket.gethostname()] * 2   # as the log header says

    watch = run_cli("hyperion-jobs", "watch", str(tmp_path / "log" / "q"), env=cli_env, timeout=30)
    assert watch.returncode == 1 and "3 tasks: COMPLETED 1, FAILED 1, NOT_RUN 1" in watch.stdout
    # each task's line and the closing list read as for a Slurm array: task id, state, exit code, log
    lines = [line.split(" ", 1)[1] for line in watch.stdout.splitlines() if line[:2].isdigit()]
    assert lines == ["local_1 COMPLETED exit 0", "local_2 FAILED exit 4", "local_3 NOT_RUN"], watch.stdout
    assert f"  local_2 FAILED exit 4 log {tmp_path}/log/r.2.log" in watch.stdout.splitlines(), watch.stdout

    logs = run_cli("hyperion-jobs", "logs", f"{record}:2", env=cli_env)
    assert logs.returncode == 0 and "value 2" in logs.stdout


def test_status_names_no_log_of_a_value_the_local_run_never_reached_rather_than_a_missing_one(
        tmp_path, cli_env, test_site) -> None:
    """`status` of a local array that stopped at value 2's failure showed value 3's LOG as
    `.../r.3.log (missing)`, which reads as a log that was lost; the run never reached it, so it never
    wrote one: `no log (never started)`, as for a Slurm task cancelled while pending."""
    (tmp_path / "task.sh").write_text('[ "$IDX" = 2 ] && exit 4; exit 0\n')
    run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
            "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", cwd=tmp_path, env=cli_env)
    record = tmp_path / "log" / "q" / "r.IDX.submit.json"
    status = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
    assert status.returncode == 0, status.stderr
    rows = {line.split()[0]: line for line in status.stdout.splitlines() if line.startswith("local_")}
    assert rows["local_3"].split()[2] == "NOT_RUN" and rows["local_3"].endswith("no log (never started)"), rows
    assert "(missing)" not in status.stdout, status.stdout
    assert rows["local_2"].endswith(f"{tmp_path}/log/r.2.log"), rows


def test_logs_follow_of_a_value_the_ended_local_run_never_reached_says_so_instead_of_waiting(
        tmp_path, cli_env, test_site) -> None:
    """`logs RECORD:3 -f` of a NOT_RUN value printed "waiting for .../r.3.log" for ever: the run
    had stopped at value 2's failure, and no one would ever write that log."""
    (tmp_path / "task.sh").write_text('[ "$IDX" = 2 ] && exit 4; exit 0\n')
    run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
            "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", cwd=tmp_path, env=cli_env)
    record = tmp_path / "log" / "q" / "r.IDX.submit.json"
    for follow in ((), ("-f",)):
        logs = run_cli("hyperion-jobs", "logs", f"{record}:3", *follow, env=cli_env, timeout=20)
        assert (logs.returncode, logs.stdout) == (2, "")
        assert logs.stderr == (f"hyperion-jobs: error: TASK: {record}:3 was not run (NOT_RUN: its local run "
                               f"ended first) and has no log: {tmp_path}/log/r.3.log does not exist\n")
    # The TASK column says local_2; typed back, it is answered with what to give instead.
    typed = run_cli("hyperion-jobs", "logs", "local_2", cwd=tmp_path, env=cli_env)
    assert typed.returncode == 2 and "give RECORD:2 (hyperion-jobs list shows the records)" in typed.stderr
    typed = run_cli("hyperion-jobs", "status", "local_2", cwd=tmp_path, env=cli_env)
    assert typed.returncode == 2 and "names a task of a local run" in typed.stderr and "give its record" in typed.stderr

    # usage's heading and its summary count the same tasks: it said "usage of 0 of 3" above "(0 of 2 tasks)"
    usage = run_cli("hyperion-jobs", "usage", str(record), env=cli_env).stdout.splitlines()
    assert usage[0] == f"{record}: usage of 2 of 3 task(s) (2 ended; run locally: elapsed time only)", usage
    assert usage[1].endswith("(0 of 2 tasks)"), usage


def _gone(pid: int, group: bool = False) -> bool:
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return True
    return not group and b"Z" in open(f"/proc/{pid}/stat", "rb").read().rpartition(b")")[2][:3]


def _wait_gone(pid: int, group: bool = False) -> None:
    deadline = time.monotonic() + 10
    while not _gone(pid, group):
        assert time.monotonic() < deadline, f"{'group' if group else 'process'} {pid} still there"
        time.sleep(0.05)


def test_local_run_whose_runner_was_killed_keeps_its_task_running_until_it_ends(tmp_path, cli_env, test_site):
    """kill -9 of hyperion-submit: its task (a script, and what the script started) runs on. Status says so,
    with the task's process group, and a retry is refused until the last process of that group ends; then
    the task is LOST. The values never reached stay NOT_RUN."""
    runner = subprocess.Popen(
        ["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
         "--output-file", "log/k.IDX.log", "--", "bash", "-c", "sleep 60 & wait"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    child = None
    try:
        ledger = tmp_path / "log" / "q" / "k.IDX.attempts.jsonl"
        deadline = time.monotonic() + 30
        while not (ledger.exists() and '"type":"child"' in ledger.read_text()):
            assert time.monotonic() < deadline, "the local run never started its first task"
            time.sleep(0.1)
        lines = [json.loads(line) for line in ledger.read_text().splitlines()]
        entry = next(line for line in lines if line["type"] == "start")
        assert entry["pid"] == runner.pid and entry["host"] == socket.gethostname()
        child = next(line for line in lines if line["type"] == "child")["pid"]
        assert os.getpgid(child) == child != os.getpgid(runner.pid)     # the task leads its own group
        record = tmp_path / "log" / "q" / "k.IDX.submit.json"

        running = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env)
        assert [t["state"] for t in json.loads(running.stdout)["tasks"]] == ["RUNNING", "PENDING", "PENDING"]

        runner.send_signal(signal.SIGKILL)   # the runner only: its task sleeps on, orphaned
        runner.wait()
        os.kill(child, signal.SIGKILL)       # the script too: what it started still runs
        _wait_gone(child)
        status = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env)
        shown = json.loads(status.stdout)
        assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "RUNNING"), (2, "NOT_RUN"), (3, "NOT_RUN")]
        assert shown["tasks"][0]["reason"] == f"its runner was killed; it runs on as process group {child}"
        table = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
        assert f"RUNNING (its runner was killed; it runs on as process group {child})" in table.stdout

        retry = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
        assert retry.returncode == 2 and len(retry.stderr.splitlines()) == 1, retry.stderr
        assert f"1: its runner was killed; it runs on as process group {child}" in retry.stderr
        again = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
                        "--output-file", "log/k.IDX.log", "--", "true", cwd=tmp_path, env=cli_env)
        assert again.returncode == 2
        assert f"local 1, whose runner was killed: kill -- -{child} ends it" in again.stderr
        assert len(json.loads(run_cli("hyperion-jobs", "history", str(record), "--json",
                                      env=cli_env).stdout)["attempts"]) == 1      # nothing started

        os.killpg(child, signal.SIGKILL)     # as the refusal says
        _wait_gone(child, group=True)
        status = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env)
        shown = json.loads(status.stdout)
        assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "LOST"), (2, "NOT_RUN"), (3, "NOT_RUN")]
        assert shown["exit_status"] == 1

        watch = run_cli("hyperion-jobs", "watch", str(record), env=cli_env, timeout=20)
        assert watch.returncode == 1 and "3 tasks: LOST 1, NOT_RUN 2" in watch.stdout
        # it said `(the run stopped before them; hyperion-jobs retry RECORD runs them)` of values 2-3 alone,
        # though that retry reruns the LOST value 1 too, as its plan says
        assert watch.stdout.splitlines()[-1] == (f"  NOT_RUN values 2-3 (the run stopped before them); rerun LOST "
                                                 f"value 1 and NOT_RUN values 2-3 with: hyperion-jobs retry {record}")
        plan = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", cwd=tmp_path, env=cli_env)
        assert "3 task(s) (LOST 1, NOT_RUN 2)\n  values: 1-3\n" in plan.stdout, plan.stdout
        # the LOST task ended with no time: "usage of 0 of 3 task(s) (1 ended; ...)" said no more
        usage = run_cli("hyperion-jobs", "usage", str(record), env=cli_env).stdout.splitlines()
        assert usage[0] == (f"{record}: usage of 0 of 3 task(s) (1 ended; run locally: elapsed time only, "
                            f"1 ended without one recorded)"), usage
    finally:
        kill_groups(runner.pid, child)
        runner.wait()


def wait_children(pid: int, timeout: float = 10) -> list[int]:
    """The children of `pid` once it has one (on a loaded machine `/proc` may lag the fork a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            children = [int(p) for p in handle.read().split()]
        if children or time.monotonic() > deadline:
            return children
        time.sleep(0.05)


def test_sigterm_or_a_closed_terminal_stops_what_the_task_started_too(tmp_path, cli_env, test_site):
    """`kill` of hyperion-submit reaches the task's whole process group: a script's own children (the
    python a recipe's bash script runs) stop with it, as they do under Slurm, and are not left writing
    into the log while a retry runs. A hangup (the terminal closed) is recorded the same way, with signal 1 (SIGHUP)."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        out = tmp_path / signum.name
        runner = subprocess.Popen(
            ["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:2", "--output-file",
             f"{signum.name}/k.IDX.log", "--", "bash", "-c", "sleep 60 & echo started; wait"],
            cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ledger = out / "q" / "k.IDX.attempts.jsonl"
        deadline = time.monotonic() + 30
        while not ((out / "k.1.log").exists() and "started" in (out / "k.1.log").read_text()
                   and ledger.exists() and '"type":"child"' in ledger.read_text()):   # the runner writes it after
            assert time.monotonic() < deadline, "the task never started"
            time.sleep(0.1)
        child = next(json.loads(line)["pid"] for line in ledger.read_text().splitlines() if '"child"' in line)
        sleeper = wait_children(child)[0]
        runner.send_signal(signum)
        _, err = runner.communicate(timeout=30)
        assert runner.returncode == 128 + signum, err
        _wait_gone(sleeper)                           # the script's own child, not only the script
        _wait_gone(child, group=True)
        status = json.loads(run_cli("hyperion-jobs", "status", str(out / "q" / "k.IDX.submit.json"), "--json",
                                    env=cli_env).stdout)
        # a hangup: the signal, no exit code, as Slurm records a task a signal stopped
        ended = ("FAILED", None, 1) if signum == signal.SIGHUP else ("FAILED", 128 + signum, None)
        assert [(t["state"], t["exit_code"], t["signal"]) for t in status["tasks"]] == [ended, ("NOT_RUN", None, None)]


def test_runner_gone_only_when_certain():
    me = runner_fields()
    assert not runner_gone(me)                                   # this very process
    assert runner_gone({**me, "pid_start": me["pid_start"] + 1})  # the pid was reused
    assert not runner_gone({**me, "host": me["host"] + "-elsewhere", "pid": 2 ** 22 + 1})
    assert not runner_gone({"state": "RUNNING"})                  # older file: cannot judge
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert runner_gone({**me, "pid": dead.pid, "pid_start": None})


def test_a_task_process_counts_as_running_only_when_it_is_certainly_the_same_process():
    """A ledger's child line keeps a retry away while that process runs: a reused pid, another host or a
    line without a start time must not hold it off for ever."""
    me = runner_fields()
    assert child_running(me["pid"], me["pid_start"], me["host"])
    assert not child_running(me["pid"], me["pid_start"] + 1, me["host"])       # the pid was reused
    assert not child_running(me["pid"], None, me["host"])                      # cannot tell
    assert not child_running(me["pid"], me["pid_start"], me["host"] + "-elsewhere")
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert not child_running(dead.pid, me["pid_start"], me["host"])
    ledger = parse_ledger(b'{"type":"child","attempt":1,"value":2,"pid":true,"pid_start":5}\n'
                          b'{"type":"child","attempt":1,"value":3,"pid":0}\n'
                          b'{"type":"child","attempt":1,"value":4,"pid":77,"pid_start":"x"}\n')
    assert ledger.skipped == 2 and list(ledger.children) == [(1, 4)] and ledger.children[(1, 4)].pid_start is None


def test_a_group_number_given_again_to_other_processes_is_not_the_task():
    """Once a task's process group ended, its number can lead an unrelated group (a `setsid` whose leader
    exited): processes that started before the task are not it, and must not keep a retry away."""
    leader = subprocess.run(["setsid", "bash", "-c", "sleep 30 >/dev/null 2>&1 & echo $$"], capture_output=True,
                            text=True, timeout=10)
    group = int(leader.stdout.split()[0])
    try:
        deadline = time.monotonic() + 10
        while not _gone(group):          # the leader exits at once; its sleep stays in the group
            assert time.monotonic() < deadline
            time.sleep(0.05)
        member = next(int(p) for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == group)
        started = process_start(member)
        host = socket.gethostname()
        assert child_running(group, started, host)              # a task whose group this is: still running
        assert not child_running(group, started + 1, host)      # a task that started after them: not it
    finally:
        os.killpg(group, signal.SIGKILL)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_a_runner_that_inherits_an_ignored_sigchld_still_gets_each_exit_status(tmp_path, cli_env, test_site):
    """With SIGCHLD ignored (some job launchers pass that on), the kernel reaps children itself."""
    done = subprocess.run(["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:2",
                           "--output-file", "log/c.IDX.log", "--", "true"], cwd=tmp_path, env=cli_env,
                          capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(": ok (") == 2


def test_a_retry_dry_run_into_a_pipe_closed_early_is_read_not_failed(tmp_path, cli_env, test_site) -> None:
    """`hyperion-jobs retry --dry-run RECORD | head -3` exited 1 or 0 at random: a dry run was
    counted as a retry cut short. It acts on nothing, so, as `status | head`, it is 0."""
    (tmp_path / "task.sh").write_text('[ "$IDX" = 2 ] && exit 4; exit 0\n')
    run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
            "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", cwd=tmp_path, env=cli_env)
    record = str(tmp_path / "log" / "q" / "r.IDX.submit.json")
    buffered = {k: v for k, v in cli_env.items() if k != "PYTHONUNBUFFERED"}
    for env in ({**buffered, "PYTHONUNBUFFERED": "1"}, buffered):
        for argv in (["retry", "--dry-run", record], ["status", record], ["history", record]):
            read, write = os.pipe()
            os.close(read)              # the reader is gone before the first line
            try:
                done = subprocess.run(["hyperion-jobs", *argv], stdout=write, stderr=subprocess.PIPE, text=True,
                                      env=env, cwd=tmp_path, timeout=60)
            finally:
                os.close(write)
            assert (done.returncode, done.stderr) == (0, ""), (argv, "PYTHONUNBUFFERED" in env)


def test_a_table_into_a_pipe_closed_early_without_pythonunbuffered_is_read_not_failed(tmp_path, cli_env,
                                                                                    test_site) -> None:
    """The test above passed only under PYTHONUNBUFFERED=1, which the CI's environment sets and a login
    shell does not: there the whole table waited in Python's buffer for the exit, whose flush met the
    closed pipe: `Exception ignored ... BrokenPipeError` on stderr and exit status 120, from every command of
    hyperion-jobs, hyperion-checkpoint and hyperion-submit --dry-run (`status R | grep -q FAILED`)."""
    run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:2",
            "--output-file", "log/r.IDX.log", "--", "true", cwd=tmp_path, env=cli_env)
    record = str(tmp_path / "log" / "q" / "r.IDX.submit.json")
    env = {k: v for k, v in cli_env.items() if k != "PYTHONUNBUFFERED"}
    (tmp_path / "ck" / ".nemo_curator_metadata" / ".slurm_array_completion").mkdir(parents=True)
    (tmp_path / "ck" / ".nemo_curator_metadata" / ".slurm_array_completion" / "run.json").write_text(
        '{"minimum_shard_index":1,"total_shards":20}\n')
    for argv in (["hyperion-jobs", "status", record], ["hyperion-jobs", "list", str(tmp_path)],
                 ["hyperion-checkpoint", "show", str(tmp_path / "ck")],
                 ["hyperion-checkpoint", "retry", str(tmp_path / "ck")],
                 ["hyperion-submit", "local", "--cfg", str(test_site), "--output-file", "log/d.log", "--dry-run",
                  "--", "true"]):
        read, write = os.pipe()
        os.close(read)
        try:
            done = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                                  timeout=60)
        finally:
            os.close(write)
        assert (done.returncode, done.stderr) == (0, ""), argv


def test_usage_of_a_local_run_from_before_the_ledger_sums_every_task(tmp_path, cli_env) -> None:
    """Its tasks have no task id: `usage` keyed them all alike and summed only the last, saying
    "usage of 0 of 4 task(s)" of a run whose four tasks each ran 7 s."""
    from test_console_fixtures import build_local_record

    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("COMPLETED", 0), 3: ("FAILED", 3),
                                           4: ("COMPLETED", 0)})
    usage = run_cli("hyperion-jobs", "usage", str(record), env=cli_env)
    assert usage.returncode == 0, usage.stderr
    assert usage.stdout.splitlines()[:2] == [
        f"{record}: usage of 4 of 4 task(s) (4 ended; run locally: elapsed time only)",
        "MaxRSS   median -  p95 -  max -  (0 of 4 tasks)"]


def test_watch_of_a_local_array_on_a_terminal_is_the_live_table_not_a_line_per_task(tmp_path, cli_env, test_site):
    """On a terminal, watching a 300-task local array printed 300 `local_N PENDING` lines at once and a
    line per change after them (the piped output), where a Slurm array shows the live table: counts,
    progress and the tasks not yet ended or failed. Now a local record gets that table too."""
    import pty

    (tmp_path / "task.sh").write_text('[ "$1" = 250 ] && exit 3; exit 0\n')
    submitted = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:300",
                        "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", "IDX", cwd=tmp_path, env=cli_env,
                        timeout=120)
    assert submitted.returncode == 1, submitted.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(["hyperion-jobs", "watch", str(tmp_path / "log" / "q")], stdout=slave,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=cli_env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=30) == 1
    os.close(master)
    shown = out.decode("utf-8")
    assert "local_1 COMPLETED" not in shown and "PENDING" not in shown, shown[:2000]
    # the 50 values never reached are as final as the failure: the bar is full, as the console's is
    assert "300/300 tasks ended" in shown and "local_250" in shown, shown
    assert "300 tasks: COMPLETED 249, FAILED 1, NOT_RUN 50" in shown, shown


def test_watch_of_a_local_array_that_stopped_names_the_values_not_run_in_one_line(tmp_path, cli_env, test_site):
    """A local array stops at its first failure: watch's closing list then gave each value never reached
    a line of its own (`local_251 NOT_RUN exit - log ...`, 50 lines here, 9999 for 10000 values), burying
    the failure. They are one line now, with how to run them."""
    (tmp_path / "task.sh").write_text('[ "$1" = 250 ] && exit 3; exit 0\n')
    submitted = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:300",
                        "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", "IDX", cwd=tmp_path, env=cli_env,
                        timeout=120)
    assert submitted.returncode == 1, submitted.stderr
    record = tmp_path / "log" / "q" / "r.IDX.submit.json"
    watch = run_cli("hyperion-jobs", "watch", str(record), env=cli_env, timeout=30)
    assert watch.returncode == 1
    closing = watch.stdout.splitlines()[-3:]
    assert closing == ["300 tasks: COMPLETED 249, FAILED 1, NOT_RUN 50",
                       f"  local_250 FAILED exit 3 log {tmp_path}/log/r.250.log",
                       f"  NOT_RUN values 251-300 (the run stopped before them); rerun FAILED value 250 and "
                       f"NOT_RUN values 251-300 with: hyperion-jobs retry {record}"], watch.stdout[-3000:]


def test_logs_of_a_value_a_rerun_never_reached_names_the_attempt_that_ran_it(tmp_path, cli_env, test_site):
    """A rerun that stopped at its first value leaves the others NOT_RUN in the newest attempt: `logs
    RECORD:3` said only that it was not run and has no log, though attempt 1 ran it and its log is
    kept. It now names that attempt, its end and the command that shows its log."""
    (tmp_path / "task.sh").write_text('echo "value $1"; [ -e rerun ] && [ "$1" = 1 ] && exit 3; exit 0\n')
    argv = ["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
            "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", "IDX"]
    assert run_cli(*argv, cwd=tmp_path, env=cli_env).returncode == 0
    (tmp_path / "rerun").touch()
    assert run_cli(*argv, cwd=tmp_path, env=cli_env).returncode == 1
    target = f"{tmp_path}/log/q/r.IDX.submit.json:3"
    logs = run_cli("hyperion-jobs", "logs", target, env=cli_env)
    assert logs.returncode == 2 and logs.stdout == ""
    assert logs.stderr == (f"hyperion-jobs: error: TASK: {target} was not run in attempt 2 (NOT_RUN: its local "
                           f"run ended first) and has no log: {tmp_path}/log/r.3.log does not exist; attempt 1 "
                           f"ran it (COMPLETED): hyperion-jobs logs {target} --attempt 1\n"), logs.stderr
    earlier = run_cli("hyperion-jobs", "logs", target, "--attempt", "1", env=cli_env)
    assert earlier.returncode == 0 and "value 3\n" in earlier.stdout


def test_cancel_of_a_running_local_run_says_how_to_stop_it(tmp_path, cli_env, test_site):
    """From a second shell, `hyperion-jobs cancel RECORD` of a local run said only `is a local run;
    nothing to scancel`, leaving the user to find which process to stop. It now names the runner's
    pid, and the SIGTERM it suggests stops the task and records it (FAILED 143); once nothing runs
    it says so."""
    runner = subprocess.Popen(
        ["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3", "--output-file",
         "log/c.IDX.log", "--", "sleep", "30"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    child = None
    try:
        ledger = tmp_path / "log" / "q" / "c.IDX.attempts.jsonl"
        deadline = time.monotonic() + 30
        while not (ledger.exists() and '"type":"child"' in ledger.read_text()):
            assert time.monotonic() < deadline, "the local run never started its first task"
            time.sleep(0.1)
        child = next(json.loads(line) for line in ledger.read_text().splitlines() if '"child"' in line)["pid"]
        record = str(tmp_path / "log" / "q" / "c.IDX.submit.json")
        refused = run_cli("hyperion-jobs", "cancel", record, "--yes", env=cli_env)
        assert refused.returncode == 2
        assert refused.stderr == (f"hyperion-jobs: error: JOB: {record} is a local run, not Slurm's: stop it with "
                                  f"Ctrl-C where it runs, or kill {runner.pid} (its runner on "
                                  f"{socket.gethostname()}; the task is stopped and recorded, exit 143)\n")
        os.kill(runner.pid, signal.SIGTERM)     # as the line says
        assert runner.wait(timeout=20) == 143
        shown = json.loads(run_cli("hyperion-jobs", "status", record, "--json", env=cli_env).stdout)
        assert [(t["state"], t["exit_code"]) for t in shown["tasks"]] == [
            ("FAILED", 143), ("NOT_RUN", None), ("NOT_RUN", None)]
        ended = run_cli("hyperion-jobs", "cancel", record, "--yes", env=cli_env)
        assert ended.returncode == 2
        assert ended.stderr == f"hyperion-jobs: error: JOB: {record} is a local run and nothing of it runs; " \
                               "nothing to cancel\n"
    finally:
        kill_groups(runner.pid, child)
        runner.wait()


def test_failures_give_the_last_redraw_of_a_progress_bar_a_task_died_in(tmp_path, cli_env, test_site):
    """Tasks that failed inside a tqdm-style bar (`\\r` redraws, no newline until the end) were
    grouped by the whole line of redraws, cut at 200 characters: `--failures` showed the bar at
    0%, the least telling redraw, and tasks dying at other points were separate groups. The line
    is now what a terminal showed, the last redraw, as `hyperion-jobs logs` shows it."""
    (tmp_path / "task.py").write_text(
        "import sys\nv = int(sys.argv[1])\n"
        "for i in range(0, 30 + v):\n"
        "    sys.stdout.write(f'\\rextracting: {i}/100 frames')\n"
        "print()\nsys.exit(3)\n")
    submitted = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:1",
                        "--output-file", "log/p.IDX.log", "--", sys.executable, "task.py", "IDX", cwd=tmp_path, env=cli_env)
    assert submitted.returncode == 1
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q"), "--failures", "--json", env=cli_env)
    groups = json.loads(shown.stdout)["groups"]
    assert [(g["state"], g["exit_code"], g["last_line"]) for g in groups] == [
        ("FAILED", 3, "extracting: 30/100 frames")], groups


def test_failures_mark_a_last_line_cut_to_200_characters(tmp_path, cli_env, test_site):
    """A task dying with a long message (a shape mismatch listing a tensor, a 2 MB line): `status
    --failures` showed its first 200 characters as if the line ended there, on the terminal and in
    --json; the cut is now marked with `…` (the console's failure groups read the same line)."""
    (tmp_path / "task.py").write_text(
        "import sys\nv = int(sys.argv[1])\n"
        "print('RuntimeError: shape mismatch: ' + ' '.join(['[32, 80, 1000]'] * 20) if v == 1 else 'Z' * 2_000_000 + ' TAIL')\n"
        "sys.exit(3)\n")
    for value in (1, 2):
        run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", f"IDX={value}:{value}",
                "--output-file", f"log/p{value}.IDX.log", "--", sys.executable, "task.py", "IDX", cwd=tmp_path, env=cli_env)
        shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / f"p{value}.IDX.submit.json"),
                        "--failures", "--json", env=cli_env)
        [group] = json.loads(shown.stdout)["groups"]
        whole = ("RuntimeError: shape mismatch: " + " ".join(["[32, 80, 1000]"] * 20)) if value == 1 else "Z" * 2_000_000
        assert group["last_line"] == whole[:199] + "…", group["last_line"]
        text = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / f"p{value}.IDX.submit.json"),
                       "--failures", env=cli_env).stdout
        assert f"last line: {whole[:199]}…  e.g. " in text, text


def test_cancel_of_a_local_run_whose_runner_was_killed_names_the_task_s_group(tmp_path, cli_env, test_site):
    """After `kill -9` of the runner its task runs on: cancel must not say that nothing runs, but
    which process group to end, as `status` and a refused rerun say it."""
    runner = subprocess.Popen(
        ["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:2", "--output-file",
         "log/o.IDX.log", "--", "sleep", "30"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    child = None
    try:
        ledger = tmp_path / "log" / "q" / "o.IDX.attempts.jsonl"
        deadline = time.monotonic() + 30
        while not (ledger.exists() and '"type":"child"' in ledger.read_text()):
            assert time.monotonic() < deadline, "the local run never started its first task"
            time.sleep(0.1)
        child = next(json.loads(line) for line in ledger.read_text().splitlines() if '"child"' in line)["pid"]
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        record = str(tmp_path / "log" / "q" / "o.IDX.submit.json")
        refused = run_cli("hyperion-jobs", "cancel", record, "--yes", env=cli_env)
        assert refused.returncode == 2
        assert refused.stderr == (f"hyperion-jobs: error: JOB: {record} is a local run whose runner was killed; its "
                                  f"task runs on as process group {child}: kill -- -{child} ends it\n")
    finally:
        kill_groups(runner.pid, child)
        runner.wait()


def _follow(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(["hyperion-jobs", "logs", *argv, "-f"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_logs_follow_stops_by_itself_when_the_local_task_ends(tmp_path, cli_env, test_site):
    """`logs RECORD:VALUE -f` followed until Ctrl-C after the task had ended: now it reads the rest of the
    log, says on stderr how the task ended and exits 0, as `tail -f --pid` does; an ended task at once."""
    (tmp_path / "task.sh").write_text('for i in 1 2 3 4; do echo "tick $i"; sleep 0.7; done; exit 4\n')
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(test_site), "--output-file", "log/f.log",
                               "--", "bash", "task.sh"], cwd=tmp_path, env=cli_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    record = tmp_path / "log" / "q" / "f.submit.json"
    follow = None
    try:
        deadline = time.monotonic() + 30
        while not record.exists():
            assert time.monotonic() < deadline, "no record"
            time.sleep(0.05)
        follow = _follow([str(record)], cli_env)
        out, err = follow.communicate(timeout=30)     # the old code never returned: Ctrl-C only
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
        kill_groups(runner.pid)
        runner.wait()
    assert follow.returncode == 0, err
    assert [line for line in out.splitlines() if line.startswith("tick")] == [f"tick {i}" for i in range(1, 5)]
    assert out.splitlines()[-1].startswith("# Ended (code 4)")     # the footer: read to the end
    assert err.splitlines()[-1] == f"hyperion-jobs: task {record} ended FAILED (exit 4); stopped following"

    started = time.monotonic()     # ended already: its last lines, the line, and out
    again = run_cli("hyperion-jobs", "logs", str(record), "-f", "-n", "2", env=cli_env, timeout=20)
    assert again.returncode == 0 and time.monotonic() - started < 10, again.stderr
    assert again.stdout.splitlines()[0] == "tick 4" and len(again.stdout.splitlines()) == 2
    assert again.stderr == f"hyperion-jobs: task {record} ended FAILED (exit 4); stopped following\n"


def test_logs_follow_of_a_local_task_whose_runner_died_stops_at_lost(tmp_path, cli_env, test_site):
    """The runner killed with its task: the task is LOST, its log is never written again; `logs -f`
    followed it until Ctrl-C."""
    runner = subprocess.Popen(
        ["hyperion-submit", "local", "--cfg", str(test_site), "--output-file", "log/k.log", "--",
         "bash", "-c", "echo working; sleep 60 & wait"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    child = follow = None
    try:
        ledger = tmp_path / "log" / "q" / "k.attempts.jsonl"
        deadline = time.monotonic() + 30
        while not (ledger.exists() and '"type":"child"' in ledger.read_text()):
            assert time.monotonic() < deadline, "the local run never started its task"
            time.sleep(0.1)
        child = next(json.loads(line) for line in ledger.read_text().splitlines()
                     if json.loads(line)["type"] == "child")["pid"]
        record = tmp_path / "log" / "q" / "k.submit.json"
        follow = _follow([str(record)], cli_env)
        time.sleep(2)
        assert follow.poll() is None, follow.communicate()      # it runs: followed
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        os.killpg(child, signal.SIGKILL)
        out, err = follow.communicate(timeout=20)
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
        kill_groups(runner.pid, child)
        runner.wait()
    assert follow.returncode == 0 and "working" in out, err
    assert err.splitlines()[-1] == f"hyperion-jobs: task {record} ended LOST; stopped following"


def test_logs_follow_on_a_terminal_stops_by_itself_when_the_local_task_ends(tmp_path, cli_env, test_site):
    """The terminal path (lines escaped, the open line redrawn in place) stops too: it followed until Ctrl-C."""
    import pty
    import select

    (tmp_path / "task.sh").write_text('for i in 1 2 3; do echo "tick $i"; sleep 0.7; done; '
                                      'printf "bar 50%%\\rbar 100%%"; sleep 0.7; exit 2\n')
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(test_site), "--output-file", "log/t.log",
                               "--", "bash", "task.sh"], cwd=tmp_path, env=cli_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    record = tmp_path / "log" / "q" / "t.submit.json"
    master, slave = pty.openpty()
    follow, shown = None, b""
    try:
        deadline = time.monotonic() + 30
        while not record.exists():
            assert time.monotonic() < deadline, "no record"
            time.sleep(0.05)
        follow = subprocess.Popen(["hyperion-jobs", "logs", str(record), "-f"], env=cli_env, stdout=slave,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        os.close(slave)
        slave = None
        while follow.poll() is None and time.monotonic() < deadline:   # the old code: until the deadline
            if select.select([master], [], [], 0.2)[0]:
                shown += _read_pty(master)
        assert follow.poll() == 0, shown
        while select.select([master], [], [], 0.2)[0] and (more := _read_pty(master)):
            shown += more
        err = follow.stderr.read().decode()
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
        if slave is not None:
            os.close(slave)
        os.close(master)
        kill_groups(runner.pid)
        runner.wait()
    text = shown.decode().replace("\r\n", "\n")
    assert "tick 1\ntick 2\ntick 3\n" in text and "bar 100%\n# Ended (code 2)" in text, text   # the footer on its own line
    assert err == f"hyperion-jobs: task {record} ended FAILED (exit 2); stopped following\n"


def _read_pty(master: int) -> bytes:
    try:
        return os.read(master, 65536)
    except OSError:            # EIO: the writer is gone and everything was read
        return b""


def test_failures_of_a_run_without_one_say_the_consoles_sentence(tmp_path, cli_env, test_site):
    """`status --failures` with nothing failed printed the per-state counts (`no failed tasks: 3 tasks:
    COMPLETED 3`) while the console's failure view says, from the core, that every task completed or
    is still live: one sentence for both."""
    from backends.records.history import load_history
    from backends.watch.rows import history_rows
    from backends.watch.triage import failure_groups, failures_summary

    submitted = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
                        "--output-file", "log/g.IDX.log", "--", "true", cwd=tmp_path, env=cli_env)
    assert submitted.returncode == 0, submitted.stderr
    record = tmp_path / "log" / "q" / "g.IDX.submit.json"
    shown = run_cli("hyperion-jobs", "status", str(record), "--failures", env=cli_env)
    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout == "no failed tasks: every one of 3 task(s) completed or is still live\n"
    console = failures_summary(failure_groups(history_rows(load_history(str(record)), {})), 3)   # the console's head
    assert shown.stdout.strip() == console


def test_a_local_task_hung_up_on_is_reported_as_stopped_by_sighup_not_as_a_failed_program(
        tmp_path, cli_env, test_site, monkeypatch):
    """A task whose process group got SIGHUP (its terminal gone) read `FAILED exit 129`, one more
    program failure in status, --failures, history and the console. It is now reported as a Slurm task a
    signal killed is: FAILED with the signal and no exit code, counted under the signal's name."""
    import asyncio
    from pathlib import Path

    from test_console_fixtures import posted, rendered, table_column, wait_for

    from hyperion_console.app import make_app
    from hyperion_console.messages import FailureGroupsListed

    (tmp_path / "task.sh").write_text(
        f'echo "value $IDX"; if [ "$IDX" = 2 ]; then echo $$ > {tmp_path}/pid; sleep 30; fi; exit 0\n')
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
                               "--output-file", "log/h.IDX.log", "--", "bash", str(tmp_path / "task.sh")],
                              cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid_file = tmp_path / "pid"
    group = None
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        group = int(pid_file.read_text())
        os.killpg(group, signal.SIGHUP)                      # the task's group is hung up on
        out, err = runner.communicate(timeout=30)
    finally:
        kill_groups(group)
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 1, err
    assert "IDX=2: FAILED, stopped by signal 1 (SIGHUP) after " in out, out
    assert f"hyperion-submit: IDX=2 stopped by signal 1 (SIGHUP); see {tmp_path}/log/h.2.log" in err, err
    record = tmp_path / "log" / "q" / "h.IDX.submit.json"

    status = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
    row = next(line for line in status.stdout.splitlines() if line.startswith("local_2"))
    assert row.split()[2:6] == ["FAILED", "sig", "1", "(SIGHUP)"], status.stdout
    shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    assert [(t["state"], t["exit_code"], t["signal"]) for t in shown["tasks"]][1] == ("FAILED", None, 1)
    failures = run_cli("hyperion-jobs", "status", str(record), "--failures", env=cli_env).stdout.splitlines()
    assert failures[0] == "2 of 3 task(s) did not succeed (not-run 1, sighup 1), in 2 group(s):", failures
    assert any(line.split("  last line")[0].strip() == "1 FAILED signal 1 (SIGHUP)  values 2"
               for line in failures), failures
    history = run_cli("hyperion-jobs", "history", str(record), env=cli_env).stdout
    assert "COMPLETED 1, FAILED (SIGHUP) 1, NOT_RUN 1" in history, history
    # --json keeps state names as keys (as status --json does): a script summing FAILED counts it
    as_json = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
    assert as_json["attempts"][0]["counts"] == {"COMPLETED": 1, "FAILED": 1, "NOT_RUN": 1}, as_json
    monkeypatch.setenv("PATH", cli_env["PATH"])

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=Path(test_site).parent, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state")[:2] == ["COMPLETED", "FAILED"], 15)
            assert table_column(table, "exit")[:2] == ["0", "SIGHUP"]
            await pilot.press("t")
            await wait_for(pilot, lambda: posted(seen, FailureGroupsListed), 10)
            await pilot.pause()
            head = rendered(jobs.query_one("#failures-head"))[0]
            assert head.startswith("2 of 3 task(s) did not succeed (not-run 1, sighup 1), in 2 group(s)"), head
            lines = [line.rstrip() for line in rendered(jobs.query_one("#failure-list"))]
            assert "    1 FAILED signal 1 (SIGHUP) · values 2" in lines, lines

    asyncio.run(scenario())


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("how", ["runner killed between tasks", "results entry not an object"])
def test_watch_of_a_local_run_that_will_run_no_more_ends_naming_what_did_not_run(tmp_path, cli_env, how):
    """A local run whose runner was SIGKILLed after a task ended and before the next began (or an old
    run's results file whose entry for a task is junk) leaves tasks that never get a state: `watch`
    waited for them forever, though `status` says NOT_RUN. It ends, naming them, exit 1."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_console_fixtures import build_local_record

    from backends.records.local_results import local_results_path

    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("COMPLETED", 0)})
    if how == "results entry not an object":
        local_results_path(record).write_text(json.dumps({"tasks": {"1": {"state": "COMPLETED", "exit_code": 0},
                                                                    "2": "COMPLETED"}}))
    else:
        lines = [{"type": "attempt", "number": 1, "kind": "submit", "time": "2026-09-21T12:00:00",
                  "backend": "local", "job_ids": ["local"], "values": "1-2", "overrides": {}, "tasks": 2},
                 {"type": "start", "attempt": 1, "value": 1, "time": "2026-09-21T12:00:00",
                  "pid": _dead_pid(), "host": socket.gethostname()},
                 {"type": "final", "attempt": 1, "value": 1, "job_id": "local", "task_id": None,
                  "state": "COMPLETED", "exit_code": 0}]
        record.with_name("task.JOB.attempts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    shown = run_cli("hyperion-jobs", "status", str(record), env=cli_env, timeout=30)
    assert "NOT_RUN" in shown.stdout, shown.stdout
    try:
        watch = run_cli("hyperion-jobs", "watch", str(record), env=cli_env, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("watch waited for a task of a run that will run no more")
    assert watch.returncode == 1 and "Traceback" not in watch.stderr, watch.stderr
    assert "NOT_RUN values 2" in watch.stdout, watch.stdout


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["terminal closed", "SIGTERM"])
def test_a_local_retry_stopped_by_a_signal_exits_as_its_runner_does(tmp_path, cli_env, test_site, signum):
    """`hyperion-jobs retry` of a local record runs the tasks itself; its terminal closed (SIGHUP)
    exited 130, as for Ctrl-C, where hyperion-submit local exits 129 for the same hangup (143 for
    SIGTERM): a script telling a hangup from an interrupt read the retry wrong."""
    import pty

    started = tmp_path / "started"
    script = (f"import os, sys, time; v = os.environ['J' 'OB']; "
              f"sys.exit(3) if v == '2' and not os.path.exists('fixed') else None; "
              f"v == '2' and (open({str(started)!r}, 'w').close(), time.sleep(60))")
    first = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "JOB=1:2", "--output-file",
                    "log/h.JOB.log", "--", sys.executable, "-c", script, cwd=tmp_path, env=cli_env)
    assert first.returncode == 1, first.stderr
    (tmp_path / "fixed").touch()
    record = tmp_path / "log" / "q" / "h.JOB.submit.json"
    master, slave = pty.openpty()
    retry = subprocess.Popen(["hyperion-jobs", "retry", str(record), "--yes"], cwd=tmp_path, env=cli_env,
                             stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        deadline = time.monotonic() + 30
        while not started.exists():
            assert time.monotonic() < deadline and retry.poll() is None, "the retried task never started"
            time.sleep(0.05)
        if signum == signal.SIGHUP:
            os.close(master)                # the window closed
            master = None
        retry.send_signal(signum)
        retry.wait(timeout=30)
    finally:
        if retry.poll() is None:
            retry.kill()
        retry.wait()
        if master is not None:
            os.close(master)
    assert retry.returncode == 128 + signum


def test_logs_err_of_a_local_task_says_its_one_log_holds_both_streams(tmp_path, cli_env, test_site):
    """`logs RECORD:1 --err` of a local run said `no --err log is known` and nothing of why or where
    its stderr went (a local task writes one log, stdout and stderr together)."""
    done = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "JOB=1:2", "--output-file",
                   "log/e.JOB.log", "--", "sh", "-c", "echo to-stderr >&2", cwd=tmp_path, env=cli_env)
    assert done.returncode == 0, done.stderr
    target = f"{tmp_path / 'log' / 'q' / 'e.JOB.submit.json'}:1"
    err = run_cli("hyperion-jobs", "logs", target, "--err", env=cli_env)
    assert err.returncode == 2 and err.stderr == (
        f"hyperion-jobs: error: TASK: no --err log is known for {target}: a local task has no Slurm files, "
        f"its one log holds stdout and stderr (hyperion-jobs logs {target})\n"), err.stderr
    assert "to-stderr" in run_cli("hyperion-jobs", "logs", target, env=cli_env).stdout
