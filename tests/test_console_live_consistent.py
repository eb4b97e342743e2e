"""The Jobs screen's live view never contradicts itself or the CLIs: the log title says a task
ended as `logs -f` does, the usage heading counts what the counts line counts, and elapsed stops
at Slurm's last answer while Slurm does not answer."""
from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli, submit_real_array
from test_console_fixtures import rendered, slurm_like_record, table_column, wait_for

from backends.states import JobState, TaskState
from backends.watch.task_end import ended_text, row_end
from hyperion_console.app import make_app
from hyperion_console.messages import JobsUpdated

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


async def _jobs_on(app, pilot, record):
    """The Jobs screen showing `record` (opened as a user opens it: escape, then 2)."""
    await pilot.press("escape", "2")
    jobs = app.jobs_screen
    jobs.show_record(record)
    return jobs


def _row(task: int, state: JobState, exit_code: int | None = None, elapsed: float = 30.0) -> TaskState:
    return TaskState("4242", task, state, exit_code, None, elapsed, "node01")


def test_log_title_says_the_task_ended_as_logs_f_does_not_following(tmp_path: Path) -> None:
    """The pane went on titled `· following` after the task failed, while `hyperion-jobs logs -f`
    said `task 4242_1 ended FAILED (exit 3); stopped following`. Once the row shows the end, the
    title says it in the CLI's words; a line flushed late still shows."""
    record = slurm_like_record(tmp_path, 2)
    log_file = Path(record.tasks[0].log)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log_file.write_text("".join(f"step {i}\n" for i in range(1, 60)))
    failed = _row(1, JobState.FAILED, 3)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            jobs = await _jobs_on(app, pilot, record)
            pane = jobs.log_pane
            title = lambda: str(jobs.query_one("#log-title").content)   # noqa: E731
            jobs.post_message(JobsUpdated(record.path, (_row(1, JobState.RUNNING),), as_of=time.time()))
            await wait_for(pilot, lambda: pane.view.lines[-1:] == ["step 59"], 10)
            assert title().endswith("t.1.log · following"), title()
            jobs.post_message(JobsUpdated(record.path, (failed,), as_of=time.time()))
            await wait_for(pilot, lambda: "ended" in title(), 5)
            assert title().endswith("t.1.log · ended FAILED (exit 3)"), title()
            cli = ended_text("4242_1", row_end(failed))      # the CLI's line, the same words
            assert cli == "task 4242_1 ended FAILED (exit 3); stopped following"
            assert title().split(" · ", 1)[1] in cli
            assert rendered(jobs.query_one("#log-title"))[0].rstrip().endswith("· ended FAILED (exit 3)")
            with open(log_file, "a") as handle:               # a late flush after the end
                handle.write("Traceback: corrupt input\n")
            await wait_for(pilot, lambda: pane.view.lines[-1:] == ["Traceback: corrupt input"], 5)
            assert title().endswith(" · ended FAILED (exit 3)"), title()
            pane.view.focus()
            await pilot.press("home")                        # scrolled: End still brings the last line
            assert title().endswith(" · ended FAILED (exit 3) · scrolled (End: last line)"), title()
            await pilot.press("end")
            assert title().endswith(" · ended FAILED (exit 3)"), title()
            jobs.table.focus()
            await pilot.press("down")                          # task 2: still running, followed
            jobs.post_message(JobsUpdated(record.path, (_row(2, JobState.RUNNING),), as_of=time.time()))
            await wait_for(pilot, lambda: "t.2.log" in title(), 5)
            assert "ended" not in title(), title()

    asyncio.run(scenario())


def _counts_line(jobs) -> dict[str, int]:
    text = str(jobs.query_one("#jobs-summary").content)
    return {name: int(n) for name, n in re.findall(r"([A-Z_]+) (\d+)", text)}


def _heading_counts(jobs) -> dict[str, int]:
    heading = rendered(jobs.query_one("#usage-heading"))[0]
    return {what: int(n) for n, what in re.findall(r"(\d+) (ended|running|pending)", heading)}


def test_usage_heading_counts_what_the_counts_line_above_it_counts_at_every_update(tmp_path: Path) -> None:
    """The heading was worked out up to DERIVED_DELAY after a live update: a screenshot caught
    "4 running, 9 pending" under "RUNNING 6  PENDING 7". Read at once after each update, the two agree."""
    record = slurm_like_record(tmp_path, 12)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = await _jobs_on(app, pilot, record)
            now = time.time()
            jobs.post_message(JobsUpdated(record.path, tuple(_row(i, JobState.PENDING, elapsed=0.0)
                                                             for i in range(1, 13)), as_of=now))
            await pilot.pause()
            await pilot.press("u")
            await wait_for(pilot, lambda: "usage of" in rendered(jobs.query_one("#usage-heading"))[0], 10)
            assert _heading_counts(jobs) == {"ended": 0, "pending": 12}
            waves = [  # each a poll's answer, faster than DERIVED_DELAY
                [_row(i, JobState.RUNNING) for i in (1, 2, 3, 4)],
                [_row(i, JobState.RUNNING) for i in (5, 6)] + [_row(1, JobState.COMPLETED, 0)],
                [_row(i, JobState.FAILED, 1) for i in (2, 3)] + [_row(7, JobState.RUNNING)],
            ]
            for wave in waves:
                jobs.post_message(JobsUpdated(record.path, tuple(wave), as_of=time.time()))
                await pilot.pause()
                counts = _counts_line(jobs)
                ended = counts.get("COMPLETED", 0) + counts.get("FAILED", 0)
                assert _heading_counts(jobs) == {"ended": ended, **{name.lower(): counts[name] for name in
                                                 ("RUNNING", "PENDING") if counts.get(name)}}, (
                    rendered(jobs.query_one("#jobs-summary"))[0], rendered(jobs.query_one("#usage-heading"))[0])
            assert _heading_counts(jobs) == {"ended": 3, "running": 4, "pending": 5}

    asyncio.run(scenario())


def test_elapsed_stops_at_slurm_s_last_answer_while_slurm_does_not_answer(tmp_path: Path) -> None:
    """squeue failing, the status line said "states 5 s old" while the running task's elapsed
    ticked on as if fresh: it stops at the last answer (as `hyperion-jobs watch` shows it) and
    ticks again once Slurm answers."""
    record = slurm_like_record(tmp_path, 1)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = await _jobs_on(app, pilot, record)
            table, status = jobs.query_one("#tasks"), jobs.query_one("#poll-status")
            jobs.post_message(JobsUpdated(record.path, (_row(1, JobState.RUNNING, elapsed=30.0),),
                                          as_of=time.time() - 5))
            await pilot.pause()
            assert table_column(table, "elapsed")[0] in ("0:00:35", "0:00:36")
            problem = "controller (squeue) not answering for 12 s: slurm_load_jobs error: Unable to contact"
            jobs.post_message(JobsUpdated(record.path, (), error=problem, problem=problem))
            await pilot.pause()
            assert status.line().plain.startswith("⚠ states 5 s old, retrying"), status.line().plain
            assert table_column(table, "elapsed") == ["0:00:30"]       # as of that answer, 5 s ago
            await pilot.pause(1.3)
            assert table_column(table, "elapsed") == ["0:00:30"]
            assert status.line().plain.startswith("⚠ states 6 s old"), status.line().plain
            jobs.post_message(JobsUpdated(record.path, (_row(1, JobState.RUNNING, elapsed=37.0),),
                                          as_of=time.time()))
            await pilot.pause(1.3)
            assert table_column(table, "elapsed")[0] in ("0:00:38", "0:00:39")   # ticks again

    asyncio.run(scenario())


@pytest.mark.slurm
def test_a_real_failing_task_s_log_title_says_it_ended_as_logs_f_does(slurm_cluster, tmp_path: Path, cli_env) -> None:
    """A real array whose task 2 fails (exit 3) while its log is shown: the title said `· following`
    for ever; it says `· ended FAILED (exit 3)` once the table shows the end, the words
    `hyperion-jobs logs TASK -f` stops with."""
    script = ("import sys, time\nprint('working on', sys.argv[1], flush=True)\ntime.sleep(8)\n"
              "sys.exit(3 if sys.argv[1] == '2' else 0)\n")
    record = submit_real_array(tmp_path / "log" / "f.JOB.log", "JOB=1:2", sys.executable, "-c", script, "JOB")
    job = record.jobs[0].job_id

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 30)) as pilot:
            jobs = app.jobs_screen
            pane = jobs.log_pane
            title = lambda: str(jobs.query_one("#log-title").content)   # noqa: E731
            await pilot.press(":")
            await pilot.press("2", "enter")                          # go to value 2
            await wait_for(pilot, lambda: "f.2.log" in title(), 10)
            await wait_for(pilot, lambda: pane.view.lines[-1:] == ["working on 2"], 90)
            assert title().endswith("f.2.log · following"), title()
            await wait_for(pilot, lambda: "ended" in title(), 90)
            assert title().endswith("f.2.log · ended FAILED (exit 3)"), title()
            assert "following" not in title()

    try:
        asyncio.run(scenario())
        logs = run_cli("hyperion-jobs", "logs", f"{record.path}:2", "-f", env=cli_env, timeout=120)
        assert logs.returncode == 0, logs.stderr
        assert logs.stderr.rstrip().splitlines()[-1].endswith(" ended FAILED (exit 3); stopped following"), logs.stderr
    finally:
        subprocess.run(["scancel", job], check=False)
