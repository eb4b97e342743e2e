"""Moving around: task keys, go to a value, search, filters, the state map, records, Escape."""
from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from test_console_fixtures import (
    build_checkpoint,
    build_local_record,
    notifications,
    one_read,
    posted,
    rendered,
    slurm_like_record,
    table_column,
    wait_for,
)

import hyperion_console.widgets.record_list as record_list
from backends.states import JobState, TaskState
from hyperion_console.app import make_app
from hyperion_console.messages import FilterChanged, JobsUpdated, RecordOpened, RecordsListed, TaskHighlighted
from hyperion_console.screens.checkpoint import CheckpointScreen
from hyperion_console.screens.submit import SubmitScreen
from hyperion_console.task_index import FILTERS

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
N = 500


def mixed_states(n: int) -> tuple[TaskState, ...]:
    """Every 10th task FAILED on node07, the next RUNNING, 400-500 PENDING, the rest COMPLETED."""
    out = []
    for i in range(1, n + 1):
        if i > 400:
            out.append(TaskState("4242", i, JobState.PENDING))
        elif i % 10 == 0:
            out.append(TaskState("4242", i, JobState.FAILED, 3, None, 5.0, "node07"))
        elif i % 10 == 1:
            out.append(TaskState("4242", i, JobState.RUNNING, None, None, 5.0, "node02"))
        else:
            out.append(TaskState("4242", i, JobState.COMPLETED, 0, None, 5.0, "node01"))
    return tuple(out)


async def open_big(pilot, tmp_path: Path):
    app = pilot.app
    await pilot.press("escape", "2")
    jobs = app.jobs_screen
    record = slurm_like_record(tmp_path, N)
    jobs.show_record(record)
    jobs.post_message(JobsUpdated(record.path, mixed_states(N)))
    await pilot.pause()
    return jobs, jobs.query_one("#tasks")


def highlighted_values(seen: list) -> list:
    return [m.task.value for m in posted(seen, TaskHighlighted) if m.task is not None]


def test_task_table_keys_move_the_cursor_and_the_screen_follows(tmp_path: Path) -> None:
    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs, table = await open_big(pilot, tmp_path)
            assert table.has_focus
            page = table.page_rows
            await pilot.press("end")
            assert table.selected_task().value == N
            assert rendered(table)[-1].lstrip().startswith(f"{N} 4242_{N}")     # scrolled to it
            await pilot.press("home")
            assert table.selected_task().value == 1
            assert rendered(table)[1].lstrip().startswith("1 4242_1 ")
            await pilot.press("G", "g", "pagedown")
            assert table.selected_task().value == 1 + page
            await pilot.press("pagedown", "pageup", "j", "j", "k")
            assert table.selected_task().value == 2 + page
            await pilot.press("ctrl+f", "ctrl+b")
            assert table.selected_task().value == 2 + page
            log_title = str(jobs.query_one("#log-title").content)
            assert log_title.startswith("log [log]: ") and f"t.{2 + page}.log" in log_title
        assert highlighted_values(seen)[-1] == 2 + page and N in highlighted_values(seen)

    asyncio.run(scenario())


def test_go_to_a_value_and_search_the_tasks(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs, table = await open_big(pilot, tmp_path)
            find = jobs.query_one("#find")
            await pilot.press("colon", *"250", "enter")
            assert table.selected_task().value == 250 and table.has_focus and not find.display
            await pilot.press("slash", *"node07", "enter")
            assert table.selected_task().value == 260
            await pilot.press("n", "n")
            assert table.selected_task().value == 280
            await pilot.press("N")
            assert table.selected_task().value == 270
            await pilot.press("colon", *"9999", "enter")          # no such task: told, cursor stays
            assert table.selected_task().value == 270
            await pilot.press("colon", *"abc", "escape")          # escape: nothing happens
            assert table.selected_task().value == 270 and table.has_focus and not find.display
            jobs.set_filter("FAILED")
            await pilot.pause()
            await pilot.press("colon", *"401", "enter")           # hidden by the filter: shown anyway
            assert jobs.filter == "all" and table.selected_task().value == 401

    asyncio.run(scenario())


def test_filters_include_not_completed_unknown_not_run_and_lost(tmp_path: Path) -> None:
    assert {"not completed", "UNKNOWN", "NOT_RUN", "LOST"} <= set(FILTERS)

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs, table = await open_big(pilot, tmp_path)
            jobs.post_message(JobsUpdated(jobs.record_path, (TaskState("4242", 3, JobState.LOST),)))
            await pilot.pause()
            await pilot.press("f")
            assert jobs.filter == "not completed"
            values = [int(v) for v in table_column(table, "value")]
            assert values == [i for i in range(1, N + 1) if i > 400 or i % 10 in (0, 1) or i == 3]
            await pilot.press("F", "F")                             # backwards: all, then LOST
            assert jobs.filter == "LOST" and table_column(table, "value") == ["3"]
            jobs.set_filter("UNKNOWN")
            await pilot.pause()
            assert table.row_count == 0
            assert str(jobs.query_one("#log-title").content) == "log [log]: (select a task)"
        changes = [(m.name, m.shown) for m in posted(seen, FilterChanged)]
        assert changes[:3] == [("not completed", 181), ("all", N), ("LOST", 1)]

    asyncio.run(scenario())


def test_filter_keys_in_one_burst_end_on_the_last_filter_and_stay(tmp_path: Path) -> None:
    """`f f f` read in one burst (tmux send-keys, a fast typist) left the filter flipping between
    filters for ever, using a whole core: the selector's Changed for each key came after the next
    key and set the filter back, and that Changed did the same."""
    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("FAILED", 2), 3: ("NOT_RUN", None)})

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: app.jobs_screen.table.row_count == 3, 10)
            jobs = app.jobs_screen
            for _ in range(3):
                jobs.action_cycle_filter()         # three keys handled before any message
            await pilot.pause(1.0)
            before = len(posted(seen, FilterChanged))
            await pilot.pause(1.0)
            assert len(posted(seen, FilterChanged)) == before == 3
            assert jobs.filter == FILTERS[3] and jobs.query_one("#state-filter").value == FILTERS[3]

    asyncio.run(scenario())


def test_a_log_search_not_found_says_the_pane_holds_the_logs_last_lines(tmp_path: Path) -> None:
    """`/00100000` in a 700,000-line log said `not found: 00100000`, a line the file holds above the
    last lines the pane keeps: the user read the log as lacking it."""
    record = build_local_record(tmp_path, {1: ("FAILED", 2)})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            await wait_for(pilot, lambda: jobs.log_pane.view.line_count == 3, 10)
            jobs.find("log", "part 9", True)
            await pilot.pause()
            assert notifications(app)[-1] == "not found in the log pane's 3 line(s) (it keeps a log's last lines): part 9"
            jobs.find("log", "part 1", True)
            await pilot.pause()
            assert jobs.log_pane.view.match_line == 1

    asyncio.run(scenario())


def test_local_not_run_tasks_have_their_own_filter(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("FAILED", 2), 3: ("NOT_RUN", None)})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            table = jobs.query_one("#tasks")
            await wait_for(pilot, lambda: "FAILED" in table_column(table, "state"), 10)
            jobs.set_filter("NOT_RUN")
            await pilot.pause()
            assert table_column(table, "value") == ["3"]

    asyncio.run(scenario())


def test_state_map_cell_jumps_to_its_task(tmp_path: Path) -> None:
    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs, table = await open_big(pilot, tmp_path)
            jobs.set_filter("RUNNING")
            await pilot.pause()
            await pilot.press("m")
            state_map = jobs.query_one("#state-map")
            assert state_map.has_focus and jobs.map_shown
            legend = str(jobs.query_one("#map-legend").content)
            assert " R  RUNNING 40" in legend and " F  FAILED 40" in legend and " P  PENDING 100" in legend
            first_line = rendered(state_map)[0]
            per_line = state_map.per_line
            assert first_line.startswith("  1 RCCCCCCCCFRCCCCCCCCF")
            assert rendered(state_map)[1].startswith(f"{1 + per_line:>3} ")
            await pilot.press("right", "right", "down")        # onto a COMPLETED task
            assert state_map.selected_key() == ("4242", 3 + per_line)
            assert "t." + str(3 + per_line) + ".log" in str(jobs.query_one("#log-title").content)
            await pilot.press("enter")                          # hidden by RUNNING: filter goes
            assert not jobs.map_shown and table.has_focus and jobs.filter == "all"
            assert table.selected_task().value == 3 + per_line
            await pilot.press("m")
            await pilot.click("#state-map", offset=(4 + 9, 0))  # the cell of value 10 (FAILED)
            await pilot.pause()
            assert not jobs.map_shown and table.selected_task().value == 10
        assert highlighted_values(seen)[-1] == 10

    asyncio.run(scenario())


def test_record_keys_choose_submissions(tmp_path: Path) -> None:
    first = build_local_record(tmp_path / "a", {1: ("COMPLETED", 0)})
    second = build_local_record(tmp_path / "b", {1: ("FAILED", 1), 2: ("COMPLETED", 0)})

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, record=first, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            jobs = app.jobs_screen
            records = jobs.query_one("#records")
            await wait_for(pilot, lambda: records.option_count == 2, 10)
            order = [records.get_option_at_index(i).id for i in range(2)]
            step = 1 if order.index(str(first)) == 0 else -1
            await pilot.press("right_square_bracket" if step == 1 else "left_square_bracket")
            await wait_for(pilot, lambda: jobs.record_path == str(second), 10)
            await wait_for(pilot, lambda: records.current == str(second), 10)
            labels = [str(records.get_option_at_index(i).prompt) for i in range(2)]
            assert labels[order.index(str(second))].startswith("▸ local")
            await pilot.press("o")
            assert records.has_focus
            await pilot.press("up" if step == 1 else "down", "enter")
            await wait_for(pilot, lambda: jobs.record_path == str(first), 10)
        assert [m.record_path for m in posted(seen, RecordOpened)] == [str(first), str(second), str(first)]
        assert len(posted(seen, RecordsListed)) >= 3        # read again after each opening

    asyncio.run(scenario())



def test_a_slow_listing_of_an_earlier_opening_does_not_mark_that_record_open(tmp_path: Path, monkeypatch) -> None:
    """The listing started when the first record opened ends after the one for the second."""
    first = build_local_record(tmp_path / "a", {1: ("COMPLETED", 0)})
    second = build_local_record(tmp_path / "b", {1: ("FAILED", 1)})
    real = record_list.find_records
    held, switched, release = threading.Event(), threading.Event(), threading.Event()

    def listing(dirs, **options):
        if not switched.is_set():     # a listing made while the first record is open: held back
            held.set()
            release.wait(10)
            time.sleep(0.2)
        return real(dirs, **options)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=first, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs = app.jobs_screen
            records = jobs.query_one("#records")
            await wait_for(pilot, held.is_set, 10)
            switched.set()
            jobs.open_record(str(second))
            await wait_for(pilot, lambda: records.current == str(second), 10)
            release.set()                 # the held listing ends now, naming the first record
            await pilot.pause(1.0)
            assert records.current == str(second)
            assert str(records.get_option_at_index(records.paths.index(str(second))).prompt).startswith("▸")

    monkeypatch.setattr(record_list, "find_records", listing)
    asyncio.run(scenario())


def test_escape_leaves_every_text_field(tmp_path: Path) -> None:
    checkpoint = build_checkpoint(tmp_path)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.checkpoint_screen
            await pilot.press("right", "right")                 # Retry tab
            field = screen.query_one("#max-array-size")
            field.focus()
            await pilot.press("1")
            assert field.value == "1"                           # a field takes digits...
            await pilot.press("escape")
            assert not field.has_focus
            await pilot.press("left")                           # ...after escape the tab bar has the keys
            assert screen.query_one("#ckpt-tabs").active == "tab-failed"
            screen.query_one("#record-path").focus()
            await pilot.press("escape", "1")
            assert isinstance(app.screen, SubmitScreen) and field.value == "1"
            await pilot.press("2", "slash", "x")                # the Jobs find bar
            jobs = app.jobs_screen
            assert jobs.query_one("#find").value == "x"
            await pilot.press("escape", "3")
            assert isinstance(app.screen, CheckpointScreen)

    asyncio.run(scenario())


def test_escape_on_the_checkpoint_screen_reaches_the_tab_bar_from_the_resubmit_button(tmp_path: Path) -> None:
    """ctrl+r takes the focus from a field to the Resubmit button (so keys typed behind it change
    nothing), and it stayed there: back on the screen after the Resubmit, escape, left and right did
    nothing, and the Coverage and Failed tabs were reached only by shift+tab, which nothing says.
    Escape from the button (or the plan, or the failed-task table) lands on the tab bar as from a field."""
    checkpoint = build_checkpoint(tmp_path)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=checkpoint, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.checkpoint_screen
            tabs = screen.query_one("#ckpt-tabs")
            await pilot.press("right", "right")                 # Retry tab
            screen.query_one("#max-array-size").focus()
            await pilot.press("ctrl+r")
            await pilot.pause()
            if not isinstance(app.screen, CheckpointScreen):    # a confirmation: no
                await pilot.press("n")
                await pilot.pause()
            assert app.focused is screen.query_one("#resubmit")
            await pilot.press("escape", "left")
            assert tabs.active == "tab-failed", tabs.active
            screen.query_one("#ckpt-failed").focus()
            await pilot.press("escape", "left")
            assert tabs.active == "tab-coverage", tabs.active

    asyncio.run(scenario())


def test_focus_is_visible_on_the_task_table_and_the_log(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs, table = await open_big(pilot, tmp_path)
            title = jobs.query_one("#log-title")
            header_focused = table.get_component_rich_style("task-table--header")
            title_blurred = title.rich_style
            jobs.query_one("#log").focus()
            await pilot.pause()
            assert table.get_component_rich_style("task-table--header") != header_focused
            assert title.rich_style.bgcolor != title_blurred.bgcolor

    asyncio.run(scenario())


def test_focus_is_visible_on_the_selectors_as_on_the_fields(tmp_path: Path) -> None:
    """Tabbing onto the Submit form's site, backend or mem scope selector (or the Jobs screen's
    state filter) changed only its background, from colour 234 to 235 in a 256-colour terminal: a
    keyboard user could not see where the focus was, where a field shows its cursor. Focused, a
    selector is tinted (another colour, not a grey one step lighter) and its arrow is a block."""
    from rich.color import ColorSystem

    def look(app, widget) -> tuple[int, bool]:
        """The 256-colour background under the selector's value, and whether its arrow is reversed."""
        cells, x = [], 0
        for segment in app.screen._compositor.render_strips()[widget.region.y]:
            if widget.region.x <= x < widget.region.right:
                cells.append(segment)
            x += segment.cell_length
        value = next(s for s in cells if s.text.strip() and "▼" not in s.text)
        arrow = next(s for s in cells if "▼" in s.text)
        return value.style.bgcolor.downgrade(ColorSystem.EIGHT_BIT).number, bool(arrow.style.reverse)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            for name in ("cfg", "backend", "mem_scope", "state-filter"):
                if name == "state-filter":          # the Jobs screen's
                    app.set_focus(None)
                    await pilot.press("2")
                    await pilot.pause()
                widget = app.screen.query_one(f"#{name}")
                app.set_focus(None)
                await pilot.pause()
                blurred, blurred_arrow = look(app, widget)
                widget.focus()
                await pilot.pause()
                focused, arrow = look(app, widget)
                assert blurred in range(232, 256) and not blurred_arrow, (widget.id, blurred)
                assert focused not in range(232, 256) and arrow, (widget.id, focused)   # a hue, a block
                assert not widget.expanded

    asyncio.run(scenario())


def test_state_map_of_a_small_array_names_each_cell(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            record = slurm_like_record(tmp_path, 12)
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, mixed_states(12)))
            await pilot.pause()
            await pilot.press("m")
            state_map = jobs.query_one("#state-map")
            assert rendered(state_map)[0].startswith("R  1 C  2 C  3 C  4 C  5 C  6 C  7 C  8 C  9 F 10 R 11 C 12")
            await pilot.click("#state-map", offset=(9 * 5 + 1, 0))     # the cell "F 10"
            await pilot.pause()
            assert not jobs.map_shown and jobs.query_one("#tasks").selected_task().value == 10

    asyncio.run(scenario())


def test_a_fields_editing_keys_act_in_order_with_the_characters_read_with_them(tmp_path: Path) -> None:
    """`ab<backspace>c` and `12<left>3` in one read: Textual ran an Input's bound keys only after
    the characters read behind them (textual#6605), giving `ab` and `123`."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            for field, keys in (("num_gpus", "ab\x7fc"), ("mem", "12\x1b[D3")):
                screen.query_one(f"#{field}").focus()
                await pilot.pause()
                one_read(app, keys)
                await pilot.pause()
            assert screen.query_one("#num_gpus").value == "ac"
            assert screen.query_one("#mem").value == "132"

    asyncio.run(scenario())


def test_keys_read_together_with_tab_fill_the_fields_tab_reached(tmp_path: Path) -> None:
    """`Tab Tab 4 Tab 81<backspace> Tab 2G` in one read (tmux send-keys, an expect script, a fast
    typist): each key acts on the field the Tabs before it reached, as when typed one by one."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            screen.query_one("#cfg").focus()
            await pilot.pause()
            one_read(app, "\t\t4\t81\x7f\t2G")    # site -> backend -> GPUs -> threads -> memory
            fields = ("num_gpus", "num_threads", "mem")

            def typed() -> dict[str, str]:
                return {f: screen.query_one(f"#{f}").value for f in fields}

            await wait_for(pilot, lambda: screen.focused is not None and screen.focused.id == "mem", 5)
            await pilot.pause()
            assert isinstance(app.screen, SubmitScreen)
            assert typed() == {"num_gpus": "4", "num_threads": "8", "mem": "2G"}

    asyncio.run(scenario())


def test_a_search_read_in_one_burst_is_typed_into_the_find_bar(tmp_path: Path) -> None:
    """`/node07` in one read is a search: the keys behind `/` used to reach the task table before
    the find bar had the focus (`o` focused the records, `a` showed the attempts, the text was lost)."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            jobs, table = await open_big(pilot, tmp_path)
            find = jobs.query_one("#find")
            one_read(app, "/no/de07")
            await pilot.pause()
            assert (find.has_focus, find.value, jobs.view) == (True, "no/de07", "tasks-view")
            await pilot.press("escape")
            one_read(app, "/node07\r")
            await wait_for(pilot, lambda: table.selected_task().value == 10, 5)     # node07: 10, 20...
            assert table.has_focus and jobs.view == "tasks-view"
            one_read(app, ":250\r")
            await wait_for(pilot, lambda: table.selected_task().value == 250, 5)
            assert table.has_focus and not find.display

    asyncio.run(scenario())


def test_ctrl_s_away_from_the_submit_screen_says_where_it_submits(tmp_path: Path) -> None:
    """ctrl+s on the Jobs (or Checkpoint) screen, after leaving the form, did nothing and said nothing:
    it now says it submits on the Submit screen, and nothing is asked or submitted."""
    record = build_local_record(tmp_path, {1: ("COMPLETED", 0)})
    checkpoint = build_checkpoint(tmp_path)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            app.checkpoint_screen.checkpoint = checkpoint
            for key, screen in (("2", "JobsScreen"), ("3", "CheckpointScreen")):
                app.clear_notifications()
                await pilot.press("escape", key)
                await wait_for(pilot, lambda: type(app.screen).__name__ == screen, 5)
                await pilot.press("ctrl+s")
                await pilot.pause()
                assert type(app.screen).__name__ == screen           # no dialog, nothing submitted
                told = [n.message for n in app._notifications]
                assert told == ["ctrl+s submits the form on the Submit screen (1 goes there): "
                                "nothing submitted here"], (screen, told)
            assert app.jobs_screen.record_path == str(record)        # the only record, not a new one

    asyncio.run(scenario())


def test_state_map_cells_stay_apart_at_any_value_width(tmp_path: Path) -> None:
    """`--array JOB=995:1008` (two windows under max_array_size 1001) drew `C 999 C1000 F1001`: the
    symbol ran into a value as wide as the widest. Up to 7-digit values (and a negative one), each
    cell reads symbol, space, value, and cells a space apart."""
    from backends.records.record import JobRecord, SubmitRecord, TaskRecord

    def record_of(values: list[int]) -> SubmitRecord:
        tasks = tuple(TaskRecord(value=v, job_id="912636", array_task_id=i, log=str(tmp_path / f"t.{v}.log"),
                                 slurm_out=None, slurm_err=None) for i, v in enumerate(values))
        return SubmitRecord(path=str(tmp_path / "q" / f"t{len(values)}.JOB.submit.json"), backend="slurm",
                            argv=("hyperion-submit",), cfg=str(CONF / "submit_test_cluster.yaml"), options={},
                            script=None, array_name="JOB", jobs=(JobRecord("912636", 0, f"0-{len(values) - 1}"),),
                            tasks=tasks, submitted_at="2026-01-01T00:00:00", cwd=str(tmp_path))

    async def scenario(values: list[int]) -> str:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("escape", "2")
            jobs = app.jobs_screen
            record = record_of(values)
            jobs.show_record(record)
            jobs.post_message(JobsUpdated(record.path, tuple(
                TaskState("912636", i, JobState.FAILED if v % 2 else JobState.COMPLETED, 1 if v % 2 else 0,
                          None, 1, "vm") for i, v in enumerate(values))))
            await pilot.pause()
            await pilot.press("m")
            await pilot.pause()
            return rendered(jobs.query_one("#state-map"))[0]

    assert asyncio.run(scenario(list(range(995, 1009)))).startswith(
        "F  995 C  996 F  997 C  998 F  999 C 1000 F 1001 C 1002")
    assert asyncio.run(scenario([999998, 999999, 1000000, 1000001])).startswith(
        "C  999998 F  999999 C 1000000 F 1000001")
    assert asyncio.run(scenario([-2, -1, 0, 1])).startswith("C -2 F -1 C  0 F  1")
