"""Log hints that bring a poll forward: a task's log appearing, its footer, slurmstepd's message."""
from __future__ import annotations

from pathlib import Path

from backends.logheader import ended_line, running_line, started_line
from backends.records.record import TaskRecord
from backends.states import JobState, TaskState
from backends.watch.nudge import LogNudge


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _task(tmp_path: Path, value: int) -> TaskRecord:
    return TaskRecord(value, "7", value, str(tmp_path / f"t.{value}.log"), str(tmp_path / f"s_{value}.out"),
                      str(tmp_path / f"s_{value}.err"))


def _state(task: int, state: JobState, restarts: int = 0) -> dict:
    return {("7", task): TaskState("7", task, state, restart_count=restarts)}


def test_start_and_footer_nudge_once_and_the_footer_until_slurm_agrees(tmp_path):
    task = _task(tmp_path, 1)
    clock = Clock()
    nudge = LogNudge([task], clock=clock, settle=15.0)
    pending = _state(1, JobState.PENDING)
    assert nudge(pending) is False
    Path(task.log).write_text(running_line(["x"]) + "\n" + started_line("now", "vm") + "\n")
    assert nudge(pending) is True                 # the log appeared: it started
    running = _state(1, JobState.RUNNING)
    assert nudge(running) is False
    with open(task.log, "a") as log:
        log.write("step 1\n")
    assert nudge(running) is False                # output is no news
    with open(task.log, "a") as log:
        log.write(ended_line(0, "now", 3) + "\n")
    assert nudge(running) is False                # the footer: the end is near, but Slurm
    clock.now = 0.3                               # needs a moment to register it
    assert nudge(running) is True
    clock.now = 10.0
    assert nudge(running) is True                 # Slurm still says RUNNING: keep asking
    assert nudge(_state(1, JobState.COMPLETED)) is False
    clock.now = 30.0
    assert nudge(running) is False                # past the settle time: back to the normal pace


def test_an_earlier_runs_footer_is_no_hint(tmp_path):
    task = _task(tmp_path, 2)
    Path(task.log).write_text(ended_line(0, "then", 1) + "\n")
    nudge = LogNudge([task], clock=Clock())
    assert nudge(_state(2, JobState.RUNNING)) is False


def test_slurmstepd_writing_the_err_file_of_a_running_task_nudges(tmp_path):
    task = _task(tmp_path, 3)
    nudge = LogNudge([task], clock=Clock())
    assert nudge(_state(3, JobState.RUNNING)) is False
    Path(task.slurm_err).write_text("")          # Slurm creates it empty when the task starts
    assert nudge(_state(3, JobState.RUNNING)) is False
    Path(task.slurm_err).write_text("slurmstepd: error: *** JOB 9 ON vm CANCELLED AT now DUE TO TIME LIMIT ***\n")
    assert nudge(_state(3, JobState.RUNNING)) is True


def test_a_requeue_forgets_the_earlier_attempts_footer(tmp_path):
    task = _task(tmp_path, 4)
    clock = Clock()
    nudge = LogNudge([task], clock=clock)
    Path(task.log).write_text(ended_line(0, "now", 1) + "\n")
    nudge(_state(4, JobState.RUNNING))
    clock.now = 1.0
    assert nudge(_state(4, JobState.RUNNING)) is True
    assert nudge(_state(4, JobState.PENDING, restarts=1)) is False


def test_many_unfinished_tasks_look_only_at_running_ones(tmp_path):
    tasks = [_task(tmp_path, v) for v in range(1, 31)]
    nudge = LogNudge(tasks, clock=Clock(), all_files_up_to=10, footer_delay=0.0)
    Path(tasks[5].log).write_text(ended_line(0, "now", 1) + "\n")
    assert nudge({}) is False                     # 30 unfinished, none known running
    assert nudge(_state(6, JobState.RUNNING)) is True
