"""Typing in the console's forms at large sizes: how long each key takes to show.

Submit screen: the form holds ``--array JOB=1:N`` (slurm, so every window's
sbatch line and script are planned too) and a few characters are typed in its
command field at a fast typist's pace (one key every --interval seconds).
Checkpoint screen: a synthetic checkpoint of S shards (every 10th missing, as
bench_console.py makes it) and digits typed in the Retry tab's max-array-size
field at the same pace.

Figures, each screen's now against the same screen built with the preview
rebuilt at every key (its ``SLOW_*`` threshold set to infinity: the code
before, which planned on every key), as ``baseline``:

- ``*_key_to_echo_median``/``_max``: from the moment a key is pressed (its
  scheduled time: a key the interface was too busy to read is still pressed
  then, and waits in the terminal) to the first frame that shows it in the field;
- ``*_last_key_to_final``: from the last key to the first frame that shows the
  preview (Submit) or retry plan (Checkpoint) of the final input, as the core
  gives it.

Each screen and mode runs in its own interpreter.

    python bench/bench_typing.py [--tasks 100000] [--shards 100000] [--keys 8] [--interval 0.08]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_console import synthetic_checkpoint  # noqa: E402
from bench.report import emit  # noqa: E402


class Frames:
    """Each frame the app renders (headless: the compositor update is still made), with the
    field's text at that moment."""

    def __init__(self, app, field) -> None:
        self.seen: list[tuple[float, str]] = []
        self.field = field
        original = app._display

        def display(screen, renderable) -> None:
            if renderable is not None and self.field() is not None:
                self.seen.append((time.perf_counter(), self.field().value))
            original(screen, renderable)

        app._display = display


async def type_keys(app, frames: Frames, keys: str, interval: float) -> tuple[list[float], float]:
    """Press `keys` one per `interval`; each key's delay to the frame showing it, and the last
    key's scheduled time."""
    from textual import events
    start_text = frames.field().value
    start = time.perf_counter() + 0.05
    times = []
    for i, key in enumerate(keys):
        due = start + i * interval
        while time.perf_counter() < due:
            await asyncio.sleep(0.002)
        times.append(due)
        app._driver.send_message(events.Key(key, key))
    delays = []
    for i, due in enumerate(times):
        want = start_text + keys[:i + 1]
        deadline = time.perf_counter() + 60
        while True:
            shown = next((t for t, text in frames.seen if t >= due and text.startswith(want)), None)
            if shown is not None:
                break
            if time.perf_counter() > deadline:
                raise TimeoutError(f"key {i} never shown: {frames.seen[-3:]} {frames.field().value!r} {len(frames.seen)}")
            await asyncio.sleep(0.005)
        delays.append(shown - due)
    return delays, times[-1]


async def until(predicate, timeout: float = 60.0) -> float:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError("never settled")
        await asyncio.sleep(0.005)
    return time.perf_counter()


async def measure_submit(tasks: int, keys: int, interval: float, old: bool) -> dict[str, float]:
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan, describe_plan
    from hyperion_console.app import make_app
    from hyperion_console.form import form_argv
    from hyperion_console.screens import submit as submit_module
    from hyperion_console.screens.submit import preview_text

    if old:
        submit_module.SLOW_PREVIEW = float("inf")
    with tempfile.TemporaryDirectory(prefix="bench-typing-") as root:
        app = make_app(cfg_dir=REPO / "conf", search_dirs=[])
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.submit_screen
            for name, value in (("backend", "slurm"), ("array", f"JOB=1:{tasks}"), ("command", "echo JOB"),
                                ("output_file", f"{root}/log/t.JOB.log")):
                screen.set_field(name, value)
            await pilot.pause()
            await until(lambda: screen.plan is not None and len(screen.plan.tasks) == tasks)
            field = screen.query_one("#command")
            field.focus()
            await pilot.pause(0.5)
            field.cursor_position = len(field.value)     # focus selected it all: a key would replace it
            await pilot.pause(0.5)
            frames = Frames(app, lambda: field)
            typed = "".join("abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(keys))
            delays, last = await type_keys(app, frames, typed, interval)
            final = form_argv(screen.form())

            # checked cheaply while it runs (the poll shares the interpreter with the worker planning)
            await until(lambda: screen.argv == final and not getattr(screen, "updating", False))
            count = len(frames.seen)
            shown_at = await until(lambda: len(frames.seen) > count)
            # the core's own preview of the final form, made once the time is taken (it takes as long)
            expected = str(preview_text(describe_plan(build_plan(*parse_submit_argv(final, pipes=False)))))
            if str(screen.query_one("#submit-preview").content) != expected:
                raise AssertionError("the preview shown is not the core's for the final form")
            return {"submit_key_to_echo_median": statistics.median(delays),
                    "submit_key_to_echo_max": max(delays),
                    "submit_last_key_to_final": shown_at - last}


async def measure_checkpoint(path: str, keys: int, interval: float, old: bool) -> dict[str, float]:
    from hyperion_console.app import make_app
    from hyperion_console.screens import checkpoint as checkpoint_module

    if old:
        checkpoint_module.SLOW_RETRY = float("inf")
    # no site file, so the field starts at none and the plan is of the size typed: the Submit
    # screen's site file (conf/submit_test_cluster.yaml, max_array_size 1001) would cap it
    with tempfile.TemporaryDirectory(prefix="bench-typing-cfg-") as no_sites:
        app = make_app(cfg_dir=no_sites, checkpoint=path, search_dirs=[])
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.checkpoint_screen
            await until(lambda: screen.coverage is not None and not screen.reading)
            await pilot.press("right", "right")
            field = screen.query_one("#max-array-size")
            field.focus()
            await pilot.pause(0.5)
            field.cursor_position = len(field.value)
            await pilot.pause(0.5)
            frames = Frames(app, lambda: field)
            typed = "".join("123456789"[i % 9] for i in range(min(keys, 6)))     # at most 4000001
            delays, last = await type_keys(app, frames, typed, interval)
            expected = int(typed)
            await until(lambda: screen.plan is not None and screen.plan.max_array_size == expected)
            count = len(frames.seen)
            shown_at = await until(lambda: len(frames.seen) > count)
            return {"ckpt_key_to_echo_median": statistics.median(delays),
                    "ckpt_key_to_echo_max": max(delays),
                    "ckpt_last_key_to_final": shown_at - last}


def run_one(*argv: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise SystemExit(f"bench_typing {' '.join(argv)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000, help="array size in the Submit form (0: leave out)")
    parser.add_argument("--shards", type=int, default=100_000, help="checkpoint shards (0: leave out)")
    parser.add_argument("--keys", type=int, default=8, help="keys typed per screen")
    parser.add_argument("--interval", type=float, default=0.08, help="seconds between keys")
    parser.add_argument("--one", help=argparse.SUPPRESS)      # submit|checkpoint:OLD:ARG, in this process
    args = parser.parse_args()
    if args.one is not None:
        what, old, arg = args.one.split(":", 2)
        if what == "submit":
            figures = measure_submit(int(arg), args.keys, args.interval, old == "1")
        else:
            figures = measure_checkpoint(arg, args.keys, args.interval, old == "1")
        print(json.dumps(asyncio.run(figures)))
        return 0
    common = ["--keys", str(args.keys), "--interval", str(args.interval)]
    print(f"# {args.keys} keys, one per {args.interval:g} s; baseline: the same screen rebuilding "
          "its preview/plan at every key (the code before)")
    if args.tasks:
        now = run_one("--one", f"submit:0:{args.tasks}", *common)
        before = run_one("--one", f"submit:1:{args.tasks}", *common)
        for name, value in now.items():
            emit(f"{name}_{args.tasks}", value, "s", before[name])
    if args.shards:
        with tempfile.TemporaryDirectory(prefix="bench-typing-ckpt-") as root:
            path = synthetic_checkpoint(Path(root) / "ck", args.shards)
            now = run_one("--one", f"checkpoint:0:{path}", *common)
            before = run_one("--one", f"checkpoint:1:{path}", *common)
        for name, value in now.items():
            emit(f"{name}_{args.shards}", value, "s", before[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
