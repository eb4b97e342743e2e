"""The per-array usage summary (backends/watch/usage_summary.py), text and JSON."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends.watch.usage import Usage, parse_usage
from backends.watch.usage_summary import format_summary, human_bytes, human_seconds, spread, summarize

M = 1024 ** 2
FIXTURES = Path(__file__).parent / "fixtures" / "sacct"


def test_spread_is_median_nearest_rank_p95_and_max() -> None:
    got = spread(list(range(100, 0, -1)))
    assert (got.count, got.median, got.p95, got.max) == (100, 50.5, 95, 100)
    assert spread([7]).p95 == 7 and spread([]).median is None


def test_summary_of_the_recorded_300mb_array() -> None:
    usage = parse_usage((FIXTURES / "ended.txt").read_text())
    array = {key: u for key, u in usage.items() if key[0] == "161"}
    summary = summarize(array)
    assert summary.tasks == 2 and summary.max_rss_bytes.max == 321028 * 1024
    assert summary.elapsed_seconds.median == 6.0
    assert summary.cpu_efficiency == pytest.approx((1.171 + 1.075) / 12)
    assert summary.near_memory_limit == () and summary.near_time_limit == ()
    lines = format_summary(summary)
    assert lines[0].startswith("MaxRSS   median 313M  p95 314M  max 314M  (2 of 2 tasks)")
    assert "CPU efficiency 19%" in lines[2]


def test_tasks_above_90_percent_of_a_limit_are_named_most_loaded_first() -> None:
    usage = {
        ("12", 1): Usage(max_rss_bytes=95 * M, req_mem_bytes=100 * M, elapsed_seconds=10, time_limit_seconds=600),
        ("12", 2): Usage(max_rss_bytes=50 * M, req_mem_bytes=100 * M, elapsed_seconds=590, time_limit_seconds=600),
        ("12", 3): Usage(max_rss_bytes=99 * M, req_mem_bytes=100 * M),
        ("12", 4): Usage(max_rss_bytes=90 * M, req_mem_bytes=100 * M),       # exactly 90%: not above
        ("12", 5): Usage(),                                                    # nothing known
    }
    summary = summarize(usage)
    assert [n.task for n in summary.near_memory_limit] == ["12_3", "12_1"]
    assert [(n.task, n.fraction) for n in summary.near_time_limit] == [("12_2", 0.9833)]
    lines = format_summary(summary)
    assert lines[3] == "over 90% of --mem: 12_3 (99%), 12_1 (95%)"
    assert lines[4] == "over 90% of --time: 12_2 (98%)"
    assert summary.max_rss_bytes.count == 4


def test_text_stays_within_80_columns_for_a_large_array() -> None:
    usage = {("1234567", i): Usage(max_rss_bytes=(95 + i % 5) * M, req_mem_bytes=100 * M,
                                   elapsed_seconds=86400 * 3 + i % 100, time_limit_seconds=86400 * 3 + 100,
                                   cpu_seconds=1.0, alloc_cpus=8) for i in range(1, 10_001)}
    lines = format_summary(summarize(usage))
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[3].endswith("more") and lines[4].endswith("more")
    assert lines[1].startswith("elapsed  median 3-00:")


def test_json_is_plain_data_with_the_spreads_and_the_near_limit_tasks() -> None:
    summary = summarize({("5", None): Usage(max_rss_bytes=99 * M, req_mem_bytes=100 * M, elapsed_seconds=3.0)})
    data = json.loads(json.dumps(summary.to_json()))
    assert data == {
        "tasks": 1,
        "max_rss_bytes": {"count": 1, "median": 99 * M, "p95": 99 * M, "max": 99 * M},
        "elapsed_seconds": {"count": 1, "median": 3.0, "p95": 3.0, "max": 3.0},
        "cpu_efficiency": None,
        "near_memory_limit": [{"task": "5", "fraction": 0.99, "hit": False}],
        "near_time_limit": [],
        "memory_limit_enforced": True,
        "time_limit_enforced": False,        # no task had one: its [] is not "none near it"
    }


def test_an_empty_array_summarises_to_dashes() -> None:
    lines = format_summary(summarize({}))
    assert lines[0] == "MaxRSS   median -  p95 -  max -  (0 of 0 tasks)"
    assert lines[2].startswith("CPU efficiency -")


@pytest.mark.parametrize(("value", "text"), [(0, "0"), (1023, "1023"), (3484 * 1024, "3.4M"),
                                            (100 * M, "100M"), (1536 * M, "1.5G"), (None, "-")])
def test_human_bytes(value: int | None, text: str) -> None:
    assert human_bytes(value) == text


def test_human_seconds_spells_like_slurm() -> None:
    assert (human_seconds(6.4), human_seconds(93780), human_seconds(None)) == ("00:00:06", "1-02:03:00", "-")
    # one rule in every face for a local task's fraction of a second: `status` said 0:00:00 of a
    # 0.7 s task while `usage` said 00:00:01, and a 0.04 s one <00:00:01 in `usage`, 0:00:00 in status
    from backends.cli.jobs.table import fmt_elapsed
    from hyperion_console.widgets.states import elapsed_text, short_seconds

    faces = (fmt_elapsed, elapsed_text, human_seconds, short_seconds)
    assert [[face(s) for face in faces] for s in (0.04, 0.7, 1.6, 59.9)] == [
        ["<0:00:01", "<0:00:01", "<00:00:01", "<1s"], ["<0:00:01", "<0:00:01", "<00:00:01", "<1s"],
        ["0:00:01", "0:00:01", "00:00:01", "1s"], ["0:00:59", "0:00:59", "00:00:59", "59s"]]
    # and never rounded up in the console's short cells: 6 s under a 60-minute limit read `60m/60m`
    assert [short_seconds(s) for s in (599.6, 3594, 86399.5)] == ["9.9m", "59m", "23h"]


def test_a_task_slurm_ended_at_its_limit_counts_whatever_its_sampled_peak_says() -> None:
    """An OUT_OF_MEMORY task whose sampled MaxRSS read 40% of --mem: 'over 90% of --mem: none'."""
    usages = {("12", 1): Usage(max_rss_bytes=40 * M, req_mem_bytes=100 * M, elapsed_seconds=10.0,
                               time_limit_seconds=60.0),
              ("12", 2): Usage(max_rss_bytes=95 * M, req_mem_bytes=100 * M)}
    summary = summarize(usages, out_of_memory=[("12", 1)], timed_out=[("12", 3)])
    lines = format_summary(summary)
    assert lines[3] == "over 90% of --mem: 12_1 (reached it), 12_2 (95%)"
    assert lines[4] == "over 90% of --time: 12_3 (reached it)"
    assert summary.to_json()["near_memory_limit"][0] == {"task": "12_1", "fraction": 0.4, "hit": True}


def test_a_local_run_has_its_elapsed_times_summed_up(tmp_path: Path, cli_env) -> None:
    """`hyperion-jobs usage` of a local record said 'elapsed median -' while status showed each time."""
    from conftest import TEST_SITE, run_cli

    ran = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:3",
                  "--output-file", "log/s.JOB.log", "--", "python3", "-c", "import time; time.sleep(1.2)",
                  cwd=tmp_path, env=cli_env)
    assert ran.returncode == 0, ran.stderr
    shown = run_cli("hyperion-jobs", "usage", str(tmp_path / "log" / "q" / "s.JOB.submit.json"), env=cli_env)
    assert shown.returncode == 0, shown.stderr
    (elapsed,) = [line for line in shown.stdout.splitlines() if line.startswith("elapsed")]
    assert elapsed.split()[:3] == ["elapsed", "median", "00:00:01"], shown.stdout


def test_tasks_that_never_started_are_not_summed_as_runs_of_no_time() -> None:
    """While an array runs, squeue tells a pending task's request and 0:00: the console's summary of
    40 tasks, 18 pending, said "accounting measured 40" and a median elapsed of 1 s."""
    from backends.states import JobState
    from backends.watch.rows import TaskRow
    from backends.watch.usage_summary import summarize_rows, usage_heading

    request = Usage(req_mem_bytes=100 * 2**20, time_limit_seconds=360.0)

    def row(task: int, state: JobState, elapsed: float, node: str | None) -> TaskRow:
        used = Usage(elapsed_seconds=elapsed, req_mem_bytes=request.req_mem_bytes,
                     time_limit_seconds=request.time_limit_seconds)
        return TaskRow(task, "88", task, state, 0 if state.is_terminal else None, None, elapsed, node,
                       None, None, None, usage=used)

    rows = {("88", 1): row(1, JobState.COMPLETED, 5.0, "vm"), ("88", 2): row(2, JobState.RUNNING, 21.0, "vm"),
            ("88", 3): row(3, JobState.PENDING, 0.0, None), ("88", 4): row(4, JobState.PENDING, 0.0, None)}
    summary = summarize_rows(rows)
    assert summary is not None and summary.tasks == 2
    assert summary == summarize_rows({key: rows[key] for key in (("88", 1), ("88", 2))})   # as if not there
    assert summary.elapsed_seconds.max == 21.0 and summary.elapsed_seconds.median != 0.0
    assert usage_heading(summary, rows.values(), rows) == \
        "usage of 2 of 4 task(s) (1 ended, 1 running, 2 pending; accounting measured 2)"
