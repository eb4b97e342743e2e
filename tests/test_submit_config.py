"""Site YAML + command line -> SiteConfig and SubmitOptions (pure parsing and planning)."""
from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import REPO, TEST_SITE
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.errors import InputError
from backends.logheader import ended_line, parse_ended
from backends.records.paths import record_path
from backends.records.record import (
    JobRecord,
    SubmitRecord,
    TaskRecord,
    find_records,
    load_record,
    save_record,
)
from backends.submit.array import MAX_VALUES, ArraySpec, parse_array
from backends.submit.commandline import parse_submit_argv
from backends.submit.config import load_site
from backends.submit.model import SubmitOptions
from backends.submit.plan import build_plan, submit_argv
from backends.submit.resources import check_memory, check_time
from backends.submit.site_options import check_options

CLSP = REPO / "conf" / "submit_clsp.yaml"
COE = REPO / "conf" / "submit_coe_v100.yaml"


def _site_file(tmp_path: Path, **changes: object) -> Path:
    data = {**yaml.safe_load(TEST_SITE.read_text()), **changes}
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}))
    return path


def test_yaml_supplies_defaults(tmp_path):
    site, options = parse_submit_argv(["slurm", "--cfg", str(TEST_SITE), "--output-file", "t.log", "--", "true"])
    assert (options.num_gpus, options.num_threads, options.mem, options.time) == (0, 1, "100M", "00:10:00")
    assert options.cfg == str(TEST_SITE) and site.max_array_size == 1001


def test_command_line_overrides_yaml_even_before_cfg():
    _, options = parse_submit_argv(["local", "--num-gpus", "3", "--num-threads", "4", "--time", "1-00",
                                    "--mem", "2G", "--cfg", str(TEST_SITE), "--output-file", "t.log",
                                    "--", "prog", "--num-gpus", "9"])
    assert (options.num_gpus, options.num_threads, options.time, options.mem) == (3, 4, "1-00", "2G")
    assert options.command == ("prog", "--num-gpus", "9")


def test_cli_mem_replaces_yaml_mem_per_cpu(tmp_path):
    cfg = _site_file(tmp_path, mem=None, mem_per_cpu="2G")
    _, options = parse_submit_argv(["local", "--cfg", str(cfg), "--mem", "8G", "--output-file", "t.log", "--", "x"])
    assert (options.mem, options.mem_per_cpu) == ("8G", None)


def test_cli_mem_per_cpu_replaces_yaml_mem():
    _, options = parse_submit_argv(["local", "--cfg", str(TEST_SITE), "--mem-per-cpu", "1g",
                                    "--output-file", "t.log", "--", "x"])
    assert (options.mem, options.mem_per_cpu) == (None, "1G")


def test_everything_after_separator_is_the_command():
    _, options = parse_submit_argv(["local", "--cfg", str(TEST_SITE), "--output-file", "t.log", "--",
                                    "prog", "--time", "5", "--", "--cfg"])
    assert options.command == ("prog", "--time", "5", "--", "--cfg")
    assert options.time == "00:10:00"


def _resource_options(cfg: Path, *extra: str) -> list[str]:
    site, options = parse_submit_argv(["slurm", "--cfg", str(cfg), *extra, "--output-file", "t.log", "--", "x"])
    argv = list(build_plan(site, options).windows[0].sbatch_argv)
    start = argv.index("--ntasks-per-node=1") + 1  # base_options end, then the policy
    return argv[start:-1]


def test_clsp_policy_matches_the_contract():
    assert _resource_options(CLSP) == ["--partition=gpu", "--exclude=c04,c05,c23,c24,c25"]
    assert _resource_options(CLSP, "--num-gpus", "2") == [
        "--partition=gpu", "--gpus=2", "--exclude=c04,c05,c17,c20,c24,c25,c26,c27"]


def test_coe_v100_policy_matches_the_contract():
    assert _resource_options(COE) == ["--partition=cpu"]
    assert _resource_options(COE, "--num-gpus", "4") == ["--partition=gpu", "--gres=gpu:v100:4"]


def test_contract_example_sbatch_argv():
    site, options = parse_submit_argv(["slurm", "--cfg", str(COE), "--num-gpus", "4", "--num-threads", "9",
                                       "--mem", "32G", "--output-file", "exp/xvector/log/train.log", "--",
                                       "hyperion-train-wav2xvector", "resnet", "--num-gpus", "4"])
    argv = build_plan(site, options).windows[0].sbatch_argv
    for item in ("--export=ALL", "--parsable", "--cpus-per-task=9", "--mem=32G", "--time=168:00:00",
                 "--nodes=1", "--gres=gpu:v100:4"):
        assert item in argv
    assert not any(a.startswith("--mem-per-cpu") for a in argv)


@pytest.mark.parametrize("text,values", [
    ("JOB=1:3", (1, 2, 3)), ("JOB=5:5", (5,)), ("T_1=1:2,5:7,99", (1, 2, 5, 6, 7, 99)),
    ("_x=3,1,2:3", (1, 2, 3)),
])
def test_parse_array_range_lists(text, values):
    assert parse_array(text).values == values


def test_array_size_limit_counts_distinct_values():
    assert len(parse_array("JOB=1:60000,1:60000").values) == 60000
    assert len(parse_array(f"JOB=1:{MAX_VALUES}").values) == MAX_VALUES
    for text in (f"JOB=1:{MAX_VALUES + 1}", "JOB=1:60000,50000:110000", "JOB=1:100000000"):
        with pytest.raises(InputError, match="at most 100000 tasks"):
            parse_array(text)
    with pytest.raises(InputError, match="at most 100000 tasks"):
        ArraySpec("JOB", tuple(range(1, MAX_VALUES + 2)))


def test_array_text_and_slurm_expression():
    spec = parse_array("JOB=1:2,5:10,99")
    assert spec.slurm_expression() == "1-2,5-10,99"
    assert spec.slurm_expression(4) == "1-2,5-10,99%4"
    assert parse_array(spec.text) == spec


OPTIONS = st.builds(
    SubmitOptions,
    backend=st.sampled_from(["local", "slurm"]), cfg=st.just(str(TEST_SITE)),
    output_file=st.sampled_from(["log/t.JOB.log", "/abs/JOB/x.JOB.txt"]),
    # the program comes first and is never an option (hyperion-submit refuses '-x' there)
    command=st.lists(st.text(min_size=1, max_size=8).filter(lambda s: s.strip()), min_size=1, max_size=4)
    .filter(lambda argv: not argv[0].startswith("-")).map(tuple),
    num_gpus=st.just(0), num_threads=st.integers(1, 64),
    mem=st.sampled_from(["8G", "100M", "2048"]), mem_per_cpu=st.none(),
    time=st.sampled_from(["10", "01:00", "168:00:00", "2-12", "1-00:30:00"]),
    array=st.one_of(st.none(), st.lists(st.integers(1, 3000), min_size=1, max_size=20)
                    .map(lambda v: ArraySpec("JOB", tuple(v)))),
    max_jobs_run=st.none(),
    env=st.lists(st.tuples(st.sampled_from(["A", "B_2"]), st.text(max_size=5)), max_size=2).map(tuple),
)


@settings(max_examples=60, deadline=None)
@given(OPTIONS, st.one_of(st.none(), st.integers(1, 5)))
def test_submit_argv_round_trips(options, max_jobs):
    if options.array is not None:
        options = replace(options, max_jobs_run=max_jobs)
    _, parsed = parse_submit_argv(submit_argv(options))
    assert parsed == options


@pytest.mark.parametrize("value,expected", [("8G", "8G"), ("8g", "8G"), (2048, "2048"), ("100M", "100M"), ("1T", "1T")])
def test_memory_sizes(value, expected):
    assert check_memory("mem", value) == expected


@pytest.mark.parametrize("value", ["60", "10:30", "168:00:00", "2-12", "2-12:30", "2-12:30:15"])
def test_slurm_time_forms(value):
    assert check_time("time", value) == value


def test_site_options_accept_policy_in_every_spelling():
    items = ["--account", "proj", "-A", "proj", "--qos=high", "-p", "cpu", "--constraint=v100",
             "--exclude=c04,c05", "-HQ", "--gres-flags=enforce-binding"]
    assert check_options("base_options", items) == tuple(items)


@pytest.mark.parametrize("items", [["--constraint=v100|a100"], ["--constraint=v100&ib"], ["-C", "[rack1|rack2]"],
                                   ["-Cv100|a100"], ["--constraint", "(v100&ib)*2"], ["--prefer=a100|h100"],
                                   ["-HC", "v100|a100"], ["--cluster-constraint=!gpu"]])
def test_feature_expressions_keep_slurms_operators(items):
    """`|` and `&` are Slurm's OR and AND in --constraint; they were refused as a shell fragment."""
    assert check_options("base_options", items) == tuple(items)


def test_gpu_selection_allowed_only_in_gpu_types():
    assert check_options("g", ["--gres=gpu:{num_gpus}"], allow_gpu=True) == ("--gres=gpu:{num_gpus}",)
    with pytest.raises(InputError) as err:
        check_options("cpu_options", ["--gpus-per-node=1"])
    assert err.value.field == "cpu_options"


def test_unquoted_time_is_refused_with_advice(tmp_path):
    path = tmp_path / "site.yaml"
    path.write_text("time: 168:00:00\n")
    with pytest.raises(InputError) as err:
        load_site(path)
    assert err.value.field == "time" and "quote" in err.value.problem


def _record(path: Path, job: str) -> SubmitRecord:
    return SubmitRecord(path=str(path), backend="slurm", argv=("hyperion-submit", "slurm"), cfg="c.yaml",
                        options={"num_gpus": 0}, script=str(path.with_suffix(".sh")), array_name="JOB",
                        jobs=(JobRecord(job, 0, "1-2"),),
                        tasks=(TaskRecord(1, job, 1, "/l/t.1.log", "/q/o", "/q/e"),
                               TaskRecord(2, job, 2, "/l/t.2.log", "/q/o2", "/q/e2")),
                        submitted_at="2026-12-02T13:00:00+00:00", cwd="/")


def test_records_round_trip_and_are_found_newest_first(tmp_path):
    old = record_path(str(tmp_path / "a" / "log" / "x.JOB.log"))
    new = record_path(str(tmp_path / "b" / "y.log"))
    assert old == tmp_path / "a" / "log" / "q" / "x.JOB.submit.json"
    save_record(_record(old, "11"))
    time.sleep(0.01)
    save_record(_record(new, "12"))
    os.utime(old, (1, 1))
    assert load_record(old) == _record(old, "11")
    assert find_records([tmp_path]) == [new, old]


def test_corrupt_record_is_an_input_error(tmp_path):
    bad = tmp_path / "q" / "t.submit.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"path": 1}))
    with pytest.raises(InputError) as err:
        load_record(bad)
    assert err.value.field == "record"


def test_footer_line_parses_back():
    assert parse_ended(ended_line(3, "2026-12-02T13:00:00+00:00", 12)) == (3, "2026-12-02T13:00:00+00:00", 12)


@pytest.mark.parametrize("value", ["10:75", "1:61:00", "1:2:3:4", "1.5", "-5", "1d", "", "2-", True])
def test_bad_times_are_refused(value):
    with pytest.raises(InputError) as err:
        check_time("--time", value)
    assert err.value.field == "--time"


@pytest.mark.parametrize("value", ["0", "8X", "8.5G", "-1G", "G", "8 G", 1.5, True])
def test_bad_memory_sizes_are_refused(value):
    with pytest.raises(InputError) as err:
        check_memory("--mem", value)
    assert err.value.field == "--mem"


@pytest.mark.parametrize("value", ["0", "00:00:00", "0:0", "0-0", "0-00:00:00"])
def test_zero_time_is_refused_not_read_as_no_limit(value):
    with pytest.raises(InputError, match="no time limit at all"):
        check_time("--time", value)


@pytest.mark.parametrize("value,ok", [("525600", True), ("365-00:00:00", True), ("525601", False),
                                      ("365-00:01", False), ("8760:00:01", False), ("0:30", True)])
def test_time_limits_above_what_slurm_handles_are_refused(value, ok):
    if ok:
        assert check_time("--time", value) == value
    else:
        with pytest.raises(InputError, match="above 365-00:00:00"):
            check_time("--time", value)


@pytest.mark.parametrize("value,expected", [(None, None), (5, 5.0), (2.5, 2.5), (3600, 3600.0)])
def test_site_poll_interval(tmp_path, value, expected):
    path = tmp_path / "site.yaml"
    path.write_text("num_gpus: 0\n" + (f"poll_interval: {value}\n" if value is not None else ""))
    assert load_site(path).poll_interval == expected


@pytest.mark.parametrize("text", ["0", "-1", "3601", "'5'", "true", ".nan"])
def test_bad_site_poll_interval_is_refused(tmp_path, text):
    path = tmp_path / "site.yaml"
    path.write_text(f"poll_interval: {text}\n")
    with pytest.raises(InputError) as err:
        load_site(path)
    assert err.value.field == "poll_interval"


@pytest.mark.parametrize("text", ["mem:\n", "sbatch_command:\n", "mem:\ntime:\n",
                                  "num_gpus:\nnum_threads:\n"])   # these two: "expected an integer, got None"
def test_a_key_left_empty_is_unset_whether_or_not_other_keys_follow(tmp_path, text):
    """`mem:` alone was read by jsonargparse as a file path: 'cfg: File does not exist: .../mem:'."""
    site = tmp_path / "site.yaml"
    site.write_text(text)
    _, options = parse_submit_argv(["slurm", "--cfg", str(site), "--output-file", "log/t.log", "--", "true"])
    assert options.mem is None and options.num_threads == 1 and options.num_gpus == 0
