"""A coloured log reads as its text in the console: the log pane and a failure group's last line.

Loguru, rich and tqdm write colour and erase sequences into task logs; the pane
and the failure list showed them as ``\\x1b[32m...\\x1b[0m`` escapes. They are
dropped now (`backends.watch.escapes`), never rendered as colour or markup,
and an OSC 52 is still an escape.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

from test_console_fixtures import build_history, build_local_record, rendered, wait_for

from hyperion_console.app import make_app

CONF = Path(__file__).resolve().parents[1] / "conf"

LOGURU = ("\x1b[32m2026-12-05 10:15:01\x1b[0m | \x1b[1mINFO    \x1b[0m | "
          "\x1b[36mtrain\x1b[0m:\x1b[36m42\x1b[0m - \x1b[1mepoch 1 [bold]x[/]\x1b[0m")
BAR = "".join(f"\r\x1b[32m{p:3d}%|{'#' * (p // 10):<10}|\x1b[0m {p}/100\x1b[K" for p in range(0, 101, 10))
OPEN_BAR = "\r\x1b[?25l\x1b[33m 40%|####      | 40/100\x1b[0m\x1b[K"      # still being written


def _traceback(value: int) -> str:
    return f"\x1b[1;31mValueError\x1b[0m: \x1b[31mbad input {value}\x1b[0m"


def test_the_log_pane_shows_a_coloured_log_and_a_progress_bar_as_text(tmp_path: Path) -> None:
    record = build_local_record(tmp_path, {1: ("RUNNING", None)})
    lines = [LOGURU, "\x1b[?25l" + BAR + "\x1b[?25h", _traceback(7) + " \x1b]52;c;aGk=\x07"]
    (tmp_path / "exp" / "log" / "task.1.log").write_text("\n".join(lines) + "\n" + OPEN_BAR)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            view = app.jobs_screen.log_pane.view
            await wait_for(pilot, lambda: len(view.lines) == 4, 10)
            await pilot.pause()
            drawn = [line.rstrip() for line in rendered(view)]
            assert drawn[:4] == ["2026-12-05 10:15:01 | INFO     | train:42 - epoch 1 [bold]x[/]",
                                 "100%|##########| 100/100",
                                 "ValueError: bad input 7 \\x1b]52;c;aGk=\\x07",
                                 " 40%|####      | 40/100"], drawn
            frame = app.export_screenshot()
            assert "\x1b]52" not in frame and "\\x1b[" not in frame and "\x07" not in frame

    asyncio.run(scenario())


def test_a_failure_group_s_last_line_is_the_coloured_traceback_s_text(tmp_path: Path) -> None:
    """Two tasks failing with coloured tracebacks are one group whose last line reads as text."""
    record = build_history(tmp_path, CONF / "submit_test_cluster.yaml",
                           failures={2: ("FAILED", 1, _traceback(2)), 5: ("FAILED", 1, _traceback(5))})

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 24)) as pilot:
            jobs = app.jobs_screen
            await pilot.pause(0.3)
            await pilot.press("t")
            failures = jobs.query_one("#failure-list")
            await wait_for(pilot, lambda: failures.option_count == 1, 10)
            drawn = [line.rstrip() for line in rendered(failures)]
            assert drawn[1] == "      last line: ValueError: bad input 2", drawn
            assert "\\x1b" not in app.export_screenshot()

    asyncio.run(scenario())
