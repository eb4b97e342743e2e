"""hyperion-jobs on a record of a real local run (no Slurm needed)."""
from __future__ import annotations

import json

from conftest import run_cli


def test_status_and_watch_of_a_local_array_that_stopped_at_a_failure(tmp_path, cli_env, test_site):
    (tmp_path / "task.sh").write_text('echo "value $IDX"; [ "$IDX" = 2 ] && exit 4; exit 0\n')
    submitted = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--array", "IDX=1:3",
                        "--output-file", "log/r.IDX.log", "--", "bash", "task.sh", cwd=tmp_path, env=cli_env)
    assert submitted.returncode == 1, submitted.stderr
    record = tmp_path / "log" / "q" / "r.IDX.submit.json"

    status = run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert [(t["value"], t["state"], t["exit_code"]) for t in shown["tasks"]] == [
        (1, "COMPLETED", 0), (2, "FAILED", 4), (3, "NOT_RUN", None)]
    assert shown["exit_status"] == 1

    watch = run_cli("hyperion-jobs", "watch", str(tmp_path / "log" / "q"), env=cli_env, timeout=30)
    assert watch.returncode == 1 and "3 tasks: COMPLETED 1, FAILED 1, NOT_RUN 1" in watch.stdout

    logs = run_cli("hyperion-jobs", "logs", f"{record}:2", env=cli_env)
    assert logs.returncode == 0 and "value 2" in logs.stdout
