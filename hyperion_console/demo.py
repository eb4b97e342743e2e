"""`hyperion-console --demo`: a real sharded run on the local backend to open the console on.

The example pipeline (sharding.example) runs over SHARDS shards through
hyperion-submit's local core with one record set to fail once, so the local
array stops there: shards before it complete, it fails (failed-task record),
the rest stay incomplete. Resubmit then reruns exactly the missing shards, and
they succeed because the injected failure fires only once.
"""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from backends.errors import InputError
from backends.submit.commandline import parse_submit_argv
from backends.submit.local.run import run_local
from backends.submit.plan import build_plan
from sharding.assign import shard_for
from sharding.example import make_input
from sharding.listing import list_sources

SHARDS = 12
FAILING_SHARD = 11       # shards 1-10 complete, 11 fails, 12 is never reached
FILES = 24
MARKER = ".hyperion-console-demo"
DEFAULT_ROOT = Path.home() / ".cache" / "hyperion-console" / "demo"
PACKAGED_SITE = Path(__file__).with_name("demo") / "submit_local.yaml"


@dataclass(frozen=True)
class DemoPaths:
    root: Path
    checkpoint: Path
    record: Path
    site: Path


def demo_site(cfg_dir: Path | None) -> Path:
    candidate = (cfg_dir or Path("conf")) / "submit_test_cluster.yaml"
    return candidate.absolute() if candidate.is_file() else PACKAGED_SITE


def failing_record_id(input_dir: Path) -> str:
    """A record of a source task that the core's shard assignment puts in FAILING_SHARD."""
    for task in list_sources(input_dir):
        if shard_for(task.task_id, SHARDS, 1) == FAILING_SHARD:
            first = task.files[0].read_text().splitlines()[0]
            import json
            return json.loads(first)["id"]
    raise RuntimeError(f"no source task falls in shard {FAILING_SHARD}; raise FILES")


def demo_argv(root: Path, site: Path, fail_id: str) -> list[str]:
    """The hyperion-submit local argv of the demo run (no program name)."""
    return ["local", "--cfg", str(site), "--array", f"SHARD=1:{SHARDS}",
            "--output-file", str(root / "exp" / "log" / "shard.SHARD.log"), "--",
            sys.executable, "-m", "sharding.example", "--input", str(root / "input"),
            "--output", str(root / "output"), "--checkpoint", str(root / "checkpoint"),
            "--shard-index", "SHARD", "--total-shards", str(SHARDS), "--minimum-shard-index", "1",
            "--fail-record", fail_id, "--fail-once"]


def demo_root(root: Path | None = None) -> Path:
    """Where the demo is built; InputError for a folder there that an earlier --demo did not make
    (it would be wiped). Asked before the console says it builds, so a refusal is its one line."""
    root = (root or DEFAULT_ROOT).absolute()
    if root.exists() and not (root / MARKER).exists():
        raise InputError("--demo-dir", f"{root} exists and is not a demo directory; choose another")
    return root


def prepare_demo(root: Path | None = None, cfg_dir: Path | None = None) -> DemoPaths:
    """Build the demo from scratch in `root` (only a directory this function made is wiped)."""
    root = demo_root(root)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / MARKER).write_text("made by hyperion-console --demo; deleted on the next --demo\n")
    make_input(root / "input", FILES, 5)
    site = demo_site(cfg_dir)
    argv = demo_argv(root, site, failing_record_id(root / "input"))
    site_config, options = parse_submit_argv(argv)
    plan = build_plan(site_config, options)
    run_local(plan)   # exits 1 at shard 11: that is the demo
    return DemoPaths(root, root / "checkpoint", Path(plan.record_path), site)
