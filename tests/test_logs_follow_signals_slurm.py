"""`hyperion-jobs logs -f` ended by its terminal closing (SIGHUP: a tmux pane killed, an ssh
session dropped) or by SIGTERM ends as Ctrl-C ends it, as `hyperion-jobs watch` does.

It died where it stood: exit by the signal, and the squeue or sacct it was waiting for (in a
process group of its own) ran on after it; even Ctrl-C left such a query behind, since the
thread that runs it was not waited for. Now the query's group is killed and the exit status
is 128 + the signal.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time

import pytest
from conftest import submit_real_array
from test_jobs_poller import group_gone, started_groups

pytestmark = pytest.mark.slurm


def answering_then_hanging(bin_dir, tool: str, hang, pids) -> None:
    """`tool` on PATH: the real one's answer, then, once the file `hang` exists, a wait for ever
    before exiting, as a site wrapper that hangs after its client answered."""
    bin_dir.mkdir(exist_ok=True)
    real = shutil.which(tool)
    assert real is not None
    path = bin_dir / tool
    path.write_text(f'#!/bin/sh\n{real} "$@"\nrc=$?\nif [ -e {hang} ]; then echo $$ >> {pids}; sleep 3600; fi\n'
                    "exit $rc\n")
    path.chmod(0o755)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_logs_follow_of_a_growing_log_ended_by_a_signal_ends_cleanly_with_its_query(
        slurm_cluster, tmp_path, cli_env, signum):
    record = submit_real_array(tmp_path / "log" / "grow.JOB.log", "JOB=1:1", "sh", "-c",
                               "i=0; while [ $i -lt 600 ]; do echo tick $i; i=$((i+1)); sleep 0.2; done",
                               cwd=tmp_path)
    job = record.jobs[0].job_id
    hang, pids = tmp_path / "hang", tmp_path / "pids"
    for tool in ("squeue", "sacct"):
        answering_then_hanging(tmp_path / "bin", tool, hang, pids)
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    follow = subprocess.Popen(["hyperion-jobs", "logs", f"{record.path}:1", "-f"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(line.strip() for line in follow.stdout), daemon=True)
    try:
        reader.start()
        deadline = time.monotonic() + 300          # the shared cluster may hold it a while
        while time.monotonic() < deadline and sum(line.startswith("tick ") for line in seen) < 10:
            time.sleep(0.2)
        assert sum(line.startswith("tick ") for line in seen) >= 10, f"the task's log never grew: {seen}"
        hang.touch()                               # the next query answers, then hangs
        pgid = started_groups(pids)[0]
        time.sleep(0.5)
        follow.send_signal(signum)
        follow.wait(15)
        reader.join(5)
        err = follow.stderr.read()
    finally:
        follow.kill()
        subprocess.run(["scancel", job])
        for pid in (int(p) for p in pids.read_text().split()) if pids.exists() else ():
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert follow.returncode == 128 + signum, (follow.returncode, err)
    assert "Traceback" not in err, err
    assert group_gone(pgid), "the query logs -f waited for outlived it"
    assert all(line.startswith(("tick ", "# ")) for line in seen), seen     # the log's header, then the task's
