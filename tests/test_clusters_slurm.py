"""A site file that sends the jobs to a named cluster (`--clusters=NAME`, sbatch's -M): hyperion-submit's
wait, status and retry ask that cluster, against the real cluster.

The test cluster is the only one there is, so the local cluster is made another one for the commands
the test runs: SLURM_CONF names a copy of slurm.conf whose ClusterName is `elsewhere` and whose
controller port nobody listens on, as on the login node of another cluster. Only what asks the
cluster by its name (-M, found through slurmdbd) reaches the jobs. Before the record kept the
cluster sbatch answered for, the wait said "controller (squeue) not answering" until it was killed,
and status showed every task UNKNOWN.
"""
from __future__ import annotations

import json
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import TEST_SITE, run_cli

pytestmark = pytest.mark.slurm


def _config() -> dict[str, str]:
    text = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True).stdout
    return {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in text.splitlines())}


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def elsewhere(slurm_cluster, tmp_path, cli_env) -> tuple[str, dict[str, str]]:
    """The test cluster's name, and an environment whose local cluster is another one."""
    config = _config()
    name, conf = config.get("ClusterName", ""), Path(config.get("SLURM_CONF", "/etc/slurm/slurm.conf"))
    listed = subprocess.run(["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"],
                            capture_output=True, text=True).stdout.split()
    if not name or name not in listed or not conf.is_file():
        pytest.skip(f"cluster {name!r} is not registered in slurmdbd (sacctmgr list cluster: {listed})")
    lines = [line for line in conf.read_text().splitlines()
             if not line.strip().lower().startswith(("clustername", "slurmctldport"))]
    copy = tmp_path / "elsewhere" / "slurm.conf"
    copy.parent.mkdir()
    copy.write_text("\n".join([*lines, "ClusterName=elsewhere", f"SlurmctldPort={_unused_port()}", ""]))
    return name, {**cli_env, "SLURM_CONF": str(copy)}


def _submit_in_background(site: Path, script: str, values: str, tmp_path: Path,
                          env: dict[str, str]) -> tuple[subprocess.Popen, Path]:
    """hyperion-submit of an array V=`values` running `script` (bash, given V), started in the
    background: the process and the record's path, once the record is there (or 30 s have passed)."""
    task = tmp_path / "task.sh"
    task.write_text(f"#!/bin/bash\n{script}\n")
    task.chmod(0o755)
    record = tmp_path / "log" / "q" / "t.V.submit.json"
    submit = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(site), "--array", f"V={values}",
                               "--output-file", str(tmp_path / "log" / "t.V.log"), "--", str(task), "V"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return submit, record


@contextmanager
def _submitting(cluster: str, tmp_path: Path, env: dict[str, str], seconds: int):
    """hyperion-submit of a 2-task array on `cluster` whose tasks sleep `seconds`, running in the background: yields
    the process and the job id once its record names it; whatever the test did, the process is stopped
    and nothing of it is left on the shared cluster."""
    submit, record = _submit_in_background(_site(tmp_path, cluster), f"sleep {seconds}", "1:2", tmp_path, env)
    job = None
    try:
        job = json.loads(record.read_text())["jobs"][0]["job_id"]
        yield submit, job
    finally:
        if submit.poll() is None:
            submit.terminate()
            try:
                submit.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                submit.kill()
                submit.communicate()
        if job is not None:
            subprocess.run(["scancel", "-M", cluster, job], capture_output=True)


def _site(tmp_path: Path, cluster: str) -> Path:
    text = TEST_SITE.read_text().replace("base_options:\n", f"base_options:\n  - --clusters={cluster}\n", 1)
    assert f"--clusters={cluster}" in text
    site = tmp_path / "site.yaml"
    site.write_text(text)
    return site


def _states(record: Path, env: dict[str, str], cwd: Path) -> dict[int, tuple[str, int]]:
    done = run_cli("hyperion-jobs", "status", "--json", str(record), cwd=cwd, env=env, timeout=60)
    return {t["value"]: (t["state"], t["attempt"]) for t in json.loads(done.stdout)["tasks"]}


def test_an_array_sent_to_a_named_cluster_is_waited_for_shown_and_retried_there(elsewhere, tmp_path):
    cluster, env = elsewhere
    site = _site(tmp_path, cluster)
    submit, record = _submit_in_background(site, "sleep 6\ncase $1 in 2|4) exit 3;; esac", "1:4", tmp_path, env)
    try:
        # asked while the tasks run (no end in the ledger yet): Slurm's answer, not UNKNOWN
        live = _states(record, env, tmp_path)
        assert set(live) == {1, 2, 3, 4}
        assert {state for state, _ in live.values()} <= {"PENDING", "RUNNING", "COMPLETED", "FAILED"}, live
        out, err = submit.communicate(timeout=120)
        assert json.loads(record.read_text())["cluster"] == cluster
    finally:
        if submit.poll() is None:
            submit.kill()
            submit.communicate()
    assert submit.returncode == 1, err
    assert "not answering" not in err
    assert "T=" not in err and "V=2 (job" in err and "V=4 (job" in err and "V=1 (job" not in err
    assert _states(record, env, tmp_path) == {1: ("COMPLETED", 1), 2: ("FAILED", 1), 3: ("COMPLETED", 1),
                                              4: ("FAILED", 1)}

    retried = run_cli("hyperion-jobs", "retry", "--yes", str(record), cwd=tmp_path, env=env, timeout=120)
    assert retried.returncode == 1, retried.stderr
    assert "retrying 2 task(s)" in retried.stderr and "not answering" not in retried.stderr, retried.stderr
    second = json.loads(record.read_text())
    assert (second["attempt"], second["cluster"]) == (2, cluster)
    assert [t["value"] for t in second["tasks"]] == [2, 4]
    assert _states(record, env, tmp_path) == {1: ("COMPLETED", 1), 2: ("FAILED", 2), 3: ("COMPLETED", 1),
                                              4: ("FAILED", 2)}
    # the retry went to the named cluster: accounting there has its job
    job = second["jobs"][0]["job_id"]
    there = subprocess.run(["sacct", "-M", cluster, "-j", job, "-X", "-n", "-P", "-o", "jobid,state"],
                           capture_output=True, text=True, env=env).stdout.split()
    assert sorted(there) == [f"{job}_2|FAILED", f"{job}_4|FAILED"]


def test_an_interrupted_wait_cancels_the_jobs_on_the_named_cluster(elsewhere, tmp_path):
    """SIGTERM (or Ctrl-C) during hyperion-submit's wait cancels what it queued. With a site file's
    --clusters the scancel asked the local cluster: 'could not cancel J: ... Unable to contact slurm
    controller', and the jobs ran on."""
    cluster, env = elsewhere
    with _submitting(cluster, tmp_path, env, 120) as (submit, job):
        time.sleep(2)
        submit.terminate()
        _, err = submit.communicate(timeout=90)
    assert "could not cancel" not in err, err
    assert f"cancelled job(s) {job}" in err, err
    deadline = time.monotonic() + 30
    while True:
        there = subprocess.run(["sacct", "-M", cluster, "-j", job, "-X", "-n", "-P", "-o", "state"],
                               capture_output=True, text=True).stdout.splitlines()
        if (there and all(state.startswith("CANCELLED") for state in there)) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert there and all(state.startswith("CANCELLED") for state in there), there


def test_a_job_no_record_names_is_found_and_shown_on_the_named_cluster(elsewhere, tmp_path):
    """A job from this pattern's batch script that no record names (a submission killed after sbatch
    answered) refuses the next submission. With a site file's --clusters it was looked for on the
    local cluster only: not found, and a second submission wrote the same logs; the hint said
    'scancel J' without -M."""
    cluster, env = elsewhere
    site = _site(tmp_path, cluster)
    q = tmp_path / "log" / "q"
    q.mkdir(parents=True)
    script = q / "t.sh"
    script.write_text("#!/bin/bash\nsleep 120\n")
    queued = subprocess.run(["sbatch", "-M", cluster, "--parsable", "-o", "/dev/null", "-t", "5", str(script)],
                            capture_output=True, text=True, cwd=tmp_path, check=False)
    assert queued.returncode == 0, queued.stderr
    job = queued.stdout.strip().split(";")[0]
    try:
        done = run_cli("hyperion-submit", "slurm", "--cfg", str(site), "--output-file", str(tmp_path / "log" / "t.log"),
                       "--", "true", cwd=tmp_path, env=env, timeout=120)
    finally:
        subprocess.run(["scancel", "-M", cluster, job], capture_output=True, check=False)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert f"Slurm still runs job(s) {job}" in done.stderr, done.stderr
    assert f"wait for it or scancel -M {cluster} {job} before" in done.stderr, done.stderr


def test_list_shows_the_live_jobs_of_a_record_on_a_named_cluster(elsewhere, tmp_path, cli_env):
    """`hyperion-jobs list`'s live jobs were `squeue -u USER` on the local cluster only: a running -M
    record's jobs were not among them. Asked from the cluster itself (local = named), each is listed once."""
    cluster, env = elsewhere
    with _submitting(cluster, tmp_path, env, 60) as (_, job):
        listed = run_cli("hyperion-jobs", "list", "--json", str(tmp_path / "log"), cwd=tmp_path, env=env, timeout=120)
        here = run_cli("hyperion-jobs", "list", "--json", str(tmp_path / "log"), cwd=tmp_path, env=cli_env, timeout=120)
    live = json.loads(listed.stdout)["live"]
    assert any(j["job_id"].startswith(f"{job}_") and j["cluster"] == cluster for j in live), listed.stdout
    assert "no row" not in listed.stdout + listed.stderr, listed
    mine = [j["job_id"] for j in json.loads(here.stdout)["live"] if j["job_id"].startswith(f"{job}_")]
    assert mine and len(mine) == len(set(mine)), here.stdout      # the named cluster is the local one: once


def test_list_of_an_ended_record_of_a_cluster_since_gone_says_no_failure(slurm_cluster, tmp_path, cli_env):
    """`hyperion-jobs list` of a folder holding an old record of a cluster that is gone (every end
    recorded) asked `squeue -M` of that cluster for the live jobs on every run: 'squeue failed (rc 1):
    squeue: error: No cluster 'oldwest' known by database. (the live jobs listed may miss some)',
    or 'live Slurm jobs for USER: not known' with no job of yours queued. Only the clusters of
    records with a task without a recorded end are asked."""
    from test_console_fixtures import build_history

    record = build_history(tmp_path, Path(TEST_SITE), n=4, job="99999997")       # every end recorded
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "cluster": "oldwest"}))
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), cwd=tmp_path, env=cli_env, timeout=120)
    assert listed.returncode == 0 and listed.stderr == "", listed
    assert "not known" not in listed.stdout, listed.stdout
    as_json = run_cli("hyperion-jobs", "list", "--json", str(tmp_path), cwd=tmp_path, env=cli_env, timeout=120)
    assert json.loads(as_json.stdout)["error"] is None, as_json.stdout


def test_a_job_id_no_record_names_is_asked_of_the_cluster_minus_m_names(elsewhere, tmp_path):
    """A job queued on another cluster (a user's own `sbatch -M`, a site that sends jobs elsewhere)
    that no record names: `status J`, `logs J`, `cancel J` and `watch J` asked the local cluster
    only ('not answering' here, `Slurm knows no job J` where the local cluster answers). With
    `-M NAME`, as squeue, sacct and scancel take it, they ask NAME."""
    cluster, env = elsewhere
    out = tmp_path / "job.out"
    queued = subprocess.run(["sbatch", "-M", cluster, "--parsable", "-o", str(out), "-t", "5",
                             "--wrap", "echo hello from elsewhere; sleep 120"],
                            capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert queued.returncode == 0, queued.stderr
    job = queued.stdout.strip().split(";")[0]
    try:
        here = run_cli("hyperion-jobs", "status", job, cwd=tmp_path, env=env, timeout=120)
        assert here.returncode == 1 and "not answering" in here.stderr, here
        there = run_cli("hyperion-jobs", "status", "--json", "-M", cluster, job, cwd=tmp_path, env=env, timeout=120)
        assert there.returncode == 0, there
        assert [t["state"] for t in json.loads(there.stdout)["tasks"]] in (["PENDING"], ["RUNNING"]), there.stdout
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_text()) and time.monotonic() < deadline:
            time.sleep(0.5)
        logs = run_cli("hyperion-jobs", "logs", "--clusters", cluster, job, cwd=tmp_path, env=env, timeout=120)
        assert (logs.returncode, logs.stdout) == (0, "hello from elsewhere\n"), logs
        assert run_cli("hyperion-jobs", "logs", job, cwd=tmp_path, env=env, timeout=120).returncode == 2
        kept = run_cli("hyperion-jobs", "cancel", "--yes", job, cwd=tmp_path, env=env, timeout=120)
        assert kept.returncode == 1 and "cancelled" not in kept.stdout, kept
        cancelled = run_cli("hyperion-jobs", "cancel", "--yes", "-M", cluster, job, cwd=tmp_path, env=env, timeout=120)
        assert cancelled.returncode == 0, cancelled
        assert cancelled.stdout == f"cancelled {job} on cluster {cluster}\n", cancelled.stdout
        watched = run_cli("hyperion-jobs", "watch", "-M", cluster, job, cwd=tmp_path, env=env, timeout=120)
        assert watched.returncode == 1 and "1 task: CANCELLED 1" in watched.stdout, watched
    finally:
        subprocess.run(["scancel", "-M", cluster, job], capture_output=True, check=False)
    there = subprocess.run(["sacct", "-M", cluster, "-j", job, "-X", "-n", "-P", "-o", "state"],
                           capture_output=True, text=True).stdout.split()
    assert there and there[0].startswith("CANCELLED"), there


def test_a_record_whose_retry_went_to_a_named_cluster_asks_each_attempt_on_its_own(elsewhere, tmp_path, cli_env):
    """Attempt 1 queued without -M (the local cluster), its retry after the site file gained
    --clusters=NAME: every query about attempt 1's job asked `-M NAME` (on another cluster its tasks
    were UNKNOWN and their ends lost). One cluster cannot show the UNKNOWN (here the local cluster is
    NAME, and under `elsewhere`'s SLURM_CONF attempt 1's local cluster cannot be reached at all), so
    the squeue and sacct the commands run are recorded: attempt 1's job is asked without -M, attempt
    2's with -M NAME, never both in one query; the states are right; one cluster's look is one of each."""
    import shutil

    cluster, _ = elsewhere
    wrap, calls = tmp_path / "wrap", tmp_path / "calls"
    wrap.mkdir()
    for client in ("squeue", "sacct"):
        (wrap / client).write_text(f'#!/bin/bash\necho "{client} $*" >> {calls}\nexec {shutil.which(client)} "$@"\n')
        (wrap / client).chmod(0o755)
    env = {**cli_env, "PATH": f"{wrap}:{cli_env['PATH']}"}
    site = tmp_path / "site.yaml"
    site.write_text(TEST_SITE.read_text())
    submit, record = _submit_in_background(site, 'sleep 2\n[ "$1" = 1 ]', "1:2", tmp_path, cli_env)
    submit.kill()          # no wait: attempt 1's ends are not in the ledger
    submit.communicate()
    first = json.loads(record.read_text())["jobs"][0]["job_id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ended = subprocess.run(["sacct", "-j", first, "-X", "-n", "-P", "-o", "state"], capture_output=True,
                               text=True).stdout.split()
        if len(ended) == 2 and all(state in ("COMPLETED", "FAILED") for state in ended):
            break
        time.sleep(1)
    site.write_text(_site(tmp_path / "wrap", cluster).read_text())        # the site file now sends jobs to NAME
    retried = run_cli("hyperion-jobs", "retry", "--yes", str(record), cwd=tmp_path, env=env, timeout=120)
    assert retried.returncode == 1 and "retrying 1 task(s)" in retried.stderr, retried.stderr
    second = json.loads(record.read_text())
    assert (second["attempt"], second["cluster"]) == (2, cluster)
    later = second["jobs"][0]["job_id"]
    assert _states(record, env, tmp_path) == {1: ("COMPLETED", 1), 2: ("FAILED", 2)}
    asked = calls.read_text().splitlines()
    of_first = [line for line in asked if first in line.replace(",", " ").split()]
    of_later = [line for line in asked if later in line.replace(",", " ").split()]
    assert of_first and of_later, asked
    assert all("-M" not in line.split() for line in of_first), of_first
    assert all(f"-M {cluster} " in line for line in of_later), of_later

    calls.unlink()
    done = run_cli("hyperion-jobs", "status", later, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 0 and "1 task: FAILED 1" in done.stdout, (done.stdout, done.stderr)
    asked = calls.read_text().splitlines()
    assert sorted(line.split()[:3] for line in asked) == [["sacct", "-M", cluster], ["squeue", "-M", cluster]], asked
