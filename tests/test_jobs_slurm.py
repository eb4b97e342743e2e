"""hyperion-jobs and the poller against the real single-node Slurm cluster."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from conftest import SLURM_UP, first_job_once_recorded, run_cli

from backends.records.record import JobRecord, SubmitRecord, TaskRecord, save_record
from backends.states import JobState
from backends.watch.poller import Poller, PollUpdate

pytestmark = pytest.mark.slurm
CTLD_PID = Path("/run/slurm-up/slurmctld.pid")


def sbatch(tmp_path: Path, body: str, array: str) -> str:
    """Submit `body` as an array with Slurm's own files in tmp_path/q; return the job id."""
    script = tmp_path / "task.sh"
    script.write_text("#!/bin/bash\n" + body)
    (tmp_path / "q").mkdir(exist_ok=True)
    done = subprocess.run(
        ["sbatch", "--parsable", f"--array={array}", "-p", "cpu", "-t", "5", "-J", "hyperion-jobs-test",
         "-o", str(tmp_path / "q" / "slurm-%A_%a.out"), "-e", str(tmp_path / "q" / "slurm-%A_%a.err"),
         str(script)], capture_output=True, text=True, check=True)
    return done.stdout.strip().split(";")[0]


def poll_until(poller: Poller, done, timeout: float = 60.0) -> PollUpdate:
    deadline = time.monotonic() + timeout
    while True:
        update = poller.poll_once()
        if done(update) or time.monotonic() > deadline:
            return update
        time.sleep(0.5)


def states_of(update: PollUpdate, job: str) -> dict[int | None, JobState]:
    return {task: s.state for (j, task), s in update.states.items() if j == job}


MIXED = """\
case $SLURM_ARRAY_TASK_ID in
1) echo "hello from 1"; exit 0;;
2) exit 3;;
*) sleep 90;;
esac
"""


def test_mixed_array_states_and_cancel_one_task(slurm_cluster, tmp_path, cli_env):
    job = sbatch(tmp_path, MIXED, "1-5%2")
    try:
        poller = Poller({job: (1, 2, 3, 4, 5)}, cap=2.0)
        want = {1: JobState.COMPLETED, 2: JobState.FAILED, 3: JobState.RUNNING,
                4: JobState.RUNNING, 5: JobState.PENDING}
        update = poll_until(poller, lambda u: states_of(u, job) == want)
        assert states_of(update, job) == want
        assert update.states[(job, 2)].exit_code == 3 and update.states[(job, 1)].exit_code == 0
        assert not update.all_terminal

        status = run_cli("hyperion-jobs", "status", job, "--json", env=cli_env, cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        shown = {t["task_id"]: (t["state"], t["exit_code"]) for t in json.loads(status.stdout)["tasks"]}
        assert shown[1] == ("COMPLETED", 0) and shown[2] == ("FAILED", 3)
        assert shown[3][0] == "RUNNING" and shown[5][0] in {"PENDING", "RUNNING"}

        # One running and one pending task; a pending task cancelled alone never
        # gets a sacct row of its own, the poller must still see it end.
        # No record here: Slurm's own .out path comes from the controller.
        out = run_cli("hyperion-jobs", "logs", f"{job}_1", "--out", env=cli_env, cwd=tmp_path)
        assert out.returncode == 0 and out.stdout == "hello from 1\n", out.stderr

        cancelled = run_cli("hyperion-jobs", "cancel", f"{job}_3", f"{job}_5", "--yes", env=cli_env)
        assert cancelled.returncode == 0, cancelled.stderr
        update = poll_until(poller, lambda u: states_of(u, job).get(3) is JobState.CANCELLED
                            and states_of(u, job).get(5) is JobState.CANCELLED)
        after = states_of(update, job)
        assert after[3] is JobState.CANCELLED and after[5] is JobState.CANCELLED
        assert after[4] is JobState.RUNNING and after[1] is JobState.COMPLETED
    finally:
        subprocess.run(["scancel", job])


def test_logs_follow_sees_lines_as_the_task_writes_them(slurm_cluster, tmp_path, cli_env):
    log = tmp_path / "tick.1.log"
    job = sbatch(tmp_path, f"for i in 1 2 3 4 5 6; do echo tick $i >> {log}; sleep 1; done\n", "1")
    record = SubmitRecord(
        path=str(tmp_path / "q" / "tick.JOB.submit.json"), backend="slurm", argv=("hyperion-submit",),
        cfg="", options={}, script=None, array_name="JOB", jobs=(JobRecord(job, 0, "1"),),
        tasks=(TaskRecord(1, job, 1, str(log), str(tmp_path / "q" / f"slurm-{job}_1.out"), None),),
        submitted_at="", cwd=str(tmp_path))
    save_record(record)
    follow = subprocess.Popen(["hyperion-jobs", "logs", f"{job}_1", "-f", "--dir", str(tmp_path)],
                              env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[tuple[float, str]] = []
    try:
        reader = threading.Thread(target=lambda: [seen.append((time.monotonic(), line.strip()))
                                                  for line in follow.stdout], daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(line == "tick 6" for _, line in seen):
            time.sleep(0.2)
    finally:
        follow.send_signal(signal.SIGINT)
        follow.wait(10)
        subprocess.run(["scancel", job])
    lines = [line for _, line in seen]
    assert lines == [f"tick {i}" for i in range(1, 7)][-len(lines):] and lines[-1] == "tick 6"
    times = [t for t, _ in seen]
    assert times[-1] - times[0] >= 2.0     # lines came while the task wrote them, not at once


def test_logs_follow_stops_by_itself_when_the_task_ends(slurm_cluster, tmp_path, cli_env, test_site):
    """`logs -f` followed until Ctrl-C long after the task had ended. Now, as `tail -f --pid`: every line
    as it is written, what is left once Slurm says the task ended, one stderr line with its end, exit 0;
    of a task that had ended already, its last lines and that line at once."""
    script = tmp_path / "task.sh"
    script.write_text('for i in 1 2 3 4 5; do echo "tick $i"; sleep 0.8; done; echo "giving up" >&2; exit 3\n')
    submit = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:1",
         "--output-file", str(tmp_path / "log" / "f.IDX.log"), "--", "bash", str(script)],
        env=cli_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "f.IDX.submit.json"
    follow = None
    seen: list[tuple[float, str]] = []
    try:
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline and submit.poll() is None:
            time.sleep(0.1)
        assert record.exists(), submit.communicate()
        follow = subprocess.Popen(["hyperion-jobs", "logs", f"{record}:1", "-f"], env=cli_env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        reader = threading.Thread(target=lambda: [seen.append((time.monotonic(), line.rstrip("\n")))
                                                  for line in follow.stdout], daemon=True)
        reader.start()
        follow.wait(180)           # the old code followed until Ctrl-C: TimeoutExpired
        stopped = time.monotonic()
        reader.join(10)
        err = follow.stderr.read()
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
        submit.communicate(timeout=180)
    job = json.loads(record.read_text())["jobs"][0]["job_id"]
    lines = [line for _, line in seen]
    assert follow.returncode == 0, err
    assert [line for line in lines if line.startswith("tick")] == [f"tick {i}" for i in range(1, 6)], lines
    assert "giving up" in lines
    assert lines[-1].startswith("# Ended (code 3)"), lines
    assert stopped - seen[-1][0] < 20       # within moments of the end (the footer nudges the poll)
    assert err.splitlines()[-1] == f"hyperion-jobs: task {record}:1 ended FAILED (exit 3); stopped following"

    started = time.monotonic()
    again = run_cli("hyperion-jobs", "logs", f"{job}_1", "-f", "-n", "1", "--dir", str(tmp_path), env=cli_env,
                    timeout=60)
    assert again.returncode == 0 and time.monotonic() - started < 15, again.stderr
    assert again.stdout.startswith("# Ended (code 3)") and len(again.stdout.splitlines()) == 1
    assert again.stderr == f"hyperion-jobs: task {job}_1 ended FAILED (exit 3); stopped following\n"


def test_logs_follow_of_a_waiting_task_says_it_waits_and_why(slurm_cluster, tmp_path, cli_env, test_site):
    """`logs -f` of a task pending behind a `%1` throttle printed nothing of the task until it started
    writing (only `waiting for PATH`): a waiting task read like a hung command. Now one stderr line
    says it waits and Slurm's reason, from the polls it makes anyway (once, not once a poll), and
    the log follows once the task runs; a task named as RECORD:VALUE is also named by its Slurm id."""
    script = tmp_path / "task.sh"
    script.write_text('echo "value $IDX"; [ "$IDX" = 1 ] && sleep 30; exit 0\n')
    submit = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:2", "--max-jobs-run", "1",
         "--output-file", str(tmp_path / "log" / "w.IDX.log"), "--", "bash", str(script)],
        env=cli_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "w.IDX.submit.json"
    followers: list[subprocess.Popen] = []
    try:
        job = first_job_once_recorded(record)
        deadline = time.monotonic() + 120      # task 1 runs: task 2 waits behind the throttle
        while not (tmp_path / "log" / "w.1.log").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (tmp_path / "log" / "w.1.log").exists(), "task 1 did not start within 120 s"
        for name in (f"{record}:2", f"{job}_2"):
            followers.append(subprocess.Popen(["hyperion-jobs", "logs", name, "-f", "--dir", str(tmp_path)],
                                              env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True))
        said = [follow.communicate(timeout=180) for follow in followers]
    finally:
        for follow in followers:
            if follow.poll() is None:
                follow.kill()
        submit.communicate(timeout=180)
        if record.exists():
            subprocess.run(["scancel", first_job_once_recorded(record, 0)], check=False)
    log = tmp_path / "log" / "w.2.log"
    for follow, name, (out, err) in zip(followers, (f"{record}:2", f"{job}_2"), said):
        assert follow.returncode == 0, err
        assert "value 2" in out.splitlines(), out
        who = name if name == f"{job}_2" else f"{name} ({job}_2)"
        assert err.splitlines() == [
            f"hyperion-jobs: waiting for {log}",
            f"hyperion-jobs: task {who} is waiting (PENDING: JobArrayTaskLimit); its log will follow once it starts",
            f"hyperion-jobs: task {name} ended COMPLETED (exit 0); stopped following"], err


FLAKY = """#!/bin/bash
if [ -e {flag} ]; then echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1; fi
exec {real} "$@"
"""


def test_logs_follow_says_once_slurm_answers_again_after_saying_it_cannot_tell_the_end(
        slurm_cluster, tmp_path, cli_env):
    """While squeue and sacct failed, `logs -f` said once that it cannot tell whether the task has
    ended, and nothing when Slurm answered again: the user was left thinking the end may pass unseen.
    Now one line says Slurm answers again (its end will be seen), and the follow ends at the end."""
    flag, go = tmp_path / "down", tmp_path / "go"
    bin_dir = tmp_path / "flaky-bin"
    bin_dir.mkdir()
    for tool in ("squeue", "sacct"):
        real = shutil.which(tool)
        assert real is not None
        (bin_dir / tool).write_text(FLAKY.format(flag=shlex.quote(str(flag)), real=shlex.quote(real)))
        (bin_dir / tool).chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    job = sbatch(tmp_path, f"echo started\nwhile [ ! -e {go} ]; do sleep 0.1; done\necho done\n", "1")
    out = tmp_path / "q" / f"slurm-{job}_1.out"
    err: list[str] = []
    follow = None

    def said(text: str, within: float) -> bool:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if any(text in line for line in err):
                return True
            time.sleep(0.1)
        return False

    try:
        deadline = time.monotonic() + 120
        while not (out.exists() and "started" in out.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert out.exists(), "the task did not start within 120 s"
        flag.touch()                 # Slurm "down" for this follow only
        follow = subprocess.Popen(["hyperion-jobs", "logs", f"{job}_1", "-f", "--dir", str(tmp_path)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=lambda: err.extend(line.rstrip("\n") for line in follow.stderr),
                         daemon=True).start()
        assert said("cannot tell", 15), err
        flag.unlink()                # answers again: a refused query is retried every 2 s
        assert said("answers again", 15), err
        assert follow.poll() is None, err
        go.touch()
        follow.wait(60)
        time.sleep(0.5)              # the reader thread takes the last line
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
        subprocess.run(["scancel", job])
    assert follow.returncode == 0, err
    assert len(err) == 3, err
    assert err[0].startswith("hyperion-jobs: controller (squeue) not answering: ") and err[0].endswith(
        f"; cannot tell whether task {job}_1 has ended: following on until Slurm answers or Ctrl-C"), err
    assert err[1] == f"hyperion-jobs: Slurm answers again; following task {job}_1 until it ends"
    assert err[2] == f"hyperion-jobs: task {job}_1 ended COMPLETED (exit 0); stopped following"


def _ctld_pid() -> int:
    return int(CTLD_PID.read_text().strip())


def _restart_slurmctld(pid: int) -> None:
    """Stop the (frozen) controller and bring the cluster back with the project's script."""
    os.kill(pid, signal.SIGTERM)
    os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    subprocess.run(["bash", str(SLURM_UP)], capture_output=True, text=True, timeout=180)
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True)
    assert "UP" in ping.stdout, ping.stdout + ping.stderr


def test_poller_survives_slurmctld_restart(slurm_cluster, tmp_path):
    """The controller hangs (SIGSTOP) until the poller reports it, then restarts.

    A hang rather than a plain stop: other test sessions on this cluster run
    tests/slurm/up.sh when they find it down, so only a hang reliably outlasts
    squeue's own retries.
    """
    job = sbatch(tmp_path, "sleep 8\n[ $SLURM_ARRAY_TASK_ID = 2 ] && exit 5\nexit 0\n", "1-2")
    updates: list[PollUpdate] = []
    stop = threading.Event()
    poller = Poller({job: (1, 2)}, floor=0.5, cap=2.0)
    result: list[PollUpdate] = []
    watcher = threading.Thread(target=lambda: result.append(poller.run(updates.append, stop)), daemon=True)
    watcher.start()
    pid = _ctld_pid()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                updates and set(states_of(updates[-1], job).values()) == {JobState.RUNNING}):
            time.sleep(0.2)
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and not any(u.error for u in updates):
            time.sleep(0.2)
    finally:
        _restart_slurmctld(pid)
    watcher.join(120)
    stop.set()
    errors = [u for u in updates if u.error]
    for u in updates:   # the timeline, for -s
        print(u.error, [(s.slurm_id, s.state.value, s.source) for s in u.changed])
    assert errors, "the poller never reported the controller being away"
    # While squeue fails only sacct's answers move tasks: never a result made from the failure.
    assert all(s.source == "sacct" for u in errors for s in u.changed)
    for task in (1, 2):   # once final, a task's state never changes again
        seen = [u.states[(job, task)].state for u in updates if (job, task) in u.states]
        first_final = next(i for i, st in enumerate(seen) if st.is_terminal)
        assert len(set(seen[first_final:])) == 1
    final = result[0]
    assert final.all_terminal
    assert final.states[(job, 1)].state is JobState.COMPLETED
    assert final.states[(job, 2)].state is JobState.FAILED and final.states[(job, 2)].exit_code == 5


def test_watch_and_list_a_record_written_by_hyperion_submit(slurm_cluster, tmp_path, cli_env, test_site):
    script = tmp_path / "task.sh"
    script.write_text('echo "value $IDX"; sleep 2; [ "$IDX" = 2 ] && exit 4; exit 0\n')
    submit = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:3",
         "--output-file", str(tmp_path / "exp" / "log" / "run.IDX.log"), "--", "bash", str(script)],
        env=cli_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "exp" / "log" / "q" / "run.IDX.submit.json"
    try:
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline and submit.poll() is None:
            time.sleep(0.2)
        assert record.exists(), submit.communicate()
        watch = run_cli("hyperion-jobs", "watch", str(record), "--cap", "2", env=cli_env, timeout=180)
        assert watch.returncode == 1, watch.stdout + watch.stderr   # task 2 exits 4
        assert "3 tasks: COMPLETED 2, FAILED 1" in watch.stdout
        assert "FAILED exit 4" in watch.stdout and "run.2.log" in watch.stdout

        listed = run_cli("hyperion-jobs", "list", str(tmp_path), "--json", env=cli_env)
        (summary,) = json.loads(listed.stdout)["records"]
        assert summary["record"] == str(record) and summary["counts"] == {"COMPLETED": 2, "FAILED": 1}

        logs = run_cli("hyperion-jobs", "logs", f"{record}:2", "-n", "50", env=cli_env)
        assert logs.returncode == 0 and "value 2" in logs.stdout
    finally:
        submit.wait(120)


def test_an_array_task_named_by_its_own_job_id_finds_its_record_and_log(slurm_cluster, tmp_path, cli_env,
                                                                       test_site):
    """The id a task prints as $SLURM_JOB_ID (and a failed-task record's slurm_job_* folder holds) is not the
    array's: logs, status and history read it as ARRAY_TASK, with the record's value and log."""
    done = run_cli("hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:2",
                   "--output-file", str(tmp_path / "log" / "t.IDX.log"), "--",
                   "bash", "-c", 'echo "task IDX is job $SLURM_JOB_ID of array $SLURM_ARRAY_JOB_ID"',
                   cwd=tmp_path, env=cli_env, timeout=180)
    assert done.returncode == 0, done.stderr
    said = {}   # value -> (its own job id, the array's), as each task printed them
    for value in (1, 2):
        line = (tmp_path / "log" / f"t.{value}.log").read_text().splitlines()[2].split()
        said[value] = (line[4], line[7])
    # Slurm may give the array's id to the first task it starts; the other has an id of its own
    value, (own, array) = next((v, ids) for v, ids in said.items() if ids[0] != ids[1])
    logs = run_cli("hyperion-jobs", "logs", own, cwd=tmp_path, env=cli_env)
    assert logs.returncode == 0 and f"task {value} is job {own}" in logs.stdout, logs.stderr
    status = run_cli("hyperion-jobs", "status", own, "--json", cwd=tmp_path, env=cli_env)
    (task,) = json.loads(status.stdout)["tasks"]
    assert task["value"] == value and task["log"] == str(tmp_path / "log" / f"t.{value}.log")
    history = run_cli("hyperion-jobs", "history", own, cwd=tmp_path, env=cli_env)
    assert history.returncode == 0 and array in history.stdout


@pytest.mark.skipif(not shutil.which("script"), reason="needs script(1) for a terminal")
def test_watch_on_a_terminal_shows_a_log_path_with_brackets_as_written(slurm_cluster, tmp_path, cli_env, test_site):
    """The live view of an array whose log path holds "[/bold]" ended in a MarkupError traceback."""
    submitted = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:2",
         "--output-file", str(tmp_path / "log" / "x[/bold]y.IDX.log"), "--", "bash", "-c", "sleep 3; exit 3"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = tmp_path / "log" / "x[" / "q" / "bold]y.IDX.submit.json"
    try:
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        watch = subprocess.run(["script", "-qec", shlex.join(["hyperion-jobs", "watch", str(record)]), "/dev/null"],
                               cwd=tmp_path, env={**cli_env, "COLUMNS": "250"}, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=180)
    finally:
        submitted.wait(timeout=180)
    screen = watch.stdout + watch.stderr
    assert watch.returncode == 1, screen
    assert "Traceback" not in screen and "MarkupError" not in screen
    assert "x[/bold]y.1.log" in screen or "x[/bold]y.2.log" in screen


def test_watch_into_a_pipe_says_each_change_once(slurm_cluster, tmp_path, cli_env, test_site):
    """A task cancelled while its array runs: the line saying so came two or three times (squeue's row, then
    sacct's with its signal and node, then the final sacct), each reading the same."""
    submitted = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:3",
         "--output-file", str(tmp_path / "log" / "d.IDX.log"), "--", "sleep", "8"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = tmp_path / "log" / "q" / "d.IDX.submit.json"
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "log" / "d.2.log").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        job = json.loads(record.read_text())["jobs"][0]["job_id"]
        watch = subprocess.Popen(["hyperion-jobs", "watch", str(record)], cwd=tmp_path, env=cli_env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        subprocess.run(["scancel", f"{job}_2"], check=True)
        out, err = watch.communicate(timeout=120)
    finally:
        submitted.wait(timeout=120)
    lines = [line.split(" ", 1)[1] for line in out.splitlines() if line[:2].isdigit()]
    assert lines.count(f"{job}_2 CANCELLED") == 1, out        # not 'exit 0': Slurm's 0:0 of a cancel
    assert len(lines) == len(set(lines)), out
    assert watch.returncode == 1 and "3 tasks: CANCELLED 1, COMPLETED 2" in out, out + err


def test_watch_into_a_pipe_after_a_status_recorded_a_cancel_says_it_and_the_retry(slurm_cluster, tmp_path, cli_env,
                                                                                 test_site):
    """Reattaching with `watch | cat` after `scancel J_2` and a `status` that recorded it: the log of states
    printed J_1 and J_3 and never a line of J_2 (its recorded end is not polled), and the summary named
    no retry where hyperion-submit ends with `rerun only those with: hyperion-jobs retry RECORD`."""
    submitted = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:3",
         "--output-file", str(tmp_path / "log" / "r.IDX.log"), "--", "sleep", "8"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = tmp_path / "log" / "q" / "r.IDX.submit.json"
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "log" / "r.2.log").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        job = json.loads(record.read_text())["jobs"][0]["job_id"]
        subprocess.run(["scancel", f"{job}_2"], check=True)
        ledger = tmp_path / "log" / "q" / "r.IDX.attempts.jsonl"
        while "CANCELLED" not in (ledger.read_text() if ledger.exists() else ""):
            assert time.monotonic() < deadline, "no look recorded the cancel"
            run_cli("hyperion-jobs", "status", str(record), env=cli_env, timeout=60)
            time.sleep(0.5)
        watch = run_cli("hyperion-jobs", "watch", str(record), cwd=tmp_path, env=cli_env, timeout=120)
    finally:
        submitted.wait(timeout=120)
    lines = [line.split(" ", 1)[1] for line in watch.stdout.splitlines() if line[:2].isdigit()]
    assert lines.count(f"{job}_2 CANCELLED") == 1, watch.stdout
    assert [line.split()[0] for line in lines[:3]] == [f"{job}_{task}" for task in (1, 2, 3)], watch.stdout
    assert watch.returncode == 1 and "3 tasks: CANCELLED 1, COMPLETED 2" in watch.stdout, watch.stdout + watch.stderr
    assert watch.stdout.splitlines()[-1] == f"  rerun only those with: hyperion-jobs retry {shlex.quote(str(record))}"


def test_list_shows_the_users_live_jobs_whatever_USER_says(slurm_cluster, tmp_path, cli_env):
    """`$USER` left naming someone else (after `su`, in a container) made `list` show their jobs,
    and the rerun check look for the pattern's scripts among them: Slurm knows the uid."""
    job = subprocess.run(["sbatch", "--parsable", "-H", "-o", str(tmp_path / "slurm-%j.out"), "--wrap", "sleep 30"],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        env = {**cli_env, "USER": "nobody\x1b[31m"}
        listed = run_cli("hyperion-jobs", "list", str(tmp_path), "--json", env=env)
        assert job in [j["job_id"] for j in json.loads(listed.stdout)["live"]], listed.stdout
    finally:
        subprocess.run(["scancel", job])


def test_cancel_asks_first_and_no_keeps_the_job(slurm_cluster, tmp_path, cli_env):
    (tmp_path / "q").mkdir()
    job = subprocess.run(["sbatch", "--parsable", "-H", "-o", str(tmp_path / "q" / "slurm-%j.out"),
                          "--wrap", "sleep 30"], capture_output=True, text=True, check=True).stdout.strip()
    try:
        kept = run_cli("hyperion-jobs", "cancel", job, env=cli_env, input="n\n")
        assert kept.returncode == 1 and f"Cancel {job}? [y/N]" in kept.stdout
        assert Poller({job: None}).poll_once().states[(job, None)].state is JobState.PENDING
        listed = json.loads(run_cli("hyperion-jobs", "list", str(tmp_path), "--json", env=cli_env).stdout)
        assert {"job_id": job, "state": "PENDING"}.items() <= next(
            j for j in listed["live"] if j["job_id"] == job).items()
        gone = run_cli("hyperion-jobs", "cancel", job, env=cli_env, input="y\n")
        assert gone.returncode == 0, gone.stderr
        update = poll_until(Poller({job: None}), lambda u: u.all_terminal, timeout=30)
        assert update.states[(job, None)].state is JobState.CANCELLED

        again = run_cli("hyperion-jobs", "cancel", job, "--yes", env=cli_env)   # scancel itself says rc 0
        assert again.returncode == 2 and again.stdout == ""
        assert again.stderr == f"hyperion-jobs: error: JOB: {job} already ended (CANCELLED); nothing to cancel\n"
    finally:
        subprocess.run(["scancel", job])


def test_cancel_of_a_colleagues_job_names_its_owner_in_the_question(slurm_cluster, tmp_path, cli_env):
    """A mistyped job id of someone else's job: the question said `Cancel 3025? [y/N]` alone (an
    administrator's y cancelled it; anyone else's y got scancel's `Access/permission denied`)."""
    job = subprocess.run(["sbatch", "--parsable", "--uid=nobody", "--gid=nogroup", "-H", "-D", "/tmp",
                          "-o", "/dev/null", "--wrap", "sleep 30"],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        kept = run_cli("hyperion-jobs", "cancel", job, env=cli_env, input="n\n")
        assert kept.returncode == 1 and f"Cancel {job} (job {job} is nobody's)? [y/N]" in kept.stdout, kept.stdout
        assert Poller({job: None}).poll_once().states[(job, None)].state is JobState.PENDING
    finally:
        subprocess.run(["scancel", job])


@pytest.mark.parametrize("argv", [["cancel", "99999999", "--yes"], ["cancel", "99999999_1", "--yes"],
                                  ["watch", "99999999"], ["status", "99999999"]])
def test_a_job_slurm_does_not_know_is_one_line_exit_2(slurm_cluster, cli_env, argv):
    result = run_cli("hyperion-jobs", *argv, env=cli_env, timeout=30)
    assert result.returncode == 2
    assert result.stderr.startswith("hyperion-jobs: error: JOB: Slurm knows no job 99999999")
    assert result.stderr.count("\n") == 1


def test_a_job_whose_name_is_not_utf8_is_listed_and_its_log_found(slurm_cluster, tmp_path, cli_env):
    """squeue's %j and scontrol's output were decoded strictly: one job named in latin-1 made
    `list` and `logs JOBID` trace back for every job of the user."""
    (tmp_path / "q").mkdir()
    job = subprocess.run(["sbatch", "--parsable", "-p", "cpu", "-t", "2", "-J", os.fsdecode(b"caf\xe9\x9b"),
                          "-o", str(tmp_path / "q" / "slurm-%j.out"), "--wrap", "echo started; sleep 60"],
                         capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    try:
        out = tmp_path / "q" / f"slurm-{job}.out"
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_text()) and time.monotonic() < deadline:
            time.sleep(0.5)
        listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=cli_env, timeout=60)
        assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
        assert job in listed.stdout and "\x9b" not in listed.stdout
        shown = run_cli("hyperion-jobs", "logs", job, "--out", env=cli_env, timeout=60)
        assert shown.returncode == 0 and shown.stdout == "started\n", shown.stderr
    finally:
        subprocess.run(["scancel", job], check=False)


@contextmanager
def _four_tasks_with_3_cancelled_while_pending(tmp_path: Path, cli_env: dict[str, str], test_site: Path,
                                               name: str) -> Iterator[tuple[subprocess.Popen, Path, str]]:
    """`hyperion-submit slurm` of IDX=1:4 (`sleep 3`), one task at a time, logs log/NAME.IDX.log, left
    running; once its record is written, `scancel JOB_3` while task 3 is still pending. Yields the
    hyperion-submit process (stdout and stderr piped), its record and the job id; kills it on leaving."""
    submitted = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:4", "--max-jobs-run", "1",
         "--output-file", str(tmp_path / "log" / f"{name}.IDX.log"), "--", "sleep", "3"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / f"{name}.IDX.submit.json"
    try:
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline and submitted.poll() is None:
            time.sleep(0.1)
        job = json.loads(record.read_text())["jobs"][0]["job_id"]
        subprocess.run(["scancel", f"{job}_3"], check=True)      # one task at a time: 3 is still pending
        yield submitted, record, job
    finally:
        submitted.kill()


def test_a_job_id_shows_the_pending_task_cancelled_before_it_started(slurm_cluster, tmp_path, cli_env, test_site):
    """A pending task cancelled on its own never gets an accounting row: `status RECORD` showed it from the
    ledger, but `status JOB` and `watch JOB` left it out (all COMPLETED, exit 0) and `status JOB_TASK`
    said Slurm knows no such job."""
    with _four_tasks_with_3_cancelled_while_pending(tmp_path, cli_env, test_site, "p") as (submitted, record, job):
        out, err = submitted.communicate(timeout=180)
    assert submitted.returncode == 1 and "IDX=3" in err, out + err   # hyperion-submit saw it end

    by_job = json.loads(run_cli("hyperion-jobs", "status", job, "--json", cwd=tmp_path, env=cli_env).stdout)
    assert by_job["counts"] == {"COMPLETED": 3, "CANCELLED": 1} and by_job["exit_status"] == 1
    one = run_cli("hyperion-jobs", "status", f"{job}_3", "--json", cwd=tmp_path, env=cli_env)
    assert one.returncode == 0, one.stderr
    (task,) = json.loads(one.stdout)["tasks"]
    assert (task["value"], task["state"]) == (3, "CANCELLED")
    # its LOG: never written, and never to be (it never started), not a log lost
    for target in (job, str(record)):
        table = run_cli("hyperion-jobs", "status", target, cwd=tmp_path, env=cli_env).stdout.splitlines()
        (row,) = [line for line in table if line.startswith(f"{job}_3 ")]
        assert row.endswith("no log (never started)"), table
        assert not any(line.endswith(("(missing)", "(never started)")) for line in table if line is not row), table
    watch = run_cli("hyperion-jobs", "watch", job, cwd=tmp_path, env=cli_env, timeout=120)
    assert watch.returncode == 1 and "4 tasks: CANCELLED 1, COMPLETED 3" in watch.stdout, watch.stdout + watch.stderr
    assert f"  {job}_3 CANCELLED exit - no log (never started)\n" in watch.stdout, watch.stdout   # not `log no log`
    # its log was never made and never will be: said at once, also with -f (which waited for ever)
    for follow in ([], ["-f"]):
        logs = run_cli("hyperion-jobs", "logs", f"{job}_3", *follow, cwd=tmp_path, env=cli_env, timeout=30)
        assert logs.returncode == 2, (follow, logs.stdout, logs.stderr)
        assert logs.stderr == (f"hyperion-jobs: error: TASK: {job}_3 ended CANCELLED and left no log: "
                               f"{tmp_path / 'log' / 'p.3.log'} does not exist\n"), logs.stderr
    # cancelled again: accounting has no row of a task cancelled while pending ("Slurm knows no job")
    again = run_cli("hyperion-jobs", "cancel", f"{job}_3", "--yes", cwd=tmp_path, env=cli_env, timeout=60)
    assert (again.returncode, again.stderr) == (
        2, f"hyperion-jobs: error: JOB: {job}_3 already ended (CANCELLED); nothing to cancel\n")


def test_status_of_an_array_whose_pending_values_are_evenly_spaced(slurm_cluster, test_site, tmp_path, cli_env):
    """Slurm writes the pending rest of `--array=3,6,...,24` (or every 7th task to retry) with a step,
    `J_[6-24:3%1]` (four values it still lists, eight not): sacct's answer was refused as 'not a range list', so `status` printed only that and
    exited 1, and the console and hyperion-submit said accounting was not answering, the whole run."""
    proc = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "R=3,6,9,12,15,18,21,24", "--max-jobs-run", "1",
         "--output-file", "log/r.R.log", "--", "sleep", "60"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "r.R.submit.json"
    job = None
    try:
        deadline = time.monotonic() + 60
        job = first_job_once_recorded(record)
        shown = None
        while time.monotonic() < deadline:
            shown = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env, timeout=60)
            states = [t["state"] for t in json.loads(shown.stdout)["tasks"]] if shown.returncode == 0 else []
            if states.count("PENDING") == 7 and "RUNNING" in states:
                break
            time.sleep(1)
        assert shown.returncode == 0, shown.stderr
        assert sorted(states) == ["PENDING"] * 7 + ["RUNNING"], shown.stdout
        assert "not a range list" not in shown.stderr + shown.stdout
    finally:
        if job:
            subprocess.run(["scancel", job])
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert "not a range list" not in err and "not answering" not in err, err


def test_watch_of_a_task_cancelled_while_pending_ends_soon_after(slurm_cluster, tmp_path, cli_env):
    """`hyperion-jobs watch J_3` right after `scancel J_3` of a throttled, pending task went on polling
    13 to 23 s (until accounting dropped it from its pending range, then one poll more) before it said
    CANCELLED; the controller drops it at once."""
    job = sbatch(tmp_path, "sleep 60\n", "1-3%1")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:      # task 1 runs, 2 and 3 wait; accounting has the range row
            acct = subprocess.run(["sacct", "-j", job, "-n", "-X", "-P", "-o", "JobID,State"],
                                  capture_output=True, text=True).stdout
            if f"{job}_1|RUNNING" in acct and f"{job}_[2-3%1]|PENDING" in acct:
                break
            time.sleep(0.5)
        assert f"{job}_[2-3%1]|PENDING" in acct, acct
        subprocess.run(["scancel", f"{job}_3"], check=True)
        started = time.monotonic()
        watch = run_cli("hyperion-jobs", "watch", f"{job}_3", cwd=tmp_path, env=cli_env, timeout=120)
        took = time.monotonic() - started
    finally:
        subprocess.run(["scancel", job], check=False)
    assert watch.returncode == 1 and "1 task: CANCELLED 1" in watch.stdout, watch.stdout + watch.stderr
    assert took < 8, (took, watch.stdout)     # 13 to 23 s before; about 5.5 s now


def test_watch_into_a_pipe_lists_the_first_snapshot_in_task_order(slurm_cluster, tmp_path, cli_env):
    """The first lines of a piped watch came in accounting's order, the last task first (6743_89,
    6743_88, ...), where `status` and a local record's watch go by task order."""
    job = sbatch(tmp_path, "exit 0\n", "1-12")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        acct = subprocess.run(["sacct", "-j", job, "-n", "-X", "-P", "-o", "State"],
                              capture_output=True, text=True).stdout.split()
        if acct.count("COMPLETED") == 12:
            break
        time.sleep(0.5)
    watch = run_cli("hyperion-jobs", "watch", job, cwd=tmp_path, env=cli_env, timeout=120)
    assert watch.returncode == 0, watch.stdout + watch.stderr
    shown = [line.split()[1] for line in watch.stdout.splitlines() if line[2:3] == ":"]
    assert shown == [f"{job}_{task}" for task in range(1, 13)], watch.stdout


def test_status_shows_no_elapsed_time_for_tasks_that_never_started(slurm_cluster, tmp_path, cli_env):
    """ELAPSED read 0:00:00 for pending tasks and for tasks cancelled while pending along with their job,
    but - for one cancelled alone: a task that never started shows -, one that ran its time."""
    job = sbatch(tmp_path, "sleep 60\n", "1-3%1")

    def elapsed() -> dict[str, tuple[str, str]]:
        shown = run_cli("hyperion-jobs", "status", job, cwd=tmp_path, env=cli_env, timeout=60).stdout
        header, *rows = [line.split() for line in shown.splitlines() if line.startswith(("TASK", job))]
        return {row[0]: (row[header.index("STATE")], row[header.index("ELAPSED")]) for row in rows}

    try:
        deadline = time.monotonic() + 60
        while (seen := elapsed()).get(f"{job}_1", ("",))[0] != "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert seen[f"{job}_2"] == seen[f"{job}_3"] == ("PENDING", "-"), seen
        time.sleep(1.5)
        subprocess.run(["scancel", job], check=True)
        ending = {"RUNNING", "COMPLETING", "PENDING"}
        while ending & {state for state, _ in elapsed().values()} and time.monotonic() < deadline:
            time.sleep(0.5)
        seen = elapsed()
    finally:
        subprocess.run(["scancel", job], check=False)
    assert seen[f"{job}_1"][0] == "CANCELLED" and seen[f"{job}_1"][1] not in ("-", "0:00:00"), seen
    assert seen[f"{job}_2"] == seen[f"{job}_3"] == ("CANCELLED", "-"), seen



def _bare_in_accounting(job: str) -> bool:
    """Whether sacct's one row for `job` is the job's own, with no task id."""
    acct = subprocess.run(["sacct", "-j", job, "-n", "-X", "-P", "-o", "JobID"], capture_output=True, text=True)
    return acct.stdout.split() == [job]


def _status_of_cancelled_at_once(tmp_path: Path, cli_env: dict[str, str]) -> tuple[str, dict] | None:
    """`status --json` of a 3-task array cancelled right after sbatch, taken while accounting's only row
    for it is the array job's own (sacct says so before and after); None if the moment was missed."""
    job = sbatch(tmp_path, "sleep 60\n", "1-3%1")
    try:
        subprocess.run(["scancel", job], check=True)
        before = _bare_in_accounting(job)
        shown = run_cli("hyperion-jobs", "status", job, "--json", cwd=tmp_path, env=cli_env, timeout=60)
        if not (before and _bare_in_accounting(job)):
            return None
    finally:
        subprocess.run(["scancel", job], check=False)
    assert shown.returncode == 0, shown.stderr
    return job, json.loads(shown.stdout)


def test_status_of_an_array_cancelled_at_once_shows_its_tasks_only(slurm_cluster, tmp_path, cli_env):
    """For 2-5 s after `scancel` of an array accounting has not filed as a range yet (cancelled right
    after sbatch, or as its first task starts), sacct's only row is the array job's own, with no task
    id; `status JOB` showed it as a task: '4 tasks: CANCELLED 4' for a 3-task array. A plain job
    cancelled the same way keeps its single row."""
    for _ in range(6):     # the moment lasts 2-5 s; sacct has filed the array within 0.5 s once in ten
        caught = _status_of_cancelled_at_once(tmp_path, cli_env)     # (three times in a row once, under a CI's load)
        if caught is not None:
            break
    else:
        pytest.fail("sacct named the array's tasks within a second of scancel six times: nothing was tested")
    job, answer = caught
    assert [t["slurm_id"] for t in answer["tasks"]] == [f"{job}_{task}" for task in (1, 2, 3)], answer
    assert answer["counts"] == {"CANCELLED": 3}
    plain = subprocess.run(["sbatch", "--parsable", "-p", "cpu", "-t", "5", "-J", "hyperion-jobs-test",
                            "-o", "/dev/null", "--wrap", "sleep 60"],
                           capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    try:
        subprocess.run(["scancel", plain], check=True)
        single = run_cli("hyperion-jobs", "status", plain, "--json", cwd=tmp_path, env=cli_env, timeout=60)
    finally:
        subprocess.run(["scancel", plain], check=False)
    assert [(t["slurm_id"], t["state"]) for t in json.loads(single.stdout)["tasks"]] == [(plain, "CANCELLED")]


def test_status_of_a_retry_s_pending_scattered_values_is_not_cut_by_slurm(slurm_cluster, tmp_path, cli_env):
    """A retry pends as one row of scattered values: `12_[7,17,34,...]`. Slurm cuts a task list
    past 64 characters to `...]` unless SLURM_BITSTR_LEN says otherwise, and `hyperion-jobs status`
    of a 29-task retry of a 300-task array failed, exit 1, 'sacct: unexpected sacct line:
    '10942_[7,17,34,...,204,...]|...'', while the tasks waited; usage and history too."""
    from backends.launch_slurm import submit
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan

    values = [7, 17, 34, 51, 57, 68, 85, 100, 101, 102, 107, 119, 136, 153, 157, 170, 187, 204, 207,
              221, 238, 250, 251, 255, 257, 272, 289, 290, 291]   # one runs at a time: the rest pend as one row
    site, options = parse_submit_argv([
        "slurm", "--cfg", str(Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"),
        "--array", "JOB=" + ",".join(map(str, values)), "--max-jobs-run", "1", "--time", "00:02:00",
        "--output-file", str(tmp_path / "log" / "p.JOB.log"), "--", "sleep", "120"])
    record = submit(build_plan(site, options))
    try:
        for command in ("status", "usage", "history"):
            result = run_cli("hyperion-jobs", command, record.path, "--json", env=cli_env, timeout=60)
            assert result.returncode == 0, (command, result.stderr)
        tasks = json.loads(run_cli("hyperion-jobs", "status", record.path, "--json", env=cli_env).stdout)["tasks"]
        assert [t["value"] for t in tasks] == values
        assert {t["state"] for t in tasks} <= {"PENDING", "RUNNING"}, tasks
    finally:
        subprocess.run(["scancel", *(job.job_id for job in record.jobs)], capture_output=True)


def test_logs_of_a_job_id_that_never_was_says_slurm_knows_no_such_job(slurm_cluster, tmp_path, cli_env):
    """A mistyped id: `logs` said Slurm "no longer knows" it, as if a job had run and been purged;
    status and watch say "Slurm knows no job"."""
    for target in ("2147483647", "2147483647_3"):
        shown = run_cli("hyperion-jobs", "logs", target, cwd=tmp_path, env=cli_env)
        assert shown.returncode == 2
        assert shown.stderr == (f"hyperion-jobs: error: TASK: no record under . and Slurm knows no job {target} "
                                "(scontrol on the local cluster); name the record instead (RECORD:VALUE) or another "
                                "cluster (-M NAME)\n"), shown.stderr


def test_logs_of_an_earlier_attempts_task_cancelled_while_pending_name_its_log(slurm_cluster, tmp_path, cli_env):
    """The user's session: an array submitted, its wait left (a closed terminal), one pending task
    cancelled with scancel, the rest retried. `logs RECORD:3 --attempt 1` named Slurm's file alone
    (read in place of a log that run never wrote); `status` awaits no usage of a task that never ran."""
    from conftest import submit_real_array

    record = submit_real_array(tmp_path / "log" / "p.JOB.log", "JOB=1:3", "sleep", "8",
                               extra=("--max-jobs-run", "1"), cwd=tmp_path)
    job = record.jobs[0].job_id
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["squeue", "-h", "-j", f"{job}_1", "-t", "R"], capture_output=True,
                             text=True).stdout.strip() == "":
            assert time.monotonic() < deadline, "task 1 never started"
            time.sleep(0.5)
        subprocess.run(["scancel", f"{job}_3"], check=True)
        deadline = time.monotonic() + 90
        while subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout.strip():
            assert time.monotonic() < deadline, "the job never ended"
            time.sleep(1)
        table = run_cli("hyperion-jobs", "status", str(record.path), env=cli_env, cwd=tmp_path)
        # it never started: no usage is awaited of it (the line would say "the next status asks again" for ever)
        assert "usage of 3 ended task(s)" not in table.stderr, table.stderr
        retried = run_cli("hyperion-jobs", "retry", str(record.path), "--yes", env=cli_env, cwd=tmp_path, timeout=120)
        assert retried.returncode == 0, retried.stderr
        # attempt 1 of value 3 wrote nothing: its own log is named, not only Slurm's file read in its place
        earlier = run_cli("hyperion-jobs", "logs", f"{record.path}:3", "--attempt", "1", env=cli_env, cwd=tmp_path)
        assert earlier.returncode == 2
        assert (f"{tmp_path / 'log' / 'p.3.log'} is a later attempt's, and Slurm's "
                f"{tmp_path / 'log' / 'q' / f'slurm-{job}_3.out'} does not exist") in earlier.stderr, earlier.stderr
    finally:
        subprocess.run(["scancel", job], check=False)


def test_a_retry_of_every_third_value_ends_with_each_rerun_completed(slurm_cluster, tmp_path, cli_env, test_site):
    """Values 3, 6, ..., 30 failed and were retried one at a time: Slurm keeps their pending rest
    as `3-30:3`, which `squeue -r` lists without its last value. The retry's wait recorded 30
    CANCELLED after 5 s, while it waited its turn, and it then ran and completed: `status`
    said CANCELLED and the next `retry` would have run it again."""
    task = tmp_path / "task.sh"
    task.write_text('echo "value $1"; sleep 1\n'
                    'if [ $(( $1 % 3 )) = 0 ] && [ ! -e "$0.$1" ]; then touch "$0.$1"; exit 2; fi\n')
    record = tmp_path / "log" / "q" / "t.IDX.submit.json"
    first = run_cli("hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:30",
                    "--max-jobs-run", "4", "--output-file", str(tmp_path / "log" / "t.IDX.log"), "--",
                    "bash", str(task), "IDX", env=cli_env, cwd=tmp_path, timeout=300)
    assert first.returncode == 1 and "10 of 30 task(s) did not succeed (failed 10)" in first.stderr, first.stderr
    retry = run_cli("hyperion-jobs", "retry", str(record), "--max-jobs-run", "1", "--yes",
                    env=cli_env, cwd=tmp_path, timeout=300)
    assert retry.returncode == 0, retry.stdout + retry.stderr
    assert "--array=3-30:3%1" in retry.stderr or "--array=3,6,9" in retry.stderr, retry.stderr
    status = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    assert status["counts"] == {"COMPLETED": 30} and status["exit_status"] == 0, status["counts"]
    again = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", env=cli_env, cwd=tmp_path)
    assert again.returncode == 0 and "nothing" in (again.stdout + again.stderr).lower(), again.stdout + again.stderr


def test_watch_of_a_job_started_after_a_pending_task_was_cancelled_counts_that_task(slurm_cluster, tmp_path,
                                                                                    cli_env, test_site):
    """`hyperion-jobs watch J` started while the run went on, just after `scancel J_3` of a pending task:
    the controller had dropped J_3 and accounting never gives it a row, so the watch of "every task Slurm
    knows of J" never learned it existed and ended `3 tasks: COMPLETED 3`, exit 0, while hyperion-submit
    said JOB=3 was CANCELLED (exit 1). The job's tasks are its record's."""
    with _four_tasks_with_3_cancelled_while_pending(tmp_path, cli_env, test_site, "w") as (submitted, record, job):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:                       # gone from the controller's answer
            listed = subprocess.run(["squeue", "-h", "-j", job, "--array-unique", "-o", "%i"],
                                    capture_output=True, text=True).stdout.split()
            if f"{job}_3" not in listed and not any("3" in item for item in listed if "[" in item):
                break
            time.sleep(0.2)
        watch = run_cli("hyperion-jobs", "watch", job, cwd=tmp_path, env=cli_env, timeout=120)
        out, err = submitted.communicate(timeout=180)
    assert submitted.returncode == 1 and "IDX=3" in err, out + err
    assert watch.returncode == 1, watch.stdout + watch.stderr
    assert "4 tasks: CANCELLED 1, COMPLETED 3" in watch.stdout, watch.stdout + watch.stderr
    assert watch.stdout.splitlines()[-1] == (
        f"  rerun only those with: hyperion-jobs retry {shlex.quote(str(record))} --values 3"), watch.stdout


def test_logs_of_a_job_no_record_submitted_says_its_empty_slurm_file_is_empty(slurm_cluster, tmp_path, cli_env):
    """`logs JOB` of a job sbatch'ed by hand shows Slurm's stdout file (scontrol's StdOut); when that
    file was empty it printed nothing at all, exit 0, while `logs JOB --out` of the same file said it
    is empty. Both say so now."""
    out = tmp_path / "q" / "slurm-plain.out"
    out.parent.mkdir()
    out.write_bytes(b"")
    job = subprocess.run(["sbatch", "--parsable", "-H", "-o", str(out), "--wrap", "sleep 30"],
                         capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    try:
        for extra in ([], ["--out"]):
            shown = run_cli("hyperion-jobs", "logs", job, *extra, cwd=tmp_path, env=cli_env, timeout=60)
            assert shown.returncode == 0 and shown.stdout == "", shown.stderr
            assert shown.stderr == (f"hyperion-jobs: {out} is empty (nothing written to {job}'s Slurm stdout "
                                    "file)\n"), extra
    finally:
        subprocess.run(["scancel", job], check=False)


def test_logs_of_a_whole_array_no_record_submitted_asks_for_one_task(slurm_cluster, tmp_path, cli_env):
    """`logs 3142` of a 2-task array sbatch'ed by hand: Slurm answers the array's id with one of its
    tasks, so `logs` read task 2's file (or, while all pended, named `slurm-3142_4294967294.out`) and
    called it 3142's. It asks for one task now, as it does of an array a record submitted; a task
    named reads its own file."""
    job = subprocess.run(["sbatch", "--parsable", "-H", "--array=1-2", "-o", str(tmp_path / "slurm-%A_%a.out"),
                          "--wrap", "echo hello $SLURM_ARRAY_TASK_ID"],
                         capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    try:
        pending = run_cli("hyperion-jobs", "logs", job, cwd=tmp_path, env=cli_env, timeout=60)
        assert pending.returncode == 2 and pending.stdout == "", pending.stdout + pending.stderr
        assert pending.stderr == (f"hyperion-jobs: error: TASK: job {job} is an array; name one task, "
                                  f"e.g. {job}_1\n")
        subprocess.run(["scontrol", "release", job], check=True, capture_output=True)
        deadline = time.monotonic() + 240
        while not all((tmp_path / f"slurm-{job}_{task}.out").read_text(errors="replace").endswith("\n")
                      for task in (1, 2) if (tmp_path / f"slurm-{job}_{task}.out").exists()) \
                or len(list(tmp_path.glob("slurm-*.out"))) < 2:
            assert time.monotonic() < deadline, "the array did not run within 240 s"
            time.sleep(0.3)
        bare = run_cli("hyperion-jobs", "logs", job, cwd=tmp_path, env=cli_env, timeout=60)
        assert bare.returncode == 2 and f"job {job} is an array; name one task" in bare.stderr, bare.stderr
        one = run_cli("hyperion-jobs", "logs", f"{job}_1", cwd=tmp_path, env=cli_env, timeout=60)
        assert one.returncode == 0 and one.stdout == "hello 1\n", one.stdout + one.stderr
    finally:
        subprocess.run(["scancel", job], check=False)


def test_status_of_a_task_cancelled_while_pending_with_no_watch_shows_its_request_and_no_log(
        slurm_cluster, tmp_path, cli_env, test_site):
    """`scancel J_3` while it pends, hyperion-submit's wait gone (killed with the login session): once
    the job ended, `status` told it CANCELLED by the never-started rule with `-` for memory and time,
    where Slurm's own rows showed the request (`-/100M`, `-/00:10:00`), and its LOG as
    `.../p.3.log (missing)`, as if a log had been lost: it never started."""
    submitted = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "IDX=1:4", "--max-jobs-run", "1",
         "--output-file", str(tmp_path / "log" / "p.IDX.log"), "--", "sleep", "2"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    record = tmp_path / "log" / "q" / "p.IDX.submit.json"
    job = None
    try:
        job = first_job_once_recorded(record)
        submitted.kill()                                   # no watch records the cancel
        submitted.wait()
        subprocess.run(["scancel", f"{job}_3"], check=True)     # one task at a time: 3 is still pending
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and subprocess.run(
                ["squeue", "-h", "-j", job, "-t", "PD,R,CG,S"], capture_output=True, text=True).stdout.strip():
            time.sleep(1)
    finally:
        if submitted.poll() is None:
            submitted.kill()
        if job:
            subprocess.run(["scancel", job], check=False)
    for target in (str(record), job, str(record)):       # the rule's word, then the ledger's once status wrote it
        shown = run_cli("hyperion-jobs", "status", target, cwd=tmp_path, env=cli_env, timeout=60)
        header, *rows = [line.split("  ") for line in shown.stdout.splitlines() if line.startswith(("TASK", job))]
        header = [cell.strip() for cell in header if cell.strip()]
        cells = {row[0].strip(): [cell.strip() for cell in row if cell.strip()] for row in rows}
        three = dict(zip(header, cells[f"{job}_3"]))
        assert three["STATE"] == "CANCELLED" and three["ELAPSED"] == "-", shown.stdout
        assert (three["MEM USED/REQ"], three["TIME USED/LIMIT"]) == ("-/100M", "-/00:10:00"), shown.stdout
        assert three["LOG"] == "no log (never started)", shown.stdout
        assert "(missing)" not in shown.stdout, shown.stdout


def test_watch_of_a_recorded_job_slurm_does_not_know_is_one_line_exit_2(slurm_cluster, tmp_path, cli_env):
    """A record names job 99999999 (another cluster's, or purged), none of its tasks ended: `watch
    99999999` waited for ever without a word, since `status J` shows a recorded task Slurm names
    nowhere as an UNKNOWN row; it says Slurm knows no such job, in `watch RECORD`'s words."""
    task = TaskRecord(1, "99999999", 1, str(tmp_path / "log" / "x.1.log"),
                      str(tmp_path / "log" / "q" / "slurm-99999999_1.out"),
                      str(tmp_path / "log" / "q" / "slurm-99999999_1.err"))
    save_record(SubmitRecord(
        path=str(tmp_path / "log" / "q" / "x.JOB.submit.json"), backend="slurm", argv=("hyperion-submit", "slurm"),
        cfg="conf/submit_test_cluster.yaml", options={}, script=None, array_name="JOB",
        jobs=(JobRecord("99999999", 0, "1"),), tasks=(task,), submitted_at="2026-12-02T13:00:00", cwd=str(tmp_path)))
    result = run_cli("hyperion-jobs", "watch", "99999999", cwd=tmp_path, env=cli_env, timeout=30)
    assert result.returncode == 2, result
    assert result.stderr == (f"hyperion-jobs: error: JOB: Slurm knows no job 99999999, which "
                             f"{tmp_path / 'log' / 'q' / 'x.JOB.submit.json'} submitted\n"), result.stderr


def test_watch_of_a_record_whose_jobs_slurm_does_not_know_is_one_line_exit_2(slurm_cluster, tmp_path, cli_env):
    """A record of jobs Slurm has no trace of (purged from accounting, another cluster's, a fixture's),
    none of whose tasks has a recorded end: `watch RECORD` waited for ever and printed nothing, where
    `watch J` of such a job says `Slurm knows no job J`. It says so too, naming the record and the
    job(s), exit 2. (Job ids above MaxJobId: never the cluster's.)"""
    from test_console_fixtures import build_history

    conf = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
    one = build_history(tmp_path / "one", conf, n=2, job="99999999", unfinished=(1, 2))
    two = build_history(tmp_path / "two", conf, n=2, job="99999998", retry_job="99999999", unfinished=(1, 2),
                        retried={1: ("COMPLETED", 0)})      # value 1's newest run: attempt 2, job 99999999
    Path(str(two).replace(".submit.json", ".attempts.jsonl")).write_text(
        "".join(line + "\n" for line in Path(str(two).replace(".submit.json", ".attempts.jsonl")).read_text()
                .splitlines() if json.loads(line)["type"] != "final"))
    for record, said in ((one, "no job 99999999"), (two, "none of jobs 99999998,99999999")):
        started = time.monotonic()
        result = run_cli("hyperion-jobs", "watch", str(record), cwd=tmp_path, env=cli_env, timeout=60)
        assert (result.returncode, result.stdout) == (2, ""), result
        assert result.stderr == f"hyperion-jobs: error: RECORD: Slurm knows {said}, which {record} submitted\n"
        assert time.monotonic() - started < 15
    # a record whose every end is recorded is watched to its end as before: its ends, its counts
    ended = build_history(tmp_path / "ended", conf, job="99999999")
    result = run_cli("hyperion-jobs", "watch", str(ended), cwd=tmp_path, env=cli_env, timeout=60)
    assert result.returncode == 1 and "knows" not in result.stderr, result
    assert "8 tasks: COMPLETED 5, FAILED 2, OUT_OF_MEMORY 1" in result.stdout.splitlines(), result.stdout


def test_watch_of_a_record_with_some_ends_recorded_whose_jobs_slurm_does_not_know_ends_them_unknown(
        slurm_cluster, tmp_path, cli_env):
    """A record some of whose tasks have their end in the ledger while the job of the others is one
    Slurm has no trace of (purged from accounting): `watch RECORD` showed the recorded ends, then
    waited for ever, saying every 30 s `sacct answered with no row of job(s) J, which Slurm listed
    before` (the ledger had listed them, not Slurm), where `status` shows those tasks UNKNOWN. It
    ends as `status` shows it: the recorded ends, the others UNKNOWN, one line saying Slurm knows no
    job J, exit 1 (not every task succeeded). Decided on the unended tasks' jobs only: a retry whose
    own job is unknown while attempt 1's ends are recorded ends so too. (Job ids above MaxJobId.)"""
    from test_console_fixtures import build_history

    conf = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
    some = build_history(tmp_path / "some", conf, n=8, job="99999999", unfinished=(1, 2))
    retried = build_history(tmp_path / "retried", conf, n=8, job="99999999", retry_job="99999998",
                            retried={3: ("COMPLETED", 0), 5: ("COMPLETED", 0)})
    ledger = Path(str(retried).replace(".submit.json", ".attempts.jsonl"))
    ledger.write_text("".join(line + "\n" for line in ledger.read_text().splitlines()
                              if json.loads(line).get("job_id") != "99999998" or json.loads(line)["type"] != "final"))
    for record, job, counts, unknown in (
            (some, "99999999", "8 tasks: COMPLETED 3, FAILED 2, OUT_OF_MEMORY 1, UNKNOWN 2", ("99999999_1", "99999999_2")),
            (retried, "99999998", "8 tasks: COMPLETED 5, OUT_OF_MEMORY 1, UNKNOWN 2", ("99999998_3", "99999998_5"))):
        started = time.monotonic()
        result = run_cli("hyperion-jobs", "watch", str(record), cwd=tmp_path, env=cli_env, timeout=60)
        assert result.returncode == 1, result
        assert result.stderr == (f"hyperion-jobs: Slurm knows no job {job}, which {record} submitted; "
                                 "the 2 task(s) with no recorded end are not known (UNKNOWN)\n"), result
        lines = result.stdout.splitlines()
        assert counts in lines, result.stdout
        assert all(any(line.startswith(f"  {task} UNKNOWN exit - log ") for line in lines) for task in unknown), lines
        assert "listed before" not in result.stdout, result.stdout
        assert time.monotonic() - started < 15
        status = run_cli("hyperion-jobs", "status", str(record), cwd=tmp_path, env=cli_env, timeout=60)
        assert counts in status.stdout.splitlines(), status      # as status shows the same record


def test_watch_of_a_record_whose_attempt_1_job_slurm_does_not_know_ends_when_attempt_2_s_job_ends(
        slurm_cluster, tmp_path, cli_env):
    """A record waiting on two jobs: attempt 1's (purged from accounting, or never this cluster's:
    values 1-2 with no recorded end) and attempt 2's, a real array rerunning values 3 and 5. Once the
    real job ended, `watch RECORD` waited for ever on attempt 1's tasks (a state Slurm gave attempt
    2's tasks made every job 'known'). Decided per job: it ends once attempt 2's job ended, its ends
    recorded, attempt 1's unended tasks UNKNOWN with the line of a job Slurm knows nothing of, exit 1
    (not every task succeeded), as `status` shows the record. (Attempt 1's job id: above MaxJobId.)"""
    from test_console_fixtures import build_history

    job = subprocess.run(["sbatch", "--parsable", "--array=3,5", "-o", str(tmp_path / "slurm-%A_%a.out"),
                          "--wrap", "sleep 5"], capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    try:
        conf = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
        record = build_history(tmp_path, conf, n=8, job="99999999", unfinished=(1, 2), retry_job=job,
                               retried={3: ("COMPLETED", 0), 5: ("COMPLETED", 0)})
        ledger = Path(str(record).replace(".submit.json", ".attempts.jsonl"))
        ledger.write_text("".join(line + "\n" for line in ledger.read_text().splitlines()   # attempt 2 runs
                                  if json.loads(line).get("job_id") != job or json.loads(line)["type"] != "final"))
        started = time.monotonic()
        try:
            result = run_cli("hyperion-jobs", "watch", str(record), cwd=tmp_path, env=cli_env, timeout=120)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"watch still waited 120 s after it started: {exc.stdout!r}")
    finally:
        subprocess.run(["scancel", job], check=False)
    assert result.returncode == 1, result
    assert result.stderr == (f"hyperion-jobs: Slurm knows no job 99999999, which {record} submitted; "
                             "the 2 task(s) with no recorded end are not known (UNKNOWN)\n"), result
    lines = result.stdout.splitlines()
    assert any(line.endswith(f"{job}_3 COMPLETED exit 0") for line in lines), lines   # seen to end, then the end
    assert "8 tasks: COMPLETED 5, OUT_OF_MEMORY 1, UNKNOWN 2" in lines, result.stdout
    assert all(any(line.startswith(f"  99999999_{task} UNKNOWN exit - log ") for line in lines) for task in (1, 2))
    assert time.monotonic() - started < 90
    recorded = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert sorted(e["value"] for e in recorded if e["type"] == "final" and e["job_id"] == job) == [3, 5]
    assert not any(e["type"] == "final" and e["value"] in (1, 2) for e in recorded)   # nothing made up
    status = run_cli("hyperion-jobs", "status", str(record), cwd=tmp_path, env=cli_env, timeout=60)
    assert "8 tasks: COMPLETED 5, OUT_OF_MEMORY 1, UNKNOWN 2" in status.stdout.splitlines(), status


def test_watch_of_a_record_slurm_does_not_know_waits_while_slurm_does_not_answer(slurm_cluster, tmp_path, cli_env):
    """While squeue and sacct fail, a job Slurm did not answer about is not a job it does not know:
    the watch goes on and says Slurm is not answering, as before; once both answer, naming none of
    the record's jobs, it says Slurm knows no such job (exit 2)."""
    from test_console_fixtures import build_history

    conf = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
    record = build_history(tmp_path, conf, n=2, job="99999999", unfinished=(1, 2))
    down, bin_dir = tmp_path / "down", tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("squeue", "sacct"):
        (bin_dir / tool).write_text(
            f"#!/bin/sh\nif [ -e {down} ]; then echo 'Unable to contact slurm controller (connect failure)' >&2; "
            f"exit 1; fi\nexec {shutil.which(tool)} \"$@\"\n")
        (bin_dir / tool).chmod(0o755)
    down.touch()
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    watch = subprocess.Popen(["hyperion-jobs", "watch", str(record)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        first = watch.stdout.readline()
        assert "not answering" in first and "connect failure" in first, first
        time.sleep(6)                                  # three more looks, every 2 s: still waiting
        assert watch.poll() is None, watch.communicate()
        down.unlink()
        out, err = watch.communicate(timeout=30)
    finally:
        watch.kill()
    assert watch.returncode == 2, (out, err)
    assert err == f"hyperion-jobs: error: RECORD: Slurm knows no job 99999999, which {record} submitted\n"


def test_a_job_id_slurm_knows_nothing_of_is_said_so_by_status_of_the_id_and_by_list(slurm_cluster, tmp_path, cli_env):
    """Job ids above MaxJobId, which Slurm cannot hold. `status 99999997` of a record's job (values 3-4
    with no recorded end, 1-2 ended without usage) showed 3-4 UNKNOWN with no word why, where `status
    RECORD` says Slurm knows no such job, and promised the usage of 1-2 on every run; `list` showed
    `UNKNOWN 2` without a word. Both now say `status RECORD`'s line. A job id no record names is one
    line saying neither squeue nor accounting on the cluster asked has it (it named no cluster)."""
    from test_console_fixtures import build_history

    conf = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
    record = build_history(tmp_path / "a", conf, n=4, job="99999997", unfinished=(3, 4))
    said = (f"hyperion-jobs: Slurm knows no job 99999997, which {record} submitted; "
            "the 2 task(s) with no recorded end are not known (UNKNOWN)\n")
    for _ in range(2):
        status = run_cli("hyperion-jobs", "status", "99999997", "--dir", str(tmp_path / "a"),
                         cwd=tmp_path, env=cli_env, timeout=60)
        assert status.returncode == 0, status
        assert status.stdout.splitlines()[-1] == "4 tasks: COMPLETED 2, UNKNOWN 2", status.stdout
        assert status.stderr == said, status.stderr      # no "has not given the usage of 2 ended task(s) yet"
    one = run_cli("hyperion-jobs", "status", "99999997_4", "--dir", str(tmp_path / "a"), cwd=tmp_path, env=cli_env,
                  timeout=60)
    assert one.stderr == said.replace("the 2 task(s)", "the 1 task(s)"), one.stderr
    listed = run_cli("hyperion-jobs", "list", str(tmp_path / "a"), cwd=tmp_path, env=cli_env, timeout=60)
    assert listed.returncode == 0 and listed.stderr == said, listed
    assert "COMPLETED 2, UNKNOWN 2" in listed.stdout, listed.stdout
    unnamed = run_cli("hyperion-jobs", "status", "99999999", cwd=tmp_path, env=cli_env, timeout=60)
    assert (unnamed.returncode, unnamed.stdout) == (2, ""), unnamed
    assert unnamed.stderr == ("hyperion-jobs: error: JOB: Slurm knows no job 99999999: neither squeue nor accounting "
                              "(sacct) on the local cluster has it (another cluster's job: -M NAME)\n"), unnamed.stderr
    name = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True).stdout
    cluster = next(line.split("=", 1)[1].strip() for line in name.splitlines() if line.startswith("ClusterName"))
    there = run_cli("hyperion-jobs", "status", "-M", cluster, "99999999_2", cwd=tmp_path, env=cli_env, timeout=60)
    assert there.stderr == (f"hyperion-jobs: error: JOB: Slurm knows no job 99999999_2: neither squeue nor accounting "
                            f"(sacct) on cluster {cluster} has it\n"), there.stderr


def test_status_of_an_ended_record_accounting_purged_asks_no_sacct_twice(slurm_cluster, tmp_path):
    """`status RECORD` of a record whose every task has its end recorded but whose job accounting no
    longer has (purged; here an id above MaxJobId): sacct for the usage, then, to tell whether Slurm
    knows the job at all, sacct again with squeue: 3 queries a run where the second sacct repeated
    the first. Now the first sacct's answer is taken: sacct, squeue, and no usage promised."""
    from test_console_fixtures import build_history

    from backends.records.history import load_history
    from backends.watch.slurm.accounting import run_command
    from backends.watch.targets import history_status

    conf = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
    record = build_history(tmp_path, conf, n=3, job="99999995")
    asked: list[str] = []

    def counted(argv):
        asked.append(argv[0])
        return run_command(argv)

    knows_none: set[str] = set()
    unknown: list[str] = []
    rows = history_status(load_history(record), counted, problems=[], unknown=unknown, knows_none=knows_none)
    assert asked == ["sacct", "squeue"], asked
    assert knows_none == {"99999995"} and unknown == [], (knows_none, unknown)
    assert [row.state_label for row in rows] == ["COMPLETED", "COMPLETED", "FAILED"]


def test_status_of_a_record_whose_attempt_1_job_slurm_does_not_know_says_why_and_promises_no_usage(
        slurm_cluster, tmp_path, cli_env):
    """`status RECORD` of a record whose attempt 1's job Slurm knows nothing of (purged from accounting,
    another cluster's: values 1-2 with no recorded end, 4 ended tasks without usage), attempt 2's real
    job having ended: it showed values 1-2 UNKNOWN with no word why, where `watch` says Slurm knows no
    such job, and said on every run that accounting 'has not given the usage of 4 ended task(s) yet;
    the next status asks again' of ends accounting will never give. It now says `watch`'s line, exit 0,
    and promises nothing; while Slurm does not answer, the failure line as before, not that line.
    (Attempt 1's job id: above MaxJobId.)"""
    from test_console_fixtures import build_history

    job = subprocess.run(["sbatch", "--parsable", "--array=3,5", "-o", str(tmp_path / "slurm-%A_%a.out"),
                          "--wrap", "sleep 1"], capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    conf = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
    record = build_history(tmp_path, conf, n=8, job="99999999", unfinished=(1, 2), retry_job=job,
                           retried={3: ("COMPLETED", 0), 5: ("COMPLETED", 0)})
    ledger = Path(str(record).replace(".submit.json", ".attempts.jsonl"))
    ledger.write_text("".join(line + "\n" for line in ledger.read_text().splitlines()   # nobody looked since
                              if json.loads(line).get("job_id") != job or json.loads(line)["type"] != "final"))
    deadline = time.monotonic() + 60
    while subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline, f"job {job} still in squeue after 60 s"
        time.sleep(1)
    # and until accounting has its steps' peaks: before, status rightly promises attempt 2's usage
    while len([rss for rss in subprocess.run(["sacct", "-n", "-P", "-j", job, "-o", "JobID,MaxRSS"],
                                             capture_output=True, text=True).stdout.split()
               if rss.partition("|")[0].endswith(".batch") and rss.partition("|")[2]]) < 2:
        assert time.monotonic() < deadline + 60, f"job {job}'s steps have no MaxRSS in accounting after 60 s"
        time.sleep(1)
    said = (f"hyperion-jobs: Slurm knows no job 99999999, which {record} submitted; "
            "the 2 task(s) with no recorded end are not known (UNKNOWN)\n")
    for _ in range(2):      # the first records attempt 2's ends and usage; the second asks again
        status = run_cli("hyperion-jobs", "status", str(record), cwd=tmp_path, env=cli_env, timeout=60)
        assert status.returncode == 0, status
        assert "8 tasks: COMPLETED 5, OUT_OF_MEMORY 1, UNKNOWN 2" in status.stdout.splitlines(), status
        assert status.stderr == said, status.stderr     # no "has not given the usage of 4 ended task(s) yet"
    as_json = run_cli("hyperion-jobs", "status", "--json", str(record), cwd=tmp_path, env=cli_env, timeout=60)
    assert json.loads(as_json.stdout)["error"] == said.removeprefix("hyperion-jobs: ").rstrip("\n"), as_json
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sacct").write_text("#!/bin/sh\necho 'sacct: error: Problem talking to the database: "
                                   "Connection refused' >&2\nexit 1\n")
    (bin_dir / "sacct").chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    down = run_cli("hyperion-jobs", "status", str(record), cwd=tmp_path, env=env, timeout=60)
    assert down.returncode == 1, down
    assert "Slurm knows no job" not in down.stderr and "sacct" in down.stderr, down.stderr
    assert "has not given the usage" not in down.stderr, down.stderr

    ended = build_history(tmp_path / "ended", conf, n=4, job="99999997", unfinished=())   # every end recorded
    for _ in range(2):
        status = run_cli("hyperion-jobs", "status", str(ended), cwd=tmp_path, env=cli_env, timeout=60)
        assert (status.returncode, status.stderr) == (0, ""), status    # no usage promised of job 99999997
        assert status.stdout.splitlines()[-1] == "4 tasks: COMPLETED 3, FAILED 1", status.stdout
