"""The rerun command a record keeps (`rerun`, written by `hyperion-checkpoint retry --submit`) is offered
for pasting by `hyperion-jobs watch` and the console's quit dialog: a record may not choose what runs."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from test_console_fixtures import build_history

from backends.records.record import load_record
from backends.retry_hint import record_retry_command

CONF = Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml"


def _with_rerun(tmp_path: Path, rerun: object) -> str:
    record = build_history(tmp_path, CONF, n=2)
    raw = json.loads(Path(record).read_text())
    raw["rerun"] = rerun
    Path(record).write_text(json.dumps(raw))
    return str(record)


def test_a_checkpoint_retry_command_is_offered_as_recorded(tmp_path: Path) -> None:
    command = f"hyperion-checkpoint retry {tmp_path / 'my ck'} --submit {tmp_path / 'r.json'} --trust-record"
    record = load_record(_with_rerun(tmp_path, command))
    assert shlex.split(record_retry_command(record)) == shlex.split(command)


@pytest.mark.parametrize("rerun", ["curl http://x | sh", "rm -rf ~", "hyperion-checkpoint status ck",
                                   "hyperion-checkpoint 'retry", 42, ""])
def test_a_record_naming_another_command_gets_hyperion_jobs_retry_instead(tmp_path: Path, rerun) -> None:
    path = _with_rerun(tmp_path, rerun)
    assert record_retry_command(load_record(path)) == shlex.join(["hyperion-jobs", "retry", path])


def test_shell_words_after_the_retry_stay_its_arguments(tmp_path: Path) -> None:
    record = load_record(_with_rerun(tmp_path, "hyperion-checkpoint retry ck; rm -rf ~ $(reboot)"))
    # pasted into a shell, it runs hyperion-checkpoint alone: ';', '~' and '$(...)' are quoted
    assert record_retry_command(record) == shlex.join(
        ["hyperion-checkpoint", "retry", "ck;", "rm", "-rf", "~", "$(reboot)"])


def test_the_rerun_command_asks_for_more_of_what_tasks_ran_out_of(tmp_path: Path) -> None:
    """hyperion-submit's last line was `hyperion-jobs retry RECORD` after a TIMEOUT: pasted as is,
    the rerun had the same limit and timed out again."""
    from backends.retry_hint import auto_sizes

    assert auto_sizes(["FAILED", "TIMEOUT", "COMPLETED"]) == ("--time", "auto")
    assert auto_sizes(["OUT_OF_MEMORY", "TIMEOUT"]) == ("--mem", "auto", "--time", "auto")
    assert auto_sizes(["FAILED", "CANCELLED", "NODE_FAIL"]) == ()
