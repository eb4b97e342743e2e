"""Shard assignment: Curator's formula, stable across runs and lists, deterministic ids only."""
import hashlib
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sharding.arrayenv import ArrayConfig
from sharding.assign import check_task_ids, select, shard_for, shards_for
from sharding.errors import ShardingError
from sharding.listing import SourceTask, list_sources

ids = st.text(min_size=1, max_size=40).filter(lambda s: not s.startswith("r"))


def _tasks(names):
    return [SourceTask(n, ()) for n in names]


@given(ids, st.integers(1, 10_000), st.integers(0, 1000))
def test_assignment_follows_the_published_formula_and_stays_in_range(task_id, total, minimum):
    shard = shard_for(task_id, total, minimum)
    digest = hashlib.sha256(task_id.encode()).hexdigest()
    assert shard == int(digest[:16], 16) % total + minimum
    assert minimum <= shard <= minimum + total - 1


@given(st.lists(ids, max_size=30), st.integers(1, 500), st.integers(0, 9))
def test_batch_assignment_equals_one_by_one(names, total, minimum):
    assert shards_for(names, total, minimum) == [shard_for(n, total, minimum) for n in names]


@given(st.lists(ids, min_size=1, max_size=30, unique=True), st.randoms(), st.integers(1, 12))
def test_a_task_keeps_its_shard_whatever_the_other_tasks_and_their_order(names, rnd, total):
    shuffled = list(names)
    rnd.shuffle(shuffled)
    extra = shuffled + ["zz-extra-task"] if "zz-extra-task" not in names else shuffled
    for shard in range(total):
        config = ArrayConfig(shard, total)
        a = {t.task_id for t in select(_tasks(names), config).tasks}
        b = {t.task_id for t in select(_tasks(extra), config).tasks}
        assert a == b - {"zz-extra-task"}


@given(st.lists(ids, max_size=40, unique=True), st.integers(1, 9), st.integers(0, 5))
def test_the_shards_of_a_run_partition_the_tasks(names, total, minimum):
    seen = []
    for shard in range(minimum, minimum + total):
        seen += [t.task_id for t in select(_tasks(names), ArrayConfig(shard, total, minimum)).tasks]
    assert sorted(seen) == sorted(names)


def test_assignment_is_the_same_in_a_fresh_interpreter():
    """No per-process hash seed: another process (another node) computes the same shards."""
    names = [f"p{i:06d}" for i in range(50)]
    here = [shard_for(n, 7, 1) for n in names]
    code = ("from sharding.assign import shard_for;"
            f"print([shard_for(n, 7, 1) for n in {names!r}])")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": "123"}, check=True).stdout
    assert there.strip() == str(here)


def test_ids_beginning_with_r_are_rejected():
    with pytest.raises(ShardingError) as err:
        select(_tasks(["p000001", "r0f3a", "p000002"]), ArrayConfig(0, 2))
    assert "'r0f3a'" in str(err.value)
    check_task_ids(["p1", "xr"])  # an r elsewhere is fine


def test_no_configuration_keeps_every_task_and_allows_any_id():
    tasks = _tasks(["r1", "p2"])
    assert select(tasks, None).tasks == tuple(tasks)


def test_an_index_outside_the_range_gets_no_tasks_and_a_warning():
    selection = select(_tasks([f"p{i:06d}" for i in range(10)]), ArrayConfig(11, 10, 1))
    assert selection.tasks == ()
    assert "outside the assignable shard range [1, 10]" in selection.warning


def test_an_empty_shard_is_warned_about():
    tasks = _tasks(["p000000"])
    owner = shard_for("p000000", 5)
    other = (owner + 1) % 5
    assert select(tasks, ArrayConfig(owner, 5)).warning is None
    assert "got none of the 1 source tasks" in select(tasks, ArrayConfig(other, 5)).warning


def test_listing_is_sorted_grouped_and_stable(tmp_path):
    for name in ["b.jsonl", "a.jsonl", "c.jsonl", "d.jsonl", "e.jsonl", "skip.txt"]:
        (tmp_path / name).write_text("")
    tasks = list_sources(tmp_path, files_per_partition=2)
    assert [t.task_id for t in tasks] == ["p000000", "p000001", "p000002"]
    assert [[f.name for f in t.files] for t in tasks] == [["a.jsonl", "b.jsonl"], ["c.jsonl", "d.jsonl"], ["e.jsonl"]]
    assert list_sources(tmp_path, files_per_partition=2) == tasks


def test_listing_rejects_bad_partition_size_and_missing_dir(tmp_path):
    with pytest.raises(ShardingError, match="--files-per-partition"):
        list_sources(tmp_path, files_per_partition=0)
    with pytest.raises(ShardingError, match="--input"):
        list_sources(tmp_path / "nope")
