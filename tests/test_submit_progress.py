"""The waiting side of hyperion-submit slurm without a cluster: progress lines and reports."""
from __future__ import annotations

import errno
import io
import time
from dataclasses import replace
from pathlib import Path

from backends.records.record import SubmitRecord, TaskRecord
from backends.states import JobState, TaskState
from backends.submit.slurm.sbatch import parse_job_id
from backends.watch.poller import PollUpdate, Trouble
from backends.watch.progress import Progress, count
from backends.watch.rows import expected
from backends.watch.wait import bad_ends, outcome_from, report


def _update(*states: TaskState, problem: str | None = None, as_of: float | None = None) -> PollUpdate:
    return PollUpdate({s.key: s for s in states}, states, problem, False, 1.0, problem, as_of)


def _state(task: int, state: JobState, code: int | None = 0) -> TaskState:
    return TaskState("7", task, state, exit_code=code)


def test_counts_treat_unseen_tasks_as_pending():
    states = {s.key: s for s in (_state(1, JobState.COMPLETED), _state(2, JobState.FAILED, 3),
                                 _state(3, JobState.RUNNING), _state(4, JobState.CANCELLED))}
    counts = count(states, 6)
    assert counts.text == "done 1/6 failed 1 cancelled 1 running 1 pending 2"


def test_counts_name_the_ends_slurm_made_apart_from_the_programs_failures():
    """'failed 6' counted 2 TIMEOUT and 1 CANCELLED: a user read six failing programs."""
    ends = [JobState.FAILED] * 3 + [JobState.TIMEOUT] * 2 + [JobState.CANCELLED, JobState.OUT_OF_MEMORY]
    states = {s.key: s for s in (_state(i, state, 1) for i, state in enumerate(ends))}
    assert count(states, 9).text == "done 0/9 failed 3 timeout 2 cancelled 1 out-of-memory 1 running 0 pending 2"


def test_plain_progress_prints_a_line_only_when_counts_change_and_says_how_old_states_are():
    out = io.StringIO()
    progress = Progress(2, stream=out, live=False)
    waiting = TaskState("7", 1, JobState.PENDING, reason="Priority")
    progress(_update(waiting))
    progress(_update(waiting))
    as_of = time.time() - 40
    down = "accounting (sacct) not answering for 40 s: sacct failed (rc 1): Connection refused"
    progress(_update(_state(1, JobState.RUNNING), problem=down, as_of=as_of))
    progress(_update(_state(1, JobState.RUNNING), problem=down.replace("40 s", "44 s"), as_of=as_of))
    progress(_update(_state(1, JobState.COMPLETED), _state(2, JobState.COMPLETED), as_of=time.time()))
    progress.close()
    clock = time.strftime("%H:%M:%S", time.localtime(as_of))
    assert out.getvalue().splitlines() == [
        "done 0/2 failed 0 running 0 pending 2 (Priority)",
        f"{down}; states as of {clock} (40 s ago)",
        "done 0/2 failed 0 running 1 pending 1",
        "Slurm answering again",
        "done 2/2 failed 0 running 0 pending 0",
    ]


def test_the_last_line_of_a_job_the_controller_forgot_counts_its_tasks_unknown_not_pending():
    """A wait ended for a job the controller forgot (its unended tasks dropped from the states,
    `PollUpdate.unknown`) left `done 1/4 failed 0 running 0 pending 3` above the closing lines, which
    say `(unknown 3)`: tasks nobody will ever know the end of read as waiting to start."""
    done = _state(1, JobState.COMPLETED)
    running = [_state(task, JobState.RUNNING) for task in (2, 3, 4)]
    unknown = frozenset(state.key for state in running)
    forgotten = replace(_update(done), all_terminal=True, forgotten="controller (squeue) knows no job(s) 7",
                        unknown=unknown)
    for live in (False, True):
        out = io.StringIO()
        progress = Progress(4, stream=out, live=live, columns=lambda: 200)
        progress(_update(done, *running))
        progress(forgotten)
        progress.close()
        shown = out.getvalue().replace("\r\x1b[K", "\n").split("\n")
        lines = [line for line in shown if line]
        assert lines == ["done 1/4 failed 0 running 3 pending 0",
                         "done 1/4 failed 0 unknown 3 running 0 pending 0"], (live, out.getvalue())
    assert count({done.key: done}, 4, unknown).text == "done 1/4 failed 0 unknown 3 running 0 pending 0"
    assert count({done.key: done}, 4).text == "done 1/4 failed 0 running 0 pending 3"     # none forgotten


class Gone(io.StringIO):
    """A stream whose terminal went away: every write fails with EIO."""

    def write(self, text: str) -> int:
        raise OSError(errno.EIO, "Input/output error")


def test_progress_on_a_lost_terminal_stops_quietly():
    progress = Progress(1, stream=Gone(), live=True)
    progress(_update(_state(1, JobState.RUNNING)))
    progress(_update(_state(1, JobState.COMPLETED)))
    progress.close()
    assert progress.broken


def test_live_progress_redraws_one_line_in_place():
    out = io.StringIO()
    progress = Progress(1, stream=out, live=True)
    progress(_update(_state(1, JobState.RUNNING)))
    progress(_update(_state(1, JobState.COMPLETED)))
    progress.close()
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("done 1/1 failed 0 running 0 pending 0\n")
    assert text.count("\r\x1b[K") == 2


def _outage(seconds: float) -> PollUpdate:
    """squeue refused `seconds` ago, the states as old: a poll's update as the poller makes it."""
    since = time.time() - seconds
    trouble = Trouble(since, "squeue", "squeue failed (rc 1): Unable to contact slurm controller", "unreachable", 5.0)
    return PollUpdate({("7", 1): _state(1, JobState.RUNNING)}, (), None, False, 5.0,
                      trouble.at(time.time()), since, troubles=(trouble,))


def test_a_live_line_saying_an_outage_grows_its_ages_between_polls():
    """hyperion-submit's line was drawn only when a poll reported: `not answering for 5 s` and
    `(5 s ago)` stood still for a whole poll interval, while watch's and the console's grew each
    second. Drawn again each second as of then, with the same words (age_text)."""
    out = io.StringIO()
    progress = Progress(1, stream=out, live=True)
    try:
        progress(_outage(40))
        deadline = time.monotonic() + 4.0      # no poll meanwhile: two redraws, a second apart
        while time.monotonic() < deadline and "for 42 s" not in out.getvalue():
            time.sleep(0.1)
        drawn = out.getvalue().split("\r\x1b[K")[1:]
    finally:
        progress.close()
    assert "not answering for 40 s" in drawn[0] and "(40 s ago)" in drawn[0], drawn
    assert len(drawn) >= 3, drawn
    assert "not answering for 41 s" in drawn[1] and "(41 s ago)" in drawn[1], drawn
    assert "not answering for 42 s" in drawn[-1] and "(42 s ago)" in drawn[-1], drawn
    # closed: the line is ended and never drawn again
    done = out.getvalue()
    assert done.endswith("\n")
    time.sleep(1.3)
    assert out.getvalue() == done


def test_a_plain_output_gets_no_line_more_while_an_outage_lasts_between_polls():
    """A log captured to a file must not get a line per second: the problem is said once per poll
    (at most each PROBLEM_EVERY s), as before."""
    out = io.StringIO()
    progress = Progress(1, stream=out, live=False)
    progress(_outage(40))
    said = out.getvalue()
    time.sleep(1.6)
    progress.close()
    assert out.getvalue() == said and said.count("\n") == 2, said
    assert "\r" not in said and "\x1b" not in said


def test_a_live_line_without_a_problem_is_not_drawn_again_between_polls():
    """Nothing grows on it: no redraw (a terminal over ssh is not written each second for nothing)."""
    out = io.StringIO()
    progress = Progress(1, stream=out, live=True)
    progress(_update(_state(1, JobState.RUNNING)))
    time.sleep(1.4)
    progress.close()
    assert out.getvalue().count("\r\x1b[K") == 1


def _drawn_on_a_pty(columns: int, *updates: PollUpdate) -> list[str]:
    """What a Progress on a real terminal `columns` wide drew for `updates`: each draw's text."""
    import fcntl
    import os
    import select
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
    with open(slave, "w", encoding="utf-8", closefd=True) as terminal:
        progress = Progress(1, stream=terminal)
        assert progress.live
        for update in updates:
            progress(update)
        progress.close()
        written = b""
        while select.select([master], [], [], 0.2)[0]:   # a pty's read may give one write's bytes
            written += os.read(master, 65536)
    os.close(master)
    return [part.decode().rstrip("\r\n") for part in written.split(b"\r\x1b[K")[1:]]


def test_a_live_line_wider_than_the_terminal_is_cut_to_one_row():
    """On a 120-column terminal the outage's line took two rows; `\\r\\x1b[K` cleared only the
    second, so each redraw left a row behind (`done 0/6 ... squeue: error: U`, one a second)."""
    from rich.cells import cell_len

    drawn = _drawn_on_a_pty(100, _outage(40), _outage(41))
    assert len(drawn) == 2, drawn
    for line in drawn:
        assert cell_len(line) <= 99 and "\u2026" in line, line
        assert line.startswith("done 0/1 failed 0 running 1 pending 0 [controller (squeue) not answering for 4"), line
    assert "for 40 s" in drawn[0] and "for 41 s" in drawn[1], drawn


def _outage_saying(seconds: float, error: str, answered: bool = True) -> PollUpdate:
    """squeue failing with `error` for `seconds`; `answered`: it answered before (states that old)."""
    since = time.time() - seconds
    trouble = Trouble(since, "squeue", error, "unreachable", 5.0)
    return PollUpdate({("7", 1): _state(1, JobState.RUNNING)}, (), None, False, 5.0,
                      trouble.at(time.time()), since if answered else None, troubles=(trouble,))


def test_a_live_line_on_a_narrow_terminal_keeps_its_growing_age_and_cuts_the_error_text():
    """On 60 and 80 columns the cut at the line's end took `... (40 s ago)` and `not answering for
    40 s` off: each second's redraw drew the same `done 0/1 ... [controller (squeue)…`, and the
    user could not tell the line was live. The error text between them is cut (with `…`), the
    counts and the age at the end stay; cells counted, a wide character two."""
    from rich.cells import cell_len

    long_error = "squeue failed (rc 1): squeue: error: Unable to contact slurm controller (connect failure)"
    wide_error = "squeue failed (rc 1): squeue: エラー: Slurm コントローラに接続できません (接続失敗) " * 2
    for columns in (60, 80):
        for error in (long_error, wide_error):
            drawn = _drawn_on_a_pty(columns, _outage_saying(40, error), _outage_saying(41, error))
            assert len(drawn) == 2, (columns, drawn)
            for line, age in zip(drawn, ("40 s", "41 s")):
                assert cell_len(line) <= columns - 1, (columns, line)
                assert line.startswith("done 0/1 failed 0 running 1 pending 0 ["), (columns, line)
                assert line.endswith(f"\u2026 ({age} ago)]"), (columns, line)
            # no answer since the submission: `for 40 s` is what grows, kept as the error text goes
            drawn = _drawn_on_a_pty(columns, _outage_saying(40, error, False), _outage_saying(41, error, False))
            assert len(drawn) == 2, (columns, drawn)
            for line, age in zip(drawn, ("40 s", "41 s")):
                assert cell_len(line) <= columns - 1, (columns, line)
                assert line.startswith("done 0/1 failed 0 running 1 pending 0 [contro"), (columns, line)
                assert f"\u2026 for {age}" in line and "\u2026" in line, (columns, line)


def test_a_live_line_that_fits_is_the_whole_line():
    """Wide enough, nothing is cut: the counts and every word of the outage, as a plain output says them."""
    update = _outage(40)
    drawn = _drawn_on_a_pty(250, update)
    clock = time.strftime("%H:%M:%S", time.localtime(update.as_of))
    assert drawn == ["done 0/1 failed 0 running 1 pending 0 [controller (squeue) not answering for 40 s: "
                     "squeue failed (rc 1): Unable to contact slurm controller; "
                     f"states as of {clock} (40 s ago)]"]


def _record(tmp_path: Path) -> SubmitRecord:
    tasks = []
    for value in (1, 2, 3):
        log = tmp_path / f"t.{value}.log"
        if value != 3:
            log.write_text("# Running: x\n")
        tasks.append(TaskRecord(value, "7", value, str(log), str(tmp_path / f"q/slurm-7_{value}.out"),
                                str(tmp_path / f"q/slurm-7_{value}.err")))
    return SubmitRecord(str(tmp_path / "q/t.JOB.submit.json"), "slurm", ("hyperion-submit",), "c", {},
                        None, "JOB", (), tuple(tasks), "now", str(tmp_path))


def test_outcome_flags_failures_and_missing_logs_and_reports_their_paths(tmp_path):
    record = _record(tmp_path)
    assert expected(record) == {"7": (1, 2, 3)}
    ran = [replace(s, node="n1", elapsed=5.0) for s in (_state(1, JobState.COMPLETED), _state(2, JobState.FAILED, 3),
                                                          _state(3, JobState.COMPLETED))]   # each ran on a node
    states = {s.key: s for s in ran}
    outcome = outcome_from(record, states)
    assert not outcome.ok and outcome.exit_status == 1
    assert [task.value for task, _ in outcome.bad] == [2, 3]
    lines = report(outcome, "JOB")
    assert lines[0].startswith("JOB=2 (job 7_2): FAILED exit code 3; log ")
    assert str(tmp_path / "t.2.log") in lines[0] and str(tmp_path / "q/slurm-7_2.err") in lines[0]
    assert "log is missing" in lines[1] and f"{tmp_path / 't.3.log'} (missing)" in lines[1]
    # Slurm's own files: none was written (a task cancelled while pending): said, not named as there
    assert lines[0].endswith(f"slurm {tmp_path / 'q/slurm-7_2.out'} (missing) {tmp_path / 'q/slurm-7_2.err'} (missing)")
    (tmp_path / "q").mkdir(exist_ok=True)
    (tmp_path / "q/slurm-7_2.out").write_text("")
    assert report(outcome, "JOB")[0].endswith(f"slurm {tmp_path / 'q/slurm-7_2.out'} "
                                              f"{tmp_path / 'q/slurm-7_2.err'} (missing)")
    good = outcome_from(record, {**states, ("7", 2): _state(2, JobState.COMPLETED)})
    assert [task.value for task, _ in good.bad] == [3]


def test_a_task_cancelled_while_pending_names_its_log_as_status_and_watch_do(tmp_path):
    """hyperion-submit's closing line of a task cancelled while pending (no node, no time, no file
    written) named its log and both Slurm files `(missing)`, as if lost, where `hyperion-jobs status`
    and watch's end say `no log (never started)`; one that ran and left no log is still `(missing)`."""
    record = _record(tmp_path)
    states = {s.key: s for s in (replace(_state(1, JobState.COMPLETED), node="n1", elapsed=5.0),
                                 replace(_state(2, JobState.COMPLETED), node="n1", elapsed=5.0),
                                 _state(3, JobState.CANCELLED, None))}
    # `no log (never started)` once, not `log no log (never started)`
    assert report(outcome_from(record, states), "JOB") == ["JOB=3 (job 7_3): CANCELLED; no log (never started)"]
    ran = {**states, ("7", 3): replace(states[("7", 3)], node="n1", elapsed=2.0)}   # cancelled while running
    assert report(outcome_from(record, ran), "JOB")[0] == (
        f"JOB=3 (job 7_3): CANCELLED; log {tmp_path / 't.3.log'} (missing); "
        f"slurm {tmp_path / 'q/slurm-7_3.out'} (missing) {tmp_path / 'q/slurm-7_3.err'} (missing)")


def test_a_run_with_many_failures_names_twenty_and_counts_the_rest(tmp_path):
    """3000 failed tasks were 3000 lines at the end of the run, burying the summary line."""
    tasks = tuple(TaskRecord(value=v, job_id="7", array_task_id=v, log=str(tmp_path / f"t.{v}.log"),
                             slurm_out=None, slurm_err=None) for v in range(1, 31))
    for task in tasks:
        Path(task.log).write_text("x\n")
    record = replace(_record(tmp_path), tasks=tasks)
    outcome = outcome_from(record, {t.key: t for t in (_state(v, JobState.FAILED, 3) for v in range(1, 31))})
    lines = report(outcome, "JOB", "/exp/log/q/t.JOB.submit.json")
    assert len(lines) == 21 and lines[19].startswith("JOB=20 (job 7_20): FAILED exit code 3")
    assert lines[20] == ("... and 10 more task(s) that did not succeed: "
                         "hyperion-jobs status /exp/log/q/t.JOB.submit.json --failures groups them")


def test_the_last_line_counts_a_completed_task_without_its_log_and_one_never_reported_by_what_happened(tmp_path):
    """hyperion-submit's last line counted a COMPLETED task whose log is missing as `no-log 1` (a
    state nobody has) and a task Slurm never reported as `pending 1` after everything ended."""
    record = _record(tmp_path)
    states = {s.key: s for s in (_state(1, JobState.FAILED, 3), _state(3, JobState.COMPLETED))}   # 2: never seen
    outcome = outcome_from(record, states)
    assert [task.value for task, _ in outcome.bad] == [1, 2, 3]
    assert bad_ends(outcome) == "failed 1, unknown 1, completed 1; 1 completed task's log is missing"
    assert "never reported by Slurm" in report(outcome, "JOB")[1]


def test_parsable_sbatch_output():
    assert parse_job_id("1234\n") == "1234"
    assert parse_job_id("1234;cluster\n") == "1234"
    assert parse_job_id("") is None
    assert parse_job_id("Submitted batch job 12") is None


def test_the_live_lines_parts_join_to_what_a_plain_output_says():
    """The parts the live line is cut by say the same words as `staleness` (two sources failing,
    a control code in an error: escaped alike), so a wide terminal sees the plain output's line."""
    from backends.watch.progress import _line_parts, staleness

    now = time.time()
    troubles = (Trouble(now - 40, "squeue", "squeue failed (rc 1): x\x1b[31m", "unreachable", 5.0),
                Trouble(now - 20, "sacct", "sacct: rate limit", "rate_limited", 30.0))
    update = PollUpdate({}, (), None, False, 5.0, "; ".join(t.at(now) for t in troubles), now - 40,
                        troubles=troubles)
    assert "".join(part[0] for part in _line_parts("L", update, now)) == f"L [{staleness(update, now)}]"
    assert "\x1b" not in "".join(part[0] for part in _line_parts("L", update, now))
    for plain in (PollUpdate({}, (), None, False, 5.0, "squeue refused", None),
                  replace(update, as_of=None)):    # no answer yet
        assert "".join(part[0] for part in _line_parts("L", plain, now)) == f"L [{staleness(plain, now)}]"


def test_a_narrow_live_line_with_two_sources_down_and_no_answer_grows_one_age():
    """squeue and sacct both failing since the submission: the line keeps the first source's
    `for N s` (not both: `for 30 s… for 30 s…` read as two things), and it grows."""
    from rich.cells import cell_len

    def down(seconds: float) -> PollUpdate:
        since = time.time() - seconds
        troubles = (Trouble(since, "squeue", "squeue: error: Unable to contact slurm controller", "unreachable", 5.0),
                    Trouble(since, "sacct", "sacct: error: Problem talking to the database", "unreachable", 5.0))
        return PollUpdate({}, (), None, False, 5.0, "; ".join(t.at(time.time()) for t in troubles), None,
                          troubles=troubles)

    for columns in (60, 80):
        drawn = _drawn_on_a_pty(columns, down(30), down(31))
        assert len(drawn) == 2, drawn
        for line, age in zip(drawn, ("30 s", "31 s")):
            assert cell_len(line) <= columns - 1 and line.count(f"for {age}") == 1, line
            assert line.startswith("done 0/1 failed 0 running 0 pending 1 [contro"), line
