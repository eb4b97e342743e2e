"""The console as a whole: navigation, help, command palette, errors, the CLI, --demo."""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_fifo, make_sparse
from test_console_fixtures import (
    build_local_record,
    checkpoint_read,
    notifications,
    rendered,
    table_column,
    text_of,
    wait_for,
)
from textual.widgets import Input

from hyperion_console.__main__ import main
from hyperion_console.app import Settings, make_app
from hyperion_console.commands import ACTIONS
from hyperion_console.screens.checkpoint import CheckpointScreen
from hyperion_console.screens.confirm import ConfirmScreen
from hyperion_console.screens.help import HelpScreen
from hyperion_console.screens.jobs import JobsScreen
from hyperion_console.screens.submit import SubmitScreen
from sharding.store import Checkpoint, RunConfig


@pytest.fixture(autouse=True)
def stdin_a_terminal(monkeypatch) -> None:
    """main() called in-process gets pytest's stdin, never a terminal; the refusal of one that is not
    has its own test, of the installed command."""
    monkeypatch.setattr("hyperion_console.__main__.check_stdin", lambda: None)

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def test_number_keys_switch_screens_and_help_opens(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            assert isinstance(app.screen, SubmitScreen)
            await pilot.click("#time")
            await pilot.press("2")                # typed into the field
            assert app.submit_screen.query_one("#time").value == "2"
            await pilot.press("escape", "2")     # leave the field, then switch
            assert isinstance(app.screen, JobsScreen)
            await pilot.press("3")
            assert isinstance(app.screen, CheckpointScreen)
            assert "No checkpoint" in str(app.screen.query_one("#ckpt-run").content)
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("1")                # modal: navigation keys do nothing
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, CheckpointScreen)
            await pilot.press("1")
            assert isinstance(app.screen, SubmitScreen)

    asyncio.run(scenario())


def test_ctrl_c_says_how_to_quit_in_plain_words(tmp_path: Path) -> None:
    """The hint showed Textual's markup as text: 'Press [b]ctrl+q[/b] to quit the app'."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("escape", "2", "ctrl+c")
            await pilot.pause()
            said = notifications(app)
            assert "Press ctrl+q or q to quit the app" in said, said

    asyncio.run(scenario())


def test_ctrl_c_in_a_text_field_names_only_a_key_the_field_does_not_type(tmp_path: Path) -> None:
    """In a field of the Submit form q is text, so the hint names only ctrl+q; escape gives q back."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.click("#command")            # a text field of the form
            assert isinstance(app.focused, Input), app.focused
            await pilot.press("ctrl+c")
            await pilot.pause()
            said = notifications(app)
            assert "Press ctrl+q to quit the app" in said, said
            await pilot.press("q")
            assert app.is_running and app.focused.value.endswith("q")
            await pilot.press("escape", "q")      # as the help screen says
            await pilot.pause()
            assert not app.is_running, "escape then q did not quit"

    asyncio.run(scenario())


def test_every_palette_entry_names_a_real_action() -> None:
    app = make_app(cfg_dir=CONF)
    for title, _help, screen, action in ACTIONS:
        owner = app if screen is None else app.screen_named(screen)
        name = action.split("(", 1)[0]
        assert callable(getattr(owner, f"action_{name}", None)), title


def test_palette_filter_entries_say_what_they_show() -> None:
    helps = {title: help_text for title, help_text, _screen, _action in ACTIONS}
    assert helps["Filter jobs: all"] == "Jobs: show every task"
    assert helps["Filter jobs: FAILED"] == "Jobs: show only FAILED tasks"


def test_palette_runs_actions_on_their_screen(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"show checkpoint")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, CheckpointScreen), 5)
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"cancel whole job")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 5)
            await wait_for(pilot, lambda: "no submission selected" in notifications(app), 5)

    asyncio.run(scenario())


def test_unreadable_record_is_a_notification_not_a_crash(tmp_path: Path) -> None:
    bad = tmp_path / "q" / "x.submit.json"
    bad.parent.mkdir()
    bad.write_text("{not json")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=bad, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, JobsScreen)
            assert any(m.startswith("record: ") and "not JSON" in m for m in notifications(app))
            await pilot.press("x")               # nothing selected: told, not crashed
            assert "no task selected" in notifications(app)
            assert app.is_running

    asyncio.run(scenario())


def test_an_unreadable_record_given_is_reported_once(tmp_path: Path) -> None:
    """The record given could not be opened (told), then the record list found it as the newest
    submission and opened it again: the same error twice. It is told once."""
    from test_console_fixtures import posted

    from hyperion_console.messages import RecordsListed

    bad = tmp_path / "exp" / "log" / "q" / "x.submit.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")

    async def scenario() -> list[str]:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=bad, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: posted(seen, RecordsListed), 10)
            await pilot.pause(0.5)
            listed = posted(seen, RecordsListed)[-1].paths
            assert listed == (str(bad),) or list(listed) == [str(bad)], listed   # it is listed, newest
            await pilot.press("r")                       # listed again: still not told again
            await wait_for(pilot, lambda: len(posted(seen, RecordsListed)) >= 2, 10)
            await pilot.pause(0.5)
            return notifications(app)

    told = asyncio.run(scenario())
    assert len([m for m in told if "not JSON" in m]) == 1, told


def test_cli_rejects_a_demo_dir_it_did_not_make(tmp_path: Path, capsys) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    assert main(["--demo", "--demo-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hyperion-console: error: --demo-dir: ") and err.count("\n") == 1
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_demo_opens_a_checkpoint_and_resubmit_reruns_the_missing_shards(tmp_path: Path) -> None:
    """--demo: shards 1-10 complete, 11 failed once, 12 never ran; Resubmit runs 11-12 locally."""
    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, demo=True, demo_dir=tmp_path / "demo", search_dirs=[])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await checkpoint_read(pilot)
            screen = app.screen
            assert isinstance(screen, CheckpointScreen)
            legend = text_of(screen.query_one("#ckpt-map"))
            assert "complete 10" in legend and "incomplete 1" in legend and "failed 1" in legend
            assert table_column(screen.query_one("#ckpt-failed"), "shard") == ["11"]
            assert table_column(screen.query_one("#retry-windows"), "array") == ["11-12"]
            commands = str(screen.query_one("#retry-commands").content)
            assert "11-12 0 1 12" in commands and "hyperion-submit local" in commands
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 20)
            jobs = app.screen
            # the resubmission is attempt 2 of the demo's submission: every value, its newest run
            await wait_for(pilot, lambda: table_column(jobs.query_one("#tasks"), "state")
                           == ["COMPLETED"] * 12, 30)
            assert table_column(jobs.query_one("#tasks"), "value") == [str(v) for v in range(1, 13)]
            assert table_column(jobs.query_one("#tasks"), "attempt") == ["1"] * 10 + ["2", "2"]
            await pilot.press("3")
            await wait_for(pilot, lambda: "every shard is complete"
                           in str(screen.query_one("#retry-summary").content), 10)
        names = [type(m).__name__ for m in seen]
        assert names.index("ResubmitRequested") < names.index("Submitted") < names.index("RecordOpened")

    asyncio.run(scenario())


def _bad_inputs(tmp_path: Path) -> dict[str, str]:
    corrupt = tmp_path / "corrupt" / ".nemo_curator_metadata" / ".slurm_array_completion"
    corrupt.mkdir(parents=True)
    (corrupt / "run.json").write_text("{")
    as_list = tmp_path / "list" / ".nemo_curator_metadata" / ".slurm_array_completion"
    as_list.mkdir(parents=True)
    (as_list / "run.json").write_text("[1, 12]")
    (tmp_path / "a_file").write_text("")
    (tmp_path / "bad.submit.json").write_text("{not json")
    completion = Path(".nemo_curator_metadata", ".slurm_array_completion")
    make_fifo(tmp_path / "run_fifo" / completion / "run.json")
    (tmp_path / "run_zero" / completion).mkdir(parents=True)
    (tmp_path / "run_zero" / completion / "run.json").symlink_to("/dev/zero")
    make_sparse(tmp_path / "run_sparse" / completion / "run.json")
    make_fifo(tmp_path / "q" / "fifo.submit.json")
    (tmp_path / "q" / "bigint.submit.json").write_text('{"path": ' + "9" * 5000 + "}")
    (tmp_path / "q" / "nested.submit.json").write_text("[" * 100_000 + "]" * 100_000)
    for name in ("a", "b"):
        (tmp_path / "two" / "q" / f"{name}.submit.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "two" / "q" / f"{name}.submit.json").write_text("{}")
    return {"NOWHERE": str(tmp_path / "nowhere"), "A_FILE": str(tmp_path / "a_file"),
            "CORRUPT": str(tmp_path / "corrupt"), "LIST": str(tmp_path / "list"),
            "BAD_RECORD": str(tmp_path / "bad.submit.json"), "RUN_FIFO": str(tmp_path / "run_fifo"),
            "RUN_ZERO": str(tmp_path / "run_zero"), "RUN_SPARSE": str(tmp_path / "run_sparse"),
            "RECORD_FIFO": str(tmp_path / "q" / "fifo.submit.json"),
            "RECORD_BIGINT": str(tmp_path / "q" / "bigint.submit.json"),
            "RECORD_NESTED": str(tmp_path / "q" / "nested.submit.json"),
            "TWO_RECORDS": str(tmp_path / "two" / "q")}


@pytest.mark.parametrize("argv,field", [
    (["--checkpoint", "NOWHERE"], "--checkpoint"),
    (["--checkpoint", "A_FILE"], "--checkpoint"),
    (["--checkpoint", "CORRUPT"], "run.json"),
    (["--checkpoint", "LIST"], "run.json"),
    (["--record", "NOWHERE"], "--record"),
    (["--record", "BAD_RECORD"], "--record"),
    (["--cfg-dir", "NOWHERE"], "--cfg-dir"),
    (["--cfg-dir", "A_FILE"], "--cfg-dir"),
    (["--demo", "--checkpoint", "LIST"], "--demo"),
    (["--checkpoint"], "--checkpoint"),
    (["--bogus"], "--bogus"),
    # hostile files (issue 13): one line before the screen, never a hang
    (["--checkpoint", "RUN_FIFO"], "run.json"),
    (["--checkpoint", "RUN_ZERO"], "run.json"),
    (["--checkpoint", "RUN_SPARSE"], "run.json"),
    (["--record", "RECORD_FIFO"], "--record"),
    (["--record", "RECORD_BIGINT"], "--record"),
    (["--record", "RECORD_NESTED"], "--record"),
    (["--record", "/dev/zero"], "--record"),
    (["--checkpoint", "\x1b]0;owned\x07"], "--checkpoint"),
    # a path given bare: a record or a checkpoint, or one line saying it is neither
    (["NOWHERE"], "PATH"),
    (["A_FILE"], "PATH"),
    (["CORRUPT"], "run.json"),
    (["BAD_RECORD"], "PATH"),          # named as typed (the core's own name for it is `record`)
    (["TWO_RECORDS"], "PATH"),
    (["--record", "TWO_RECORDS"], "--record"),
    (["BAD_RECORD", "--record", "A_FILE"], "PATH"),
    (["\x1b]0;owned\x07"], "PATH"),
])
def test_cli_bad_input_is_one_line_exit_2_before_the_screen(argv, field, tmp_path: Path, capsys,
                                                            monkeypatch) -> None:
    paths = _bad_inputs(tmp_path)

    def opened(_self, *args, **kwargs):
        raise AssertionError("the console opened its screen on bad input")

    monkeypatch.setattr("hyperion_console.app.HyperionConsole.run", opened)
    before = sorted(tmp_path.rglob("*"))
    try:
        status = main([paths.get(a, a) for a in argv])
    except SystemExit as exc:     # argparse's own errors leave through SystemExit
        status = exc.code
    assert status == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hyperion-console: error: {field}: "), captured.err
    assert lines[0].isprintable() and len(lines[0]) < 1000
    assert sorted(tmp_path.rglob("*")) == before


def test_a_bare_path_opens_the_record_or_the_checkpoint_it_is(tmp_path: Path, monkeypatch) -> None:
    """`hyperion-console exp/log/q/x.JOB.submit.json` used to be "unrecognized argument"."""
    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("FAILED", 3)})
    checkpoint = tmp_path / "ckpt"
    Checkpoint(checkpoint).ensure_run(RunConfig(0, 4))
    opened: list[Settings] = []
    monkeypatch.setattr("hyperion_console.app.HyperionConsole.run", lambda app: opened.append(app.settings))
    for argv in ([str(record)], [str(record.parent)], [str(checkpoint), "--record", str(record)],
                 ["--record", str(record.parent)]):
        assert main(argv) == 0
    by_record, by_folder, both, record_folder = opened
    assert (by_record.start, by_record.record, by_record.checkpoint) == ("jobs", record, None)
    assert by_folder.record == record          # the q/ folder holding one record, as hyperion-jobs takes it
    assert (both.start, both.checkpoint, both.record) == ("checkpoint", checkpoint, record)
    assert record_folder.record == record      # resolved once, for every screen (Checkpoint too)


def _font_families_with(char: str) -> str:
    return subprocess.run(["fc-list", f":charset={ord(char):x}", "family"], capture_output=True,
                          text=True).stdout


HAS_FIRA_CODE = shutil.which("fc-list") is not None and "Fira Code" in _font_families_with("a")


@pytest.mark.skipif(not HAS_FIRA_CODE, reason="needs fontconfig and Fira Code")
def test_header_icon_is_a_glyph_of_the_screenshot_font(tmp_path: Path) -> None:
    """The SVG screenshots name Fira Code; an icon it lacks renders as a missing-glyph box."""
    from textual.widgets._header import HeaderIcon

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            for key in ("escape", "1", "2", "3"):
                await pilot.press(key)
                icon = app.screen.query_one(HeaderIcon).icon
                assert "Fira Code" in _font_families_with(icon), (app.screen, icon)

    asyncio.run(scenario())


@pytest.mark.parametrize("with_record", [True, False], ids=["a run in the folder", "no run"])
def test_the_console_opens_on_the_runs_of_the_folder_it_starts_in(tmp_path: Path, monkeypatch,
                                                                 with_record: bool) -> None:
    """`hyperion-console --cfg-dir conf` in a folder whose exp/log/q/ holds a record opened on an
    empty Submit form; a user coming back expects the runs. It opens on the Jobs screen, the newest
    record open; with no record anywhere below, on the Submit screen as before."""
    if with_record:
        build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("FAILED", 3)})
    monkeypatch.chdir(tmp_path)

    async def scenario() -> tuple[type, str | None]:
        app = make_app(cfg_dir=CONF)           # as the command line builds it
        async with app.run_test(size=(120, 40)) as pilot:
            if with_record:
                await wait_for(pilot, lambda: app.jobs_screen.record_path is not None, 10)
            await pilot.pause()
            return type(app.screen), app.jobs_screen.record_path

    screen, opened = asyncio.run(scenario())
    if with_record:
        assert screen is JobsScreen
        assert opened == str(tmp_path / "exp" / "log" / "q" / "task.JOB.submit.json")
    else:
        assert (screen, opened) == (SubmitScreen, None)


def test_a_folder_whose_listing_hangs_opens_the_submit_screen_in_half_a_second(tmp_path: Path, monkeypatch) -> None:
    """The look for runs before the first screen ran on the main thread with its 0.5 s checked only
    between folders: one listing of a hung NFS mount (here a walk that sleeps) held the console before
    any screen. The look is waited for 0.5 s and then counts as none."""
    import os
    import threading

    release = threading.Event()
    real_walk = os.walk

    def hung_walk(top, *args, **kwargs):
        release.wait(30)                       # a listing that does not answer
        return real_walk(top, *args, **kwargs)

    build_local_record(tmp_path, {1: ("COMPLETED", 0)})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "walk", hung_walk)
    started = time.monotonic()
    try:
        app = make_app(cfg_dir=CONF)
        took = time.monotonic() - started
    finally:
        release.set()
    assert took < 3, took
    assert app.settings.start == "submit"


@pytest.mark.parametrize("stdin", ["devnull", "file", "pipe"])
def test_without_a_terminal_on_stdin_it_says_so_and_exits_2_instead_of_spinning(tmp_path: Path, cli_env,
                                                                               stdin: str) -> None:
    """`hyperion-console < /dev/null` (or a file, or a pipe) spun at a full CPU on end-of-file under a
    screen no key could reach, its escape codes written to stdout. One line, exit 2, nothing built."""
    demo = tmp_path / "demo"
    source = tmp_path / "keys.txt"
    source.write_text("q\n")
    argv = ["hyperion-console", "--cfg-dir", str(CONF), "--demo", "--demo-dir", str(demo)]
    with open(os.devnull if stdin == "devnull" else source) as given:
        try:
            feed = {"input": "q\n"} if stdin == "pipe" else {"stdin": given}
            done = subprocess.run(argv, **feed, cwd=tmp_path, env=cli_env, capture_output=True, text=True,
                                  timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError("hyperion-console ran on without a terminal") from None
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr == ("hyperion-console: error: stdin: not a terminal: the console reads its keys from "
                           "one (run it in a terminal, not with input from a file or a pipe)\n")
    assert not demo.exists()
    shown = subprocess.run(["hyperion-console", "--help"], stdin=subprocess.DEVNULL, env=cli_env,
                           capture_output=True, text=True, timeout=20)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: hyperion-console")


def test_the_screenshot_script_answers_help_without_regenerating(tmp_path: Path) -> None:
    """`python screenshots/regenerate.py --help` printed nothing and started a 3-minute run that
    rewrote screenshots/ (and submitted to Slurm); it prints what a run does, and a mistyped
    option is one line, exit 2."""
    script = REPO / "screenshots" / "regenerate.py"
    before = sorted((p.name, p.stat().st_mtime_ns) for p in (REPO / "screenshots").iterdir())
    try:
        shown = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True,
                               text=True, timeout=15)
        wrong = subprocess.run([sys.executable, str(script), "--size", "80x24"], cwd=tmp_path, capture_output=True,
                               text=True, timeout=15)
    except subprocess.TimeoutExpired:
        raise AssertionError("regenerate.py started regenerating") from None
    assert shown.returncode == 0 and shown.stdout.startswith("usage: regenerate.py"), shown.stderr
    assert "Regenerate screenshots/" in shown.stdout
    assert (wrong.returncode, wrong.stdout) == (2, "")
    assert wrong.stderr.startswith("regenerate.py: error: ") and wrong.stderr.count("\n") == 1, wrong.stderr
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (REPO / "screenshots").iterdir()) == before


def test_a_confirmation_breaks_a_long_path_after_a_slash_not_inside_a_name() -> None:
    """At 80 columns the checkpoint's Resubmit confirmation (the demo's) showed its record as
    `.../demo/exp/log/q/shard.SHAR` over `D.submit.json`, read as two names: every confirmation
    (Submit, Resubmit, Retry, cancel) breaks a path after a `/` as the previews do (PathText)."""
    from textual.app import App

    import hyperion_console.app as console_app

    class Bare(App):
        CSS_PATH = Path(console_app.__file__).parent / console_app.HyperionConsole.CSS_PATH   # the dialog's width

    record = "/home/ana.user/.cache/hyperion-console/demo/exp/log/q/shard.SHARD.submit.json"
    detail = f"record:  {record}\nshards:  11-12"

    async def scenario() -> None:
        app = Bare()
        async with app.run_test(size=(80, 24)) as pilot:
            app.push_screen(ConfirmScreen("Resubmit 2 shard(s)?", detail, yes="Resubmit"))
            await pilot.pause(0.3)
            lines = [line.rstrip() for line in rendered(app.screen.query_one("#confirm-detail Static"))]
            joined = "".join(line for line in lines)
            assert record in joined, lines                       # the whole path, in pieces
            assert any(line.startswith("shard.SHARD.submit.json") for line in lines), lines
            path_lines = lines[:next(i for i, line in enumerate(lines) if line.startswith("shard.SHARD"))]
            assert path_lines[-1].endswith("/q/"), lines

    asyncio.run(scenario())
