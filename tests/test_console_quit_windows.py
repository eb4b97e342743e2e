"""Quitting while the console's watch is what moves the slots of a --max-jobs-run shared by array
windows: a window submitted held waited for ever once the console had quit without a word."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import submit_real_array
from test_console_fixtures import posted, table_column, wait_for

import hyperion_console.watch as console_watch
from backends.records.attempts import NewAttempt
from backends.records.history import commit_attempt
from backends.states import JobState, TaskState
from backends.submit.commandline import parse_submit_argv
from backends.submit.plan import build_plan
from backends.submit.slurm.sbatch import make_record
from backends.watch.budget import QueryBudget
from backends.watch.poller import PollUpdate
from hyperion_console.app import make_app
from hyperion_console.messages import JobsUpdated
from hyperion_console.screens.confirm import ConfirmScreen

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def windowed_record(root: Path, max_jobs_run: str | None = "2") -> Path:
    """JOB=1:25 in windows of 10 (jobs 7001-7003, never submitted), --max-jobs-run 2 shared by them."""
    root.mkdir(parents=True, exist_ok=True)
    site = root / "win.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text().replace("max_array_size: 1001",
                                                                             "max_array_size: 10"))
    argv = ["slurm", "--cfg", str(site), "--array", "JOB=1:25", "--output-file",
            str(root / "exp" / "log" / "w.JOB.log")]
    argv += ["--max-jobs-run", max_jobs_run] if max_jobs_run else []
    plan = build_plan(*parse_submit_argv([*argv, "--", "python3", "w.py", "JOB"]))
    record = make_record(plan, [(w, str(7001 + i)) for i, w in enumerate(plan.windows)], NewAttempt(1))
    commit_attempt(record, NewAttempt(1))
    return Path(record.path)


def states_of(record_path: Path, ended_jobs: tuple[str, ...]) -> dict:
    """Every task of `ended_jobs` COMPLETED, the others PENDING (the last window held, as submitted)."""
    from backends.records.record import load_record

    record = load_record(record_path)
    return {(t.job_id, t.array_task_id): TaskState(t.job_id, t.array_task_id,
                                                   JobState.COMPLETED if t.job_id in ended_jobs else JobState.PENDING,
                                                   0 if t.job_id in ended_jobs else None, None, 1.0, None, "squeue")
            for t in record.tasks}


def test_the_line_names_the_windows_left_and_how_to_watch_them_again(tmp_path: Path) -> None:
    from backends.records.record import load_record
    from backends.watch.throttle import unwatched_line

    record = load_record(windowed_record(tmp_path))
    line = unwatched_line(record, states_of(Path(record.path), ("7001", "7002")))
    assert line is not None and line.startswith("job(s) 7003 (of 3 array windows) still have tasks to run under "
                                                "the --max-jobs-run 2 the windows share"), line
    assert line.endswith(f"wait for them again with: hyperion-jobs watch {record.path}"), line
    assert unwatched_line(record, states_of(Path(record.path), ("7001", "7002", "7003"))) is None
    single = load_record(windowed_record(tmp_path / "no-limit", max_jobs_run=None))
    assert unwatched_line(single, {}) is None


def paused_states(record_path: Path) -> dict:
    """7001 ended, 7002 paused by the user (`scontrol uhold 7002`), 7003 waiting on the plan's --hold:
    squeue says JobHeldUser of both held windows."""
    states = states_of(record_path, ("7001",))
    return {key: replace(state, reason=None if state.job_id == "7001" else "JobHeldUser")
            for key, state in states.items()}


def test_the_line_names_a_window_the_user_held_and_how_to_release_it(tmp_path: Path) -> None:
    """The speech engineer paused the second window with `scontrol uhold` and quit: the dialog told
    them to wait with `hyperion-jobs watch`, which never releases a hold of theirs, and nothing of the
    hold, so the run waited for ever. The plan's own hold (7003, submitted --hold) is not named."""
    from backends.records.record import load_record
    from backends.watch.throttle import unwatched_line

    record = load_record(windowed_record(tmp_path))
    line = unwatched_line(record, paused_states(Path(record.path)))
    assert line is not None and line.endswith(
        "; job(s) 7002 held (JobHeldUser), which no watcher releases: they run once released "
        "(scontrol release 7002)"), line
    assert unwatched_line(record, states_of(Path(record.path), ("7001",))).endswith(
        f"hyperion-jobs watch {record.path}")              # nothing held: as before


class FakePoller:
    """Stands in for the core's Poller: one answer, then waits to be stopped."""

    def __init__(self, update: PollUpdate) -> None:
        self.update = update
        self.budget = QueryBudget()

    def run(self, observer, stop, waiting=None):
        observer(self.update)
        stop.wait(30)
        return self.update


def _polled_once(monkeypatch, record: Path, ended_jobs: tuple[str, ...]) -> None:
    """The console's watch of `record` answered once: `ended_jobs` COMPLETED, the others PENDING."""
    states = states_of(record, ended_jobs)
    every = {job for job, _ in states}
    update = PollUpdate(states, tuple(states.values()), None, every <= set(ended_jobs), 1.0, None, time.time())
    monkeypatch.setattr(console_watch, "watcher", lambda *a, **k: (FakePoller(update), None))


def test_q_while_a_held_window_waits_for_the_console_asks_and_names_the_watch(tmp_path: Path, monkeypatch) -> None:
    record = windowed_record(tmp_path)
    _polled_once(monkeypatch, record, ("7001",))

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: any(not m.usage_asked for m in posted(seen, JobsUpdated)), 10)
            await pilot.pause()
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5)
            said = f"{app.screen.title_text}\n{app.screen.detail}"
            assert "Quit and leave the array windows unwatched?" in said, said
            assert "job(s) 7002,7003 (of 3 array windows) still have tasks to run" in said, said
            assert f"hyperion-jobs watch {record}" in said, said
            await pilot.press("n")
            await pilot.pause()
            assert app.is_running and not isinstance(app.screen, ConfirmScreen)
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5)
            await pilot.press("y")
            await wait_for(pilot, lambda: not app.is_running, 5)

    asyncio.run(scenario())


def test_q_quits_at_once_when_every_window_ended(tmp_path: Path, monkeypatch) -> None:
    record = windowed_record(tmp_path)
    _polled_once(monkeypatch, record, ("7001", "7002", "7003"))

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: any(not m.usage_asked for m in posted(seen, JobsUpdated)), 10)
            await pilot.pause()
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, 5)

    asyncio.run(scenario())


@pytest.mark.parametrize("another_watch", [False, True])
def test_ctrl_c_of_watch_says_what_waits_for_a_watcher(tmp_path: Path, cli_env, another_watch: bool) -> None:
    """`hyperion-jobs watch RECORD` stopped with Ctrl-C: the same line as the console's dialog. While
    it watches, it says so by its lock on the record, which a console's quit looks for (it asks only
    when no other watch moves the windows on). With another watch still moving them (a hyperion-submit
    waiting in another terminal), the line, which said they were left to no one, is not said."""
    from contextlib import ExitStack

    from backends.watch.movers import moving_slots

    record = windowed_record(tmp_path)
    others = ExitStack()
    if another_watch:
        others.enter_context(moving_slots(str(record)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # squeue: the first window ran, the second and third wait (the third held); scontrol does nothing
    rows = "".join(f"7001_{i}|COMPLETED|0:0|0:01|vm|None|0|10:00|1|cpu=1|1|\n" for i in range(1, 10))
    rows += "7002_[0-9%1]|PENDING|0:0|0:00||JobArrayTaskLimit|0|10:00|1||1|\n"
    rows += "7003_[0-5%1]|PENDING|0:0|0:00||JobHeldUser|0|10:00|1||1|\n"
    (bin_dir / "squeue").write_text(f"#!/bin/sh\ncat <<'EOF'\n{rows}EOF\n")
    for name in ("sacct", "scontrol"):
        (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
    for name in ("squeue", "sacct", "scontrol"):
        (bin_dir / name).chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}", "PYTHONPATH": str(REPO)}
    code = "import sys; from backends.cli.jobs import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "watch", str(record)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    with others:
        time.sleep(4)
        assert _flock_held(record)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, (out, err)
    if another_watch:
        assert "still have tasks to run" not in err and "wait for them again" not in err, err
    else:
        assert "job(s) 7002,7003 (of 3 array windows) still have tasks to run" in err, err
        assert f"wait for them again with: hyperion-jobs watch {record}" in err, err
    assert not _flock_held(record)


def test_a_user_quits_the_console_on_held_windows_and_watch_runs_them(tmp_path: Path, slurm_cluster, cli_env) -> None:
    """On the real cluster: JOB=1:7 in windows of 3 under --max-jobs-run 1 (the later windows submitted
    held). q asks, names the watch; after the quit the held windows stay held (the dialog said why),
    and the command it named runs them to the end."""
    from conftest import run_cli

    from backends.launch_slurm import submit

    site = tmp_path / "win.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text().replace("max_array_size: 1001",
                                                                             "max_array_size: 3"))
    plan = build_plan(*parse_submit_argv([
        "slurm", "--cfg", str(site), "--array", "JOB=1:7", "--max-jobs-run", "1", "--time", "00:02:00",
        "--output-file", str(tmp_path / "log" / "w.JOB.log"), "--", "sleep", "1"]))
    record = submit(plan)
    jobs = [job.job_id for job in record.jobs]
    try:
        assert len(jobs) == 3

        async def scenario() -> str:
            seen: list = []
            app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
            async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
                await wait_for(pilot, lambda: any(m.as_of is not None for m in posted(seen, JobsUpdated)), 30)
                await pilot.press("q")
                await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5)
                said = app.screen.detail
                await pilot.press("y")
                await wait_for(pilot, lambda: not app.is_running, 10)
            return said

        said = asyncio.run(scenario())
        assert "(of 3 array windows) still have tasks to run under the --max-jobs-run 1" in said, said
        assert f"wait for them again with: hyperion-jobs watch {record.path}" in said, said
        held = subprocess.run(["squeue", "-h", "-j", jobs[2], "-o", "%r"], capture_output=True, text=True)
        assert "JobHeldUser" in held.stdout or "JobArrayTaskLimit" in held.stdout, held.stdout
        watched = run_cli("hyperion-jobs", "watch", record.path, env={**cli_env, "PYTHONPATH": str(REPO)},
                          timeout=300)
        assert watched.returncode == 0, watched.stderr
    finally:
        subprocess.run(["scancel", *jobs], capture_output=True)


def _flock_held(path: Path) -> bool:
    """Whether the kernel lists a flock on `path`'s file (/proc/locks: what another process holds)."""
    inode = path.stat().st_ino
    return any(line.split()[1] == "FLOCK" and line.split()[5].rsplit(":", 1)[-1] == str(inode)
               for line in Path("/proc/locks").read_text().splitlines() if len(line.split()) > 5)


@pytest.mark.slurm
def test_q_quits_at_once_while_a_waiting_hyperion_submit_moves_the_windows(tmp_path: Path, slurm_cluster,
                                                                            cli_env) -> None:
    """hyperion-submit of JOB=1:7 in windows of 3 under --max-jobs-run 1 still waiting in another
    terminal: it moves the windows' slots on, yet q on the console watching the same record asked
    "Quit and leave the array windows unwatched?". Now q quits at once while it waits; once it is
    gone (a hangup: "job(s) left queued"), q asks, as the console is then what moves them."""
    site = tmp_path / "win.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text().replace("max_array_size: 1001",
                                                                             "max_array_size: 3"))
    record = tmp_path / "log" / "q" / "w.JOB.submit.json"
    env = {**cli_env, "PYTHONPATH": str(REPO)}
    submitter = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(site), "--array", "JOB=1:7", "--max-jobs-run", "1",
         "--time", "00:02:00", "--output-file", str(tmp_path / "log" / "w.JOB.log"), "--", "sleep", "20"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    jobs: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not (record.exists() and _flock_held(record)):     # its wait has begun
            assert time.monotonic() < deadline and submitter.poll() is None, "hyperion-submit never said it waits"
            time.sleep(0.2)
        jobs = [job["job_id"] for job in json.loads(record.read_text())["jobs"]]
        assert len(jobs) == 3

        async def quit_once_polled() -> str | None:
            """q once the console's watch answered: the dialog's text, None when it quit at once."""
            seen: list = []
            app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
            async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
                await wait_for(pilot, lambda: any(m.as_of is not None for m in posted(seen, JobsUpdated)), 30)
                await pilot.press("q")
                await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) or not app.is_running, 5)
                if not app.is_running:
                    return None
                said = f"{app.screen.title_text}\n{app.screen.detail}"
                await pilot.press("y")
                await wait_for(pilot, lambda: not app.is_running, 5)
            return said

        assert asyncio.run(quit_once_polled()) is None
        os.killpg(submitter.pid, signal.SIGHUP)                   # the other terminal closed
        _, err = submitter.communicate(timeout=60)
        assert submitter.returncode == 129 and "left queued" in err, err
        said = asyncio.run(quit_once_polled())
        assert said is not None and "Quit and leave the array windows unwatched?" in said, said
        assert f"wait for them again with: hyperion-jobs watch {record}" in said, said
    finally:
        if submitter.poll() is None:
            os.killpg(submitter.pid, signal.SIGKILL)
            submitter.communicate()
        subprocess.run(["scancel", *jobs], capture_output=True)


def test_opening_another_record_says_the_windows_it_leaves_unwatched(tmp_path: Path, monkeypatch) -> None:
    """Choosing another submission stops this record's watch as a quit does: it said nothing, and the
    held window waited for ever. The warning names the windows and the watch that moves them again."""
    record = windowed_record(tmp_path / "a")
    other = windowed_record(tmp_path / "b", max_jobs_run=None)
    _polled_once(monkeypatch, record, ("7001",))

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: any(not m.usage_asked for m in posted(seen, JobsUpdated)), 10)
            await pilot.pause()
            app.jobs_screen.open_record(record)              # the same record again: nothing to say
            app.jobs_screen.open_record(other)
            await pilot.pause()
            said = [(n.title, n.message) for n in app._notifications if n.title == "windows left"]
            assert len(said) == 1, said
            assert said[0][1].startswith("the record left unwatched: job(s) 7002,7003 (of 3 array windows)")
            assert said[0][1].endswith(f"wait for them again with: hyperion-jobs watch {record}")

    asyncio.run(scenario())


def _moves_refused(monkeypatch, record: Path, refusals: list, polls: int | None = None) -> None:
    """The console's watch of `record` (7001 ended, 7002 at %1, 7003 held) answers the same `polls`
    times (default: one per refusal); scontrol answers with `refusals` in turn, then takes each call."""
    from backends.records.record import load_record
    from backends.watch.slurm.accounting import CommandResult
    from backends.watch.throttle import Throttler

    states = states_of(record, ("7001",))
    update = PollUpdate(states, tuple(states.values()), None, False, 1.0, None, time.time())
    answers = list(refusals)

    def runner(argv):
        if argv[0] == "squeue":
            return CommandResult(0, "7002_[0-9%1]|0-9%1|JobArrayTaskLimit|7002|\n"
                                    "7003_[0-4%1]|0-4%1|JobHeldUser|7003|\n", "")
        return answers.pop(0) if answers else CommandResult(0, "", "")

    class Polls(FakePoller):
        def run(self, observer, stop, waiting=None):
            for _ in range(polls or len(refusals)):
                observer(self.update)
            stop.wait(30)
            return self.update

    throttler = Throttler.for_record(load_record(record), QueryBudget(), runner)
    monkeypatch.setattr(console_watch, "watcher", lambda *a, **k: (Polls(update), throttler))


def test_a_refused_raise_of_the_next_window_shows_on_the_status_line_and_once_as_a_notification(
        tmp_path: Path, monkeypatch) -> None:
    """The console's watch moves a drained window's slots to the next, and scontrol refuses: the
    screen showed the next window PENDING with nothing to say why. The core's line is on the status
    line, beside the other live warnings, with Slurm's words made printable, while it lasts."""
    from test_console_fixtures import notifications

    from backends.watch.slurm.accounting import CommandResult

    record = windowed_record(tmp_path)
    # two answers alike: a second refusal, the same, is not notified again
    _moves_refused(monkeypatch, record, [CommandResult(1, "", "slurm_update error: Access/permission denied "
                                                              "[red]\x1b[2J\n")] * 2)
    said = ("could not move free slots to job 7002: scontrol update failed (rc 1): "
            "slurm_update error: Access/permission denied [red]\\x1b[2J; trying again at the next poll")

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30), message_hook=seen.append) as pilot:
            status = app.jobs_screen.query_one("#poll-status")
            await wait_for(pilot, lambda: len([m for m in posted(seen, JobsUpdated) if m.slots]) >= 2, 10)
            await pilot.pause()
            assert said in status.line().plain, status.line().plain
            assert notifications(app).count(said) == 1, notifications(app)

    asyncio.run(scenario())


def test_the_console_tells_once_that_a_refused_move_went_through_as_hyperion_jobs_watch_prints_it(
        tmp_path: Path, monkeypatch) -> None:
    """scontrol refused the raise twice, then took it: `hyperion-jobs watch` printed `slots moved again:
    job 7002 up to 2 at once`, while the console only dropped the refusal from its status line, the
    notification that said `trying again at the next poll` never followed by a word that it had worked.
    The console now tells what the core's SlotsNotice says: the refusal once, and the move once."""
    from test_console_fixtures import notifications

    from backends.watch.slurm.accounting import CommandResult

    record = windowed_record(tmp_path)
    # refused, refused again, then taken
    _moves_refused(monkeypatch, record, [CommandResult(1, "", "slurm_update error: Access/permission denied\n")] * 2,
                   polls=3)
    refused = ("could not move free slots to job 7002: scontrol update failed (rc 1): "
               "slurm_update error: Access/permission denied; trying again at the next poll")
    moved = "slots moved again: job 7002 up to 2 at once"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            status = app.jobs_screen.query_one("#poll-status")
            await wait_for(pilot, lambda: moved in notifications(app), 10)
            await pilot.pause()
            assert notifications(app).count(refused) == 1 and notifications(app).count(moved) == 1, \
                notifications(app)
            assert "could not move free slots" not in status.line().plain, status.line().plain

    asyncio.run(scenario())


def test_q_while_the_user_holds_a_window_says_how_to_release_it(tmp_path: Path, monkeypatch) -> None:
    record = windowed_record(tmp_path)
    states = paused_states(record)
    update = PollUpdate(states, tuple(states.values()), None, False, 1.0, None, time.time())
    monkeypatch.setattr(console_watch, "watcher", lambda *a, **k: (FakePoller(update), None))

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: any(not m.usage_asked for m in posted(seen, JobsUpdated)), 10)
            await pilot.pause()
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5)
            said = " ".join(f"{app.screen.title_text}\n{app.screen.detail}".split())
            assert "job(s) 7002 held (JobHeldUser), which no watcher releases: they run once released " \
                   "(scontrol release 7002)" in said, said
            await pilot.press("y")
            await wait_for(pilot, lambda: not app.is_running, 5)

    asyncio.run(scenario())


@pytest.mark.slurm
def test_quitting_with_a_window_paused_on_the_cluster_says_how_to_release_it(slurm_cluster, tmp_path: Path) -> None:
    """The speech engineer's session: `--array JOB=1000:1003 --max-jobs-run 2` goes out as two
    windows (J_1000, then K_0..K_2, each %1); they pause the second with `scontrol uhold K` while
    K_0 runs, and quit the console, which asked them to wait with `hyperion-jobs watch` only."""
    record = submit_real_array(tmp_path / "log" / "p.JOB.log", "JOB=1000:1003", "sleep", "60",
                               extra=("--max-jobs-run", "2"))
    first, second = (job.job_id for job in record.jobs)
    try:
        async def scenario() -> str:
            app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
            async with app.run_test(size=(80, 24)) as pilot:
                table = app.jobs_screen.query_one("#tasks")
                await wait_for(pilot, lambda: table_column(table, "state")[1] == "RUNNING", 60)
                subprocess.run(["scontrol", "uhold", second], capture_output=True, timeout=30)
                await wait_for(pilot, lambda: table_column(table, "reason")[2:] == ["JobHeldUser"] * 2, 60)
                await pilot.press("q")
                await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5)
                said = " ".join(f"{app.screen.title_text}\n{app.screen.detail}".split())
                await pilot.press("y")
                await wait_for(pilot, lambda: not app.is_running, 5)
            return said

        said = asyncio.run(scenario())
        assert f"job(s) {second} held (JobHeldUser), which no watcher releases: they run once released " \
               f"(scontrol release {second})" in said, said
    finally:
        subprocess.run(["scancel", first, second], capture_output=True, timeout=30)


def test_a_hung_scontrol_moving_slots_is_said_by_watch_while_it_lasts(tmp_path: Path, cli_env) -> None:
    """scontrol hung while the watch moved a drained window's slots: the watch waited its 30 s
    timeout inside the poll loop, its screen (or its plain lines) standing still with nothing said,
    no age and no cause, while every other hang says `... not answering for 7 s` at once."""
    record = windowed_record(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    rows = "".join(f"7001_{i}|COMPLETED|0:0|0:01|vm|None|0|10:00|1|cpu=1|1|\n" for i in range(1, 10))
    rows += "7002_[0-9%1]|PENDING|0:0|0:00||JobArrayTaskLimit|0|10:00|1||1|\n"
    rows += "7003_[0-5%1]|PENDING|0:0|0:00||JobHeldUser|0|10:00|1||1|\n"
    pending = "7002_[0-9%1]|0-9%1|JobArrayTaskLimit|7002|\n7003_[0-5%1]|0-5%1|JobHeldUser|7003|\n"
    # the poll's squeue, and the throttle's (`-t PD`): the third window waits held, as submitted
    (bin_dir / "squeue").write_text(f"#!/bin/sh\ncase \"$*\" in *PD*) cat <<'EOF'\n{pending}EOF\n;; "
                                    f"*) cat <<'EOF'\n{rows}EOF\n;; esac\n")
    (bin_dir / "sacct").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'scontrol.pid'}\nexec sleep 3600\n")
    for name in ("squeue", "sacct", "scontrol"):
        (bin_dir / name).chmod(0o755)
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}", "PYTHONPATH": str(REPO)}
    code = "import sys; from backends.cli.jobs import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "watch", str(record)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "scontrol.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "scontrol.pid").exists(), "the watch never moved a slot"
        time.sleep(7)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    said = [line for line in out.splitlines() if "scontrol" in line]
    assert said and "controller (scontrol) not answering for 5 s: scontrol has not returned yet" in said[0], out
    pid = int((tmp_path / "scontrol.pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
