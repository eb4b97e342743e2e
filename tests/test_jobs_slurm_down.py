"""What `hyperion-jobs` says while Slurm does not answer and the ledger holds every end: the
recorded states are shown, and the user is told they may be behind. (Slurm's daemons on the
shared test cluster are not stopped for this: sacct and squeue on PATH fail as they do then.)"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import kill_noted_groups, run_cli
from test_console_fixtures import build_history, ended_just_now

CONF = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
SACCT_DOWN = "sacct: error: Problem talking to the database: Connection refused"
SQUEUE_DOWN = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


def slurm_down(tmp_path: Path, cli_env: dict[str, str]) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, message in (("sacct", SACCT_DOWN), ("squeue", SQUEUE_DOWN)):
        (bin_dir / tool).write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
        (bin_dir / tool).chmod(0o755)
    return {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}


def test_usage_says_sacct_did_not_answer_instead_of_showing_no_usage_as_known(tmp_path, cli_env) -> None:
    """It printed "usage of 0 of 8 task(s)" and exited 0, as if the tasks had used nothing on record."""
    record = build_history(tmp_path, CONF)             # every end recorded, no usage yet
    env = slurm_down(tmp_path, cli_env)
    for command in ("usage", "status", "history"):
        result = run_cli("hyperion-jobs", command, str(record), env=env, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stderr == f"hyperion-jobs: sacct failed (rc 1): {SACCT_DOWN}; shown as last recorded\n"
    assert "usage of 8 of 8 task(s) (8 ended; accounting measured 0)" in run_cli("hyperion-jobs", "usage", str(record), env=env).stdout
    status = run_cli("hyperion-jobs", "status", str(record), "--json", env=env, timeout=60)
    assert json.loads(status.stdout)["counts"] == {"COMPLETED": 5, "FAILED": 2, "OUT_OF_MEMORY": 1}


def test_retry_says_its_plan_is_of_the_recorded_states(tmp_path, cli_env) -> None:
    record = build_history(tmp_path, CONF)
    result = run_cli("hyperion-jobs", "retry", "--dry-run", str(record), env=slurm_down(tmp_path, cli_env))
    assert result.returncode == 0, result.stderr
    assert "shown as last recorded" in result.stderr and "3 task(s) (FAILED 2, OUT_OF_MEMORY 1)" in result.stdout


def test_list_keeps_recorded_ends_and_does_not_say_no_live_jobs_when_squeue_failed(tmp_path, cli_env) -> None:
    """`list` said "no live Slurm jobs" (squeue had not answered) and "?" for a record whose every end
    is in its ledger; a record with a task still running stays "?"."""
    build_history(tmp_path / "ended", CONF)
    build_history(tmp_path / "running", CONF, job="4300", unfinished=(7, 8))
    result = run_cli("hyperion-jobs", "list", str(tmp_path), env=slurm_down(tmp_path, cli_env), timeout=60)
    assert result.returncode == 0, result.stderr
    states = {line.split()[0].split("/")[-5]: line.split(None, 5)[5]
              for line in result.stdout.splitlines() if line.startswith(str(tmp_path))}
    assert states == {"ended": "COMPLETED 5, FAILED 2, OUT_OF_MEMORY 1", "running": "?"}
    assert "no live Slurm jobs" not in result.stdout
    assert "live Slurm jobs for " in result.stdout and result.stdout.rstrip().endswith(": not known")
    assert f"sacct failed (rc 1): {SACCT_DOWN}" in result.stderr
    assert f"squeue failed (rc 1): {SQUEUE_DOWN}" in result.stderr


def test_watch_of_a_run_that_ended_lately_says_its_look_for_requeues_failed(tmp_path, cli_env) -> None:
    """`watch` printed the recorded counts and exited 0 without a word, where `status` of the same
    record said that squeue had not answered (a task Slurm requeued would run again unseen)."""
    record = build_history(tmp_path, CONF)
    ended_just_now(record)
    result = run_cli("hyperion-jobs", "watch", str(record), env=slurm_down(tmp_path, cli_env), timeout=60)
    assert result.returncode == 1, result.stderr      # two tasks failed, one ran out of memory
    lines = result.stdout.splitlines()                # into a pipe: a line per recorded end, then the counts
    assert [line.split()[1] for line in lines[:8]] == [f"4242_{n}" for n in range(1, 9)], result.stdout
    assert lines[8] == "8 tasks: COMPLETED 5, FAILED 2, OUT_OF_MEMORY 1", result.stdout
    assert result.stderr == f"hyperion-jobs: squeue failed (rc 1): {SQUEUE_DOWN}; shown as last recorded\n"


def test_logs_follow_of_a_task_that_ended_lately_stops_at_its_recorded_end_and_says_so(tmp_path, cli_env) -> None:
    """Ended tasks are followed no longer: `logs -f` of a task whose end the ledger holds printed its
    last lines and went on until Ctrl-C. Slurm could still have requeued it; squeue not answering that
    look, the recorded end stands, said as `status` says it."""
    record = build_history(tmp_path, CONF)
    ended_just_now(record)
    result = run_cli("hyperion-jobs", "logs", f"{record}:3", "-f", "-n", "1", env=slurm_down(tmp_path, cli_env),
                     timeout=30)
    assert (result.returncode, result.stdout) == (0, "ValueError: corrupt input file\n"), result.stderr
    assert result.stderr == (f"hyperion-jobs: squeue failed (rc 1): {SQUEUE_DOWN}; shown as last recorded\n"
                             f"hyperion-jobs: task {record}:3 ended FAILED (exit 3); stopped following\n")


def test_logs_follow_while_slurm_does_not_answer_goes_on_and_says_once_why_it_cannot_tell_the_end(
        tmp_path, cli_env) -> None:
    """A running task while squeue and sacct fail: its end cannot be known, so following goes on (a
    failed query is never an end), and one stderr line says why it may not stop by itself."""
    record = build_history(tmp_path, CONF, job="4300", unfinished=(7,))
    follow = subprocess.Popen(["hyperion-jobs", "logs", f"{record}:7", "-f"], env=slurm_down(tmp_path, cli_env),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(6)          # a query every 2 s while the daemons refuse: three looks at least
        assert follow.poll() is None, follow.communicate()
    finally:
        follow.send_signal(signal.SIGINT)
        out, err = follow.communicate(timeout=10)
    assert follow.returncode == 130 and out.endswith("part 7 done\n")
    problem = [line for line in err.splitlines() if "cannot tell" in line]
    assert len(problem) == 1, err
    # said once, at the first failed poll: "not answering for 0 s" read oddly there; the age is the
    # live status line's (a watch's), not this note's
    assert problem[0].startswith("hyperion-jobs: controller (squeue) not answering: "), problem[0]
    assert " for " not in problem[0].split("; cannot tell")[0], problem[0]
    assert SQUEUE_DOWN in problem[0] and problem[0].endswith(
        f"; cannot tell whether task {record}:7 has ended: following on until Slurm answers or Ctrl-C")


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_watch_ended_by_its_terminal_closing_kills_the_query_slurm_had_not_answered(tmp_path, cli_env, signum) -> None:
    """`hyperion-jobs watch` in a tmux pane that was killed (SIGHUP; SIGTERM from `kill`) while
    squeue hung: the watch died at once, and the squeue it waited for, in a process group of its
    own, ran on after it (a hung site wrapper's `sleep 600`, reparented to init, seen for minutes).
    It now ends as Ctrl-C ends it, with the query's whole group, exit 128 + the signal."""
    from test_jobs_poller import group_gone, hanging_tool, started_groups

    record = build_history(tmp_path, CONF, job="4300", unfinished=(7, 8))
    pids = tmp_path / "pids"
    hanging_tool(tmp_path / "bin", "squeue", pids)
    hanging_tool(tmp_path / "bin", "sacct", pids)
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    watch = subprocess.Popen(["hyperion-jobs", "watch", str(record)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        pgid = started_groups(pids)[0]
        time.sleep(0.5)
        watch.send_signal(signum)
        watch.communicate(timeout=10)
        assert group_gone(pgid), "the hung squeue outlived the watch"
        assert watch.returncode == 128 + signum
    finally:
        watch.kill()
        kill_noted_groups(pids)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT], ids=["SIGHUP", "SIGTERM", "SIGINT"])
def test_logs_follow_ended_while_squeue_hangs_kills_the_query_and_exits_as_the_signal_says(
        tmp_path, cli_env, signum) -> None:
    """`hyperion-jobs logs -f` in a tmux pane that was killed (SIGHUP), or sent SIGTERM, died where it
    stood (killed by the signal), and the squeue it waited for ran on after it; after Ctrl-C too, as
    the thread running the query was not waited for. It now ends as `watch` does: the query's group
    killed, exit 128 + the signal."""
    from test_jobs_poller import group_gone, hanging_tool, started_groups

    record = build_history(tmp_path, CONF, job="4300", unfinished=(7,))
    pids = tmp_path / "pids"
    hanging_tool(tmp_path / "bin", "squeue", pids)
    hanging_tool(tmp_path / "bin", "sacct", pids)
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    follow = subprocess.Popen(["hyperion-jobs", "logs", f"{record}:7", "-f"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        pgid = started_groups(pids)[0]
        time.sleep(0.5)
        follow.send_signal(signum)
        out, err = follow.communicate(timeout=10)
        assert group_gone(pgid), "the hung squeue outlived logs -f"
        assert follow.returncode == 128 + signum, (follow.returncode, err)
        assert out.endswith("part 7 done\n") and "Traceback" not in err, (out, err)
    finally:
        follow.kill()
        kill_noted_groups(pids)


def test_list_of_runs_ended_lately_waits_for_a_hung_squeue_once(tmp_path, cli_env) -> None:
    """Every end recorded lately (Slurm may requeue them: one squeue asks), squeue hung: `list` waited
    30 s for that squeue, said nothing of it, then 30 s more for `squeue -u` (60 s in all). It waits
    once, keeps the recorded counts and says that squeue did not answer, as `status` does."""
    record = build_history(tmp_path, CONF)
    ended_just_now(record)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pids = tmp_path / "pids"
    (bin_dir / "squeue").write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 3600\n")
    (bin_dir / "squeue").chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    started = time.monotonic()
    try:
        result = run_cli("hyperion-jobs", "list", str(tmp_path), env=env, timeout=120)
    finally:
        kill_noted_groups(pids)
    took = time.monotonic() - started
    assert took < 45, took
    assert result.returncode == 0, result.stderr
    assert "COMPLETED 5, FAILED 2, OUT_OF_MEMORY 1" in result.stdout
    assert result.stdout.rstrip().endswith(": not known"), result.stdout
    assert result.stderr == ("hyperion-jobs: controller (squeue) not answering: squeue failed (rc 124): squeue "
                             "timed out after 30 s; shown as last recorded\n")
