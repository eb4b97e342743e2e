"""The poller driven by recorded sacct/squeue outputs and a fake clock: merge over time,
requeues, outages, pacing and the query budget."""
from __future__ import annotations

import sys
import threading

import pytest

from backends.states import LEDGER, JobState, TaskState
from backends.watch.budget import SPREAD, QueryBudget
from backends.watch.poller import Poller, PollUpdate
from backends.watch.slurm.accounting import CommandResult

EMPTY = CommandResult(0, "", "")
DOWN = CommandResult(1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")
DBD_DOWN = CommandResult(1, "", "sacct: error: slurm_persist_conn_open_without_init: failed to open "
                                "persistent connection to host:localhost:6819: Connection refused\n"
                                "sacct: error: Problem talking to the database: Connection refused\n")
RATE_LIMITED = CommandResult(1, "", "slurm_load_jobs error: Rate limit exceeded, please retry momentarily\n")


class Script:
    """Answers each sacct/squeue call with the next recorded result (the last one repeats)."""

    def __init__(self, sacct: list[CommandResult], squeue: list[CommandResult]) -> None:
        self.sacct, self.squeue = list(sacct), list(squeue)
        self.calls: list[list[str]] = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        queue = self.sacct if argv[0] == "sacct" else self.squeue
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def tools(self) -> list[str]:
        return [c[0] for c in self.calls]


class Clock:
    """A monotonic clock that only moves when the poller sleeps (or a test says so)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def ok(text: str) -> CommandResult:
    return CommandResult(0, text, "")


def poller(expected, script, clock=None, **kw) -> Poller:
    clock = clock or Clock()
    return Poller(expected, runner=script, clock=clock, sleep=clock.sleep, wall=lambda: 1000 + clock.now, **kw)


def test_not_in_slurm_yet_is_not_a_result():
    script = Script([EMPTY], [EMPTY])
    update = poller({"3": (1, 2)}, script).poll_once()
    assert update.states == {} and not update.all_terminal and update.error is None


def test_one_squeue_for_all_jobs_and_sacct_only_for_what_the_controller_does_not_name():
    script = Script([EMPTY], [ok("3_1|RUNNING|0|0:01|vm|None|0|\n4|PENDING|0|0:00||Priority|0|\n")])
    p = poller({"3": (1,), "4": None}, script)
    p.poll_once()
    assert script.tools() == ["squeue"] and script.calls[0][2] == "3,4"
    script.squeue = [ok("4|PENDING|0|0:00||Priority|0|\n")]   # 3_1 left the controller
    p.poll_once()
    assert script.tools() == ["squeue", "squeue", "sacct"] and script.calls[2][2] == "3"


def test_states_over_time_and_only_changes_reported():
    script = Script([ok("3_1|3|COMPLETED|0:0|00:00:01|vm|a|b|None\n3_2|4|FAILED|3:0|00:00:01|vm|a|b|None\n")],
                    [ok("3_1|PENDING|0|0:00||Priority|0|\n3_2|PENDING|0|0:00||Priority|0|\n"),
                     ok("3_1|RUNNING|0|0:01|vm|None|0|\n3_2|RUNNING|0|0:01|vm|None|0|\n"),
                     ok("3_1|COMPLETED|0|0:01|vm|None|0|\n3_2|FAILED|768|0:01|vm|None|0|\n")])
    p = poller({"3": (1, 2)}, script)
    first = p.poll_once()
    assert {k: (s.state, s.reason) for k, s in first.states.items()} == {
        ("3", 1): (JobState.PENDING, "Priority"), ("3", 2): (JobState.PENDING, "Priority")}
    second = p.poll_once()
    assert {s.state for s in second.changed} == {JobState.RUNNING}
    assert second.states[("3", 1)].reason is None
    third = p.poll_once()
    assert third.all_terminal and len(third.changed) == 2
    assert third.states[("3", 2)].state is JobState.FAILED and third.states[("3", 2)].exit_code == 3
    # the controller said every task ended: one last sacct for the lasting rows
    assert script.tools() == ["squeue", "squeue", "squeue", "sacct"]
    assert third.states[("3", 1)].source == "sacct"


def test_an_exit_status_above_128_is_the_controllers_not_accountings_low_bits():
    """A script ending 137 (its task got SIGKILL): squeue's raw status 35072 is 137, sacct (22.05) files 9:0,
    as seen on the test cluster. hyperion-submit's last sacct made the report say "exit code 9" while the
    footer, the ledger and status said 137."""
    script = Script([ok("5_1|5|FAILED|9:0|00:00:01|vm|a|b|None\n")],
                    [ok("5_1|RUNNING|0|0:01|vm|None|0|\n"), ok("5_1|FAILED|35072|0:01|vm|None|0|\n")])
    p = poller({"5": (1,)}, script)
    p.poll_once()
    final = p.poll_once()
    assert final.all_terminal and script.tools()[-1] == "sacct"
    task = final.states[("5", 1)]
    assert (task.state, task.exit_code, task.signal, task.source) == (JobState.FAILED, 137, None, "sacct")


def test_merge_keeps_the_controllers_exit_status_for_the_same_end():
    from backends.watch.slurm.accounting import merge, parse_sacct_rows, parse_squeue

    sacct = parse_sacct_rows("5_1|5|FAILED|9:0|00:00:01|vm|a|b|None\n")
    squeue = parse_squeue("5_1|FAILED|35072|0:01|vm|None|0|\n")
    assert merge(sacct, squeue)[("5", 1)].exit_code == 137
    assert merge(sacct, [])[("5", 1)].exit_code == 9     # the controller forgot it: accounting is all there is


def test_stale_sacct_pending_does_not_undo_running():
    script = Script([ok("3_1|3|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown|Priority\n")],
                    [ok("3_1|RUNNING|0|0:01|vm|None|0|\n"), EMPTY])
    p = poller({"3": (1,)}, script)
    p.poll_once()
    update = p.poll_once()
    assert update.states[("3", 1)].state is JobState.RUNNING and update.changed == ()


def test_requeued_task_is_not_final_until_its_new_attempt_ends():
    # NODE_FAIL with JobRequeue=1: accounting closes the old attempt as NODE_FAIL while the
    # controller, with RestartCnt 1, finishes it (COMPLETING) and queues it again.
    script = Script([ok("8_1|9|NODE_FAIL|0:0|00:00:07|vm|a|b|None\n")],
                    [ok("8_1|RUNNING|0|0:05|vm|None|0|\n8_2|RUNNING|0|0:05|vm|None|0|\n"),
                     ok("8_1|COMPLETING|0|0:07|vm|None|1|\n8_2|RUNNING|0|0:07|vm|None|0|\n"),
                     ok("8_1|PENDING|0|0:00||BeginTime|1|\n8_2|COMPLETED|0|0:09|vm|None|0|\n"),
                     ok("8_1|RUNNING|0|0:01|vm|None|1|\n8_2|COMPLETED|0|0:09|vm|None|0|\n"),
                     ok("8_1|COMPLETED|0|0:03|vm|None|1|\n8_2|COMPLETED|0|0:09|vm|None|0|\n")])
    p = poller({"8": (1, 2)}, script)
    p.poll_once()
    dying = p.poll_once()
    assert dying.states[("8", 1)].state is JobState.COMPLETING and not dying.all_terminal
    again = p.poll_once()
    assert again.states[("8", 1)].state is JobState.PENDING
    assert again.states[("8", 1)].restart_count == 1 and again.states[("8", 1)].reason == "BeginTime"
    assert not again.all_terminal
    assert p.poll_once().states[("8", 1)].state is JobState.RUNNING
    script.sacct = [ok("8_1|9|COMPLETED|0:0|00:00:03|vm|a|b|None\n8_2|10|COMPLETED|0:0|00:00:09|vm|a|b|None\n")]
    done = p.poll_once()
    assert done.all_terminal and done.states[("8", 1)].state is JobState.COMPLETED
    assert done.states[("8", 1)].restart_count == 1


def test_a_requeue_by_hand_reopens_an_ended_task():
    script = Script([EMPTY], [ok("5_1|COMPLETED|0|0:02|vm|None|0|\n5_2|RUNNING|0|0:02|vm|None|0|\n"),
                              ok("5_1|PENDING|0|0:00||BeginTime|1|\n5_2|RUNNING|0|0:03|vm|None|0|\n")])
    p = poller({"5": (1, 2)}, script)
    assert p.poll_once().states[("5", 1)].state is JobState.COMPLETED
    update = p.poll_once()
    assert update.states[("5", 1)].state is JobState.PENDING and update.states[("5", 1)].restart_count == 1


def test_squeue_down_lets_sacct_move_live_tasks_but_not_end_a_requeueable_one():
    script = Script([ok("3_1|3|RUNNING|0:0|00:00:01|vm|a|Unknown|None\n"
                        "3_2|4|NODE_FAIL|0:0|00:00:01|vm|a|b|None\n"
                        "3_3|5|COMPLETED|0:0|00:00:01|vm|a|b|None\n")], [DOWN])
    update = poller({"3": (1, 2, 3)}, script).poll_once()
    assert "Unable to contact" in update.error
    assert {k: s.state for k, s in update.states.items()} == {
        ("3", 1): JobState.RUNNING, ("3", 3): JobState.COMPLETED}   # NODE_FAIL: the controller decides
    assert update.problem.startswith("controller (squeue) not answering for 0 s: squeue failed (rc 1)")


def test_sacct_down_while_needed_is_a_problem_with_its_age_and_recovery_is_polled_within_2s():
    clock = Clock()
    script = Script([DBD_DOWN], [ok("6_2|RUNNING|0|0:01|vm|None|0|\n")])   # 6_1 ended long ago
    p = poller({"6": (1, 2)}, script, clock)
    first = p.poll_once()
    assert first.states[("6", 2)].state is JobState.RUNNING            # squeue still moves tasks
    assert first.as_of == 1000.0 and first.interval <= 2.0
    calls_before = p.budget.used(clock.now)
    for _ in range(20):                                                 # 40 s of outage
        clock.sleep(p.interval)
        update = p.poll_once()
    assert update.problem.startswith("accounting (sacct) not answering for 40 s: sacct failed (rc 1): ")
    assert "Connection refused" in update.problem
    assert update.as_of == 1040.0
    # refused connections cost nothing: only the squeue calls were charged
    assert p.budget.used(clock.now) - calls_before == 20
    script.sacct = [ok("6_1|7|COMPLETED|0:0|00:00:01|vm|a|b|None\n")]
    clock.sleep(p.interval)
    recovered = p.poll_once()
    assert recovered.problem is None and recovered.states[("6", 1)].state is JobState.COMPLETED


def test_rate_limited_answers_slow_the_pace_down():
    clock = Clock()
    script = Script([EMPTY], [ok("3_1|RUNNING|0|0:01|vm|None|0|\n")])
    p = poller({"3": (1,)}, script, clock)
    p.poll_once()
    clock.sleep(p.interval)
    normal = p.poll_once().interval
    script.squeue = [RATE_LIMITED]
    clock.sleep(p.interval)
    limited = p.poll_once()
    assert limited.interval >= 2 * normal
    assert "rate-limiting our queries" in limited.problem


def test_run_stops_when_all_terminal_and_finished_jobs_are_not_queried_again():
    script = Script([ok("3|3|COMPLETED|0:0|00:00:01|vm|a|b|None\n4_1|5|FAILED|2:0|00:00:02|vm|a|b|None\n")],
                    [ok("3|COMPLETED|0|0:01|vm|None|0|\n4_1|RUNNING|0|0:01|vm|None|0|\n"),
                     ok("4_1|RUNNING|0|0:02|vm|None|0|\n"),
                     ok("4_1|FAILED|512|0:02|vm|None|0|\n")])
    seen = []
    final = poller({"3": None, "4": (1,)}, script).run(seen.append)
    assert final.all_terminal and len(seen) == 3
    assert final.states[("3", None)].state is JobState.COMPLETED
    assert final.states[("4", 1)].exit_code == 2
    assert [c[2] for c in script.calls if c[0] == "squeue"] == ["3,4", "4", "4"]


def test_pending_task_cancelled_alone_vanishes_and_is_reported_cancelled():
    # Recorded: 327_[2-3%1] pending, then `scancel 327_3`: the controller drops task 3 at
    # once, sacct's range row becomes 327_[2%1], and task 3 never gets a row of its own.
    script = Script([ok("327_1|328|RUNNING|0:0|00:00:05|vm|a|Unknown|None\n"
                        "327_[2-3%1]|327|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown|JobArrayTaskLimit\n"),
                     ok("327_1|328|RUNNING|0:0|00:00:05|vm|a|Unknown|None\n"
                        "327_[2%1]|327|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown|JobArrayTaskLimit\n")],
                    [ok("327_2|PENDING|0|0:00||JobArrayTaskLimit|0|\n327_3|PENDING|0|0:00||JobArrayTaskLimit|0|\n"
                        "327_1|RUNNING|0|0:01|vm|None|0|\n"),
                     ok("327_2|PENDING|0|0:00||JobArrayTaskLimit|0|\n327_1|RUNNING|0|0:01|vm|None|0|\n")])
    clock = Clock()
    p = poller({"327": (1, 2, 3)}, script, clock, vanished_after=12.0)
    assert p.poll_once().states[("327", 3)].state is JobState.PENDING
    clock.now = 1.0
    assert p.poll_once().states[("327", 3)].state is JobState.PENDING   # the stale range row names it
    clock.now = 2.0
    assert p.poll_once().states[("327", 3)].state is JobState.PENDING   # missing: not a result yet
    clock.now = 14.5
    update = p.poll_once()
    assert update.states[("327", 3)].state is JobState.CANCELLED
    assert [s.key for s in update.changed] == [("327", 3)]
    assert update.states[("327", 2)].state is JobState.PENDING


def test_a_pending_task_missing_from_both_answers_is_looked_at_again_after_5_s_not_the_idle_pace():
    """The console's cancel of a pending task: the task showed PENDING for 20 s, as the poll after
    the first that missed it came at the idle pace (10 s a call, two calls)."""
    script = Script([ok("327_1|328|RUNNING|0:0|00:00:05|vm|a|Unknown|None\n")],
                    [ok("327_2|PENDING|0|0:00||JobArrayTaskLimit|0|\n327_1|RUNNING|0|0:01|vm|None|0|\n")])
    clock = Clock()
    p = poller({"327": (1, 2, 3)}, script, clock)
    first = p.poll_once()
    assert ("327", 3) not in first.states or first.states[("327", 3)].state is not JobState.CANCELLED
    assert p.interval <= 5.0
    stop = threading.Event()
    seen: list = []

    def observe(update) -> bool:
        seen.append((clock.now, update))
        return update.states.get(("327", 3)) is not None and update.states[("327", 3)].state is JobState.CANCELLED

    p.run(observe, stop)
    when, last = seen[-1]
    assert last.states[("327", 3)].state is JobState.CANCELLED and when <= 8.5, when   # was 13 s
    p.poll_once()                       # reported: the pace is the idle one again (it stayed 5 s)
    assert p.interval == 10.0


def test_a_pending_task_cancelled_before_the_watch_ends_5_s_after_the_controller_dropped_it():
    """`hyperion-jobs watch J_3` right after `scancel J_3` of a pending task took 13 to 23 s here. The
    controller had dropped the task at once, but sacct's range row still named it for about 4 s, and the
    task counted as missing only once that row no longer did: at the second poll (3 s) or, when the row
    lagged longer, at the third, 10 s later at the idle pace. Then the poll 5 s later often did not
    confirm it, as each query takes 0.1-0.2 s and the miss was timed after the queries, the next poll
    before them: one more poll. Recorded from the cluster (names pruned); task 4, not watched, was
    cancelled too."""
    clock = Clock()
    stale = ok("2771_1|2773|RUNNING|0:0|00:00:10|vm|a|Unknown|None\n"
               "2771_[2-4%1]|2771|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown|None\n")
    fresh = ok("2771_1|2773|RUNNING|0:0|00:00:13|vm|a|Unknown|None\n"
               "2771_[2%1]|2771|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown|None\n")
    script = Script([stale, stale, fresh], [ok("2771_2|PENDING|0|0:00||JobArrayTaskLimit|0|\n"
                                               "2771_1|RUNNING|0|0:10|vm|None|0|\n")])

    def slow(argv):
        clock.now += 0.1                 # squeue and sacct each take about 0.1-0.2 s on the cluster
        return script(argv)

    p = Poller({"2771": (3,)}, runner=slow, clock=clock, sleep=clock.sleep, wall=lambda: 1000 + clock.now)
    seen: list = []

    def observe(update) -> None:
        seen.append((clock.now, update.states[("2771", 3)].state))

    p.run(observe, threading.Event())
    assert seen[0][1] is JobState.PENDING and seen[-1][1] is JobState.CANCELLED, seen
    assert seen[-1][0] <= 5.5, seen      # missed by the controller at once, confirmed 5 s later
    assert script.tools() == ["squeue", "sacct"] * 3, script.tools()   # at 0 s, 3 s (busy pace) and 5 s


def test_job_not_in_slurm_yet_never_counts_as_vanished():
    clock = Clock()
    script = Script([EMPTY], [EMPTY])
    p = poller({"8": (1, 2)}, script, clock, vanished_after=1.0)
    for step in range(5):
        clock.now = step * 10.0
        update = p.poll_once()
    assert update.states == {} and not update.all_terminal


def test_empty_answers_about_a_job_slurm_listed_are_said_not_taken_as_fresh_states():
    """squeue and sacct (a site wrapper, a lagging database) answered with no row at all for a
    job both had listed: every face said `states from Slurm 0 s ago` each poll for minutes while
    its states stood still (a task that had ended long before stayed RUNNING, its elapsed ticking)."""
    clock = Clock()
    script = Script([EMPTY], [ok("3_1|RUNNING|0|0:01|vm|None|0|\n3_2|PENDING|0|0:00||Priority|0|\n"), EMPTY])
    p = poller({"3": (1, 2)}, script, clock)
    first = p.poll_once()
    assert first.problem is None and first.as_of == 1000.0
    for _ in range(10):
        clock.sleep(p.interval)
        update = p.poll_once()
    assert update.as_of == 1000.0, update          # nothing was said of the tasks since the first poll
    assert update.problem is not None and update.problem.startswith(
        "accounting (sacct) lists none of the watched tasks (for "), update.problem
    assert "sacct answered with no row of job(s) 3, which Slurm listed before" in update.problem
    assert update.states[("3", 1)].state is JobState.RUNNING and not update.all_terminal
    script.sacct = [ok("3_1|7|COMPLETED|0:0|00:00:01|vm|a|b|None\n3_2|8|RUNNING|0:0|00:00:01|vm|a|Unknown|None\n")]
    clock.sleep(p.interval)
    recovered = p.poll_once()
    assert recovered.problem is None and recovered.as_of == 1000.0 + clock.now
    assert recovered.states[("3", 1)].state is JobState.COMPLETED


def test_one_empty_answer_of_the_controller_about_a_running_job_does_not_leave_it_to_accounting_for_good():
    """squeue answered once with no row (a site wrapper, a glitch) while accounting said the job ran:
    the job was taken as forgotten by the controller (MinJobAge) and squeue was never asked about it
    again for the rest of the run (every face, seen for minutes), its answers after that unread."""
    clock = Clock()
    running = ok("3_1|RUNNING|0|0:01|vm|None|0|\n3_2|PENDING|0|0:00||Priority|0|\n")
    script = Script([ok("3_1|7|RUNNING|0:0|00:00:01|vm|a|Unknown|None\n3_[2]|3|PENDING|0:0|00:00:00|None|Unknown|Unknown|None\n")],
                    [running, EMPTY, ok("3_1|COMPLETED|0|0:09|vm|None|0|\n3_2|PENDING|0|0:00||Resources|0|\n")])
    p = poller({"3": (1, 2)}, script, clock)
    p.poll_once()
    clock.sleep(p.interval)
    p.poll_once()                                   # the empty squeue, and sacct for what it left out
    assert script.tools() == ["squeue", "squeue", "sacct"]
    clock.sleep(p.interval)
    update = p.poll_once()
    assert script.tools()[3] == "squeue", script.tools()     # the controller is asked again
    assert update.states[("3", 1)].state is JobState.COMPLETED
    assert update.states[("3", 2)].reason == "Resources"


def test_stale_range_row_does_not_end_a_task_that_started():
    script = Script([ok("9_[1-2]|9|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown|None\n"),
                     ok("9_[1-2]|9|CANCELLED by 0|0:0|00:00:00|None assigned|None|x|None\n")],
                    [ok("9_1|RUNNING|0|0:01|vm|None|0|\n"),
                     CommandResult(1, "", "slurm_load_jobs error: Invalid job id specified\n")])
    p = poller({"9": (1, 2)}, script)
    p.poll_once()
    update = p.poll_once()
    assert update.states[("9", 1)].state is JobState.RUNNING      # it has started: wait for its own row
    assert update.states[("9", 2)].state is JobState.CANCELLED    # never started: the range row is its row


# --- pacing and the budget -------------------------------------------------------------------

class Cluster:
    """A fake controller whose array tasks start and end on a schedule (clock seconds)."""

    def __init__(self, clock: Clock, tasks: dict[int, tuple[float, float]]) -> None:
        self.clock, self.tasks = clock, tasks
        self.calls: list[tuple[float, str]] = []

    def state(self, task: int) -> str:
        start, end = self.tasks[task]
        now = self.clock.now
        return "PENDING" if now < start else "RUNNING" if now < end else "COMPLETED"

    def __call__(self, argv):
        self.calls.append((self.clock.now, argv[0]))
        if argv[0] == "sacct":
            return ok("".join(f"7_{t}|{t}|{self.state(t)}|0:0|00:00:01|vm|a|b|None\n" for t in self.tasks))
        return ok("".join(f"7_{t}|{self.state(t)}|0|0:01|vm|None|0|\n" for t in self.tasks))

    def most_in_a_minute(self, since: float = 0.0, until: float = float("inf")) -> int:
        times = [t for t, _ in self.calls if since <= t < until]
        return max((sum(1 for u in times if t <= u < t + 60) for t in times), default=0)


def test_at_most_30_queries_a_minute_while_tasks_change_even_when_nudged_all_the_time():
    clock = Clock()
    tasks = {i: (i * 1.5, i * 1.5 + 4) for i in range(1, 201)}   # an end every 1.5 s for 5 minutes
    cluster = Cluster(clock, tasks)
    p = Poller({"7": tuple(tasks)}, runner=cluster, clock=clock, sleep=clock.sleep, nudge=lambda s: True)
    final = p.run(lambda update: None)
    assert final.all_terminal
    assert cluster.most_in_a_minute() <= 30
    assert len(cluster.calls) >= 5 * 25     # and the budget is used, not wasted


def test_at_most_6_queries_a_minute_while_nothing_changes():
    clock = Clock()
    cluster = Cluster(clock, {1: (0.0, 600.0)})   # one task running for 10 minutes
    p = Poller({"7": (1,)}, runner=cluster, clock=clock, sleep=clock.sleep)
    p.run(lambda update: None)
    assert cluster.most_in_a_minute(since=10.0, until=590.0) <= 6


def test_a_nudge_brings_the_poll_forward_and_the_end_is_seen_promptly():
    clock = Clock()
    cluster = Cluster(clock, {1: (0.0, 95.3)})
    ended = lambda states: clock.now >= 95.3   # noqa: E731  (the task's log footer appeared)
    p = Poller({"7": (1,)}, runner=cluster, clock=clock, sleep=clock.sleep, nudge=ended)
    p.run(lambda update: None)
    assert clock.now - 95.3 <= 0.5


def test_poll_interval_floor_holds_even_for_nudges():
    clock = Clock()
    tasks = {i: (i * 2.0, i * 2.0 + 3) for i in range(1, 31)}
    cluster = Cluster(clock, tasks)
    p = Poller({"7": tuple(tasks)}, runner=cluster, clock=clock, sleep=clock.sleep, floor=30.0,
               cap=60.0, nudge=lambda s: True)
    p.run(lambda update: None)
    starts = [t for t, tool in cluster.calls if tool == "squeue"]
    assert all(b - a >= 30.0 for a, b in zip(starts, starts[1:]))


def test_budget_allows_small_bursts_refills_at_30_a_minute_and_caps_any_minute():
    clock = Clock()
    budget = QueryBudget(per_minute=30, burst=3, clock=clock)
    budget.charge(3, 0.0)                                # a burst empties the bucket
    spacing = (60 + SPREAD) / 27                         # refilled at 27 a minute (and margin): 3 + 27 = 30
    assert budget.earliest(1, 0.0) == pytest.approx(spacing) and not budget.allows(1, 2.0)
    budget.charge(1, 2.5)
    assert budget.earliest(2, 2.5) == pytest.approx(3 * spacing)   # 3 refilled since 0, 1 spent
    # A caller that calls as soon as it may, for 5 minutes: never more than 30 in a
    # minute, and never a long silence after a burst.
    now, stamps = 6.0, []
    while now < 300:
        now = budget.earliest(1, now)
        budget.charge(1, now)
        stamps.append(now)
    assert max(sum(1 for u in stamps if t <= u < t + 60) for t in stamps) <= 30
    assert max(b - a for a, b in zip(stamps, stamps[1:])) <= spacing + 1e-9


def _late(k: int) -> float:
    """When call k reaches the daemon after it started: mostly at once, every 7th call 0.3 s late
    (a loaded login node); such a varying delay is what a daemon's minute sees."""
    return 0.3 if k % 7 == 0 else 0.0


class LateCluster(Cluster):
    """The cluster, seeing each call `_late` after it started; a call takes 0.3 s in all."""

    def __call__(self, argv):
        started = self.clock.now
        self.clock.now = started + _late(len(self.calls))
        answer = super().__call__(argv)
        self.clock.now = started + 0.3
        return answer


def test_the_daemon_sees_at_most_6_calls_a_minute_while_nothing_changes_when_calls_reach_it_late():
    clock = Clock()
    cluster = LateCluster(clock, {1: (0.0, 600.0)})
    Poller({"7": (1,)}, runner=cluster, clock=clock, sleep=clock.sleep).run(lambda update: None)
    assert cluster.most_in_a_minute(since=10.0, until=590.0) <= 6


def test_the_daemon_sees_at_most_30_calls_a_minute_while_tasks_change_when_calls_reach_it_late():
    clock = Clock()
    tasks = {i: (i * 1.5, i * 1.5 + 4) for i in range(1, 201)}
    cluster = LateCluster(clock, tasks)
    p = Poller({"7": tuple(tasks)}, runner=cluster, clock=clock, sleep=clock.sleep, nudge=lambda s: True)
    assert p.run(lambda update: None).all_terminal
    assert cluster.most_in_a_minute() <= 30
    assert len(cluster.calls) >= 5 * 25


def test_a_call_made_just_over_a_minute_ago_still_counts_against_a_polls_second_query():
    """A poll's second query goes when the count of recent calls leaves room (the bucket aside). A
    call made 60.5 s ago may land in the daemon's same minute as one made now: it still counts."""
    budget = QueryBudget(per_minute=30, burst=3)
    for k in range(30):
        budget.charge(1, 0.0 if k == 0 else 1.0 + k)       # 30 calls from 0 s to 30 s
    assert budget.room(60.5) == 0
    assert budget.room(0.0 + 60 + SPREAD + 0.01) == 1      # past the minute and its margin
    assert budget.earliest(1, 60.5) >= 60 + SPREAD


def test_calls_charged_out_of_order_are_counted_in_order():
    """The console's ask beside a watch is charged while the watch's query, started earlier, is still
    out: the count must still drop the oldest call first."""
    budget = QueryBudget(per_minute=30, burst=3)
    budget.charge(1, 10.0)
    budget.charge(1, 5.0)
    assert budget.used(5.0 + 60 + SPREAD + 0.01) == 1      # the 5 s call is gone, the 10 s one counts


def test_calls_made_as_soon_as_the_budget_allows_stay_within_30_a_minute_when_they_arrive_late():
    budget = QueryBudget(per_minute=30, burst=3)
    now, arrived = 0.0, []
    for k in range(300):
        now = budget.earliest(1, now)
        budget.charge(1, now)
        arrived.append(now + _late(k))
    assert max(sum(1 for u in arrived if t <= u < t + 60) for t in arrived) <= 30


def test_stop_ends_the_run_between_polls():
    clock = Clock()
    cluster = Cluster(clock, {1: (0.0, 1e9)})
    stop = threading.Event()
    p = Poller({"7": (1,)}, runner=cluster, clock=clock, sleep=clock.sleep)
    seen = []
    last = p.run(lambda update: (seen.append(update), stop.set()), stop)
    assert len(seen) == 1 and not last.all_terminal


def test_a_task_the_controller_calls_completing_is_asked_of_accounting_at_once():
    script = Script([ok("3_1|4|COMPLETED|0:0|00:00:05|vm|a|b|None\n")],
                    [ok("3_1|COMPLETING|0|0:05|vm|None|0|\n")])
    update = poller({"3": (1,)}, script).poll_once()
    assert script.tools() == ["squeue", "sacct"]
    assert update.all_terminal and update.states[("3", 1)].state is JobState.COMPLETED


def test_a_task_of_an_ended_job_without_an_accounting_row_ends_cancelled_after_a_minute():
    # Watched only after the job left the controller: task 3 was cancelled while pending (no
    # row of its own ever), 1 and 2 completed. Without this the watch would poll forever.
    done = ("50_1|51|COMPLETED|0:0|00:00:05|vm|a|2026-12-03T10:00:05|None\n"
            "50_2|52|COMPLETED|0:0|00:00:05|vm|a|2026-12-03T10:00:06|None\n")
    script = Script([ok(done)], [CommandResult(1, "", "slurm_load_jobs error: Invalid job id specified\n")])
    clock = Clock()
    p = poller({"50": (1, 2, 3)}, script, clock)
    update = p.poll_once()
    assert update.states[("50", 2)].state is JobState.COMPLETED and ("50", 3) not in update.states
    clock.now = 30.0
    assert ("50", 3) not in p.poll_once().states            # an accounting row may still come
    clock.now = 61.0
    update = p.poll_once()
    assert update.states[("50", 3)].state is JobState.CANCELLED and update.all_terminal
    assert [s.key for s in update.changed] == [("50", 3)]


# --- a query that hangs ------------------------------------------------------------------------

RUNNING_3_1 = ok("3_1|RUNNING|0|0:01|vm|None|0|\n")
TIMED_OUT = {tool: CommandResult(124, "", f"{tool} timed out after 30 s") for tool in ("squeue", "sacct")}


class Hang:
    """A runner whose `hung` tools hang (until `release` is set, then time out); others answer."""

    def __init__(self, answer: CommandResult, hung: tuple[str, ...] = ()) -> None:
        self.answer, self.hung = answer, set(hung)
        self.release = threading.Event()

    def __call__(self, argv):
        if argv[0] not in self.hung:
            return self.answer if argv[0] == "squeue" else EMPTY
        self.release.wait(30)
        return TIMED_OUT[argv[0]]


def fast_clock():
    """A real clock running 20 times fast: a 5 s wait takes 0.25 s of the test's time."""
    import time

    start = time.monotonic()
    return lambda: (time.monotonic() - start) * 20


def test_a_hanging_query_is_said_while_it_lasts_its_age_growing_from_when_it_was_sent():
    """While squeue hangs, a live view is told after 5 s, then every second, that the controller
    has not answered for N s, N growing; the states keep their age. Before, nothing was said
    until the 30 s timeout came back, and then as 'not answering for 0 s'."""
    clock, hang = fast_clock(), Hang(RUNNING_3_1)
    p = Poller({"3": (1,)}, runner=hang, clock=clock, wall=lambda: 1000 + clock())
    first = p.poll_once()
    assert first.problem is None and first.states[("3", 1)].state is JobState.RUNNING
    hang.hung.add("squeue")
    told: list = []
    stop = threading.Event()
    thread = threading.Thread(target=p.run, args=(lambda u: stop.set(), stop, told.append), daemon=True)
    thread.start()
    deadline = clock() + 600
    while len(told) < 4 and clock() < deadline:
        stop.wait(0.05)
    assert len(told) >= 4, told
    ages = [int(u.problem.split("not answering for ")[1].split(" s")[0]) for u in told]
    assert ages[0] >= 5 and ages == sorted(ages) and ages[-1] > ages[0]
    assert told[0].problem.endswith(": squeue has not returned yet")
    assert all(u.changed == () and u.as_of == first.as_of for u in told)
    sent = told[-1]
    hang.release.set()                       # squeue times out: the age goes on from when it was sent
    thread.join(5)
    assert not thread.is_alive()
    assert p.problem().startswith("controller (squeue) not answering for ")
    age = int(p.problem().split("not answering for ")[1].split(" s")[0])
    assert age >= ages[-1] and "squeue timed out after 30 s" in p.problem(), (sent, p.problem())


def test_the_controllers_ends_are_shown_while_the_final_sacct_hangs_and_its_wait_is_said():
    """squeue says the task ended; the poll's final sacct hung 30 s. The end was held back until it
    came back, the task shown RUNNING with its elapsed ticking, and nothing said the query hung."""
    clock = fast_clock()
    hang = Hang(ok("3_1|COMPLETED|0|0:01|vm|None|0|\n"), hung=("sacct",))
    p = Poller({"3": (1,)}, runner=hang, clock=clock, wall=lambda: 1000 + clock())
    told: list = []
    stop = threading.Event()
    result: list = []
    thread = threading.Thread(target=lambda: result.append(p.run(lambda u: None, stop, told.append)), daemon=True)
    thread.start()
    deadline = clock() + 600
    while not any(u.problem for u in told) and clock() < deadline:
        stop.wait(0.05)
    assert told and told[0].changed[0].state is JobState.COMPLETED and not told[0].all_terminal
    assert told[0].problem is None                      # at once, before the sacct is even slow
    slow = next(u for u in told if u.problem)
    assert slow.problem.startswith("accounting (sacct) not answering for ") and slow.problem.endswith(
        "sacct has not returned yet")
    hang.release.set()                                  # it times out: the states are final all the same
    thread.join(5)
    assert result and result[0].all_terminal and result[0].problem is None


def test_a_failure_counts_from_the_first_query_sent_not_from_when_it_came_back():
    """squeue and then sacct time out, 30 s each: the first update says squeue has not answered
    for 60 s and sacct for 30 s (it said 0 s for both)."""
    clock = Clock()

    def runner(argv):
        clock.sleep(30)
        return TIMED_OUT[argv[0]]

    p = poller({"3": (1,)}, runner, clock)
    update = p.poll_once()
    assert update.problem.startswith("controller (squeue) not answering for 1 min 00 s: squeue failed (rc 124)")
    assert "accounting (sacct) not answering for 30 s: sacct failed (rc 124)" in update.problem


def test_every_age_a_face_says_of_an_outage_has_one_format():
    """The console's status line said `states 1 min 32 s old` beside the poller's `not answering
    for 62 s`, and hyperion-jobs watch said `(92 s ago)`: one function words every age now."""
    from backends.watch.progress import staleness

    clock = Clock()

    def runner(argv):
        clock.sleep(61 if argv[0] == "squeue" else 1)
        return TIMED_OUT[argv[0]]

    update = poller({"3": (1,)}, runner, clock).poll_once()
    assert update.problem.startswith("controller (squeue) not answering for 1 min 02 s: squeue failed (rc 124)")
    update = PollUpdate({}, (), None, False, 10.0, update.problem, 1000.0)
    assert staleness(update, now=1092.0).endswith("(1 min 32 s ago)"), staleness(update, now=1092.0)


def test_an_outage_said_between_polls_says_how_long_it_lasts_as_of_then():
    """A face redrawn between polls (the console's status line each second, watch's live screen)
    kept the age of the last poll: `cannot read (for 1 s)` beside `states 11 s old`, which grew."""
    from backends.watch.progress import staleness

    clock = Clock()
    garbage = CommandResult(0, "this is not what squeue prints\nx|y\n", "")
    update = poller({"3": (1,)}, lambda argv: garbage, clock).poll_once()
    assert "controller (squeue) answers in a form hyperion cannot read (for 0 s)" in update.problem
    polled = 1000.0 + clock.now                 # the poller's wall clock at the poll
    later = update.problem_at(polled + 10)
    assert "controller (squeue) answers in a form hyperion cannot read (for 10 s)" in later, later
    assert "accounting (sacct) answers in a form hyperion cannot read (for 10 s)" in later, later
    assert update.problem_at(polled) == update.problem
    stale = staleness(update, now=polled + 75)
    assert "cannot read (for 1 min 15 s)" in stale and "(for 0 s)" not in stale, stale


def test_once_both_sources_answer_after_an_outage_the_problem_is_gone():
    """Both daemons refused connections, then came back. squeue lists every task, so sacct was
    not needed and its old failure lingered on the status line ('states 1 s old, retrying:
    accounting (sacct) not answering for 40 s'): it is asked again until it answers."""
    clock = Clock()
    script = Script([DOWN], [DOWN])
    p = poller({"3": (1,)}, script, clock)
    for _ in range(5):
        down = p.poll_once()
        clock.sleep(p.interval)
    assert "controller (squeue)" in down.problem and "accounting (sacct)" in down.problem
    script.squeue, script.sacct = [RUNNING_3_1], [EMPTY]
    back = clock.now
    first = p.poll_once()
    assert first.problem.startswith("accounting (sacct) not answering")   # only what still fails
    clock.sleep(p.interval)
    second = p.poll_once()
    assert second.problem is None and clock.now - back <= 2.0
    assert script.tools()[-3:] == ["squeue", "squeue", "sacct"]


def hanging_tool(bin_dir, tool: str, pids) -> None:
    """A `tool` on PATH that hangs as a wrapper script would: a shell waiting on its child."""
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / tool
    path.write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 3600\n")
    path.chmod(0o755)


def group_gone(pgid: int, within: float = 2.0) -> bool:
    """Whether no process of group `pgid` runs any more, within `within` s (a SIGKILL lands a
    moment after kill returns; zombies waiting for init count as gone)."""
    import time

    deadline = time.monotonic() + within
    while any(group == pgid and state != "Z" for group, state in _groups()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _groups() -> list[tuple[int, str]]:
    """(process group, state) of every process, from /proc."""
    from pathlib import Path

    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        out.append((int(fields[2]), fields[0]))
    return out


def started_groups(pids, count: int = 1) -> list[int]:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pids.exists() and len(pids.read_text().split()) >= count:
            return [int(p) for p in pids.read_text().split()]
        time.sleep(0.02)
    raise AssertionError("the hanging command never started")


def test_stop_ends_a_hung_squeue_at_once_and_kills_its_processes(tmp_path, monkeypatch):
    """A real squeue that never answers (a script running sleep 3600): setting stop ends the
    watch within a second and leaves no process of it behind (it waited for the 30 s timeout)."""
    import os
    import time

    from backends.watch.slurm.accounting import stoppable

    pids = tmp_path / "pids"
    hanging_tool(tmp_path / "bin", "squeue", pids)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    stop = threading.Event()
    p = Poller({"3": (1,)}, runner=stoppable(stop))
    seen: list = []
    thread = threading.Thread(target=p.run, args=(seen.append, stop), daemon=True)
    thread.start()
    pgid = started_groups(pids)[0]
    time.sleep(0.3)
    asked = time.monotonic()
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - asked < 1.5
    assert group_gone(pgid)
    assert seen == []                       # no answer is made up: nothing was reported


def test_ctrl_c_during_a_hung_query_kills_it(tmp_path, monkeypatch):
    """hyperion-jobs watch polls in its main thread: Ctrl-C there (KeyboardInterrupt) ends at
    once and takes the hung squeue's whole process group with it."""
    import _thread
    import os
    import time

    from backends.watch.slurm.accounting import stoppable

    pids = tmp_path / "pids"
    hanging_tool(tmp_path / "bin", "squeue", pids)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    stop = threading.Event()
    p = Poller({"3": (1,)}, runner=stoppable(stop))
    interrupt = threading.Thread(target=lambda: (started_groups(pids), time.sleep(0.3), _thread.interrupt_main()))
    interrupt.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        p.run(lambda update: None, stop)
    assert time.monotonic() - started < 5
    interrupt.join()
    assert stop.is_set() and group_gone(started_groups(pids)[0])


def test_a_timed_out_query_leaves_no_process_behind(tmp_path):
    """A Slurm client that forks and hangs (a site's wrapper): the timeout kills its whole
    process group, the child too (subprocess.run killed only the shell)."""
    import time

    from backends.watch.slurm.accounting import run_command

    child = tmp_path / "child"
    started = time.monotonic()
    result = run_command(["sh", "-c", f"sleep 3600 & echo $! > {child}; wait"], timeout=0.5)
    assert result.returncode == 124 and "timed out after 0.5 s" in result.stderr
    assert time.monotonic() - started < 3
    pid = int(child.read_text())
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and os_alive(pid):
        time.sleep(0.02)
    assert not os_alive(pid)


def test_a_client_that_prints_without_end_is_cut_and_stopped(tmp_path):
    """A site's squeue wrapper stuck in a loop printed for the whole 30 s timeout, and every byte was
    kept: gigabytes in the watching process. Now 64 MiB at most is read, then its group is killed."""
    import resource
    import time

    from backends.watch.slurm.accounting import run_command

    child = tmp_path / "child"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    result = run_command(["sh", "-c", f"yes 'x|RUNNING|0' & echo $! > {child}; wait"], timeout=20)
    assert time.monotonic() - started < 10
    assert result.returncode == 1 and result.stdout == "" and result.stderr == "sh printed more than 64 MiB: not read"
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 200, grown_mib
    pid = int(child.read_text())
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and os_alive(pid):
        time.sleep(0.02)
    assert not os_alive(pid)


def test_a_client_cut_at_a_cap_says_it_as_every_other_cap_is_said():
    """A cap that is not whole MiB was said in bytes (`printed more than 524,288 bytes`) where a
    file over a cap says `more than the 512 KiB allowed`: one wording (fileio.size_text)."""
    from backends.client import run_client

    result = run_client(["sh", "-c", "yes x"], timeout=20, cap=512 * 1024)
    assert (result.returncode, result.stderr) == (1, "sh printed more than 512 KiB: not read")


def test_a_client_answer_is_read_whole_from_both_streams_and_any_bytes(tmp_path):
    """stdout and stderr both read (either may fill its pipe first), bytes that are not UTF-8
    replaced, not raised; a client that cannot be run is a result too, not a traceback."""
    from backends.watch.slurm.accounting import run_command

    script = ("import sys; sys.stderr.write('w' * 200000); sys.stdout.buffer.write(b'7_1|RUNNING|\\xff\\n' * 20000);"
              "sys.exit(3)")
    result = run_command([sys.executable, "-c", script])
    assert result.returncode == 3 and result.stderr == "w" * 200000
    assert result.stdout == "7_1|RUNNING|\ufffd\n" * 20000
    not_runnable = tmp_path / "squeue"
    not_runnable.write_text("#!/bin/sh\necho hi\n")
    result = run_command([str(not_runnable)])
    assert result.returncode == 126 and result.stderr == f"{not_runnable}: cannot run (Permission denied)"


def test_an_answer_is_kept_when_a_child_of_the_client_holds_its_pipes(tmp_path):
    """A site wrapper `sbatch "$@"; logger &`: the logger kept the pipes open, the read waited for
    their end until the timeout, and the job id sbatch had printed was lost ('did not answer')."""
    import os
    import signal
    import time

    from backends.watch.slurm.accounting import run_command

    logger = tmp_path / "logger"
    started = time.monotonic()
    result = run_command(["sh", "-c", f"echo 'Submitted batch job 812'; sleep 60 & echo $! > {logger}; exit 0"],
                         timeout=20)
    try:
        assert result.returncode == 0 and result.stdout == "Submitted batch job 812\n", result
        assert time.monotonic() - started < 5
    finally:
        os.kill(int(logger.read_text()), signal.SIGKILL)


def test_a_client_that_closes_its_pipes_and_hangs_times_out(tmp_path):
    """A client that closed stdout and stderr, then hung: the wait for its exit swallowed the
    timeout it raised itself and waited for ever (a watch frozen on one squeue)."""
    import time

    from backends.watch.slurm.accounting import run_command

    started = time.monotonic()
    result = run_command(["sh", "-c", "exec >&- 2>&-; sleep 30"], timeout=1)
    assert result.failure == "timeout" and time.monotonic() - started < 5, result


def test_a_child_the_client_left_printing_is_stopped_with_it(tmp_path, monkeypatch):
    """A wrapper exited and left a child that kept printing: it was read until the timeout, and the
    child, its leader reaped, was not killed with the group; it printed on for ever."""
    import time

    import backends.client
    from backends.watch.slurm.accounting import run_command

    # Under load the printing child once stalled past EXIT_GRACE, so the read ended by the grace rule
    # (a quiet child is left on purpose: a site wrapper's logger), not by the timeout this test is about.
    monkeypatch.setattr(backends.client, "EXIT_GRACE", 30.0)

    child = tmp_path / "child"
    started = time.monotonic()
    result = run_command(["sh", "-c", f"(trap '' PIPE; while true; do echo x; done) & echo $! > {child}; exit 0"],
                         timeout=2)
    assert result.failure == "timeout" and time.monotonic() - started < 5, result
    pid = int(child.read_text())
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and os_alive(pid):
        time.sleep(0.02)
    assert not os_alive(pid)


def test_a_client_leaves_no_pipe_open(tmp_path):
    """Each call left its two pipes to the garbage collector: a ResourceWarning per pipe and poll."""
    import gc
    import warnings

    from backends.watch.slurm.accounting import run_command

    unclosed: list[str] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda raised: unclosed.append(str(raised.exc_value))   # a warning raised in __del__
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            for argv in (["sh", "-c", "echo hi"], ["sh", "-c", "yes"], [str(tmp_path / "missing")]):
                run_command(argv, timeout=2)
                gc.collect()
    finally:
        sys.unraisablehook = hook
    assert unclosed == []


def os_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie left for init to reap counts as gone)."""
    from pathlib import Path

    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_an_answer_that_cannot_be_read_is_not_called_not_answering():
    """sacct answered (a form of job id this code did not know): 'accounting (sacct) not answering'
    sent the user to check slurmdbd, which was fine."""
    script = Script([ok("7_[1-9:x]|7|PENDING|0:0|00:00:00|None|a|Unknown|None\n")],
                    [ok("7_2|RUNNING|0|0:01|vm|None|0|\n")])
    update = poller({"7": (1, 2)}, script).poll_once()
    assert update.problem is not None and "not answering" not in update.problem
    assert update.problem.startswith("accounting (sacct) answers in a form hyperion cannot read (for 0 s): sacct: "
                                     "not a range list"), update.problem


def test_a_timed_out_sacct_is_no_problem_once_the_controller_names_every_task_again():
    """Accounting timed out on a COMPLETING task; the next squeue named every task (it COMPLETED):
    no state waits on sacct, yet 'accounting (sacct) not answering for N s' stayed, N growing."""
    script = Script([TIMED_OUT["sacct"], EMPTY],
                    [ok("3_1|COMPLETING|0|0:01|vm|None|0|\n3_2|RUNNING|0|0:01|vm|None|0|\n"),
                     ok("3_1|COMPLETED|0|0:01|vm|None|0|\n3_2|RUNNING|0|0:01|vm|None|0|\n")])
    clock = Clock()
    p = poller({"3": (1, 2)}, script, clock)
    assert "sacct timed out after 30 s" in p.poll_once().problem
    clock.sleep(30)
    update = p.poll_once()
    assert script.tools() == ["squeue", "sacct", "squeue"]
    assert update.problem is None and update.states[("3", 1)].state is JobState.COMPLETED


def test_an_end_known_while_the_controller_still_says_completing_costs_no_sacct_per_poll():
    """7_1's end is in the ledger (accounting's row, taken while its node was stuck COMPLETING), and a
    watch reattached for 7_2 follows 7_1 too, for a requeue: every poll asked sacct about job 7 as long
    as the controller said COMPLETING (hours, on a node that does not answer)."""
    script = Script([EMPTY], [ok("7_1|COMPLETING|0|0:31|node01|None|0|\n7_2|RUNNING|0|0:40|node01|None|0|\n")])
    clock = Clock()
    ended = {("7", 1): TaskState("7", 1, JobState.COMPLETED, 0, None, 31.0, "node01", LEDGER, None, 0)}
    p = poller({"7": (1, 2)}, script, clock, settled=ended)
    for _ in range(5):
        update = p.poll_once()
        clock.sleep(p.interval)
    assert script.tools() == ["squeue"] * 5
    assert update.states[("7", 1)].state is JobState.COMPLETED and update.problem is None


def test_a_running_tasks_usage_is_the_controllers_newer_word_with_no_query_more():
    """The console's summary said "elapsed max 00:00:02" at 1:40 (an early sacct's figure) where
    `hyperion-jobs status` said 00:01:49: a poll asks only squeue while it names every task, and
    only sacct's usage was passed on. The squeue asked anyway tells the time used and the request;
    accounting's MaxRSS stays, and what is recorded is still accounting's alone."""
    request = "10:00|1|cpu=1,mem=100M,node=1,billing=1|1|"
    script = Script([ok("3_1|4|RUNNING|0:0|00:00:02|vm|a|Unknown|None|||00:10:00|100M|1|billing=1,cpu=1,mem=100M,node=1\n"
                        "3_1.0|4.0|RUNNING|0:0|00:00:02|vm|a|Unknown||10M||||1|\n")],
                    [ok(f"3_2|RUNNING|0|0:03|vm|None|0|{request}\n"),
                     ok(f"3_1|RUNNING|0|1:40|vm|None|0|{request}\n3_2|RUNNING|0|1:41|vm|None|0|{request}\n")])
    p = poller({"3": (1, 2)}, script)
    early = p.poll_once()                        # the controller did not name 3_1: sacct was asked
    assert script.tools() == ["squeue", "sacct"]
    assert early.current_usage()[("3", 1)].elapsed_seconds == 2
    later = p.poll_once()
    assert script.tools() == ["squeue", "sacct", "squeue"]
    used = later.current_usage()[("3", 1)]
    assert (used.elapsed_seconds, used.time_limit_seconds, used.req_mem_bytes, used.alloc_cpus,
            used.max_rss_bytes) == (100, 600, 100 << 20, 1, 10 << 20)
    assert later.usage[("3", 1)].elapsed_seconds == 2   # recorded: accounting's only


def test_watching_an_array_cancelled_mid_task_never_adds_a_task_without_id():
    """`watch 7746` of an array cancelled while its task 1 ran: accounting's one answer naming only
    the array job itself (no task) became a fourth task, CANCELLED, kept to the end of the watch."""
    from test_jobs_states import SACCT_ARRAY_JOB_ALONE, SQUEUE_CANCELLED_ARRAY

    ended = SQUEUE_CANCELLED_ARRAY.replace("7746_1|COMPLETING|0|", "7746_1|CANCELLED|15|")
    script = Script([ok(SACCT_ARRAY_JOB_ALONE)], [ok(SQUEUE_CANCELLED_ARRAY), ok(ended)])
    clock = Clock()
    p = poller({"7746": None}, script, clock)
    first = p.poll_once()
    clock.sleep(p.interval)
    last = p.poll_once()
    assert set(first.states) == set(last.states) == {("7746", 1), ("7746", 2), ("7746", 3)}
    assert first.states[("7746", 1)].state is JobState.COMPLETING and last.all_terminal


def test_a_watch_left_open_overnight_keeps_only_the_last_minute_of_its_calls():
    """12 h of a job that runs on, the controller naming it at every poll (6 calls a minute): the
    budget held every call the watch ever made (only a poll that needed sacct forgot old ones),
    growing the watch and the scan of its calls before each poll for as long as it was left open."""
    script = Script([EMPTY], [ok("3_1|RUNNING|0|0:01|vm|None|0|\n")])
    clock = Clock()
    p = poller({"3": (1,)}, script, clock)
    held: list[int] = []

    def observe(update) -> bool:
        held.append(len(p.budget._calls))
        return clock.now > 12 * 3600

    p.run(observe, threading.Event())
    assert len(script.calls) >= 12 * 60 * 5, len(script.calls)       # the idle pace, about 6 a minute
    assert script.tools() == ["squeue"] * len(script.calls)           # squeue alone named the task
    assert max(held) <= p.budget.per_minute + 1, max(held)


def test_the_last_task_of_a_stepped_pending_range_stays_pending():
    """A retry of failures 17, 67, ..., 467 in one window (`--array=17,67,...,467%1`): Slurm keeps
    the pending rest as 67-467:50. `squeue -r` listed 67 to 417 only, never 467, and every watch
    recorded 467 CANCELLED after 5 s; it then ran and completed, and `status` and `retry` went by
    the ledger's CANCELLED. The controller's range row names it (recorded from the cluster)."""
    script = Script([ok("9597_17|9598|RUNNING|0:0|00:00:01|vm|a|Unknown|None\n"
                        "9597_[67-467:50%1]|9597|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown|"
                        "JobArrayTaskLimit\n")],
                    [ok("9597_[67-467:50%1]|PENDING|0|0:00||JobArrayTaskLimit|0|\n"
                        "9597_17|RUNNING|0|0:01|vm|None|0|\n")])
    clock = Clock()
    p = poller({"9597": tuple(range(17, 468, 50))}, script, clock)
    for step in range(8):
        clock.now = step * 3.0
        update = p.poll_once()
        assert update.states[("9597", 467)].state is JobState.PENDING, clock.now
    assert all("-r" not in call for call in script.calls)


def test_the_stepped_end_cancelled_while_pending_is_reported_cancelled():
    """`scancel 9597_467` of that task: both range rows become 67-417:50, and the task, missing from
    both answers, is CANCELLED 5 s later, as any pending task cancelled on its own."""
    running = "9597_17|9598|RUNNING|0:0|00:00:01|vm|a|Unknown|None\n"
    script = Script([ok(running + "9597_[67-467:50%1]|9597|PENDING|0:0|00:00:00|None assigned|Unknown|"
                                  "Unknown|JobArrayTaskLimit\n"),
                     ok(running + "9597_[67-417:50%1]|9597|PENDING|0:0|00:00:00|None assigned|Unknown|"
                                  "Unknown|JobArrayTaskLimit\n")],
                    [ok("9597_[67-467:50%1]|PENDING|0|0:00||JobArrayTaskLimit|0|\n9597_17|RUNNING|0|0:01|vm|None|0|\n"),
                     ok("9597_[67-417:50%1]|PENDING|0|0:00||JobArrayTaskLimit|0|\n9597_17|RUNNING|0|0:01|vm|None|0|\n")])
    clock = Clock()
    p = poller({"9597": (17, 417, 467)}, script, clock)
    assert p.poll_once().states[("9597", 467)].state is JobState.PENDING
    states = []
    for step in range(1, 6):
        clock.now = step * 3.0
        states.append(p.poll_once().states[("9597", 467)].state)
    assert states[0] is JobState.PENDING and states[-1] is JobState.CANCELLED, states


def test_accountings_figures_from_before_a_tasks_end_are_not_what_is_recorded_with_it():
    """A 40-task array: sacct, asked while 15185_5 waited in the pending range row, gave it elapsed 0;
    the controller then told its run and end, and the wait recorded its end with that 0. `status`
    showed `ELAPSED 0:00:12` beside `TIME USED 00:00:00/00:10:00` and CPU `-` (the ledger's figure
    wins over accounting's), for good once an hour had passed. What goes with the end is now no
    usage (the next sacct adds it); the controller's time used is still shown meanwhile."""
    request = "10:00|1|cpu=1,mem=100M,node=1,billing=1|1|"
    tail = "|||00:10:00|100M|1|billing=1,cpu=1,mem=100M,node=1"
    script = Script([ok(f"5_1|6|RUNNING|0:0|00:00:02|vm|a|Unknown|None{tail}\n"
                        f"5_[2-3%1]|5|PENDING|0:0|00:00:00|None assigned|a|Unknown|JobArrayTaskLimit{tail}\n")],
                    [ok(f"5_[2-3%1]|PENDING|0|0:00|(null)|JobArrayTaskLimit|0|{request}\n"),
                     ok(f"5_1|RUNNING|0|0:30|vm|None|0|{request}\n5_2|COMPLETED|0|0:12|vm|None|0|{request}\n"
                        f"5_3|RUNNING|0|0:01|vm|None|0|{request}\n")])
    p = poller({"5": (1, 2, 3)}, script)
    first = p.poll_once()
    assert script.tools() == ["squeue", "sacct"]
    assert first.usage[("5", 2)].elapsed_seconds == 0
    later = p.poll_once()
    assert later.states[("5", 2)].state is JobState.COMPLETED
    assert ("5", 2) not in later.usage                          # nothing of before its end is recorded
    assert later.current_usage()[("5", 2)].elapsed_seconds == 12   # shown: the controller's word
    assert later.usage[("5", 1)].elapsed_seconds == 2           # a running task's accounting figures stay


def test_a_task_accounting_still_lists_as_pending_shows_the_controllers_time_used():
    """`status 25` while tasks start: squeue said 25_28 ran for 2 s, sacct (asked in the same look)
    still listed it in its pending range row with elapsed 0, and TIME USED read 00:00:00/00:10:00
    beside ELAPSED 0:00:02. The controller's time used is shown (by `status` and by a watch); only
    accounting's figures are recorded."""
    from backends.watch.slurm.accounting import query

    request = "10:00|1|cpu=1,mem=100M,node=1,billing=1|1|"
    tail = "|||00:10:00|100M|1|billing=1,cpu=1,mem=100M,node=1"
    sacct = ok(f"5_1|6|RUNNING|0:0|00:00:09|vm|a|Unknown|None{tail}\n"
               f"5_[2-3%2]|5|PENDING|0:0|00:00:00|None assigned|a|Unknown|JobArrayTaskLimit{tail}\n")
    squeue = ok(f"5_1|RUNNING|0|0:09|vm|None|0|{request}\n5_2|RUNNING|0|0:07|vm|None|0|{request}\n")
    snapshot = query(["5"], Script([sacct], [squeue]))
    assert snapshot.states[("5", 2)].state is JobState.RUNNING
    assert snapshot.usage[("5", 2)].elapsed_seconds == 0                 # accounting's, as recorded
    assert snapshot.shown_usage()[("5", 2)].elapsed_seconds == 7         # shown: the controller's word
    assert snapshot.shown_usage()[("5", 2)].time_limit_seconds == 600

    update = poller({"5": (1, 2, 3)}, Script([sacct], [squeue])).poll_once()
    assert update.states[("5", 2)].state is JobState.RUNNING
    assert update.current_usage()[("5", 2)].elapsed_seconds == 7          # it read 0 (the range row's)


def _opened_after_the_end(tmp_path, squeue: str, log_of_3: bool = False):
    """A record of 4242_1..3 with no end recorded for 2 and 3 (no watch ran), opened later: 2
    COMPLETED, 3 cancelled while pending (no row in accounting, no log); the core's watcher over it."""
    from pathlib import Path

    from test_console_fixtures import build_history

    from backends.records.history import load_history
    from backends.watch.requeued import settled, watched_tasks
    from backends.watch.wait import watcher

    conf = Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml"
    history = load_history(str(build_history(tmp_path, conf, n=3, unfinished=(2, 3), failures={})))
    third = next(t for t in history.current.tasks if t.value == 3)
    if not log_of_3:
        Path(third.log).unlink()          # Slurm opens it as the task starts: this one never did
    script = Script([ok("4242_1|4243|COMPLETED|0:0|00:00:31|vm|a|b|None\n"
                        "4242_2|4244|COMPLETED|0:0|00:00:32|vm|a|b|None\n")], [ok(squeue)])
    pending = watched_tasks(history)
    clock = Clock()
    poller, _ = watcher(history.current, tasks=pending, settled=settled(history, pending), runner=script)
    poller._clock, poller._sleep = clock, clock.sleep
    return poller


def test_a_task_cancelled_while_pending_before_the_console_opened_is_cancelled_at_its_first_look(tmp_path):
    """`scancel J_3` of a pending task with no watch running; the rest of the array ended and the
    controller forgot the job (MinJobAge). The console's poller said PENDING/unknown for a minute
    (GONE_VANISHED_AFTER) where `hyperion-jobs status` says CANCELLED at once (`never_started`):
    the watcher's poller applies that same rule at its first look."""
    update = _opened_after_the_end(tmp_path, "").poll_once()
    assert update.states[("4242", 3)].state is JobState.CANCELLED, update.states
    assert update.states[("4242", 2)].state is JobState.COMPLETED
    assert update.all_terminal


def test_no_task_that_could_still_run_is_cancelled_at_the_first_look(tmp_path):
    """The same rule's limits: a task whose job the controller still lists unfinished (it may
    start), or one that wrote its log (it started), is not told CANCELLED from one look."""
    live = _opened_after_the_end(tmp_path / "live", "4242_[3%1]|PENDING|0|0:00||JobArrayTaskLimit|0|\n")
    assert live.poll_once().states[("4242", 3)].state is JobState.PENDING
    live = _opened_after_the_end(tmp_path / "other", "4242_2|RUNNING|0|0:05|vm|None|0|\n")
    assert ("4242", 3) not in live.poll_once().states
    started = _opened_after_the_end(tmp_path / "started", "", log_of_3=True)
    assert ("4242", 3) not in started.poll_once().states
