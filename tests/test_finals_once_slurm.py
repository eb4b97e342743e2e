"""Each task's end is written into the ledger once, whoever else records it meanwhile.

The console's Retry (R) plans again from Slurm's answer of that moment
(`history_status`, which records the ends it learns) while the Jobs screen's
watch of the same record is still polling: the watch then recorded the same
ends again, so after a retried array every final line was in the ledger twice.
`hyperion-jobs retry` from the command line has no watch beside it: once.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from conftest import submit_real_array

from backends.records.attempts import ledger_path
from backends.records.history import load_history
from backends.watch.finals import FinalsRecorder
from backends.watch.rows import pending_tasks
from backends.watch.slurm.accounting import query, run_command
from backends.watch.targets import history_status
from backends.watch.wait import wait
from hyperion_console.watch import watch_slurm

pytestmark = pytest.mark.slurm


def final_lines(record_path: str) -> dict[tuple[int, int], int]:
    counts: dict[tuple[int, int], int] = {}
    for line in ledger_path(record_path).read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "final":
            key = (entry["attempt"], entry["value"])
            counts[key] = counts.get(key, 0) + 1
    return counts


def all_ended(job_id: str) -> bool:
    """The controller lists none of the job's tasks as pending or running any more."""
    out = subprocess.run(["squeue", "-j", job_id, "-h", "-r", "-t", "PD,R,CG,CF,S", "-o", "%i"],
                         capture_output=True, text=True)
    return out.returncode == 0 and not out.stdout.strip()


def test_an_end_recorded_by_a_retrys_look_while_the_console_watches_is_not_written_again(slurm_cluster, tmp_path):
    record = submit_real_array(tmp_path / "log" / "t.JOB.log", "JOB=1:3", sys.executable, "-c",
                               "import sys; sys.exit(3 if sys.argv[1] == '2' else 0)", "JOB", cwd=tmp_path)
    job_id = record.jobs[0].job_id
    history = load_history(str(record.path))        # the Jobs screen opens it while the tasks are queued
    retry_looked = threading.Event()

    def runner(argv):
        """Slurm's clients as the console runs them; the first sacct after the tasks ended is
        answered after the retry's own look (run_retry -> history_status) recorded the ends."""
        if argv[0] == "sacct" and not retry_looked.is_set() and all_ended(job_id):
            retry_looked.set()
            history_status(load_history(str(record.path)))
        return run_command(argv)

    stop = threading.Event()
    watch = threading.Thread(target=watch_slurm, args=(history, lambda seen: None, stop, runner), daemon=True)
    watch.start()
    watch.join(120)
    stop.set()
    assert not watch.is_alive()
    assert retry_looked.is_set()
    counts = final_lines(str(record.path))
    assert counts == {(1, 1): 1, (1, 2): 1, (1, 3): 1}, counts


def test_a_look_at_slurm_from_a_history_read_before_a_watch_recorded_the_ends_does_not_record_them_again(
        slurm_cluster, tmp_path):
    """The other order: the retry's history was read while the tasks ran, the watch (here
    hyperion-submit's wait) recorded their ends, then the retry's look at Slurm wrote them again."""
    record = submit_real_array(tmp_path / "log" / "o.JOB.log", "JOB=1:2", "true", cwd=tmp_path)
    read_while_running = load_history(str(record.path))
    assert wait(record).ok                                     # records both ends
    assert final_lines(str(record.path)) == {(1, 1): 1, (1, 2): 1}
    rows = history_status(read_while_running)                 # as run_retry asks, from the older reading
    assert [row.state.value for row in rows] == ["COMPLETED", "COMPLETED"]
    assert final_lines(str(record.path)) == {(1, 1): 1, (1, 2): 1}


def test_an_end_another_face_recorded_before_this_watch_saw_it_end_is_not_written_again(slurm_cluster, tmp_path):
    """A console and a `hyperion-jobs watch` of one array, nobody else: the console recorded value 2's end
    while the watch still saw it running; the watch, writing value 1's end, read that line, then forgot it,
    and wrote value 2's end again once its own poll saw it (two final lines of one task in a 200-task run)."""
    record = submit_real_array(tmp_path / "log" / "w.JOB.log", "JOB=1:2", "true", cwd=tmp_path)
    watched = load_history(str(record.path))                   # the watch opened it while the tasks were queued
    watch = FinalsRecorder(watched.record_path, list(pending_tasks(watched)), since=watched.ledger.size)
    assert wait(record).ok                                     # the console recorded both ends
    assert final_lines(str(record.path)) == {(1, 1): 1, (1, 2): 1}
    ended = query([record.jobs[0].job_id]).states             # Slurm's own answer: both ended
    first, second = (ended[(task.job_id, task.array_task_id)] for task in record.tasks)
    assert first.state.is_terminal and second.state.is_terminal
    assert watch.observe([first]) == []                        # its poll: value 1 ended, value 2 still running
    assert watch.observe([second]) == []                       # its next poll: value 2 ended too
    assert final_lines(str(record.path)) == {(1, 1): 1, (1, 2): 1}
