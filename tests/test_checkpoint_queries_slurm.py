"""How often `hyperion-checkpoint retry` asks Slurm, counted on the real cluster through wrappers
that log each sacct/squeue call and then run the real one."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import can_drop_rights, run_cli, submit_real_array, without_rights

# A Curator-style shard of a 3-shard run: shard 2 fails (a failed-task record, exit 1), the others complete.
SHARD_JOB = ("import sys; from sharding.store import Attempt, Checkpoint, RunConfig; "
             "shard = int(sys.argv[1]); run = RunConfig(1, 3); store = Checkpoint('ck'); store.ensure_run(run); "
             "bad = shard == 2; "
             "bad and store.write_failed(shard, Attempt.from_env(), {'task_ids': [f'p{shard}'], 'error': 'boom'}); "
             "bad or store.write_completion(shard, run); sys.exit(1 if bad else 0)")


def counting_path(tmp_path: Path, cli_env: dict[str, str]) -> tuple[dict[str, str], Path]:
    """An environment whose sacct and squeue log their arguments to the returned file first."""
    wrappers, log = tmp_path / "wrappers", tmp_path / "slurm-calls.log"
    wrappers.mkdir()
    for tool in ("sacct", "squeue", "sbatch"):
        real = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        script = wrappers / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\nexec {real} "$@"\n')
        script.chmod(0o755)
    return {**cli_env, "PATH": f"{wrappers}{os.pathsep}{cli_env['PATH']}"}, log


def calls(log: Path) -> list[str]:
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def detached_array(tmp_path: Path, cli_env: dict[str, str], command: list[str], array: str,
                   output: str = "log/s.SHARD.log") -> tuple[Path, str]:
    """Submit an array and kill its submitter once the record is written (a login session lost): nobody
    watches it, so its ledger gets no ends. The record and the job id."""
    submitter = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"),
         "--array", array, "--output-file", output, "--", *command],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    record = (tmp_path / output).parent / "q" / "s.SHARD.submit.json"
    deadline = time.monotonic() + 60
    try:
        while not record.exists():
            assert time.monotonic() < deadline and submitter.poll() is None, "no record written"
            time.sleep(0.2)
        time.sleep(0.5)          # the record is written whole before the watch starts
    finally:
        os.killpg(submitter.pid, signal.SIGKILL)
        submitter.wait()
    return record, json.loads(record.read_text())["jobs"][0]["job_id"]


def wait_ended(job: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline, f"job {job} did not end"
        time.sleep(1)


@pytest.mark.slurm
def test_a_dry_run_retry_of_a_teammates_ended_array_asks_slurm_once(slurm_cluster, tmp_path, cli_env):
    """A ledger that cannot take the ends Slurm tells (a teammate's, read-only) keeps every question
    open: `retry --submit RECORD --dry-run` asked sacct+squeue whether the record's tasks still ran,
    then the same pair again for the same record. Once is enough."""
    if not can_drop_rights():
        pytest.skip("needs root and setpriv to run with file permissions enforced")
    record, job = detached_array(tmp_path, cli_env, [sys.executable, "-c", SHARD_JOB, "SHARD"], "SHARD=1:3")
    wait_ended(job)
    ledger = record.parent / "s.SHARD.attempts.jsonl"
    ledger.chmod(0o444)
    env, log = counting_path(tmp_path, cli_env)
    dry = run_cli(*without_rights("hyperion-checkpoint", "retry", "ck", "--submit", str(record), "--dry-run"),
                  cwd=tmp_path, env=env, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("would resubmit 1 of 3 shard(s) (2)"), dry.stdout
    assert calls(log) == ["sacct", "squeue"]

    log.unlink()           # --submit: the same question once, under the lock; then the ledger refuses it
    refused = run_cli(*without_rights("hyperion-checkpoint", "retry", "ck", "--submit", str(record)),
                      cwd=tmp_path, env=env, timeout=120)
    assert refused.returncode == 2, refused.stderr
    assert f"{ledger} cannot be written by you" in refused.stderr
    assert calls(log) == ["sacct", "squeue", "squeue"]      # the last: jobs of the pattern's batch scripts


@pytest.mark.slurm
def test_a_retry_submit_of_an_ended_array_asks_whether_it_runs_once_before_sbatch(slurm_cluster, tmp_path, cli_env):
    """`retry --submit` asks whether the record's tasks still run, under the pattern's lock: one
    sacct+squeue pair before its sbatch (and the squeue for jobs of the pattern's scripts)."""
    record, job = detached_array(tmp_path, cli_env, [sys.executable, "-c", SHARD_JOB, "SHARD"], "SHARD=1:3")
    wait_ended(job)
    env, log = counting_path(tmp_path, cli_env)
    again = run_cli("hyperion-checkpoint", "retry", "ck", "--submit", str(record), cwd=tmp_path, env=env,
                    timeout=300)
    assert again.returncode == 1, again.stderr      # shard 2 fails again
    assert "resubmitting 1 of 3 shard(s) (2)" in again.stderr
    before_sbatch = calls(log)[:calls(log).index("sbatch")]
    assert before_sbatch.count("sacct") == 1 and before_sbatch.count("squeue") == 2, before_sbatch


# Shard 1 completes at once; shards 2 and 3 run until the file `go` exists, then complete.
GATED_JOB = ("import pathlib, sys, time; from sharding.store import Checkpoint, RunConfig; shard = int(sys.argv[1]); "
             "store = Checkpoint('ck'); store.ensure_run(RunConfig(1, 3)); "
             "shard == 1 or [time.sleep(0.5) for _ in iter(lambda: pathlib.Path('go').exists(), True)]; "
             "store.write_completion(shard, RunConfig(1, 3))")


@pytest.mark.slurm
def test_the_retry_preview_says_which_listed_shards_still_run_and_in_which_job(slurm_cluster, tmp_path, cli_env):
    """Plain `retry CKPT` listed shards still running as missing, with nothing to say they only had not
    ended yet: it had no record to ask. It asks the records in ./q/ whose command names CKPT, or the one
    given with --record (checked as --submit checks it), and says which shards run in which job."""
    record, job = detached_array(tmp_path, cli_env, [sys.executable, "-c", GATED_JOB, "SHARD", "--checkpoint", "ck"],
                                 "SHARD=1:3", output="s.SHARD.log")
    (tmp_path / "log").mkdir()          # a folder without q/: waiting asks Slurm nothing
    try:
        deadline = time.monotonic() + 240
        while run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--format", "ranges", cwd=tmp_path / "log",
                      env=cli_env).stdout.strip() != "2-3":
            assert time.monotonic() < deadline, "shard 1 never completed"
            time.sleep(1)
        said = (f"hyperion-checkpoint: warning: shard(s) 2-3 (2 of the 2 listed missing) still running in job(s) "
                f"{job} of {record}: not missing, only unfinished; --submit refuses until they end\n")
        found = run_cli("hyperion-checkpoint", "retry", "ck", cwd=tmp_path, env=cli_env)     # ./q/ holds the record
        assert (found.returncode, found.stdout, found.stderr) == (0, "2-3 0 1 3\n", said)

        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        given = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--record", str(record),
                        "--format", "json", cwd=elsewhere, env=cli_env)
        assert given.returncode == 0 and given.stderr == said, given.stderr
        assert json.loads(given.stdout)["still_running"] == [
            {"record": str(record), "shards": "2-3", "jobs": [job], "tasks": 2, "problem": None}]
        assert run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), cwd=elsewhere,
                       env=cli_env).stderr == ""      # no record there, none given: nothing to ask

        down = tmp_path / "down"                      # Slurm not answering: said, and the plan printed all the same
        down.mkdir()
        for tool in ("sacct", "squeue"):
            (down / tool).write_text(f"#!/bin/sh\necho '{tool}: error: Unable to contact slurm controller' >&2\nexit 1\n")
            (down / tool).chmod(0o755)
        unknown = run_cli("hyperion-checkpoint", "retry", "ck", cwd=tmp_path,
                          env={**cli_env, "PATH": f"{down}{os.pathsep}{cli_env['PATH']}"})
        assert (unknown.returncode, unknown.stdout) == (0, "2-3 0 1 3\n"), unknown.stderr
        assert unknown.stderr.startswith(f"hyperion-checkpoint: warning: cannot tell whether job(s) {job} of {record} "
                                         "still run (squeue failed"), unknown.stderr
        assert unknown.stderr.endswith("; shards it still runs may be listed as missing\n")

        other = tmp_path / "other.submit.json"        # another run's record: 4 shards, not 3
        data = json.loads(record.read_text())
        data["options"]["command"] = [*data["options"]["command"], "--total-shards", "4"]
        other.write_text(json.dumps(data))
        for bad, problem in ((tmp_path / "nope.submit.json", "cannot read"),
                             (other, "it is another run's record"),
                             (tmp_path / "ck", "cannot read")):
            refused = run_cli("hyperion-checkpoint", "retry", "ck", "--record", str(bad), cwd=tmp_path, env=cli_env)
            assert refused.returncode == 2 and refused.stdout == "", refused.stderr
            assert refused.stderr.startswith("hyperion-checkpoint: error: --record: "), refused.stderr
            assert problem in refused.stderr and len(refused.stderr.splitlines()) == 1, refused.stderr
        both = run_cli("hyperion-checkpoint", "retry", "ck", "--record", str(record), "--submit", str(record),
                       cwd=tmp_path, env=cli_env)
        assert both.returncode == 2 and both.stderr.startswith("hyperion-checkpoint: error: --record: "), both.stderr
    finally:
        (tmp_path / "go").touch()
        wait_ended(job)
        subprocess.run(["scancel", job], check=False)
    ended = run_cli("hyperion-checkpoint", "retry", "ck", "--record", str(record), cwd=tmp_path, env=cli_env)
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, "", "")


def waiting_arrays(tmp_path: Path, outputs: list[str]) -> list:
    """A 3-shard checkpoint `ck` with shard 1 complete, and one real array of shards 2-3 per output
    pattern, whose command names `--checkpoint ck` and waits (pending or running) until cancelled."""
    from sharding.store import Checkpoint, RunConfig

    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    store.write_completion(1, RunConfig(1, 3))
    records = []
    try:
        for output in outputs:
            records.append(submit_real_array(tmp_path / output, "SHARD=2:3", "sh", "-c", "sleep 100", "SHARD",
                                             "--checkpoint", "ck", cwd=tmp_path))
    except BaseException:
        cancel(records)
        raise
    return records


def cancel(records: list) -> None:
    for record in records:
        subprocess.run(["scancel", record.jobs[0].job_id], check=False)


def still_running_line(record) -> str:
    return (f"hyperion-checkpoint: warning: shard(s) 2-3 (2 of the 2 listed missing) still running in job(s) "
            f"{record.jobs[0].job_id} of {record.path}: not missing, only unfinished; --submit refuses until they end")


@pytest.mark.slurm
def test_the_retry_preview_finds_the_record_in_the_q_folder_beside_log_files(slurm_cluster, tmp_path, cli_env):
    """`--output-file log/x.SHARD.log` keeps its record in log/q/: the preview looked only in ./q/, so
    those users were never told the shards it lists still run. It looks where `hyperion-jobs` looks."""
    records = waiting_arrays(tmp_path, ["log/x.SHARD.log", "deep/er/log/y.SHARD.log"])
    try:
        assert all(Path(r.path).parent.parent.name == "log" for r in records)
        found = run_cli("hyperion-checkpoint", "retry", "ck", cwd=tmp_path, env=cli_env)
        assert (found.returncode, found.stdout) == (0, "2-3 0 1 3\n"), found.stderr
        assert sorted(found.stderr.splitlines()) == sorted(still_running_line(r) for r in records)
        as_json = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--format", "json",
                          cwd=tmp_path / "deep", env=cli_env)         # from a folder above only one of them
        assert as_json.returncode == 0 and as_json.stderr == still_running_line(records[1]) + "\n"
        assert [note["record"] for note in json.loads(as_json.stdout)["still_running"]] == [records[1].path]
    finally:
        cancel(records)


@pytest.mark.slurm
def test_the_retry_preview_asks_slurm_once_for_every_record_of_the_checkpoint(slurm_cluster, tmp_path, cli_env):
    """Three runs of one checkpoint: the preview asked sacct+squeue once per record (up to 20 pairs);
    one sacct and one squeue naming every job answer for all of them."""
    records = waiting_arrays(tmp_path, ["a.SHARD.log", "b.SHARD.log", "c.SHARD.log"])
    try:
        env, log = counting_path(tmp_path, cli_env)
        found = run_cli("hyperion-checkpoint", "retry", "ck", cwd=tmp_path, env=env)
        assert (found.returncode, found.stdout) == (0, "2-3 0 1 3\n"), found.stderr
        assert sorted(found.stderr.splitlines()) == sorted(still_running_line(r) for r in records)
        assert calls(log) == ["sacct", "squeue"]
        jobs = {r.jobs[0].job_id for r in records}
        for line in log.read_text().splitlines():          # each call names every job
            assert set(line.split()[2].split(",")) == jobs, line
    finally:
        cancel(records)
