"""A failed-task record names its task as hyperion-jobs does, `12358_6` (array job _ array task).

Its `slurm_job_<J>` folder holds the task's own job id (SLURM_JOB_ID, `12364`), which
`hyperion-submit`, `hyperion-jobs` and the console never show: `failed` said `job 12364` of the
task they call `12358_6`. Hyperion's writer now also records SLURM_ARRAY_JOB_ID and
SLURM_ARRAY_TASK_ID (extra keys Curator's readers ignore); every face naming a record's job shows
`12358_6` where the record gives both, else the folder's job (Curator's records, older ones).
"""
import json
from pathlib import Path

import pytest
from conftest import run_cli

from hyperion_console.screens.checkpoint import failed_cells
from sharding.failed_text import job_text, record_line
from sharding.store import ARRAY_JOB_KEY, ARRAY_TASK_KEY, Attempt, Checkpoint, RunConfig

SLURM_ENV = {"SLURM_JOB_ID": "12364", "SLURM_ARRAY_JOB_ID": "12358", "SLURM_ARRAY_TASK_ID": "6",
             "SLURM_RESTART_COUNT": "0"}
DETAILS = {"task_ids": ["p000003"], "error": "ValueError: x"}


def _store(tmp_path: Path) -> Checkpoint:
    store = Checkpoint(tmp_path / "ck")
    store.ensure_run(RunConfig(1, 8))
    return store


def _one(store: Checkpoint):
    (record,) = store.failed_records()
    return record


def test_the_writer_records_the_array_job_and_task_and_every_face_names_the_task_so(tmp_path, cli_env):
    store = _store(tmp_path)
    path = store.write_failed(6, Attempt.from_env(SLURM_ENV), DETAILS)
    assert "slurm_job_12364/array_task_6/restart_0/shard_6" in path.as_posix()     # Curator's folders, unchanged
    assert json.loads(path.read_text()) == {**DETAILS, ARRAY_JOB_KEY: "12358", ARRAY_TASK_KEY: "6"}
    record = _one(store)
    assert (record.job, record.array_id, job_text(record)) == ("12364", "12358_6", "12358_6")
    assert record_line(record, None) == "shard 6  job 12358_6  array_task 6  restart 0  tasks p000003  ValueError: x"
    assert failed_cells(record)["job"].plain == "12358_6"       # the console's Failed table
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert listed.stdout.splitlines()[0].startswith("shard 6  job 12358_6  array_task 6"), listed.stdout
    (as_json,) = json.loads(run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env).stdout)
    assert (as_json["slurm_job"], as_json["slurm_id"], as_json["array_task"]) == ("12364", "12358_6", "6")


def test_an_old_record_and_curators_empty_marker_are_named_by_their_folders_job(tmp_path, cli_env):
    store = _store(tmp_path)
    store.write_failed(6, Attempt("12364", "6", "0"), DETAILS)          # written before the keys
    marker = store.write_failed(7, Attempt.from_env({**SLURM_ENV, "SLURM_ARRAY_TASK_ID": "7"}))
    assert marker.read_text() == ""        # an empty marker stays Curator's empty file
    records = {r.shard: r for r in store.failed_records()}
    assert [(records[s].array_id, job_text(records[s])) for s in (6, 7)] == [(None, "12364"), (None, "12364")]
    lines = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env).stdout.splitlines()
    assert [line for line in lines if line.startswith("shard ")] == [
        "shard 6  job 12364  array_task 6  restart 0  tasks p000003  ValueError: x",
        "shard 7  job 12364  array_task 7  restart 0  tasks -  (empty marker, as NeMo Curator writes it)"]
    as_json = json.loads(run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env).stdout)
    assert [r["slurm_id"] for r in as_json] == ["12364", "12364"]


def test_a_local_run_and_a_job_that_is_no_array_record_no_array_keys(tmp_path):
    store = _store(tmp_path)
    local = store.write_failed(2, Attempt.from_env({"SLURM_ARRAY_JOB_ID": "12358", "SLURM_ARRAY_TASK_ID": "2"}), DETAILS)
    plain = store.write_failed(3, Attempt.from_env({"SLURM_JOB_ID": "900"}), DETAILS)
    assert json.loads(local.read_text()) == DETAILS and json.loads(plain.read_text()) == DETAILS
    assert [job_text(r) for r in sorted(store.failed_records(), key=lambda r: r.shard)] == [
        Path(local).parts[-5][len("slurm_job_"):], "900"]


def test_array_ids_given_as_integers_are_read(tmp_path):
    store = _store(tmp_path)
    store.write_failed(6, Attempt("12364", "6", "0"), {**DETAILS, ARRAY_JOB_KEY: 12358, ARRAY_TASK_KEY: 6})
    assert _one(store).array_id == "12358_6"


def test_a_users_own_folder_naming_no_array_task_takes_the_records_array_task(tmp_path):
    store = _store(tmp_path)
    own = store.failed_dir / "my_attempt" / "shard_6" / "failed_tasks.json"
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps({**DETAILS, ARRAY_JOB_KEY: "12358", ARRAY_TASK_KEY: "6"}))
    record = _one(store)
    assert (record.job, job_text(record)) == (None, "12358_6")


HOSTILE = [
    ("12358\x1b]0;owned\x07", "6"), ("12358", "6\n"), ("-12358", "6"), ("12358", "-6"), ("1" * 20, "6"),
    ("12358", "9" * 5000), (" 12358", "6"), ("١٢٣", "6"), ("12358", "６"), (True, "6"), ("12358", False),
    (1.5, "6"), (None, "6"), ("12358", None), ([12358], "6"), ({"id": 12358}, "6"), ("", "6"), ("12358", ""),
    ("12358", "7"),                     # contradicts its array_task_6 folder
    ("12358_6", "6"), ("12358", "6 (x)"), (2 ** 63, "6"),
]


@pytest.mark.parametrize("array_job, array_task", HOSTILE)
def test_hostile_array_ids_are_never_shown_and_never_crash(tmp_path, cli_env, array_job, array_task):
    store = _store(tmp_path)
    path = store.write_failed(6, Attempt("12364", "6", "0"), DETAILS)
    path.write_text(json.dumps({**DETAILS, ARRAY_JOB_KEY: array_job, ARRAY_TASK_KEY: array_task}))
    record = _one(store)
    assert (record.array_id, job_text(record)) == (None, "12364")
    assert failed_cells(record)["job"].plain == "12364"
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert listed.returncode == 0 and "\x1b" not in listed.stdout + listed.stderr, listed.stderr
    assert listed.stdout.splitlines()[0].startswith("shard 6  job 12364  array_task 6  restart 0  tasks p000003")
    shown = run_cli("hyperion-checkpoint", "failed", str(store.path), "--json", env=cli_env)
    assert shown.returncode == 0 and json.loads(shown.stdout)[0]["slurm_id"] == "12364", shown.stderr


def test_a_record_whose_array_job_is_a_5000_digit_number_is_named_by_its_folders_job(tmp_path, cli_env):
    store = _store(tmp_path)
    path = store.write_failed(6, Attempt("12364", "6", "0"), DETAILS)
    path.write_text('{"error": "x", "%s": %s, "%s": "6"}' % (ARRAY_JOB_KEY, "9" * 5000, ARRAY_TASK_KEY))
    assert job_text(_one(store)) == "12364"
    listed = run_cli("hyperion-checkpoint", "failed", str(store.path), env=cli_env)
    assert listed.returncode == 0 and listed.stdout.startswith("shard 6  job 12364  "), listed.stderr


@pytest.mark.parametrize("huge", ["9" * 19, 10 ** 19 - 1])     # above 2**63-1, as text and as a number
def test_a_19_digit_array_job_above_the_largest_id_is_refused_as_text_as_it_is_as_a_number(tmp_path, huge):
    """A record's array job of 19 nines was taken as text and refused as the number it spells: the one
    record was named `9999999999999999999_6` or by its folder's job, by how its JSON wrote the id."""
    store = _store(tmp_path)
    path = store.write_failed(6, Attempt("12364", "6", "0"), DETAILS)
    path.write_text(json.dumps({"error": "x", ARRAY_JOB_KEY: huge, ARRAY_TASK_KEY: "6"}))
    assert job_text(_one(store)) == "12364"


def test_the_consoles_job_cell_shows_a_long_array_task_whole(tmp_path):
    """The Failed table cut a job at 12 cells: `67108863_4000000` read `67108863_40…`, another task."""
    store = _store(tmp_path)
    store.write_failed(6, Attempt.from_env({**SLURM_ENV, "SLURM_ARRAY_JOB_ID": "67108863",
                                            "SLURM_ARRAY_TASK_ID": "4000000"}), DETAILS)
    assert failed_cells(_one(store))["job"].plain == "67108863_4000000"
