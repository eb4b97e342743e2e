"""Checkpoint store: Curator's byte layout, atomic run.json, tolerant readers."""
import errno
import json
import multiprocessing
import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import run_cli

from sharding.errors import ShardingError
from sharding.store import Attempt, Checkpoint, RunConfig, manifest_name

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints"
COMPLETION = Path(".nemo_curator_metadata/.slurm_array_completion")


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_run_json_is_compact_sorted_json_at_curators_path(tmp_path):
    store = Checkpoint(tmp_path)
    assert store.ensure_run(RunConfig(1, 20)) is True
    assert (tmp_path / COMPLETION / "run.json").read_text() == '{"minimum_shard_index":1,"total_shards":20}\n'  # Curator ends it with a newline
    assert store.ensure_run(RunConfig(1, 20)) is False
    assert store.read_run() == RunConfig(1, 20)
    assert [p.name for p in (tmp_path / COMPLETION).iterdir()] == ["run.json"]  # no temp files left


def test_a_different_run_is_refused_naming_both_values(tmp_path):
    store = Checkpoint(tmp_path)
    store.ensure_run(RunConfig(1, 20))
    with pytest.raises(ShardingError) as err:
        store.ensure_run(RunConfig(0, 20))
    message = str(err.value)
    assert '{"minimum_shard_index":1,"total_shards":20}' in message
    assert '{"minimum_shard_index":0,"total_shards":20}' in message
    assert "separate checkpoint path" in message
    assert store.read_run() == RunConfig(1, 20)


def test_completion_manifest_name_and_payload_match_curator(tmp_path):
    store = Checkpoint(tmp_path)
    run = RunConfig(0, 3)
    store.ensure_run(run)
    path = store.write_completion(0)
    # The name Curator's docs show for shard 0 of a 3-shard run starting at 0.
    assert path.name == "completed_slurm_array_3800bd4ecff9e7f6.json"
    assert path.read_text() == '{"minimum_shard_index":0,"shard_index":0,"status":"completed","total_shards":3}\n'
    assert store.write_completion(0) == path  # idempotent
    assert store.completed() == ({0}, [])


def test_completion_needs_run_json_and_a_shard_in_range(tmp_path):
    store = Checkpoint(tmp_path)
    with pytest.raises(ShardingError, match="run.json"):
        store.write_completion(1)
    store.ensure_run(RunConfig(1, 4))
    with pytest.raises(ShardingError, match=r"outside the shard range \[1, 4\]"):
        store.write_completion(5)


def test_a_corrupt_run_json_is_an_error_not_a_crash(tmp_path):
    (tmp_path / COMPLETION).mkdir(parents=True)
    for text in ("{", "[]", '{"minimum_shard_index":"1","total_shards":2}', '{"minimum_shard_index":0,"total_shards":0}'):
        (tmp_path / COMPLETION / "run.json").write_text(text)
        with pytest.raises(ShardingError) as err:
            Checkpoint(tmp_path).read_run()
        assert err.value.field == "run.json"


def test_curator_fixture_reads_as_curator_wrote_it(tmp_path):
    root = _copy("curator_partial", tmp_path)
    store = Checkpoint(root)
    assert store.read_run() == RunConfig(0, 8)
    assert store.completed() == ({0, 1, 2, 4, 5, 7}, [])
    records, problems = store.scan_failed()
    assert problems == []
    assert sorted((r.job, r.array_task, r.restart, r.shard, r.details) for r in records) == [
        ("1001", "3", "0", 3, None), ("1001", "5", "0", 5, None), ("1012", "0", "1", 3, None)]


def test_corrupt_and_foreign_files_are_reported_and_kept(tmp_path):
    root = _copy("corrupt", tmp_path)
    before = _tree(root)
    store = Checkpoint(root)
    done, problems = store.completed()
    assert done == {1, 2, 3, 4, 5, 6}
    messages = {Path(p.path).name: p.message for p in problems}
    assert len(messages) == 6
    assert "unreadable" in messages["completed_slurm_array_00000000truncated.json"]
    assert "not a JSON object" in messages["completed_slurm_array_0000000000list.json"]
    assert "outside the run's range" in messages["completed_slurm_array_00000000000099.json"]
    assert "lacks integer shard_index" in messages["completed_slurm_array_0000000000bool.json"]
    assert any("status 'pending'" in m for m in messages.values())
    assert any("another run" in m and "total_shards=20" in m for m in messages.values())
    records, failed_problems = store.scan_failed()
    by_shard = {r.shard: r for r in records}
    assert by_shard[9].details == {"task_ids": ["p000004"], "error": "ValueError: bad record"}
    assert by_shard[10].details is None  # unreadable JSON: still counts as a failure
    assert sorted(Path(p.path).parent.name for p in failed_problems) == ["shard_10"]
    assert Path(by_shard[None].path).parent.name == "stray"   # a user's own failed-task folder: no shard's failure
    assert _tree(root) == before  # readers never delete or rewrite


def test_failed_records_are_attempt_scoped(tmp_path):
    store = Checkpoint(tmp_path)
    env = {"SLURM_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": "4", "SLURM_RESTART_COUNT": "2"}
    first = store.write_failed(5, Attempt.from_env(env), {"task_ids": ["p000001"]})
    assert first.relative_to(tmp_path).as_posix() == (
        ".nemo_curator_metadata/.failed_tasks/slurm_job_77/array_task_4/restart_2/shard_5/failed_tasks.json")
    local = store.write_failed(5, Attempt.from_env({}))
    assert f"slurm_job_local_{os.getpid()}/array_task_local/restart_0/shard_5" in local.as_posix()
    assert local.read_text() == ""
    assert {r.path for r in store.failed_records()} == {str(first), str(local)}


def test_a_local_run_whose_pid_came_round_again_keeps_the_earlier_runs_failed_record(tmp_path):
    """A local run has no job id: its records are named after the worker's pid (local_<pid>), and
    pids come round again (pid_max is 32768 on many login nodes). A later run of the same shard
    that got the same pid replaced the earlier run's record: its failed tasks were gone."""
    store = Checkpoint(tmp_path)
    same_pid = Attempt(job="local_4242", array_task="local", restart="0")
    first = store.write_failed(5, same_pid, {"task_ids": ["p000001"], "error": "ValueError: first run"})
    later = store.write_failed(5, same_pid, {"task_ids": ["p000002"], "error": "OSError: later run"})
    assert first != later
    kept = {r.details["error"] for r in store.failed_records()}
    assert kept == {"ValueError: first run", "OSError: later run"}


def _race(path, total, barrier, results):
    barrier.wait()
    try:
        results.put(("created" if Checkpoint(path).ensure_run(RunConfig(0, total)) else "validated", total))
    except ShardingError as exc:
        results.put(("refused", total, str(exc)))


@pytest.mark.parametrize("totals", [(10, 10), (10, 11)])
def test_two_processes_creating_run_json_at_once(tmp_path, totals):
    ctx = multiprocessing.get_context("fork")
    for attempt in range(5):
        path = tmp_path / f"ck{attempt}"
        barrier, results = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(path, t, barrier, results)) for t in totals]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        outcomes = sorted(results.get(timeout=5)[0] for _ in procs)
        winner = Checkpoint(path).read_run()
        if totals[0] == totals[1]:
            assert outcomes == ["created", "validated"]
        else:
            assert outcomes == ["created", "refused"]
        assert winner is not None and winner.total_shards in totals
        assert json.loads((path / COMPLETION / "run.json").read_text()) == winner.payload()
        assert [p.name for p in (path / COMPLETION).iterdir()] == ["run.json"]


# --- shared filesystems and the umask (issue 13) ---------------------------------------------------
# NFS and Lustre mounts may refuse to fsync a directory, and a temp file may
# not be removable after the rename; NeMo Curator's writer goes on in both
# cases. Neither can be provoked on a local disk, so the system calls raise here.

def _refuse_directory_fsync(monkeypatch):
    real = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_directory_that_cannot_be_fsynced_is_a_warning_and_the_write_goes_on(tmp_path, monkeypatch, capsys):
    _refuse_directory_fsync(monkeypatch)
    store = Checkpoint(tmp_path)
    assert store.ensure_run(RunConfig(1, 4)) is True
    path = store.write_completion(2)
    assert store.completed() == ({2}, [])
    assert path.read_text().endswith("\n")
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 2 and all("cannot fsync the directory (Invalid argument)" in w for w in warnings)
    assert all(": warning: " in w for w in warnings)


def test_a_temp_file_that_cannot_be_removed_after_the_link_is_a_warning(tmp_path, monkeypatch, capsys):
    real = Path.unlink

    def unlink(self, missing_ok=False):
        if self.name.startswith(".tmp-"):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    store = Checkpoint(tmp_path)
    assert store.ensure_run(RunConfig(1, 4)) is True
    assert store.read_run() == RunConfig(1, 4)
    err = capsys.readouterr().err
    assert "cannot remove the temporary file (Permission denied); it is ignored by readers" in err
    assert store.completed() == (set(), [])     # the stray .tmp-*.json is not read as a manifest


def test_every_json_file_ends_with_a_newline_as_curators_writer_does(tmp_path):
    store = Checkpoint(tmp_path)
    store.ensure_run(RunConfig(0, 2))
    manifest = store.write_completion(1)
    record = store.write_failed(1, Attempt("9", "1", "0"), {"task_ids": ["p1"]})
    for path in (store.run_path, manifest, record):
        text = path.read_text()
        assert text.endswith("}\n") and text.count("\n") == 1, path


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_checkpoint_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        store = Checkpoint(tmp_path)
        store.ensure_run(RunConfig(0, 2))
        written = [store.run_path, store.write_completion(0), store.write_failed(1, Attempt("9", "1", "0"))]
    finally:
        os.umask(old)
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in written} == {oct(mode)}


@pytest.mark.parametrize("number", ["9" * 5000, "9" * 20, "-" + "9" * 4400])
def test_a_number_too_long_for_any_shard_is_a_skipped_manifest_not_a_traceback(tmp_path, number):
    store = Checkpoint(tmp_path)
    store.ensure_run(RunConfig(1, 3))
    bad = store.completion_dir / "completed_slurm_array_bad.json"
    bad.write_text('{"minimum_shard_index":1,"shard_index":%s,"status":"completed","total_shards":3}' % number)
    done, problems = store.completed()
    assert done == set() and len(problems) == 1
    assert f"a number of {len(number.lstrip('-'))} digits (at most 19)" in problems[0].message


@pytest.mark.parametrize("payload,said", [
    ("{}", "completion manifest has no status (a completed shard's says 'completed'); skipped"),
    ('{"status": null}', "completion manifest has no status (a completed shard's says 'completed'); skipped"),
    ('{"status": true}', "completion manifest has status true, not 'completed'; skipped"),
    ('{"status": [[]]}', "completion manifest has a list for its status, not 'completed'; skipped"),
    ('{"status": "done"}', "completion manifest has status 'done', not 'completed'; skipped"),
], ids=["empty", "null", "true", "list", "done"])
def test_a_manifest_without_a_status_says_so_not_pythons_none(tmp_path, cli_env, payload, said):
    """`{}` (or `"status": null`) was said as "completion manifest has status None, not 'completed'"
    in show and in the console: Python's None, a word the file never held."""
    store = Checkpoint(tmp_path)
    store.ensure_run(RunConfig(0, 2))
    store.write_completion(0)
    bad = store.completion_dir / "completed_slurm_array_bad.json"
    bad.write_text(payload)
    done, problems = store.completed()
    assert done == {0} and [p.message for p in problems] == [said]
    shown = run_cli("hyperion-checkpoint", "show", str(tmp_path), env=cli_env, timeout=60)
    assert f"hyperion-checkpoint: warning: {bad}: {said}\n" in shown.stderr and "None" not in shown.stderr


def test_curators_record_of_a_run_without_array_is_no_warning_and_a_long_shard_says_why(tmp_path):
    """Curator writes ``.failed_tasks/local_attempt_<uuid>/failed_tasks.json`` for a run without an array:
    it is no shard's failure and not a layout problem. A 20-digit shard folder is an integer, too long:
    its record is kept under no shard (a user's own folder name must not lose a failure)."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(0, 4))
    local = store.failed_dir / "local_attempt_6f1c0d2e" / "failed_tasks.json"
    local.parent.mkdir(parents=True)
    local.write_text('{"task_ids": ["p000001"]}\n')
    long_shard = store.failed_dir / "slurm_job_1" / "array_task_0" / "restart_0" / f"shard_{'9' * 20}"
    long_shard.mkdir(parents=True)
    (long_shard / "failed_tasks.json").write_text("{}\n")
    records, problems = store.scan_failed()
    assert [(Path(r.path).parent.name, r.shard, r.job) for r in records] == [(long_shard.name, None, "1")]
    assert [(Path(p.path).parent.name, p.message, p.counted) for p in problems] == [
        (long_shard.name, f"failed-task record whose shard '{'9' * 20}' is more than 19 digits: listed under "
         "no shard", True)]


def test_a_record_in_a_shard_folder_the_user_named_is_listed_under_no_shard(tmp_path, cli_env):
    """NEMO_CURATOR_FAILED_TASKS_DIR=.failed_tasks/shard_3_retry (Curator lets the folder vary): the record
    was skipped with a warning, and `failed` did not list a failure the user's run had written."""
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 4))
    own = store.failed_dir / "shard_3_retry" / "failed_tasks.json"
    own.parent.mkdir(parents=True)
    own.write_text('{"task_ids": ["p000003"], "errors": ["OSError: disk full"]}\n')
    failed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert failed.returncode == 0, failed.stderr
    assert "tasks p000003  OSError: disk full" in failed.stdout
    assert f"{own}: failed-task record whose shard '3_retry' is not an integer: listed under no shard" \
        in failed.stderr
    shown = run_cli("hyperion-checkpoint", "show", str(store.path), env=cli_env).stdout
    assert "failed-task records 1 " in shown and "1 in folders naming no shard_<i>" in shown
    assert "incomplete   4" in shown                      # no shard made failed by it
    assert "without readable details" not in shown         # its details read


def test_a_read_whose_stop_event_is_set_ends_with_read_stopped(tmp_path):
    """The console's read of a checkpoint the user quit: no result, and no file read after the stop."""
    import threading

    from sharding.coverage import coverage
    from sharding.errors import ReadStopped

    store = Checkpoint(tmp_path / "ck")
    run = RunConfig(1, 4)
    store.ensure_run(run)
    for shard in (1, 2):
        store.write_completion(shard, run)
    stop = threading.Event()
    assert coverage(store.path, stop).completed == (1, 2)
    stop.set()
    with pytest.raises(ReadStopped):
        coverage(store.path, stop)
    store.write_failed(3, Attempt("5", "3", "0"), {})
    with pytest.raises(ReadStopped):
        Checkpoint(store.path, stop).scan_failed()


@pytest.mark.parametrize(("failed_at", "completed_at", "standing"), [
    (100.0, None, "failing"),            # no manifest: the shard is failed
    (100.0, 200.0, "complete_since"),    # a later attempt completed it: an old failure
    (100.0, 100.0, "complete_since"),    # one second of a coarse filesystem: the manifest's word
    (200.0, 100.0, "failed_after"),      # a rerun of the complete shard failed after it completed
])
def test_a_failure_is_complete_since_only_when_its_shard_completed_at_or_after_it(failed_at, completed_at,
                                                                                    standing):
    """A failure newer than its shard's manifest was said "complete since" because the shard had one."""
    from sharding.coverage import standing_of

    assert standing_of(failed_at, completed_at).value == standing


def test_coverage_tells_a_failure_after_the_completion_from_one_a_later_attempt_completed(tmp_path):
    """Shard 2 failed, then completed; shard 3 completed, then a rerun of it failed; shard 4 failed.
    Both 2 and 3 are complete (their manifests stand: retry skips both), only 2's failure is old."""
    from sharding.coverage import Standing, coverage
    from sharding.retry import plan_retry

    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 4))
    times = {}
    for name, path in (("old", store.write_failed(2, Attempt("100", "2", "0"), {"error": "x"})),
                       ("done2", store.write_completion(2)), ("done3", store.write_completion(3)),
                       ("after", store.write_failed(3, Attempt("101", "3", "0"), {"error": "y"})),
                       ("fail4", store.write_failed(4, Attempt("100", "4", "0"), {"error": "z"}))):
        times[name] = 1_790_000_000 + 60 * len(times)      # a minute apart, in this order
        os.utime(path, (times[name], times[name]))
    assert store.completion_times()[0] == {2: times["done2"], 3: times["done3"]}
    cov = coverage(store.path)
    assert {r.shard: cov.standing(r) for r in cov.failed} == {
        2: Standing.COMPLETE_SINCE, 3: Standing.FAILED_AFTER, 4: Standing.FAILING}
    assert [r.shard for r in cov.failed if cov.complete_since(r)] == [2]
    assert cov.completed == (2, 3) and cov.failed_shards == (4,)
    assert plan_retry(store.path).expression == "1,4"
    # told apart from the plan, the same from the records read (coverage) as from their mtimes alone
    assert cov.failed_after == plan_retry(store.path).failed_after == (3,)
    assert store.failure_times() == {2: times["old"], 3: times["after"], 4: times["fail4"]}
    assert store.failure_times({3, 5}) == {3: times["after"]}     # a retry asks of the complete ones alone


def test_a_failed_record_hard_linked_into_another_complete_shard_counts_once_for_retry_as_for_failed(tmp_path):
    """Retry's quick walk counted the second name too: it said shard 3 failed after it completed
    while `shards` and `failed` (which count a hard link once) did not."""
    from sharding.coverage import coverage
    from sharding.retry import plan_retry

    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 6))
    for shard in (2, 3):
        os.utime(store.write_completion(shard), (1_790_000_000, 1_790_000_000))
    record = store.write_failed(2, Attempt("101", "2", "0"), {"error": "y"})
    os.utime(record, (1_790_000_100, 1_790_000_100))
    second = Path(str(record).replace("array_task_2", "array_task_3").replace("shard_2", "shard_3"))
    second.parent.mkdir(parents=True)
    os.link(record, second)
    assert coverage(store.path).failed_after == plan_retry(store.path).failed_after == (2,)


def test_the_retry_note_of_several_shards_failed_after_completion_names_one_manifest_whole(tmp_path):
    """What to remove to rerun one, as a path a user can paste (not a name pattern), one shell word
    in a folder whose name holds a space."""
    import shlex

    from sharding.retry import plan_retry, skipped_line

    store = Checkpoint(tmp_path / "speech ck")
    run = RunConfig(1, 6)
    store.ensure_run(run)
    for shard in (2, 3, 5):
        done = store.write_completion(shard)
        os.utime(done, (1_790_000_000, 1_790_000_000))
        store.write_failed(shard, Attempt("101", str(shard), "0"), {"error": "y"})
    assert skipped_line(plan_retry(store.path)) == (
        "3 shards (2-3,5) have a failure newer than their completion manifest (a rerun failed after they "
        "completed): retry skips them because the manifest says complete; to rerun one, remove its manifest "
        f"(shard 2's: {shlex.quote(str(store.completion_dir / manifest_name(run, 2)))}), then retry again")
    assert "'" in skipped_line(plan_retry(store.path))
