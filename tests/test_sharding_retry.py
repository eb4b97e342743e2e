"""Retry planning: missing shards, windows under an array limit, Curator's fields lines."""
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.ranges import expand
from sharding.coverage import ShardStatus, coverage
from sharding.errors import ShardingError
from sharding.retry import (
    build_retry,
    format_fields,
    format_ranges,
    parse_max_array_size,
    plan_json,
    plan_retry,
    retry_from_coverage,
)
from sharding.store import Checkpoint, RunConfig

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints"


def _checkpoint(tmp_path, run, done):
    store = Checkpoint(tmp_path)
    store.ensure_run(run)
    for shard in done:
        store.write_completion(shard)
    return store


def test_design_example_windows(tmp_path):
    run = RunConfig(0, 3000)
    missing = {1, 2, 1005, 1006, 2999}
    plan = build_retry(str(tmp_path), run, set(run.shards) - missing, max_array_size=1000)
    assert format_fields(plan) == ["1-2 0 0 3000", "5-6 1000 0 3000", "999 2000 0 3000"]
    assert format_ranges(plan) == ["1-2,1005-1006,2999"]


def test_plan_reads_the_checkpoint(tmp_path):
    _checkpoint(tmp_path, RunConfig(1, 10), [1, 3, 4, 10])
    plan = plan_retry(tmp_path)
    assert plan.missing == (2, 5, 6, 7, 8, 9)
    assert format_fields(plan) == ["2,5-9 0 1 10"]
    data = plan_json(plan)
    assert data["windows"] == [{"array_expression": "2,5-9", "shard_index_offset": 0, "shards": "2,5-9"}]
    assert data["missing_count"] == 6 and data["complete"] is False


def test_complete_run_plans_nothing(tmp_path):
    _checkpoint(tmp_path, RunConfig(1, 5), range(1, 6))
    plan = plan_retry(tmp_path, max_array_size=2)
    assert plan.complete and format_fields(plan) == [] and format_ranges(plan) == []


def test_missing_run_json_is_an_error(tmp_path):
    with pytest.raises(ShardingError) as err:
        plan_retry(FIXTURES / "missing_run")
    assert err.value.field == "run.json" and "original array run" in err.value.problem


def test_bad_max_array_size(tmp_path):
    _checkpoint(tmp_path, RunConfig(0, 5), [])
    with pytest.raises(ShardingError, match="--max-array-size"):
        plan_retry(tmp_path, max_array_size=0)


@given(st.sets(st.integers(0, 5000)), st.integers(1, 1500), st.integers(0, 3))
def test_windows_cover_exactly_the_missing_shards_below_the_limit(done, limit, minimum):
    run = RunConfig(minimum, 5001)
    plan = build_retry("ck", run, done, max_array_size=limit)
    back = []
    for line in format_fields(plan):
        expression, offset, got_min, got_total = line.split()
        assert (int(got_min), int(got_total)) == (minimum, 5001)
        physical = expand(expression)
        assert all(0 <= p < limit for p in physical)
        back += [p + int(offset) for p in physical]
    assert back == sorted(set(run.shards) - done)


def test_corrupt_fixture_retries_what_has_no_valid_manifest(tmp_path):
    root = tmp_path / "ck"
    shutil.copytree(FIXTURES / "corrupt", root)
    plan = plan_retry(root)
    assert format_fields(plan) == ["7-10 0 1 10"]
    assert len(plan.problems) == 6


@pytest.mark.parametrize("fixture", ["corrupt", "curator_partial"])
@pytest.mark.parametrize("limit", [None, 1, 3, 1000])
def test_the_plan_from_a_coverage_is_the_plan_from_the_checkpoint(tmp_path, fixture, limit):
    """The console plans from the coverage it shows; the CLI reads the checkpoint: the same retry."""
    root = tmp_path / "ck"
    shutil.copytree(FIXTURES / fixture, root)
    read, ours = plan_retry(root, limit), retry_from_coverage(coverage(root), limit)
    assert (ours.checkpoint, ours.run, ours.missing_runs, ours.windows, ours.max_array_size, ours.failed_after) \
        == (read.checkpoint, read.run, read.missing_runs, read.windows, read.max_array_size, read.failed_after)
    assert format_fields(ours) == format_fields(read)
    assert [p for p in ours.problems if p.unknown] == [p for p in read.problems if p.unknown]
    assert set(read.problems) <= set(ours.problems)


def test_coverage_of_the_curator_fixture(tmp_path):
    cov = coverage(FIXTURES / "curator_partial")
    assert cov.expressions() == {"complete": "0-2,4-5,7", "incomplete": "6", "failed": "3"}
    assert cov.counts() == {"complete": 6, "incomplete": 1, "failed": 1}
    assert cov.status_of(5) is ShardStatus.COMPLETE  # an old failure does not undo a later success
    assert [s.failures for s in cov.shard_rows() if s.shard == 3] == [2]


@pytest.mark.parametrize("text,value", [("1000", 1000), (" 7 ", 7), ("0", None), ("-5", None), ("abc", None),
                                        ("1e3", None), ("", None)])
def test_max_array_size_as_typed(text, value):
    """One reading for the CLI option and the console field."""
    if value is None:
        with pytest.raises(ShardingError) as err:
            parse_max_array_size(text)
        assert err.value.field == "--max-array-size" and "positive integer" in err.value.problem
    else:
        assert parse_max_array_size(text) == value
