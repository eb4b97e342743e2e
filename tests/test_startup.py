"""Each command loads only what its own path needs, so the start-up a user waits on stays short.

Timings live in bench/bench_submit.py; these tests keep the imports that made
the figures from creeping back. Each command runs in a fresh interpreter and
its modules are compared with what a bare start of the same interpreter
loads (a site's .pth files may load some of them for everyone).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "conf" / "submit_test_cluster.yaml"

_PROBE = """\
import contextlib, io, json, sys
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = {call}
print(json.dumps({{"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}}))
"""


def _run(call: str, cwd: Path) -> dict:
    # This checkout first: from a temporary cwd an editable install would import its own tree.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-c", _PROBE.format(call=call)], capture_output=True,
                          text=True, cwd=cwd, check=True, env=env)
    return json.loads(done.stdout.splitlines()[-1])


def _newly_loaded(call: str, cwd: Path, names: set[str]) -> tuple[dict, set[str]]:
    bare = set(_run("0", cwd)["modules"])
    result = _run(call, cwd)
    loaded = set(result["modules"]) - bare
    return result, {n for n in names if n in loaded or any(m.startswith(n + ".") for m in loaded)}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A finished 3-task local array and a 10-shard checkpoint with shard 3 complete."""
    cwd = tmp_path_factory.mktemp("startup")
    subprocess.run([sys.executable, "-c", "import sys; from backends.cli.submit import main; sys.exit(main())",
                    "local", "--cfg", str(SITE), "--array", "JOB=1:3", "--output-file", "log/s.JOB.log",
                    "--", "true"], cwd=cwd, check=True, capture_output=True)
    from sharding.store import Checkpoint, RunConfig

    store = Checkpoint(cwd / "ck")
    store.ensure_run(RunConfig(1, 10))
    store.write_completion(3)
    return cwd


def test_status_of_a_local_record_loads_no_parser_planner_scheduler_client_or_ui(workdir):
    result, heavy = _newly_loaded(
        "__import__('backends.cli.jobs', fromlist=['main']).main(['status', 'log/q/s.JOB.submit.json'])",
        workdir, {"textual", "rich", "jsonargparse", "yaml", "subprocess", "statistics", "tempfile",
                  "typing", "backends.submit", "backends.launch", "backends.watch.triage",
                  # a Slurm record's: the hold and slot machinery (scontrol), the usage cells' summary
                  "backends.watch.throttle", "backends.watch.slurm.control", "backends.watch.budget",
                  "backends.watch.usage_summary",
                  # sacct and squeue's parsers and the client runner: a local record asks Slurm nothing
                  "backends.watch.slurm.accounting", "backends.client"})
    assert result["code"] == 0
    assert "3 tasks: COMPLETED 3" in result["out"]
    assert heavy == set()


def test_dry_run_loads_neither_the_runner_nor_the_record_reader(workdir):
    result, heavy = _newly_loaded(
        "__import__('backends.cli.submit', fromlist=['main']).main(['slurm', '--cfg', %r, '--dry-run', "
        "'--array', 'JOB=1:4', '--output-file', 'log/t.JOB.log', '--', 'true'])" % str(SITE),
        workdir, {"textual", "rich", "backends.launch", "backends.attempt", "backends.records.record",
                  "backends.records.attempts", "backends.watch"})
    assert result["code"] == 0
    assert "--array=1-4" in result["out"]
    assert heavy == set()


def test_checkpoint_retry_loads_no_writer_launcher_or_ui(workdir):
    result, heavy = _newly_loaded(
        "__import__('sharding.cli', fromlist=['main']).main(['retry', 'ck'])",
        workdir, {"textual", "rich", "jsonargparse", "yaml", "subprocess", "tempfile", "backends.launch",
                  "backends.submit"})
    assert result["code"] == 0
    assert "1-2,4-10" in result["out"]
    assert heavy == set()


def test_a_first_local_submission_loads_no_task_rows_states_or_usage(tmp_path):
    """Only a pattern submitted before has tasks that may still be live: a first run does without the
    row builder (and the state and usage parsing under it) that judges them; a rerun loads it."""
    call = ("__import__('backends.cli.submit', fromlist=['main']).main(['local', '--cfg', %r, '--array', "
            "'JOB=1:3', '--output-file', 'log/f.JOB.log', '--', 'true'])" % str(SITE))
    result, heavy = _newly_loaded(call, tmp_path, {"backends.watch.rows", "backends.states",
                                                   "backends.watch.usage", "textual", "rich"})
    assert result["code"] == 0
    assert "JOB=3: ok" in result["out"]
    assert heavy == set()
    again, loaded = _newly_loaded(call, tmp_path, {"backends.watch.rows"})
    assert again["code"] == 0 and "JOB=3: ok" in again["out"]
    assert loaded == {"backends.watch.rows"}
