"""The poller driven by recorded sacct/squeue outputs: interval, merge over time, errors."""
from __future__ import annotations

from backends.states import JobState
from backends.watch.poller import Poller
from backends.watch.slurm.accounting import CommandResult

EMPTY = CommandResult(0, "", "")
DOWN = CommandResult(1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")


class Script:
    """Answers each sacct/squeue call with the next recorded result."""

    def __init__(self, sacct: list[CommandResult], squeue: list[CommandResult]) -> None:
        self.sacct, self.squeue = list(sacct), list(squeue)
        self.calls: list[list[str]] = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        queue = self.sacct if argv[0] == "sacct" else self.squeue
        return queue.pop(0) if len(queue) > 1 else queue[0]


def ok(text: str) -> CommandResult:
    return CommandResult(0, text, "")


def test_not_in_sacct_yet_is_not_a_result():
    script = Script([EMPTY], [EMPTY])
    update = Poller({"3": (1, 2)}, runner=script).poll_once()
    assert update.states == {} and not update.all_terminal and update.error is None


def test_one_sacct_and_one_squeue_per_poll_for_all_jobs():
    script = Script([EMPTY], [EMPTY])
    Poller({"3": (1,), "4": None}, runner=script).poll_once()
    assert [c[0] for c in script.calls] == ["sacct", "squeue"]
    assert script.calls[0][2] == "3,4" and script.calls[1][2] == "3,4"


def test_states_over_time_and_only_changes_reported():
    script = Script(
        [EMPTY,
         ok("3_1|3|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n"
            "3_2|4|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n"),
         ok("3_1|3|COMPLETED|0:0|00:00:01|vm|a|b\n3_2|4|FAILED|3:0|00:00:01|vm|a|b\n")],
        [ok("3_1|PENDING|0|0:00||\n3_2|PENDING|0|0:00||\n"),
         ok("3_1|RUNNING|0|0:01|vm|\n3_2|RUNNING|0|0:01|vm|\n"),
         ok("")])
    poller = Poller({"3": (1, 2)}, runner=script)
    first = poller.poll_once()
    assert {k: s.state for k, s in first.states.items()} == {
        ("3", 1): JobState.PENDING, ("3", 2): JobState.PENDING}
    second = poller.poll_once()
    assert {s.state for s in second.changed} == {JobState.RUNNING}   # squeue beats sacct's PENDING
    third = poller.poll_once()
    assert third.all_terminal
    assert third.states[("3", 2)].state is JobState.FAILED and third.states[("3", 2)].exit_code == 3
    assert len(third.changed) == 2


def test_stale_sacct_pending_does_not_undo_running():
    script = Script([EMPTY, ok("3_1|3|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n")],
                    [ok("3_1|RUNNING|0|0:01|vm|\n"), ok("")])
    poller = Poller({"3": (1,)}, runner=script)
    poller.poll_once()
    update = poller.poll_once()
    assert update.states[("3", 1)].state is JobState.RUNNING and update.changed == ()


def test_interval_backs_off_to_cap_and_resets_on_change():
    pending = ok("3_1|PENDING|0|0:00||\n")
    script = Script([EMPTY], [pending] * 12 + [ok("3_1|RUNNING|0|0:01|vm|\n")])
    poller = Poller({"3": (1,)}, floor=1.0, cap=5.0, runner=script)
    intervals = [poller.poll_once().interval for _ in range(12)]
    assert intervals[0] == 1.0 and intervals[1] == 1.5 and intervals[2] == 2.25
    assert max(intervals) == 5.0 and intervals[-1] == 5.0
    assert poller.poll_once().interval == 1.0


def test_transient_error_is_reported_and_never_a_result():
    script = Script([ok("3_1|3|RUNNING|0:0|00:00:01|vm|a|Unknown\n"),
                     CommandResult(1, "", "sacct: error: Problem talking to the database: Connection refused\n"),
                     ok("3_1|3|COMPLETED|0:0|00:00:09|vm|a|b\n")],
                    [ok("3_1|RUNNING|0|0:01|vm|\n"), ok("")])   # no squeue after a failed sacct
    poller = Poller({"3": (1,)}, floor=1.0, cap=30.0, runner=script)
    poller.poll_once()
    failed = poller.poll_once()
    assert "Problem talking to the database" in failed.error
    assert failed.states[("3", 1)].state is JobState.RUNNING and failed.changed == ()
    assert failed.interval == 2.0
    done = poller.poll_once()
    assert done.error is None and done.all_terminal


def test_squeue_down_keeps_only_final_sacct_states():
    script = Script([ok("3_1|3|COMPLETED|0:0|00:00:01|vm|a|b\n3_2|4|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n")],
                    [DOWN])
    update = Poller({"3": (1, 2)}, runner=script).poll_once()
    assert "Unable to contact" in update.error
    assert set(update.states) == {("3", 1)}


def test_run_stops_when_all_terminal_and_finished_jobs_are_not_queried_again():
    script = Script([ok("3|3|COMPLETED|0:0|00:00:01|vm|a|b\n"),
                     ok("3|3|COMPLETED|0:0|00:00:01|vm|a|b\n4_1|5|RUNNING|0:0|00:00:01|vm|a|Unknown\n"),
                     ok("4_1|5|FAILED|2:0|00:00:02|vm|a|b\n")],
                    [ok("4_1|RUNNING|0|0:01|vm|\n"), ok(""), ok("")])
    slept: list[float] = []
    seen = []
    final = Poller({"3": None, "4": (1,)}, runner=script, sleep=slept.append).run(seen.append)
    assert final.all_terminal and len(seen) == 3 and len(slept) == 2
    assert final.states[("3", None)].state is JobState.COMPLETED
    assert final.states[("4", 1)].exit_code == 2
    assert script.calls[-2][2] == "4"   # job 3 was done: only job 4 asked about


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_pending_task_cancelled_alone_vanishes_and_is_reported_cancelled():
    # Recorded: 327_[2-3%1] pending, then `scancel 327_3`: the range row becomes
    # 327_[2%1] and task 3 never gets a row of its own anywhere.
    before = ok("327_1|328|RUNNING|0:0|00:00:01|vm|a|Unknown\n"
                "327_[2-3%1]|327|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n")
    after = ok("327_1|328|RUNNING|0:0|00:00:05|vm|a|Unknown\n"
               "327_[2%1]|327|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n")
    script = Script([before, after], [ok("327_2|PENDING|0|0:00||\n327_1|RUNNING|0|0:01|vm|\n")])
    clock = Clock()
    poller = Poller({"327": (1, 2, 3)}, runner=script, clock=clock, vanished_after=12.0)
    assert poller.poll_once().states[("327", 3)].state is JobState.PENDING
    clock.now = 1.0
    assert poller.poll_once().states[("327", 3)].state is JobState.PENDING   # missing: not a result yet
    clock.now = 12.0
    assert poller.poll_once().states[("327", 3)].state is JobState.PENDING
    clock.now = 13.5
    update = poller.poll_once()
    assert update.states[("327", 3)].state is JobState.CANCELLED
    assert [s.key for s in update.changed] == [("327", 3)]
    assert update.states[("327", 2)].state is JobState.PENDING


def test_job_not_in_sacct_yet_never_counts_as_vanished():
    clock = Clock()
    script = Script([EMPTY], [EMPTY])
    poller = Poller({"8": (1, 2)}, runner=script, clock=clock, vanished_after=1.0)
    for step in range(5):
        clock.now = step * 10.0
        update = poller.poll_once()
    assert update.states == {} and not update.all_terminal


def test_stale_range_row_does_not_end_a_task_that_started():
    script = Script([ok("9_[1-2]|9|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n"),
                     ok("9_[1-2]|9|CANCELLED by 0|0:0|00:00:00|None assigned|None|x\n")],
                    [ok("9_1|RUNNING|0|0:01|vm|\n9_2|PENDING|0|0:00||\n"),
                     CommandResult(1, "", "slurm_load_jobs error: Invalid job id specified\n")])
    poller = Poller({"9": (1, 2)}, runner=script)
    poller.poll_once()
    update = poller.poll_once()
    assert update.states[("9", 1)].state is JobState.RUNNING      # it has started: wait for its own row
    assert update.states[("9", 2)].state is JobState.CANCELLED    # never started: the range row is its row
