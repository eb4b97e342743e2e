"""Job state model and the sacct/squeue parsers, on output recorded from Slurm 22.05."""
from __future__ import annotations

import pytest

from backends.errors import InputError
from backends.states import JobState, explain_reason, never_runs
from backends.watch.slurm.accounting import (
    CommandResult,
    QueryError,
    error_kind,
    merge,
    parse_duration,
    parse_exit_code,
    parse_sacct,
    parse_sacct_rows,
    parse_squeue,
    range_only,
    run_squeue,
    sacct_argv,
    squeue_argv,
    wait_status,
)
from backends.watch.slurm.cancel import CancelError, cancel, cancel_argv

# Recorded on the test cluster (sbatch --array=1-6%3; task 1 exits 0, task 2 exits 3).
SACCT_MIXED = """\
1_1|2|COMPLETED|0:0|00:00:00|vm|2026-12-02T13:04:12|2026-12-02T13:04:12
1_2|3|FAILED|3:0|00:00:00|vm|2026-12-02T13:04:12|2026-12-02T13:04:12
1_3|4|RUNNING|0:0|00:00:04|vm|2026-12-02T13:04:12|Unknown
1_4|5|RUNNING|0:0|00:00:04|vm|2026-12-02T13:04:12|Unknown
1_5|6|RUNNING|0:0|00:00:04|vm|2026-12-02T13:04:12|Unknown
1_6|1|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown
"""
SACCT_PENDING_RANGE = "7_[3-5%2]|7|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n"
SACCT_CANCELLED_RANGE = "7_[3-5%2]|7|CANCELLED by 0|0:0|00:00:00|None assigned|None|2026-12-02T13:04:28\n"
# squeue -t all -r -O JobArrayID:|,State:|,exit_code:|,TimeUsed:|,NodeList:| (exit_code: wait status)
SQUEUE_MIXED = """\
453_1|COMPLETED|0|0:00|vm|
453_2|FAILED|768|0:00|vm|
454|FAILED|9|0:01|vm|
453_3|PENDING|0|0:00||
453_4|RUNNING|0|0:04|vm|
"""


@pytest.mark.parametrize("text,state", [
    ("CANCELLED by 0", JobState.CANCELLED), ("CANCELLED+", JobState.CANCELLED),
    ("OUT_OF_MEMORY", JobState.OUT_OF_MEMORY), ("PD", JobState.PENDING),
    ("NODE_FAIL", JobState.NODE_FAIL), ("requeued", JobState.REQUEUED),
])
def test_parse_state_spellings(text, state):
    assert JobState.parse(text) is state


def test_unknown_state_is_an_error():
    with pytest.raises(ValueError, match="BOGUS"):
        JobState.parse("BOGUS")


def test_terminal_and_success_sets():
    finals = {JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.TIMEOUT,
              JobState.OUT_OF_MEMORY, JobState.NODE_FAIL, JobState.PREEMPTED,
              JobState.BOOT_FAIL, JobState.DEADLINE}
    live = {JobState.PENDING, JobState.RUNNING, JobState.COMPLETING, JobState.REQUEUED,
            JobState.SUSPENDED, JobState.RESIZING}
    assert all(s.is_terminal for s in finals)
    assert not any(s.is_terminal for s in live)
    assert [s for s in JobState if s.is_success] == [JobState.COMPLETED]


def test_sacct_mixed_array_rows():
    tasks = {t.task_id: t for t in parse_sacct(SACCT_MIXED)}
    assert {t.job_id for t in tasks.values()} == {"1"}
    assert tasks[1].state is JobState.COMPLETED and tasks[1].exit_code == 0
    assert tasks[2].state is JobState.FAILED and tasks[2].exit_code == 3
    assert tasks[3].state is JobState.RUNNING and tasks[3].exit_code is None
    assert tasks[3].elapsed == 4 and tasks[3].node == "vm"
    assert tasks[6].state is JobState.PENDING and tasks[6].node is None


def test_sacct_pending_range_expands_to_tasks():
    tasks = parse_sacct(SACCT_PENDING_RANGE)
    assert [(t.job_id, t.task_id, t.state) for t in tasks] == [
        ("7", 3, JobState.PENDING), ("7", 4, JobState.PENDING), ("7", 5, JobState.PENDING)]
    cancelled = parse_sacct(SACCT_CANCELLED_RANGE)
    assert {t.state for t in cancelled} == {JobState.CANCELLED} and len(cancelled) == 3


def test_sacct_own_row_beats_pending_range():
    text = "9_[4-5]|9|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n" \
           "9_3|10|FAILED|1:0|00:00:01|vm|x|y\n"
    merged = merge(parse_sacct_rows(text), [])
    assert merged[("9", 3)].state is JobState.FAILED
    assert merged[("9", 4)].state is JobState.PENDING


def test_sacct_non_array_and_signal():
    (task,) = parse_sacct("42|42|FAILED|0:15|1-02:03:04|vm|a|b\n")      # the program died of SIGTERM
    assert (task.job_id, task.task_id, task.state) == ("42", None, JobState.FAILED)
    assert task.signal == 15 and task.elapsed == 86400 + 2 * 3600 + 3 * 60 + 4


def test_sacct_garbage_is_an_error():
    with pytest.raises(ValueError):
        parse_sacct("sacct: error: something\n")


def test_exit_code_and_duration_spellings():
    assert parse_exit_code("3:0") == (3, None)
    assert parse_exit_code("0:9") == (0, 9)
    assert parse_exit_code("0:125") == (None, None)     # Slurm's out-of-memory marker, no signal 125
    assert parse_exit_code("1:253") == (1, None)
    assert wait_status(125) == (None, None) and wait_status(9) == (0, 9) and wait_status(3 << 8) == (3, None)
    assert parse_duration("0:04") == 4
    assert parse_duration("1:02:03") == 3723
    assert parse_duration("INVALID") is None


def test_squeue_rows():
    tasks = {t.key: t for t in parse_squeue(SQUEUE_MIXED)}
    assert {k: t.state.value for k, t in tasks.items()} == {
        ("453", 1): "COMPLETED", ("453", 2): "FAILED", ("454", None): "FAILED",
        ("453", 3): "PENDING", ("453", 4): "RUNNING"}
    assert (tasks[("453", 2)].exit_code, tasks[("453", 2)].signal) == (3, None)
    assert (tasks[("454", None)].exit_code, tasks[("454", None)].signal) == (0, 9)   # kill -9
    assert tasks[("453", 4)].exit_code is None and tasks[("453", 4)].elapsed == 4
    assert tasks[("453", 3)].node is None
    assert all(t.source == "squeue" for t in tasks.values())


def test_merge_precedence():
    sacct = parse_sacct_rows("5_1|5|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown\n"
                             "5_2|6|COMPLETED|0:0|00:00:02|vm|a|b\n"
                             "5_4|8|RUNNING|0:0|00:00:02|vm|a|Unknown\n")
    squeue = parse_squeue("5_1|RUNNING|0|0:01|vm|\n5_2|COMPLETING|0|0:02|vm|\n5_3|PENDING|0|0:00||\n"
                          "5_4|FAILED|256|0:03|vm|\n")
    merged = merge(sacct, squeue)
    assert merged[("5", 1)].state is JobState.RUNNING and merged[("5", 1)].source == "squeue"
    assert merged[("5", 2)].state is JobState.COMPLETED and merged[("5", 2)].source == "sacct"
    assert merged[("5", 3)].state is JobState.PENDING
    assert merged[("5", 4)].state is JobState.FAILED and merged[("5", 4)].exit_code == 1


def test_stale_pending_range_row_loses_to_the_controller():
    # Recorded: after `scancel 373_3 373_5` (5 pending, carrying the array's raw id),
    # sacct's only row was the old range row, now CANCELLED, while 373_4 still ran.
    sacct = parse_sacct_rows("373_[3-5%2]|373|CANCELLED by 0|0:0|00:00:00|None assigned|None|x\n")
    squeue = parse_squeue("373_4|RUNNING|0|0:03|vm|\n")
    merged = merge(sacct, squeue)
    assert merged[("373", 4)].state is JobState.RUNNING
    assert merged[("373", 5)].state is JobState.CANCELLED
    assert range_only(sacct, squeue) == {("373", 3), ("373", 5)}


def test_a_waiting_task_the_controller_dropped_is_not_kept_pending_by_accounting_s_lag():
    """Recorded 10 ms after `scancel 7554_5` of a waiting task (8 tasks, %2): squeue's range row
    no longer held 5, sacct's still did, and `hyperion-jobs status 7554` showed `7554_5 PENDING
    (JobArrayTaskLimit)`; 1.5 s later accounting caught up."""
    sacct = parse_sacct_rows(
        "7554_1|7556|RUNNING|0:0|00:00:08|vm|2026-12-07T13:01:57|Unknown|None\n"
        "7554_2|7557|RUNNING|0:0|00:00:08|vm|2026-12-07T13:01:57|Unknown|None\n"
        "7554_[3-8%2]|7554|PENDING|0:0|00:00:00|None assigned|Unknown|Unknown|JobArrayTaskLimit\n")
    squeue = parse_squeue("7554_[3-4,6-8%2]|PENDING|0|0:00||JobArrayTaskLimit|0|\n"
                          "7554_2|RUNNING|0|0:08|vm|None|0|\n7554_1|RUNNING|0|0:08|vm|None|0|\n")
    merged = merge(sacct, squeue, one_look=True)
    assert sorted(task for _, task in merged) == [1, 2, 3, 4, 6, 7, 8]
    assert merged[("7554", 3)].source == "squeue"
    # a job the controller does not list (forgotten, or not asked): accounting's range row stands
    assert merge(sacct, [], one_look=True)[("7554", 5)].state is JobState.PENDING
    # a watch keeps it: seeing it listed, then gone, is how it tells it was cancelled while pending
    assert merge(sacct, squeue)[("7554", 5)].state is JobState.PENDING


def test_argv_queries_all_jobs_at_once():
    assert sacct_argv(["1", "7"])[:3] == ["sacct", "-j", "1,7"]
    assert "-X" not in sacct_argv(["1"])           # step rows too: MaxRSS lives there
    assert sacct_argv(["1"])[-1].split(",")[:3] == ["JobID", "JobIDRaw", "State"]
    assert "MaxRSS" in sacct_argv(["1"])[-1]
    assert squeue_argv(["1", "7"])[:3] == ["squeue", "-j", "1,7"]
    # not -r (a stepped range's last task is left out), nor neither (a requeued task is folded in)
    assert "-r" not in squeue_argv(["1"]) and "--array-unique" in squeue_argv(["1"])


def test_the_users_squeue_and_sacct_defaults_do_not_reach_the_queries(monkeypatch):
    """SQUEUE_ARRAY=1 in a user's profile is -r again; SQUEUE_PARTITION/USERS hide tasks a watch then
    reads as cancelled; SLURM_TIME_FORMAT=relative gives times no parser reads."""
    from backends.watch.slurm.accounting import slurm_env

    for name, value in {"SQUEUE_ARRAY": "1", "SQUEUE_PARTITION": "gpu", "SACCT_FEDERATION": "1",
                        "SLURM_TIME_FORMAT": "relative", "SLURM_CLUSTERS": "c1"}.items():
        monkeypatch.setenv(name, value)
    env = slurm_env()
    assert not any(k.startswith(("SQUEUE_", "SACCT_")) for k in env)
    assert env["SLURM_TIME_FORMAT"] == "standard" and env["SLURM_BITSTR_LEN"] == "0"
    assert env["SLURM_CLUSTERS"] == "c1"          # where sbatch submitted: asked there too
    assert "all" in squeue_argv(["1"])   # ended tasks too, while the controller has them


def test_squeue_unknown_job_is_empty_not_an_error():
    gone = CommandResult(1, "", "slurm_load_jobs error: Invalid job id specified\n")
    assert run_squeue(["999"], lambda argv: gone) == []
    down = CommandResult(1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")
    with pytest.raises(QueryError, match="Unable to contact"):
        run_squeue(["999"], lambda argv: down)


def test_cancel_argv_and_bad_target():
    assert cancel_argv(["12", "13_4"]) == ["scancel", "12", "13_4"]
    with pytest.raises(InputError) as err:
        cancel_argv(["12; rm -rf /"])
    assert err.value.field == "JOB"


def test_cancel_reports_scancel_failure():
    failed = CommandResult(1, "", "scancel: error: Kill job error on job id 99: Invalid job id specified\n")
    with pytest.raises(CancelError, match="Invalid job id"):
        cancel(["99"], runner=lambda argv: failed)


@pytest.mark.parametrize("reason,never", [
    ("PartitionConfig", True), ("PartitionNodeLimit", True), ("PartitionTimeLimit", True),
    ("BadConstraints", True), ("QOSMaxCpuPerJobLimit", True), ("AssocMaxWallDurationPerJobLimit", True),
    ("ReqNodeNotAvail", True), ("ReqNodeNotAvail, UnavailableNodes:", True),
    ("ReqNodeNotAvail, UnavailableNodes:vm", False), ("ReqNodeNotAvail, Reserved for maintenance", False),
    ("Priority", False), ("Resources", False), ("JobArrayTaskLimit", False), ("BeginTime", False),
    ("JobHeldUser", False), ("QOSMaxCpuPerUserLimit", False), (None, False), ("", False)])
def test_pending_reasons_that_never_resolve(reason, never):
    assert never_runs(reason) is never


def test_explain_reason_says_what_slurm_means():
    assert explain_reason("PartitionTimeLimit") == "PartitionTimeLimit: its time limit is above the partition's MaxTime"
    assert explain_reason("Priority") == "Priority"


def test_squeue_reason_and_restart_count():
    tasks = {t.key: t for t in parse_squeue("9_1|PENDING|0|0:00||BeginTime|2|\n9_2|RUNNING|0|0:03|vm|None|0|\n"
                                            "10|PENDING|0|0:00||PartitionConfig|0|\n")}
    assert (tasks[("9", 1)].reason, tasks[("9", 1)].restart_count) == ("BeginTime", 2)
    assert (tasks[("9", 2)].reason, tasks[("9", 2)].restart_count) == (None, 0)
    assert tasks[("10", None)].reason == "PartitionConfig"


def test_sacct_step_rows_are_not_task_states():
    rows = parse_sacct_rows("4_1|5|COMPLETED|0:0|00:00:01|vm|a|b|None\n4_1.batch|5.batch|COMPLETED|0:0|00:00:01|vm|a|b|\n"
                            "6|6|FAILED|2:0|00:00:01|vm|a|b|None\n6.0|6.0|FAILED|2:0|00:00:01|vm|a|b|\n")
    assert [t.key for t in rows.own] == [("4", 1), ("6", None)]


@pytest.mark.parametrize("rc,stderr,kind", [
    (1, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)", "unreachable"),
    (1, "sacct: error: Problem talking to the database: Connection refused", "unreachable"),
    (1, "slurm_load_jobs error: Rate limit exceeded, please retry momentarily", "rate_limited"),
    (1, "slurm_load_jobs error: Socket timed out on send/recv operation", "timeout"),
    (124, "squeue timed out after 30 s", "timeout"),
    (1, "squeue: error: something else", "other")])
def test_query_errors_are_classified_for_retrying(rc, stderr, kind):
    assert error_kind(rc, stderr) == kind


def test_merge_keeps_a_requeued_task_alive_over_its_earlier_attempts_end():
    sacct = parse_sacct_rows("8_1|9|NODE_FAIL|0:0|00:00:07|vm|a|b|None\n8_2|10|PREEMPTED|0:0|00:00:07|vm|a|b|None\n"
                             "8_3|11|COMPLETED|0:0|00:00:07|vm|a|b|None\n8_4|12|COMPLETED|0:0|00:00:07|vm|a|b|None\n")
    squeue = parse_squeue("8_1|COMPLETING|0|0:07|vm|None|1|\n8_2|PENDING|0|0:00||BeginTime|1|\n"
                          "8_3|COMPLETING|0|0:07|vm|None|0|\n8_4|PENDING|0|0:00||BeginTime|1|\n")
    merged = merge(sacct, squeue)
    assert merged[("8", 1)].state is JobState.COMPLETING           # NODE_FAIL, being requeued
    assert merged[("8", 2)].state is JobState.PENDING              # PREEMPTED, requeued
    assert merged[("8", 3)].state is JobState.COMPLETED            # an ordinary end, ahead of squeue
    assert merged[("8", 4)].state is JobState.PENDING              # requeued by hand after it completed


@pytest.mark.parametrize("state,sacct_code,squeue_status", [
    ("TIMEOUT", "0:15", 15), ("CANCELLED by 0", "0:0", 15), ("OUT_OF_MEMORY", "0:125", 125)])
def test_a_task_slurm_ended_has_no_exit_code_only_its_state(state, sacct_code, squeue_status):
    """Its ExitCode is an artifact: 'TIMEOUT exit 0' from the job row in one view, '0 sig 15' from
    squeue in another, for the same task; the program's own code is in its log footer if it wrote one."""
    (own,) = parse_sacct_rows(f"9_1|9|{state}|{sacct_code}|00:01:00|vm|None|x\n").own
    (seen,) = parse_squeue(f"9_1|{state.split()[0]}|{squeue_status}|1:00|vm|\n")
    assert (own.exit_code, own.signal) == (seen.exit_code, seen.signal) == (None, None)
    (failed,) = parse_sacct_rows("9_2|9|FAILED|3:0|00:01:00|vm|None|x\n").own
    assert failed.exit_code == 3 and not failed.signal


def test_a_slurm_kill_recorded_before_exit_codes_were_dropped_shows_none_either():
    """Ledgers written before keep TIMEOUT's '0 sig 15': status showed it, and failure groups split
    one cause into 'TIMEOUT' and 'TIMEOUT exit 0 signal 15'."""
    from backends.records.attempts import FinalState
    from backends.records.record import TaskRecord
    from backends.watch.rows import final_row

    task = TaskRecord(3, "77", 3, "/x/t.3.log", None, None)
    timed_out = final_row(task, FinalState(1, 3, "77", 3, "TIMEOUT", 0, 15, 60.0, "vm", 0, time="x"), None)
    failed = final_row(task, FinalState(1, 3, "77", 3, "FAILED", 0, 11, 60.0, "vm", 0, time="x"), None)
    assert (timed_out.exit_code, timed_out.signal) == (None, None)
    assert (failed.exit_code, failed.signal) == (0, 11)               # the program's own segfault stays


def test_squeue_tells_the_time_used_and_request_as_sacct_does():
    """Recorded on the test cluster: `--mem=100M -t 10:00`, `-c 2 --mem-per-cpu=50M -t 1-00:00:00`
    (MinMemory says 50M there, with no mark that it is per CPU) and a job with no limit. sacct
    gives them 100M, 100M and 3013M, 600 s, 86400 s and none (Partition_Limit)."""
    from backends.watch.slurm.accounting import parse_squeue_rows

    rows = parse_squeue_rows("7242_1|RUNNING|0|0:12|vm|None|0|10:00|1|cpu=1,mem=100M,node=1,billing=1|1|\n"
                             "7243_[1-2]|PENDING|0|0:00||Priority|0|1-00:00:00|2|cpu=2,mem=100M,node=1,billing=2|1|\n"
                             "7244|PENDING|0|0:00||Priority|0|UNLIMITED|1|cpu=1,mem=3013M,node=1,billing=1|1|\n")
    figures = {key: (u.elapsed_seconds, u.time_limit_seconds, u.req_mem_bytes, u.alloc_cpus, u.max_rss_bytes)
               for key, u in rows.usage.items()}
    assert figures == {("7242", 1): (12.0, 600.0, 100 << 20, 1, None),
                       ("7243", 1): (0.0, 86400.0, 100 << 20, 2, None),
                       ("7243", 2): (0.0, 86400.0, 100 << 20, 2, None),
                       ("7244", None): (0.0, None, 3013 << 20, 1, None)}
    assert [t.key for t in rows.states] == list(rows.usage)
    assert parse_squeue_rows("5_1|RUNNING|0|0:03|vm|None|0|\n").usage == {}   # an answer without them
    assert squeue_argv(["1"])[-1].endswith("TimeLimit:|,NumCPUs:|,tres-alloc:|,NumNodes:|")


# Recorded on the test cluster 0.01 s after `scancel 7746` of `--array=1-3%1` while task 1 ran (it
# had started 1 s before, accounting had no row of it yet): accounting's only row was the array
# job's own, with no task id (and a half-filled request: ReqMem 16?, no CPUs), while the controller
# named the three tasks.
SACCT_ARRAY_JOB_ALONE = ("7746|7746|CANCELLED by 0|0:0|00:00:00|None assigned|2026-12-05T02:14:18|"
                         "2026-12-05T02:14:18|None||00:00:00||16?|0|\n")
SQUEUE_CANCELLED_ARRAY = """\
7746_2|CANCELLED|0|0:00||JobArrayTaskLimit|0|10:00|1|cpu=1,mem=100M,node=1,billing=1|1|
7746_3|CANCELLED|0|0:00||JobArrayTaskLimit|0|10:00|1|cpu=1,mem=100M,node=1,billing=1|1|
7746_1|COMPLETING|0|0:01|vm|None|0|10:00|1|cpu=1,mem=100M,node=1,billing=1|1|
"""


def _answers(sacct: str, squeue: str):
    def runner(argv):
        return CommandResult(0, sacct if argv[0] == "sacct" else squeue, "")
    return runner


def test_status_of_an_array_cancelled_mid_task_shows_only_its_tasks(tmp_path):
    """`status 7746` said '4 tasks: CANCELLED 3, COMPLETING 1', the fourth a row 7746 with no task."""
    from backends.watch.rows import state_counts
    from backends.watch.targets import Target, job_history, job_status

    runner = _answers(SACCT_ARRAY_JOB_ALONE, SQUEUE_CANCELLED_ARRAY)
    rows = job_status(*job_history(Target(None, "7746"), [tmp_path], runner), runner)
    assert [(row.slurm_id, row.state_label) for row in rows] == [
        ("7746_1", "COMPLETING"), ("7746_2", "CANCELLED"), ("7746_3", "CANCELLED")]
    assert state_counts(rows) == {"COMPLETING": 1, "CANCELLED": 2}


def test_a_plain_job_keeps_its_single_row_and_a_range_row_its_tasks():
    sacct = parse_sacct_rows("7750|7750|CANCELLED by 0|0:0|00:00:03|vm|a|b|None\n")
    merged = merge(sacct, parse_squeue("7750|COMPLETING|0|0:03|vm|None|0|\n"))
    assert list(merged) == [("7750", None)] and merged[("7750", None)].state is JobState.CANCELLED
    ranged = parse_sacct_rows("7746_[2-3%1]|7746|CANCELLED by 0|0:0|00:00:00|None assigned|None|x|None\n")
    merged = merge(ranged, parse_squeue("7746_1|COMPLETING|0|0:01|vm|None|0|\n"))
    assert sorted(merged) == [("7746", 1), ("7746", 2), ("7746", 3)]


def test_summaries_count_a_lost_end_as_failed_and_a_task_never_reported_as_unknown() -> None:
    """The README's `failed` covers an end nobody recorded (LOST: the task ran, its runner died with it);
    a task Slurm never reported is `unknown`, as `status` shows it: nothing says it ran, let alone failed."""
    from backends.states import end_counts, end_word

    assert end_word("UNKNOWN") == "unknown" and end_word("LOST") == "failed"
    assert end_counts(["UNKNOWN", "LOST", "TIMEOUT", "FAILED"]) == {"failed": 2, "timeout": 1, "unknown": 1}
    assert list(end_counts(["UNKNOWN", "NOT_RUN", "CANCELLED"])) == ["cancelled", "not-run", "unknown"]


def test_a_signal_is_named_alike_in_the_exit_column_and_the_counts() -> None:
    """`status` printed `sig 64 (signal 64)` for a signal Linux has no name for, and a SPECIAL_EXIT
    with a signal was counted `sighup` by --failures while `history` said SPECIAL_EXIT."""
    from backends.cli.jobs.table import fmt_exit
    from backends.states import JobState, end_word
    from backends.watch.rows import TaskRow

    def row(state: JobState, signal: int) -> TaskRow:
        return TaskRow(1, "local", None, state, None, signal, 1.0, None, None, None, None)

    assert fmt_exit(row(JobState.FAILED, 1)) == "sig 1 (SIGHUP)"
    assert fmt_exit(row(JobState.FAILED, 99)) == "sig 99"
    assert end_word("FAILED", 1) == "sighup"
    assert (end_word("SPECIAL_EXIT", 1), row(JobState.SPECIAL_EXIT, 1).ended_label) == ("failed", "SPECIAL_EXIT")
