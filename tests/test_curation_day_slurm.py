"""A data-curation day on the real cluster, as a user runs it: a sharded pipeline of their own
(tests/fixtures/curate_task.py: 30 docs hashed to 6 logical shards, the NeMo Curator layout written
by hand, failed-task records holding `task_ids` and `errors` as the README says), a site whose
max_array_size of 4 makes every submission and retry windowed, docs that fail every time and docs
that fail while a file exists (deleted between rounds)."""
from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from test_console_fixtures import checkpoint_read, table_column, text_of, wait_for

from hyperion_console.app import make_app
from hyperion_console.screens.confirm import ConfirmScreen
from hyperion_console.screens.jobs import JobsScreen

REPO = Path(__file__).resolve().parents[1]
TASK = REPO / "tests" / "fixtures" / "curate_task.py"
# doc016 is shard 2's (fails every round); doc009 and doc010 are shard 5's (fail while `flaky` exists)
BAD, FLAKY = "doc016", "doc009 doc010"


def _day(tmp_path: Path) -> tuple[Path, list[str]]:
    """The site folder (max_array_size 4) and the task's command line."""
    sites = tmp_path / "sites"
    sites.mkdir()
    site = (REPO / "conf" / "submit_test_cluster.yaml").read_text().replace("max_array_size: 1001",
                                                                            "max_array_size: 4")
    (sites / "small.yaml").write_text(site.replace('time: "00:10:00"', 'time: "00:02:00"'))
    (tmp_path / "bad").write_text(BAD)
    (tmp_path / "flaky").write_text(FLAKY)
    command = [sys.executable, str(TASK), "--shard-index", "SHARD", "--total-shards", "6",
               "--minimum-shard-index", "1", "--ckpt", str(tmp_path / "ckpt"),
               "--bad", str(tmp_path / "bad"), "--flaky", str(tmp_path / "flaky")]
    return sites, command


@pytest.mark.slurm
def test_failed_shows_the_errors_the_users_pipeline_recorded(slurm_cluster, tmp_path: Path, cli_env) -> None:
    """`hyperion-checkpoint failed` said '(no error text)' of every record holding `errors`, the key the
    README tells a writer to use (it read only `error`, which the example pipeline also writes)."""
    sites, command = _day(tmp_path)
    first = run_cli("hyperion-submit", "slurm", "--cfg", str(sites / "small.yaml"), "--array", "SHARD=1:6",
                    "--output-file", str(tmp_path / "log" / "cur.SHARD.log"), "--", *command,
                    cwd=tmp_path, env=cli_env, timeout=300)
    assert first.returncode == 1, first.stderr
    assert "(--array=1-3, offset 0)" in first.stderr and "(--array=0-2, offset 4)" in first.stderr
    ckpt = str(tmp_path / "ckpt")
    failed = run_cli("hyperion-checkpoint", "failed", ckpt, env=cli_env)
    assert failed.returncode == 0, failed.stderr
    lines = {line.split()[1]: line for line in failed.stdout.splitlines() if line.startswith("shard ")}
    assert lines.keys() == {"2", "5"}
    assert lines["2"].endswith("tasks doc016  ValueError: corrupt record in doc016")
    assert lines["5"].endswith("tasks doc009,doc010  OSError: transient read error doc009 (+1 more)")

    (tmp_path / "flaky").unlink()          # the transient errors are gone: round 2
    record = tmp_path / "log" / "q" / "cur.SHARD.submit.json"
    again = run_cli("hyperion-checkpoint", "retry", ckpt, "--submit", str(record), env=cli_env, timeout=300)
    assert again.returncode == 1, again.stderr           # shard 2 fails for good
    failed = run_cli("hyperion-checkpoint", "failed", ckpt, env=cli_env).stdout
    assert "OSError: transient read error doc009 (+1 more)  (shard complete since)" in failed
    assert failed.count("ValueError: corrupt record in doc016") == 2 and "(no error text)" not in failed


@pytest.mark.slurm
def test_from_the_submit_screen_to_the_checkpoint_screens_resubmit(slurm_cluster, tmp_path: Path,
                                                                   monkeypatch) -> None:
    """Started as `hyperion-console --cfg-dir sites`, submitted from the Submit screen: the Checkpoint
    screen said 'No checkpoint: start with --checkpoint PATH', so the run's retry needed quitting and
    starting again. It now shows the checkpoint the open submission's command names, and resubmits."""
    sites, command = _day(tmp_path)
    monkeypatch.chdir(tmp_path)

    async def scenario() -> None:
        app = make_app(cfg_dir=sites, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            submit = app.submit_screen
            for name, value in {"backend": "slurm", "array": "SHARD=1:6", "output_file": "log/cur.SHARD.log",
                                "command": shlex.join(command)}.items():
                submit.set_field(name, value)
            await pilot.pause()
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 90)
            tasks = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: sorted(table_column(tasks, "state"))
                           == ["COMPLETED"] * 4 + ["FAILED"] * 2, 180)

            await pilot.press("3")
            await checkpoint_read(pilot)
            screen = app.checkpoint_screen
            run = text_of(screen.query_one("#ckpt-run"))
            assert f"checkpoint {tmp_path / 'ckpt'}" in run, run
            assert f"(named by the command of {tmp_path / 'log' / 'q' / 'cur.SHARD.submit.json'})" in run
            assert screen.query_one("#record-path").value == str(tmp_path / "log" / "q" / "cur.SHARD.submit.json")
            assert table_column(screen.query_one("#retry-windows"), "array") == ["2", "1"]   # 2 and 5 at offset 4

            (tmp_path / "flaky").unlink()
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: app.screen is app.jobs_screen
                           and table_column(tasks, "attempt")[1] == "2", 60)
            await wait_for(pilot, lambda: table_column(tasks, "state")[4] == "COMPLETED"
                           and table_column(tasks, "state")[1] == "FAILED", 180)
            await pilot.press("3")
            await wait_for(pilot, lambda: "missing 2 " in text_of(screen.query_one("#retry-summary")), 20)

    asyncio.run(scenario())
