"""hyperion-checkpoint as a user runs it."""
import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from sharding.store import Checkpoint, RunConfig

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints"


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """The design example: 3000 shards from 0, all complete except 1, 2, 1005, 1006 and 2999."""
    root = tmp_path_factory.mktemp("big") / "ck"
    store = Checkpoint(root)
    store.ensure_run(RunConfig(0, 3000))
    for shard in set(range(3000)) - {1, 2, 1005, 1006, 2999}:
        store.write_completion(shard)
    return root


def test_retry_fields_line_for_line(big, cli_env):
    result = run_cli("hyperion-checkpoint", "retry", str(big), "--format", "fields", "--max-array-size", "1000", env=cli_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["1-2 0 0 3000", "5-6 1000 0 3000", "999 2000 0 3000"]
    assert result.stderr == ""


def test_retry_ranges_and_curator_array_alias(big, cli_env):
    for fmt in ("ranges", "array"):
        result = run_cli("hyperion-checkpoint", "retry", "--checkpoint-path", str(big), "--format", fmt, env=cli_env)
        assert result.stdout == "1-2,1005-1006,2999\n"


def test_retry_json_carries_windows(big, cli_env):
    result = run_cli("hyperion-checkpoint", "retry", str(big), "--format", "json", "--max-array-size", "1000", env=cli_env)
    data = json.loads(result.stdout)
    assert [(w["array_expression"], w["shard_index_offset"], w["shards"]) for w in data["windows"]] == [
        ("1-2", 0, "1-2"), ("5-6", 1000, "1005-1006"), ("999", 2000, "2999")]


def test_retry_prints_nothing_when_complete(tmp_path, cli_env):
    store = Checkpoint(tmp_path)
    store.ensure_run(RunConfig(1, 3))
    for s in (1, 2, 3):
        store.write_completion(s)
    for extra in ((), ("--format", "fields", "--max-array-size", "2")):
        result = run_cli("hyperion-checkpoint", "retry", str(tmp_path), *extra, env=cli_env)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize("argv,field", [
    (["retry", "MISSING_RUN"], "run.json"),
    (["retry", "BIG", "--format", "ranges", "--max-array-size", "10"], "--max-array-size"),
    (["retry", "BIG", "--max-array-size", "0"], "--max-array-size"),
    (["retry", "BIG", "--format", "yaml"], "--format"),
    (["show"], "PATH"),
    ([], "command"),
    (["retry", "BIG", "--bogus"], "--bogus"),
    (["frobnicate", "BIG"], "command"),
    (["shards", "CORRUPT_RUN"], "run.json"),
    (["show", "NOWHERE"], "PATH"),
    (["retry", "NOWHERE"], "PATH"),
    (["failed", "NOWHERE"], "PATH"),
    (["shards", "A_FILE"], "PATH"),
    (["retry", "--checkpoint-path", "A_FILE"], "--checkpoint-path"),
    (["failed", "CORRUPT_RUN"], "run.json"),
    (["failed", "LIST_RUN"], "run.json"),
    (["retry", "LIST_RUN"], "run.json"),
    (["retry", "BIG", "--max-array-size", "-5"], "--max-array-size"),
    (["retry", "BIG", "--max-array-size", "abc"], "--max-array-size"),
    (["retry", "BIG", "--format", "xml"], "--format"),
    (["retry", "BIG", "--submit", "NOWHERE"], "record"),
    (["retry", "BIG", "--submit", "CORRUPT_RUN"], "record"),
    (["retry", "COMPLETE", "--submit", "NOWHERE"], "record"),   # nothing to do is no excuse
])
def test_bad_input_is_one_line_and_exit_2(argv, field, big, tmp_path, cli_env):
    corrupt = tmp_path / "bad"
    (corrupt / ".nemo_curator_metadata/.slurm_array_completion").mkdir(parents=True)
    (corrupt / ".nemo_curator_metadata/.slurm_array_completion/run.json").write_text("{")
    as_list = tmp_path / "list"
    (as_list / ".nemo_curator_metadata/.slurm_array_completion").mkdir(parents=True)
    (as_list / ".nemo_curator_metadata/.slurm_array_completion/run.json").write_text("[1, 20]")
    complete = Checkpoint(tmp_path / "complete")
    complete.ensure_run(RunConfig(1, 1))
    complete.write_completion(1)
    (tmp_path / "a_file").write_text("")
    subst = {"BIG": str(big), "MISSING_RUN": str(FIXTURES / "missing_run"), "CORRUPT_RUN": str(corrupt),
             "LIST_RUN": str(as_list), "COMPLETE": str(complete.path), "NOWHERE": str(tmp_path / "nowhere"),
             "A_FILE": str(tmp_path / "a_file")}
    before = sorted(p for p in tmp_path.rglob("*"))
    result = run_cli("hyperion-checkpoint", *[subst.get(a, a) for a in argv], env=cli_env)
    assert sorted(p for p in tmp_path.rglob("*")) == before     # nothing written
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hyperion-checkpoint: error: {field}: "), result.stderr


def test_shards_and_show_on_the_curator_fixture(cli_env):
    path = str(FIXTURES / "curator_partial")
    shards = run_cli("hyperion-checkpoint", "shards", path, env=cli_env)
    assert shards.stdout.split("\n")[:3] == ["complete          6  0-2,4-5,7", "incomplete        1  6",
                                             "failed            1  3"]
    data = json.loads(run_cli("hyperion-checkpoint", "shards", path, "--json", env=cli_env).stdout)
    assert data["counts"] == {"complete": 6, "incomplete": 1, "failed": 1}
    assert data["shards"][3] == {"shard": 3, "status": "failed", "failures": 2}
    show = json.loads(run_cli("hyperion-checkpoint", "show", path, "--json", env=cli_env).stdout)
    assert (show["minimum_shard_index"], show["total_shards"], show["failed_records"], show["failed_attempts"]) == (0, 8, 3, 3)
    text = run_cli("hyperion-checkpoint", "show", path, env=cli_env).stdout
    assert "minimum_shard_index=0 total_shards=8 (shards 0-7)" in text


def test_corrupt_files_are_warnings_and_the_command_goes_on(tmp_path, cli_env):
    root = tmp_path / "ck"
    shutil.copytree(FIXTURES / "corrupt", root)
    result = run_cli("hyperion-checkpoint", "retry", str(root), env=cli_env)
    assert result.returncode == 0
    assert result.stdout == "7-10 0 1 10\n"
    warnings = result.stderr.splitlines()
    assert len(warnings) == 6 and all(w.startswith("hyperion-checkpoint: warning: ") for w in warnings)


def test_failed_lists_records_by_attempt(cli_env):
    result = run_cli("hyperion-checkpoint", "failed", str(FIXTURES / "corrupt"), "--json", env=cli_env)
    records = {r["shard"]: r for r in json.loads(result.stdout)}
    assert records[9]["slurm_job"] == "2001" and records[9]["details"]["task_ids"] == ["p000004"]
    text = run_cli("hyperion-checkpoint", "failed", str(FIXTURES / "corrupt"), env=cli_env)
    assert "shard 9  job 2001  array_task 9  restart 0  tasks p000004  ValueError: bad record" in text.stdout
