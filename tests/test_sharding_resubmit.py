"""The retry bridge: restrict a recorded submission to the missing shards and run it (local backend)."""
import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import run_cli

from backends.attempt import output_lock
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
    # Curator reads only its own names (else SLURM_ARRAY_TASK_COUNT: 2 here, the retried shards)
    assert ("NEMO_CURATOR_SLURM_ARRAY_TOTAL_SHARDS", "6") in options.env
    assert ("NEMO_CURATOR_SLURM_ARRAY_MINIMUM_SHARD_INDEX", "1") in options.env
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


# --- a record edited, copied or from another run is refused before anything runs ---------------------

def _edited(record_path: Path, tmp_path: Path, **options) -> Path:
    """A copy of the record with some options replaced (None: the key removed)."""
    raw = json.loads(record_path.read_text())
    for key, value in options.items():
        if value is None:
            raw["options"].pop(key, None)
        else:
            raw["options"][key] = value
    copy = tmp_path / "edited.submit.json"
    copy.write_text(json.dumps(raw))
    return copy


def _logs_and_outputs(tmp_path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted((tmp_path / "log").rglob("*")) + sorted((tmp_path / "out").rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("key, value, says", [
    ("command", "echo", "options.command: expected a non-empty list of strings"),
    ("num_gpus", 1.5, "options.num_gpus: expected an integer, got 1.5"),
    ("num_threads", "abc", "options.num_threads: expected an integer"),
    ("env", [["A"]], "options.env: expected [NAME, VALUE] pairs"),
    ("env", [["A B", "1"]], "options.env: 'A B' is not a shell identifier"),
    ("mem", 12, "options.mem: expected a string, got 12"),
    ("output_file", None, "options.output_file: expected a non-empty string, got None"),
    ("array", ["SHARD"], "options.array: expected"),
], ids=["command-string", "gpus-float", "threads-text", "env-pair", "env-name", "mem-int", "no-output", "array"])
def test_a_record_with_a_wrong_option_type_is_refused_naming_it(tmp_path, cli_env, key, value, says):
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    before = _logs_and_outputs(tmp_path)
    copy = _edited(record_path, tmp_path, **{key: value})
    result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(copy), env=cli_env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hyperion-checkpoint: error: record: {copy}: {says}")
    assert _logs_and_outputs(tmp_path) == before    # nothing ran, nothing moved


def test_a_record_of_another_run_is_refused(tmp_path, cli_env):
    """A 6-shard run's record against a 3-shard checkpoint: it would rerun the other run's command here."""
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    other = Checkpoint(tmp_path / "other")
    other.ensure_run(RunConfig(1, 3))
    before = _logs_and_outputs(tmp_path)
    result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "other"), "--submit", str(record_path),
                     env=cli_env)
    assert result.returncode == 2
    assert result.stderr.startswith(f"hyperion-checkpoint: error: --submit: {record_path} ran shard(s) 4-6, "
                                    f"outside {tmp_path / 'other'}'s shards 1-3")
    assert len(result.stderr.splitlines()) == 1 and _logs_and_outputs(tmp_path) == before
    # the record of a resubmission says the run's total in its environment
    copy = _edited(record_path, tmp_path, env=[["HYPERION_ARRAY_TOTAL_SHARDS", "40"]],
                   array={"name": "SHARD", "values": [1]})
    result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "other"), "--submit", str(copy), env=cli_env)
    assert result.returncode == 2
    assert "ran with HYPERION_ARRAY_TOTAL_SHARDS=40, but" in result.stderr and "says 3" in result.stderr


def test_dry_run_prints_what_would_be_resubmitted_and_runs_nothing(tmp_path, cli_env):
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    missing = plan_retry(tmp_path / "ck").expression
    before = _logs_and_outputs(tmp_path)
    result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record_path),
                     "--dry-run", env=cli_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("would resubmit ") and f"({missing}) in {tmp_path}: hyperion-submit local" \
        in result.stdout.splitlines()[0]
    assert "hyperion-shard-example" in result.stdout
    assert _logs_and_outputs(tmp_path) == before
    assert plan_retry(tmp_path / "ck").expression == missing
    alone = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--dry-run", env=cli_env)
    assert alone.returncode == 2 and alone.stderr.startswith("hyperion-checkpoint: error: --dry-run: ")


def test_a_resubmission_refused_for_live_tasks_says_only_why(tmp_path, cli_env):
    """While the run's tasks still run, the refusal is the only line: no "resubmitting ..." before it."""
    Checkpoint(tmp_path / "ck").ensure_run(RunConfig(1, 3))
    log = tmp_path / "log" / "s.SHARD.log"
    running = subprocess.Popen(
        ["hyperion-submit", "local", "--cfg", str(Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"),
         "--array", "SHARD=1:3", "--output-file", str(log), "--", "sleep", "30"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "log" / "s.1.log").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit",
                         str(tmp_path / "log" / "q" / "s.SHARD.submit.json"), env=cli_env)
    finally:
        running.terminate()
        running.wait(timeout=30)
    assert result.returncode == 2
    # named as shards of the run, the field the user typed: `retry` listed them as missing
    assert result.stderr.startswith("hyperion-checkpoint: error: --submit: shard(s) 1-3 (3 of the 3 listed "
                                    "missing) still running in the local run of "), result.stderr
    assert result.stderr.endswith("or stop that run, then retry; nothing resubmitted\n")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("total", [6, 10])
def test_a_record_whose_command_works_on_another_checkpoint_is_refused(tmp_path, cli_env, total):
    """Run B's record against checkpoint X whose range holds B's shards: before, the bridge reran B's
    command (on B's checkpoint, B's --total-shards) with exit 0, and left X as incomplete as it was."""
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    other = Checkpoint(tmp_path / "x")
    other.ensure_run(RunConfig(1, total))
    before = _logs_and_outputs(tmp_path)
    result = run_cli("hyperion-checkpoint", "retry", str(other.path), "--submit", str(record_path), env=cli_env)
    assert result.returncode == 2, result.stderr
    says = ("works on the checkpoint " + str(tmp_path / "ck") + f", not {other.path}" if total == 6
            else "passes --total-shards 6, but")
    assert says in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.rstrip().endswith("it is another run's record")
    assert _logs_and_outputs(tmp_path) == before
    assert load_record(record_path).options["env"] == []      # the run's own record is left alone


def test_a_record_whose_submission_directory_is_gone_is_refused_not_run_elsewhere(tmp_path, cli_env):
    """The command's relative paths (--input in, --checkpoint ck) would resolve wherever the user stands."""
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    raw = json.loads(record_path.read_text())
    raw["cwd"] = str(tmp_path / "moved-away")
    record_path.write_text(json.dumps(raw))
    before = _logs_and_outputs(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for argv in (["hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record_path)],
                 ["hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record_path), "--dry-run"],
                 ["hyperion-jobs", "retry", str(record_path), "--yes"]):
        result = run_cli(*argv, cwd=elsewhere, env=cli_env)
        assert result.returncode == 2, (argv, result.stdout, result.stderr)
        assert result.stderr.count("\n") == 1 and "error: record: its submission directory " \
            f"{tmp_path / 'moved-away'} is gone" in result.stderr, result.stderr
        assert result.stdout == ""
    assert _logs_and_outputs(tmp_path) == before and list(elsewhere.iterdir()) == []


def test_a_resubmission_while_another_holds_the_run_is_one_line_naming_the_record(tmp_path, cli_env):
    """Two retries of one checkpoint at once: the loser says only why, not "resubmitting ..." first."""
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    with output_lock(record_path):
        before = _logs_and_outputs(tmp_path)
        result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record_path),
                         env=cli_env)
    assert result.returncode == 2
    assert result.stderr.startswith("hyperion-checkpoint: error: record: hyperion-submit (pid ")
    assert "right now; wait for it to end" in result.stderr and "--output-file" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert _logs_and_outputs(tmp_path) == before


def test_a_command_naming_another_checkpoint_as_input_is_not_refused(tmp_path, cli_env):
    """A second stage reads the first stage's checkpointed output (--input stage1, a folder with a run.json)
    and passes its totals as 012: it is still this run's record."""
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    Checkpoint(tmp_path / "stage1").ensure_run(RunConfig(0, 40))
    raw = json.loads(record_path.read_text())
    command = raw["options"]["command"]
    command[command.index("--total-shards") + 1] = "06"
    raw["options"]["command"] = command + ["--input-checkpoint-of-nothing", "x", "--extra", "stage1"]
    record_path.write_text(json.dumps(raw))
    result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record_path),
                     "--dry-run", env=cli_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("would resubmit ")


# --- a completion that cannot be read is not taken for a missing shard -----------------------------

def test_a_corrupt_manifest_stops_a_resubmission_that_would_rerun_its_shard(tmp_path, cli_env):
    """Shards 1-2 completed before the local array stopped at 3; with shard 1's manifest cut short,
    retry --submit planned 1 as missing and ran it again over its output."""
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    manifest = next(p for p in Checkpoint(tmp_path / "ck").completion_dir.iterdir()
                    if json.loads(p.read_text())["shard_index"] == 1)
    manifest.write_text('{"minimum_shard_index": 1, "sha')
    before = _logs_and_outputs(tmp_path)
    for extra in ((), ("--dry-run",)):
        result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record_path), *extra,
                         env=cli_env)
        assert result.returncode == 2, result.stderr
        error = [line for line in result.stderr.splitlines() if ": error: " in line]
        assert len(error) == 1 and error[0].startswith(f"hyperion-checkpoint: error: checkpoint: {manifest}: "
                                                        "unreadable completion manifest")
        assert "which shards completed is not known" in error[0] and "Traceback" not in result.stderr
        assert result.stdout == ""
    assert _logs_and_outputs(tmp_path) == before
    shown = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), env=cli_env)   # printing still works
    assert shown.returncode == 0 and shown.stdout.startswith("1,") and "warning" in shown.stderr


def test_a_manifest_of_another_run_does_not_stop_a_resubmission(tmp_path, cli_env):
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    store = Checkpoint(tmp_path / "ck")
    missing = plan_retry(store.path).missing
    stale = store.completion_dir / "completed_slurm_array_0000000000000000.json"
    stale.write_text(json.dumps({"minimum_shard_index": 0, "shard_index": missing[0], "status": "completed",
                                 "total_shards": 12}))
    prepared = prepare_resubmit(str(tmp_path / "ck"), str(record_path))
    assert prepared.plan is not None and [t.value for t in prepared.plan.tasks] == list(missing)
    assert any(p.path == str(stale) and "another run" in p.message for p in prepared.retry.problems)


def test_an_unlistable_completion_folder_stops_a_resubmission(rightless_dir, cli_env):
    from conftest import without_rights

    tmp_path = rightless_dir
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    completion = Checkpoint(tmp_path / "ck").completion_dir
    before = _logs_and_outputs(tmp_path)
    completion.chmod(0o311)          # may be entered, not listed
    result = subprocess.run(without_rights("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit",
                                           str(record_path)), env=cli_env, capture_output=True, text=True,
                            timeout=120)
    completion.chmod(0o755)
    assert result.returncode == 2, result.stderr
    assert f"error: checkpoint: {completion}: cannot list the completion folder" in result.stderr
    assert _logs_and_outputs(tmp_path) == before


def test_a_resubmission_whose_output_pipe_closed_still_runs_every_shard(tmp_path, cli_env):
    """`retry --submit ... | head -1`: the second task's line hit the closed pipe, the rest of the
    shards were never run, and the command exited 0 without a word."""
    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    missing = plan_retry(tmp_path / "ck").missing
    assert len(missing) >= 1
    for manifest in list(Checkpoint(tmp_path / "ck").completion_dir.iterdir())[:2]:
        manifest.unlink()                   # more shards to rerun, more lines to print
    again = subprocess.run(["bash", "-c", 'hyperion-checkpoint retry "$1" --submit "$2" | true; '
                            'exit ${PIPESTATUS[0]}', "-", str(tmp_path / "ck"), str(record_path)],
                           env=cli_env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert plan_retry(tmp_path / "ck").complete and "Traceback" not in again.stderr


def test_retry_array_limit_is_the_records_site_file_else_the_site_given(tmp_path):
    """The console's Retry tab without a record starts from the site file selected on the Submit
    screen (as `hyperion-checkpoint retry --cfg SITE`); a record's own site file comes first."""
    from types import SimpleNamespace

    from sharding.resubmit import NO_LIMIT, retry_array_limit

    conf = Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml"
    small = tmp_path / "small.yaml"
    small.write_text(conf.read_text().replace("max_array_size: 1001", "max_array_size: 4"))
    assert retry_array_limit(None) == NO_LIMIT
    assert (retry_array_limit(None, str(small)).value, retry_array_limit(None, str(small)).path) == (4, str(small))
    record = SimpleNamespace(cfg=str(conf))
    assert retry_array_limit(record, str(small)).value == 1001
    with pytest.raises(InputError):
        retry_array_limit(None, str(tmp_path / "missing.yaml"))


def test_a_failed_local_resubmission_names_hyperion_checkpoint_retry_with_its_options(tmp_path, cli_env):
    """A local resubmission that fails again named `hyperion-jobs retry RECORD` (this attempt's values
    as they were); it names the checkpoint retry it was, with the options that shaped it."""
    first, record_path = _submit_local(tmp_path, cli_env, fail_args=("--fail-record", "doc-0003-0000"))
    assert first.returncode == 1
    again = run_cli("hyperion-checkpoint", "retry", "ck", "--submit", str(record_path), "--max-array-size", "100",
                    "--trust-record", cwd=tmp_path, env=cli_env)
    assert again.returncode == 1, again.stderr
    last = again.stderr.splitlines()[-1]
    assert last.startswith("hyperion-submit: ") and " with: " in last, last
    assert last.endswith(f"with: hyperion-checkpoint retry {tmp_path / 'ck'} --submit {record_path} "
                         "--max-array-size 100 --trust-record"), last


def test_watch_of_a_stopped_resubmission_names_hyperion_checkpoint_retry_for_the_values_not_run(tmp_path, cli_env):
    """A local resubmission stopped at its first failure; `hyperion-jobs watch` then named
    `hyperion-jobs retry RECORD` for the values it never reached, which reruns that attempt's shard
    windows as they were. It names what hyperion-submit's last line named: the checkpoint retry."""
    first, record_path = _submit_local(tmp_path, cli_env, fail_args=("--fail-record", "doc-0001-0000"))  # shard 1
    assert first.returncode == 1
    again = run_cli("hyperion-checkpoint", "retry", "ck", "--submit", str(record_path), cwd=tmp_path, env=cli_env)
    assert again.returncode == 1, again.stderr
    command = f"hyperion-checkpoint retry {tmp_path / 'ck'} --submit {record_path}"
    assert again.stderr.splitlines()[-1].endswith(f"with: {command}"), again.stderr
    watch = run_cli("hyperion-jobs", "watch", str(record_path), env=cli_env, timeout=30)
    assert watch.returncode == 1
    # hyperion-submit's words: shard 1 failed, and the command reruns it with the values never reached
    assert f"not run (a local array stops at its first failure); rerun SHARD=1-6 with: {command}" in again.stderr, \
        again.stderr
    assert watch.stdout.splitlines()[-1] == (f"  NOT_RUN values 2-6 (the run stopped before them); "
                                             f"rerun FAILED value 1 and NOT_RUN values 2-6 with: {command}")


def test_the_preview_reads_each_record_once_and_only_regular_ones_beside_the_logs(tmp_path, cli_env, monkeypatch):
    """`retry CKPT` finds the records naming the checkpoint in every q/ under the current folder (the
    record of `--output-file log/...` is in log/q/), reads each once and hands it on to the question
    whether its tasks still run (it was parsed there a second time); a FIFO or a symlink named like a
    record there is not read (a FIFO would hang the preview)."""
    import os

    import backends.records.record as record_module
    from sharding.resubmit import RunningNote, running_notes
    from sharding.run_records import records_naming

    _, record_path = _submit_local(tmp_path, cli_env)
    os.mkfifo(record_path.parent / "fifo.SHARD.submit.json")
    (record_path.parent / "link.SHARD.submit.json").symlink_to(record_path)
    preview = run_cli("hyperion-checkpoint", "retry", "ck", "--format", "json", cwd=tmp_path, env=cli_env, timeout=60)
    assert (preview.returncode, preview.stderr) == (0, ""), preview.stderr      # the run ended: nothing to say
    shown = json.loads(preview.stdout)
    assert not shown["complete"] and shown.get("still_running", []) == []

    reads: list[str] = []
    real = record_module.read_bounded

    def counted(path, *args, **kwargs):
        reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(record_module, "read_bounded", counted)
    monkeypatch.chdir(tmp_path)
    found = records_naming(str(tmp_path / "ck"))
    assert [item.path for item in found] == [str(record_path)]
    assert running_notes(found) == [RunningNote(str(record_path), None)]
    assert reads == [str(record_path)]


def test_the_preview_says_when_it_stopped_looking_for_records(tmp_path, cli_env, monkeypatch, capsys):
    """The walk for records naming the checkpoint runs under the current folder; from a folder of a
    million data files (or a slow file system) the preview waited on it without a word. It stops
    after a few seconds (none here) and says that records may have been missed and how to name one."""
    import os

    import sharding.run_records as run_records
    from sharding.cli import main as checkpoint_main

    _, record_path = _submit_local(tmp_path, cli_env)
    monkeypatch.setattr(run_records, "WALK_SECONDS", 0.0)
    monkeypatch.chdir(tmp_path)
    assert checkpoint_main(["retry", "ck"]) == 0
    err = capsys.readouterr().err
    assert ("hyperion-checkpoint: warning: stopped looking for submit records under . after 0 s; name the run's "
            "record with --record to hear which shards still run\n") in err, err
    monkeypatch.setattr(run_records, "WALK_SECONDS", 3.0)
    assert checkpoint_main(["retry", "ck"]) == 0
    assert "stopped looking" not in capsys.readouterr().err

    # more records than are read, the run's own the oldest: said, not passed over in silence
    for n in range(22):
        (record_path.parent / f"other{n}.JOB.submit.json").write_text("{}")
    os.utime(record_path, (1000, 1000))
    assert checkpoint_main(["retry", "ck"]) == 0
    assert ("hyperion-checkpoint: warning: none of the newest 20 of 23 submit records under . names the checkpoint; "
            "name the run's record with --record to hear which shards still run\n") in capsys.readouterr().err


def test_the_preview_does_not_wait_on_a_listing_that_hangs(tmp_path, cli_env, monkeypatch, capsys):
    """One listing of a hung NFS mount under the current folder blocks past any deadline checked
    between folders: the walk runs in a thread waited for WALK_SECONDS, and the preview goes on."""
    import time

    import backends.records.record as record_module
    import sharding.run_records as run_records
    from sharding.cli import main as checkpoint_main

    _submit_local(tmp_path, cli_env)

    def hung_walk(*args, **kwargs):
        time.sleep(60)
        yield from ()

    monkeypatch.setattr(record_module.os, "walk", hung_walk)
    monkeypatch.setattr(run_records, "WALK_SECONDS", 0.5)
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    assert checkpoint_main(["retry", "ck"]) == 0
    assert time.monotonic() - started < 10
    assert "stopped looking for submit records under . after 0.5 s" in capsys.readouterr().err


def test_a_retry_whose_shards_another_retry_completed_meanwhile_runs_nothing(tmp_path, cli_env, monkeypatch, capsys):
    """Two terminals retried one checkpoint: the second read it while the first's shards still ran,
    and Slurm's answer (`check_not_running`) came once they had ended. The second then submitted its
    plan as a further attempt and ran the shards the first had just completed, over their output."""
    import sharding.resubmit as resubmit_module
    from backends.ranges import compress
    from sharding import cli

    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    missing = plan_retry(tmp_path / "ck").missing
    ckpt = str(tmp_path / "ck")
    asked = resubmit_module.check_not_running
    other: list[subprocess.CompletedProcess[str]] = []

    def the_other_terminal_retries_first(record: str, retry=None):
        # the other terminal's whole retry runs between this one's read and its answer from Slurm
        other.append(run_cli("hyperion-checkpoint", "retry", ckpt, "--submit", str(record_path), env=cli_env))
        return asked(record, retry)

    monkeypatch.setattr(resubmit_module, "check_not_running", the_other_terminal_retries_first)
    monkeypatch.setenv("PATH", cli_env["PATH"])
    with pytest.raises(SystemExit) as exited:
        cli.main(["retry", ckpt, "--submit", str(record_path)])
    err = capsys.readouterr().err
    assert other[0].returncode == 0, other[0].stderr
    assert exited.value.code == 2, err
    shards = compress(missing)
    assert err.splitlines() == [
        f"hyperion-checkpoint: error: --submit: shard(s) {shards} ({len(missing)} of the {len(missing)} planned) "
        f"completed after this retry read {ckpt} (their tasks ended meanwhile: the record's own, "
        f"or another retry's); nothing resubmitted: "
        "run it again to plan from what is missing now"]
    history = json.loads(run_cli("hyperion-jobs", "history", str(record_path), "--json", env=cli_env).stdout)
    assert [(a["attempt"], a["kind"]) for a in history["attempts"]] == [(1, "submit"), (2, "resubmit")]


def _note(ck: Path, shard: int, total: int, minimum: int) -> str:
    """The note of `skipped_line` for one shard a rerun failed after it completed, as a user reads it."""
    from sharding.store import manifest_name
    return (f"1 shard ({shard}) has a failure newer than its completion manifest (a rerun failed after it "
            "completed): retry skips it because the manifest says complete; to rerun it, remove "
            f"{ck}/.nemo_curator_metadata/.slurm_array_completion/{manifest_name(RunConfig(minimum, total), shard)}, "
            "then retry again")


def test_retry_says_which_complete_shards_a_rerun_failed_and_how_to_rerun_one(tmp_path, cli_env):
    """All 6 shards completed; the user reran shard 2 by hand and it failed. `failed` said "failed
    after its shard completed; retry skips the shard", but `retry` printed nothing and `retry --submit`
    said only "every shard ... is complete; nothing resubmitted". Each now says which shard a rerun
    failed since, that retry skips it (its manifest stands) and which file to remove to rerun it; the
    plan is unchanged, and removing that file makes retry plan the shard."""
    first, record = _submit_local(tmp_path, cli_env, fail_args=())
    assert first.returncode == 0, first.stderr
    ck = tmp_path / "ck"
    rerun = run_cli("hyperion-shard-example", "--input", "in", "--output", "out", "--checkpoint", "ck",
                    "--shard-index", "2", "--total-shards", "6", "--minimum-shard-index", "1",
                    "--fail-record", "doc-0000-0001", cwd=tmp_path, env=cli_env)
    assert rerun.returncode == 1, rerun.stderr
    store = Checkpoint(ck)
    from sharding.store import manifest_name
    manifest = store.completion_dir / manifest_name(RunConfig(1, 6), 2)
    failed_at = max(r.mtime for r in store.failed_records())
    assert manifest.stat().st_mtime < failed_at          # the order the files say: the failure is newer
    note = _note(ck, 2, 6, 1)

    preview = run_cli("hyperion-checkpoint", "retry", str(ck), env=cli_env)
    assert (preview.returncode, preview.stdout) == (0, "")           # nothing planned, as before
    assert preview.stderr == f"hyperion-checkpoint: note: {note}\n"
    data = json.loads(run_cli("hyperion-checkpoint", "retry", str(ck), "--format", "json", env=cli_env).stdout)
    assert (data["complete"], data["failed_after_completion"]) == (True, {"count": 1, "shards": [2], "note": note})
    nothing = run_cli("hyperion-checkpoint", "retry", str(ck), "--submit", str(record), env=cli_env)
    assert nothing.returncode == 0, nothing.stderr
    assert nothing.stderr == (f"hyperion-checkpoint: every shard of {ck} is complete; nothing resubmitted\n"
                              f"hyperion-checkpoint: note: {note}\n")
    shards = run_cli("hyperion-checkpoint", "shards", str(ck), env=cli_env).stdout.splitlines()
    assert shards[:3] == ["complete          6  1-6", "incomplete        0", "failed            0"]
    assert shards[3] == ("failed_after      1  2  (complete, then a rerun failed: retry skips it; "
                         "hyperion-checkpoint retry says how to rerun one)")

    (store.completion_dir / manifest_name(RunConfig(1, 6), 4)).unlink()     # shard 4 lost its manifest
    some = run_cli("hyperion-checkpoint", "retry", str(ck), "--submit", str(record), "--dry-run", env=cli_env)
    assert some.returncode == 0, some.stderr
    said = some.stdout.splitlines()
    assert said[0].startswith("would resubmit 1 of 6 shard(s) (4) in ")
    assert f"  note: {note}" in said[1:3]

    manifest.unlink()                                  # as the note says: shard 2 is rerun
    after = run_cli("hyperion-checkpoint", "retry", str(ck), "--format", "ranges", env=cli_env)
    assert (after.stdout, after.stderr) == ("2,4\n", "")


def test_a_record_whose_command_names_no_checkpoint_is_resubmitted_with_one_warning_naming_both(tmp_path, cli_env):
    """The extract stage's record paired with the shard stage's checkpoint: its command names no
    checkpoint, so nothing refuses it, and `retry --submit` (the console's Resubmit alike) said nothing:
    a rerun that never writes a manifest here leaves the shards missing however often it is resubmitted."""
    from hyperion_console.screens.checkpoint import confirmation_text
    from sharding.resubmit import prepare_from_retry

    first, record_path = _submit_local(tmp_path, cli_env)
    assert first.returncode == 1
    raw = json.loads(record_path.read_text())
    command = raw["options"]["command"]
    at = command.index("--checkpoint")
    raw["options"]["command"] = command[:at] + command[at + 2:]
    record_path.write_text(json.dumps(raw))
    checkpoint = tmp_path / "ck"
    warning = (f"the command of {record_path} names no checkpoint (no --checkpoint DIR, --ckpt DIR, ...): nothing "
               f"shows that its rerun fills {checkpoint}; if it does not, its shards stay missing")
    result = run_cli("hyperion-checkpoint", "retry", str(checkpoint), "--submit", str(record_path), "--dry-run",
                     env=cli_env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"hyperion-checkpoint: warning: {warning}\n"
    assert result.stdout.startswith("would resubmit ")
    # the console's Resubmit plans through the same core: its preview and confirmation say the same line
    prepared = prepare_from_retry(plan_retry(checkpoint), str(record_path))
    assert prepared.warning == warning
    assert confirmation_text(prepared, str(record_path), None).startswith(f"warning: {warning}\n")
    # the run's own record names its checkpoint: no warning
    raw["options"]["command"] = command
    record_path.write_text(json.dumps(raw))
    own = run_cli("hyperion-checkpoint", "retry", str(checkpoint), "--submit", str(record_path), "--dry-run",
                  env=cli_env)
    assert own.returncode == 0 and own.stderr == "", own.stderr
    assert prepare_from_retry(plan_retry(checkpoint), str(record_path)).warning is None
