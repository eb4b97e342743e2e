"""A record whose attempts ran on different Slurm clusters (a site file's --clusters came or went
between a submission and its retry): each job is asked on its own attempt's cluster, one query per
cluster, where every face asked every attempt's jobs with one ``-M`` (attempt 1's, run on the
local cluster, then UNKNOWN, their ends lost) and ``cancel A B`` of two clusters' records sent one
``scancel -M a,b`` (each id cancelled on both, a stranger's job too).

The real test cluster has one cluster: a job that ran on two cannot be made there (tests/
test_clusters_slurm.py shows why), so these faces are asked through a runner that answers as two
clusters would and records each argv."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli
from test_clusters import _slurm_asked

from backends.client import CommandResult
from backends.records.attempts import NewAttempt
from backends.records.history import commit_attempt, load_history
from backends.records.record import JobRecord, SubmitRecord, TaskRecord
from backends.states import JobState

WEST = "gpu-west"
# attempt 1 (local cluster): job 424242, values 1 and 2; attempt 2 (gpu-west) reran value 2 as job 500
LOCAL_SACCT = "424242_1|424243|COMPLETED|0:0|00:00:05|n1|2026-01-01T00:00:00|2026-01-01T00:00:05\n"
WEST_SQUEUE = "500_2|RUNNING|0|00:00:07|w1|None|0\n"


def _history(tmp_path: Path, later_job: str = "500", first_cluster: str | None = None):
    path = tmp_path / "q" / "x.JOB.submit.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    first = SubmitRecord(
        path=str(path), backend="slurm", argv=("hyperion-submit",), cfg="", options={}, script=None,
        array_name="JOB", jobs=(JobRecord("424242", 0, "1-2"),),
        tasks=tuple(TaskRecord(v, "424242", v, str(tmp_path / f"x.{v}.log"), None, None) for v in (1, 2)),
        submitted_at="2026-01-01T00:00:00+00:00", cwd=str(tmp_path), cluster=first_cluster)
    commit_attempt(first, NewAttempt(1))
    second = replace(first, attempt=2, kind="retry", cluster=WEST, jobs=(JobRecord(later_job, 0, "2"),),
                     tasks=(TaskRecord(2, later_job, 2, str(tmp_path / "x.2.log"), None, None, 2),))
    commit_attempt(second, NewAttempt(2, "retry"))
    return load_history(str(path))


def _cluster(argv) -> str | None:
    return argv[2] if list(argv[1:2]) == ["-M"] else None


def _jobs(argv) -> list[str]:
    return argv[argv.index("-j") + 1].split(",") if "-j" in argv else [a for a in argv[1:] if a[0].isdigit()]


class TwoClusters:
    """A runner answering as the local cluster and gpu-west would (`answers`: (cluster, client) ->
    rows, each row's job asked about or not shown), recording each argv."""

    def __init__(self, answers: dict | None = None) -> None:
        self.seen: list[list[str]] = []
        self.answers = answers if answers is not None else {(None, "sacct"): LOCAL_SACCT, (WEST, "squeue"): WEST_SQUEUE}

    def __call__(self, argv) -> CommandResult:
        self.seen.append(list(argv))
        jobs = _jobs(argv)
        rows = self.answers.get((_cluster(argv), argv[0]), "")
        return CommandResult(0, "".join(line for line in rows.splitlines(True) if line.split("_")[0] in jobs), "")

    def asked(self) -> list[tuple[str, str | None, tuple[str, ...]]]:
        """(client, cluster, job ids) of each query."""
        return [(argv[0], _cluster(argv), tuple(sorted({j.partition("_")[0] for j in _jobs(argv)})))
                for argv in self.seen]


def _each_job_on_its_cluster(asked) -> None:
    for client, cluster, jobs in asked:
        assert not ("424242" in jobs and "500" in jobs), asked      # never one query of both clusters' jobs
        if "424242" in jobs:
            assert cluster is None, asked
        if "500" in jobs:
            assert cluster == WEST, asked


def test_status_shows_each_attempts_tasks_as_its_own_cluster_says(tmp_path):
    """`status RECORD` (and `history`, the console's Jobs screen, `usage`, a retry's plan: all through
    `history_status`): attempt 1's value 1 was UNKNOWN, asked `-M gpu-west`."""
    from backends.watch.targets import history_status

    runner = TwoClusters()
    unknown: list[str] = []
    rows = history_status(_history(tmp_path), runner, unknown=unknown)
    assert [(r.value, r.attempt, r.state) for r in rows] == [(1, 1, JobState.COMPLETED), (2, 2, JobState.RUNNING)], rows
    _each_job_on_its_cluster(runner.asked())
    assert sorted((client, cluster or "") for client, cluster, _ in runner.asked()) == [
        ("sacct", ""), ("sacct", WEST), ("squeue", ""), ("squeue", WEST)], runner.asked()
    # the end attempt 1's cluster told is in the ledger: asked again, its value 1 is not asked about
    assert load_history(str(tmp_path / "q" / "x.JOB.submit.json")).ledger.finals[(1, 1)].state == "COMPLETED"


def test_status_of_one_cluster_is_one_query_of_each_client(tmp_path):
    from backends.watch.targets import history_status

    path = tmp_path / "q" / "y.JOB.submit.json"
    path.parent.mkdir()
    record = replace(_history(tmp_path / "two").current, path=str(path), attempt=1, kind="submit")
    commit_attempt(record, NewAttempt(1))
    one = TwoClusters()
    history_status(load_history(str(path)), one, unknown=[])
    assert [(client, cluster) for client, cluster, _ in one.asked()] in (
        [("sacct", WEST), ("squeue", WEST)], [("squeue", WEST), ("sacct", WEST)]), one.asked()


def test_status_of_a_job_asks_the_cluster_of_the_attempt_that_submitted_it(tmp_path):
    from backends.watch.targets import Target, job_status

    history = _history(tmp_path)
    runner = TwoClusters()
    rows = job_status(Target(None, "424242", None), history, runner, unknown=[])
    assert {r.task_id: r.state for r in rows}[1] is JobState.COMPLETED, rows
    assert {cluster for _, cluster, _ in runner.asked()} == {None}, runner.asked()


def test_list_of_a_record_of_two_clusters_asks_each_its_own(tmp_path):
    from backends.watch.targets import histories_states

    runner = TwoClusters()
    failed: list = []
    states = histories_states([_history(tmp_path)], runner, failed=failed)
    assert states[("424242", 1)].state is JobState.COMPLETED and states[("500", 2)].state is JobState.RUNNING
    _each_job_on_its_cluster(runner.asked())


def test_usage_of_ended_tasks_is_asked_on_each_tasks_cluster(tmp_path):
    """`fill_missing_usage` (the console's watch, after every task ended)."""
    from backends.records.attempts import FinalState, append_entries
    from backends.watch.targets import fill_missing_usage

    history = _history(tmp_path)
    append_entries(history.record_path, [FinalState(1, 1, "424242", 1, "COMPLETED", 0, None, 5.0, "n1"),
                                         FinalState(2, 2, "500", 2, "COMPLETED", 0, None, 5.0, "w1")])
    runner = TwoClusters()
    fill_missing_usage(load_history(history.record_path), runner)
    assert runner.seen
    _each_job_on_its_cluster(runner.asked())
    assert {cluster for _, cluster, _ in runner.asked()} == {None, WEST}


def test_a_retrys_live_check_asks_each_attempts_cluster(tmp_path):
    """A retry refuses while a task still runs: attempt 2's value 2 runs on gpu-west, attempt 1's
    value 1 ended on the local cluster (asked `-M gpu-west`, it was not known, and nothing was
    recorded of it)."""
    from backends.attempt import live_task_records

    history = _history(tmp_path)
    runner = TwoClusters()
    live = live_task_records(history, runner=runner)
    assert [(task.value, name) for task, name in live] == [(2, "500_2")]
    _each_job_on_its_cluster(runner.asked())
    assert load_history(history.record_path).final(history.tasks_of(1)[0]).state == "COMPLETED"


def test_watch_polls_each_job_on_its_cluster(tmp_path):
    """`watch RECORD` and the console's watch (`watcher` over every attempt's unended tasks)."""
    from backends.watch.requeued import watched_tasks
    from backends.watch.wait import watcher

    history = _history(tmp_path)
    runner = TwoClusters()
    poller, _ = watcher(history.current, tasks=watched_tasks(history), runner=runner,
                        log_of=history.log_of, cluster_of=history.cluster_of)
    update = poller.poll_once()
    assert update.states[("424242", 1)].state is JobState.COMPLETED, update.states
    assert update.states[("500", 2)].state is JobState.RUNNING
    _each_job_on_its_cluster(runner.asked())


def test_cancel_of_two_clusters_records_is_one_scancel_on_each(tmp_path, monkeypatch, capsys):
    """`cancel A B` of a local record and a gpu-west one sent `scancel -M gpu-west 424242 500`."""
    from backends.cli.jobs import commands, main

    (tmp_path / "a").mkdir()
    here = _history(tmp_path / "a")
    far = tmp_path / "b" / "q" / "z.JOB.submit.json"
    far.parent.mkdir(parents=True)
    commit_attempt(replace(load_history(here.record_path).current, path=str(far), attempt=1), NewAttempt(1))
    local = tmp_path / "c" / "q" / "w.JOB.submit.json"
    local.parent.mkdir(parents=True)
    commit_attempt(replace(here.records[1], path=str(local)), NewAttempt(1))
    runner = TwoClusters({(None, "squeue"): "424242_2|RUNNING|0|00:00:07|n1|None|0\n",
                          (WEST, "squeue"): WEST_SQUEUE})
    monkeypatch.setattr(commands, "run_command", runner)
    assert main(["cancel", "--yes", str(local), str(far)]) == 0
    scancels = [argv for argv in runner.seen if argv[0] == "scancel"]
    assert scancels == [["scancel", "424242"], ["scancel", "-M", WEST, "500"]], runner.seen
    assert "424242 on the local cluster, and 500 on cluster gpu-west" in capsys.readouterr().out


def test_equal_job_ids_of_two_clusters_are_never_taken_for_each_other(tmp_path):
    """Attempt 2's job on gpu-west has attempt 1's id: each cluster's answer is kept for its own
    attempt's tasks (the local cluster's job 424242 has task 2 too, still running: not attempt 2's)."""
    from backends.watch.targets import history_status

    history = _history(tmp_path, later_job="424242")
    runner = TwoClusters({(None, "sacct"): LOCAL_SACCT, (None, "squeue"): "424242_2|RUNNING|0|00:00:07|n1|None|0\n",
                          (WEST, "sacct"): "424242_2|424250|FAILED|1:0|00:00:03|w1|2026-01-02T00:00:00|"
                                           "2026-01-02T00:00:03\n"})
    rows = history_status(history, runner, unknown=[])
    assert [(r.value, r.attempt, r.state) for r in rows] == [(1, 1, JobState.COMPLETED), (2, 2, JobState.FAILED)], rows


@pytest.mark.parametrize("first", ["east", None])
def test_minus_m_is_checked_against_the_cluster_of_the_attempt_that_ran_the_job(tmp_path, first):
    """-M with a job id a record names, or with the record, of attempts on two clusters: compared with
    every attempt's clusters joined (`east,gpu-west`), `status -M east 424242` of attempt 1's job on
    east was refused ("ran on cluster east,gpu-west, not on east"), and of a local attempt 1 and a
    retry on gpu-west, `status -M gpu-west 424242` was taken and the local cluster asked without a
    word. The job's own attempt's cluster is taken and asked; another is refused naming that one."""
    record = _history(tmp_path, first_cluster=first).record_path
    env, asked = _slurm_asked(tmp_path)
    ran = f"cluster {first}" if first else "the local cluster"

    def jobs(*argv: str):
        asked.unlink(missing_ok=True)
        return run_cli("hyperion-jobs", *argv, cwd=tmp_path, env=env, timeout=60)

    def clusters_asked() -> set:
        return {_cluster(line.split()) for line in asked.read_text().splitlines()} if asked.exists() else set()

    taken = [("status", WEST, "500"), ("usage", WEST, "500"), ("status", WEST, record), ("watch", WEST, "500")]
    if first:   # -M names no local cluster
        taken += [("status", first, "424242"), ("history", first, "424242"), ("logs", first, "424242_1")]
    for command, cluster, target in taken:
        done = jobs(command, "-M", cluster, target)
        assert "-M/--clusters" not in done.stderr, (command, target, done.stderr)
        if target != record and command != "history":    # a record's every attempt is asked, each on its own
            # (logs without -f reads the log, asking nothing)
            assert clusters_asked() == ({cluster} if command != "logs" else set()), (command, target, done.stderr)
    refused = [(("status", "-M", WEST, "424242"), f"job 424242 of {record} ran on {ran}, not on {WEST}"),
               (("logs", "-M", WEST, f"{record}:1"), f"job 424242 of {record} ran on {ran}, not on {WEST}"),
               (("watch", "-M", "north", record), f"the jobs of {record} ran on {ran} and cluster {WEST}, not on north"),
               (("cancel", "-M", first or "north", record), f"job 500 of {record} ran on cluster {WEST}, not on "
                                                             f"{first or 'north'}")]
    for argv, said in refused:
        done = jobs(*argv)
        assert done.returncode == 2 and done.stdout == "", (argv, done)
        assert done.stderr == (f"hyperion-jobs: error: -M/--clusters: {said}: leave out -M {argv[2]} (a record's "
                               "jobs are asked of their own attempt's cluster)\n"), (argv, done.stderr)
        assert not asked.exists(), (argv, asked.read_text())


def test_cancel_of_a_record_whose_job_slurm_knows_nothing_of_names_the_job(tmp_path):
    """`cancel RECORD` of a record whose (newest attempt's) job neither squeue nor sacct names said
    "Slurm knows no job q/x.JOB.submit.json": the record's path, as if it were a job id."""
    _history(tmp_path)
    env, asked = _slurm_asked(tmp_path)
    done = run_cli("hyperion-jobs", "cancel", "--yes", "q/x.JOB.submit.json", cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr == ("hyperion-jobs: error: JOB: Slurm knows no job 500, which q/x.JOB.submit.json submitted: "
                           f"neither squeue nor accounting (sacct) on cluster {WEST} has it; nothing to cancel\n"), done
    assert "scancel" not in asked.read_text()
