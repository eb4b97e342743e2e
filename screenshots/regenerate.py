"""Regenerate screenshots/ : every console screen as SVG (and PNG when chromium is installed).

Run from the repository root: `python screenshots/regenerate.py`. Two sources:

* the demo (`hyperion-console --demo`, local backend): Checkpoint, Failed, Retry,
  the Resubmit confirmation, the Jobs screen after it, Submit, Help;
* a real Slurm array on the test cluster (tests/slurm/up.sh), submitted here
  through hyperion-submit's core: 40 tasks, every 9th fails with exit 3 (a
  corrupt input) and one with exit 2 (a missing shard), three run for minutes
  printing progress, at most 6 at a time so the rest wait. It is shot while it
  runs (the table, a filter in use, the state map, the log pane following a
  running task, then zoomed with `z`, the usage columns); then the long runners are cancelled, and once every task
  ended the failure groups and the retry preview are shot, the causes are
  "fixed" and the retry runs from the console as attempt 2; the table with its
  attempt column and the attempts view are shot after it. Without Slurm those
  are skipped with a line saying so.

Fixtures are built under fixed directories so that paths in the pictures stay the same.
"""
from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from hyperion_console.app import make_app  # noqa: E402
from hyperion_console.screens.confirm import ConfirmScreen  # noqa: E402
from sharding.usage import OneLineParser  # noqa: E402

DEMO_DIR = Path("/tmp/hyperion-console-screenshots")
SLURM_DIR = Path("/tmp/hyperion-console-screenshots-slurm")
SIZES = ((80, 24), (120, 40))
SPLIT_PANE = (60, 20)    # a tmux pane split in two on an 80x24 login terminal
TASKS = 40
LONG = (5, 17, 29)            # run for minutes: RUNNING in every picture of the running array
CORRUPT = tuple(v for v in range(1, TASKS + 1) if v % 9 == 0)
MISSING = (14,)
# One task of the array: progress lines; the values listed in corrupt.txt / missing.txt fail, those in
# long.txt run for minutes (the lists are emptied before the retry: the causes are "fixed").
TASK_SCRIPT = f"""
import pathlib, sys, time
value = int(sys.argv[1])
here = pathlib.Path({str(SLURM_DIR)!r})
def listed(name):
    path = here / name
    return path.exists() and str(value) in path.read_text().split()
steps = 400 if listed("long.txt") else 8
for step in range(1, steps + 1):
    print(f"extract part {{value}}: progress {{step}}/{{steps}}", flush=True)
    if step == 3 and listed("corrupt.txt"):
        print(f"ValueError: corrupt input file", flush=True)
        sys.exit(3)
    if step == 3 and listed("missing.txt"):
        print(f"FileNotFoundError: shard not found", flush=True)
        sys.exit(2)
    time.sleep(0.6)
print(f"part {{value}} done", flush=True)
"""


async def settle(pilot, seconds: float = 0.4) -> None:
    await pilot.pause(seconds)


def saver(app, pilot, size: tuple[int, int], saved: list[Path]):
    suffix = f"{size[0]}x{size[1]}"

    async def save(name: str) -> None:
        await settle(pilot)
        filename = f"{name}-{suffix}.svg"
        app.save_screenshot(filename, path=str(HERE))
        saved.append(HERE / filename)

    return save


async def checkpoint_read(app, pilot, timeout: float = 30) -> None:
    """The Checkpoint screen reads in a worker thread: shoot it once its read is shown."""
    screen = app.checkpoint_screen
    deadline = time.monotonic() + timeout
    while (screen.reading or screen.coverage is None) and time.monotonic() < deadline:
        await pilot.pause(0.1)


async def shoot_demo(size: tuple[int, int]) -> list[Path]:
    """Each screen of the demo app (`hyperion-console --demo`)."""
    app = make_app(cfg_dir=REPO / "conf", demo=True, demo_dir=DEMO_DIR)
    saved: list[Path] = []
    async with app.run_test(size=size) as pilot:
        save = saver(app, pilot, size, saved)
        await checkpoint_read(app, pilot)
        await save("checkpoint")
        await pilot.press("right")   # Failed tab (focus is on the tab bar)
        await save("checkpoint-failed")
        await pilot.press("right")
        await save("checkpoint-retry")
        await pilot.press("ctrl+r")      # read again first, then asked
        deadline = time.monotonic() + 30
        while not isinstance(app.screen, ConfirmScreen) and time.monotonic() < deadline:
            await pilot.pause(0.1)
        await save("confirm-resubmit")
        await pilot.press("y")       # the missing shards run on the local backend
        for _ in range(100):
            await pilot.pause(0.1)
            rows = app.jobs_screen.states.values()
            if app.screen is app.jobs_screen and rows and all(r.state and r.state.is_terminal for r in rows):
                break
        await save("jobs")
        await pilot.press("1")
        screen = app.submit_screen
        fill_submit(screen)
        app.set_focus(None)
        await save("submit")
        screen.set_field("time", "two hours")
        await save("submit-invalid")
        await pilot.press("question_mark")
        await save("help")
    return saved


def fill_submit(screen) -> None:
    for name, value in {"backend": "slurm", "num_gpus": "2", "mem": "4G", "time": "02:00:00",
                        "array": "JOB=1:40", "max_jobs_run": "8",
                        "output_file": "exp/xvector/log/extract.JOB.log",
                        "command": "hyperion-extract-wav2xvectors --part-idx JOB --num-parts 40"}.items():
        screen.set_field(name, value)


async def shoot_split_submit(size: tuple[int, int]) -> list[Path]:
    """The Submit screen in a split pane: the preview under the form."""
    app = make_app(cfg_dir=REPO / "conf", search_dirs=[DEMO_DIR])
    saved: list[Path] = []
    async with app.run_test(size=size) as pilot:
        await pilot.press("1")           # the demo's records are in DEMO_DIR: the console opens on them
        fill_submit(app.submit_screen)
        app.set_focus(None)
        await saver(app, pilot, size, saved)("submit")
    return saved


def slurm_answers() -> bool:
    """The controller answers (a busy shared cluster may miss one ping: three tries)."""
    if not shutil.which("sbatch"):
        return False
    for _ in range(3):
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True)
        if ping.returncode == 0 and "UP" in ping.stdout:
            return True
        time.sleep(2)
    return False


def submit_array():
    """The Slurm array of the pictures, through hyperion-submit's own core."""
    from backends.launch_slurm import submit
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan

    if SLURM_DIR.exists():
        shutil.rmtree(SLURM_DIR)
    SLURM_DIR.mkdir(parents=True)
    for name, values in (("long.txt", LONG), ("corrupt.txt", CORRUPT), ("missing.txt", MISSING)):
        (SLURM_DIR / name).write_text(" ".join(map(str, values)) + "\n")
    site, options = parse_submit_argv([
        "slurm", "--cfg", str(REPO / "conf" / "submit_test_cluster.yaml"), "--array", f"JOB=1:{TASKS}",
        "--max-jobs-run", "6", "--time", "00:06:00", "--mem", "100M",
        "--output-file", str(SLURM_DIR / "exp" / "log" / "extract.JOB.log"),
        "--", sys.executable, "-c", TASK_SCRIPT, "JOB"])
    return submit(build_plan(site, options))


def mixed(counts: dict[str, int]) -> bool:
    """Enough of each state to tell them apart in a picture."""
    return (counts.get("FAILED", 0) >= 2 and counts.get("RUNNING", 0) >= 3
            and counts.get("PENDING", 0) >= 5 and counts.get("COMPLETED", 0) >= 4)


async def shoot_slurm(record, size: tuple[int, int]) -> list[Path]:
    """The running array: all tasks, a filter, the state map, the log pane following."""
    app = make_app(cfg_dir=REPO / "conf", record=record.path, search_dirs=[SLURM_DIR])
    saved: list[Path] = []
    async with app.run_test(size=size) as pilot:
        save = saver(app, pilot, size, saved)
        jobs = app.jobs_screen
        deadline = time.monotonic() + 150
        while not mixed(jobs.table.index.counts) and time.monotonic() < deadline:
            await pilot.pause(0.5)
        await pilot.press("colon", *str(LONG[0]), "enter")     # a long runner: its log grows
        await pilot.pause(2.5)
        await save("jobs-slurm")
        jobs.query_one("#log").focus()                       # the log pane, lit, following
        await pilot.pause(2.0)
        await save("jobs-slurm-log")
        await pilot.press("z")                                # the same log over the whole screen
        await pilot.pause(1.0)
        await save("jobs-slurm-log-zoomed")
        await pilot.press("z")
        jobs.table.focus()
        await pilot.press("f")                                # "not completed"
        await save("jobs-slurm-filter")
        await pilot.press("F", "m")
        await save("jobs-slurm-map")
        await pilot.press("m", "u")                           # what each task uses, the running ones too
        await pilot.pause(1.0)
        await save("jobs-slurm-usage")
    return saved


def finish_array(record) -> None:
    """Cancel the long runners and wait (the core's wait) until every task ended: finals in the ledger."""
    from backends.watch.slurm.cancel import cancel
    from backends.watch.wait import wait

    job = record.jobs[0].job_id
    cancel([f"{job}_{value}" for value in LONG])
    wait(record)
    for name in ("long.txt", "corrupt.txt", "missing.txt"):
        (SLURM_DIR / name).write_text("")          # the causes are fixed: the retry completes


async def all_ended(pilot, timeout: float = 60) -> None:
    jobs = pilot.app.jobs_screen
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = jobs.table.index.counts
        if counts and jobs.table.index.all_final():
            return
        await pilot.pause(0.3)


async def shoot_retry(record, size: tuple[int, int], run: bool) -> list[Path]:
    """Every task ended: the failure groups, the retry preview; with `run`, the retry runs."""
    from hyperion_console.screens.retry import RetryScreen

    app = make_app(cfg_dir=REPO / "conf", record=record.path, search_dirs=[SLURM_DIR])
    saved: list[Path] = []
    async with app.run_test(size=size) as pilot:
        save = saver(app, pilot, size, saved)
        await all_ended(pilot)
        await pilot.press("t")
        await save("jobs-slurm-failures")
        await pilot.press("escape", "R")
        for _ in range(100):
            await pilot.pause(0.1)
            if isinstance(app.screen, RetryScreen) and "runs in" in str(app.screen.query_one("#retry-text").content):
                break
        await save("jobs-slurm-retry")               # (escape here closed it: the image showed no dialog)
        if run:
            await pilot.press("ctrl+r")
            await save("confirm-retry")
            await pilot.press("y")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and app.jobs_screen.history.latest_number < 2:
                await pilot.pause(0.3)
    return saved


async def shoot_attempts(record, size: tuple[int, int]) -> list[Path]:
    """After the retry: the newest run of every value (attempt column), and the attempts view."""
    app = make_app(cfg_dir=REPO / "conf", record=record.path, search_dirs=[SLURM_DIR])
    saved: list[Path] = []
    async with app.run_test(size=size) as pilot:
        save = saver(app, pilot, size, saved)
        await all_ended(pilot, 120)
        await pilot.press("colon", "9", "enter")     # a retried value: attempt 2, its new log
        await save("jobs-slurm-retried")
        await pilot.press("a")
        await pilot.pause(0.5)
        await pilot.press("up", "enter", *["down"] * 8)   # attempt 1, value 9: its log moved aside
        await save("jobs-slurm-attempts")
    return saved


def svg_size(svg: Path) -> tuple[int, int]:
    match = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg.read_text())
    assert match, svg
    return int(float(match.group(1)) + 0.5), int(float(match.group(2)) + 0.5)


def to_png(svg: Path, chromium: str) -> Path:
    width, height = svg_size(svg)
    png = svg.with_suffix(".png")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--force-device-scale-factor=1", f"--window-size={width},{height}",
                    f"--screenshot={png}", svg.resolve().as_uri()],
                   check=True, capture_output=True, timeout=60)
    return png


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """`--help` says what a run does before it does it: a run takes minutes, submits to Slurm when
    it answers and rewrites screenshots/ (it used to start at once on `--help` too)."""
    parser = OneLineParser(prog="regenerate.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    parse_args(argv)
    svgs: list[Path] = []
    for size in SIZES:
        svgs += asyncio.run(shoot_demo(size))
    svgs += asyncio.run(shoot_split_submit(SPLIT_PANE))
    if slurm_answers():
        from backends.watch.slurm.cancel import cancel

        from backends.records.history import load_history
        from backends.records.record import load_record
        from backends.watch.wait import wait

        record = submit_array()
        try:
            for size in SIZES:
                svgs += asyncio.run(shoot_slurm(record, size))
            finish_array(record)
            for size in (SPLIT_PANE, *reversed(SIZES)):   # the retry runs at the last one: 80x24
                svgs += asyncio.run(shoot_retry(record, size, run=size == SIZES[0]))
            wait(load_record(record.path))             # the retry's tasks end (finals in the ledger)
            for size in SIZES:
                svgs += asyncio.run(shoot_attempts(record, size))
        finally:
            history = load_history(record.path)
            cancel(sorted({job.job_id for n in history.numbers for job in history.records[n].jobs}))
    else:
        print("Slurm does not answer (tests/slurm/up.sh): the jobs-slurm-* pictures are kept as they are")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    for svg in svgs:
        print(svg.relative_to(REPO))
        if chromium:
            print(to_png(svg, chromium).relative_to(REPO))
    if not chromium:
        print("chromium not found: PNGs skipped (apt-get install -y chromium)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
