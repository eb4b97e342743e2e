"""Usage and memory enforcement on the real cluster: what sacct measures, OUT_OF_MEMORY, retry sizes.

The cluster (tests/slurm/up.sh) enforces --mem with the cgroup memory controller
and samples accounting every second, so a task of a few seconds is measured.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import SLURM_UP, run_cli

from backends.records.record import load_record
from backends.retry_sizes import propose_sizes
from backends.watch.usage import parse_size, parse_usage, usage_argv

pytestmark = pytest.mark.slurm
MB = 1000 ** 2
HOLD = "import sys, time; x = b'\\1' * (int(sys.argv[1]) << 20); time.sleep(4)"


def _enforcing() -> bool:
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True).stdout
    settings = {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in config.splitlines())}
    return "MEMORY" in settings.get("SelectTypeParameters", "") and (
        "task/cgroup" in settings.get("TaskPlugin", "") or "OverMemoryKill" in settings.get("JobAcctGatherParams", ""))


@pytest.fixture(scope="module")
def enforced_memory(slurm_cluster) -> None:
    """The cluster as this tree's up.sh configures it; re-applied (as root) if someone changed it."""
    if not _enforcing():
        subprocess.run(["bash", str(SLURM_UP)], capture_output=True, text=True, timeout=300)
    assert _enforcing(), "the cluster does not enforce --mem: run tests/slurm/up.sh of this tree"


def submit(site: Path, tmp_path: Path, env: dict[str, str], *argv: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """hyperion-submit slurm as a user runs it; its result and the job ids from its record."""
    done = run_cli("hyperion-submit", "slurm", "--cfg", str(site), *argv, cwd=tmp_path, env=env, timeout=300)
    records = sorted((tmp_path / "log" / "q").glob("*.submit.json"), key=lambda p: p.stat().st_mtime)
    assert records, done.stdout + done.stderr
    return done, [job.job_id for job in load_record(records[-1]).jobs]


def usage_of(job_ids: list[str], tasks: int) -> dict:
    """parse_usage of one sacct run, once accounting has every task's peak and request.

    Both lag: right after a job ended its row has been seen without ReqMem and Timelimit.
    """
    deadline = time.monotonic() + 60
    while True:
        out = subprocess.run(usage_argv(job_ids), capture_output=True, text=True, check=True).stdout
        usage = parse_usage(out)
        known = [u for u in usage.values() if u.max_rss_bytes is not None and u.req_mem_bytes is not None]
        if len(known) >= tasks or time.monotonic() > deadline:
            return usage
        time.sleep(1)


def test_tasks_holding_300_mb_report_it_as_max_rss(enforced_memory, test_site, tmp_path, cli_env) -> None:
    done, jobs = submit(test_site, tmp_path, cli_env, "--mem", "1G", "--array", "T=1:2",
                        "--output-file", "log/hold.T.log", "--", "python", "-c", HOLD, "300")
    assert done.returncode == 0, done.stderr
    usage = usage_of(jobs, 2)
    assert sorted(key[1] for key in usage) == [1, 2]
    for task in usage.values():
        assert 250 * MB <= task.max_rss_bytes <= 600 * MB, task
        assert (task.req_mem_bytes, task.alloc_cpus, task.time_limit_seconds) == (1024 ** 3, 1, 600.0)
        assert task.elapsed_seconds >= 4 and task.cpu_seconds > 0


def test_over_its_mem_a_task_is_out_of_memory_and_the_proposals_get_it_done(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """600 MB in a 100M job; retried with each proposal until it fits (at least 600 MB)."""
    mem, proposals = "100M", []
    for attempt in range(5):
        done, jobs = submit(test_site, tmp_path, cli_env, "--mem", mem, "--output-file",
                            f"log/oom{attempt}.log", "--", "python", "-c", HOLD, "600")
        if done.returncode == 0:
            break
        assert done.returncode == 1 and "OUT_OF_MEMORY" in done.stderr, done.stderr
        (key, usage), = usage_of(jobs, 1).items()
        assert usage.req_mem_bytes == parse_size(mem, "M")
        proposal = propose_sizes([("OUT_OF_MEMORY", usage)])
        assert proposal.mem is not None and parse_size(proposal.mem, "M") >= 2 * usage.req_mem_bytes
        assert proposal.time is None and len(proposal.reasons) == 1
        proposals.append(proposal.mem)
        mem = proposal.mem
    assert done.returncode == 0, f"still failing after {proposals}: {done.stderr}"
    assert proposals and parse_size(mem, "M") >= 600 * MB and len(proposals) <= 3, proposals
