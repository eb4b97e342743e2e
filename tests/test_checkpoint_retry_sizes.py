"""`hyperion-checkpoint retry CKPT --submit RECORD` and the sizes a shard ran out of: `--mem` / `--time`
(SIZE or auto, by `hyperion-jobs retry`'s rule), the plan's advice, and the rerun line's `--mem auto`.

A user's sharded run had one shard end OUT_OF_MEMORY: the bridge had no --mem, reran it with the
record's 100M, and its rerun line named the same command again."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from conftest import run_cli
from test_console_fixtures import build_history

from backends.records.attempts import TaskUsage, append_entries
from backends.records.record import load_record
from sharding.store import Checkpoint, RunConfig

CONF = Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml"
M = 1024 ** 2


def oom_run(tmp_path: Path, states: dict | None = None) -> tuple[Path, Path]:
    """A Slurm record of JOB=1..3 (--mem 100M --time 00:06:00) whose shard 2 ended OUT_OF_MEMORY
    (`states` instead, if given), every task's usage in the ledger (no Slurm is asked), and its
    checkpoint: shards 1 and 3 complete."""
    states = {2: ("OUT_OF_MEMORY", None, None)} if states is None else states
    record = build_history(tmp_path, CONF, n=3, failures=states)
    append_entries(str(record), [TaskUsage(1, value, {"max_rss_bytes": (90 if value in states else 40) * M,
                                                      "req_mem_bytes": 100 * M, "time_limit_seconds": 360,
                                                      "elapsed_seconds": 30.0})
                                 for value in (1, 2, 3)])
    store = Checkpoint(tmp_path / "ck")
    run = RunConfig(minimum_shard_index=1, total_shards=3)
    store.ensure_run(run)
    for shard in (1, 2, 3):
        if shard not in states:
            store.write_completion(shard, run)
    return tmp_path / "ck", record


def _retry(ck: Path, record: Path, *more: str, env: dict):
    return run_cli("hyperion-checkpoint", "retry", str(ck), "--submit", str(record), *more, env=env)


def test_the_dry_run_says_the_shard_ran_out_of_memory_and_what_auto_would_ask(tmp_path: Path, cli_env) -> None:
    ck, record = oom_run(tmp_path)
    result = _retry(ck, record, "--dry-run", env=cli_env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("would resubmit 1 of 3 shard(s) (2) in ") and " --mem 100M " in lines[0], lines[0]
    assert lines[1] == ("  sizes: as before; --mem auto would ask for --mem 200M: 1 task(s) OUT_OF_MEMORY; "
                        "2x the request 100M (1.5x the largest MaxRSS 90M is less)"), result.stdout


@pytest.mark.parametrize("state,asked", [("OUT_OF_MEMORY", ("auto", None)), ("TIMEOUT", (None, "auto"))])
def test_resubmit_with_proposed_sizes_asks_auto_for_the_sizes_the_advice_names(tmp_path: Path, state, asked) -> None:
    """The console's Resubmit with proposed sizes asks ``auto`` for what the dry run's advice names alone."""
    from sharding.resubmit import shard_sizes
    from sharding.retry import plan_retry

    ck, record = oom_run(tmp_path, {2: (state, None, None)})
    sizes = shard_sizes(plan_retry(ck), str(record))
    flag = "--mem" if state == "OUT_OF_MEMORY" else "--time"
    assert [line.split(" auto would ask for ")[0] for line in sizes.lines()] == [f"sizes: as before; {flag}"]
    assert sizes.proposed() == asked
    assert shard_sizes(plan_retry(ck), str(record), mem="400M", time="00:30:00").proposed() == (None, None)


def test_mem_auto_resubmits_with_hyperion_jobs_retrys_size_and_says_why(tmp_path: Path, cli_env) -> None:
    ck, record = oom_run(tmp_path)
    result = _retry(ck, record, "--mem", "auto", "--dry-run", env=cli_env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert " --mem 200M " in lines[0] and "100M" not in lines[0], lines[0]
    assert lines[1] == ("  sizes: --mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request 100M "
                        "(1.5x the largest MaxRSS 90M is less)"), result.stdout
    assert "--mem=200M" in result.stdout          # the sbatch line of the plan
    jobs = run_cli("hyperion-jobs", "retry", str(record), "--mem", "auto", "--dry-run", env=cli_env)
    assert "  sizes: --mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request 100M" in jobs.stdout  # the one rule


def test_sizes_given_replace_the_records(tmp_path: Path, cli_env) -> None:
    ck, record = oom_run(tmp_path)
    result = _retry(ck, record, "--mem", "400m", "--time", "12", "--dry-run", env=cli_env)
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert " --mem 400M " in first and " --time 12 " in first, first
    assert "sizes:" not in result.stdout            # no size kept that the shard ran out of


def test_time_auto_of_a_timed_out_shard_doubles_its_limit(tmp_path: Path, cli_env) -> None:
    ck, record = oom_run(tmp_path, {3: ("TIMEOUT", None, None)})
    kept = _retry(ck, record, "--dry-run", env=cli_env)
    assert ("  sizes: as before; --time auto would ask for --time 00:12:00: 1 task(s) TIMEOUT; "
            "2x the limit 00:06:00") in kept.stdout.splitlines(), kept.stdout
    auto = _retry(ck, record, "--time", "auto", "--dry-run", env=cli_env)
    assert " --time 00:12:00 " in auto.stdout.splitlines()[0], auto.stdout
    assert "  sizes: --time 00:12:00: 1 task(s) TIMEOUT; 2x the limit 00:06:00" in auto.stdout.splitlines()


@pytest.mark.parametrize("flag,value,says", [
    ("--mem", "400 MB", "'400 MB' is not a memory size"),
    ("--mem", "0", "'0' is not a memory size"),
    ("--time", "1:99", "minutes and seconds after the first field must be below 60"),
    ("--time", "soon", "'soon' is not a Slurm time"),
])
def test_a_bad_size_is_one_line_naming_the_flag_and_nothing_is_submitted(tmp_path: Path, cli_env, flag, value,
                                                                        says) -> None:
    ck, record = oom_run(tmp_path)
    before = Path(record).read_bytes()
    result = _retry(ck, record, flag, value, env=cli_env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"hyperion-checkpoint: error: {flag}: ") and says in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1
    jobs = run_cli("hyperion-jobs", "retry", str(record), flag, value, "--dry-run", env=cli_env)
    assert jobs.returncode == 2 and jobs.stderr.split(": error: ")[1] == result.stderr.split(": error: ")[1]
    assert Path(record).read_bytes() == before


@pytest.mark.parametrize("flag", ["--mem", "--time"])
def test_a_size_without_submit_is_refused_in_one_line(tmp_path: Path, cli_env, flag) -> None:
    ck, _ = oom_run(tmp_path)
    result = run_cli("hyperion-checkpoint", "retry", str(ck), flag, "auto", env=cli_env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"hyperion-checkpoint: error: {flag}: only means something with --submit RECORD "
                             "(the sizes of a resubmission; retry alone submits nothing)\n")


def test_the_rerun_line_of_a_bridge_run_asks_for_more_of_what_it_ran_out_of(tmp_path: Path) -> None:
    from backends.retry_hint import record_retry_command, with_auto_sizes

    rerun = ("hyperion-checkpoint", "retry", "/abs/ck", "--submit", "/abs/r.json")
    assert with_auto_sizes(rerun, ["OUT_OF_MEMORY", "FAILED"]) == (*rerun, "--mem", "auto")
    assert with_auto_sizes(rerun, ["FAILED"]) == rerun
    # a size the command gives is replaced, never given twice
    assert with_auto_sizes((*rerun, "--mem", "400M", "--time", "5"), ["OUT_OF_MEMORY"]) == \
        (*rerun, "--time", "5", "--mem", "auto")
    assert with_auto_sizes((*rerun, "--mem=400M", "--mem", "auto"), ["OUT_OF_MEMORY", "TIMEOUT"]) == \
        (*rerun, "--mem", "auto", "--time", "auto")
    ck, record = oom_run(tmp_path)
    import json
    raw = json.loads(Path(record).read_text())
    raw["rerun"] = shlex.join([*rerun, "--mem", "auto"])
    Path(record).write_text(json.dumps(raw))
    said = shlex.split(record_retry_command(load_record(record), ["OUT_OF_MEMORY"]))
    assert said == [*rerun, "--mem", "auto"]


def test_retry_command_of_a_bridge_plan_names_mem_auto_after_out_of_memory(tmp_path: Path) -> None:
    from backends.retry_hint import retry_command
    from sharding.resubmit import prepare_resubmit

    ck, record = oom_run(tmp_path)
    plan = prepare_resubmit(str(ck), str(record)).plan
    assert plan is not None and plan.rerun is not None
    command = shlex.split(retry_command(plan, None, ["OUT_OF_MEMORY"]))
    assert command == ["hyperion-checkpoint", "retry", str(ck), "--submit", str(record), "--mem", "auto"]
    assert shlex.split(retry_command(plan, None, ["FAILED"])) == command[:-2]
