"""Ended tasks Slurm runs again (``scontrol requeue`` after the ledger recorded their end), without Slurm:
what status and a watch show, what they write, and what they ask (the real cluster: test_wait_slurm.py)."""
from __future__ import annotations

from pathlib import Path

from test_console_fixtures import FIXED_ISO, build_history

from backends.logheader import iso_now
from backends.records.attempts import ledger_path, read_ledger
from backends.records.history import load_history
from backends.states import JobState
from backends.watch.poller import Poller
from backends.watch.requeued import settled, watched_tasks
from backends.watch.rows import history_rows
from backends.watch.slurm.accounting import CommandResult
from backends.watch.targets import history_status

CONF = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"


def controller(rows: list[str], asked: list[str]):
    """A runner whose squeue prints `rows` (squeue_argv's fields) and whose sacct knows nothing."""
    def run(argv):
        asked.append(argv[0])
        return CommandResult(0, "".join(f"{row}\n" for row in rows) if argv[0] == "squeue" else "", "")
    return run


def ended_rows(restart: int = 0) -> list[str]:
    return [f"4242_{task}|COMPLETED|0|0:31|node01|None|{restart}|" for task in range(1, 9)]


def ended_a_moment_ago(record: Path) -> Path:
    """The ledger's ends (written at a fixed time in the past) as if written now: Slurm may requeue them."""
    ledger = ledger_path(record)
    ledger.write_text(ledger.read_text().replace(FIXED_ISO, iso_now()))
    return record


def test_status_shows_an_ended_task_slurm_runs_again_and_then_its_new_end(tmp_path) -> None:
    record = ended_a_moment_ago(build_history(tmp_path, CONF, failures={2: ("FAILED", 1, "RuntimeError: boom")}))
    asked: list[str] = []
    pending = ended_rows()
    pending[1] = "4242_2|PENDING|0|0:00|(null)|BeginTime|1|"
    rows = history_status(load_history(record), controller(pending, asked))
    assert (rows[1].state_text, rows[1].exit_code) == ("PENDING (BeginTime; restart 1)", None)
    assert read_ledger(record).finals[(1, 2)].state == "FAILED"       # nothing ended yet: nothing written
    lines = ledger_path(record).read_text().count("\n")

    again = ended_rows()
    again[1] = "4242_2|COMPLETED|0|0:05|node01|None|1|"
    rows = history_status(load_history(record), controller(again, asked))
    assert (rows[1].state_text, rows[1].exit_code) == ("COMPLETED (restart 1)", 0)
    text = ledger_path(record).read_text()
    assert text.count("\n") == lines + 1                               # the new end, after the first
    assert text.index('"state":"FAILED"') < text.rindex('"state":"COMPLETED","task_id":2')
    assert read_ledger(record).finals[(1, 2)].restart_count == 1
    assert [r.state_text for r in history_status(load_history(record), controller(again, asked))][1] \
        == "COMPLETED (restart 1)"


def test_status_asks_the_controller_about_ended_tasks_only_while_it_may_requeue_them(tmp_path) -> None:
    record = build_history(tmp_path, CONF)
    asked: list[str] = []
    history_status(load_history(record), controller(ended_rows(), asked))
    assert "squeue" not in asked           # ended long ago: the controller forgot the job, nothing to ask
    ended_a_moment_ago(record)
    asked.clear()
    rows = history_status(load_history(record), controller(ended_rows(), asked))
    assert asked.count("squeue") == 1                  # one, for all the ended tasks of the job
    assert rows == history_rows(load_history(record), {})   # none ran again: the ledger's ends stand


def test_a_watch_of_ended_tasks_asks_one_squeue_and_follows_only_those_slurm_runs_again(tmp_path) -> None:
    history = load_history(ended_a_moment_ago(build_history(tmp_path, CONF)))
    tasks = watched_tasks(history)
    assert len(tasks) == 8
    asked: list[str] = []
    poller = Poller({"4242": tuple(range(1, 9))}, runner=controller(ended_rows(), asked),
                    settled=settled(history, tasks))
    update = poller.poll_once()
    assert update.all_terminal and update.changed == () and asked == ["squeue"]   # no final sacct

    asked.clear()
    rows = ended_rows()
    rows[2] = "4242_3|RUNNING|0|0:02|node01|None|1|"
    poller = Poller({"4242": tuple(range(1, 9))}, runner=controller(rows, asked), settled=settled(history, tasks))
    update = poller.poll_once()
    assert not update.all_terminal and asked == ["squeue"]
    assert [(s.task_id, s.state, s.restart_count) for s in update.changed] == [(3, JobState.RUNNING, 1)]


def test_a_controller_not_answering_the_look_for_a_requeue_is_no_outage_to_report(tmp_path) -> None:
    """A record that ended lately, opened while squeue fails: `watch` printed 'controller (squeue)
    not answering' and the console a poll error no poll retried, with a sacct standing in for it.
    The recorded ends stand, as in `status`, and nothing more is asked."""
    history = load_history(ended_a_moment_ago(build_history(tmp_path, CONF)))
    tasks = watched_tasks(history)
    asked: list[str] = []

    def down(argv):
        asked.append(argv[0])
        return CommandResult(1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)")

    update = Poller({"4242": tuple(range(1, 9))}, runner=down, settled=settled(history, tasks)).poll_once()
    assert update.all_terminal and update.changed == () and asked == ["squeue"]
    assert update.error is None and update.problem is None


def test_an_end_recorded_in_the_future_does_not_keep_its_job_asked_about(tmp_path) -> None:
    """A wrong clock or a forged ledger line dated next year kept the job 'lately ended' for ever:
    one squeue at every status and every opening in the console."""
    record = build_history(tmp_path, CONF)
    ledger = ledger_path(record)
    ledger.write_text(ledger.read_text().replace(FIXED_ISO, "2999-01-01T00:00:00+00:00"))
    assert watched_tasks(load_history(record)) == []
    asked: list[str] = []
    history_status(load_history(record), controller(ended_rows(), asked))
    assert "squeue" not in asked         # (a sacct for the usage the ledger lacks, as before)
