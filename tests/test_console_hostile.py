"""Hostile text never reaches the terminal: control sequences are shown as escapes, markup literally.

A task log full of OSC 52 (clipboard), OSC 0 (window title), CSI (clear
screen: dropped, as colours are), C1 and bidi controls and Rich markup; a record, a checkpoint and form
fields holding the same. Each case asserts what the widgets draw.
"""
from __future__ import annotations

import asyncio
import json
import re
import os
from pathlib import Path

import pytest

from test_console_fixtures import (
    build_checkpoint,
    build_local_record,
    checkpoint_read,
    notifications,
    rendered,
    slurm_like_record,
    text_of,
    wait_for,
)

from backends.records.record import save_record
from backends.watch.tail import MAX_TAIL, PIECE
from hyperion_console.app import make_app
from hyperion_console.widgets import log_pane
from hyperion_console.widgets.log_view import MAX_LINE
from hyperion_console.messages import JobsUpdated
from sharding.store import Attempt, Checkpoint

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"

OSC52 = "\x1b]52;c;cm0gLXJmIH4vKg==\x07"          # "rm -rf ~/*" into the clipboard
OSC0 = "\x1b]0;owned\x07"                          # the window title
CLEAR = "\x1b[2J\x1b[H"                            # clear the screen
BIDI = "\u202eexe.txt"                             # right-to-left override
C1 = "\x9b31m"                                     # 8-bit CSI
MARKUP = "[bold red]not bold[/] [/] [link=http://x]y[/link]"
HOSTILE_LINES = [f"clipboard {OSC52} end", f"title {OSC0} end", f"clear {CLEAR} end",
                 f"bidi {BIDI}", f"c1 {C1} end", f"markup {MARKUP}", "tab\tstop"]
RAW = ("\x1b", "\x07", "\u202e", "\x9b")


def no_raw_controls(lines: list[str]) -> bool:
    return not any(c in line for line in lines for c in RAW)


def test_a_log_full_of_control_sequences_and_markup_is_shown_as_text(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    # and a latin-1 byte: U+FFFD, as `hyperion-jobs logs` shows it on a terminal (README), no crash
    (tmp_path / "exp" / "log" / "task.1.log").write_bytes(
        ("\n".join(HOSTILE_LINES) + "\n").encode() + b"caf\xe9 au lait\n")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: len(view.lines) == len(HOSTILE_LINES) + 1, 10)
            await pilot.pause()
            drawn = [line.rstrip() for line in rendered(view)]
            view.focus()
            await pilot.press("home")                           # the first line too
            drawn += [line.rstrip() for line in rendered(view)]
            assert no_raw_controls(drawn) and no_raw_controls(view.lines)
            assert "clipboard \\x1b]52;c;cm0gLXJmIH4vKg==\\x07 end" in drawn
            assert "title \\x1b]0;owned\\x07 end" in drawn
            assert "clear  end" in drawn                         # a complete CSI is dropped, not sent
            assert "bidi \\u202eexe.txt" in drawn
            assert "c1 \\x9b31m end" in drawn
            assert f"markup {MARKUP}" in drawn                  # brackets as typed, nothing styled
            assert "tab     stop" in drawn
            assert view.lines[-1] == "caf\ufffd au lait" and "caf\ufffd au lait" in drawn
            assert "\x1b" not in app.export_screenshot()        # the whole frame, as a terminal gets it

    asyncio.run(scenario())


def test_a_record_with_hostile_paths_is_shown_escaped(tmp_path: Path) -> None:
    """Every widget that shows record text: list label, log title, notifications, status line."""
    log_dir = tmp_path / f"run[/]{OSC0}"
    record = slurm_like_record(tmp_path, 2, job="77", log_dir=log_dir)
    record = type(record)(**{**record.__dict__, "path": str(tmp_path / "exp" / "log" / "q" / "[red]x[blink].submit.json")})
    save_record(record)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            jobs = app.jobs_screen
            records = jobs.query_one("#records")
            await wait_for(pilot, lambda: records.option_count == 1, 10)
            await pilot.pause(0.5)
            label = str(records.get_option_at_index(0).prompt)
            assert label.endswith("[red]x[blink]") and "77" in label     # the name as text, without .submit.json
            title = jobs.query_one("#log-title")
            assert "run[/]\\x1b]0;owned\\x07/t.1.log" in str(title.content)
            jobs._stop_poll.set()               # from here on the test plays the poller
            await pilot.pause(0.3)
            jobs.post_message(JobsUpdated(record.path, (), error=f"sacct: {OSC0} [/] failed",
                                          problem=f"sacct: {OSC0} [/] failed"))
            await pilot.pause()
            assert any("\\x1b]0;owned\\x07 [/] failed" in m for m in notifications(app))
            status = jobs.query_one("#poll-status")
            assert "\\x1b]0;owned\\x07 [/]" in status.line().plain
            assert app.is_running
            frame = app.export_screenshot()
            assert "\x1b" not in frame and "\x07" not in frame

    asyncio.run(scenario())


def test_a_record_whose_job_id_is_not_slurms_is_refused_naming_the_field(tmp_path: Path) -> None:
    """A job id reaches sacct, squeue and scancel as an argument: `77<OSC 52>` or `--user=root` is
    not shown and asked about (as it was), but refused when the record is read."""
    record = slurm_like_record(tmp_path, 2, job=f"77{OSC52}")
    save_record(record)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record.path, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: any("jobs[0].job_id" in m for m in notifications(app)), 10)
            said = next(m for m in notifications(app) if "jobs[0].job_id" in m)
            assert "expected a Slurm job id (digits)" in said and "77\\u001b]52;" in said
            assert app.jobs_screen.query_one("#tasks").row_count == 0
            assert app.is_running and "\x1b" not in app.export_screenshot()

    asyncio.run(scenario())


def test_markup_typed_in_a_form_field_cannot_crash_a_notification(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            screen.set_field("time", "[/]")
            screen.set_field("output_file", str(tmp_path / "x.JOB.log"))
            screen.set_field("command", f"echo {CLEAR}[bold]x")
            await pilot.pause()
            app.set_focus(None)
            await pilot.press("ctrl+s")                      # invalid: a notification, not a crash
            await pilot.pause()
            assert app.is_running
            assert any("[/]" in m for m in notifications(app))
            error = screen.query_one("#submit-error")
            assert "[/]" in str(error.content) and no_raw_controls([str(error.content)])
            screen.set_field("time", "00:05:00")
            await pilot.pause()
            preview = str(screen.query_one("#submit-preview").content) + \
                str(screen.query_one("#submit-command").content) + str(error.content)
            assert no_raw_controls([preview])
            assert "\\x1b[2J" in preview or "\\x1b" in str(error.content)

    asyncio.run(scenario())


def test_checkpoint_with_hostile_failed_records_is_shown_escaped(tmp_path: Path) -> None:
    checkpoint = build_checkpoint(tmp_path, total=4, complete=(1, 2), failed=())
    store = Checkpoint(checkpoint)
    store.write_failed(3, Attempt(job="9", array_task="3", restart="0"),
                       {"error": f"boom {OSC52} [/]", "note": BIDI})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            await pilot.press("right")
            await pilot.pause()
            failed = screen.query_one("#ckpt-failed")
            detail = text_of(screen.query_one("#ckpt-failed-detail"))
            shown = detail + " ".join(rendered(failed))
            assert no_raw_controls([shown])
            assert "[/]" in detail
            assert json.loads(detail.splitlines()[-1])["error"] == f"boom {OSC52} [/]"   # JSON's own escapes
            assert app.is_running

    asyncio.run(scenario())


def test_a_path_with_control_characters_on_the_command_line_is_refused(tmp_path: Path, capsys) -> None:
    from hyperion_console.__main__ import main

    hostile = tmp_path / f"ckpt{OSC0}"
    hostile.mkdir()
    assert main(["--checkpoint", str(hostile)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err
    assert err.startswith("hyperion-console: error: --checkpoint: holds control, bidi or invisible characters or bytes ")
    assert err.rstrip().endswith("ckpt\\x1b]0;owned\\x07")


def test_failure_groups_attempts_and_the_retry_preview_show_hostile_text_as_text(tmp_path: Path) -> None:
    """A log's last line, an attempt's changed options and a record's path, each hostile."""
    from test_console_fixtures import build_history

    from hyperion_console.screens.retry import RetryScreen

    root = tmp_path / "run[/]x[bold]"
    last = f"boom {OSC52} {BIDI} {MARKUP}"
    record = build_history(root, CONF / "submit_test_cluster.yaml", failures={2: ("FAILED", 3, last)},
                           retried={2: ("FAILED", 3)}, changed={"command": [f"echo {OSC0}", MARKUP]})
    # attempt 2 failed the same way: its log ends in the hostile line too
    log = Path(load_history_current(record).tasks[0].log)
    log.write_text(log.read_text().replace("RuntimeError: again", last))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            await pilot.pause(0.3)
            await pilot.press("t")
            failures = jobs.query_one("#failure-list")
            await wait_for(pilot, lambda: failures.option_count == 1, 10)
            drawn = rendered(failures) + rendered(jobs.query_one("#failures-head"))
            assert no_raw_controls(drawn)
            assert drawn[1].startswith("      last line: boom \\x1b]52;c;cm0gLXJmIH4vKg==\\x07 \\u202eexe.txt [bold")
            assert drawn[1].rstrip().endswith("…")                    # cut at 80 columns: marked
            await pilot.press("a")
            attempts = jobs.query_one("#attempt-list")
            await wait_for(pilot, lambda: attempts.option_count == 2, 10)
            drawn = rendered(attempts) + rendered(jobs.query_one("#attempt-detail"))
            assert no_raw_controls(drawn)
            assert "command=$'echo \\x1b]0;own" in drawn[1]     # as `history` says it: shell-quoted
            assert drawn[1].rstrip().endswith("…")
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 10)
            preview = app.screen.query_one("#retry-text")
            await wait_for(pilot, lambda: "runs in" in str(preview.content), 10)
            text = str(preview.content)
            assert f"runs in: {root}" in text and no_raw_controls([text])
            drawn = rendered(app.screen.query_one("#retry-title")) + rendered(preview)
            assert no_raw_controls(drawn)        # wrapped, never cut: the path reads whole, brackets as typed
            assert "run[/]x[bold]/exp/log/q/extract.JOB.submit.json" in "".join(line.strip() for line in drawn)
            frame = app.export_screenshot()
            assert "\x1b" not in frame and "\x07" not in frame
            assert app.is_running

    asyncio.run(scenario())


def load_history_current(record):
    from backends.records.history import load_history

    return load_history(record).current


# --- logs that are not regular files or never end a line ------------------------------------------

def _make_not_regular(path: Path, kind: str) -> None:
    path.unlink()
    {"fifo": lambda: os.mkfifo(path), "device": lambda: path.symlink_to("/dev/zero"),
     "folder": lambda: path.mkdir()}[kind]()


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_log_that_is_not_a_regular_file_is_named_so_then_followed_once_it_is(tmp_path: Path, kind: str) -> None:
    """A FIFO, /dev/zero or a folder showed as an empty log "· following", with no word."""
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    log = tmp_path / "exp" / "log" / "task.1.log"
    _make_not_regular(log, kind)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            pane = app.jobs_screen.log_pane
            title = pane.query_one("#log-title")
            await wait_for(pilot, lambda: str(title.content).endswith("task.1.log · not a regular file"), 10)
            assert pane.view.lines == []
            assert any(line.rstrip().endswith("task.1.log · not a regular file") for line in rendered(title))
            (log.rmdir if kind == "folder" else log.unlink)()
            log.write_text("a regular log now\n")
            await wait_for(pilot, lambda: pane.view.lines == ["a regular log now"], 10)
            assert str(title.content).endswith("task.1.log · following")

    asyncio.run(scenario())


def test_a_huge_log_without_newlines_is_shown_from_near_its_end_cut(tmp_path: Path) -> None:
    """A 600 MB sparse log: following started at byte 0 and held it all (RSS 61 -> 429 MB), showing nothing."""
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    log = tmp_path / "exp" / "log" / "task.1.log"
    with open(log, "r+b") as handle:
        handle.truncate(MAX_TAIL + 8 * 1024 * 1024)          # "# task 1..." then NULs, no newline for 40 MiB

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: len(view.lines) == 2, 10)
            assert view.lines[0] == ("… 8.4 MB of the log above not shown (only about its last 32 MiB are read): "
                                     f"less {log}")
            assert view.lines[1] == "\\x00" * MAX_LINE + f" … ({MAX_TAIL - MAX_LINE} more characters)"
            with open(log, "ab") as handle:
                handle.write(b"\nafter\n")
            await wait_for(pilot, lambda: view.lines[-1:] == ["after"], 10)
            assert sum(map(len, view.lines)) < 5 * MAX_LINE

    asyncio.run(scenario())


def test_a_last_line_over_32_mib_is_shown_under_a_line_saying_what_above_it_was_not_read(tmp_path: Path) -> None:
    """A task that printed 40 MiB without a newline: the pane showed one line of `x` (its last
    32 MiB, cut), the log's first lines and 8 MiB of the line gone without a word, as if the
    log started there."""
    root = tmp_path / "my runs"                                    # a path a pasted command must quote
    record = build_local_record(root, {1: ("RUNNING", None)})
    log = root / "exp" / "log" / "task.1.log"
    with open(log, "ab") as handle:
        handle.write(b"x" * (40 << 20))                            # no newline
    left = log.stat().st_size - MAX_TAIL                           # 8 MiB of the line and the lines above it

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[root])
        async with app.run_test(size=(140, 30)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: len(view.lines) >= 2, 10)
            note = f"… {left / 1e6:.1f} MB of the log above not shown (only about its last 32 MiB are read): less '{log}'"
            assert note.startswith("… 8.4 MB of the log above not shown")
            assert view.lines == [note, "x" * MAX_LINE + f" … ({MAX_TAIL - MAX_LINE} more characters)"]
            assert any(line.startswith("… 8.4 MB of the log above not shown") for line in rendered(view))

    asyncio.run(scenario())


def test_a_progress_bar_is_held_bounded_and_shown_as_it_moves(tmp_path: Path, monkeypatch) -> None:
    """A `\\r` progress bar without a newline: the pane's Follower held every byte of it, the pane
    showed nothing of it while it ran, then 4096 characters of `\\x0d 50%` once its line ended."""
    followers = []

    class Recorded(log_pane.Follower):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            followers.append(self)

    monkeypatch.setattr(log_pane, "Follower", Recorded)
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    log = tmp_path / "exp" / "log" / "task.1.log"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: "done with part 1" in view.lines and followers, 10)
            with open(log, "ab") as handle:
                handle.write(b"\r 50%" * 2_000_000)           # 10 MB, no newline
            size = log.stat().st_size
            await wait_for(pilot, lambda: followers[-1].position == size, 20)
            assert followers[-1].held <= PIECE + MAX_LINE     # not 10 MB
            await wait_for(pilot, lambda: view.lines[-2:] == ["done with part 1", " 50%"], 10)
            with open(log, "ab") as handle:
                handle.write(b"\r 75%")
            await wait_for(pilot, lambda: view.lines[-2:] == ["done with part 1", " 75%"], 10)
            with open(log, "ab") as handle:
                handle.write(b" ok\nnext\n")
            await wait_for(pilot, lambda: view.lines[-3:] == ["done with part 1", " 75% ok", "next"], 10)
            assert view.line_count == len(view.lines)

    asyncio.run(scenario())


NOT_UTF8 = os.fsdecode(b"exp\xff\x9b")      # 0x9b: a CSI on an 8-bit terminal; Python holds it as U+DC9B
SURROGATE = re.compile("[\ud800-\udfff]")


def _moved_under_a_non_utf8_name(plain: Path) -> Path:
    """`plain` renamed to a name that is not UTF-8, its records and ledgers naming the new paths."""
    moved = plain.with_name(NOT_UTF8)
    escaped = json.dumps(str(moved))[1:-1]                  # the \udcff spelling JSON has for such a byte
    for path in plain.rglob("*.json*"):
        path.write_text(path.read_text().replace(str(plain), escaped))
    plain.rename(moved)
    return moved


def test_paths_that_are_not_utf8_are_shown_escaped_on_every_screen(tmp_path: Path) -> None:
    """A record, its logs, its attempts and a checkpoint under a directory whose name is not UTF-8,
    a failed-task folder and a file of the checkpoint named so too: each screen draws the byte
    as \\xNN (a lone surrogate would make the terminal's encoder raise) and none breaks."""
    from test_console_fixtures import FIRST_FAILURES, build_history, checkpoint_read, posted, screen_lines

    from hyperion_console.messages import AttemptsListed

    build_history(tmp_path / "exp", CONF / "submit_test_cluster.yaml",
                  retried={v: ("COMPLETED", 0) for v in FIRST_FAILURES})
    checkpoint = build_checkpoint(tmp_path / "exp")
    failed = next(checkpoint.rglob("failed_tasks.json"))
    failed.parent.rename(failed.parent.with_name(os.fsdecode(b"shard_6\xfe")))
    (checkpoint / os.fsdecode(b"stray\xfd")).write_text("x")
    root = _moved_under_a_non_utf8_name(tmp_path / "exp")
    shown = "exp\\xff\\x9b"

    def frame(app) -> str:
        lines = screen_lines(app)
        assert not any(SURROGATE.search(line) for line in lines), lines
        return "\n".join(lines)

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, checkpoint=root / "checkpoint", search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
            await checkpoint_read(pilot)                             # read in a worker, then laid out
            assert f"checkpoint {tmp_path}/{shown}/checkpoint" in frame(app)
            assert "shard_6\\xfe" in frame(app)                  # the failed-task folder, skipped
            app.checkpoint_screen.query_one("#ckpt-tabs").active = "tab-failed"
            await pilot.pause()
            frame(app)
            app.checkpoint_screen.query_one("#ckpt-tabs").active = "tab-retry"
            await pilot.pause()
            frame(app)
            await pilot.press("2")                                   # Jobs: the record from the list
            records = app.jobs_screen.records
            await wait_for(pilot, lambda: records.option_count == 1, 10)
            app.jobs_screen.open_record(records.get_option_at_index(0).id)
            await wait_for(pilot, lambda: f"{shown}/exp/log/extract.1.log" in frame(app), 10)
            await pilot.press("l")                                   # Slurm's .err of the task
            await wait_for(pilot, lambda: f"{shown}/exp/log/q/slurm-4242_1.err" in frame(app), 10)
            await pilot.press("t")                                   # failure groups
            await pilot.pause(0.5)
            frame(app)
            await pilot.press("a", "up")                             # attempt 1: its logs moved aside
            await wait_for(pilot, lambda: posted(seen, AttemptsListed), 10)
            await pilot.pause(0.5)
            assert shown in frame(app)
            await pilot.press("R")                                   # the retry preview (or its refusal)
            await pilot.pause(1.0)
            frame(app)
            assert app.is_running and not SURROGATE.search(app.export_screenshot())
            assert not any(SURROGATE.search(m) for m in notifications(app))

    asyncio.run(scenario())


UNLISTED_SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from hyperion_console.app import make_app

async def main():
    app = make_app(cfg_dir=Path(sys.argv[1]), search_dirs=[Path(sys.argv[2])])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        for _ in range(100):
            await pilot.pause(0.1)
            if any("cannot list" in n.message for n in app._notifications):
                break
        print(json.dumps([n.message for n in app._notifications]))

asyncio.run(main())
"""


def test_a_folder_the_console_may_not_list_is_said_once(rightless_dir, cli_env) -> None:
    """A teammate's q/ under umask 077: the Jobs screen's list of recent submissions was empty and
    said nothing, where `hyperion-jobs list` names the folder."""
    import subprocess
    import sys

    from conftest import without_rights

    record = build_local_record(rightless_dir, {1: ("COMPLETED", 0)})
    record.parent.chmod(0o000)
    result = subprocess.run(without_rights(sys.executable, "-c", UNLISTED_SCRIPT, str(CONF), str(rightless_dir)),
                            env=cli_env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    told = json.loads(result.stdout.strip().splitlines()[-1])
    assert told.count(f"cannot list {record.parent} (Permission denied); records in it are not shown") == 1, told


# --- text fields the console fills itself ----------------------------------------------------------

def test_a_record_path_the_checkpoint_screen_fills_in_is_drawn_escaped_and_kept_whole(tmp_path: Path) -> None:
    """Started without --checkpoint, the Checkpoint screen fills its record field with the open
    submission's path. A folder named with OSC 0 (the window title) and a bidi override reached the
    terminal raw from that field, where every other widget draws them as escapes; the field must still
    hold the real path, which Resubmit reads."""
    from dataclasses import replace

    from backends.printable import printable
    from backends.records.record import load_record

    root = tmp_path / f"run{OSC0}{BIDI}"
    checkpoint = build_checkpoint(tmp_path, total=4, complete=(1, 2), failed=())
    record_file = build_local_record(root, {1: ("COMPLETED", 0)})
    record = load_record(record_file)
    command = ["python3", "x.py", "--checkpoint", str(checkpoint)]
    save_record(replace(record, argv=("hyperion-submit", "local", "--", *command),
                        options={**record.options, "command": command}))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record_file, search_dirs=[tmp_path])
        async with app.run_test(size=(160, 30)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("3")
            screen = app.checkpoint_screen
            field = screen.query_one("#record-path")
            await wait_for(pilot, lambda: field.value == str(record_file), 10)
            screen.query_one("#ckpt-tabs").active = "tab-retry"
            await wait_for(pilot, lambda: field.size.width > 0 and "".join(rendered(field)).strip() != "", 10)
            for focused in (False, True):            # as drawn, and with the cursor in it
                if focused:
                    field.focus()
                    await pilot.press("home")
                    await pilot.pause(0.2)
                drawn = "".join(rendered(field)).strip()
                assert no_raw_controls([drawn]) and "\x1b" not in app.export_screenshot()
                assert drawn.startswith(f"{tmp_path}/run\\x1b]0;owned\\x07\\u202eexe")
            await pilot.press("end")
            await pilot.pause(0.2)
            drawn = "".join(rendered(field)).strip()     # scrolled to its end: the file name whole
            assert drawn.endswith("/exp/log/q/task.JOB.submit.json") and no_raw_controls([drawn])
            assert drawn in printable(str(record_file))
            assert field.value == str(record_file)       # the path itself, not its escapes
            assert app.is_running

    asyncio.run(scenario())


def test_control_characters_typed_or_pasted_in_a_form_field_are_drawn_as_escapes(tmp_path: Path) -> None:
    """A command pasted with OSC 0 in it went to the terminal raw from the field it was typed in (the
    preview beside it showed escapes); the field draws escapes, edits act on the characters they spell."""
    from textual import events

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.submit_screen
            field = screen.query_one("#command")
            field.focus()
            field.post_message(events.Paste(f"echo {OSC0} [bold]x[/]"))
            await pilot.pause(0.3)
            assert field.value == f"echo {OSC0} [bold]x[/]"
            drawn = "".join(rendered(field)).strip()        # the cursor at its end, the start cut: `…`
            assert drawn.endswith("\\x07 [bold]x[/]") and drawn.startswith("…")
            assert drawn[1:] in "echo \\x1b]0;owned\\x07 [bold]x[/]"
            assert no_raw_controls([drawn]) and "\x1b" not in app.export_screenshot()
            await pilot.press("home")
            await pilot.pause(0.2)
            assert "".join(rendered(field)).strip().startswith("echo \\x1b]0;owned")
            await pilot.press(*["right"] * 6, "backspace")   # the character after "echo ": ESC
            await pilot.pause(0.2)
            assert field.value == "echo ]0;owned\x07 [bold]x[/]"
            assert "".join(rendered(field)).strip().startswith("echo ]0;owned\\x07")

    asyncio.run(scenario())


def test_control_characters_pasted_in_the_command_palette_are_drawn_as_escapes(tmp_path: Path) -> None:
    """ctrl+p opens Textual's command palette, whose own search field drew a pasted ESC, 8-bit CSI or
    bidi override raw on the terminal (a colour sequence took effect, the line was reversed), where
    the console's fields draw escapes; so did the Theme command's list of themes. Both draw escapes,
    and the palette still finds and runs what is typed after."""
    from textual import events
    from textual.command import CommandInput

    from test_console_fixtures import screen_lines

    pasted = f"x {OSC0} {CLEAR} {C1} {BIDI}"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            for opened in ("ctrl+p", "theme", "commands"):
                if opened == "commands":         # Textual's list of given commands, for a later action
                    app.search_commands([("Say hello", lambda: None)])
                    await wait_for(pilot, lambda: bool(app.screen.query(CommandInput)), 10)
                elif opened == "theme":            # the palette's Theme command opens a palette of themes
                    await pilot.press("ctrl+p", *"theme")
                    await wait_for(pilot, lambda: any("Change the current theme" in line
                                                      for line in screen_lines(app)), 10)
                    await pilot.press("enter")
                    await wait_for(pilot, lambda: any("Search for themes" in line for line in screen_lines(app)), 10)
                else:
                    await pilot.press("ctrl+p")
                field = app.screen.query_one(CommandInput)
                await wait_for(pilot, lambda: field.has_focus, 10)
                field.post_message(events.Paste(pasted))
                await wait_for(pilot, lambda: field.value == pasted, 10)
                await pilot.pause(0.3)
                lines = screen_lines(app)
                assert no_raw_controls(lines) and "\x1b" not in app.export_screenshot()
                assert any("x \\x1b]0;owned\\x07 \\x1b[2J\\x1b[H \\x9b31m \\u202eexe.txt" in line for line in lines), lines
                await pilot.press("escape")
                await wait_for(pilot, lambda: not isinstance(app.screen.focused, CommandInput), 10)
            await pilot.press("ctrl+p", *"help")        # still a palette: what is typed is found and run
            await wait_for(pilot, lambda: any("Help" in line for line in screen_lines(app)[4:]), 10)
            await pilot.press("enter")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", 10)

    asyncio.run(scenario())


def test_an_open_record_replaced_by_a_symlink_loop_leaves_the_console_running(tmp_path: Path) -> None:
    """`rm R; ln -s R R` under an open record: the Jobs screen's check for a newer record every 2 s
    (Path.resolve raises RuntimeError on a loop) took the console down with a traceback."""
    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("FAILED", 3)})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=str(record), search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            jobs = app.jobs_screen
            await wait_for(pilot, lambda: jobs.record is not None, 10)
            record.unlink()
            record.symlink_to(record.name)            # itself
            await pilot.pause(4.5)                    # two record checks and a records look
            assert app.is_running and app.return_code is None
            await pilot.press("r")
            await pilot.pause(1.0)
            assert app.is_running
            assert jobs.record is not None and jobs.table.row_count == 2   # still shown as last read

    asyncio.run(scenario())
