"""The array NAME replaced where it was likely not meant: `$JOB`, `SLURM_JOB_ID`, `JOBS`.

The contract replaces every literal NAME in every argument and in --output-file (kept as it is);
`bash -c 'test $JOB -ne 3'` ran `test $1 -ne 3` in every task and nothing said why."""
from __future__ import annotations

from pathlib import Path

from conftest import TEST_SITE, run_cli

from backends.submit.substitution_check import MAX_LINES, substitution_notes


def notes(*command: str, output_file: str = "log/extract.JOB.log", name: str = "JOB") -> tuple[str, ...]:
    return substitution_notes(name, 1, command, output_file)


def test_the_recipe_idiom_is_not_warned_about():
    assert notes("hyperion-extract-wav2xvectors", "--part-idx", "JOB", "--num-parts", "100",
                 "--output-spec", "ark,csv:exp/xvector/xvector.JOB.ark,exp/xvector/xvector.JOB.csv") == ()
    assert notes("JOB") == ()
    assert notes("echo", "JOB", "exp/JOB/train", "part-JOB", "JOB-of-4", "xvector_JOB.ark", "feats_JOB_x") == ()
    assert notes("true", output_file="exp/log/extract.JOB.log") == ()
    assert notes("--part", "n", name="n", output_file="log/part_n.log") == ()   # a lower-case name joined by _


def test_name_after_a_dollar_becomes_a_positional_parameter():
    assert notes("bash", "-c", "test $JOB -ne 3") == (
        "command word 3 ('test $JOB -ne 3') has $JOB: it becomes $1 before the shell sees it, as --array "
        "replaces every JOB (write JOB alone: the value is already in the text)",)
    assert notes("sh", "-c", "echo ${JOB}")[0].startswith("command word 3 ('echo ${JOB}') has ${JOB}: it becomes ${1} ")
    # one line per word: the same $JOB elsewhere is counted, not said again
    said = notes("sh", "-c", "echo $JOB; echo $JOB", "$JOB")
    assert len(said) == 1 and "has $JOB (and 2 more places): it becomes $1" in said[0], said
    assert "in the log's name" in notes("true", output_file="log/t.$JOB.log")[0]


def test_name_inside_a_longer_name_is_warned_about():
    said = notes("sh", "-c", "echo $SLURM_JOB_ID > out.JOB")
    assert said == ("command word 3 ('echo $SLURM_JOB_ID > out.JOB') has $SLURM_JOB_ID: it becomes $SLURM_1_ID, "
                    "as --array replaces every JOB, even inside a longer name (pick an array NAME found nowhere "
                    "else)",)
    assert "has SLURM_JOB_ID: it becomes SLURM_1_ID" in notes("--tag", "SLURM_JOB_ID")[0]
    assert "has NJOBS: it becomes N1S" in notes("--tag", "NJOBS")[0]
    assert notes("true", output_file="JOBS/t.JOB.log") == (
        "--output-file ('JOBS/t.JOB.log') has JOBS: it becomes 1S, as --array replaces every JOB, even inside "
        "a longer name (pick an array NAME found nowhere else)",)
    assert "('--num-parts') has num: it becomes 1um" in notes("prog", "--num-parts", "4", name="n",
                                                             output_file="p.n.log")[0]
    assert "has x_JOB_JOBS: it becomes x_1_1S" in notes("x_JOB_JOBS")[0]     # JOBS further in the word
    assert "has $out_JOB: it becomes $out_1" in notes("sh", "-c", "echo $out_JOB")[0]


def test_many_words_are_said_in_a_few_lines_and_long_or_hostile_text_is_cut():
    said = notes(*(f"$JOB{i}" for i in range(50)))
    assert len(said) == MAX_LINES and said[-1].startswith(f"and {50 - MAX_LINES + 1} more words where JOB"), said
    script = "x" * 5000 + " $JOB " + "y" * 5000
    (line,) = notes("bash", "-c", script)
    assert "('...xxxxxxxxxxxxxxxxxxxxxxx $JOB yyyyyyyyyyyyyyyyyyyyyyy...') has $JOB" in line and len(line) < 300
    (line,) = notes("A" * 100_000 + "JOB")
    assert len(line) < 400


def test_hyperion_submit_warns_on_stderr_and_runs_as_the_contract_says(tmp_path: Path, cli_env):
    """A local run: one warning line before the tasks run; the substitution itself is unchanged
    (`test $1 -ne 3`: every task fails); the escapes of a hostile argument are shown, not sent."""
    run = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                  "--output-file", "log/t.JOB.log", "--", "bash", "-c", "test $JOB -ne 3", cwd=tmp_path, env=cli_env,
                  timeout=60)
    assert run.returncode == 1
    lines = run.stderr.splitlines()
    assert lines[0] == ("hyperion-submit: warning: command word 3 ('test $JOB -ne 3') has $JOB: it becomes $1 "
                        "before the shell sees it, as --array replaces every JOB (write JOB alone: the value is "
                        "already in the text)"), run.stderr
    assert sum("warning" in line for line in lines) == 1
    assert "JOB=1 failed" in run.stderr and (tmp_path / "log" / "t.1.log").exists()

    for backend in ("local", "slurm"):
        dry = run_cli("hyperion-submit", backend, "--cfg", str(TEST_SITE), "--array", "JOB=1:2", "--dry-run",
                      "--output-file", "log/d.JOB.log", "--", "echo", "\x1b]0;x\x07$SLURM_JOB_ID", cwd=tmp_path,
                      env=cli_env, timeout=60)
        assert dry.returncode == 0, dry.stderr
        assert dry.stderr.startswith("hyperion-submit: warning: command word 2 ('\\x1b]0;x\\x07$SLURM_JOB_ID') has "
                                     "$SLURM_JOB_ID: it becomes $SLURM_1_ID"), dry.stderr
        assert "\x1b" not in dry.stderr

    plain = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2", "--dry-run",
                    "--output-file", "log/e.JOB.log", "--", "echo", "--part-idx", "JOB", cwd=tmp_path, env=cli_env,
                    timeout=60)
    assert plain.returncode == 0 and plain.stderr == "", plain.stderr


def test_a_plan_without_an_array_has_nothing_replaced(tmp_path: Path):
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan
    from backends.submit.substitution_check import plan_notes

    argv = ["local", "--cfg", str(TEST_SITE), "--output-file", str(tmp_path / "JOBS.log"), "--", "echo", "$JOB"]
    assert plan_notes(build_plan(*parse_submit_argv(argv))) == ()
    argv[3:3] = ["--array", "JOB=2:3"]
    assert plan_notes(build_plan(*parse_submit_argv(argv)))[0].startswith(
        "command word 2 ('$JOB') has $JOB: it becomes $2 before")       # the first task's value
