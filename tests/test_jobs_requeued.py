"""Ended tasks Slurm runs again (``scontrol requeue`` after the ledger recorded their end), without Slurm:
what status, list and a watch show, what they write, and what they ask (the real cluster: test_wait_slurm.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_cli
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


def fake_slurm(tmp_path: Path, rows: list[str], cli_env: dict[str, str]) -> tuple[dict[str, str], Path]:
    """sacct and squeue on PATH that write down how they were called; squeue -j prints those of `rows`
    of the jobs it is asked about, squeue -u (the user's live jobs) and sacct print nothing."""
    bin_dir, asked = tmp_path / "bin", tmp_path / "asked"
    bin_dir.mkdir()
    (bin_dir / "sacct").write_text(f'#!/bin/sh\necho "sacct $2" >> {asked}\n')
    quoted = " ".join(f"'{row}'" for row in rows)
    (bin_dir / "squeue").write_text(f'#!/bin/sh\necho "squeue $1 $2" >> {asked}\n[ "$1" = -j ] || exit 0\n'
                                    f'for row in {quoted}; do\n'
                                    f'  case ",$2," in *",${{row%%_*}},"*) printf \'%s\\n\' "$row";; esac\n'
                                    'done\n')
    for tool in ("sacct", "squeue"):
        (bin_dir / tool).chmod(0o755)
    return {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}, asked


def about_jobs(asked: Path) -> list[str]:
    """The queries about records' jobs (not list's `squeue -u` for the user's live jobs), sorted."""
    return sorted(line for line in asked.read_text().splitlines() if not line.startswith("squeue -u"))


def listed_states(root: Path, env: dict[str, str]) -> dict[str, str]:
    result = run_cli("hyperion-jobs", "list", str(root), "--json", env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    return {Path(r["record"]).parts[-5]: r["states"] for r in json.loads(result.stdout)["records"]}


def test_list_shows_an_ended_task_slurm_runs_again_as_status_does(tmp_path, cli_env) -> None:
    """Value 2 failed, its end was recorded, then `scontrol requeue 4242_2`: status said PENDING (restart 1),
    list went on counting it FAILED (it asked Slurm only about tasks without a recorded end)."""
    record = ended_a_moment_ago(build_history(tmp_path / "new", CONF, failures={2: ("FAILED", 1, "boom")}))
    rows = ended_rows()
    rows[1] = "4242_2|PENDING|0|0:00|(null)|BeginTime|1|"
    env, asked = fake_slurm(tmp_path, rows, cli_env)
    assert listed_states(tmp_path, env) == {"new": "COMPLETED 7, PENDING 1"}
    assert about_jobs(asked) == ["squeue -j 4242"]                  # one squeue, no sacct
    status = run_cli("hyperion-jobs", "status", str(record), "--json", env=env, timeout=60)
    assert json.loads(status.stdout)["counts"] == {"COMPLETED": 7, "PENDING": 1}


def test_list_adds_lately_ended_jobs_to_the_squeue_it_asks_anyway_and_asks_nothing_of_older_ones(
        tmp_path, cli_env) -> None:
    """Three records: one ended long ago (the controller forgot its job), one ended a moment ago whose
    value 2 Slurm runs again, one still running. One sacct and one squeue, as before; the squeue names
    the lately ended job too."""
    build_history(tmp_path / "old", CONF, job="4000")                          # ended long ago
    ended_a_moment_ago(build_history(tmp_path / "new", CONF, job="4242", failures={2: ("FAILED", 1, "boom")}))
    build_history(tmp_path / "live", CONF, job="4300", unfinished=(7, 8))
    rows = ended_rows(restart=0)
    rows[1] = "4242_2|RUNNING|0|0:02|node01|None|1|"
    env, asked = fake_slurm(tmp_path, rows, cli_env)
    states = listed_states(tmp_path, env)
    assert states["new"] == "COMPLETED 7, RUNNING 1" and "FAILED" in states["old"]
    assert about_jobs(asked) == ["sacct 4300", "squeue -j 4300,4242"]


def test_after_a_cancel_the_recorded_end_replaces_a_running_row_of_unknown_restarts_and_a_rerun_comes_back(
        tmp_path) -> None:
    """The console watched task 3 RUNNING from sacct alone (squeue failed: accounting has no restart
    count, so the row's is unknown); its end reached the ledger (the stopped watch's last answer, or
    another terminal), then a cancel restarted the watch. Whether Slurm ran it again after that end,
    the row cannot tell: keeping RUNNING when it did not left the table RUNNING for ever (the new
    watch never tells an end the ledger holds), so the end is shown, and the new watch's first
    squeue, whose restart count is the controller's, brings back a run Slurm started again. A row
    whose restart count is known and above the end's keeps its run."""
    import threading

    from backends.records.attempts import FinalState, append_entries
    from backends.states import TaskState
    from backends.watch.rows import task_row
    from hyperion_console.watch import Shown, ledger_rows, watch_slurm

    record = build_history(tmp_path, CONF, failures={}, unfinished=(3,))
    history = load_history(record)
    task = history.current.tasks[2]
    key = (task.job_id, task.array_task_id)
    running = task_row(history, task, {key: TaskState("4242", 3, JobState.RUNNING, elapsed=20.0, node="node01")})
    assert running.state is JobState.RUNNING and running.restart_count is None
    append_entries(str(record), [FinalState(1, 3, "4242", 3, "COMPLETED", 0, None, 33.0, "node01", 0,
                                            time=iso_now())])
    history = load_history(record)

    told = ledger_rows(history, {key: task}, Shown({key: running}), watching=False)
    assert [(row.state, row.exit_code) for row in told] == [(JobState.COMPLETED, 0)]
    rerun = task_row(history, task, {key: TaskState("4242", 3, JobState.RUNNING, elapsed=2.0, node="node01",
                                                    source="squeue", restart_count=1)})
    assert ledger_rows(history, {key: task}, Shown({key: rerun}), watching=False) == ()

    # the new watch never tells an end the ledger holds: without ledger_rows, RUNNING stayed
    ended: list = []
    watch_slurm(history, lambda seen: ended.append(seen), threading.Event(), runner=controller(ended_rows(), []))
    assert any(seen.all_terminal for seen in ended) and key not in [(r.job_id, r.task_id) for seen in ended for r in seen.rows]

    rows = ended_rows()
    rows[2] = "4242_3|RUNNING|0|0:02|node01|None|1|"
    stop, shown = threading.Event(), {}

    def deliver(seen) -> None:
        shown.update(((row.job_id, row.task_id), row) for row in seen.rows)
        if key in shown:
            stop.set()

    watching = threading.Thread(target=watch_slurm, args=(history, deliver, stop),
                                kwargs={"runner": controller(rows, [])}, daemon=True)
    watching.start()
    watching.join(30)
    stop.set()
    assert (shown[key].state, shown[key].restart_count) == (JobState.RUNNING, 1), shown
