"""Array configuration from flags and the environment, validated as Curator documents."""
import pytest

from sharding.arrayenv import ArrayConfig, resolve
from sharding.errors import ShardingError


def test_no_configuration_means_an_unsharded_run():
    assert resolve({}) is None
    assert resolve({"PATH": "/bin", "SLURM_JOB_ID": "5"}) is None


@pytest.mark.parametrize("prefix", ["HYPERION_ARRAY_", "NEMO_CURATOR_SLURM_ARRAY_"])
def test_project_and_curator_names(prefix):
    env = {prefix + "SHARD_INDEX": "4", prefix + "TOTAL_SHARDS": "20", prefix + "MINIMUM_SHARD_INDEX": "1"}
    assert resolve(env) == ArrayConfig(4, 20, 1)


def test_hyperion_names_win_over_curator_names_and_slurm():
    env = {"HYPERION_ARRAY_SHARD_INDEX": "2", "NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX": "3",
           "SLURM_ARRAY_TASK_ID": "4", "NEMO_CURATOR_SLURM_ARRAY_TOTAL_SHARDS": "10", "SLURM_ARRAY_TASK_COUNT": "5"}
    assert resolve(env) == ArrayConfig(2, 10, 0)


def test_slurm_fallback_and_default_minimum():
    assert resolve({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "8"}) == ArrayConfig(3, 8, 0)


def test_flags_win_value_by_value():
    env = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "1"}
    assert resolve(env, total_shards=20, minimum_shard_index=1) == ArrayConfig(3, 20, 1)


@pytest.mark.parametrize("present,missing", [
    ({"HYPERION_ARRAY_SHARD_INDEX": "1"}, "HYPERION_ARRAY_TOTAL_SHARDS"),
    ({"SLURM_ARRAY_TASK_ID": "1"}, "HYPERION_ARRAY_TOTAL_SHARDS"),
    ({"NEMO_CURATOR_SLURM_ARRAY_TOTAL_SHARDS": "4"}, "HYPERION_ARRAY_SHARD_INDEX"),
    ({"HYPERION_ARRAY_ENABLED": "1"}, "HYPERION_ARRAY_SHARD_INDEX"),
])
def test_index_without_total_or_total_without_index_is_an_error(present, missing):
    with pytest.raises(ShardingError) as err:
        resolve(present)
    assert err.value.field == missing
    assert "both a shard index and a total shard count" in err.value.problem


@pytest.mark.parametrize("env,field", [
    ({"HYPERION_ARRAY_SHARD_INDEX": "1", "HYPERION_ARRAY_TOTAL_SHARDS": "0"}, "HYPERION_ARRAY_TOTAL_SHARDS"),
    ({"HYPERION_ARRAY_SHARD_INDEX": "1", "HYPERION_ARRAY_TOTAL_SHARDS": "-3"}, "HYPERION_ARRAY_TOTAL_SHARDS"),
    ({"HYPERION_ARRAY_SHARD_INDEX": "-1", "HYPERION_ARRAY_TOTAL_SHARDS": "3"}, "HYPERION_ARRAY_SHARD_INDEX"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3",
      "NEMO_CURATOR_SLURM_ARRAY_MINIMUM_SHARD_INDEX": "-1"}, "NEMO_CURATOR_SLURM_ARRAY_MINIMUM_SHARD_INDEX"),
])
def test_totals_must_be_positive_and_indices_non_negative(env, field):
    with pytest.raises(ShardingError) as err:
        resolve(env)
    assert err.value.field == field


def test_flag_values_are_named_by_their_flag():
    with pytest.raises(ShardingError) as err:
        resolve({}, shard_index=1, total_shards=0)
    assert err.value.field == "--total-shards"


def test_a_non_integer_value_names_the_variable():
    with pytest.raises(ShardingError) as err:
        resolve({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "many"})
    assert err.value.field == "SLURM_ARRAY_TASK_COUNT" and "'many'" in err.value.problem


@pytest.mark.parametrize("value", ["0", "false", "No", " off "])
@pytest.mark.parametrize("name", ["HYPERION_ARRAY_ENABLED", "NEMO_CURATOR_SLURM_ARRAY_ENABLED"])
def test_explicit_disable_values_turn_sharding_off(name, value):
    env = {name: value, "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "8"}
    assert resolve(env) is None
    assert resolve(env, shard_index=1, total_shards=2) is None


def test_an_unknown_enabled_value_is_an_error():
    with pytest.raises(ShardingError) as err:
        resolve({"HYPERION_ARRAY_ENABLED": "maybe"})
    assert err.value.field == "HYPERION_ARRAY_ENABLED"


def test_an_out_of_range_index_is_valid_but_flagged():
    config = resolve({"HYPERION_ARRAY_SHARD_INDEX": "0", "HYPERION_ARRAY_TOTAL_SHARDS": "20",
                      "HYPERION_ARRAY_MINIMUM_SHARD_INDEX": "1"})
    assert config is not None and not config.in_range
    assert "[1, 20]" in config.range_warning()


def test_a_hyperion_submit_window_offset_is_added_to_slurms_index_only():
    """In a window at offset 1001, SLURM_ARRAY_TASK_ID=1 is shard 1002; an index given by name is already logical."""
    env = {"SLURM_ARRAY_TASK_ID": "1", "HYPERION_ARRAY_TOTAL_SHARDS": "1200", "HYPERION_SUBMIT_ARRAY_OFFSET": "1001"}
    assert resolve(env).shard_index == 1002
    assert resolve({**env, "NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX": "7"}).shard_index == 7
    assert resolve(env, shard_index=5).shard_index == 5
    with pytest.raises(ShardingError) as bad:
        resolve({**env, "HYPERION_SUBMIT_ARRAY_OFFSET": "x"})
    assert bad.value.field == "HYPERION_SUBMIT_ARRAY_OFFSET"


def test_a_later_windows_task_count_is_not_taken_for_the_runs_total():
    """SLURM_ARRAY_TASK_COUNT in hyperion-submit's window at offset 1001 counts that window (200 of 1200):
    taken as the total it silently assigned every task of a run without a checkpoint to the wrong shard."""
    env = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "200", "HYPERION_SUBMIT_ARRAY_OFFSET": "1001"}
    with pytest.raises(ShardingError) as bad:
        resolve(env)
    assert bad.value.field == "HYPERION_ARRAY_TOTAL_SHARDS"
    assert "SLURM_ARRAY_TASK_COUNT (200) counts only this window" in bad.value.problem
    assert resolve({**env, "HYPERION_ARRAY_TOTAL_SHARDS": "1200"}).total_shards == 1200
    assert resolve({**env, "HYPERION_SUBMIT_ARRAY_OFFSET": "0"}).total_shards == 200   # one window: as before
