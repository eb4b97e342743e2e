"""Jobs screen Retry: the preview (values, windows, overrides, command, owner warning), refusals as one
line, and a confirmed retry that runs as the next attempt and lands on it."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import Input
from conftest import submit_real_array
from test_console_fixtures import (build_history, confirmation, console_on, ended_just_now, notifications, posted,
                                   rendered, screen_lines, table_column, wait_for)

from backends.launch import run_local_plan, working_dir
from backends.records.history import load_history
from backends.states import JobState, TaskState
from backends.submit.commandline import parse_submit_argv
from backends.submit.plan import build_plan
from backends.watch.targets import history_status
from backends.watch.wait import wait
from hyperion_console.app import make_app
from hyperion_console.messages import RecordOpened, RetryPreviewed, RetryRefused, RetryRequested
from hyperion_console.screens.confirm import ConfirmScreen
from hyperion_console.screens.retry import RetryScreen

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
SITE = CONF / "submit_test_cluster.yaml"
PY = sys.executable
# Fails (exit 3, "ValueError: bad input V") for the values listed in fail.txt in the working directory.
FLAKY = ("import pathlib, sys; v = sys.argv[1]; print('working on', v); "
         "bad = pathlib.Path('fail.txt').read_text().split() if pathlib.Path('fail.txt').exists() else []; "
         "print('ValueError: bad input', v) if v in bad else None; sys.exit(3 if v in bad else 0)")


def local_run_with_a_failure(root: Path) -> Path:
    """JOB=1..5 on the local backend, value 3 failing: 1-2 COMPLETED, 3 FAILED, 4-5 NOT_RUN."""
    (root / "fail.txt").write_text("3\n")
    site, options = parse_submit_argv(["local", "--cfg", str(SITE), "--array", "JOB=1:5",
                                       "--output-file", str(root / "log" / "t.JOB.log"),
                                       "--", PY, "-c", FLAKY, "JOB"])
    plan = build_plan(site, options)
    with working_dir(str(root)):
        assert run_local_plan(plan) == 1
    return Path(plan.record_path)


@pytest.fixture
def held_preview(monkeypatch) -> threading.Event:
    """The Retry dialog's plan (made in a thread) is made only once the event returned is set (or after
    10 s); clear it to hold the next one."""
    import hyperion_console.screens.retry as retry_screen
    planned, gate = retry_screen.preview, threading.Event()
    monkeypatch.setattr(retry_screen, "preview", lambda *args: (gate.wait(10), planned(*args))[1])
    return gate


async def open_preview(pilot, seen: list) -> RetryScreen:
    await pilot.press("R")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, RetryScreen), 10)
    await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
    return pilot.app.screen


def preview_text(screen: RetryScreen) -> str:
    return str(screen.query_one("#retry-text").content)


def test_retry_of_a_local_record_runs_the_failed_values_as_attempt_2_and_lands_on_it(tmp_path: Path) -> None:
    record = local_run_with_a_failure(tmp_path)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state")
                           == ["COMPLETED", "COMPLETED", "FAILED", "NOT_RUN", "NOT_RUN"], 10)
            assert "attempt" not in [c.key for c in table.columns]     # one attempt: no column
            (tmp_path / "fail.txt").write_text("")                     # the cause is fixed
            jobs = app.jobs_screen
            jobs.show_task(jobs.table.index.keys_of_values([3])[0])       # reading the failed task's log
            screen = await open_preview(pilot, seen)
            first = posted(seen, RetryPreviewed)[-1]
            assert (first.attempt, first.values, first.error) == (2, "3-5", None)
            text = preview_text(screen)
            assert f"retry of {record} as attempt 2: 3 task(s) (FAILED 1, NOT_RUN 2)" in text
            assert "values: 3-5" in text and f"runs in: {tmp_path}" in text
            assert first.command.startswith("hyperion-submit local --cfg ") and "--array JOB=3:5" in first.command
            assert "WARNING" not in text
            await pilot.press("ctrl+r")
            assert isinstance(app.screen, ConfirmScreen)
            await confirmation(pilot, "#confirm-title")
            assert "Retry 3 task(s) as attempt 2?" in str(app.screen.query_one("#confirm-title").content)
            await pilot.press("y")
            await wait_for(pilot, lambda: table_column(table, "attempt") == ["1", "1", "2", "2", "2"]
                           and table_column(table, "state") == ["COMPLETED"] * 5, 30)
            assert rendered(table)[0].startswith("value att job")
            # the cursor stayed on value 3, now attempt 2's (it went to value 1), and so did the log pane
            assert (table.selected_task().value, table.selected_task().job_id) == (3, "local")
            await wait_for(pilot, lambda: jobs.log_pane.path == str(tmp_path / "log" / "t.3.log"), 10)
            await wait_for(pilot, lambda: "local retry finished: exit status 0" in notifications(app), 10)
            assert "retrying values 3-5 as attempt 2" in notifications(app)
        requested = posted(seen, RetryRequested)
        assert [(m.attempt, m.values) for m in requested] == [(2, "3-5")]
        assert posted(seen, RecordOpened)[-1].attempts == 2
        assert not posted(seen, RetryRefused)
        history = load_history(record)
        assert history.numbers == (1, 2) and history.entry(2).kind == "retry"
        assert "bad input 3" in Path(history.log_of(history.tasks_of(1)[2])).read_text()   # attempt 1 kept

    asyncio.run(scenario())


def test_a_retry_run_elsewhere_while_the_dialog_was_open_is_refused_without_saying_it_retries(
        tmp_path: Path, cli_env) -> None:
    """The confirmation was planned when R was pressed; a retry from a shell meanwhile made it stale.
    'y' said "retrying values 3-5 as attempt 2" and then the refusal: only the refusal is true."""
    from conftest import run_cli

    record = local_run_with_a_failure(tmp_path)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: "FAILED" in table_column(table, "state"), 10)
            (tmp_path / "fail.txt").write_text("")
            await open_preview(pilot, seen)
            await pilot.press("ctrl+r")
            assert isinstance(app.screen, ConfirmScreen)
            elsewhere = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
            assert elsewhere.returncode == 0, elsewhere.stderr
            await pilot.press("y")
            await wait_for(pilot, lambda: posted(seen, RetryRefused), 10)
            await pilot.pause(0.5)
            assert not any(m.startswith("retrying values") for m in notifications(app)), notifications(app)
        assert load_history(record).numbers == (1, 2)          # the shell's retry, and nothing more

    asyncio.run(scenario())


def test_overrides_are_checked_by_the_core_and_a_bad_one_is_one_line(tmp_path: Path, held_preview) -> None:
    record, gate = build_history(tmp_path, SITE), held_preview

    async def scenario() -> None:
        async with console_on(record, [tmp_path]) as (app, pilot, seen):
            await pilot.pause(0.5)
            gate.set()
            screen = await open_preview(pilot, seen)
            assert posted(seen, RetryPreviewed)[-1].values == "3,5-6"
            gate.clear()                  # the next plan takes its time
            screen.set_field("mem", "lots")
            await pilot.press("ctrl+r")   # before the preview caught up: not a confirmation of the plan shown
            assert isinstance(app.screen, RetryScreen)
            gate.set()
            await wait_for(pilot, lambda: (posted(seen, RetryPreviewed)[-1].error or "").startswith("--mem:"), 10)
            error = posted(seen, RetryPreviewed)[-1].error
            assert "\n" not in error and screen.query_one("#retry-run").disabled
            assert rendered(screen.query_one("#retry-error"))[0].startswith("--mem: 'lots' is not a memory size")
            # not "nothing would run", which read as if no task were left to retry
            assert [line.rstrip() for line in rendered(screen.query_one("#retry-text"))] == [
                "nothing runs until the field in red is mended"]
            await pilot.press("ctrl+r")                         # refused: nothing asked, nothing ran
            assert isinstance(app.screen, RetryScreen)
            screen.set_field("mem", "300M")
            screen.set_field("mem_per_cpu", "1G")
            await wait_for(pilot, lambda: (posted(seen, RetryPreviewed)[-1].error or "").startswith(
                "--mem-per-cpu: not allowed with --mem"), 10)
            screen.set_field("mem_per_cpu", "")
            screen.set_field("time", "00:20:00")
            screen.set_field("num_threads", "2")
            screen.set_field("values", "6")
            await wait_for(pilot, lambda: posted(seen, RetryPreviewed)[-1].values == "6", 10)
            command = posted(seen, RetryPreviewed)[-1].command
            assert "--mem 300M" in command and "--time 00:20:00" in command and "--num-threads 2" in command
            assert "--array JOB=6" in command
            assert "proposed sizes" in preview_text(screen)
            assert isinstance(app.screen.focused, Input)         # typing in a field...
            await pilot.press("escape")                          # ...one escape closes: nothing ran
            assert not isinstance(app.screen, RetryScreen)
        assert not posted(seen, RetryRequested)
        assert load_history(record).numbers == (1,)

    asyncio.run(scenario())


def test_a_record_others_may_write_is_named_with_a_warning_before_it_runs(tmp_path: Path) -> None:
    record = build_history(tmp_path, SITE)
    os.chmod(record, 0o666)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await pilot.pause(0.5)
            screen = await open_preview(pilot, seen)
            warning = (f"WARNING: the record {record} may be changed by its group and other users "
                       "(mode 0666).")
            assert preview_text(screen).startswith(warning + "\nIts command runs as you.")
            await pilot.press("ctrl+r")
            assert isinstance(app.screen, ConfirmScreen)
            await confirmation(pilot, "#confirm-detail Static")
            detail = str(app.screen.query_one("#confirm-detail Static").content)
            assert detail.startswith(warning)
            await pilot.press("n")
            assert isinstance(app.screen, RetryScreen)

    asyncio.run(scenario())


def test_retry_is_refused_in_one_line_while_tasks_live_or_when_nothing_failed(tmp_path: Path) -> None:
    live = build_history(tmp_path / "live", SITE, unfinished=(8,))
    done = build_history(tmp_path / "done", SITE, failures={})

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(load_history(live))                # shown, not polled: states from here
            jobs.post_message(jobs_updated(live, TaskState("4242", 8, JobState.RUNNING, node="node01")))
            await pilot.pause()
            await pilot.press("R")
            await wait_for(pilot, lambda: posted(seen, RetryRefused), 10)
            reason = posted(seen, RetryRefused)[-1].reason
            assert reason == (f"{live} still has 1 live task(s) (RUNNING 1) of job(s) 4242; wait for them "
                              f"to end (hyperion-jobs watch {live}) or cancel them (hyperion-jobs cancel 4242) first")
            assert not isinstance(app.screen, RetryScreen) and reason in notifications(app)
            jobs.show_record(load_history(done))
            await pilot.press("R")
            await wait_for(pilot, lambda: len(posted(seen, RetryRefused)) == 2, 10)
            assert posted(seen, RetryRefused)[-1].reason == (
                f"nothing to retry: no task of {done} that did not complete (8 task(s))")
            assert not isinstance(app.screen, RetryScreen)
        assert not posted(seen, RetryRequested)

    asyncio.run(scenario())


def test_a_refused_retry_says_the_problem_not_the_clis_target_argument(tmp_path: Path) -> None:
    """R while a task still ran showed the toast `TARGET: RECORD still has 1 live task(s) ...`: TARGET
    is hyperion-jobs retry's positional argument, which a console user never typed. The toast now says
    the problem alone (it names the record); the CLI's line, from the same core error, keeps TARGET."""
    from backends.errors import InputError
    from backends.retry import RetryRequest, plan_retry
    from backends.watch.rows import history_rows

    live = build_history(tmp_path, SITE, unfinished=(8,))
    running = TaskState("4242", 8, JobState.RUNNING, node="node01")
    problem = (f"{live} still has 1 live task(s) (RUNNING 1) of job(s) 4242; wait for them to end "
               f"(hyperion-jobs watch {live}) or cancel them (hyperion-jobs cancel 4242) first")

    def toast_said(app) -> str:
        """The toasts' lines on screen (right of the toast's `▌` edge), read together."""
        return " ".join(line.split("▌ ", 1)[1].strip() for line in screen_lines(app) if "▌ " in line)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[])
        async with app.run_test(size=(120, 40), notifications=True, message_hook=seen.append) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(load_history(live))
            jobs.post_message(jobs_updated(live, running))
            await pilot.pause()
            await pilot.press("R")
            await wait_for(pilot, lambda: "live task(s)" in toast_said(app), 10)
            assert notifications(app) == [problem]
            assert posted(seen, RetryRefused)[-1].reason == problem
            said = toast_said(app)
            title, first = said.split()[:2]
            assert title == "retry" and first.startswith("/tmp/"), said    # then the record's path
            assert "TARGET" not in said, said
            assert "still has 1 live task(s) (RUNNING 1) of job(s) 4242" in said, said
            assert not isinstance(app.screen, RetryScreen)

    asyncio.run(scenario())
    history = load_history(live)       # the CLI's wording is the core's, unchanged
    with pytest.raises(InputError) as refused:
        plan_retry(history, history_rows(history, {running.key: running}), RetryRequest())
    assert str(refused.value) == f"TARGET: {problem}"


def test_a_retry_refused_as_it_launches_says_the_problem_not_the_cores_record_field(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """A task that went live (or a shell's retry) between the preview and Retry is refused by the
    launch, which names its field `record`: the toast read `record: RECORD still has 1 live task(s)`."""
    import hyperion_console.retrying as retrying
    from backends.errors import InputError

    record = local_run_with_a_failure(tmp_path)
    problem = f"{record} still has 1 live task(s) (RUNNING 1) of job(s) local; wait for them to end"

    def went_live(*args, **kwargs):
        raise InputError("record", problem)

    monkeypatch.setattr(retrying, "launch", went_live)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40), notifications=True, message_hook=seen.append) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: "FAILED" in table_column(table, "state"), 10)
            (tmp_path / "fail.txt").write_text("")
            await open_preview(pilot, seen)
            await pilot.press("ctrl+r")
            await confirmation(pilot, "#confirm-title")
            await pilot.press("y")
            await wait_for(pilot, lambda: posted(seen, RetryRefused), 10)
            assert posted(seen, RetryRefused)[-1].reason == problem
            assert notifications(app)[-1] == problem

    asyncio.run(scenario())


def jobs_updated(record: Path, *states):
    from hyperion_console.messages import JobsUpdated

    return JobsUpdated(str(record), states, as_of=time.time())


@pytest.mark.slurm
def test_retry_from_the_console_reruns_exactly_the_failed_values_on_slurm(slurm_cluster, tmp_path: Path) -> None:
    (tmp_path / "fail.txt").write_text("2\n")
    first = submit_real_array(tmp_path / "log" / "r.JOB.log", "JOB=1:3", PY, "-c", FLAKY, "JOB", cwd=tmp_path)
    assert not wait(first).ok                                    # value 2 failed; its final is in the ledger

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=first.path, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED", "FAILED", "COMPLETED"], 60)
            (tmp_path / "fail.txt").write_text("")
            screen = await open_preview(pilot, seen)
            assert posted(seen, RetryPreviewed)[-1].values == "2"
            assert "windows: --array=2 offset 0" in preview_text(screen)
            await pilot.press("ctrl+r", "y")
            await wait_for(pilot, lambda: table_column(table, "attempt") == ["1", "2", "1"], 60)
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED"] * 3, 120)
            assert table_column(table, "job")[1].endswith("_2")
        history = load_history(first.path)
        retry_job = history.records[2].jobs[0].job_id
        assert retry_job != first.jobs[0].job_id
        deadline = time.monotonic() + 60             # accounting names the task a moment after it ends
        while True:
            accounting = subprocess.run(["sacct", "-j", retry_job, "-X", "-n", "-P", "-o", "JobID"],
                                        capture_output=True, text=True).stdout.split()
            if accounting == [f"{retry_job}_2"] or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert accounting == [f"{retry_job}_2"]                   # exactly the failed value
        assert [m.values for m in posted(seen, RetryRequested)] == ["2"]

    asyncio.run(scenario())


@pytest.mark.slurm
def test_what_sbatch_warns_while_queuing_a_retry_is_notified_escaped(slurm_cluster, tmp_path: Path, cli_env) -> None:
    """The Jobs screen's Retry queued through an sbatch that warned on stderr (an option ignored, a
    limit lowered): the console said nothing of it, while its Submit and `hyperion-jobs retry` did."""
    wrapper = tmp_path / "warning-sbatch"
    wrapper.write_text("#!/bin/bash\nprintf 'sbatch: warning: \\033[31mtime limit lowered\\n' >&2\n"
                       'exec sbatch "$@"\n')
    wrapper.chmod(0o755)
    site = tmp_path / "site.yaml"
    site.write_text(SITE.read_text().replace("sbatch_command: sbatch", f"sbatch_command: {wrapper}"))
    (tmp_path / "fail.txt").write_text("2\n")
    first = subprocess.run(["hyperion-submit", "slurm", "--cfg", str(site), "--array", "JOB=1:2", "--time", "00:02:00",
                            "--output-file", "log/w.JOB.log", "--", PY, "-c", FLAKY, "JOB"],
                           cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 1 and "sbatch: warning:" in first.stderr, first.stderr
    record = tmp_path / "log" / "q" / "w.JOB.submit.json"
    (tmp_path / "fail.txt").write_text("")

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED", "FAILED"], 60)
            await open_preview(pilot, seen)
            await pilot.press("ctrl+r", "y")
            await wait_for(pilot, lambda: any(n.title == "sbatch" for n in app._notifications), 60)
            job = load_history(record).records[2].jobs[0].job_id
            told = [(n.severity, n.message) for n in app._notifications if n.title == "sbatch"]
            assert told == [("warning", f"sbatch said of job {job}: sbatch: warning: \\x1b[31mtime limit lowered")]
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED"] * 2, 120)

    asyncio.run(scenario())


@pytest.mark.slurm
def test_a_retry_while_the_watch_awaits_a_slow_sacct_writes_each_end_once(slurm_cluster, tmp_path: Path,
                                                                           monkeypatch) -> None:
    """A busy slurmdbd (sacct answering in 6 s): the table showed the controller's ends while the watch's
    sacct was awaited, R planned from its own look at Slurm, which recorded the ends, and the watch then
    recorded them again: every final line of the ledger twice (`hyperion-jobs retry` has no watch beside
    it: once)."""
    import json
    import shutil
    from collections import Counter

    from backends.records.attempts import ledger_path

    (tmp_path / "fail.txt").write_text("2\n")
    first = submit_real_array(tmp_path / "log" / "s.JOB.log", "JOB=1:3", PY, "-c", FLAKY, "JOB", cwd=tmp_path)
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "sacct").write_text(f"#!/bin/sh\nsleep 6\nexec {shutil.which('sacct')} \"$@\"\n")
    (slow / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}:{os.environ['PATH']}")

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=first.path, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED", "FAILED", "COMPLETED"], 60,
                           0.05)
            (tmp_path / "fail.txt").write_text("")
            await open_preview(pilot, seen)
            await pilot.press("ctrl+r", "y")
            await wait_for(pilot, lambda: table_column(table, "attempt") == ["1", "2", "1"], 60)
            await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED"] * 3, 120)
            await pilot.pause(8)           # the watch of attempt 1, stopped, answered by its sacct

    asyncio.run(scenario())
    lines = [json.loads(line) for line in ledger_path(first.path).read_text().splitlines()]
    ends = Counter((line["attempt"], line["value"]) for line in lines if line.get("type") == "final")
    assert ends == {(1, 1): 1, (1, 2): 1, (1, 3): 1, (2, 2): 1}, ends


def test_retry_is_in_the_footer_and_the_palette(tmp_path: Path) -> None:
    record = build_history(tmp_path, SITE)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await pilot.pause(0.5)
            keys = [(key.key_display, key.description) for key in app.screen.query("FooterKey")]
            assert ("R", "Retry") in keys and ("o", "Records") in keys
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"retry failed")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 10)
            await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
            assert posted(seen, RetryPreviewed)[-1].values == "3,5-6"

    asyncio.run(scenario())


def test_retry_preview_says_which_sbatch_variables_of_the_environment_are_not_passed(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """The retry's sbatch drops SBATCH_GRES as a submission's does (one sbatch call in the core), and
    `hyperion-jobs retry` says so on stderr; the Submit preview said it, the retry preview did not.
    SBATCH_PARTITION is passed on to sbatch, so it is not named."""
    from backends.submit.site_options import ignored_inputs_line

    monkeypatch.setenv("SBATCH_GRES", "gpu:v100:1")
    monkeypatch.setenv("SBATCH_TIMELIMIT", "1")
    monkeypatch.setenv("SBATCH_PARTITION", "gpu")
    record = build_history(tmp_path, SITE)

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await pilot.pause()
            screen = await open_preview(pilot, seen)
            first = preview_text(screen).splitlines()[0]
            assert first == "# hyperion-submit: " + ignored_inputs_line(os.environ)
            assert "SBATCH_GRES, SBATCH_TIMELIMIT from the environment" in first and "PARTITION" not in first
            await pilot.press("ctrl+r")                  # the confirmation repeats the preview
            await confirmation(pilot, "#confirm-detail Static")
            assert first in str(app.screen.query_one("#confirm-detail Static").content)

    asyncio.run(scenario())


def test_the_commands_a_refusal_names_paste_as_they_are_in_a_folder_with_a_space(tmp_path: Path) -> None:
    """`wait for them to end (hyperion-jobs watch /my runs/...)` did not paste: the record's path was
    not quoted, while the line after a wait (`reattach_command`) always quoted it."""
    import shlex

    from backends.retry import RetryRequest, plan_retry
    from backends.watch.rows import history_rows
    from test_console_fixtures import build_history

    record = build_history(tmp_path / "my runs", SITE, unfinished=(7,))
    history = load_history(record)
    task = next(t for t in history.current.tasks if t.value == 7)
    rows = history_rows(history, {(task.job_id, task.array_task_id):
                                  TaskState(task.job_id, task.array_task_id, JobState.RUNNING)})
    with pytest.raises(Exception) as refused:
        plan_retry(history, rows, RetryRequest())
    watch = str(refused.value).split("wait for them to end (", 1)[1].split(")", 1)[0]
    assert shlex.split(watch) == ["hyperion-jobs", "watch", str(record)]


def test_a_retry_begun_elsewhere_after_the_last_check_is_refused_under_the_lock(tmp_path: Path, cli_env,
                                                                                 monkeypatch) -> None:
    """The console compares its confirmed plan with a fresh one, then takes the pattern's lock: a
    shell's retry that began in between reran the same values, and the console ran them again as
    one more attempt. Under the lock it is now refused, nothing run."""
    from conftest import run_cli

    import hyperion_console.retrying as retrying
    from backends.errors import InputError

    record = local_run_with_a_failure(tmp_path)
    (tmp_path / "fail.txt").write_text("")
    history = load_history(str(record))
    confirmed = retrying.preview(history, history_status(history), {}).identity
    real_launch = retrying.launch

    def another_terminal_first(*args, **kwargs):     # the shell's retry, at that instant
        elsewhere = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env)
        assert elsewhere.returncode == 0, elsewhere.stderr
        return real_launch(*args, **kwargs)

    monkeypatch.setattr(retrying, "launch", another_terminal_first)
    with pytest.raises(InputError, match="attempt 2 of .* began after this rerun was planned .* nothing ran: "
                                         "press R again to plan from what it did"):
        retrying.run_retry(str(record), retrying.RetryRequest(), confirmed, lambda path: None)
    assert load_history(str(record)).numbers == (1, 2)          # the shell's retry, and nothing more


def _first_on_path(bin_dir: Path, monkeypatch, scripts: dict[str, str]) -> None:
    """Slurm commands of a cluster in trouble (`scripts`: name -> sh body), found before the real ones."""
    bin_dir.mkdir()
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_quit_while_a_confirmed_retry_waits_on_a_hung_slurm_kills_its_query(tmp_path: Path,
                                                                                monkeypatch) -> None:
    """A confirmed Slurm retry asks Slurm about the record first; with the controller hung, q blanked
    the screen and the console lived on for the query's 30 s (twice), the process left running.
    The retry's query is the screen's, stoppable: the quit kills it, and nothing is submitted."""
    record = build_history(tmp_path, SITE)
    ended_just_now(record)              # a retry asks squeue whether Slurm requeued any of them
    calls = tmp_path / "calls"
    _first_on_path(tmp_path / "hung-slurm", monkeypatch, {name: f"echo $$ >> {calls}\nexec sleep 60"
                                                         for name in ("squeue", "sacct")})

    def hung() -> list[int]:
        pids = [int(pid) for pid in calls.read_text().split()] if calls.exists() else []
        return [pid for pid in pids if Path(f"/proc/{pid}").exists()
                and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: "FAILED" in table_column(app.jobs_screen.query_one("#tasks"), "state"), 10)
            await open_preview(pilot, seen)
            await pilot.press("ctrl+r")
            assert isinstance(app.screen, ConfirmScreen)
            asked = len(calls.read_text().split()) if calls.exists() else 0
            await pilot.press("y")
            await wait_for(pilot, lambda: calls.exists() and len(calls.read_text().split()) > asked, 10)
            await pilot.press("q")
        quit_at = time.monotonic()
        while hung() and time.monotonic() - quit_at < 5:
            time.sleep(0.1)
        assert not hung(), "the retry's query to a hung Slurm outlived the quit"
        assert load_history(record).numbers == (1,)

    asyncio.run(scenario())


def test_a_confirmed_retry_says_when_slurm_could_not_say_whether_it_requeued(tmp_path: Path, monkeypatch) -> None:
    """As hyperion-jobs retry says it: the states the retry planned from are the ledger's (it said
    nothing and went on). sbatch is refused here, so nothing reaches the cluster."""
    record = build_history(tmp_path, SITE)
    ended_just_now(record)
    _first_on_path(tmp_path / "down", monkeypatch, {
        "squeue": "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1",
        "sbatch": "echo 'sbatch: error: Batch job submission failed: controller down' >&2; exit 1"})

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: "FAILED" in table_column(app.jobs_screen.query_one("#tasks"), "state"), 10)
            await open_preview(pilot, seen)
            await pilot.press("ctrl+r", "y")
            await wait_for(pilot, lambda: posted(seen, RetryRefused), 20)
            said = [(n.title, n.message) for n in app._notifications]
            assert any(title == "retry" and "Unable to contact slurm controller" in line
                       and line.endswith("; shown as last recorded") for title, line in said), said
        assert load_history(record).numbers == (1,)

    asyncio.run(scenario())



def test_the_retry_button_shows_its_whole_label_once_the_plan_arrives(tmp_path: Path, held_preview) -> None:
    """The dialog is drawn before its plan (made in a thread) arrives, its button reading `Retry…`; the
    label then became `Retry 3 task(s)…` but the button kept the width of `Retry…`, and the label
    wrapped inside it: the screen showed `Retry 3`, cut with nothing to say so (seen in tmux at 100x30
    after R on a failure group, and after typing `auto` into --mem: `a`, `au`, `aut` are refused)."""
    record, gate = build_history(tmp_path, SITE), held_preview

    async def scenario() -> None:
        async with console_on(record, [tmp_path], size=(100, 30)) as (app, pilot, seen):
            await pilot.pause(0.5)
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 10)
            screen = app.screen
            run = screen.query_one("#retry-run")
            await pilot.pause(0.3)                  # laid out while the plan is still being made
            assert "Retry…" in "".join(rendered(run))
            gate.set()
            await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
            await pilot.pause(0.3)
            assert str(run.label) == "Retry 3 task(s)…"
            assert "Retry 3 task(s)…" in "".join(rendered(run)), rendered(run)
            screen.set_field("mem", "a")            # refused: `Retry…` again, then mended
            await wait_for(pilot, lambda: str(run.label) == "Retry…", 10)
            await pilot.pause(0.3)
            screen.set_field("mem", "300M")
            await wait_for(pilot, lambda: str(run.label) == "Retry 3 task(s)…", 10)
            await pilot.pause(0.3)
            assert "Retry 3 task(s)…" in "".join(rendered(run)), rendered(run)

    asyncio.run(scenario())


@pytest.mark.parametrize("size", [(60, 20), (80, 24)])
def test_a_long_list_of_values_in_the_retry_dialog_shows_from_its_first_value(tmp_path: Path,
                                                                              size: tuple[int, int]) -> None:
    """R on a failure group of 15 values opened the dialog with its values field scrolled to the
    list's end, cut mid-number: `7,207,227,247,267,287` of `7,27,...,187,207,...` read as another
    valid list. The field shows the list from its first value; typing still replaces it whole.
    Where the field cuts the list, it says so: `7,27,47,...,147,16` at its right edge, no mark,
    read as the whole list (at 80x24, `1-3,5,7,9-12,14,17-18,` of a group of 31 values); now the
    cut edge is `…`, at the end while the start shows, at the start once the end shows."""
    from hyperion_console.messages import FailureGroupsListed

    values = list(range(7, 300, 20))
    listed = ",".join(map(str, values))
    record = build_history(tmp_path, SITE, n=300,
                           failures={v: ("FAILED", 3, "ValueError: corrupt input file") for v in values})

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=size, message_hook=seen.append) as pilot:
            await pilot.pause(0.3)
            await pilot.press("t")                               # the failure groups: one, 15 values
            await wait_for(pilot, lambda: posted(seen, FailureGroupsListed), 10)
            screen = await open_preview(pilot, seen)
            await pilot.pause(0.2)
            field = screen.field("values")
            assert field.value == listed and field.has_focus
            shown = rendered(field)[0].strip()
            assert len(shown) < len(listed)                      # the field is narrower than the list
            assert shown.startswith("7,27,47,"), shown           # from its first value, not its tail
            assert shown.endswith("…"), shown                    # cut there, and said so
            assert listed.startswith(shown[:-1]), shown          # a prefix of the list, nothing else
            row = next(line for line in screen_lines(app) if "█ values " in line)   # its row, not the plan's
            assert shown in row, row                             # as the screen shows it
            await pilot.press("end")                             # the end in sight: the start is cut
            await pilot.pause(0.2)
            shown = rendered(field)[0].strip()
            assert shown.startswith("…") and listed.endswith(shown[1:].rstrip("▌ ")), shown
            await pilot.press("home")
            await pilot.press("3")                               # the list replaced by what is typed
            assert field.value.startswith("3")

    asyncio.run(scenario())


def test_the_retry_preview_breaks_a_long_path_after_a_slash_not_inside_a_name(tmp_path: Path) -> None:
    """At 80x24 the Retry dialog's preview wrapped the record's path where the pane ended, inside its
    file name (`.../extract.JOB.submit.jso` over `n as attempt 2`), read as two names; it breaks after
    a `/` as the Submit preview does (PathText)."""
    deep = tmp_path / "experiments_of_the_speech_group" / "extraction_of_features"
    deep.mkdir(parents=True)
    record = build_history(deep, SITE)

    async def scenario() -> None:
        async with console_on(record, [deep], size=(80, 24)) as (app, pilot, seen):
            await pilot.pause(0.5)
            screen = await open_preview(pilot, seen)
            await pilot.pause(0.3)
            lines = [line.rstrip() for line in rendered(screen.query_one("#retry-text"))]
            shown_path = "".join(line for line in lines if line)[:len("retry of ") + len(str(record)) + 40]
            assert str(record) in shown_path, lines              # the whole path, in pieces
            assert any(line.startswith(Path(record).name) or Path(record).name in line for line in lines), lines
            path_lines = lines[:next(i for i, line in enumerate(lines) if Path(record).name in line)]
            assert path_lines and all(line.endswith("/") for line in path_lines), lines

    asyncio.run(scenario())


def test_once_the_proposed_sizes_are_filled_in_the_preview_and_confirmation_say_they_are_given(tmp_path: Path) -> None:
    """After "Use proposed sizes" filled `--mem 200M` in, the preview still said `proposed sizes (Use
    proposed sizes fills them in):`, and the confirmation, which has no such button, repeated it."""
    record = build_history(tmp_path, SITE)        # value 6 ended OUT_OF_MEMORY under --mem 100M

    async def scenario() -> tuple[str, str, str, str]:
        async with console_on(record, [tmp_path]) as (app, pilot, seen):
            await pilot.pause(0.5)
            screen = await open_preview(pilot, seen)
            await wait_for(pilot, lambda: "proposed sizes" in preview_text(screen), 10)
            before = preview_text(screen)

            async def asked() -> str:       # the confirmation's words, then No
                await pilot.press("ctrl+r")
                await confirmation(pilot, "#confirm-detail Static")
                words = str(app.screen.query_one("#confirm-detail Static").content)
                await pilot.press("n")
                return words

            asked_before = await asked()
            assert isinstance(app.screen, RetryScreen)
            screen.query_one("#retry-use-sizes").focus()
            await pilot.press("enter")
            await wait_for(pilot, lambda: "--mem 200M" in (posted(seen, RetryPreviewed)[-1].command or ""), 10)
            await wait_for(pilot, lambda: "--mem 200M" in preview_text(screen), 10)
            after = preview_text(screen)
            return before, asked_before, after, await asked()

    before, asked_before, after, asked = asyncio.run(scenario())
    reason = "  --mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request 100M"
    assert f"proposed sizes (Use proposed sizes fills them in):\n{reason}" in before, before
    assert f"proposed sizes (not given):\n{reason}" in asked_before, asked_before
    assert f"proposed sizes (given):\n{reason}" in after and "fills them in" not in after, after
    assert f"proposed sizes (given):\n{reason}" in asked and "Use proposed sizes" not in asked, asked


def test_proposed_sizes_say_which_of_them_the_fields_give() -> None:
    """--mem filled in, --time not: each named as it stands, in the preview's and the confirmation's words."""
    from types import SimpleNamespace

    from backends.retry import RetryRequest
    from backends.retry_sizes import SizeProposal
    from hyperion_console.retrying import size_lines

    sizes = SizeProposal("200M", "00:12:00", ("--mem 200M: why", "--time 00:12:00: why"))
    plan = SimpleNamespace(sizes=None)
    heads = {(mem, time, button): size_lines(plan, sizes, RetryRequest(mem=mem, time=time), button)[0]
             for mem in (None, "200M") for time in (None, "00:12:00") for button in (True, False)}
    assert heads == {
        (None, None, True): "proposed sizes (Use proposed sizes fills them in):",
        (None, None, False): "proposed sizes (not given):",
        ("200M", None, True): "proposed sizes (--mem given; Use proposed sizes fills in --time):",
        ("200M", None, False): "proposed sizes (--mem given, --time not):",
        (None, "00:12:00", True): "proposed sizes (--time given; Use proposed sizes fills in --mem):",
        (None, "00:12:00", False): "proposed sizes (--time given, --mem not):",
        ("200M", "00:12:00", True): "proposed sizes (given):",
        ("200M", "00:12:00", False): "proposed sizes (given):"}
    assert size_lines(plan, sizes, RetryRequest(mem="300M"), False)[1:] == ["  --mem 200M: why", "  --time 00:12:00: why"]
