"""When one look at Slurm says an array task was cancelled while pending (`cancelled_while_pending`), and when
it must not: a task that may still start, or that left a file behind, is not declared cancelled."""
from __future__ import annotations

from pathlib import Path

import pytest

from backends.records.record import TaskRecord
from backends.states import JobState, TaskState
from backends.watch.never_started import cancelled_while_pending
from backends.watch.slurm.accounting import Snapshot


def _task(tmp_path: Path, value: int) -> TaskRecord:
    return TaskRecord(value=value, job_id="900", array_task_id=value, log=str(tmp_path / f"t.{value}.log"),
                      slurm_out=str(tmp_path / f"slurm-900_{value}.out"),
                      slurm_err=str(tmp_path / f"slurm-900_{value}.err"), attempt=1)


def _answer(**changes) -> Snapshot:
    """Task 1 completed, task 2 named nowhere; the controller lists nothing live of job 900."""
    fields = {"states": {("900", 1): TaskState("900", 1, JobState.COMPLETED, exit_code=0)}, "usage": {},
              "live_jobs": frozenset(), "accounted_jobs": frozenset({"900"})}
    return Snapshot(**{**fields, **changes})


def test_a_task_of_an_ended_job_with_no_row_and_no_file_reads_cancelled(tmp_path):
    (settled,) = cancelled_while_pending([_task(tmp_path, 2)], _answer(), lambda t: t.log).values()
    assert (settled.key, settled.state) == (("900", 2), JobState.CANCELLED)


@pytest.mark.parametrize("answer", [
    _answer(live_jobs=None),                          # the controller was not asked
    _answer(live_jobs=frozenset({"900"})),            # a task of the job may still start it
    _answer(accounted_jobs=frozenset()),              # accounting has no row of the job yet: it may lag
    _answer(states={("900", 2): TaskState("900", 2, JobState.PENDING)}),   # Slurm names the task
], ids=["not-asked", "job-live", "no-accounting", "task-named"])
def test_a_task_slurm_may_still_run_or_name_is_left_as_it_is(tmp_path, answer):
    assert cancelled_while_pending([_task(tmp_path, 2)], answer, lambda t: t.log) == {}


@pytest.mark.parametrize("written", ["t.2.log", "slurm-900_2.out", "slurm-900_2.err"])
def test_a_task_that_left_a_file_started_and_is_not_declared_cancelled(tmp_path, written):
    (tmp_path / written).write_text("")
    assert cancelled_while_pending([_task(tmp_path, 2)], _answer(), lambda t: t.log) == {}


def test_a_log_moved_aside_by_a_later_rerun_counts_as_written(tmp_path):
    moved = tmp_path / "attempts" / "1" / "t.2.log"
    moved.parent.mkdir(parents=True)
    moved.write_text("# Running: sleep 3\n")
    assert cancelled_while_pending([_task(tmp_path, 2)], _answer(), lambda t: str(moved)) == {}
