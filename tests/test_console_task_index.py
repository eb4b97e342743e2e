"""The Jobs screen's TaskIndex: counts, filters and elapsed kept per changed task."""
from __future__ import annotations

from pathlib import Path

import pytest
from test_console_fixtures import slurm_like_record

from backends.states import JobState, TaskState
from hyperion_console.task_index import TaskIndex
from hyperion_console.widgets.log_view import MAX_LINE, clean


def loaded(tmp_path: Path, n: int) -> TaskIndex:
    index = TaskIndex()
    index.load(slurm_like_record(tmp_path, n).tasks)
    return index


def test_counts_follow_every_change_and_unknown_tasks_are_counted(tmp_path: Path) -> None:
    index = loaded(tmp_path, 5)
    assert dict(index.counts) == {"UNKNOWN": 5}
    index.apply([TaskState("4242", 1, JobState.RUNNING), TaskState("4242", 2, JobState.FAILED, 1)])
    index.apply([TaskState("4242", 1, JobState.COMPLETED, 0), TaskState("999", 1, JobState.FAILED)])
    assert dict(index.counts) == {"UNKNOWN": 3, "FAILED": 1, "COMPLETED": 1}   # job 999 is not ours
    assert index.done() == 2 and not index.all_final()


def test_the_filtered_view_changes_only_when_a_task_enters_or_leaves_it(tmp_path: Path) -> None:
    index = loaded(tmp_path, 6)
    index.apply([TaskState("4242", i, JobState.PENDING) for i in range(1, 7)])
    index.set_filter("not completed")
    view = index.shown
    assert not index.apply([TaskState("4242", 2, JobState.RUNNING)])      # still "not completed"
    assert index.shown is view
    assert index.apply([TaskState("4242", 2, JobState.COMPLETED, 0)])
    assert [task for _, task in index.shown] == [1, 3, 4, 5, 6]
    assert index.position(("4242", 2)) is None and index.position(("4242", 4)) == 2
    with pytest.raises(ValueError, match="unknown filter"):
        index.set_filter("DONE")


def test_elapsed_ticks_only_for_running_tasks(tmp_path: Path) -> None:
    index = loaded(tmp_path, 2)
    index.apply([TaskState("4242", 1, JobState.RUNNING, elapsed=30.0),
                 TaskState("4242", 2, JobState.COMPLETED, 0, elapsed=30.0)], as_of=1000.0)
    assert index.elapsed(("4242", 1), now=1012.5) == 42.5
    assert index.elapsed(("4242", 2), now=1012.5) == 30.0


def test_a_log_line_is_printable_and_bounded() -> None:
    assert clean("a\tb \x1b]52;c;eA==\x07 [/]") == "a       b \\x1b]52;c;eA==\\x07 [/]"
    long = clean("x" * (MAX_LINE + 10))
    assert long.endswith(" … (10 more characters)") and len(long) < MAX_LINE + 40
