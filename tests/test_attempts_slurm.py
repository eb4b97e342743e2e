"""Attempts on the real cluster: a partial failure retried, a second submission refused, nothing lost."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TEST_SITE, reaped, retry_at_its_prompt, run_cli

from backends.records.history import load_history

pytestmark = pytest.mark.slurm
PY = sys.executable
# Fails (exit 3, after a line naming the value) for the values listed in fail.txt; runs on while hold.txt is there.
FLAKY = ("import pathlib, sys, time; v = sys.argv[1]; print('working on', v); "
         "[time.sleep(0.2) for _ in iter(pathlib.Path('hold.txt').exists, False)]; "
         "bad = pathlib.Path('fail.txt').read_text().split(); "
         "print('ValueError: bad input', v) if v in bad else None; sys.exit(3 if v in bad else 0)")


def sacct_tasks(job_id: str, at_least: int) -> list[str]:
    """The array task ids accounting holds for a job (what Slurm really ran).

    sacct lags: wait for `at_least` ended rows, then read once more a moment
    later so that a task beyond them would show too.
    """
    def rows() -> list[list[str]]:
        done = subprocess.run(["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "JobID,State"],
                              capture_output=True, text=True)
        return [line.split("|") for line in done.stdout.splitlines() if line]

    for _ in range(60):
        ended = [job for job, state in rows() if "[" not in job and state not in ("PENDING", "RUNNING")]
        if len(ended) >= at_least:
            time.sleep(2)
            return sorted(job.partition("_")[2] for job, _ in rows())
        time.sleep(1)
    raise AssertionError(f"sacct never listed the tasks of {job_id}")


def test_partial_failure_is_retried_as_a_new_attempt_and_nothing_of_the_first_is_lost(
        slurm_cluster, tmp_path, cli_env):
    (tmp_path / "fail.txt").write_text("2\n5\n")
    first = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:6",
                    "--output-file", "log/x.JOB.log", "--", PY, "-c", FLAKY, "JOB", cwd=tmp_path, env=cli_env)
    assert first.returncode == 1, first.stderr
    record = tmp_path / "log" / "q" / "x.JOB.submit.json"
    first_job = load_history(record).current.jobs[0].job_id

    triage = json.loads(run_cli("hyperion-jobs", "status", str(record), "--failures", "--json",
                                env=cli_env).stdout)
    assert [(g["state"], g["exit_code"], g["values"], g["last_line"]) for g in triage["groups"]] == [
        ("FAILED", 3, "2,5", "ValueError: bad input 2")]           # one cause: only the number differs

    (tmp_path / "fail.txt").write_text("")
    (tmp_path / "hold.txt").touch()
    retrying = subprocess.Popen(["hyperion-jobs", "retry", str(record), "--yes", "--mem", "200M"], cwd=tmp_path,
                                env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with reaped(retrying):
        for _ in range(60):
            history = load_history(record)
            if history.numbers == (1, 2) and history.current.jobs:
                break
            time.sleep(0.5)
        # the first job's status while the retry runs: it said `(now not ended 2)`, neither which attempt
        # nor which values, and read as if "not ended" were a state
        running = run_cli("hyperion-jobs", "status", first_job, "--dir", str(tmp_path), env=cli_env)
        # (accounting may not have given the first attempt's usage yet: a line of its own, said too)
        assert running.stderr.splitlines()[0] == (
            "hyperion-jobs: 2 of these tasks were submitted again: attempt 2 reruns values 2,5 (no end "
            f"recorded yet); hyperion-jobs status {record} shows every value's newest run"), running.stderr
        (tmp_path / "hold.txt").unlink()
        _, err = retrying.communicate(timeout=300)
    assert retrying.returncode == 0, err
    history = load_history(record)
    assert history.numbers == (1, 2)
    second_job = history.current.jobs[0].job_id
    assert second_job != first_job
    assert sacct_tasks(second_job, 2) == ["2", "5"]               # the retry held exactly the failed values

    shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    assert [(t["value"], t["state"], t["attempt"], t["job_id"]) for t in shown["tasks"]] == [
        (1, "COMPLETED", 1, first_job), (2, "COMPLETED", 2, second_job), (3, "COMPLETED", 1, first_job),
        (4, "COMPLETED", 1, first_job), (5, "COMPLETED", 2, second_job), (6, "COMPLETED", 1, first_job)]
    assert shown["exit_status"] == 0

    old = run_cli("hyperion-jobs", "logs", f"{record}:2", "--attempt", "1", env=cli_env)
    assert old.returncode == 0 and "ValueError: bad input 2" in old.stdout
    new = run_cli("hyperion-jobs", "logs", f"{record}:2", env=cli_env)
    assert "working on 2" in new.stdout and "ValueError: bad input 2" not in new.stdout
    by_job = run_cli("hyperion-jobs", "logs", f"{first_job}_5", "--dir", str(tmp_path), env=cli_env)
    assert "ValueError: bad input 5" in by_job.stdout        # the first job's task, moved aside
    by_id = json.loads(run_cli("hyperion-jobs", "status", f"{first_job}_5", "--dir", str(tmp_path), "--json",
                               env=cli_env).stdout)
    (row,) = by_id["tasks"]                                  # its log where it was moved, not the rerun's file
    assert row["state"] == "FAILED" and "/q/attempts/1/" in row["log"]
    assert "ValueError: bad input 5" in Path(row["log"]).read_text()
    # the first job's failures, as a job id from a notification shows them: true of that job, and
    # said to be rerun since (it read `2 of 6 task(s) did not succeed` and nothing more)
    failures = run_cli("hyperion-jobs", "status", first_job, "--dir", str(tmp_path), "--failures", env=cli_env)
    assert failures.stdout.startswith("2 of 6 task(s) did not succeed (failed 2)"), failures.stdout
    assert failures.stderr == (f"hyperion-jobs: 2 of these tasks were submitted again: attempt 2 reran values 2,5 (COMPLETED 2); "
                               f"hyperion-jobs status {record} shows every value's newest run\n"), failures.stderr
    watched = run_cli("hyperion-jobs", "watch", first_job, "--dir", str(tmp_path), env=cli_env)
    assert watched.returncode == 1 and watched.stderr.endswith(failures.stderr), watched.stderr
    assert "rerun" not in watched.stdout, watched.stdout     # both failures ran again, and completed
    # the job id task 5 printed as its SLURM_JOB_ID: `watch` of it said nothing of the rerun
    own = subprocess.run(["sacct", "-j", f"{first_job}_5", "-X", "-n", "-P", "-o", "JobIDRaw"],
                         capture_output=True, text=True).stdout.split()[0]
    rerun_note = (f"hyperion-jobs: 1 of these tasks was submitted again: attempt 2 reran value 5 (COMPLETED 1); "
                  f"hyperion-jobs status {record} shows every value's newest run\n")
    for command, status in (("status", 0), ("watch", 1)):
        of_own = run_cli("hyperion-jobs", command, own, "--dir", str(tmp_path), env=cli_env)
        assert of_own.returncode == status and of_own.stderr.endswith(rerun_note), (command, of_own.stderr)
        assert "FAILED" in of_own.stdout, of_own.stdout
    newest = run_cli("hyperion-jobs", "status", str(record), "--failures", env=cli_env)
    assert "ran again" not in newest.stderr, newest.stderr
    with open(tmp_path / "log" / "q" / "x.JOB.attempts.jsonl", "ab") as ledger:
        ledger.write(b'{"type": "fin\xffal"}\n')          # damaged on disk: said by a job id's status too
    damaged = run_cli("hyperion-jobs", "status", first_job, "--dir", str(tmp_path), env=cli_env)
    assert "hyperion-jobs: warning: 1 line(s) of its ledger " in damaged.stderr, damaged.stderr

    listing = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
    assert [(a["kind"], a["job_ids"], a["values"], a["overrides"]) for a in listing["attempts"]] == [
        ("submit", [first_job], "1-6", {}), ("retry", [second_job], "2,5", {"mem": "200M"})]
    assert listing["attempts"][0]["counts"] == {"COMPLETED": 4, "FAILED": 2}
    # list named attempt 2's job alone: job 1 of a notification was on no line
    (line,) = [row for row in run_cli("hyperion-jobs", "list", str(tmp_path), env=cli_env).stdout.splitlines()
               if row.startswith(str(record))]
    assert line.split()[1:4] == ["slurm", f"{first_job},{second_job}", "6"], line


def test_after_a_retry_of_some_values_the_rerun_line_names_those_values(slurm_cluster, tmp_path, cli_env):
    """A user retried 2 of 5 failed values; one failed again. The line said `rerun only those with:
    hyperion-jobs retry RECORD`, which reruns every value still failing: 4 tasks, where 1 was meant."""
    (tmp_path / "fail.txt").write_text("1\n2\n3\n4\n5\n")
    first = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:5",
                    "--output-file", "log/v.JOB.log", "--", PY, "-c", FLAKY, "JOB", cwd=tmp_path, env=cli_env)
    assert first.returncode == 1, first.stderr
    record = tmp_path / "log" / "q" / "v.JOB.submit.json"
    (tmp_path / "fail.txt").write_text("3\n")
    retried = run_cli("hyperion-jobs", "retry", str(record), "--values", "2,3", "--yes", cwd=tmp_path, env=cli_env)
    assert retried.returncode == 1, retried.stderr
    last = retried.stderr.splitlines()[-1]
    assert last == ("hyperion-submit: 1 of 2 task(s) did not succeed (failed 1); rerun only those with: "
                    f"hyperion-jobs retry {record} --values 3"), retried.stderr
    pasted = run_cli(*last.split("with: ", 1)[1].split(), "--dry-run", cwd=tmp_path, env=cli_env)
    assert "  values: 3\n" in pasted.stdout and "1 task(s) (FAILED 1)" in pasted.stdout, pasted.stdout
    # a watch of either job id, as from a notification, ends as `watch RECORD` does: with the retry of
    # what that job failed and no later attempt ran again (it ended with no rerun line at all)
    history = load_history(record)
    first_job, retry_job = history.records[1].jobs[0].job_id, history.current.jobs[0].job_id
    for job, values in ((retry_job, "3"), (first_job, "1,4-5")):
        watched = run_cli("hyperion-jobs", "watch", job, "--dir", str(tmp_path), env=cli_env)
        assert watched.returncode == 1, watched.stderr
        assert watched.stdout.rstrip().endswith(f"rerun only those with: hyperion-jobs retry {record} --values "
                                                f"{values}"), watched.stdout


def test_a_second_submission_while_the_first_runs_is_refused_and_names_the_job(slurm_cluster, tmp_path, cli_env):
    argv = ["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
            "--output-file", "log/s.JOB.log", "--", "sleep", "20"]
    first = subprocess.Popen(argv, cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    record = tmp_path / "log" / "q" / "s.JOB.submit.json"
    try:
        deadline = time.monotonic() + 60
        while not record.exists():
            assert time.monotonic() < deadline and first.poll() is None, "the first submission never got queued"
            time.sleep(0.2)
        job = load_history(record).current.jobs[0].job_id
        second = run_cli(*argv, cwd=tmp_path, env=cli_env)
        assert second.returncode == 2
        assert second.stderr.count("\n") == 1 and f"of job(s) {job}" in second.stderr
        assert f"or cancel them (hyperion-jobs cancel {job}) before submitting" in second.stderr  # a command to run
        retry = run_cli("hyperion-jobs", "retry", str(record), "--yes", "--values", "1", env=cli_env)
        assert retry.returncode == 2 and "live task" in retry.stderr
        assert retry.stderr.rstrip().endswith(f"wait for them to end (hyperion-jobs watch {record}) or cancel them "
                                              f"(hyperion-jobs cancel {job}) first"), retry.stderr
        assert load_history(record).numbers == (1,)
        q = tmp_path / "log" / "q"
        kept = sorted(str(p.relative_to(q)) for p in (q / "attempts").rglob("*"))
        assert kept == ["attempts/1", "attempts/1/s.JOB.submit.json"]   # nothing else archived or moved aside
    finally:
        run_cli("hyperion-jobs", "cancel", str(record), "--yes", env=cli_env)
        first.wait(timeout=120)


def test_another_pattern_naming_a_running_tasks_log_is_refused_and_runs_once_that_task_ended(
        slurm_cluster, tmp_path, cli_env):
    """`--output-file log/c.1.log` while task 1 of `log/c.JOB.log` runs would truncate the log it writes."""
    array = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                              "--output-file", "log/c.JOB.log", "--", "bash", "-c", "echo started; sleep 8"],
                             cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "c.JOB.submit.json"
    log = tmp_path / "log" / "c.1.log"
    single = ["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file", "log/c.1.log", "--",
              "echo", "other"]
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and "started" in log.read_text()):
            assert time.monotonic() < deadline and array.poll() is None, "task 1 never started"
            time.sleep(0.2)
        job = load_history(record).current.jobs[0].job_id
        refused = run_cli(*single, cwd=tmp_path, env=cli_env)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert f"{log} is also a log of {record}, whose task is still live ({job}_1)" in refused.stderr
        assert "started" in log.read_text() and "other" not in log.read_text()
        assert not (tmp_path / "log" / "q" / "c.1.submit.json").exists()
        assert run_cli(*single[:4], "--output-file", "log/c.3.log", "--", "true", cwd=tmp_path,
                       env=cli_env).returncode == 0       # a log no live task writes: runs at once
    finally:
        _, err = array.communicate(timeout=180)
    assert array.returncode == 0, err
    after = run_cli(*single, cwd=tmp_path, env=cli_env)
    assert after.returncode == 0, after.stderr
    assert "other" in log.read_text()
    kept = tmp_path / "log" / "q" / "attempts" / "1" / "c.1.log"   # into the array's attempt that wrote it
    assert "started" in kept.read_text() and "# Ended (code 0)" in kept.read_text()
    shown = run_cli("hyperion-jobs", "logs", f"{record}:1", env=cli_env)
    assert shown.returncode == 0 and "started" in shown.stdout and "other" not in shown.stdout


def test_a_pending_task_cancelled_before_it_started_stays_cancelled_after_the_job_is_gone(
        slurm_cluster, tmp_path, cli_env):
    waiting = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:3", "--max-jobs-run", "1",
         "--output-file", "log/p.JOB.log", "--", "sleep", "4"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "p.JOB.submit.json"
    deadline = time.monotonic() + 60
    while not record.exists():
        assert time.monotonic() < deadline, "never queued"
        time.sleep(0.2)
    job = load_history(record).current.jobs[0].job_id
    cancelled = subprocess.run(["scancel", f"{job}_3"], capture_output=True, text=True)
    assert cancelled.returncode == 0, cancelled.stderr
    _, err = waiting.communicate(timeout=180)
    assert waiting.returncode == 1                     # hyperion-submit saw the cancelled task
    # its closing line names the task's log as status and watch do: never written, not lost (it
    # read `log .../p.3.log (missing); slurm .../slurm-J_3.out (missing) .../slurm-J_3.err (missing)`)
    assert f"JOB=3 (job {job}_3): CANCELLED; no log (never started)\n" in err, err
    assert "log no log" not in err, err
    assert "(missing)" not in err, err
    # long after, Slurm has no row of its own for the task; the ledger still says how it ended
    shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "COMPLETED"), (2, "COMPLETED"),
                                                                   (3, "CANCELLED")]
    retry = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", env=cli_env)
    assert "values: 3" in retry.stdout


def _job_ended(job: str) -> bool:
    """Whether the controller lists no task of `job` that has not ended (it keeps ended ones a while)."""
    listed = subprocess.run(["squeue", "-j", job, "--array-unique", "-h", "-t", "all", "-o", "%T"],
                            capture_output=True, text=True).stdout.split()
    return all(state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY") for state in listed)


def _submitted_then_left(tmp_path: Path, cli_env: dict, stem: str, *args: str) -> tuple[Path, str]:
    """`hyperion-submit slurm --array JOB=1:3 ARGS` killed as soon as its record is written (the login
    session dropped): no watch records how its tasks end. The record and its job id."""
    runner = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:3", "--output-file",
         f"log/{stem}.JOB.log", *args],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    record = tmp_path / "log" / "q" / f"{stem}.JOB.submit.json"
    with reaped(runner):
        deadline = time.monotonic() + 60
        while not record.exists():
            assert time.monotonic() < deadline, "never queued"
            time.sleep(0.05)
        runner.kill()
    return record, load_history(record).current.jobs[0].job_id


def _cancel_the_waiting_third_and_wait(job: str, within: float) -> None:
    """`scancel J_3` of a task waiting behind `--max-jobs-run 1`, then wait (up to `within` s) for the job
    to end: accounting has tasks 1 and 2's rows, none of 3's."""
    cancelled = subprocess.run(["scancel", f"{job}_3"], capture_output=True, text=True)
    assert cancelled.returncode == 0, cancelled.stderr
    deadline = time.monotonic() + within
    while not _job_ended(job):
        assert time.monotonic() < deadline, "the job never ended"
        time.sleep(1)
    assert sacct_tasks(job, 2) == ["1", "2"]          # accounting has the others' rows, none of 3's


def test_a_task_cancelled_while_pending_with_no_watch_running_reads_cancelled_not_unknown(
        slurm_cluster, tmp_path, cli_env):
    """The login session dropped (hyperion-submit killed), then `scancel J_3` of a waiting task: Slurm
    keeps no row of it, and every `status` said UNKNOWN for ever, `list` and `history` too."""
    record, job = _submitted_then_left(tmp_path, cli_env, "k", "--max-jobs-run", "1", "--", "sleep", "3")
    _cancel_the_waiting_third_and_wait(job, 120)
    by_job = json.loads(run_cli("hyperion-jobs", "status", job, "--dir", str(tmp_path), "--json",
                                env=cli_env).stdout)
    assert [(t["value"], t["state"]) for t in by_job["tasks"]] == [(1, "COMPLETED"), (2, "COMPLETED"),
                                                                    (3, "CANCELLED")], by_job["tasks"]
    for _ in range(2):            # the first look records it; the second reads the ledger
        shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
        assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "COMPLETED"), (2, "COMPLETED"),
                                                                       (3, "CANCELLED")], shown["tasks"]
    assert '"state":"CANCELLED"' in (record.parent / "k.JOB.attempts.jsonl").read_text()
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=cli_env).stdout
    assert "CANCELLED 1, COMPLETED 2" in listed, listed
    retry = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", env=cli_env)
    assert "values: 3" in retry.stdout, retry.stdout


def test_a_waiting_task_cancelled_while_its_array_runs_is_neither_pending_nor_left_out_of_status_j(
        slurm_cluster, tmp_path, cli_env):
    """No watch running; `scancel J_3` of a waiting task while task 1 ran. For a second or two accounting
    still filed it in the waiting range (`J_[2-3%1]`, where squeue said `J_[2%1]`): `status J` showed
    `J_3 PENDING (JobArrayTaskLimit)`; then it left J_3 out (`2 tasks`) for as long as the array ran,
    where `status RECORD` showed it UNKNOWN."""
    record, job = _submitted_then_left(tmp_path, cli_env, "w", "--max-jobs-run", "1", "--", "sleep", "30")
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["squeue", "-j", f"{job}_1", "-h", "-t", "R"], capture_output=True,
                             text=True).stdout.strip() == "" or f"{job}_1|RUNNING" not in subprocess.run(
                ["sacct", "-j", job, "-X", "-n", "-P", "-o", "JobID,State"], capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline, "task 1 never started"
            time.sleep(0.5)
        cancelled = subprocess.run(["scancel", f"{job}_3"], capture_output=True, text=True)
        assert cancelled.returncode == 0, cancelled.stderr
        for _ in range(3):     # at once (accounting lagging the controller), then once it caught up
            by_job = json.loads(run_cli("hyperion-jobs", "status", job, "--dir", str(tmp_path), "--json",
                                        env=cli_env).stdout)
            by_record = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
            for shown in (by_job, by_record):
                states = [(t["value"], t["state"]) for t in shown["tasks"]]
                assert [value for value, _ in states] == [1, 2, 3], states
                assert states[2][1] != "PENDING" and states[:2] == [(1, "RUNNING"), (2, "PENDING")], states
            assert by_job["tasks"][2]["state"] == by_record["tasks"][2]["state"], (by_job, by_record)
            time.sleep(1)
    finally:
        subprocess.run(["scancel", job], capture_output=True)


def test_a_task_cancelled_while_pending_before_the_rest_of_its_array_reads_cancelled_not_unknown(
        slurm_cluster, tmp_path, cli_env):
    """No watch running; `scancel J_2` of a waiting task, then `scancel J` of the rest before any
    started: accounting's one row is `J_[1,3]` CANCELLED, none of 2's. `status` said CANCELLED 2,
    UNKNOWN 1 for ever (a watch said CANCELLED 3), `status J` left task 2 out, and retry counted it
    UNKNOWN."""
    record, job = _submitted_then_left(tmp_path, cli_env, "c", "--", "sleep", "1")
    subprocess.run(["scontrol", "hold", job], capture_output=True)   # none of them starts meanwhile
    for name in (f"{job}_2", job):
        cancelled = subprocess.run(["scancel", name], capture_output=True, text=True)
        assert cancelled.returncode == 0, cancelled.stderr
    deadline = time.monotonic() + 60
    while not _job_ended(job) or subprocess.run(      # and accounting has its range row's end (it lags)
            ["sacct", "-j", job, "-X", "-n", "-P", "-o", "JobID,State"], capture_output=True,
            text=True).stdout.partition(" ")[0] != f"{job}_[1,3]|CANCELLED":   # "CANCELLED by 0"
        assert time.monotonic() < deadline, "the job never ended"
        time.sleep(1)
    by_job = run_cli("hyperion-jobs", "status", job, "--dir", str(tmp_path), env=cli_env).stdout
    assert f"{job}_2" in by_job and "3 tasks: CANCELLED 3" in by_job, by_job
    shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "CANCELLED"), (2, "CANCELLED"),
                                                                   (3, "CANCELLED")], shown["tasks"]
    retry = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", env=cli_env)
    assert "3 task(s) (CANCELLED 3)" in retry.stdout, retry.stdout


def _asking_wrappers(bin_dir: Path, env: dict) -> Path:
    """sacct and squeue wrappers on PATH that note each call's argv (one line each) in the file
    returned, then run the cluster's own."""
    import shutil

    asked = bin_dir / "asked"
    bin_dir.mkdir()
    for tool in ("sacct", "squeue"):
        real = shutil.which(tool, path=env["PATH"])
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {asked}\nexec {real} "$@"\n')
        (bin_dir / tool).chmod(0o755)
    return asked


def _jobs_asked(asked: Path) -> set[str]:
    """Every job id a noted sacct or squeue call was asked about (`-j A,B`)."""
    jobs: set[str] = set()
    for line in asked.read_text().splitlines() if asked.exists() else ():
        words = line.split()
        if "-j" in words:
            jobs.update(words[words.index("-j") + 1].split(","))
    return jobs


def test_history_reads_a_superseded_task_cancelled_while_pending_as_cancelled_not_unknown(
        slurm_cluster, tmp_path, cli_env):
    """hyperion-submit killed, `scancel J_3` of a waiting task, then the values submitted again before
    any look recorded how J's tasks ended: `history` counted attempt 1's task 3 UNKNOWN for ever (only
    each value's newest task was looked at), while `status J` said CANCELLED. And every `history`,
    `status RECORD` and retry asked sacct and squeue about J again while a task of it had no end in
    the ledger (one whose rule could no longer tell, its log rewritten by the new attempt, for ever):
    the resubmission's own look (is anything of J still live?) records J_3 CANCELLED, as `status`
    tells it, so no later look asks about J (attempt 2 reran every value: J is none's newest)."""
    record, job = _submitted_then_left(tmp_path, cli_env, "h", "--max-jobs-run", "1", "--", "sleep", "1")
    _cancel_the_waiting_third_and_wait(job, 300)
    assert (1, 3) not in load_history(record).ledger.finals      # nobody looked
    again = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:3", "--output-file",
                    "log/h.JOB.log", "--", "true", cwd=tmp_path, env=cli_env)
    assert again.returncode == 0, again.stderr
    assert load_history(record).ledger.finals[(1, 3)].state == "CANCELLED"   # recorded as it was superseded
    asked = _asking_wrappers(tmp_path / "bin", cli_env)
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    for _ in range(2):
        shown = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=env).stdout)
        assert [a["counts"] for a in shown["attempts"]] == [{"CANCELLED": 1, "COMPLETED": 2},
                                                            {"COMPLETED": 3}], shown["attempts"]
    assert asked.exists() and job not in _jobs_asked(asked), asked.read_text()
    by_job = json.loads(run_cli("hyperion-jobs", "status", job, "--dir", str(tmp_path), "--json",
                                env=cli_env).stdout)
    assert [(t["value"], t["state"]) for t in by_job["tasks"]] == [(1, "COMPLETED"), (2, "COMPLETED"),
                                                                    (3, "CANCELLED")], by_job["tasks"]


def test_history_shows_a_second_submission_that_moved_from_local_to_slurm(slurm_cluster, tmp_path, cli_env):
    """`hyperion-submit local` then `hyperion-submit slurm` to the same log: CHANGED said '-' for attempt 2."""
    for backend in ("local", "slurm"):
        done = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), "--output-file", "log/b.log", "--",
                       "true", cwd=tmp_path, env=cli_env, timeout=180)
        assert done.returncode == 0, done.stderr
    record = str(tmp_path / "log" / "q" / "b.submit.json")
    shown = run_cli("hyperion-jobs", "history", record, env=cli_env).stdout.splitlines()
    assert shown[1].endswith(" -") and shown[2].endswith(" backend=slurm"), shown
    listing = json.loads(run_cli("hyperion-jobs", "history", record, "--json", env=cli_env).stdout)
    assert [a["overrides"] for a in listing["attempts"]] == [{}, {"backend": "slurm"}]
    from hyperion_console.widgets.attempts import attempt_lines   # the console's list says it as well

    assert [line.overrides for line in attempt_lines(load_history(record), [])] == [{}, {"backend": "slurm"}]


def test_a_retry_left_at_its_prompt_while_another_terminal_retried_submits_nothing(
        slurm_cluster, tmp_path, cli_env):
    """A user's two terminals: one `hyperion-jobs retry RECORD` waits at [y/N] while the other's
    `retry --yes` reruns the failed values on Slurm and they complete; the y then queued the same
    values again as a third attempt (sacct held a second job for them)."""
    (tmp_path / "fail.txt").write_text("2\n4\n")
    first = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:4",
                    "--output-file", "log/x.JOB.log", "--", PY, "-c", FLAKY, "JOB", cwd=tmp_path, env=cli_env)
    assert first.returncode == 1, first.stderr
    record = tmp_path / "log" / "q" / "x.JOB.submit.json"
    (tmp_path / "fail.txt").write_text("")
    waiting, prompt = retry_at_its_prompt(record, tmp_path, cli_env)
    with reaped(waiting):
        assert "as attempt 2: 2 task(s) (FAILED 2)" in prompt and "values: 2,4" in prompt, prompt
        other = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
        assert other.returncode == 0, other.stderr
        out, err = waiting.communicate("y\n", timeout=120)
    assert waiting.returncode == 2 and "submitted job(s)" not in err, err
    assert f"attempt 2 of {record} began after this rerun was planned" in err
    history = load_history(record)
    assert history.numbers == (1, 2)
    assert history.current.attempt == 2 and history.ledger.last_number == 2
    shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    assert [(t["value"], t["state"], t["attempt"]) for t in shown["tasks"]] == [
        (1, "COMPLETED", 1), (2, "COMPLETED", 2), (3, "COMPLETED", 1), (4, "COMPLETED", 2)]
