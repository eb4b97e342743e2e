"""Failure groups: one group per cause, however many tasks and whatever number each names."""
from __future__ import annotations

from backends.states import JobState
from backends.watch.rows import TaskRow
from backends.watch.triage import failure_groups, failures_summary


def row(value: int, state: JobState | None, code: int | None, signal: int | None = None) -> TaskRow:
    return TaskRow(value, "77", value, state, code, signal, 1.0, "vm", f"log/x.{value}.log", None, None)


LINES = {
    "log/x.7.log": "ValueError: bad input shard_00007.jsonl",
    "log/x.27.log": "ValueError: bad input shard_00027.jsonl",
    "log/x.31.log": "ValueError: bad input shard_00031.jsonl",
    "log/x.40.log": "KeyError: 'text'",
    "log/x.41.log": "ValueError: bad input shard_00041.jsonl",
    "log/x.50.log": "slurmstepd: error: Detected 1 oom_kill event",
}


def test_tasks_failing_for_one_reason_form_one_group_whatever_number_they_name() -> None:
    rows = [row(1, JobState.COMPLETED, 0), row(7, JobState.FAILED, 1), row(27, JobState.FAILED, 1),
            row(31, JobState.FAILED, 1), row(40, JobState.FAILED, 1), row(41, JobState.FAILED, 2),
            row(50, JobState.OUT_OF_MEMORY, 0, 9), row(60, JobState.RUNNING, None)]
    groups = failure_groups(rows, read_line=lambda path: LINES.get(path or "", ""), has_log=lambda path: True)
    assert [(g.state, g.exit_code, g.value_ranges, g.last_line, g.example_log) for g in groups] == [
        ("FAILED", 1, "7,27,31", "ValueError: bad input shard_00007.jsonl", "log/x.7.log"),
        ("FAILED", 1, "40", "KeyError: 'text'", "log/x.40.log"),
        ("FAILED", 2, "41", "ValueError: bad input shard_00041.jsonl", "log/x.41.log"),   # another exit code
        ("OUT_OF_MEMORY", 0, "50", "slurmstepd: error: Detected 1 oom_kill event", "log/x.50.log"),
    ]


def test_tasks_never_reached_offer_no_log_to_open() -> None:
    """A local run's NOT_RUN values have a planned log path but no file: `e.g. <path>` would send the user
    to a file that does not exist."""
    local = [TaskRow(v, "local", v, state, code, None, 1.0, "vm", f"log/x.{v}.log", None, None)
             for v, state, code in ((1, JobState.FAILED, 3), (2, None, None), (3, None, None))]
    groups = failure_groups(local, read_line=lambda path: "boom" if path == "log/x.1.log" else "",
                            has_log=lambda path: True)
    assert [(g.state, g.value_ranges, g.example_log) for g in groups] == [
        ("NOT_RUN", "2-3", None), ("FAILED", "1", "log/x.1.log")]
    # a Slurm task Slurm has not reported (UNKNOWN) may well have a log: it is still offered
    unknown = failure_groups([row(4, None, None)], read_line=lambda path: "", has_log=lambda path: True)
    assert [(g.state, g.example_log) for g in unknown] == [("UNKNOWN", "log/x.4.log")]


def test_the_example_of_a_group_is_a_log_that_is_there(tmp_path) -> None:
    """A Slurm array cancelled mid-run: 31 CANCELLED, e.g. log/s.10.log, a task that never started and
    never made that file. The example is the first log that exists; none when no task of it made one."""
    def cancelled(value: int) -> TaskRow:
        return TaskRow(value, "77", value, JobState.CANCELLED, None, None, None, None,
                       str(tmp_path / f"s.{value}.log"), None, None)

    (tmp_path / "s.12.log").write_text("# Running: work 12\n# Started at 2026-12-04T10:00:00+00:00 on vm\n")
    groups = failure_groups([cancelled(v) for v in (10, 11, 12, 13)])
    assert [(g.value_ranges, g.example_log) for g in groups] == [("10-13", str(tmp_path / "s.12.log"))]
    assert [g.example_log for g in failure_groups([cancelled(10), cancelled(11)])] == [None]


def test_the_head_names_the_ends_slurm_made_apart_from_the_programs_failures() -> None:
    """'5 of 9 task(s) did not succeed' hid that 2 hit their time limit and 1 was cancelled."""
    rows = [row(1, JobState.FAILED, 1), row(2, JobState.FAILED, 1), row(3, JobState.TIMEOUT, 0),
            row(4, JobState.TIMEOUT, 0), row(5, JobState.CANCELLED, 0), row(6, JobState.COMPLETED, 0)]
    groups = failure_groups(rows, read_line=lambda path: "", has_log=lambda path: True)
    assert failures_summary(groups, 9) == (
        "5 of 9 task(s) did not succeed (failed 2, timeout 2, cancelled 1), in 3 group(s)")
    assert failures_summary([], 9) == "no failed tasks: every one of 9 task(s) completed or is still live"


def test_a_last_line_cut_to_its_length_keeps_a_letter_with_its_accent(tmp_path):
    """The cut at 199 characters parted `é` (e and U+0301) and showed `e…`; half a joined emoji (man, ZWJ,
    woman) was shown as a man."""
    from backends.watch.triage import last_program_line

    for tail, shown in (("e\u0301 and more", "x" * 198 + "…"),
                        ("\U0001F468\u200d\U0001F469 family", "x" * 198 + "…")):
        log = tmp_path / "t.log"
        log.write_text("x" * 198 + tail + "\n", encoding="utf-8")
        assert last_program_line(str(log)) == shown
