"""On the real cluster: a shard fails in a small array, and its failed-task record is named by the task
hyperion-jobs shows (`12358_3`), not by the task's own SLURM_JOB_ID (`12361`) its folder holds."""
import asyncio
import json
from pathlib import Path

import pytest
from conftest import run_cli
from test_console_fixtures import checkpoint_read, table_column
from test_sharding_e2e_slurm import run_four_shards_one_failing

from hyperion_console.app import make_app
from sharding.assign import shard_for

CONF = Path(__file__).resolve().parents[1] / "conf"


@pytest.mark.slurm
def test_a_failed_shards_record_names_the_task_as_hyperion_jobs_does(slurm_cluster, test_site, tmp_path, cli_env):
    bad_shard = shard_for("p000002", 4, 1)      # holds doc-0002-0001
    ran = run_four_shards_one_failing(tmp_path, test_site, cli_env)
    assert ran.returncode == 1, ran.stderr
    record = tmp_path / "log" / "q" / "shard.SHARD.submit.json"
    status = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    (task,) = [t for t in status["tasks"] if t["value"] == bad_shard]
    assert task["state"] == "FAILED" and "_" in task["slurm_id"], task      # e.g. 12358_3
    ck = str(tmp_path / "ck")

    listed = run_cli("hyperion-checkpoint", "failed", ck, env=cli_env)
    line = listed.stdout.splitlines()[0]
    assert line.startswith(f"shard {bad_shard}  job {task['slurm_id']}  array_task {task['task_id']}  "), listed.stdout
    (failed,) = json.loads(run_cli("hyperion-checkpoint", "failed", ck, "--json", env=cli_env).stdout)
    assert failed["slurm_id"] == task["slurm_id"] and failed["slurm_job"].isdigit()   # the task's own job id kept
    # the id shown is one hyperion-jobs takes: its log is the failed task's
    logs = run_cli("hyperion-jobs", "logs", task["slurm_id"], cwd=tmp_path, env=cli_env)
    assert logs.returncode == 0 and "doc-0002-0001" in logs.stdout, logs.stdout + logs.stderr

    async def console() -> None:
        app = make_app(cfg_dir=CONF, checkpoint=Path(ck), search_dirs=[tmp_path])
        async with app.run_test(size=(120, 30)) as pilot:
            await checkpoint_read(pilot)
            assert table_column(app.checkpoint_screen.query_one("#ckpt-failed"), "job") == [task["slurm_id"]]

    asyncio.run(console())
