"""A data-curation day on the real cluster, as a user runs it: a sharded pipeline of their own
(tests/fixtures/curate_task.py: 30 docs hashed to 6 logical shards, the NeMo Curator layout written
by hand, failed-task records holding `task_ids` and `errors` as the README says), a site whose
max_array_size of 4 makes every submission and retry windowed, docs that fail every time and docs
that fail while a file exists (deleted between rounds)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import run_cli

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
