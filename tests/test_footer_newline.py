"""A task whose last output has no newline (a message printed with printf, a `\\r` progress bar cut
short) still gets its `# Ended` footer on a line of its own, on both backends: glued to that output
it was no footer line, and `status --failures` (and the console's failure groups) gave
`fatal: ...# Ended (code 1) at ...` as the program's last line."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[1]


def _env(cli_env: dict[str, str]) -> dict[str, str]:
    """The CLIs run this checkout's code (the console scripts on PATH are an installed one's)."""
    return {**cli_env, "PYTHONPATH": f"{REPO}{os.pathsep}{cli_env.get('PYTHONPATH', '')}"}


def _assert_footer_own_line(log: Path, message: str) -> None:
    lines = log.read_text().splitlines()
    assert lines[-2] == message
    assert lines[-1].startswith("# Ended (code 1) at ")


def test_local_footer_after_output_without_newline(tmp_path, test_site, cli_env) -> None:
    env = _env(cli_env)
    result = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--output-file",
                     str(tmp_path / "log/g.log"), "--", "bash", "-c",
                     'printf "fatal: cannot open shard"; exit 1', cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    _assert_footer_own_line(tmp_path / "log/g.log", "fatal: cannot open shard")
    status = run_cli("hyperion-jobs", "status", str(tmp_path / "log/q/g.submit.json"), "--failures",
                     cwd=tmp_path, env=env)
    assert "last line: fatal: cannot open shard  e.g." in status.stdout, status.stdout
    assert "# Ended" not in status.stdout


def test_local_footer_after_output_with_newline_unchanged(tmp_path, test_site, cli_env) -> None:
    env = _env(cli_env)
    result = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--output-file",
                     str(tmp_path / "log/g.log"), "--", "bash", "-c", 'echo "fatal: x"; exit 1',
                     cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    lines = (tmp_path / "log/g.log").read_text().splitlines()
    assert lines[-2:-1] == ["fatal: x"] and lines[-1].startswith("# Ended (code 1)")


@pytest.mark.usefixtures("slurm_cluster")
def test_slurm_array_failure_without_newline_groups_by_its_message(tmp_path, test_site, cli_env) -> None:
    """A speech engineer's decode array whose failing tasks print `fatal: ...` without a newline."""
    env = _env(cli_env)
    result = run_cli("hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "JOB=1:2",
                     "--time", "2", "--output-file", str(tmp_path / "log/dec.JOB.log"), "--",
                     "bash", "-c", 'printf "fatal: lattice missing for shard $1"; exit 1', "_", "JOB",
                     cwd=tmp_path, env=env, timeout=300)
    assert result.returncode == 1, result.stderr
    for value in (1, 2):
        _assert_footer_own_line(tmp_path / f"log/dec.{value}.log", f"fatal: lattice missing for shard {value}")
    status = run_cli("hyperion-jobs", "status", str(tmp_path / "log/q/dec.JOB.submit.json"), "--failures",
                     cwd=tmp_path, env=env)
    assert "values 1-2  last line: fatal: lattice missing for shard 1  e.g." in status.stdout, status.stdout
    assert "# Ended" not in status.stdout


def test_local_message_appended_through_dev_stderr_is_kept(tmp_path, test_site, cli_env) -> None:
    """A decode script that reports its error with `tee -a /dev/stderr` (its own open of the log):
    the footer overwrote that message, leaving its tail after the footer as the 'last line'."""
    env = _env(cli_env)
    message = "fatal: lattice missing for shard 41 in /data/exp/lat.41.gz, cannot continue decoding"
    result = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--output-file",
                     str(tmp_path / "log/d.log"), "--", "bash", "-c",
                     f'echo start; echo "{message}" | tee -a /dev/stderr >/dev/null; exit 1',
                     cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    lines = (tmp_path / "log/d.log").read_text().splitlines()
    assert lines[-3:-1] == ["start", message], lines
    assert lines[-1].startswith("# Ended (code 1) at ")
    status = run_cli("hyperion-jobs", "status", str(tmp_path / "log/q/d.submit.json"), "--failures",
                     cwd=tmp_path, env=env)
    assert f"last line: {message}  e.g." in status.stdout, status.stdout


def test_local_log_emptied_by_the_task_gets_no_nul_bytes(tmp_path, test_site, cli_env) -> None:
    """`echo ... > /dev/stdout` empties the log (as it does on Slurm); the footer followed a run of
    NUL bytes, on the same line, where our offset still was."""
    env = _env(cli_env)
    result = run_cli("hyperion-submit", "local", "--cfg", str(test_site), "--output-file",
                     str(tmp_path / "log/e.log"), "--", "bash", "-c",
                     'echo first; echo "fatal: x" > /dev/stdout; printf "no newline"; exit 1',
                     cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    text = (tmp_path / "log/e.log").read_text()
    assert "\0" not in text
    lines = text.splitlines()
    assert lines[:2] == ["fatal: x", "no newline"] and lines[-1].startswith("# Ended (code 1) at "), lines
