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
from conftest import can_drop_rights, run_cli, without_rights

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


def detached_array(tmp_path: Path, cli_env: dict[str, str], command: list[str], array: str) -> tuple[Path, str]:
    """Submit an array and kill its submitter once the record is written (a login session lost): nobody
    watches it, so its ledger gets no ends. The record and the job id."""
    submitter = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"),
         "--array", array, "--output-file", "log/s.SHARD.log", "--", *command],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    record = tmp_path / "log" / "q" / "s.SHARD.submit.json"
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
