"""`hyperion-jobs watch` in real terminals (tmux) of 24 and 45 lines, over a live 30-task local array.

Its table had 20 rows whatever the terminal: on 80x24 rich's live display cut the screen's bottom off
(the table's last border, `... and N more` and the red `not answering` line a Slurm outage adds were
never seen), and on a 40-line terminal half the screen stayed blank behind `... and 3 more`."""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from terminal import Terminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
REPO = Path(__file__).resolve().parents[1]
TASKS = 30


def _lines(term: Terminal) -> list[str]:
    return term.screen().rstrip("\n").split("\n")


def _watch_screen(tmp_path: Path, record: Path, env: dict[str, str], lines: int) -> list[str]:
    """The screen of a watch of `record` in a 100 x `lines` terminal, once it shows local_1 running.

    With LINES=24 and COLUMNS=80 exported, as a shell that exported them once (or a tmux server
    started from a test run) hands them on: rich takes them over the terminal's own size, and a
    45-line terminal showed 24 lines of the watch; the live view follows the terminal."""
    watch = shutil.which("hyperion-jobs", path=env["PATH"])
    with Terminal(f"env LINES=24 COLUMNS=80 {watch} watch {record}; sleep 600", 100, lines, tmp_path,
                  env["PATH"]) as term:
        deadline = time.monotonic() + 30
        while True:
            screen = _lines(term)
            if any("RUNNING" in line for line in screen) and "tasks ended" in screen[0]:
                time.sleep(1.5)    # a redraw or two more, so the screen is settled
                return _lines(term)
            if time.monotonic() > deadline:
                raise AssertionError("watch showed no running task:\n" + "\n".join(screen))
            time.sleep(0.2)


def test_watch_table_fills_the_terminal_and_keeps_its_bottom_lines(tmp_path: Path, cli_env: dict[str, str]) -> None:
    submit = shutil.which("hyperion-submit", path=cli_env["PATH"])
    run = subprocess.Popen([submit, "local", "--cfg", str(REPO / "conf" / "submit_test_cluster.yaml"),
                            "--array", f"JOB=1:{TASKS}", "--output-file", "log/s.JOB.log", "--",
                            "sleep", "120"], cwd=tmp_path, env=cli_env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = tmp_path / "log" / "q" / "s.JOB.submit.json"
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "log" / "s.1.log").exists():
            assert time.monotonic() < deadline and run.poll() is None, "the local run did not start"
            time.sleep(0.1)

        small = _watch_screen(tmp_path, record, cli_env, 24)
        assert len(small) <= 24
        shown = [line for line in small if re.search(r"│ local_\d+ ", line)]
        assert len(shown) >= 10, "\n".join(small)
        # the bottom of the screen is the table's end and the count of the rows left out, not rich's "..."
        assert small[-2].startswith("└") and small[-1] == f"... and {TASKS - len(shown)} more: PENDING {TASKS - len(shown)}", "\n".join(small)

        tall = _watch_screen(tmp_path, record, cli_env, 45)
        rows = [line for line in tall if re.search(r"│ local_\d+ ", line)]
        assert len(rows) == TASKS, "\n".join(tall)      # every task, where 20 and '... and 10 more' were shown
        assert not any("more" in line for line in tall)
    finally:
        run.send_signal(signal.SIGTERM)                  # stops the running task and records it (exit 143)
        try:
            run.wait(timeout=20)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()


@pytest.mark.parametrize("lines", [24, 12])
def test_watch_screen_keeps_slurms_outage_line_on_a_short_terminal(lines: int) -> None:
    """The red 'not answering' line is the screen's last: a 20-row table pushed it below an 80x24
    terminal, where the live display cut it off, so the states looked current while Slurm was down."""
    import io

    from rich.console import Console

    from backends.cli.jobs.watching import FittedWatch
    from backends.states import JobState
    from backends.watch.poller import PollUpdate
    from backends.watch.rows import TaskRow

    rows = [TaskRow(v, "500", v, JobState.PENDING, None, None, None, None, f"/exp/log/x.{v}.log", None, None,
                    reason="Priority") for v in range(1, 41)]
    update = PollUpdate({}, (), "squeue failed (rc 1): Unable to contact slurm controller", False, 4.0)
    console = Console(width=80, height=lines, record=True, color_system=None, file=io.StringIO())
    console.print(FittedWatch("exp/log/q/x.JOB.submit.json", update, rows))
    screen = console.export_text().rstrip("\n").split("\n")
    assert len(screen) <= lines, "\n".join(screen)
    assert "Unable to contact slurm controller" in " ".join(" ".join(screen[-2:]).split())   # wrapped: 2 lines
    assert any(re.fullmatch(r"\.\.\. and (\d+) more: PENDING \1", line) for line in screen), "\n".join(screen)


def _screen(rows, lines: int, error: str | None = None) -> list[str]:
    """The watch screen of `rows` on an 80 x `lines` terminal, as rich's live display gets it."""
    import io

    from rich.console import Console

    from backends.cli.jobs.watching import FittedWatch
    from backends.watch.poller import PollUpdate

    console = Console(width=80, height=lines, record=True, color_system=None, file=io.StringIO())
    console.print(FittedWatch("log4/q/f.JOB.submit.json", PollUpdate({}, (), error, False, 4.0, error), rows))
    return console.export_text().rstrip("\n").split("\n")


@pytest.mark.parametrize("lines", [24, 40, 13])
@pytest.mark.parametrize("outage", [False, True])
def test_watch_screen_fills_the_terminal_when_pending_reasons_wrap(lines: int, outage: bool) -> None:
    """`PENDING (Resources)` wraps to 2 lines at 80 columns: the fitting read lines as rows and a
    120-task array on 80x24 showed 3 task rows, `... and 94 more` and 12 blank lines."""
    from backends.states import JobState
    from backends.watch.rows import TaskRow

    def row(v: int) -> TaskRow:
        state = JobState.COMPLETED if v <= 23 else JobState.FAILED if v == 24 else \
            JobState.RUNNING if v == 25 else JobState.PENDING
        return TaskRow(v, "267", v, state, 5 if state is JobState.FAILED else None, None, None, None,
                       f"/tmp/h69/exp/log4/f.{v}.log", None, None,
                       reason="Resources" if state is JobState.PENDING else None)

    error = "squeue failed (rc 1): Unable to contact slurm controller" if outage else None
    screen = _screen([row(v) for v in range(1, 121)], lines, error)
    assert lines - 2 <= len(screen) <= lines, "\n".join(screen)     # a 2-line row may leave one line
    assert any("(Resources)" in line for line in screen), "\n".join(screen)   # the reason did wrap
    shown = [line for line in screen if re.match(r"│ 267_\d+ ", line)]
    more = next(line for line in screen if line.startswith("... and "))
    assert more == f"... and {97 - len(shown)} more: PENDING {97 - len(shown)}", "\n".join(screen)
    bottom = screen[-3:] if outage else screen[-2:]
    assert bottom[0].startswith("└") and bottom[1] == more, "\n".join(screen)
    if outage:
        assert "Unable to contact slurm controller" in screen[-1]
