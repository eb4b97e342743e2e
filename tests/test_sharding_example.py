"""The example pipeline, run locally shard by shard as an array would run it."""
import json
from pathlib import Path

import pytest
from conftest import make_fifo, make_sparse, run_cli

from sharding.example import make_input
from sharding.retry import plan_retry
from sharding.store import Checkpoint


def _run(tmp_path, env, *extra):
    return run_cli("hyperion-shard-example", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                   "--checkpoint", str(tmp_path / "ck"), *extra, env=env)


def _outputs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_all_shards_cover_every_record_once_and_complete(tmp_path, cli_env):
    make_input(tmp_path / "in", files=12, records=3)
    for shard in range(1, 6):
        result = _run(tmp_path, cli_env, "--shard-index", str(shard), "--total-shards", "5", "--minimum-shard-index", "1")
        assert result.returncode == 0, result.stderr
    outputs = _outputs(tmp_path / "out")
    assert sorted(outputs) == [f"p{i:06d}.jsonl" for i in range(12)]
    records = [json.loads(line) for data in outputs.values() for line in data.decode().splitlines()]
    assert len(records) == 36 and len({r["id"] for r in records}) == 36
    assert {r["shard"] for r in records} <= set(range(1, 6))
    assert plan_retry(tmp_path / "ck").complete
    first = outputs
    # A rerun is idempotent: same files, same bytes.
    _run(tmp_path, cli_env, "--shard-index", "2", "--total-shards", "5", "--minimum-shard-index", "1")
    assert _outputs(tmp_path / "out") == first


def test_the_shard_comes_from_the_environment(tmp_path, cli_env):
    make_input(tmp_path / "in", files=4, records=1)
    env = {**cli_env, "NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX": "0", "NEMO_CURATOR_SLURM_ARRAY_TOTAL_SHARDS": "2"}
    result = _run(tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert Checkpoint(tmp_path / "ck").read_run().total_shards == 2
    assert Checkpoint(tmp_path / "ck").completed()[0] == {0}


def test_without_configuration_it_processes_everything_and_writes_no_manifest(tmp_path, cli_env):
    make_input(tmp_path / "in", files=3, records=2)
    result = _run(tmp_path, cli_env)
    assert result.returncode == 0 and "unsharded run: 3 of 3 source tasks" in result.stdout
    assert len(_outputs(tmp_path / "out")) == 3
    assert Checkpoint(tmp_path / "ck").read_run() is None


def test_a_failing_record_fails_its_shard_once(tmp_path, cli_env):
    make_input(tmp_path / "in", files=6, records=2)
    args = ("--shard-index", "SHARD", "--total-shards", "3", "--minimum-shard-index", "1", "--fail-record", "doc-0002-0001",
            "--fail-once")
    codes = {}
    for shard in (1, 2, 3):
        codes[shard] = _run(tmp_path, cli_env, *[str(shard) if a == "SHARD" else a for a in args]).returncode
    assert sorted(codes.values()) == [0, 0, 1]
    bad = next(s for s, c in codes.items() if c == 1)
    store = Checkpoint(tmp_path / "ck")
    assert plan_retry(store.path).missing == (bad,)
    [record] = store.failed_records()
    assert record.shard == bad and record.details["task_ids"] == ["p000002"]
    assert "p000002.jsonl" not in _outputs(tmp_path / "out")
    again = _run(tmp_path, cli_env, *[str(bad) if a == "SHARD" else a for a in args])
    assert again.returncode == 0, again.stderr
    assert plan_retry(store.path).complete
    assert "p000002.jsonl" in _outputs(tmp_path / "out")


def test_fail_record_from_the_environment_fails_every_time(tmp_path, cli_env):
    make_input(tmp_path / "in", files=1, records=1)
    env = {**cli_env, "HYPERION_EXAMPLE_FAIL_ID": "doc-0000-0000", "SLURM_JOB_ID": "900",
           "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "1"}
    for _ in range(2):
        assert _run(tmp_path, env).returncode == 1
    records = Checkpoint(tmp_path / "ck").failed_records()
    assert {Path(r.path).parts[-5:-1] for r in records} == {("slurm_job_900", "array_task_0", "restart_0", "shard_0")}


def test_bad_configuration_is_one_line_exit_2(tmp_path, cli_env):
    make_input(tmp_path / "in", files=1, records=1)
    result = _run(tmp_path, cli_env, "--shard-index", "1")
    assert result.returncode == 2
    assert result.stderr.startswith("hyperion-shard-example: error: HYPERION_ARRAY_TOTAL_SHARDS: not set")
    assert len(result.stderr.splitlines()) == 1
    _run(tmp_path, cli_env, "--shard-index", "1", "--total-shards", "4")
    mismatch = _run(tmp_path, cli_env, "--shard-index", "1", "--total-shards", "5")
    assert mismatch.returncode == 2 and "separate checkpoint path" in mismatch.stderr


def test_make_input_command(tmp_path, cli_env):
    result = run_cli("hyperion-shard-example", "make-input", str(tmp_path / "d"), "--files", "3", "--records", "4", env=cli_env)
    assert result.returncode == 0
    files = sorted((tmp_path / "d").glob("*.jsonl"))
    assert len(files) == 3 and all(len(f.read_text().splitlines()) == 4 for f in files)
    # one line, not one per file (2000 files named one a line drowned the terminal)
    assert result.stdout == f"wrote 3 file(s) of 4 record(s) in {tmp_path / 'd'}: part-00000.jsonl .. part-00002.jsonl\n"


@pytest.mark.parametrize("index", ["0", "4"])
def test_an_out_of_range_shard_is_refused_before_run_json_exists(tmp_path, cli_env, index):
    """As Curator's writer: an index outside [minimum, minimum+total-1] with a checkpoint is an error."""
    make_input(tmp_path / "in", files=3, records=1)
    result = _run(tmp_path, cli_env, "--shard-index", index, "--total-shards", "3", "--minimum-shard-index", "1")
    assert result.returncode == 2
    assert result.stderr == (f"hyperion-shard-example: error: shard_index: {index} is outside the shard range "
                             "[1, 3] of this checkpointed run\n")
    assert not (tmp_path / "ck").exists() and not (tmp_path / "out").exists()



@pytest.mark.parametrize("argv,field", [
    (["--input", "IN", "--output", "A_FILE", "--checkpoint", "CK", "--shard-index", "1", "--total-shards", "2"],
     "--output"),
    (["--input", "IN", "--output", "OUT", "--checkpoint", "A_FILE", "--shard-index", "1", "--total-shards", "2"],
     "--checkpoint"),
    (["make-input", "A_FILE"], "DIRECTORY"),
    (["make-input", "NEW", "--files", "-3"], "--files"),
    (["make-input", "NEW", "--records", "0"], "--records"),
    (["--input", "IN", "--output", "OUT", "--checkpoint", "CK", "--bogus"], "--bogus"),
    (["make-input", "NEW", "--files"], "--files"),
    # hostile input (issue 13)
    (["--input", "IN", "--output", "OUT", "--checkpoint", "CK", "--shard-index", "9" * 5000, "--total-shards", "2"],
     "--shard-index"),
    (["--input", "IN", "--output", "OUT", "--checkpoint", "CK", "--shard-index", "1", "--total-shards", "9" * 5000],
     "--total-shards"),
    (["--input", "IN", "--output", "OUT", "--checkpoint", "CK", "--shard-index", "1", "--total-shards", "2",
      "--minimum-shard-index", str(2 ** 63)], "--minimum-shard-index"),
    (["--input", "IN", "--output", "OUT", "--checkpoint", "CK", "--shard-index", "3", "--total-shards", "2"],
     "shard_index"),
    (["--input", "IN", "--output", "OUT", "--checkpoint", "CK_RUN_FIFO", "--shard-index", "1", "--total-shards", "2"],
     "run.json"),
    (["--input", "IN", "--output", "OUT", "--checkpoint", "CK_RUN_DIR", "--shard-index", "1", "--total-shards", "2"],
     "run.json"),
    (["--input", "IN", "--output", "OUT", "--checkpoint", "CK_RUN_BIG", "--shard-index", "1", "--total-shards", "2"],
     "run.json"),
    (["make-input", "NEW", "--files", "9" * 5000], "--files"),
])
def test_bad_paths_and_counts_are_one_line_exit_2_and_write_nothing(argv, field, tmp_path, cli_env):
    make_input(tmp_path / "in", files=2, records=1)
    (tmp_path / "a_file").write_text("")
    completion = Path(".nemo_curator_metadata", ".slurm_array_completion")
    make_fifo(tmp_path / "ck_fifo" / completion / "run.json")
    (tmp_path / "ck_dir" / completion / "run.json").mkdir(parents=True)
    make_sparse(tmp_path / "ck_big" / completion / "run.json")
    subst = {"IN": tmp_path / "in", "OUT": tmp_path / "out", "CK": tmp_path / "ck", "A_FILE": tmp_path / "a_file",
             "NEW": tmp_path / "new", "CK_RUN_FIFO": tmp_path / "ck_fifo", "CK_RUN_DIR": tmp_path / "ck_dir",
             "CK_RUN_BIG": tmp_path / "ck_big"}
    before = sorted(tmp_path.rglob("*"))
    result = run_cli("hyperion-shard-example", *[str(subst.get(a, a)) for a in argv], env=cli_env, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hyperion-shard-example: error: {field}: "), result.stderr
    assert lines[0].isprintable() and len(lines[0]) < 1000
    assert sorted(tmp_path.rglob("*")) == before       # no run.json, no output dir, no input files


def test_a_shard_count_of_5000_digits_in_the_environment_is_one_line(tmp_path, cli_env):
    make_input(tmp_path / "in", files=2, records=1)
    env = {**cli_env, "HYPERION_ARRAY_SHARD_INDEX": "1", "HYPERION_ARRAY_TOTAL_SHARDS": "9" * 5000}
    result = _run(tmp_path, env)
    assert result.returncode == 2 and not (tmp_path / "ck").exists()
    assert result.stderr.startswith("hyperion-shard-example: error: HYPERION_ARRAY_TOTAL_SHARDS: must be an integer of at most "
                                 "9223372036854775807")
    assert len(result.stderr.splitlines()) == 1 and len(result.stderr) < 300


@pytest.mark.parametrize("where, field", [("file_at_completion", "--checkpoint"), ("proc", "--checkpoint"),
                                          ("dir_at_manifest", "--checkpoint"), ("output_under_a_file", "--output")])
def test_a_checkpoint_or_output_that_cannot_be_written_is_one_line(tmp_path, cli_env, where, field):
    """A file where the checkpoint needs a folder (or a folder where the manifest goes, or a place that
    cannot exist) used to be a traceback; it is one line naming the option and the path."""
    make_input(tmp_path / "in", files=2, records=1)
    checkpoint, output = tmp_path / "ck", tmp_path / "out"
    completion = checkpoint / ".nemo_curator_metadata" / ".slurm_array_completion"
    if where == "file_at_completion":
        completion.parent.mkdir(parents=True)
        completion.write_text("")
    elif where == "proc":
        checkpoint = Path("/proc/hyperion-ck")
    elif where == "dir_at_manifest":   # shard 1's manifest name is fixed by the run: make it a folder
        assert _run(tmp_path, cli_env, "--shard-index", "1", "--total-shards", "2").returncode == 0
        manifest = next(completion.glob("completed_slurm_array_*.json"))
        manifest.unlink()
        manifest.mkdir()
    else:
        (tmp_path / "a_file").write_text("")
        output = tmp_path / "a_file" / "out"
    result = run_cli("hyperion-shard-example", "--input", str(tmp_path / "in"), "--output", str(output),
                     "--checkpoint", str(checkpoint), "--shard-index", "1", "--total-shards", "2", env=cli_env)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hyperion-shard-example: error: {field}: cannot write "), lines
    assert "Traceback" not in result.stderr


def test_a_line_that_is_json_but_no_record_fails_its_task_and_the_rest_still_run(tmp_path, cli_env):
    """A list, a number or JSON nested 200000 deep is a failed task with a failed-task record, as a line
    that is not JSON is: not a traceback that leaves the shard without a record and its later tasks unrun."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text("[1, 2]\n")
    (inputs / "b.jsonl").write_text("5\n")
    (inputs / "c.jsonl").write_text("[" * 200_000 + "]" * 200_000 + "\n")
    (inputs / "d.jsonl").write_text('{"id": "fine"}\n')
    result = _run(tmp_path, cli_env, "--shard-index", "1", "--total-shards", "1", "--minimum-shard-index", "1",
                  "--fail-record", "absent")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    [record] = Checkpoint(tmp_path / "ck").failed_records()
    assert record.details["task_ids"] == ["p000000", "p000001", "p000002"]
    errors = record.details["errors"]
    assert "a JSON list, not a record" in errors["p000000"] and "a JSON int" in errors["p000001"]
    assert "nested too deeply" in errors["p000002"]
    assert list(_outputs(tmp_path / "out")) == ["p000003.jsonl"]


def test_fail_once_is_disarmed_only_by_the_failure_it_asked_for(tmp_path, cli_env):
    """Another task's failure in the same checkpoint must not use up the injected one: the retry test the
    user meant to run would then test nothing."""
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.jsonl").write_text("not json\n")
    make_input(tmp_path / "in", files=1, records=1)
    fail = ("--fail-record", "doc-0000-0000", "--fail-once")
    other = run_cli("hyperion-shard-example", "--input", str(tmp_path / "bad"), "--output", str(tmp_path / "o2"),
                    "--checkpoint", str(tmp_path / "ck"), *fail, env=cli_env)
    assert other.returncode == 1 and "not JSON" in other.stderr
    assert _run(tmp_path, cli_env, *fail).returncode == 1        # the asked-for failure happens
    assert _run(tmp_path, cli_env, *fail).returncode == 0        # once


@pytest.mark.parametrize("long_id", ["x" * 300, "\U00020000" * 70], ids=["ascii", "four-byte-letters"])
def test_a_fail_record_id_too_long_for_a_file_name_still_fails_once_with_its_record(tmp_path, cli_env, long_id):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(json.dumps({"id": long_id}) + "\n", encoding="utf-8")
    args = ("--shard-index", "1", "--total-shards", "1", "--minimum-shard-index", "1",
            "--fail-record", long_id, "--fail-once")
    first = _run(tmp_path, cli_env, *args)
    assert first.returncode == 1, first.stderr
    assert [r.shard for r in Checkpoint(tmp_path / "ck").failed_records()] == [1]
    [marker] = (tmp_path / "ck" / ".hyperion_example").iterdir()
    assert len(marker.name.encode("utf-8")) <= 255
    assert _run(tmp_path, cli_env, *args).returncode == 0



def _run_into_a_closed_pipe(argv, env):
    """Run with stdout a pipe whose reader has gone, as `| head -1` leaves it once head is done."""
    import os
    import subprocess

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(argv, stdout=write_end, stderr=subprocess.PIPE, env=env, text=True, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("buffered", [False, True])
def test_a_reader_that_goes_away_fails_no_task(tmp_path, cli_env, buffered):
    """`hyperion-shard-example ... | head -1` under PYTHONUNBUFFERED=1 (or past a full buffer) recorded every
    task it had done as FAILED ('[Errno 32] Broken pipe') and wrote a failed-task record for a shard whose
    outputs were all written; make-input said 'DIRECTORY: cannot write a file: Broken pipe'. The lines are
    only progress: the shard completes and both exit 0, as `| head` expects."""
    import sys

    env = {k: v for k, v in cli_env.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    exe = str(Path(sys.executable).parent / "hyperion-shard-example")
    files = 400 if buffered else 12   # 400 lines of paths fill Python's 8 KiB buffer mid-run
    made = _run_into_a_closed_pipe([exe, "make-input", str(tmp_path / "in"), "--files", str(files), "--records",
                                    "1"], env)
    assert (made.returncode, made.stderr) == (0, ""), made.stderr
    assert len(list((tmp_path / "in").iterdir())) == files
    result = _run_into_a_closed_pipe([exe, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                                      "--checkpoint", str(tmp_path / "ck"), "--shard-index", "1", "--total-shards",
                                      "1", "--minimum-shard-index", "1"], env)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert len(list((tmp_path / "out").iterdir())) == files
    assert not (tmp_path / "ck" / ".nemo_curator_metadata" / ".failed_tasks").exists()
    assert plan_retry(tmp_path / "ck").complete
