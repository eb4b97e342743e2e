"""Jobs Slurm has no trace of (accounting purged them, a mistyped record, another cluster's job):
`status` and `list` show their tasks UNKNOWN without calling Slurm's answer a failure, while an
answer that names nothing at all (a site wrapper printing nothing, exit 0) still is one. Without
Slurm: a runner answers as Slurm 22.05 does (test_jobs_slurm_trouble.py asks the real cluster)."""
from __future__ import annotations

import json
from pathlib import Path

from test_console_fixtures import build_history

from backends.records.attempts import ledger_path
from backends.records.history import load_history
from backends.watch.slurm.accounting import SQUEUE_UNKNOWN_JOB, CommandResult, query_what_answers
from backends.watch.targets import history_status

CONF = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
PURGED = "99999997"


def slurm(known: dict[str, list[str]], accounted: dict[str, list[str]] | None = None):
    """squeue as Slurm answers: rows of the `known` jobs it lists; of one id it does not know,
    exit 1 "Invalid job id specified"; of several, nothing, exit 0. sacct: the `accounted` rows."""
    def run(argv):
        if argv[0] != "squeue":
            ids = argv[argv.index("-j") + 1].split(",")
            return CommandResult(0, "".join(f"{row}\n" for job in ids for row in (accounted or {}).get(job, [])), "")
        ids = argv[argv.index("-j") + 1].split(",")
        rows = [row for job in ids for row in known.get(job, [])]
        if not rows and len(ids) == 1:
            return CommandResult(1, "", f"slurm_load_jobs error: {SQUEUE_UNKNOWN_JOB}\n")
        return CommandResult(0, "".join(f"{row}\n" for row in rows), "")
    return run


def wrapper(argv):
    """A site wrapper that prints nothing, exit 0, whatever it is asked."""
    return CommandResult(0, "", "")


def test_a_retry_running_while_an_earlier_attempts_job_is_purged_is_no_failure(tmp_path) -> None:
    """Attempt 1 (job 99999997, purged) left value 3 without an end; attempt 2 reran 1 and 3 and
    runs. Every `status` exited 1 saying the running tasks were 'shown as accounting (sacct) has
    them, which may be behind', though squeue had just listed them running."""
    record = build_history(tmp_path, CONF, n=3, job=PURGED, retry_job="4243", unfinished=(3,),
                           failures={1: ("FAILED", 1, "x")}, retried={1: ("COMPLETED", 0), 3: ("COMPLETED", 0)})
    ledger = ledger_path(record)      # attempt 2 has not ended yet
    ledger.write_text("".join(line + "\n" for line in ledger.read_text().splitlines()
                              if not (json.loads(line)["type"] == "final" and json.loads(line)["attempt"] == 2)))
    running = {"4243": [f"4243_{task}|RUNNING|0|0:31|node01|None|0|" for task in (1, 3)]}
    unknown: list[str] = []
    problems: list[str] = []
    rows = history_status(load_history(record), slurm(running), problems=problems, unknown=unknown)
    assert [(row.value, row.state_label) for row in rows] == [(1, "RUNNING"), (2, "COMPLETED"), (3, "RUNNING")]
    assert unknown == [] and problems == []


def test_tasks_squeue_listed_are_not_said_stale_for_another_jobs_empty_answer(tmp_path) -> None:
    """Accounting says attempt 1's task 3 still runs (a runaway row: the controller has long
    forgotten it) while attempt 2 runs: the line said attempt 2's tasks, which squeue had just
    listed, were 'shown as accounting (sacct) has them, which may be behind', exit 1."""
    record = build_history(tmp_path, CONF, n=3, job=PURGED, retry_job="4243", unfinished=(3,),
                           failures={1: ("FAILED", 1, "x")}, retried={1: ("COMPLETED", 0), 3: ("COMPLETED", 0)})
    ledger = ledger_path(record)
    ledger.write_text("".join(line + "\n" for line in ledger.read_text().splitlines()
                              if not (json.loads(line)["type"] == "final" and json.loads(line)["attempt"] == 2)))
    running = {"4243": [f"4243_{task}|RUNNING|0|0:31|node01|None|0|" for task in (1, 3)]}
    runaway = {PURGED: [f"{PURGED}_3|99999998|RUNNING|0:0|00:00:31|node01|2026-09-21T12:00:00|Unknown|None"]}
    unknown: list[str] = []
    problems: list[str] = []
    rows = history_status(load_history(record), slurm(running, runaway), problems=problems, unknown=unknown)
    assert [(row.value, row.state_label) for row in rows] == [(1, "RUNNING"), (2, "COMPLETED"), (3, "RUNNING")]
    assert unknown == []
    # asked about that job alone, the controller says it knows no such job: a runaway row
    assert problems == [f"controller (squeue) knows no job(s) {PURGED}, which accounting (sacct) still has running or "
                        f"waiting: it ended and accounting never filed how (slurmdbd missed its end): squeue -j {PURGED} "
                        "said 'Invalid job id specified'"]


def test_a_record_whose_jobs_slurm_knows_none_of_is_no_failure(tmp_path) -> None:
    """Two windows' jobs, both unknown to Slurm: squeue -j A,B printed nothing, exit 0, as a wrapper
    does, and `status` exited 1 on every run for ever. Asked about one alone, squeue says it knows
    no such job; a wrapper answering nothing is still said."""
    answer, failed = query_what_answers(["99999998", PURGED], slurm({}))
    assert failed == [] and answer.states == {}
    answer, failed = query_what_answers([PURGED], slurm({}))
    assert failed == []
    _, failed = query_what_answers(["99999998", PURGED], wrapper)
    assert [(source, err.kind, err.jobs) for source, err in failed] == [
        ("squeue", "empty", ("99999998", PURGED)), ("sacct", "empty", ("99999998", PURGED))]


def test_a_task_the_look_just_recorded_is_not_counted_among_those_with_no_recorded_end(tmp_path) -> None:
    """The first `status` after `scancel J_1` while squeue hung: accounting says J_1 CANCELLED (the
    look records it) and J_2, J_3 running. The line said 'of the 3 task(s) with no recorded end, 2
    are shown as accounting (sacct) has them', counting the task it had just recorded."""
    record = build_history(tmp_path, CONF, n=3, job="4242", unfinished=(1, 2, 3))
    accounted = {"4242": ["4242_1|4243|CANCELLED by 0|0:15|00:00:05|node01|2026-09-21T12:00:00|"
                          "2026-09-21T12:00:05|None",
                          *(f"4242_{task}|{4242 + task}|RUNNING|0:0|00:00:31|node01|2026-09-21T12:00:00|Unknown|None"
                            for task in (2, 3))]}
    known = slurm({}, accounted)

    def squeue_hung(argv):
        if argv[0] == "squeue":
            return CommandResult(124, "", "squeue timed out after 30 s\n")
        return known(argv)

    unknown: list[str] = []
    problems: list[str] = []
    rows = history_status(load_history(record), squeue_hung, problems=problems, unknown=unknown)
    assert [(row.value, row.state_label) for row in rows] == [(1, "CANCELLED"), (2, "RUNNING"), (3, "RUNNING")]
    assert load_history(record).ledger.finals[(1, 1)].state == "CANCELLED"      # recorded by this look
    assert len(unknown) == 1 and unknown[0].endswith(
        "; the 2 task(s) with no recorded end are shown as accounting (sacct) has them, which may be behind"), unknown
    assert problems == []


def test_a_job_the_controller_forgot_while_accounting_has_it_running_leaves_no_live_task(tmp_path) -> None:
    """slurmdbd missed the end of job J (accounting has its tasks RUNNING for ever; squeue -j J: 'Invalid
    job id specified'). `status` and `watch` say its tasks ended UNKNOWN and `watch` ends with 'rerun
    only those with: hyperion-jobs retry RECORD', but that retry (and a new submission to the same
    --output-file) was refused for ever: 'still has 2 live task(s) (RUNNING 2) ...; wait for them to
    end ... or cancel them'. They are not live; nothing is recorded of them. The controller listing
    them, or a squeue wrapper answering nothing (exit 0), keeps them live as before."""
    from backends.attempt import live_tasks

    record = build_history(tmp_path, CONF, n=2, job=PURGED, unfinished=(1, 2))
    runaway = {PURGED: [f"{PURGED}_{task}|{int(PURGED) - task}|RUNNING|0:0|00:00:31|node01|2026-09-21T12:00:00|"
                        "Unknown|None" for task in (1, 2)]}
    ledger = ledger_path(record).read_text()
    rows = history_status(load_history(record), slurm({}, runaway))     # what `retry` plans from
    assert [row.state_label for row in rows] == ["UNKNOWN", "UNKNOWN"]   # not RUNNING: not live
    assert live_tasks(load_history(record), runner=slurm({}, runaway)) == []   # begin_attempt's check
    assert ledger_path(record).read_text() == ledger          # no end is made up for them
    running = {PURGED: [f"{PURGED}_{task}|RUNNING|0|0:31|node01|None|0|" for task in (1, 2)]}
    assert live_tasks(load_history(record), runner=slurm(running, runaway)) == [f"{PURGED}_1", f"{PURGED}_2"]
    accounted = slurm({}, runaway)

    def squeue_wrapper(argv):
        return wrapper(argv) if argv[0] == "squeue" else accounted(argv)

    assert live_tasks(load_history(record), runner=squeue_wrapper) == [f"{PURGED}_1", f"{PURGED}_2"]


def test_the_look_at_jobs_slurm_may_not_know_asks_the_watchs_cluster_and_runner(tmp_path) -> None:
    """A record a site file's --clusters sent to another cluster: the watch's look at whether Slurm
    knows its job asked the local cluster (no -M, not the watch's stoppable runner), which knows none
    of that cluster's jobs (or its own job of that id): the watch ended on a job that runs, or never
    ended where the local controller does not answer."""
    from backends.cluster import for_cluster
    from backends.watch.poller import Poller, PollUpdate
    from backends.watch.unknown_jobs import UnknownJobs

    record = build_history(tmp_path, CONF, n=2, job=PURGED, unfinished=(1, 2))
    history = load_history(record)
    asked: list[list[str]] = []
    known = slurm({})

    def far(argv):
        asked.append(list(argv))
        return known(argv)

    poller = Poller({PURGED: (1, 2)}, runner=for_cluster(far, "far"))
    unknown = UnknownJobs(history, history.current.tasks, poller)
    assert unknown.none_known(PollUpdate({}, (), None, False)) is True
    assert unknown.gone == [PURGED]
    assert asked and all(argv[1:3] == ["-M", "far"] for argv in asked), asked
