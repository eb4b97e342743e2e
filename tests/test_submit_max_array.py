"""The cluster's MaxArraySize as ``scontrol show config`` states it, read only after sbatch refused
an array window: whatever scontrol prints (missing, hostile, huge, hung), no advice and no traceback."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from backends.submit.slurm.max_array import array_advice, parse_max_array_size, read_command

CONFIG = """Configuration data as of 2026-12-06T03:00:00
AccountingStorageType   = accounting_storage/slurmdbd
MaxArraySize            = 1001
MaxJobCount             = 10000
"""


def test_the_limit_is_read_from_scontrols_answer():
    assert parse_max_array_size(CONFIG) == 1001


@pytest.mark.parametrize("text", [
    "", "MaxJobCount = 10000\n", "MaxArraySize = \n", "MaxArraySize = 1e3\n", "MaxArraySize = -5\n",
    "MaxArraySize = 0\n", "MaxArraySize = 4000002\n", "MaxArraySize = " + "9" * 100_000 + "\n",
    "MaxArraySize = \u0661\u0660\u0660\n",      # Arabic-Indic digits: isdigit() but not Slurm's
    "MaxArraySize = 1001\x1b]0;owned\x07\n", "\x00" * 1000, "MaxArraySizeX = 5\n",
])
def test_a_missing_or_hostile_value_gives_no_limit(text):
    assert parse_max_array_size(text) is None


def test_advice_only_when_the_windows_highest_index_reaches_the_limit():
    assert array_advice(1000, 1001, "conf/x.yaml") is None
    assert array_advice(5000, None, "conf/x.yaml") is None
    assert array_advice(1001, 1001, "conf/x.yaml") == (
        "the cluster's MaxArraySize is 1001 (scontrol show config): set max_array_size: 1001 in "
        "conf/x.yaml to split the values into windows")
    assert "\x1b" not in array_advice(1001, 1001, "conf/\x1b]0;x\x07.yaml")


def _python(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def test_a_huge_answer_is_cut_off_not_read_whole():
    started = time.monotonic()
    assert read_command(_python("import sys\nwhile True: sys.stdout.write('x' * 65536)"), cap=1 << 20) is None
    assert time.monotonic() - started < 10


def test_a_hung_scontrol_is_given_up_and_killed():
    started = time.monotonic()
    assert read_command(_python("import time; print('MaxArraySize = 5', flush=True); time.sleep(60)"),
                        timeout=0.5) is None
    assert time.monotonic() - started < 5


def test_a_child_left_holding_the_answer_open_is_killed_too(tmp_path):
    """A site's scontrol wrapper that exits but leaves a child with its output: the child was left running."""
    pid_file = tmp_path / "child.pid"
    code = ("import subprocess, sys; child = subprocess.Popen(['sleep', '60']); "
            f"open({str(pid_file)!r}, 'w').write(str(child.pid)); print('MaxArraySize = 1001')")
    assert read_command(_python(code), timeout=0.5) is None
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)       # killed; reaped by init a moment later
    state = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}").exists() else "gone"
    assert state in ("gone", "Z"), state


def test_a_failed_or_missing_scontrol_gives_nothing():
    assert read_command(_python("print('MaxArraySize = 1001'); raise SystemExit(1)")) is None
    assert read_command(("/nonexistent/scontrol",)) is None
    assert read_command(_python("print('MaxArraySize = 1001')")) == "MaxArraySize = 1001\n"



@pytest.mark.parametrize("said, asked", [("sbatch: error: Batch job submission failed: Invalid job array "
                                          "specification", True),
                                         ("sbatch: error: Batch job submission failed: Unable to contact slurm "
                                          "controller (connect failure)", False)])
def test_only_a_refusal_of_the_array_asks_the_cluster_its_limit(tmp_path, monkeypatch, said, asked):
    """A controller that cannot be reached refuses too: asking scontrol then would only hold the error line
    back (up to its timeout) for advice that cannot come."""
    from backends.submit.model import PlannedWindow
    from backends.submit.slurm import max_array, sbatch

    calls = []
    monkeypatch.setattr(max_array, "cluster_max_array_size", lambda: calls.append(1) or 1001)
    refuse = tmp_path / "sbatch"
    refuse.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
    refuse.chmod(0o755)
    window = PlannedWindow(0, (1000, 1001), "1000-1001", str(tmp_path / "s.sh"), "", (str(refuse), "s.sh"))
    with pytest.raises(sbatch.SubmitError) as err:
        sbatch._sbatch(window, "conf/x.yaml")
    assert bool(calls) is asked
    assert ("set max_array_size: 1001 in conf/x.yaml" in str(err.value)) is asked
