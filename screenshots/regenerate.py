"""Regenerate screenshots/ : every console screen as SVG (and PNG when chromium is installed).

Run from the repository root: `python screenshots/regenerate.py`. Fixtures are
built under a fixed directory so that paths in the pictures stay the same.
Needs no Slurm: the Jobs screen is shown on a local demo run.
"""
from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from hyperion_console.app import make_app  # noqa: E402

DEMO_DIR = Path("/tmp/hyperion-console-screenshots")
SIZES = ((80, 24), (120, 40))


async def shoot(size: tuple[int, int]) -> list[Path]:
    """Open each screen of the demo app and save it."""
    app = make_app(cfg_dir=REPO / "conf", demo=True, demo_dir=DEMO_DIR)
    suffix = f"{size[0]}x{size[1]}"
    saved: list[Path] = []

    async def save(name: str) -> None:
        await pilot.pause(0.3)
        filename = f"{name}-{suffix}.svg"
        app.save_screenshot(filename, path=str(HERE))
        saved.append(HERE / filename)

    async with app.run_test(size=size) as pilot:
        await save("checkpoint")
        await pilot.press("right")   # Failed tab (focus is on the tab bar)
        await save("checkpoint-failed")
        await pilot.press("right")
        await save("checkpoint-retry")
        await pilot.press("ctrl+r")
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
        for name, value in {"backend": "slurm", "num_gpus": "2", "mem": "4G", "time": "02:00:00",
                            "array": "JOB=1:40", "max_jobs_run": "8",
                            "output_file": "exp/xvector/log/extract.JOB.log",
                            "command": "hyperion-extract-wav2xvectors --part-idx JOB --num-parts 40"}.items():
            screen.set_field(name, value)
        app.set_focus(None)
        await save("submit")
        screen.set_field("time", "two hours")
        await save("submit-invalid")
        await pilot.press("question_mark")
        await save("help")
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


def main() -> int:
    svgs: list[Path] = []
    for size in SIZES:
        svgs += asyncio.run(shoot(size))
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
