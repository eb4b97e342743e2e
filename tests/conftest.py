"""Shared fixtures: the real Slurm cluster, the test site file, running the CLIs."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_SITE = REPO / "conf" / "submit_test_cluster.yaml"
SLURM_UP = REPO / "tests" / "slurm" / "up.sh"


def _cluster_answers() -> bool:
    if not shutil.which("scontrol") or not shutil.which("sacct"):
        return False
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True)
    acct = subprocess.run(["sacct", "-n", "-X", "-S", "now"], capture_output=True, text=True)
    return ping.returncode == 0 and "UP" in ping.stdout and acct.returncode == 0


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """Make sure the project's single-node cluster runs; start it (as root) if not.

    Under CI a cluster that cannot be started fails the test rather than skipping it.
    """
    if _cluster_answers():
        return
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("Slurm is not running and tests/slurm/up.sh needs root")
        pytest.skip("Slurm is not running and tests/slurm/up.sh needs root")
    result = subprocess.run(["bash", str(SLURM_UP)], capture_output=True, text=True)
    if result.returncode != 0 or not _cluster_answers():
        pytest.fail(f"tests/slurm/up.sh failed:\n{result.stdout}\n{result.stderr}")


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


@pytest.fixture
def test_site() -> Path:
    """The site YAML of the test cluster (partitions cpu/gpu, fake v100, MaxArraySize 1001)."""
    return TEST_SITE


@pytest.fixture
def cli_env() -> dict[str, str]:
    """An environment whose PATH finds this interpreter's console scripts first."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("SLURM_ARRAY_TASK_ID", None)
    return env


def run_cli(*argv: str, cwd: Path | str | None = None, env: dict[str, str] | None = None,
            timeout: float = 600, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run one of the project's console scripts as a user would, capturing its output."""
    path_env = env if env is not None else {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(list(argv), cwd=cwd, env=path_env, capture_output=True, text=True,
                          timeout=timeout, input=input)


def first_job_once_recorded(record: Path, within: float = 60) -> str:
    """The first job id of `record`, once a hyperion-submit started in the background wrote it (waited
    for up to `within` s)."""
    deadline = time.monotonic() + within
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return json.loads(record.read_text())["jobs"][0]["job_id"]


def submit_real_array(output_file: Path, array: str, *command: str, time_limit: str = "00:02:00",
                      extra: tuple[str, ...] = (), cwd: Path | None = None):
    """Submit `command` as a real array to the test cluster, as `hyperion-submit slurm` would.

    The tests that watch a live array all started the same way; `cwd` is where the
    submission's `q/` goes when the test needs it beside its logs."""
    from backends.launch import working_dir
    from backends.launch_slurm import submit
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan

    site, options = parse_submit_argv(["slurm", "--cfg", str(TEST_SITE), "--array", array, "--time", time_limit,
                                       *extra, "--output-file", str(output_file), "--", *command])
    plan = build_plan(site, options)
    if cwd is None:
        return submit(plan)
    with working_dir(str(cwd)):
        return submit(plan)


# --- hostile files and a user without rights ------------------------------------------------
# The tests run as root, whom no permission check stops. What a user without
# rights sees is run as root without the capabilities that bypass file
# permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): a chmod 000 folder or a
# read-only directory stops it as it stops any user, while the interpreter and
# the installed scripts (root's own files, wherever pip put them) still run.

def can_drop_rights() -> bool:
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def without_rights(*argv: str) -> list[str]:
    """`argv` run with file permissions enforced (root minus its permission-bypassing capabilities)."""
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *argv]


@pytest.fixture
def rightless_dir(tmp_path):
    """A directory for a check run `without_rights`."""
    if not can_drop_rights():
        pytest.skip("needs root and setpriv to run a check with file permissions enforced")
    yield tmp_path
    for root, dirs, _ in os.walk(tmp_path):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)   # a chmod 000 directory would stop the cleanup


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs mounted for the test: a task can fill it."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'mount failed'}); needs root")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def kill_groups(*groups: int | None) -> None:
    """SIGKILL each process group still there (a local task leads its own); None: never learnt."""
    for group in groups:
        if group is None:
            continue
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_noted_groups(pids: Path) -> None:
    """SIGKILL the process groups of the pids a wrapper script noted in `pids` (one per line), if any:
    a hung fake squeue/sacct must not outlive its test."""
    if pids.exists():
        kill_groups(*(int(p) for p in pids.read_text().split()))


@contextmanager
def reaped(runner: subprocess.Popen, *groups: int | None) -> Iterator[subprocess.Popen]:
    """The runner and the task groups a test started are gone after the block, however it ends:
    a failed assertion must not leave a task running beside the next test."""
    try:
        yield runner
    finally:
        kill_groups(*groups)
        if runner.poll() is None:
            runner.kill()
        runner.wait()


def retry_at_its_prompt(record: Path, cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`hyperion-jobs retry RECORD` left at its [y/N] (a terminal whose user has not answered yet),
    and what it said up to the question; the caller answers with `communicate` (and reaps it)."""
    waiting = subprocess.Popen(["hyperion-jobs", "retry", str(record)], cwd=cwd, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert waiting.stderr is not None
    prompt = ""
    while not prompt.endswith("[y/N] "):
        char = waiting.stderr.read(1)
        if not char:
            waiting.kill()
            waiting.wait()
            raise AssertionError(f"the retry ended before its question: {prompt}")
        prompt += char
    return waiting, prompt


def group_members(pgid: int) -> list[str]:
    """The pids of group `pgid` still running, from /proc: zombies aside (killpg(pgid, 0) counts an
    orphan that died but that PID 1 has not reaped yet)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_bytes().rpartition(b")")[2].split()
        except OSError:
            continue
        if entry.name.isdigit() and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            found.append(entry.name)
    return found


def make_fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def make_sparse(path: Path, size: int = 1 << 30) -> Path:
    """A file that claims `size` bytes (of zeros) and takes no disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def make_symlink_loop(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    other = path.with_name(path.name + ".loop")
    os.symlink(other.name, path)
    os.symlink(path.name, other)
    return path


def terminal_row(text: str) -> str:
    """What a terminal shows on one row after `text`: each CR goes back to the row's start and
    what follows writes over what was there (one character at a time, the plainest model)."""
    cells: list[str] = []
    cursor = 0
    for char in text:
        if char == "\r":
            cursor = 0
            continue
        cells[cursor:cursor + 1] = [char]
        cursor += 1
    return "".join(cells)


@pytest.fixture
def slurm_knows_none_of_these_jobs(tmp_path_factory, monkeypatch) -> None:
    """squeue, sacct and scontrol that know no job, first on PATH: for console tests whose fixture
    records name jobs 4242 and 4243, which the test cluster's own ids reach after a few thousand
    submissions (a real job 4242's MaxRSS then entered a retry preview and changed its picture)."""
    bin_dir = tmp_path_factory.mktemp("no-such-jobs")
    for name in ("squeue", "sacct", "scontrol"):
        (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
