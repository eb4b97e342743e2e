"""When `hyperion-jobs logs -f` stops: the stopping rule, and the follow loop reading what is left."""
from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from backends.cli.jobs import log_output
from backends.states import JobState
from backends.watch.rows import TaskRow
from backends.watch.task_end import EndWatch, TaskEnd, ended_text, row_end

RUNNING = TaskRow(1, "4711", 7, JobState.RUNNING, None, None, 12.0, "node01", "/x/r.1.log", None, None)


@pytest.mark.parametrize("state,code,signal,end", [
    (JobState.RUNNING, None, None, None),
    (JobState.PENDING, None, None, None),
    (JobState.COMPLETING, None, None, None),
    (JobState.REQUEUED, None, None, None),
    (JobState.FAILED, 3, None, TaskEnd("FAILED", 3)),
    (JobState.COMPLETED, 0, None, TaskEnd("COMPLETED", 0)),
    (JobState.TIMEOUT, 0, 15, TaskEnd("TIMEOUT")),            # Slurm's 0:15 is not the program's
    (JobState.OUT_OF_MEMORY, 0, None, TaskEnd("OUT_OF_MEMORY")),
    (JobState.CANCELLED, 0, 15, TaskEnd("CANCELLED")),
    (JobState.NODE_FAIL, None, None, TaskEnd("NODE_FAIL")),
])
def test_a_slurm_task_has_ended_once_its_row_is_terminal(state, code, signal, end):
    assert row_end(replace(RUNNING, state=state, exit_code=code, signal=signal)) == end


def test_a_requeued_task_has_not_ended_while_its_new_run_waits_or_runs():
    """The row of a task Slurm ran again is its new run's (task_row: a higher restart count)."""
    assert row_end(replace(RUNNING, state=JobState.PENDING, restart_count=1, reason="BeginTime")) is None
    assert row_end(replace(RUNNING, state=JobState.RUNNING, restart_count=1)) is None
    assert row_end(replace(RUNNING, state=JobState.COMPLETED, exit_code=0, restart_count=1)) == TaskEnd("COMPLETED", 0)


def test_a_local_task_ends_as_its_run_says_and_unknown_is_not_an_end():
    local = replace(RUNNING, job_id="local", task_id=None)
    assert row_end(local) is None
    assert row_end(replace(local, state=JobState.LOST)) == TaskEnd("LOST")
    assert row_end(replace(local, state=JobState.CANCELLED, exit_code=143)) == TaskEnd("CANCELLED", 143)
    assert row_end(replace(local, state=None)) == TaskEnd("NOT_RUN")      # its run ended before reaching it
    assert row_end(replace(RUNNING, state=None)) is None                  # Slurm has not said yet: UNKNOWN


def test_the_ended_line_names_the_task_state_and_exit_code():
    assert ended_text("1234_7", TaskEnd("FAILED", 3)) == "task 1234_7 ended FAILED (exit 3); stopped following"
    assert ended_text("1234_7", TaskEnd("TIMEOUT")) == "task 1234_7 ended TIMEOUT; stopped following"
    assert ended_text("a\x1b[2Jb:3", TaskEnd("FAILED", 1, 9)) == \
        "task a\\x1b[2Jb:3 ended FAILED (exit 1, SIGKILL); stopped following"


class _EndsAfter(EndWatch):
    """Not ended at its first look, when the task writes its last bytes; ended at the next."""

    def __init__(self, path: Path, last: bytes) -> None:
        self.path, self.last, self.looks = path, last, 0
        self.said = ["accounting (sacct) not answering"]     # handed over once

    def ended(self) -> TaskEnd | None:
        self.looks += 1
        if self.looks == 1:
            with self.path.open("ab") as handle:
                handle.write(self.last)
            return None
        return TaskEnd("FAILED", 3)

    def notes(self) -> list[str]:
        said, self.said = self.said, []
        return said


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("out,shown", [
    (io.StringIO(), "one\ntwo\nthree\nfour"),          # piped: the log's bytes, no newline added
    (_Terminal(), "one\ntwo\nthree\nfour\rfour\n"),     # the open line drawn, then written as a line
], ids=["piped", "terminal"])
def test_follow_reads_what_the_ended_task_left_then_stops(tmp_path, capsys, out, shown):
    """The task's last lines (the very last one without its newline) come after the look that found
    it running: they are read after the end is known, then the ended line, exit 0."""
    log = tmp_path / "r.1.log"
    log.write_bytes(b"one\ntwo\n")
    end = _EndsAfter(log, b"three\nfour")
    assert log_output.follow(str(log), 5, False, out=out, end=end, name="4711_7") == 0
    assert out.getvalue() == shown
    err = capsys.readouterr().err
    assert err.splitlines() == ["hyperion-jobs: accounting (sacct) not answering",
                                "hyperion-jobs: task 4711_7 ended FAILED (exit 3); stopped following"]


def test_one_rule_says_slurm_ended_a_task_for_logs_and_the_console() -> None:
    """`hyperion-jobs logs`' stderr note and the console log pane's title each wrote out which ends
    are Slurm's (not the program's); both now ask backends.states.ended_by_slurm."""
    from backends.cli.jobs.commands import slurm_ended_note
    from backends.states import JobState, ended_by_slurm

    slurms = {s for s in JobState if ended_by_slurm(s)}
    assert {JobState.TIMEOUT, JobState.CANCELLED, JobState.OUT_OF_MEMORY, JobState.NODE_FAIL} <= slurms
    assert not slurms & {JobState.COMPLETED, JobState.FAILED, JobState.SPECIAL_EXIT, JobState.LOST,
                         JobState.RUNNING, JobState.PENDING}
    assert not ended_by_slurm(None)
    for state in JobState:
        noted = slurm_ended_note("r:1", state.value, "q/slurm-1_1.err", program_log=True) is not None
        assert noted == (state in slurms), state


def test_a_program_that_ran_to_its_end_is_not_told_as_ended_by_slurm() -> None:
    """A task whose worker alone was killed for memory ends OUT_OF_MEMORY while its program writes
    `# Ended (code 0)`: `logs` and the console said "Slurm ended it, not the program". The log's
    footer code (sacct says 0:125 either way) now picks the words; a kill's code (137), or no footer,
    keeps them."""
    from backends.cli.jobs.commands import slurm_ended_note
    from backends.watch.task_end import program_end_words

    assert program_end_words("OUT_OF_MEMORY", 0) == "the program ended (code 0); a process of it was OOM-killed"
    assert program_end_words("OUT_OF_MEMORY", 2) == "the program ended (code 2); a process of it was OOM-killed"
    assert program_end_words("TIMEOUT", 0) == "the program ended (code 0); Slurm then ended the task"
    assert program_end_words("OUT_OF_MEMORY", 137) is None       # the program itself was killed
    assert program_end_words("OUT_OF_MEMORY", None) is None      # no footer: it stopped mid-run
    # the console's title at 80 columns: the same, shorter
    assert program_end_words("TIMEOUT", 0, short=True) == "program exit 0, then Slurm ended it"
    assert program_end_words("OUT_OF_MEMORY", 137, short=True) is None
    assert slurm_ended_note("r:7", "OUT_OF_MEMORY", "q/slurm-1_7.err", program_log=True, program_code=0) == (
        "hyperion-jobs: r:7 ended OUT_OF_MEMORY: the program ended (code 0); a process of it was OOM-killed; "
        "Slurm's reason: hyperion-jobs logs r:7 --err")
    assert slurm_ended_note("r:7", "OUT_OF_MEMORY", "q/slurm-1_7.err", program_log=True, program_code=137) == (
        "hyperion-jobs: r:7 ended OUT_OF_MEMORY (Slurm ended it, not the program); "
        "Slurm's reason: hyperion-jobs logs r:7 --err")
    assert slurm_ended_note("r:7", "COMPLETED", "q/slurm-1_7.err", program_log=True, program_code=0) is None
