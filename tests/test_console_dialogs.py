"""Every dialog of the console in a split tmux pane (60x20) and at 80x24: the dialog, its text and its
buttons lie on the screen, long text wraps inside it (scrolling to its end shows the end), and the
buttons are reached by keyboard."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_console_fixtures import (build_history, checkpoint_read, confirmation, posted, rendered, screen_lines,
                                   wait_for)
from textual.geometry import Region
from textual.widgets import Button, Input

from hyperion_console.app import make_app
from hyperion_console.messages import RetryPreviewed
from hyperion_console.screens.confirm import ConfirmScreen
from hyperion_console.screens.help import HelpScreen
from hyperion_console.screens.retry import RetryScreen

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
SIZES = [(60, 20), (80, 24)]

pytestmark = pytest.mark.usefixtures("slurm_knows_none_of_these_jobs")   # see conftest


def on_screen(app, text: str) -> bool:
    return any(text in line for line in screen_lines(app))


def assert_fits(app, dialog_id: str) -> None:
    """The dialog lies on the screen, and each of its buttons inside its border, label and all."""
    whole = Region(0, 0, *app.size)
    dialog = app.screen.query_one(dialog_id)
    assert whole.contains_region(dialog.region), (dialog.region, app.size)
    for button in dialog.query(Button):
        assert dialog.content_region.contains_region(button.region), (button.id, button.region)
        assert on_screen(app, str(button.label)), (str(button.label), screen_lines(app))


async def assert_confirmation_fits(pilot, title: str) -> None:
    """The confirmation on top fits, shows its title, and its whole detail can be scrolled to."""
    await confirmation(pilot, "#confirm-dialog", "#confirm-detail Static")
    await pilot.pause()
    assert_fits(pilot.app, "#confirm-dialog")
    assert on_screen(pilot.app, title)
    await assert_text_reachable(pilot, "#confirm-detail")


async def assert_text_reachable(pilot, scroll_id: str) -> None:
    """The text in a scrolling box wraps at the box's width; scrolled to its end, its last line shows."""
    scroll = pilot.app.screen.query_one(scroll_id)
    assert scroll.max_scroll_x == 0, scroll.virtual_size
    lines = [line.strip() for line in rendered(scroll.query_one("Static")) if line.strip()]
    scroll.scroll_end(animate=False)
    await pilot.pause()
    assert on_screen(pilot.app, lines[-1]), (lines[-1], screen_lines(pilot.app))


@pytest.mark.parametrize("size", SIZES)
def test_retry_preview_and_its_confirmation_fit_a_split_pane(tmp_path: Path, size: tuple[int, int]) -> None:
    """At 60x20 the 78-column preview was cut: the Retry button and the right-hand fields off the
    screen, the command cut at the pane's edge."""
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=size, message_hook=seen.append) as pilot:
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 10)
            await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
            await pilot.pause()
            assert_fits(app, "#retry-dialog")
            assert on_screen(app, "Retry tasks of extract.JOB.submit.json")
            assert on_screen(app, "Retry 3 task(s)…")
            dialog = app.screen.query_one("#retry-dialog")
            for field in app.screen.query(Input):        # each field and its hint ("| auto") whole
                assert dialog.content_region.contains_region(field.region), field.id
                assert field.region.width >= len(field.placeholder), (field.id, field.region)
            await assert_text_reachable(pilot, "#retry-preview")
            await pilot.press("shift+tab")               # from the first field back round to Retry
            assert app.screen.focused.id == "retry-run"
            await pilot.press("enter")
            assert isinstance(app.screen, ConfirmScreen)
            await assert_confirmation_fits(pilot, "Retry 3 task(s) as attempt 2?")
            await pilot.press("shift+tab")
            assert app.screen.focused.id == "confirm-yes"
            await pilot.press("n")
            assert isinstance(app.screen, RetryScreen)

    asyncio.run(scenario())


@pytest.mark.parametrize("size", SIZES)
def test_submit_confirmation_fits_a_split_pane(tmp_path: Path, size: tuple[int, int]) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=size) as pilot:
            screen = app.submit_screen
            for name, value in {"backend": "local", "array": "JOB=1:4",
                                "output_file": str(tmp_path / "exp" / "log" / "extract.JOB.log"),
                                "command": "hyperion-extract --part JOB --num-parts 4"}.items():
                screen.set_field(name, value)
            await pilot.pause()
            await pilot.press("ctrl+s")
            assert isinstance(app.screen, ConfirmScreen)
            await assert_confirmation_fits(pilot, "Submit 4 task(s) to local")
            await pilot.press("n")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
            assert not (tmp_path / "exp").exists()

    asyncio.run(scenario())


@pytest.mark.parametrize("size", SIZES)
def test_resubmit_confirmation_fits_a_split_pane(tmp_path: Path, size: tuple[int, int]) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, demo=True, demo_dir=tmp_path / "demo", search_dirs=[])
        async with app.run_test(size=size) as pilot:
            await checkpoint_read(pilot)
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await assert_confirmation_fits(pilot, "Resubmit 2 shard(s) to local")
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)

    asyncio.run(scenario())


@pytest.mark.parametrize("size", SIZES)
def test_help_fits_a_split_pane(tmp_path: Path, size: tuple[int, int]) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=size) as pilot:
            await pilot.press("escape", "question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.pause()
            assert_fits(app, "#help-dialog")
            assert on_screen(app, "Hyperion Console — keys")
            assert on_screen(app, "escape closes")
            await assert_text_reachable(pilot, "#help-dialog VerticalScroll")

    asyncio.run(scenario())


def test_a_confirmation_title_wider_than_the_pane_wraps() -> None:
    """Resubmit names up to 40 characters of shards in its title: at 60 columns its end was cut."""
    shards = "1-3,5,7,9,11,13,15,17,19,21,23,25,27,29,…"

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[])
        async with app.run_test(size=(60, 20)) as pilot:
            app.push_screen(ConfirmScreen(f"Resubmit shards {shards}?", "hyperion-submit ...", yes="Resubmit"))
            await confirmation(pilot, "#confirm-dialog")
            await pilot.pause()
            assert_fits(app, "#confirm-dialog")
            assert on_screen(app, f"{shards}?"), screen_lines(app)

    asyncio.run(scenario())


@pytest.mark.parametrize("size", SIZES)
def test_the_confirmation_footer_lists_its_own_keys(tmp_path: Path, size: tuple[int, int]) -> None:
    """The footer under a confirmation was the Submit screen's (`^s Submit job 1 Submit...`, keys that
    do nothing while it is up); it now lists y / n / escape, and each answers as it says."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=size) as pilot:
            app.submit_screen.set_field("output_file", str(tmp_path / "t.JOB.log"))
            app.submit_screen.set_field("command", "true")
            await pilot.pause()
            for key, answer in (("y", True), ("n", False), ("escape", False)):
                answers: list = []
                app.push_screen(ConfirmScreen("Submit to slurm?", "hyperion-submit ...", yes="Submit"),
                                answers.append)
                await confirmation(pilot, "#confirm-dialog")
                await pilot.pause()
                footer = screen_lines(app)[-1].split()
                assert footer[:6] == ["y", "Yes", "n", "No", "esc", "Cancel"], footer
                assert "Submit" not in footer and "^s" not in footer
                assert_fits(app, "#confirm-dialog")
                await pilot.press(key)
                await pilot.pause()
                assert answers == [answer] and not isinstance(app.screen, ConfirmScreen)

    asyncio.run(scenario())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_the_retry_preview_and_the_help_footers_list_their_own_keys(tmp_path: Path, size: tuple[int, int]) -> None:
    """Under the retry preview and the help the footer was the Jobs screen's (`f Filter v Views / Find
    o Records R Retry ... q Quit`): in the preview q typed into the values field, in the help q closed
    it and f did nothing, and neither listed its own keys. Each now lists exactly its own, and each
    does what it says."""
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")

    def footer(app) -> list[str]:
        return screen_lines(app)[-1].split()

    async def open_retry(pilot, seen: list) -> None:
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, RetryScreen), 10)
        await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
        await pilot.pause()

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=size, message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: "Filter" in footer(app), 10)       # the Jobs screen's own
            await open_retry(pilot, seen)
            retry = app.screen
            assert footer(app) == ["tab", "Next", "field", "^r", "Retry", "esc", "Close"], footer(app)
            await pilot.press("tab")                      # tab: the next field
            assert retry.focused is retry.field("state")
            await pilot.press("shift+tab", "q")           # q is typed, as the footer no longer says it quits
            assert retry.field("values").value == "q" and app.screen is retry
            assert footer(app) == ["tab", "Next", "field", "^r", "Retry", "esc", "Close"], footer(app)
            retry.set_field("values", "")
            await wait_for(pilot, lambda: not retry.current.error and retry._planned == retry.fields(), 10)
            await pilot.press("ctrl+r")                   # ^r: asks to retry
            await confirmation(pilot, "#confirm-dialog")
            await pilot.press("n")
            await pilot.pause()
            assert app.screen is retry
            await pilot.press("shift+tab")                # on the Retry button, the same keys
            assert retry.focused.id == "retry-run", retry.focused
            assert footer(app) == ["tab", "Next", "field", "^r", "Retry", "esc", "Close"], footer(app)
            await pilot.press("escape")                   # esc: closes
            await pilot.pause()
            assert not isinstance(app.screen, RetryScreen)
            for key in ("escape", "question_mark", "q"):  # each key the help's footer names closes it
                await pilot.press("question_mark")
                await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 10)
                await pilot.pause()
                assert footer(app) == ["esc/?/q", "Close"], footer(app)
                await pilot.press(key)
                await pilot.pause()
                assert not isinstance(app.screen, HelpScreen), key
                assert app.is_running
            assert "Filter" in footer(app)               # the Jobs screen's again, once they are closed

    asyncio.run(scenario())


def test_a_notification_does_not_cover_a_confirmation_at_80x24(tmp_path: Path) -> None:
    """R's refusal stayed over the `x` dialog opened after it (the toasts lie on the dialog's screen),
    covering its text and buttons. While a confirmation is up the toasts are not shown; they are again
    once it is answered (if not timed out)."""
    from backends.records.record import JobRecord, SubmitRecord, TaskRecord, save_record
    from backends.states import JobState, TaskState
    from hyperion_console.messages import JobsUpdated

    tasks = tuple(TaskRecord(value=i, job_id="4242", array_task_id=i, log=str(tmp_path / f"t.{i}.log"),
                             slurm_out=None, slurm_err=None) for i in (1, 2))
    record = SubmitRecord(path=str(tmp_path / "q" / "t.JOB.submit.json"), backend="slurm",
                          argv=("hyperion-submit",), cfg=str(CONF / "submit_test_cluster.yaml"), options={},
                          script=None, array_name="JOB", jobs=(JobRecord("4242", 0, "1-2"),), tasks=tasks,
                          submitted_at="2026-01-01T00:00:00", cwd=str(tmp_path))

    save_record(record)

    def toast_on_screen(app) -> bool:
        """R's refusal shown as a toast: its lines (right of the toast's `▌` edge) read together, since
        where they wrap depends on the length of the record's path (a longer temporary folder)."""
        said = " ".join(line.split("▌ ", 1)[1].strip() for line in screen_lines(app) if "▌ " in line)
        return "still has 2 live task(s)" in said

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, tuple(
                TaskState("4242", i, JobState.RUNNING, None, None, 3.0, "vm") for i in (1, 2))))
            await pilot.pause()
            jobs.query_one("#tasks").focus()
            await pilot.press("R")                       # refused (tasks still run): a toast
            await wait_for(pilot, lambda: toast_on_screen(app), 5)
            await pilot.press("x")
            assert isinstance(app.screen, ConfirmScreen)
            await confirmation(pilot, "#confirm-dialog")
            await pilot.pause(0.3)
            lines = screen_lines(app)
            dialog = app.screen.query_one("#confirm-dialog").region
            rows = [line[dialog.x:dialog.right] for line in lines[dialog.y:dialog.bottom]]
            assert all(row[0] == row[-1] == "█" for row in rows), rows    # its border whole: nothing over it
            assert "Cancel with scancel?" in rows[1] and "scancel 4242_1" in rows[3]
            assert "Cancel" in rows[-2] and "No" in rows[-2]
            assert not any("live task" in row or "retry" in row for row in rows), rows
            await pilot.press("n")
            await wait_for(pilot, lambda: toast_on_screen(app), 5)   # not lost: shown again
            assert not isinstance(app.screen, ConfirmScreen)

    asyncio.run(scenario())


@pytest.mark.parametrize("dialog", ["retry", "help"])
def test_a_notification_does_not_cover_the_retry_preview_or_the_help_at_80x24(tmp_path: Path,
                                                                             dialog: str) -> None:
    """The retry preview (78x22) and the help (76x22) leave no room for a toast at 80x24: one shown
    before them (here a poll problem) lay over their fields, buttons and keys. As for a confirmation,
    no toast shows while they are up, and those not timed out show again once they close."""
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")
    toast = "squeue did not answer in 10 s; the states shown are from 12:00:00"

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), notifications=True, message_hook=seen.append) as pilot:
            await pilot.pause(0.3)
            app.notify(toast, title="poll", severity="warning", timeout=60)
            await wait_for(pilot, lambda: on_screen(app, "squeue did not answer"), 5)
            if dialog == "retry":
                await pilot.press("R")
                await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 10)
                await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
                box, texts = "#retry-dialog", ("Retry tasks of extract.JOB.submit.json", "Retry 3 task(s)…")
            else:
                await pilot.press("question_mark")
                await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 10)
                box, texts = "#help-dialog", ("Hyperion Console — keys", "escape closes")
            await pilot.pause(0.3)
            lines = screen_lines(app)
            region = app.screen.query_one(box).region
            rows = [line[region.x:region.right] for line in lines[region.y:region.bottom]]
            assert all(row[0] == row[-1] == "█" for row in rows), rows      # its border whole
            assert all(any(text in row for row in rows) for text in texts), rows
            assert not any("squeue" in line or "did not answer" in line for line in lines), lines
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, (RetryScreen, HelpScreen)), 5)
            await wait_for(pilot, lambda: on_screen(app, "squeue did not answer"), 5)   # not lost

    asyncio.run(scenario())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.parametrize("dialog", ["submit-confirmation", "retry", "retry-confirmation", "help"])
def test_no_toast_of_the_screen_below_shows_beside_a_dialog_at_any_size(tmp_path: Path, dialog: str,
                                                                        size: tuple[int, int]) -> None:
    """At 100x30 and larger a toast shown before a dialog opened stayed beside it, on the screen below
    (the CSS hid only the dialog's own toasts; at 80x24 the dialog happened to cover it). While a
    confirmation, the retry preview or the help is up no toast shows, whatever the size; those not
    timed out show again once the dialogs are closed."""
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml")
    toast = "squeue did not answer in 10 s"

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=size, notifications=True, message_hook=seen.append) as pilot:
            await pilot.pause(0.3)
            if dialog == "submit-confirmation":
                await pilot.press("1")
                for name, value in {"backend": "local", "array": "JOB=1:4",
                                    "output_file": str(tmp_path / "exp" / "log" / "extract.JOB.log"),
                                    "command": "hyperion-extract --part JOB --num-parts 4"}.items():
                    app.submit_screen.set_field(name, value)
                await pilot.pause()
            app.notify(toast, title="poll", severity="warning", timeout=60)
            await wait_for(pilot, lambda: on_screen(app, toast), 5)
            if dialog == "submit-confirmation":
                await pilot.press("ctrl+s")
                await confirmation(pilot, "#confirm-dialog", "#confirm-buttons Button")
            elif dialog.startswith("retry"):
                await pilot.press("R")
                await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 10)
                await wait_for(pilot, lambda: posted(seen, RetryPreviewed), 10)
                if dialog == "retry-confirmation":
                    await pilot.press("ctrl+r")
                    await confirmation(pilot, "#confirm-dialog", "#confirm-buttons Button")
            else:
                await pilot.press("question_mark")
                await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 10)
            await pilot.pause(0.3)
            lines = screen_lines(app)
            assert not any("did not answer" in line for line in lines), "\n".join(lines)
            while isinstance(app.screen, (ConfirmScreen, RetryScreen, HelpScreen)):
                await pilot.press("escape")
                await pilot.pause()
            await wait_for(pilot, lambda: on_screen(app, toast), 5)        # not lost: shown again

    asyncio.run(scenario())


@pytest.mark.parametrize("size", SIZES)
def test_the_arrow_and_page_keys_scroll_a_confirmation_longer_than_its_box(tmp_path: Path,
                                                                         size: tuple[int, int]) -> None:
    """A Resubmit of 30 shards in 5 windows at 80x24: the confirmation showed its command up to
    `--checkpoint ck`, the rest (the other arguments, each sbatch argv) under the box, and down, page
    down and end did nothing with the focus on its buttons (where it opens): only tab to the text,
    which nothing says, or the mouse reached them. They now scroll the text from the buttons too."""
    detail = "\n".join(f"sbatch argv {n}: sbatch --array=0-7 --partition=cpu /exp/log/q/shard.SHARD.sh"
                       for n in range(1, 41))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=size) as pilot:
            app.push_screen(ConfirmScreen("Resubmit 30 shard(s) to slurm in 5 sbatch calls?", detail,
                                          yes="Resubmit"))
            await confirmation(pilot, "#confirm-dialog", "#confirm-detail Static")
            await pilot.pause()
            scroll = app.screen.query_one("#confirm-detail")
            assert isinstance(app.focused, Button) and scroll.max_scroll_y > 0
            assert not on_screen(app, "sbatch argv 40:")
            await pilot.press("down")
            await pilot.pause()
            assert scroll.scroll_y == 1, scroll.scroll_y
            await pilot.press("pagedown")
            await pilot.pause()
            assert scroll.scroll_y > 1 + 1, scroll.scroll_y
            await pilot.press("end")
            await pilot.pause()
            assert on_screen(app, "sbatch argv 40:"), screen_lines(app)
            await pilot.press("home")
            await pilot.pause()
            assert scroll.scroll_y == 0 and on_screen(app, "sbatch argv 1:")
            assert isinstance(app.screen, ConfirmScreen) and isinstance(app.focused, Button)   # nothing answered

    asyncio.run(scenario())
