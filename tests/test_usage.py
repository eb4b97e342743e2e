"""Per-task usage parsed from sacct with its step rows (backends/watch/usage.py).

The fixtures in tests/fixtures/sacct/ were recorded on the test cluster (Slurm
22.05, cgroup memory enforcement) with ``sacct -j IDS --parsable2 --noheader -o
<USAGE_FIELDS>``: ended.txt holds job 160 (600 MB in a 100M job, OUT_OF_MEMORY),
array 161 (two tasks holding 300 MB, --mem 1G), job 172 (--mem-per-cpu=50M -c 2,
a batch step and an srun step) and array 173 (four short tasks, --time
1-02:03:00); running.txt is 172 and 173 seconds after submission, with 173's
pending range row.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.watch.usage import USAGE_FIELDS, Usage, parse_duration, parse_size, parse_usage, usage_argv

FIXTURES = Path(__file__).parent / "fixtures" / "sacct"
K, M, G = 1024, 1024 ** 2, 1024 ** 3


def recorded(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_recorded_ended_jobs_take_maxrss_from_their_steps() -> None:
    usage = parse_usage(recorded("ended.txt"))
    assert set(usage) == {("160", None), ("161", 1), ("161", 2), ("172", None),
                          ("173", 1), ("173", 2), ("173", 3), ("173", 4)}
    assert usage[("160", None)] == Usage(max_rss_bytes=3484 * K, cpu_seconds=0.239, elapsed_seconds=1.0,
                                         time_limit_seconds=600.0, req_mem_bytes=100 * M, alloc_cpus=1)
    assert usage[("161", 1)].max_rss_bytes == 321028 * K
    assert usage[("161", 2)].req_mem_bytes == G
    # 172: the larger of the batch step (76580K) and the srun step (2692K); 2 CPUs x 50M
    assert usage[("172", None)].max_rss_bytes == 76580 * K
    assert (usage[("172", None)].req_mem_bytes, usage[("172", None)].alloc_cpus) == (100 * M, 2)
    assert usage[("173", 4)].time_limit_seconds == 86400 + 2 * 3600 + 3 * 60


def test_recorded_running_and_pending_tasks_know_only_their_request_and_limit() -> None:
    usage = parse_usage(recorded("running.txt"))
    running = usage[("173", 1)]
    assert (running.elapsed_seconds, running.max_rss_bytes, running.cpu_seconds) == (2.0, None, None)
    for task in (2, 3, 4):   # from the row 173_[2-4%1]
        assert usage[("173", task)] == Usage(None, None, 0.0, 93780.0, 200 * M, 1)
    assert usage[("172", None)].req_mem_bytes == 100 * M


@pytest.mark.parametrize("order", ["range first", "own first"])
def test_a_tasks_own_row_wins_over_the_pending_range_row(order: str) -> None:
    rng = "50_[2-4%1]|PENDING||00:00:00|00:00:00|00:10:00|200M|1|cpu=1,mem=200M"
    own = ["50_3|COMPLETED||00:01.500|00:00:09|00:10:00|200M|1|cpu=1,mem=200M",
           "50_3.batch|COMPLETED|150M|00:01.500|00:00:09|||1|"]
    lines = [rng, *own] if order == "range first" else [*own, rng]
    usage = parse_usage("\n".join(lines) + "\n")
    assert usage[("50", 3)] == Usage(150 * M, 1.5, 9.0, 600.0, 200 * M, 1)
    assert usage[("50", 2)].elapsed_seconds == 0.0 and usage[("50", 2)].max_rss_bytes is None


# Older Slurm (before 21.08) printed ReqMem with a scope: 4000Mc per CPU, 4000Mn per node.
OLDER = """\
7_1|COMPLETED||1-02:03:04|1-00:00:05|UNLIMITED|4000Mc|4|
7_1.batch|COMPLETED|1.50G|00:00:01|1-00:00:05|||4|
7_1.extern|COMPLETED|0|00:00:00|1-00:00:05|||4|
7_1.0|COMPLETED|2097152K|1-02:03:03|1-00:00:04|||4|
7_2|TIMEOUT||02:03.370|00:30:00|Partition_Limit|4000Mn|4|
7_2.batch|CANCELLED||02:03.370|00:30:01|||4|
8|CANCELLED by 0||00:00:00|00:00:00|00:05:00|0n|0|billing=2,cpu=2,mem=3G,node=1
"""


def test_older_spellings_per_cpu_memory_extern_steps_and_no_limit() -> None:
    usage = parse_usage(OLDER)
    first = usage[("7", 1)]
    assert first.req_mem_bytes == 4 * 4000 * M                   # per CPU x 4 CPUs
    assert first.max_rss_bytes == 2 * G                           # max of 1.50G, 0, 2097152K
    assert first.cpu_seconds == 93784.0 and first.elapsed_seconds == 86405.0
    assert first.time_limit_seconds is None                       # UNLIMITED
    second = usage[("7", 2)]
    assert (second.req_mem_bytes, second.cpu_seconds, second.time_limit_seconds) == (4000 * M, 123.37, None)
    assert second.max_rss_bytes is None                           # no step reported one
    # nothing allocated: CPUs and memory from ReqTRES
    assert (usage[("8", None)].alloc_cpus, usage[("8", None)].req_mem_bytes) == (2, 3 * G)


def test_step_rows_without_their_allocation_row_still_give_maxrss() -> None:
    usage = parse_usage("9_4.batch|COMPLETED|10M|00:00:01|00:00:02|||1|\n")
    assert usage == {("9", 4): Usage(max_rss_bytes=10 * M)}


@pytest.mark.parametrize("text", [
    "12|COMPLETED|0\n",                                            # too few fields
    "x12|COMPLETED||00:00:00|00:00:00|00:10:00|100M|1|\n",          # not a job id
    "12_a|COMPLETED||00:00:00|00:00:00|00:10:00|100M|1|\n",         # not a task id
    "sacct: error: Problem talking to the database\n",
])
def test_lines_that_are_not_sacct_rows_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="unexpected sacct line"):
        parse_usage(text)


def test_json_has_exactly_the_six_fields() -> None:
    assert Usage(1, 2.0, 3.0, None, 5, 6).to_json() == {
        "max_rss_bytes": 1, "cpu_seconds": 2.0, "elapsed_seconds": 3.0, "time_limit_seconds": None,
        "req_mem_bytes": 5, "alloc_cpus": 6}


def test_the_query_includes_steps_and_asks_for_the_parsed_fields() -> None:
    argv = usage_argv(["12", "13"])
    assert argv[:3] == ["sacct", "-j", "12,13"] and "-X" not in argv
    assert argv[argv.index("-o") + 1].split(",") == list(USAGE_FIELDS)


@pytest.mark.parametrize(("text", "unit", "expected"), [
    ("628368K", "", 628368 * K), ("0", "", 0), ("1.50G", "", int(1.5 * G)), ("100M", "M", 100 * M),
    ("2048", "M", 2 * G), ("4000Mc", "M", 4000 * M), ("1T", "", 1024 * G), ("", "", None),
    ("16?", "", None), ("-5K", "", None),
])
def test_sizes_as_slurm_prints_them(text: str, unit: str, expected: int | None) -> None:
    assert parse_size(text, unit) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("00:00:07", 7.0), ("01:02:03", 3723.0), ("1-02:03:04", 93784.0), ("02:03.370", 123.37),
    ("00:00.004", 0.004), ("5-00:00:00", 432000.0), ("UNLIMITED", None), ("Partition_Limit", None),
    ("INVALID", None), ("", None), ("1:2:3:4", None), ("nan", None), ("inf", None), ("-1:00", None),
])
def test_durations_as_slurm_prints_them(text: str, expected: float | None) -> None:
    assert parse_duration(text) == pytest.approx(expected) if expected is not None else parse_duration(text) is None


@given(st.integers(0, 30), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999))
def test_any_duration_sacct_prints_reads_back(days: int, hours: int, minutes: int, seconds: int, ms: int) -> None:
    text = f"{hours:02d}:{minutes:02d}:{seconds:02d}.{ms:03d}"
    expected = days * 86400 + hours * 3600 + minutes * 60 + seconds + ms / 1000
    assert parse_duration(f"{days}-{text}" if days else text) == pytest.approx(expected)


def test_a_query_with_more_fields_reads_the_same() -> None:
    """The poller may ask for states and usage in one sacct: columns are found by name."""
    fields = ("JobIDRaw", *reversed(USAGE_FIELDS), "ExitCode")
    lines = []
    for line in recorded("ended.txt").splitlines():
        values = line.split("|")
        lines.append("|".join(["0", *reversed(values), "0:0"]))
    assert parse_usage("\n".join(lines), fields) == parse_usage(recorded("ended.txt"))
    with pytest.raises(ValueError, match="lack MaxRSS"):
        parse_usage("", tuple(f for f in USAGE_FIELDS if f != "MaxRSS"))


def test_a_usage_line_without_the_peak_keeps_the_peak_recorded_before(tmp_path: Path) -> None:
    """Two writers record what a task used: the console's watch (sacct told the peak) and
    hyperion-submit's wait at the task's end (sacct had not told it yet). The newest line replaced
    the whole usage, so `status`, `usage` and the console opened later showed no peak. Each figure
    now comes from the newest line that says it."""
    from dataclasses import replace

    from test_console_fixtures import build_history

    from backends.records.attempts import FinalState, TaskUsage, append_entries
    from backends.records.history import load_history
    from backends.watch.usage import usage_from_json

    record = build_history(tmp_path, Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml",
                           n=3, unfinished=(3,))
    peak = Usage(max_rss_bytes=50 << 20, elapsed_seconds=10.0, req_mem_bytes=100 << 20).to_json()
    later = Usage(cpu_seconds=3.0, elapsed_seconds=12.0).to_json()
    append_entries(str(record), [TaskUsage(1, 1, peak), TaskUsage(1, 1, later)])
    history = load_history(record)
    task = {t.value: t for t in history.current.tasks}
    assert usage_from_json(history.final(task[1]).usage) == Usage(
        max_rss_bytes=50 << 20, cpu_seconds=3.0, elapsed_seconds=12.0, req_mem_bytes=100 << 20)
    # the end's own line held the peak (the watch recorded end and usage at once); a usage line follows
    end = FinalState(1, 3, "4242", task[3].array_task_id, "COMPLETED", 0, None, 33.0, "node01", 0, usage=peak)
    append_entries(str(record), [end, TaskUsage(1, 3, later)])
    assert usage_from_json(load_history(record).final(task[3]).usage).max_rss_bytes == 50 << 20
    assert replace(usage_from_json(load_history(record).final(task[3]).usage), max_rss_bytes=None) == Usage(
        cpu_seconds=3.0, elapsed_seconds=12.0, req_mem_bytes=100 << 20)
    for damaged in ("lots", float("nan"), -1, 10 ** 30):                 # a damaged or hand-edited line
        append_entries(str(record), [TaskUsage(1, 3, {**later, "max_rss_bytes": damaged})])
        assert usage_from_json(load_history(record).final(task[3]).usage).max_rss_bytes == 50 << 20, damaged


def test_usage_of_a_run_slurm_requeued_is_not_shown_for_the_next_run(tmp_path: Path) -> None:
    """Usage lines name the attempt and value, not the run: once Slurm ran the task again, the first
    run's peak filled the second run's figures, and `usage` never asked accounting for its own."""
    from test_console_fixtures import build_history

    from backends.records.attempts import FinalState, TaskUsage, append_entries
    from backends.records.history import load_history
    from backends.watch.usage import usage_from_json

    record = build_history(tmp_path, Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml",
                           n=2, unfinished=(2,))
    task = {t.value: t for t in load_history(record).current.tasks}[2]
    first = FinalState(1, 2, "4242", task.array_task_id, "NODE_FAIL", None, None, 20.0, "node01", 0)
    append_entries(str(record), [first, TaskUsage(1, 2, Usage(max_rss_bytes=8 << 30, elapsed_seconds=20.0).to_json())])
    again = FinalState(1, 2, "4242", task.array_task_id, "COMPLETED", 0, None, 5.0, "node01", 1)
    append_entries(str(record), [again, TaskUsage(1, 2, Usage(cpu_seconds=4.0).to_json())])
    final = load_history(record).final(task)
    assert final.restart_count == 1 and usage_from_json(final.usage) == Usage(cpu_seconds=4.0)


def test_status_shows_the_records_request_and_limit_where_accounting_has_not_given_them(tmp_path: Path, capsys) -> None:
    """Right after a task ended OUT_OF_MEMORY accounting's row may lack ReqMem and Timelimit for a few
    seconds, and a usage taken then is kept: `status` showed `3.41M/-` and `00:00:01/-`, though the
    record knew what it submitted. Each attempt's own request is shown (attempt 2 asked for 300M)."""
    from test_console_fixtures import build_history

    from backends.cli.jobs import main
    from backends.records.attempts import TaskUsage, append_entries

    record = build_history(tmp_path, Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml",
                           n=3, failures={2: ("OUT_OF_MEMORY", None, None)}, retried={2: ("OUT_OF_MEMORY", None)})
    bare = Usage(max_rss_bytes=3 << 20, cpu_seconds=1.0, elapsed_seconds=1.0)       # no ReqMem, no Timelimit
    told = Usage(max_rss_bytes=1 << 20, cpu_seconds=1.0, elapsed_seconds=1.0, time_limit_seconds=60.0,
                 req_mem_bytes=50 << 20)                                            # accounting's word wins
    append_entries(str(record), [TaskUsage(1, 1, bare.to_json()), TaskUsage(2, 2, bare.to_json()),
                                 TaskUsage(1, 3, told.to_json())])
    assert main(["status", str(record)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line.split() for line in out.splitlines()[1:4]}
    assert [rows[v][7:10] for v in "123"] == [["3M/100M", "-", "00:00:01/00:06:00"],
                                               ["3M/300M", "-", "00:00:01/00:06:00"],
                                               ["1M/50M", "-", "00:00:01/00:01:00"]], out
