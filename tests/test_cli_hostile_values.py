"""Hostile values through the real CLIs: one line naming the field, exit 2, no traceback, nothing written.

`--opt=--` (argparse handed the option an empty list), a checkpoint name too long for
the file system, job ids Slurm cannot hold, a site file starting with a BOM, and
--array ranges spelt as the tools print them (1-3) or with a step (1:10:3).
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from conftest import TEST_SITE, run_cli

SUBMIT = ("hyperion-submit", "slurm", "--cfg", str(TEST_SITE))
LONG = "x" * 300      # one name longer than NAME_MAX (255): ENAMETOOLONG


def _refused(result, field: str, problem: str) -> None:
    """One line naming `field`, exit 2, no traceback."""
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].split(": error: ", 1)[1].startswith(f"{field}: "), lines[0]
    assert problem in lines[0], lines[0]


DASH_CASES = [
    (SUBMIT + ("--env=--", "--output-file", "log/x.log", "--dry-run", "--", "true"), "--env"),
    (SUBMIT + ("--output-file=--", "--dry-run", "--", "true"), "--output-file"),   # planned ./[] as its log
    (SUBMIT + ("--mem=--", "--output-file", "log/x.log", "--dry-run", "--", "true"), "--mem"),
    (SUBMIT + ("--array=--", "--output-file", "log/JOB.log", "--dry-run", "--", "true"), "--array"),
    (("hyperion-jobs", "retry", "R", "--values=--", "--dry-run"), "--values"),
    (("hyperion-jobs", "retry", "R", "--state=--"), "--state"),
    (("hyperion-jobs", "watch", "R", "--cap=--"), "--cap"),
    (("hyperion-jobs", "logs", "R:1", "-n=--"), "-n"),
    (("hyperion-jobs", "logs", "R:1", "-n--"), "-n"),
    (("hyperion-jobs", "logs", "R:1", "--attempt=--"), "--attempt"),
    (("hyperion-jobs", "list", "--limit=--"), "--limit"),
    (("hyperion-checkpoint", "retry", "CK", "--max-array-size=--"), "--max-array-size"),
    (("hyperion-checkpoint", "retry", "CK", "--format=--"), "--format"),       # exited 0
]


@pytest.mark.parametrize("argv, field", DASH_CASES,
                         ids=[f"{argv[0]} {next(a for a in argv if a.endswith('--') and a != '--')}"
                              for argv, _ in DASH_CASES])
def test_an_option_given_double_dash_is_refused_by_name(tmp_path: Path, argv: tuple[str, ...], field: str) -> None:
    result = run_cli(*argv, cwd=tmp_path)
    _refused(result, field, "'--' is not a value")
    assert not (tmp_path / "q").exists() and not (tmp_path / "log").exists()
    assert not any(tmp_path.iterdir())


def test_double_dash_in_the_submitted_command_is_the_commands_own(tmp_path: Path) -> None:
    """Only the options are looked at: after hyperion-submit's `--` the command's argv is never inspected."""
    result = run_cli(*SUBMIT, "--output-file", "log/x.log", "--dry-run", "--", "echo", "--env=--", "-n--",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--env=-- -n--" in result.stdout


@pytest.mark.parametrize("argv, field", [
    (("show", LONG), "PATH"),
    (("shards", LONG), "PATH"),
    (("failed", LONG), "PATH"),
    (("retry", LONG), "PATH"),
    (("show", "--checkpoint-path", LONG), "--checkpoint-path"),
], ids=["show", "shards", "failed", "retry", "checkpoint-path"])
def test_a_checkpoint_name_too_long_is_one_line(tmp_path: Path, argv: tuple[str, ...], field: str) -> None:
    result = run_cli("hyperion-checkpoint", *argv, cwd=tmp_path)
    _refused(result, field, "File name too long")


def test_console_cfg_dir_too_long_is_one_line(tmp_path: Path) -> None:
    """--cfg-dir said `OSError: [Errno 36] ...` from Path.is_dir()."""
    result = run_cli("hyperion-console", "--cfg-dir", LONG, cwd=tmp_path)
    _refused(result, "--cfg-dir", "File name too long")
    assert "OSError" not in result.stderr


def test_shard_example_input_too_long_is_one_line(tmp_path: Path) -> None:
    result = run_cli("hyperion-shard-example", "--input", LONG, "--output", "out", "--checkpoint", "ck",
                     cwd=tmp_path)
    _refused(result, "--input", "File name too long")


@pytest.mark.parametrize("argv, field", [
    (("logs", "4294967296"), "TASK"),          # Slurm wrapped it: another job's log was named
    (("status", "2147483648"), "JOB|RECORD"),   # squeue: "Invalid job id", exit 1
    (("watch", "2147483648"), "JOB|RECORD"),
    (("cancel", "--yes", "2147483648"), "JOB"),
    (("status", "5_4000001"), "JOB|RECORD"),    # above Slurm's largest MaxArraySize
    (("logs", "5_4000001"), "TASK"),
], ids=["logs-wrap", "status", "watch", "cancel", "status-task", "logs-task"])
def test_a_job_id_slurm_cannot_hold_is_refused_up_front(tmp_path: Path, argv: tuple[str, ...], field: str) -> None:
    result = run_cli("hyperion-jobs", *argv, cwd=tmp_path)
    _refused(result, field, "go up to")


@pytest.mark.slurm
def test_logs_of_my_job_plus_two_to_the_32_do_not_name_my_jobs_log(tmp_path: Path, slurm_cluster) -> None:
    """A user's array: scontrol wrapped JOB + 2**32 into JOB, and `logs` printed this job's log path for it."""
    from conftest import submit_real_array

    submitted = submit_real_array(tmp_path / "log" / "t.JOB.log", "JOB=1:1", "sleep", "30", cwd=tmp_path)
    job = submitted.jobs[0].job_id
    try:
        mine = run_cli("hyperion-jobs", "logs", f"{job}_1", cwd=tmp_path)
        assert mine.returncode in (0, 2) and "go up to" not in mine.stderr   # a real id is not refused
        result = run_cli("hyperion-jobs", "logs", str(int(job) + 2**32), cwd=tmp_path)
        _refused(result, "TASK", "job ids go up to 2147483647")
        assert f"slurm-{job}" not in result.stderr + result.stdout
    finally:
        run_cli("scancel", str(job))


SITE = "num_threads: 1\nmem: 1G\n"


def test_a_site_file_with_a_bom_reads_as_without(tmp_path: Path) -> None:
    """The BOM passed the first validation and then failed jsonargparse's pass as `cfg: ... line 3`."""
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + SITE.encode())
    (tmp_path / "plain.yaml").write_text(SITE, encoding="utf-8")
    runs = {name: run_cli("hyperion-submit", "slurm", "--cfg", f"{name}.yaml", "--output-file", "log/x.log",
                          "--dry-run", "--", "true", cwd=tmp_path) for name in ("bom", "plain")}
    assert runs["bom"].returncode == 0, runs["bom"].stderr
    assert runs["bom"].stdout.replace("bom.yaml", "plain.yaml") == runs["plain"].stdout


def test_an_error_of_the_merged_pass_names_cfg() -> None:
    """The field the user gave is --cfg; jsonargparse's own name for it was `cfg`."""
    from backends.errors import InputError
    from backends.submit.commandline import _parse, _parser

    with pytest.raises(InputError) as caught:
        _parse(_parser(), ["--cfg", "# site file\n[a\n"], cfg_field="--cfg")
    assert caught.value.field == "--cfg"


@pytest.mark.parametrize("array, problem", [
    ("JOB=1-3,7", "'JOB=1-3,7': write the range 1-3 as 1:3 (NAME=START:END[,START:END...])"),
    ("JOB=1:10:3", "'JOB=1:10:3': steps are not supported: "),
    ("JOB=1-10:3", "'JOB=1-10:3': steps are not supported: "),
    ("JOB=3-1", "'JOB=3-1': write the range 3-1 as 1:3 "),          # not 3:1, refused next for START > END
    ("JOB=1-3%2", "'JOB=1-3%2': Slurm's %N limit is --max-jobs-run N here "),
    # a negative endpoint is not a step: "steps are not supported: '-1:3' names every few values"
    ("JOB=-1:3", "'JOB=-1:3': endpoints must be positive integers, got '-1'"),
    ("JOB=1:-3", "'JOB=1:-3': endpoints must be positive integers, got '-3'"),
])
def test_array_in_another_spelling_says_how_to_write_it(tmp_path: Path, array: str, problem: str) -> None:
    result = run_cli(*SUBMIT, "--array", array, "--output-file", "log/JOB.log", "--dry-run", "--", "true",
                     cwd=tmp_path)
    _refused(result, "--array", problem)
    assert not any(tmp_path.iterdir())


def test_retry_values_step_is_refused_by_name(tmp_path: Path) -> None:
    result = run_cli("hyperion-jobs", "retry", "R", "--values", "1:10:3", "--dry-run", cwd=tmp_path)
    _refused(result, "--values", "steps are not supported")


def test_console_submit_screen_says_how_to_write_the_range(tmp_path: Path) -> None:
    from hyperion_console.app import make_app

    async def scenario() -> str:
        app = make_app(cfg_dir=TEST_SITE.parent, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.submit_screen
            for name, value in (("output_file", str(tmp_path / "log" / "t.JOB.log")), ("array", "JOB=1-3,7"),
                                ("command", "echo JOB")):
                screen.set_field(name, value)
            await pilot.pause()
            return str(screen.query_one("#submit-error").content)

    assert asyncio.run(scenario()) == ("--array: 'JOB=1-3,7': write the range 1-3 as 1:3 "
                                       "(NAME=START:END[,START:END...])")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


def test_a_glued_short_value_ending_in_dashes_is_a_value_not_a_refusal():
    """`-n5--` gives -n the value `5--` (argparse's reading): not the `--` the check refuses."""
    from backends.errors import InputError, refuse_dash_values

    refuse_dash_values(["-n5--", "-n=7--", "--opt=x--", "--env=X=--"])
    with pytest.raises(InputError, match="^-n: '--' is not a value$"):
        refuse_dash_values(["-n--"])
