"""hyperion-checkpoint as a user runs it."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_fifo, make_sparse, make_symlink_loop, run_cli, without_rights

from sharding.assign import shard_for
from sharding.example import make_input
from sharding.listing import list_sources
from sharding.store import Attempt, Checkpoint, RunConfig, manifest_name

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints"
SITE = Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml"


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


def test_retry_with_a_site_file_windows_by_its_max_array_size(big, cli_env):
    """Without --max-array-size, retry printed one window whatever the cluster allows; --cfg SITE
    takes the limit from the site file (the test cluster's 1001), as --submit takes its record's,
    and a --max-array-size above it is capped as a resubmission caps it."""
    def fields(*extra):
        result = run_cli("hyperion-checkpoint", "retry", str(big), *extra, env=cli_env)
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        return result.stdout.splitlines()

    assert fields() == ["1-2,1005-1006,2999 0 0 3000"]
    assert fields("--cfg", str(SITE)) == ["1-2 0 0 3000", "4-5 1001 0 3000", "997 2002 0 3000"]
    assert fields("--cfg", str(SITE), "--max-array-size", "1000") == fields("--max-array-size", "1000")
    assert fields("--cfg", str(SITE), "--max-array-size", "5000") == fields("--cfg", str(SITE))
    assert json.loads("\n".join(fields("--cfg", str(SITE), "--format", "json")))["max_array_size"] == 1001


def test_a_max_array_size_of_19_digits_is_taken(tmp_path, cli_env):
    store = Checkpoint(tmp_path)
    store.ensure_run(RunConfig(1, 20))
    result = run_cli("hyperion-checkpoint", "retry", str(tmp_path), "--max-array-size", "1000000000000000000",
                     env=cli_env)
    assert (result.returncode, result.stdout, result.stderr) == (0, "1-20 0 1 20\n", "")


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
    (["retry", "BIG", "--max-array-size", "9223372036854775808"], "--max-array-size"),    # 2**63
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
    # hostile run.json (issue 13): one line, never a hang, never a traceback
    (["show", "RUN_FIFO"], "run.json"),
    (["retry", "RUN_FIFO"], "run.json"),
    (["shards", "RUN_DIR"], "run.json"),
    (["retry", "RUN_ZERO"], "run.json"),
    (["show", "RUN_SPARSE"], "run.json"),
    (["retry", "RUN_HUGE_INT"], "run.json"),
    (["shards", "RUN_NESTED"], "run.json"),
    (["failed", "RUN_LOOP"], "run.json"),
    (["retry", "RUN_BEYOND_2_63"], "run.json"),
    (["retry", "RUN_1E12", "--max-array-size", "1"], "--max-array-size"),
    (["retry", "RUN_1E12", "--format", "json", "--max-array-size", "1000"], "--max-array-size"),
    (["retry", "BIG", "--max-array-size", "9" * 5000], "--max-array-size"),
    (["retry", "BIG", "--trust-record"], "--trust-record"),
    (["retry", "RUN_1E12", "--submit", "NOWHERE"], "record"),
    (["retry", "RUN_1E12", "--submit", "RECORD_FIFO"], "record"),
    (["retry", "BIG", "--cfg", "NOWHERE"], "--cfg"),
    (["retry", "BIG", "--cfg", "A_FILE"], "--cfg"),
    (["retry", "BIG", "--cfg", "SITE", "--format", "ranges"], "--cfg"),
    (["retry", "BIG", "--cfg", "SITE", "--submit", "NOWHERE"], "--cfg"),
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
             "A_FILE": str(tmp_path / "a_file"), "SITE": str(SITE), **_hostile_runs(tmp_path)}
    before = sorted(p for p in tmp_path.rglob("*"))
    result = run_cli("hyperion-checkpoint", *[subst.get(a, a) for a in argv], env=cli_env, timeout=60)
    assert sorted(p for p in tmp_path.rglob("*")) == before     # nothing written
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hyperion-checkpoint: error: {field}: "), result.stderr
    assert lines[0].isprintable() and len(lines[0]) < 1000
    assert lines[0].count("cannot read") <= 1, lines[0]          # said once, not wrapped in itself


def test_a_submit_record_that_is_a_device_is_named_so_not_called_writable_by_others(big, cli_env) -> None:
    """`--submit /dev/zero` said the record "may be changed by its group and other users (mode 0666)"."""
    result = run_cli("hyperion-checkpoint", "retry", str(big), "--submit", "/dev/zero", env=cli_env, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("hyperion-checkpoint: error: record: cannot read /dev/zero: not a regular file "
                             "but a character device\n")


def _run_json(root: Path, make) -> str:
    """A checkpoint whose run.json is made by `make(path)`."""
    path = root / ".nemo_curator_metadata" / ".slurm_array_completion" / "run.json"
    path.parent.mkdir(parents=True)
    make(path)
    return str(root)


def _hostile_runs(tmp_path: Path) -> dict[str, str]:
    huge = Checkpoint(tmp_path / "run_1e12")
    huge.ensure_run(RunConfig(0, 10 ** 12))
    huge.write_completion(5 * 10 ** 11)
    make_fifo(tmp_path / "record.submit.json")
    return {
        "RUN_FIFO": _run_json(tmp_path / "run_fifo", make_fifo),
        "RUN_DIR": _run_json(tmp_path / "run_dir", lambda p: p.mkdir()),
        "RUN_ZERO": _run_json(tmp_path / "run_zero", lambda p: p.symlink_to("/dev/zero")),
        "RUN_SPARSE": _run_json(tmp_path / "run_sparse", make_sparse),
        "RUN_HUGE_INT": _run_json(tmp_path / "run_huge_int", lambda p: p.write_text(
            '{"minimum_shard_index":0,"total_shards":' + "9" * 5000 + "}\n")),
        "RUN_NESTED": _run_json(tmp_path / "run_nested", lambda p: p.write_text("[" * 100_000 + "]" * 100_000)),
        "RUN_LOOP": _run_json(tmp_path / "run_loop", make_symlink_loop),
        "RUN_BEYOND_2_63": _run_json(tmp_path / "run_beyond", lambda p: p.write_text(
            json.dumps({"minimum_shard_index": 2 ** 62, "total_shards": 2 ** 62 + 1}))),
        "RUN_1E12": str(huge.path),
        "RECORD_FIFO": str(tmp_path / "record.submit.json"),
    }


def test_shards_and_show_on_the_curator_fixture(cli_env):
    path = str(FIXTURES / "curator_partial")
    shards = run_cli("hyperion-checkpoint", "shards", path, env=cli_env)
    assert shards.stdout.split("\n")[:3] == ["complete          6  0-2,4-5,7", "incomplete        1  6",
                                             "failed            1  3"]
    data = json.loads(run_cli("hyperion-checkpoint", "shards", path, "--json", env=cli_env).stdout)
    assert data["counts"] == {"complete": 6, "incomplete": 1, "failed": 1}
    assert data["shards"][3] == {"shard": 3, "status": "failed", "failures": 2, "failed_after": False}
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


def _depth(value) -> int:
    """How deep lists nest in `value`, counted without recursion."""
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


def test_failed_json_of_a_record_nested_600_deep_prints_it_not_a_traceback(tmp_path, cli_env):
    """json.loads reads a failed-task record nested 600 lists deep (its limit is near 1000); the
    JSON output's surrogate escaping copied it by recursion, two frames a level, and `failed --json`
    ended in a RecursionError traceback, exit 1, where `failed` printed it."""
    store = Checkpoint(tmp_path)
    store.ensure_run(RunConfig(0, 2))
    path = store.write_failed(1, Attempt("55", "1", "0"), {"task_ids": ["p1"]})
    path.write_text('{"error": ' + "[" * 600 + '"bad \\udce9"' + "]" * 600 + "}\n")
    result = run_cli("hyperion-checkpoint", "failed", str(tmp_path), "--json", env=cli_env, timeout=60)
    assert result.returncode == 0, result.stderr[-300:]
    assert "Traceback" not in result.stderr
    [record] = json.loads(result.stdout)
    assert record["shard"] == 1 and _depth(record["details"]["error"]) == 600


def test_failed_lists_records_by_attempt(cli_env):
    result = run_cli("hyperion-checkpoint", "failed", str(FIXTURES / "corrupt"), "--json", env=cli_env)
    records = {r["shard"]: r for r in json.loads(result.stdout)}
    assert records[9]["slurm_job"] == "2001" and records[9]["details"]["task_ids"] == ["p000004"]
    text = run_cli("hyperion-checkpoint", "failed", str(FIXTURES / "corrupt"), env=cli_env)
    assert "shard 9  job 2001  array_task 9  restart 0  tasks p000004  ValueError: bad record" in text.stdout


def test_failed_of_a_checkpoint_without_failures_says_so(tmp_path, cli_env):
    """An empty listing (exit 0, no output) read as a command that did nothing. `--json` stays an
    empty list for scripts."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    store.write_completion(1)
    text = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert text.returncode == 0 and text.stdout == f"no failed-task records under {store.failed_dir}\n"
    assert json.loads(run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env).stdout) == []
    store.write_failed(2, Attempt("100", "2", "0"), {"task_ids": ["p1"], "error": "ValueError: x"})
    assert "no failed-task records" not in run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env).stdout


def test_failed_of_a_checkpoint_whose_failed_folder_is_a_symlink_does_not_say_there_are_none(tmp_path, cli_env):
    """`.failed_tasks` a symlink: a warning that it was not searched, then `no failed-task records
    under ...`, which read as if it had been."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store.failed_dir.parent.mkdir(parents=True, exist_ok=True)
    store.failed_dir.symlink_to(elsewhere)
    text = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert text.returncode == 0 and "not searched" in text.stderr, text.stderr
    assert text.stdout == f"no readable failed-task records under {store.failed_dir} (1 warned about above)\n"


# --- hostile files inside a checkpoint: one warning each, skipped, never a hang (issue 13) -----------

def _hostile_checkpoint(root: Path) -> Checkpoint:
    """Shards 1-10, 1-3 complete and 4 failed, plus one hostile file of each kind named like metadata."""
    store = Checkpoint(root)
    run = RunConfig(1, 10)
    store.ensure_run(run)
    for shard in (1, 2, 3):
        store.write_completion(shard, run)
    store.write_failed(4, Attempt("100", "4", "0"), {"task_ids": ["p1"], "error": "ValueError: \x1b]52;c;cm0gLXJmIH4=\x07"})
    folder = store.completion_dir
    make_fifo(folder / "completed_slurm_array_fifo.json")
    (folder / "completed_slurm_array_directory.json").mkdir()
    (folder / "completed_slurm_array_zero.json").symlink_to("/dev/zero")
    make_sparse(folder / "completed_slurm_array_sparse.json")
    make_symlink_loop(folder / "completed_slurm_array_loop.json")
    (folder / "completed_slurm_array_bigint.json").write_text(
        '{"minimum_shard_index":1,"shard_index":' + "9" * 5000 + ',"status":"completed","total_shards":10}')
    (folder / "completed_slurm_array_nested.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "completed_slurm_array_\x1b]0;owned\x07.json").write_text("{")
    attempt = store.failed_dir / "slurm_job_200" / "array_task_5" / "restart_0"
    make_fifo(attempt / "shard_5" / "failed_tasks.json")
    (attempt / "shard_6" / "failed_tasks.json").mkdir(parents=True)
    (attempt / ("shard_" + "9" * 200)).mkdir()
    (attempt / ("shard_" + "9" * 200) / "failed_tasks.json").write_text("")
    return store


@pytest.mark.parametrize("argv,stdout", [
    (["retry"], "4-10 0 1 10\n"),
    (["retry", "--format", "ranges"], "4-10\n"),
    (["shards"], "complete          3  1-3\nincomplete        6  5-10\nfailed            1  4\n"),
])
def test_hostile_files_in_a_checkpoint_are_warnings_and_skipped(tmp_path, cli_env, argv, stdout):
    store = _hostile_checkpoint(tmp_path / "ck")
    started = time.monotonic()
    result = run_cli("hyperion-checkpoint", argv[0], str(store.path), *argv[1:], env=cli_env, timeout=60)
    assert time.monotonic() - started < 20
    assert result.returncode == 0, result.stderr
    assert result.stdout == stdout
    warnings = result.stderr.splitlines()
    assert all(w.startswith("hyperion-checkpoint: warning: ") and w.isprintable() for w in warnings)
    assert "Traceback" not in result.stderr
    expected = {"fifo": "a FIFO, not a regular file", "directory": "a directory, not a regular file",
                "zero": "a character device, not a regular file", "sparse": "larger than the 1 MiB allowed",
                "loop": "a symlink loop", "bigint": "a number of 5000 digits", "nested": "nested too deeply",
                "\\x1b]0;owned\\x07": "unreadable completion manifest"}
    for name, reason in expected.items():
        assert sum(f"completed_slurm_array_{name}.json: " in w and reason in w for w in warnings) == 1, (name, warnings)
    if argv[0] == "shards":   # coverage also reads the failed-task records
        assert sum("shard_5/failed_tasks.json: unreadable failed-task record (a FIFO" in w for w in warnings) == 1
        assert sum("shard_6/failed_tasks.json: a directory, not a regular file" in w for w in warnings) == 1
        assert sum("is more than 19 digits: listed under no shard" in w for w in warnings) == 1


def test_failed_records_of_shards_outside_the_run_are_warned_about_and_not_counted(tmp_path, cli_env):
    """A shard_99 folder in a 10-shard run (copied from another run, or made by hand) is not one of this run's
    failures: show does not count it, and failed still lists it, with a warning, as manifests are warned about."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 10))
    store.write_failed(4, Attempt("100", "4", "0"), {"task_ids": ["p1"], "error": "ValueError: x"})
    stray = store.write_failed(99, Attempt("100", "99", "0"), {"task_ids": ["p9"], "error": "ValueError: y"})
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env)
    assert shown.returncode == 0
    assert "failed-task records 1 from 1 task run(s)" in shown.stdout
    warning = (f"hyperion-checkpoint: warning: {stray}: failed-task record of shard 99, outside the run's "
               "shards 1-10; not counted")
    assert shown.stderr.splitlines() == [warning]
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert "shard 99  job 100" in listed.stdout and "shard 4  job 100" in listed.stdout
    assert listed.stderr.splitlines() == [warning]
    assert run_cli("hyperion-checkpoint", "shards", str(store.path), env=cli_env).stdout.splitlines()[-1] \
        == "failed            1  4"


def test_failed_task_folders_curator_or_its_user_may_choose_are_read(tmp_path, cli_env):
    """Curator's earlier tutorial wrote slurm_job_<J>/array_task_<A>/shard_<i> (no restart_) and let
    FAILED_TASKS_RUN_ID replace slurm_job_<J>; a user may set NEMO_CURATOR_FAILED_TASKS_DIR to any
    attempt-scoped folder. Each is a failure: of the shard its shard_<i> folder names, else of none.
    A FIFO and a symlinked folder there stay refused."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(0, 8))
    for folder in ("slurm_job_5/array_task_2/shard_2", "nightly/array_task_3/shard_3", "my_attempt_1"):
        (store.failed_dir / folder).mkdir(parents=True)
        (store.failed_dir / folder / "failed_tasks.json").write_text("")
    make_fifo(store.failed_dir / "my_attempt_2" / "failed_tasks.json")
    outside = tmp_path / "outside" / "shard_6"
    outside.mkdir(parents=True)
    (outside / "failed_tasks.json").write_text("")
    (store.failed_dir / "linked").symlink_to(outside.parent)
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env, timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "failed       2" in shown.stdout
    assert "failed-task records 3 from 3 task run(s), 1 in folders naming no shard_<i> (no shard's)" in shown.stdout
    assert shown.stderr.splitlines() == [f"hyperion-checkpoint: warning: {store.failed_dir}/my_attempt_2/failed_tasks.json: "
                                         "unreadable failed-task record (a FIFO, not a regular file); skipped"]
    assert run_cli("hyperion-checkpoint", "shards", str(store.path), env=cli_env).stdout.splitlines()[-1] \
        == "failed            2  2-3"
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env)
    assert sorted((r["shard"] if r["shard"] is not None else -1, r["slurm_job"], r["array_task"], r["restart"])
                  for r in json.loads(listed.stdout)) == [(-1, None, None, None), (2, "5", "2", None), (3, None, "3", None)]
    text = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env).stdout
    assert "shard -  job -  array_task -  restart -  tasks -  (empty marker" in text
    assert "shard 2  job 5  array_task 2  restart -  tasks -" in text


def test_a_failed_task_folder_that_is_a_symlink_is_not_searched(tmp_path, cli_env):
    """`.failed_tasks` linked to / walked the whole disk 16 levels deep, a warning per closed folder."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(0, 8))
    store.write_completion(0)
    outside = tmp_path / "outside" / "shard_6"
    outside.mkdir(parents=True)
    (outside / "failed_tasks.json").write_text("")
    store.failed_dir.symlink_to(outside.parent)
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env, timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "failed       0" in shown.stdout
    assert shown.stderr.splitlines() == [f"hyperion-checkpoint: warning: {store.failed_dir}: a symlink, not the "
                                         "checkpoint's own folder; not searched"]


def test_a_folder_of_the_users_own_with_a_shard_folder_per_failure_is_one_attempt(tmp_path, cli_env):
    """NEMO_CURATOR_FAILED_TASKS_DIR=.failed_tasks/nightly: Curator writes nightly/shard_<i>/failed_tasks.json.
    Each shard's folder was counted as an attempt of its own: 'failed-task records 3 in 3 attempt(s)'."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(0, 8))
    for shard in (1, 2, 3):
        (store.failed_dir / "nightly" / f"shard_{shard}").mkdir(parents=True)
        (store.failed_dir / "nightly" / f"shard_{shard}" / "failed_tasks.json").write_text("")
    (store.failed_dir / "weekly" / "shard_4").mkdir(parents=True)
    (store.failed_dir / "weekly" / "shard_4" / "failed_tasks.json").write_text("")
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env, timeout=30)
    assert "failed-task records 4 from 2 task run(s)" in shown.stdout, shown.stdout
    data = json.loads(run_cli("hyperion-checkpoint", "show", str(store.path), "--json", env=cli_env).stdout)
    assert (data["failed_records"], data["failed_attempts"]) == (4, 2)


def _assert_utf8_json(stdout: bytes) -> object:
    """What a strict consumer needs: UTF-8 bytes, JSON, and strings that are Unicode text (no lone surrogates)."""
    data = json.loads(stdout.decode("utf-8"))
    json.dumps(data, ensure_ascii=False).encode("utf-8")     # raises on a surrogate anywhere
    return data


def test_json_of_names_that_are_not_utf8_is_utf8_json_with_the_byte_spelled_as_on_the_terminal(tmp_path, cli_env):
    """A folder slurm_job_<0xe9> and a manifest named with byte 0xff came out as "\\udce9": Python reads it back,
    but it is no Unicode text, so strict readers refuse it. Every --json prints the byte as the four characters
    \\xe9, as the warnings do; a lone surrogate a record's JSON spells ("\\ud800") likewise."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(0, 8))
    store.write_completion(0)
    failed = os.fsencode(store.failed_dir) + b"/slurm_job_\xe9/array_task_5/restart_0/shard_5"
    os.makedirs(failed)
    with open(failed + b"/failed_tasks.json", "w") as handle:
        handle.write('{"error": "lone \\ud800"}\n')
    with open(os.fsencode(store.completion_dir) + b"/completed_slurm_array_\xff.json", "w") as handle:
        handle.write("{")
    runs = {"show": ["show", "--json"], "shards": ["shards", "--json"], "failed": ["failed", "--json"],
            "retry": ["retry", "--format", "json"]}
    out = {}
    for name, argv in runs.items():
        result = subprocess.run(["hyperion-checkpoint", argv[0], str(store.path), *argv[1:]], env=cli_env,
                                capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr
        out[name] = _assert_utf8_json(result.stdout)
    manifest = f"{store.completion_dir}/completed_slurm_array_\\xff.json"
    for name in ("show", "shards", "retry"):
        assert [p["path"] for p in out[name]["problems"]] == [manifest], name
    [record] = out["failed"]
    assert record["path"] == f"{store.failed_dir}/slurm_job_\\xe9/array_task_5/restart_0/shard_5/failed_tasks.json"
    assert record["slurm_job"] == "\\xe9" and record["details"] == {"error": "lone \\ud800"}


def test_a_record_linked_to_another_is_counted_once(tmp_path, cli_env):
    """A failed_tasks.json that is a symlink (to a record of the same tree, or out of it) or a second hard
    link of a record is no second failure: show counts one record, failed lists one, each link a warning."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 10))
    real = store.write_failed(4, Attempt("100", "4", "0"), {"task_ids": ["p1"], "error": "ValueError: x"})
    linked = store.failed_dir / "slurm_job_100" / "array_task_4" / "restart_1" / "shard_4" / "failed_tasks.json"
    linked.parent.mkdir(parents=True)
    linked.symlink_to(real)
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"task_ids": ["secret"]}\n')
    out_link = store.failed_dir / "slurm_job_101" / "array_task_5" / "restart_0" / "shard_5" / "failed_tasks.json"
    out_link.parent.mkdir(parents=True)
    out_link.symlink_to(outside)
    hard = store.failed_dir / "slurm_job_102" / "array_task_4" / "restart_0" / "shard_4" / "failed_tasks.json"
    hard.parent.mkdir(parents=True)
    os.link(real, hard)
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert "failed-task records 1 from 1 task run(s)" in shown.stdout
    assert "failed       1" in shown.stdout
    warnings = shown.stderr.splitlines()
    assert sum(f"{linked}: a symlink, not a regular file; skipped" in w for w in warnings) == 1, warnings
    assert sum(f"{out_link}: a symlink, not a regular file; skipped" in w for w in warnings) == 1, warnings
    assert sum(f"{hard}: the same file as {real} (a hard link); counted once" in w for w in warnings) == 1, warnings
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env)
    assert [r["path"] for r in json.loads(listed.stdout)] == [str(real)]
    assert "secret" not in listed.stdout


def test_a_record_that_is_not_json_is_not_called_an_empty_marker(tmp_path, cli_env):
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    empty = store.write_failed(1, Attempt("100", "1", "0"))
    broken = store.write_failed(2, Attempt("100", "2", "0"))
    broken.write_text("[" * 100_000)
    null = store.write_failed(3, Attempt("100", "3", "0"))
    null.write_text("null\n")
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    lines = listed.stdout.splitlines()
    assert lines[lines.index(f"    {empty}") - 1].endswith("tasks -  (empty marker, as NeMo Curator writes it)")
    assert lines[lines.index(f"    {null}") - 1].endswith("tasks -  (empty marker, as NeMo Curator writes it)")
    assert lines[lines.index(f"    {broken}") - 1].endswith("tasks -  (not JSON: details ignored)")


def test_a_failed_task_folder_nested_1000_deep_is_a_warning_not_a_traceback(tmp_path, cli_env):
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 5))
    record = store.write_failed(2, Attempt("100", "2", "0"), {"task_ids": ["p2"], "error": "ValueError: x"})
    folders = [store.failed_dir / "slurm_job_100"]
    for _ in range(1000):          # os.makedirs and shutil.rmtree recurse too deep for this tree
        folders.append(folders[-1] / "a")
        folders[-1].mkdir()
    try:
        for command in ("show", "shards", "failed"):
            result = run_cli("hyperion-checkpoint", command, str(store.path), env=cli_env, timeout=60)
            assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and "nested more than 16 levels deep in the failed-task folder; not searched" \
                in lines[0], lines
        assert str(record) in run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env).stdout
    finally:
        for folder in reversed(folders[1:]):
            folder.rmdir()


def test_failed_json_is_strict_json_when_a_record_holds_nan(tmp_path, cli_env):
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    store.write_failed(1, Attempt("100", "1", "0")).write_text('{"error": "x", "loss": NaN, "lr": -Infinity}')
    store.write_failed(2, Attempt("100", "2", "0")).write_text("Infinity")
    result = run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env)
    assert result.returncode == 0, result.stderr

    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")

    records = json.loads(result.stdout, parse_constant=refuse)
    assert len(records) == 2 and "NaN" in result.stdout and "Infinity" in result.stdout


def test_failed_json_is_strict_json_when_a_record_holds_a_number_too_large_for_a_float(tmp_path, cli_env):
    """json.loads reads 1e999 as inf, and `failed --json` printed it back as bare Infinity, which
    strict JSON readers refuse; it is kept as the text the record holds, as NaN is kept as its name."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    store.write_failed(1, Attempt("100", "1", "0")).write_text('{"error": "x", "loss": 1e999, "lr": -1E+400}')
    result = run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env)
    assert result.returncode == 0, result.stderr

    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")

    [record] = json.loads(result.stdout, parse_constant=refuse)
    assert (record["details"]["loss"], record["details"]["lr"]) == ("1e999", "-1E+400")
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env).stdout
    assert "inf" not in listed


def test_output_into_a_pipe_closed_early_is_no_traceback(tmp_path, cli_env):
    """`hyperion-checkpoint shards CK --json | head` printed a BrokenPipeError traceback, exit 1."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 50_000))
    result = subprocess.run(["bash", "-c", 'hyperion-checkpoint "$@" | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}',
                             "-", "shards", str(store.path), "--json"], env=cli_env, capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stderr) == (0, "")


def test_failed_listing_escapes_what_a_record_says(tmp_path, cli_env):
    """A failed-task record's error text is shown with its ESC visible, never sent to the terminal."""
    store = _hostile_checkpoint(tmp_path / "ck")
    result = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env, timeout=60)
    assert result.returncode == 0
    assert "\x1b" not in result.stdout + result.stderr and "\x07" not in result.stdout
    assert "tasks p1  ValueError: \\x1b]52;c;cm0gLXJmIH4=\\x07" in result.stdout


def _readable_by_all(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.parametrize("locked,warning", [
    (".nemo_curator_metadata/.failed_tasks/slurm_job_100", "slurm_job_100: cannot list this folder (Permission denied)"),
    (".nemo_curator_metadata/.failed_tasks", ".failed_tasks: cannot list this folder (Permission denied)"),
    (".nemo_curator_metadata/.slurm_array_completion/MANIFEST", "unreadable completion manifest (Permission denied)"),
])
def test_unreadable_files_and_folders_are_warnings_for_a_user_without_rights(rightless_dir, locked, warning):
    store = Checkpoint(rightless_dir / "ck")
    run = RunConfig(1, 4)
    store.ensure_run(run)
    manifest = store.write_completion(1, run)
    store.write_failed(2, Attempt("100", "2", "0"))
    _readable_by_all(store.path)
    (store.path / locked.replace("MANIFEST", manifest.name)).chmod(0o000)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(without_rights("hyperion-checkpoint", "shards", str(store.path)), env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hyperion-checkpoint: warning: ") and warning in lines[0], lines
    assert "Traceback" not in result.stderr


def test_an_unreadable_completion_folder_is_one_line_exit_2_for_a_user_without_rights(rightless_dir):
    store = Checkpoint(rightless_dir / "ck")
    store.ensure_run(RunConfig(1, 4))
    _readable_by_all(store.path)
    store.completion_dir.chmod(0o000)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(without_rights("hyperion-checkpoint", "retry", str(store.path)), env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == f"hyperion-checkpoint: error: run.json: cannot read {store.run_path}: Permission denied\n"


# --- a run of 10**12 shards: answers from the manifests found, not from total_shards ----------------

@pytest.fixture(scope="module")
def trillion(tmp_path_factory):
    store = Checkpoint(tmp_path_factory.mktemp("trillion") / "ck")
    run = RunConfig(1, 10 ** 12)
    store.ensure_run(run)
    for shard in (1, 2, 3, 10 ** 6, 10 ** 12):
        store.write_completion(shard, run)
    store.write_failed(7, Attempt("1", "7", "0"))
    return store.path


@pytest.mark.parametrize("argv,stdout", [
    (["retry", "--format", "ranges"], "4-999999,1000001-999999999999\n"),
    (["retry"], "4-999999,1000001-999999999999 0 1 1000000000000\n"),
    (["retry", "--max-array-size", "1000000000000"], "4-999999,1000001-999999999999 0 1 1000000000000\n"),
    (["retry", "--max-array-size", "400000000000"],
     "4-999999,1000001-399999999999 0 1 1000000000000\n0-399999999999 400000000000 1 1000000000000\n"
     "0-199999999999 800000000000 1 1000000000000\n"),
    (["shards"], "complete          5  1-3,1000000,1000000000000\nincomplete   999999999994  4-6,8-999999,1000001-999999999999\n"
                 "failed            1  7\n"),
])
def test_a_trillion_shards_plan_from_the_manifests(trillion, cli_env, argv, stdout):
    result = run_cli("hyperion-checkpoint", argv[0], str(trillion), *argv[1:], env=cli_env, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, stdout, "")


def test_a_trillion_shards_show_and_json_say_what_is_not_listed(trillion, cli_env):
    show = run_cli("hyperion-checkpoint", "show", str(trillion), env=cli_env, timeout=60)
    assert "complete     5" in show.stdout and "incomplete   999999999994" in show.stdout
    shards = run_cli("hyperion-checkpoint", "shards", str(trillion), "--json", env=cli_env, timeout=60)
    data = json.loads(shards.stdout)
    assert data["shards"] is None and "per-shard listing is made only up to 100000" in data["shards_omitted"]
    assert data["ranges"]["failed"] == "7" and data["counts"]["complete"] == 5
    assert shards.stderr.splitlines() == [f"hyperion-checkpoint: warning: shards: {data['shards_omitted']}"]
    plan = json.loads(run_cli("hyperion-checkpoint", "retry", str(trillion), "--format", "json",
                              env=cli_env, timeout=60).stdout)
    assert plan["missing_count"] == 10 ** 12 - 5 and len(plan["windows"]) == 1


# --- trust: a record someone else could have written is not run without --trust-record ---------------

def _retry_with_a_record(tmp_path, cli_env):
    """A local 3-shard run where shard 2 failed once; the record of that run."""
    make_input(tmp_path / "in", files=6, records=1)
    fail = next(json.loads(t.files[0].read_text())["id"] for t in list_sources(tmp_path / "in")
                if shard_for(t.task_id, 3, 1) == 2)
    run_cli("hyperion-submit", "local", "--cfg", str(SITE), "--array", "SHARD=1:3",
            "--output-file", "log/s.SHARD.log", "--", "hyperion-shard-example", "--input", "in", "--output", "out",
            "--checkpoint", "ck", "--shard-index", "SHARD", "--total-shards", "3", "--minimum-shard-index", "1",
            "--fail-record", fail, "--fail-once", cwd=tmp_path, env=cli_env)
    return tmp_path / "log" / "q" / "s.SHARD.submit.json"


@pytest.mark.parametrize("change,problem", [
    (lambda p: os.chown(p, 65534, 65534), "is owned by nobody (uid 65534), not by you"),
    (lambda p: p.chmod(0o664), "may be changed by its group (mode 0664)"),
    (lambda p: p.chmod(0o646), "may be changed by other users (mode 0646)"),
])
def test_retry_submit_refuses_a_record_others_could_have_written(tmp_path, cli_env, change, problem):
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    record = _retry_with_a_record(tmp_path, cli_env)
    change(record)
    before = sorted((tmp_path / "log").rglob("*"))
    result = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record), env=cli_env,
                     cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"hyperion-checkpoint: error: record: {record} {problem}; its command would run as you. "
        "Check it, then pass --trust-record to run it anyway"]
    assert sorted((tmp_path / "log").rglob("*")) == before      # nothing ran
    trusted = run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), "--submit", str(record),
                      "--trust-record", env=cli_env, cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr
    assert run_cli("hyperion-checkpoint", "retry", str(tmp_path / "ck"), env=cli_env).stdout == ""


def test_no_command_lists_the_commands(cli_env):
    """`hyperion-checkpoint` alone said "command: required" without naming one."""
    result = run_cli("hyperion-checkpoint", env=cli_env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("hyperion-checkpoint: error: command: required "
                             "(choose from 'show', 'shards', 'failed', 'retry')\n")



def _tracebacks_of(tasks: int) -> bytes:
    """What a failed-task record of a shard whose every task failed with a traceback holds."""
    return json.dumps({"task_ids": [f"p{i:06d}" for i in range(tasks)],
                       "errors": {f"p{i:06d}": "Traceback (most recent call last):\n" + "  File x\n" * 60
                                  for i in range(tasks)}}).encode()


@pytest.mark.parametrize("content,reason", [
    (_tracebacks_of(3000), "1.9 MiB, larger than the 1 MiB allowed"),
    (b'{"error": "cannot open caf\xe9.jsonl"}', "not UTF-8 text (byte 0xe9 at offset 26)"),
], ids=["3000 tracebacks", "latin-1 name"])
def test_a_failed_task_record_whose_details_cannot_be_read_still_marks_its_shard_failed(tmp_path, cli_env,
                                                                                         content, reason):
    """A record's existence is the failure (Curator writes empty markers): one of 3000 tracebacks that
    is over the 1 MiB read cap, or that holds a Latin-1 file name, made its shard 'incomplete' (never
    ran?) and vanished from `failed`. It counts, with a warning saying why its details are not shown."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 4))
    store.write_completion(1)
    path = store.write_failed(2, Attempt("100", "2", "0"), {"error": "x"})
    path.write_bytes(content)
    warning = f"hyperion-checkpoint: warning: {path}: failed-task record's details cannot be read ({reason}); " \
              "counted, details ignored"
    shards = run_cli("hyperion-checkpoint", "shards", str(store.path), env=cli_env)
    assert shards.stdout.splitlines() == ["complete          1  1", "incomplete        2  3-4", "failed            1  2"]
    assert shards.stderr.splitlines() == [warning]
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env)
    assert "failed-task records 1 from 1 task run(s)" in shown.stdout
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert listed.stdout.splitlines()[0] == f"shard 2  job 100  array_task 2  restart 0  tasks -  ({reason}: details ignored)"
    assert listed.stderr.splitlines() == [warning]


def test_a_manifest_just_over_the_cap_says_by_how_much(tmp_path, cli_env):
    """Sizes were rounded down: a 1.1 MiB manifest was "1 MiB, larger than the 1 MiB allowed"."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 2))
    big = store.completion_dir / "completed_slurm_array_big.json"
    big.write_bytes(b'{"status":"completed"' + b" " * 1_100_000 + b"}")
    result = run_cli("hyperion-checkpoint", "retry", str(store.path), env=cli_env)
    assert result.stderr.splitlines() == [f"hyperion-checkpoint: warning: {big}: unreadable completion manifest "
                                          "(1.1 MiB, larger than the 1 MiB allowed); skipped"]


@pytest.mark.parametrize("blocked", [".nemo_curator_metadata", ".nemo_curator_metadata/.slurm_array_completion"])
@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_file_where_a_metadata_folder_belongs_is_named_not_a_missing_run_json(tmp_path, cli_env, blocked, kind):
    """`run.json: not found ...; use the checkpoint path of the original array run` sent the user
    looking for another checkpoint, when this one's folder had been replaced by a file."""
    ck = tmp_path / "ck"
    place = ck / blocked
    place.parent.mkdir(parents=True)
    if kind == "fifo":
        make_fifo(place)
    else:
        place.write_text("")
    what = "a FIFO" if kind == "fifo" else "a file"
    for command in ("show", "shards", "retry"):
        result = run_cli("hyperion-checkpoint", command, str(ck), env=cli_env, timeout=30)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr.splitlines() == [
            f"hyperion-checkpoint: error: run.json: cannot read {ck}/.nemo_curator_metadata/.slurm_array_completion/"
            f"run.json: {place} is {what}, not a folder"]


def test_show_does_not_call_a_counted_record_a_skipped_file(tmp_path, cli_env):
    """A failed-task record that is not JSON counts (its shard is failed); `show` said "skipped files 1"."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    store.write_failed(2, Attempt("100", "2", "0"), {"error": "x"}).write_text("Traceback (most recent ...\n")
    (store.completion_dir / "completed_slurm_array_bad.json").write_text("{")
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env)
    assert shown.stdout.splitlines()[-4:] == [
        "failed       1", "failed-task records 1 from 1 task run(s)", "skipped files 1 (see warnings)",
        "failed-task records without readable details 1 (see warnings)"]


def test_failed_says_which_failures_a_later_attempt_completed(tmp_path, cli_env):
    """After a retry succeeded, `failed` still listed the first attempt's failure as it was, and a user
    took the shard for failing still; it now says the shard is complete since (text and JSON)."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 4))
    store.write_failed(2, Attempt("100", "2", "0"), {"task_ids": ["p1"], "error": "ValueError: x"})
    store.write_failed(3, Attempt("100", "3", "0"), {"task_ids": ["p2"], "error": "ValueError: y"})
    store.write_completion(2)
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    lines = [line for line in listed.stdout.splitlines() if line.startswith("shard ")]
    assert lines == ["shard 2  job 100  array_task 2  restart 0  tasks p1  ValueError: x  (shard complete since)",
                     "shard 3  job 100  array_task 3  restart 0  tasks p2  ValueError: y"]
    as_json = json.loads(run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env).stdout)
    assert [(r["shard"], r["shard_complete"]) for r in as_json] == [(2, True), (3, False)]


def test_a_rerun_of_a_complete_shard_that_failed_is_not_complete_since(tmp_path, cli_env):
    """A user ran an array of 3 (job 100; shard A failed), reran A (job 101: complete), then reran
    complete shard B by hand (job 102) and it failed. `failed` said "(shard complete since)" of
    B's new failure too, and `show` counted it among the old failures: B's manifest is older than
    the failure. Both shards keep their manifests, so retry plans nothing, as the line says."""
    make_input(tmp_path / "in", files=6, records=2)
    shard_of = {t.task_id: shard_for(t.task_id, 3, 0) for t in list_sources(tmp_path / "in")}
    a, b = sorted(set(shard_of.values()))[:2]
    doc_in = {shard: f"doc-{int(task[1:]):04d}-0001" for task, shard in sorted(shard_of.items(), reverse=True)}

    def array_task(job: str, shard: int, *extra: str) -> int:
        env = {**cli_env, "SLURM_JOB_ID": job, "SLURM_ARRAY_TASK_ID": str(shard), "SLURM_ARRAY_TASK_COUNT": "3",
               "SLURM_RESTART_COUNT": "0"}
        return run_cli("hyperion-shard-example", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                       "--checkpoint", str(tmp_path / "ck"), *extra, env=env).returncode

    assert [array_task("100", s, "--fail-record", doc_in[a]) for s in range(3)] == [int(s == a) for s in range(3)]
    assert array_task("101", a) == 0                                   # the retry completed A
    assert array_task("102", b, "--fail-record", doc_in[b]) == 1       # the rerun of complete B failed
    store = Checkpoint(tmp_path / "ck")
    done = {s: (store.completion_dir / manifest_name(RunConfig(0, 3), s)).stat().st_mtime for s in (a, b)}
    failed_at = {r.job: r.mtime for r in store.failed_records()}
    assert failed_at["100"] < done[a] and done[b] < failed_at["102"]   # what the files say

    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines() if line.startswith("shard ")]
    assert [line.split("  (", 1)[1] for line in lines] == [
        "shard complete since)", "failed after its shard completed; retry skips the shard)"]
    assert lines[1].startswith(f"shard {b}  job 102  array_task {b}  restart 0  tasks ")
    as_json = json.loads(run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env).stdout)
    assert [(r["slurm_job"], r["shard_complete"], r["complete_since"]) for r in as_json] == [
        ("100", True, True), ("102", True, False)]
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env).stdout.splitlines()
    assert shown[shown.index("failed-task records 2 from 2 task run(s)") + 1:][:2] == [
        "  1 of them for shards complete since (a later attempt completed them)",
        "  1 of them after their shard completed (a rerun failed; the shard's manifest stands: retry skips it)"]
    data = json.loads(run_cli("hyperion-checkpoint", "show", str(store.path), "--json", env=cli_env).stdout)
    assert (data["counts"]["complete"], data["failed_records_complete_since"],
            data["failed_records_after_completion"]) == (3, 1, 1)
    retry = run_cli("hyperion-checkpoint", "retry", str(store.path), env=cli_env)
    assert (retry.returncode, retry.stdout) == (0, "")                 # the manifest stands: B is not planned


@pytest.mark.parametrize(("task_ids", "shown"), [
    (["p000003", "p000004"], "tasks p000003,p000004  boom"),          # Hyperion's own writer
    ([3, 4], "tasks 3,4  boom"),
    ("p000003", "tasks p000003  boom"),                                # a user's writer: one id
    ("p000003, p000004", "tasks p000003,p000004  boom"),               # ids in one string
    (7, "tasks 7  boom"),
    ([f"p{i:06d}" for i in range(100_000)],
     "tasks " + ",".join(f"p{i:06d}" for i in range(12)) + " (+99988 more)  boom"),
    (["x" * 500], "tasks " + "x" * 40 + "...  boom"),
    ({"a": 1}, "tasks (unreadable task_ids: a JSON object)  boom"),
    ([1, [2]], "tasks (unreadable task_ids: item 2 is a list)  boom"),
    (True, "tasks (unreadable task_ids: true/false)  boom"),
    ([], "tasks -  boom"),
])
def test_failed_shows_every_form_of_task_ids_a_record_may_hold(tmp_path, cli_env, task_ids, shown):
    """A string was shown as 'tasks -', as if the record named no task; a list of objects as
    their Python reprs; 100,000 ids as 200 characters of them and no count."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    store.write_failed(2, Attempt("100", "2", "0"), {"task_ids": task_ids, "error": "boom"})
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0] == f"shard 2  job 100  array_task 2  restart 0  {shown}"


def test_failed_shows_the_task_id_of_curators_draft_marker(tmp_path, cli_env):
    """An unreleased NeMo Curator wrote {"stage_name", "task_id"}; its id is shown, not '-'."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    store.write_failed(2, Attempt("100", "2", "0"), {"stage_name": "Reader", "task_id": "p000002_0"})
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert listed.stdout.splitlines()[0] == "shard 2  job 100  array_task 2  restart 0  tasks p000002_0  (no error text)"


def test_json_problems_say_whether_the_file_still_counts(tmp_path, cli_env):
    """A failed-task record that is not JSON still makes its shard failed; a corrupt manifest is
    skipped and its shard may be complete. The JSON lists gave both as a path and a message only."""
    store = Checkpoint(tmp_path / "ck")
    run = RunConfig(1, 3)
    store.ensure_run(run)
    store.write_completion(1)
    broken = store.write_failed(2, Attempt("100", "2", "0"))
    broken.write_text("{not json")
    manifest = store.write_completion(3)
    manifest.write_text("{")
    expected = {str(broken): (True, False), str(manifest): (False, True)}
    for argv in (["show", "--json"], ["shards", "--json"], ["retry", "--format", "json"]):
        result = run_cli("hyperion-checkpoint", argv[0], str(store.path), *argv[1:], env=cli_env)
        assert result.returncode == 0, result.stderr
        problems = json.loads(result.stdout)["problems"]
        assert {p["path"]: (p["counted"], p["unknown"]) for p in problems} == (
            expected if argv[0] != "retry" else {str(manifest): (False, True)}), argv


def test_status_is_show(big, cli_env):
    """`hyperion-jobs status` shows a run's counts; `hyperion-checkpoint status` was an invalid choice."""
    shown = run_cli("hyperion-checkpoint", "show", str(big), env=cli_env)
    status = run_cli("hyperion-checkpoint", "status", str(big), env=cli_env)
    assert status.returncode == 0 and status.stdout == shown.stdout and "complete     2995" in status.stdout
    assert json.loads(run_cli("hyperion-checkpoint", "status", str(big), "--json", env=cli_env).stdout)["counts"] \
        == {"complete": 2995, "incomplete": 5, "failed": 0}


def test_show_says_how_many_failed_records_are_of_shards_complete_since(tmp_path, cli_env):
    """After the last retry completed every shard, show said 'failed 0' and 'failed-task records 2'
    with nothing telling the two apart."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 3))
    for shard in (1, 2):
        store.write_failed(shard, Attempt("100", str(shard), "0"), {"task_ids": [f"p{shard}"], "error": "x"})
    for shard in (1, 3):
        store.write_completion(shard)
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env)
    lines = shown.stdout.splitlines()
    assert lines[lines.index("failed-task records 2 from 2 task run(s)") + 1] == \
        "  1 of them for shards complete since (a later attempt completed them)"
    data = json.loads(run_cli("hyperion-checkpoint", "show", str(store.path), "--json", env=cli_env).stdout)
    assert (data["failed_records"], data["failed_records_complete_since"]) == (2, 1)


def test_status_help_names_status_and_the_listing_names_it_once(capsys):
    """`hyperion-checkpoint status --help` printed `usage: hyperion-checkpoint show ...` (an argparse
    alias runs its name's parser): a user who typed `status` read of a command they had not."""
    from sharding.cli import main

    for command in ("status", "show"):
        with pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert done.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: hyperion-checkpoint {command} [-h]"), out
        assert "--checkpoint-path" in out and "--json" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    assert listing.count("status") == 1 and "show (status)" in listing, listing
