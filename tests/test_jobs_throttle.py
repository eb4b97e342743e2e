"""--max-jobs-run across array windows, without a cluster: shares, rebalancing plans, scontrol calls."""
from __future__ import annotations

import pytest

from backends.ranges import share_slots
from backends.states import JobState, TaskState
from backends.watch.budget import QueryBudget
from backends.watch.slurm.accounting import CommandResult, QueryError
from backends.watch.slurm.control import (
    WindowControl,
    parse_pending_arrays,
    pending_arrays_argv,
    set_throttle,
    throttle_argv,
)
from backends.watch.throttle import ThrottleChange, Throttler, WindowLoad, plan_changes, slots_problem, window_loads


@pytest.mark.parametrize("demands,limit,shares", [
    ((6, 6), 2, (1, 1)), ((6, 6), 5, (4, 1)), ((1001, 1001, 5), 100, (98, 1, 1)),
    ((3, 3, 3), 2, (1, 1, 0)), ((2, 0, 4), 10, (2, 0, 4)), ((5,), 3, (3,))])
def test_shares_sum_to_the_limit_and_give_every_window_a_slot_while_they_last(demands, limit, shares):
    assert share_slots(demands, limit) == shares
    assert sum(shares) <= limit


def test_a_drained_windows_slots_go_to_the_earliest_window_with_tasks_to_start():
    loads = [WindowLoad("a", 0, 0, 1), WindowLoad("b", 1, 5, 1), WindowLoad("c", 0, 4, 1, held=True)]
    assert plan_changes(loads, 2) == (ThrottleChange("b", 2),)


def test_a_held_window_is_released_when_slots_free():
    loads = [WindowLoad("a", 0, 0, 1), WindowLoad("b", 0, 0, 1), WindowLoad("c", 0, 3, 1, held=True)]
    assert plan_changes(loads, 2) == (ThrottleChange("c", 2, release=True),)


def test_no_change_while_every_slot_is_taken_or_could_be():
    assert plan_changes([WindowLoad("a", 1, 0, 1), WindowLoad("b", 1, 5, 1)], 2) == ()
    # a window still able to start tasks keeps its whole throttle, even while it runs fewer
    assert plan_changes([WindowLoad("a", 0, 3, 2), WindowLoad("b", 0, 5, 1)], 3) == ()
    # an unknown throttle counts as if every waiting task could run
    assert plan_changes([WindowLoad("a", 2, 3, 2), WindowLoad("b", 0, 5, None)], 4) == ()


def test_window_loads_count_holding_and_waiting_tasks():
    states = {("a", 1): TaskState("a", 1, JobState.RUNNING), ("a", 2): TaskState("a", 2, JobState.COMPLETED, node="vm"),
              ("a", 3): TaskState("a", 3, JobState.PENDING), ("b", 0): TaskState("b", 0, JobState.COMPLETING)}
    loads = window_loads([("a", (1, 2, 3, 4)), ("b", (0, 1))], states, {"a": WindowControl(2, False)})
    assert loads == [WindowLoad("a", 1, 2, 2, False, ended=1), WindowLoad("b", 1, 1, None, False)]


def _held_window_runner(calls: list[list[str]]):
    """Slurm's answers for windows 10 (drained) and 11 (held by JobHeldUser), every call kept."""
    def runner(argv):
        calls.append(list(argv))
        if argv[0] == "squeue":
            return CommandResult(0, "11_[1-2%1]|1-2%1|JobHeldUser|11|\n", "")
        return CommandResult(0, "", "")
    return runner


@pytest.mark.parametrize("ours,states,released", [
    (None, {}, True),                           # a record from before `held` was kept: as before
    (frozenset({"11"}), {}, True),              # submitted held, nothing of it started: the plan's hold
    (frozenset(), {}, False),                   # submitted with a share: the user held it since
    (frozenset({"11"}), {("11", 0): JobState.COMPLETED}, False),   # released by us, then held again
    (None, {("11", 0): JobState.RUNNING}, False),
    # one value cancelled while it waited (`scancel 11_0`) never ran: the hold is still the plan's, and
    # taken for the user's the wait hung for ever
    (frozenset({"11"}), {("11", 0): JobState.CANCELLED}, True),
], ids=["unrecorded", "ours", "users", "ours-started-then-held", "unrecorded-started", "ours-one-cancelled-waiting"])
def test_only_the_plans_own_hold_is_released(ours, states, released):
    """A user who paused a window with `scontrol hold J` while hyperion-submit waited had it released
    by the watcher as soon as another window drained: every held window was taken for one the plan
    submitted held. Only a window submitted held none of whose tasks started is released now; one held
    otherwise keeps its slots (nothing is moved to the others either: its release must not exceed N)."""
    calls: list[list[str]] = []
    throttler = Throttler([("10", (1,)), ("11", (0, 1, 2))], 2, QueryBudget(), _held_window_runner(calls),
                          ours=ours)
    seen = {("10", 1): TaskState("10", 1, JobState.COMPLETED, node="vm"),
            **{key: TaskState(key[0], key[1], state, node=None if state is JobState.CANCELLED else "vm")
               for key, state in states.items()}}
    done = throttler(seen)
    assert (["scontrol", "release", "11"] in calls) is released
    assert bool(done) is released and throttler.failure is None


def test_pending_range_rows_name_throttle_and_hold():
    text = "177_[3-6%2]|3-6%2|JobArrayTaskLimit|\n178_[0-3%1]|0-3%1|JobHeldUser|\n179_[1-2]|1-2|Priority|\n"
    assert parse_pending_arrays(text) == {"177": WindowControl(2, False), "178": WindowControl(1, True),
                                          "179": WindowControl(None, False)}
    with pytest.raises(ValueError):
        throttle_argv("5", 0)     # 0 would lift the limit


def test_a_task_held_or_updated_on_its_own_leaves_its_windows_throttle_and_hold_as_they_are():
    """squeue --array-unique, as Slurm 22.05 answers after `scontrol hold 180_4` and `scontrol update
    JobId=180_5 TimeLimit=5`: the window's own row keeps %1 and is not held. Asked without the flag
    the tasks were folded into ``180_[1-6]|1-6|JobArrayTaskLimit,JobHeldAdmin|`` (no throttle), and
    read with the flag each row alike, the window was taken for held and released with the user's
    hold of 180_4."""
    assert "--array-unique" in pending_arrays_argv(["180"])
    text = ("180_[1-3,6%1]|1-3,6%1|JobArrayTaskLimit|180|\n180_4|4|JobHeldAdmin|181|\n"
            "180_5|5|JobArrayTaskLimit|182|\n190_[3]|3|JobHeldUser|190|\n")
    assert parse_pending_arrays(text) == {"180": WindowControl(1, False), "190": WindowControl(None, True)}


def test_a_throttle_raise_slurm_applied_to_the_pending_tasks_of_a_partly_ended_window_is_no_failure():
    """scontrol update/release of an array with ended tasks exits 1, naming them ('Job has already
    finished') and the rest ('No error'): the change was made. Taken for a failure, the raise was
    made again at every poll and a release after it never was."""
    partly = CommandResult(1, "", "177_1-4: Job has already finished\n177_5-9: No error\n")
    set_throttle("177", 2, lambda argv: partly)
    with pytest.raises(QueryError):
        set_throttle("177", 2, lambda argv: CommandResult(1, "", "177_1-4: Access/permission denied\n"))
    with pytest.raises(QueryError):
        set_throttle("177", 2, lambda argv: CommandResult(1, "", "scontrol: error: Invalid job id specified\n"))


def test_throttler_reads_the_throttles_then_raises_and_releases_and_reads_them_back():
    """The throttles are read once, and again only after a change: scontrol's exit status does not
    say whether an array with ended tasks took it (exit 1 beside "No error")."""
    calls: list[list[str]] = []
    throttles, held = {"11": 1, "12": 1}, {"12"}

    def runner(argv):
        calls.append(list(argv))
        if argv[0] == "squeue":
            rows = {"11": "2-3", "12": "0-2"}
            return CommandResult(0, "".join(
                f"{job}_[{rows[job]}%{throttles[job]}]|{rows[job]}%{throttles[job]}|"
                f"{'JobHeldUser' if job in held else 'JobArrayTaskLimit'}|\n" for job in rows), "")
        if argv[1] == "update":
            throttles[argv[2].split("=")[1]] = int(argv[3].split("=")[1])
        elif argv[1] == "release":
            held.discard(argv[2])
        return CommandResult(0, "", "")

    budget = QueryBudget()
    throttler = Throttler([("10", (1,)), ("11", (1, 2, 3)), ("12", (0, 1, 2))], 2, budget, runner)
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED),
              ("11", 1): TaskState("11", 1, JobState.COMPLETED)}
    assert throttler(states) == (ThrottleChange("11", 2),)
    assert calls[0][0] == "squeue" and calls[1] == ["scontrol", "update", "JobId=11", "ArrayTaskThrottle=2"]
    states.update({("11", t): TaskState("11", t, JobState.COMPLETED) for t in (2, 3)})
    assert throttler(states) == (ThrottleChange("12", 2, release=True),)
    assert calls[2][0] == "squeue"          # read back after the raise
    assert calls[3:] == [["scontrol", "update", "JobId=12", "ArrayTaskThrottle=2"], ["scontrol", "release", "12"]]
    assert throttler(states) == () and len(calls) == 6 and calls[5][0] == "squeue"
    assert throttler(states) == () and len(calls) == 6          # nothing changed: not asked again
    assert budget.used() == 6


def test_a_raise_the_controller_did_not_take_is_asked_again():
    """scontrol's partial answer (exit 1: "Job has already finished" beside "No error") counts as
    done, so the throttle is read back: a raise the pending tasks did not take is asked once more."""
    calls: list[list[str]] = []

    def runner(argv):
        calls.append(list(argv))
        if argv[0] == "squeue":
            return CommandResult(0, "11_[2-3%1]|2-3%1|JobArrayTaskLimit|11|\n", "")   # never raised
        return CommandResult(1, "", "11_1: Job has already finished\n11_2-3: No error\n")

    throttler = Throttler([("10", (1,)), ("11", (1, 2, 3))], 2, QueryBudget(), runner)
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED), ("11", 1): TaskState("11", 1, JobState.COMPLETED)}
    assert throttler(states) == (ThrottleChange("11", 2),) and throttler.error is None
    assert throttler(states) == (ThrottleChange("11", 2),)
    assert [c[0] for c in calls] == ["squeue", "scontrol", "squeue", "scontrol"]


def test_a_window_whose_row_names_no_throttle_keeps_the_one_known():
    """Slurm drops `%N` from the row of an array whose own record holds one waiting task (the others
    started or have records of their own) and keeps applying it: read back as unknown, the window
    was never raised again, one task of two running."""
    calls: list[list[str]] = []
    rows = iter(["11_[2-5%1]|2-5%1|JobArrayTaskLimit|11|\n",       # first read
                 "11_5|5|JobArrayTaskLimit|11|\n"])               # 3, 4 have records of their own: no %N
    throttles = {"11": 1}

    def runner(argv):
        calls.append(list(argv))
        if argv[0] == "squeue":
            return CommandResult(0, next(rows), "")
        throttles["11"] = int(argv[3].split("=")[1])
        return CommandResult(0, "", "")

    throttler = Throttler([("10", (1, 2)), ("11", (1, 2, 3, 4, 5))], 3, QueryBudget(), runner)
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED), ("10", 2): TaskState("10", 2, JobState.RUNNING),
              ("11", 1): TaskState("11", 1, JobState.COMPLETED)}
    assert throttler(states) == (ThrottleChange("11", 2),)
    states.update({("10", 2): TaskState("10", 2, JobState.COMPLETED), ("11", 2): TaskState("11", 2, JobState.RUNNING)})
    assert throttler(states) == (ThrottleChange("11", 3),)          # 2 known, not unknown
    assert throttles == {"11": 3}


def test_a_release_refused_after_its_raise_reads_the_windows_again_before_asking_again():
    """A held window whose release is refused (the controller refusing it): the raise before
    it was taken, and the same two calls were made again at every poll on what was read at the start."""
    calls: list[list[str]] = []

    def runner(argv):
        calls.append(list(argv))
        if argv[0] == "squeue":
            return CommandResult(0, "11_[0-2%1]|0-2%1|JobHeldUser|11|\n", "")
        if argv[1] == "release":
            # the error names the refusal, not the harmless line before it
            return CommandResult(1, "", "11_0: Job has already finished\n11_1-2: Access/permission denied\n")
        return CommandResult(0, "", "")

    throttler = Throttler([("10", (1,)), ("11", (0, 1, 2))], 2, QueryBudget(), runner)
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED)}
    assert throttler(states) == () and "permission denied" in (throttler.error or "")
    throttler(states)
    assert [c[:2] for c in calls] == [["squeue", "-j"], ["scontrol", "update"], ["scontrol", "release"],
                                     ["squeue", "-j"], ["scontrol", "update"], ["scontrol", "release"]]


def test_a_refused_move_is_said_once_with_slurms_words_and_its_end_once():
    """A held window whose release scontrol refuses (the controller refusing it):
    nothing said so, and the user stared at a window PENDING for ever. A watcher polls every few
    seconds: the line is said once while the same refusal lasts, and once that it went through."""
    from backends.watch.throttle import SlotsNotice, slots_problem

    refuse = ["11_0-2: Access/permission denied\x1b]52;c;eA==\x07\n"]

    def runner(argv):
        if argv[0] == "squeue":
            return CommandResult(0, "11_[0-2%1]|0-2%1|JobHeldUser|11|\n", "")
        if argv[1] == "release" and refuse:
            return CommandResult(1, "", refuse[0])
        return CommandResult(0, "", "")

    throttler = Throttler([("10", (1,)), ("11", (0, 1, 2))], 2, QueryBudget(), runner)
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED)}
    notice = SlotsNotice()
    assert slots_problem(throttler.failure) is None and notice.news(throttler) is None
    throttler(states)
    line = slots_problem(throttler.failure)
    assert line == ("could not release held job 11 to run on the slots the other windows freed: scontrol release "
                    "failed (rc 1): Access/permission denied\\x1b]52;c;eA==\\x07; trying again at the next poll")
    assert notice.news(throttler) == line
    throttler(states)
    assert notice.news(throttler) is None          # the same refusal at the next poll: not said again
    refuse.clear()
    assert throttler(states) == (ThrottleChange("11", 2, release=True),)
    assert slots_problem(throttler.failure) is None
    assert notice.news(throttler) == "slots moved again: job 11 released, up to 2 at once"
    assert notice.news(throttler) is None


def test_a_poll_that_asks_slurm_nothing_leaves_the_refusal_said():
    """Out of query budget the throttler asks nothing: that is no sign the refusal is over."""
    from backends.watch.throttle import slots_problem

    def runner(argv):
        if argv[0] == "squeue":
            return CommandResult(0, "11_[2-3%1]|2-3%1|JobArrayTaskLimit|11|\n", "")
        return CommandResult(1, "", "slurm_update error: Invalid job id specified\n")

    budget = QueryBudget()
    throttler = Throttler([("10", (1,)), ("11", (1, 2, 3))], 2, budget, runner)
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED), ("11", 1): TaskState("11", 1, JobState.COMPLETED)}
    throttler(states)
    said = slots_problem(throttler.failure)
    assert said is not None and said.startswith("could not move free slots to job 11: "
                                                "scontrol update failed (rc 1): slurm_update error: Invalid job id")
    budget.charge(budget.room())
    assert throttler(states) == () and slots_problem(throttler.failure) == said


def test_hyperion_jobs_watch_says_a_refused_move_once_in_lines_and_under_its_live_table():
    """`hyperion-jobs watch RECORD` drives the same throttler: piped, a line once per refusal and
    once when the slots move; on a terminal, a line under the table while the refusal lasts."""
    import io

    from rich.console import Console

    from backends.cli.jobs.watching import PlainView, render_watch
    from backends.watch.poller import PollUpdate
    from backends.watch.terminal import SafeStream

    answers = iter([CommandResult(1, "", "Unable to contact slurm controller\n")] * 2 + [CommandResult(0, "", "")] * 9)

    def runner(argv):
        if argv[0] == "squeue":
            return CommandResult(0, "11_[2-3%1]|2-3%1|JobArrayTaskLimit|11|\n", "")
        return next(answers)

    throttler = Throttler([("10", (1,)), ("11", (1, 2, 3))], 2, QueryBudget(), runner)
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED), ("11", 1): TaskState("11", 1, JobState.COMPLETED)}
    out = io.StringIO()
    view = PlainView("r.json", SafeStream(out))
    for poll in range(3):
        throttler(states)
        view.slots(throttler)
        if poll == 0:
            console = Console(file=io.StringIO(), width=200)
            console.print(render_watch("r.json", PollUpdate({}, (), None, False, 1.0, None, 1.0), [],
                                       slots=slots_problem(throttler.failure)))
            assert "could not move free slots to job 11" in console.file.getvalue()
    lines = [line.split(" ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == ["could not move free slots to job 11: scontrol update failed (rc 1): "
                     "Unable to contact slurm controller; trying again at the next poll",
                     "slots moved again: job 11 up to 2 at once"]


def test_one_refusal_is_said_once_while_the_window_before_drains_slot_by_slot():
    """The line named the throttle asked, which grows with each task the window before ends: one
    lasting refusal was said again (and the console notified again) for every slot freed."""
    from backends.watch.throttle import SlotsNotice

    def runner(argv):
        if argv[0] == "squeue":
            return CommandResult(0, "11_[0-5%1]|0-5%1|JobArrayTaskLimit|11|\n", "")
        return CommandResult(1, "", "11: Access/permission denied\n")

    throttler = Throttler([("10", (1, 2, 3)), ("11", (0, 1, 2, 3, 4, 5))], 4, QueryBudget(), runner)
    notice, said = SlotsNotice(), []
    states = {("10", t): TaskState("10", t, JobState.RUNNING) for t in (1, 2, 3)}
    for ended in (1, 2, 3):                       # 10's tasks end one by one: 2, 3, then 4 slots asked
        states[("10", ended)] = TaskState("10", ended, JobState.COMPLETED)
        throttler(states)
        said.append(notice.news(throttler))
    assert [line is not None for line in said] == [True, False, False], said


def test_a_poll_with_budget_for_the_read_but_not_the_release_does_not_say_the_refusal_is_over():
    """A release needs two calls: with room for the squeue alone the try stopped before it, and the
    refusal was taken for over ("slots: Slurm no longer refuses"), then said again at the next poll."""
    from backends.watch.throttle import SlotsNotice

    def runner(argv):
        if argv[0] == "squeue":
            return CommandResult(0, "11_[0-2%1]|0-2%1|JobHeldUser|11|\n", "")
        if argv[1] == "release":
            return CommandResult(1, "", "11_0-2: Access/permission denied\n")
        return CommandResult(0, "", "")

    budget = QueryBudget()
    throttler = Throttler([("10", (1,)), ("11", (0, 1, 2))], 2, budget, runner)
    notice = SlotsNotice()
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED)}
    throttler(states)
    assert notice.news(throttler) is not None
    budget.charge(budget.room() - 1)              # the squeue fits, the raise and release do not
    throttler(states)
    assert throttler.failure is not None and notice.news(throttler) is None


def test_a_window_held_again_after_the_watchers_release_is_the_users():
    """The watcher released window 11 (submitted held); before any of its tasks started the user held
    it (`scontrol hold 11`): at the next drained window it was taken for the plan's hold again and
    released, undoing the user's pause."""
    calls: list[list[str]] = []
    throttler = Throttler([("10", (1, 2)), ("11", (0, 1, 2))], 2, QueryBudget(), _held_window_runner(calls),
                          ours=frozenset({"11"}))
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED, node="vm"),
              ("10", 2): TaskState("10", 2, JobState.RUNNING, node="vm")}
    assert throttler(states) == (ThrottleChange("11", 1, release=True),)
    states[("10", 2)] = TaskState("10", 2, JobState.COMPLETED, node="vm")    # held again meanwhile
    assert throttler(states) == () and calls.count(["scontrol", "release", "11"]) == 1


def test_a_window_the_user_released_gets_the_slots_the_others_freed():
    """The user held the second window before the watcher first read the throttles, and released it
    after the first drained: the throttles were read again only after a change of the watcher's, so it
    ran at its share of 1 for the rest of the run under --max-jobs-run 2. Its tasks' reasons (from the
    poll, no query) say the hold is gone: the throttles are read again and the free slot moved."""
    calls: list[list[str]] = []
    held = {"11"}

    def runner(argv):
        calls.append(list(argv))
        if argv[0] == "squeue":
            return CommandResult(0, f"11_[1-2%1]|1-2%1|{'JobHeldUser' if held else 'JobArrayTaskLimit'}|11|\n", "")
        return CommandResult(0, "", "")

    throttler = Throttler([("10", (1,)), ("11", (0, 1, 2))], 2, QueryBudget(), runner, ours=frozenset())
    states = {("10", 1): TaskState("10", 1, JobState.COMPLETED),
              ("11", 0): TaskState("11", 0, JobState.COMPLETED),
              **{("11", t): TaskState("11", t, JobState.PENDING, reason="JobHeldUser") for t in (1, 2)}}
    assert throttler(states) == () and throttler(states) == () and len(calls) == 1   # paused: kept held
    held.clear()            # scontrol release 11
    states.update({("11", t): TaskState("11", t, JobState.PENDING, reason="JobArrayTaskLimit") for t in (1, 2)})
    assert throttler(states) == (ThrottleChange("11", 2),)
    assert calls[1][0] == "squeue" and calls[2] == ["scontrol", "update", "JobId=11", "ArrayTaskThrottle=2"]
    assert ["scontrol", "release", "11"] not in calls


def test_an_operators_hold_on_the_plans_held_window_is_not_released():
    """`sbatch --hold` makes a user hold (JobHeldUser): an operator's `scontrol hold` on the window the
    plan submitted held (JobHeldAdmin) was taken for the plan's and released when the first drained."""
    calls: list[list[str]] = []

    def runner(argv):
        calls.append(list(argv))
        if argv[0] == "squeue":
            return CommandResult(0, "11_[0-2%1]|0-2%1|JobHeldAdmin|11|\n", "")
        return CommandResult(0, "", "")

    throttler = Throttler([("10", (1,)), ("11", (0, 1, 2))], 2, QueryBudget(), runner, ours=frozenset({"11"}))
    assert throttler({("10", 1): TaskState("10", 1, JobState.COMPLETED, node="vm")}) == ()
    assert [c for c in calls if c[0] == "scontrol"] == []
    assert parse_pending_arrays("11_[0-2%1]|0-2%1|JobHeldAdmin|11|\n") == {"11": WindowControl(1, True, True)}


def test_a_paused_window_keeps_no_more_slots_than_it_has_tasks_to_run():
    """Window 10 was raised to %2, then its last waiting task held by the user: it kept both slots,
    though one task at most could ever start; with the other slot taken too, the held window 12 was
    never released and nothing ran."""
    calls: list[list[str]] = []

    def runner(argv):
        calls.append(list(argv))
        if argv[0] == "squeue":
            return CommandResult(0, "10_[5%2]|5%2|JobHeldUser|10|\n12_[0-2%1]|0-2%1|JobHeldUser|12|\n", "")
        return CommandResult(0, "", "")

    throttler = Throttler([("10", (4, 5)), ("11", (0,)), ("12", (0, 1, 2))], 2, QueryBudget(), runner,
                          ours=frozenset({"12"}))
    states = {("10", 4): TaskState("10", 4, JobState.COMPLETED, node="vm"),
              ("11", 0): TaskState("11", 0, JobState.COMPLETED, node="vm")}
    assert throttler(states) == (ThrottleChange("12", 1, release=True),)


def test_hyperion_submits_wait_releases_its_held_window_after_the_user_let_one_value_through():
    """`scontrol release 12_1` while hyperion-submit waited: that value ran, and the window's remaining
    hold (sbatch's own) was taken for the user's: the wait hung. A watcher there since the submission
    made every release of the window, so the hold is still the plan's; a reattached one cannot tell."""
    def throttler_for(from_start: bool, calls: list[list[str]]) -> Throttler:
        def runner(argv):
            calls.append(list(argv))
            if argv[0] == "squeue":
                return CommandResult(0, "12_[0,2%1]|0,2%1|JobHeldUser|12|\n", "")
            return CommandResult(0, "", "")
        return Throttler([("10", (0, 1)), ("12", (0, 1, 2))], 2, QueryBudget(), runner, ours=frozenset({"12"}),
                         from_start=from_start)

    states = {("10", 0): TaskState("10", 0, JobState.COMPLETED, node="vm"),
              ("10", 1): TaskState("10", 1, JobState.COMPLETED, node="vm"),
              ("12", 1): TaskState("12", 1, JobState.COMPLETED, node="vm")}
    waited: list[list[str]] = []
    assert throttler_for(True, waited)(states) == (ThrottleChange("12", 2, release=True),)
    reattached: list[list[str]] = []
    assert throttler_for(False, reattached)(states) == ()
