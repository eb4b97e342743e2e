"""The retry bridge: restrict a recorded submission to the missing shards and run it (local backend)."""
import json
from pathlib import Path

import pytest
from conftest import run_cli

from backends.errors import InputError
from backends.records.record import load_record
from sharding.example import make_input
from sharding.resubmit import prepare_resubmit, retry_options
from sharding.retry import build_retry, plan_retry
from sharding.store import Checkpoint, RunConfig


def _submit_local(tmp_path, cli_env, fail_args=("--fail-record", "doc-0003-0000", "--fail-once")):
    make_input(tmp_path / "in", files=8, records=2)
    result = run_cli(
        "hyperion-submit", "local", "--cfg", str(Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"),
        "--array", "SHARD=1:6", "--output-file", str(tmp_path / "log" / "shard.SHARD.log"), "--",
        "hyperion-shard-example", "--input", "in", "--output", "out", "--checkpoint", "ck",
        "--shard-index", "SHARD", "--total-shards", "6", "--minimum-shard-index", "1", *fail_args,
        cwd=tmp_path, env=cli_env)
    return result, tmp_path / "log" / "q" / "shard.SHARD.submit.json"


def test_retry_options_keep_the_command_and_restrict_the_array(tmp_path, cli_env):
    _, record_path = _submit_local(tmp_path, cli_env, fail_args=())
    record = load_record(record_path)
    plan = build_retry(str(tmp_path / "ck"), RunConfig(1, 6), completed={1, 2, 4, 6})
    options = retry_options(plan, record)
    assert options.array.name == "SHARD" and options.array.values == (3, 5)
    assert options.command == tuple(record.options["command"])
    assert options.output_file == record.options["output_file"] and options.backend == "local"
    assert ("HYPERION_ARRAY_TOTAL_SHARDS", "6") in options.env
    assert ("HYPERION_ARRAY_MINIMUM_SHARD_INDEX", "1") in options.env
    with pytest.raises(InputError):
        retry_options(build_retry("ck", RunConfig(0, 3), completed={1, 2}), record)  # shard 0 cannot be an array value


def test_local_run_fails_once_then_submit_reruns_only_the_missing_shards(tmp_path, cli_env):
    # Local arrays stop at the first failure, so the failed shard and every later one are missing.
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    missing = plan_retry(tmp_path / "ck").missing
    assert missing and missing[-1] == 6
    prepared = prepare_resubmit(str(tmp_path / "ck"), str(record_path))
    assert [t.value for t in prepared.plan.tasks] == list(missing)
    again = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record_path), env=cli_env)
    assert again.returncode == 0, again.stderr
    assert f"resubmitting {len(missing)} of 6 shard(s)" in again.stderr
    ran = [line.split(":")[0] for line in again.stdout.splitlines() if line.startswith("SHARD=")]
    assert ran == [f"SHARD={s}" for s in missing]
    assert run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), env=cli_env).stdout == ""
    assert len(list((tmp_path / "out").glob("*.jsonl"))) == 8
    nothing = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record_path), env=cli_env)
    assert nothing.returncode == 0 and "nothing resubmitted" in nothing.stderr


def test_submit_with_a_bad_record_is_one_line_exit_2(tmp_path, cli_env):
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 2))
    (tmp_path / "bad.submit.json").write_text(json.dumps({"hello": 1}))
    result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(tmp_path / "bad.submit.json"),
                     env=cli_env)
    assert result.returncode == 2
    assert result.stderr.startswith("hyperion-checkpoint: error: record: ") and len(result.stderr.splitlines()) == 1
