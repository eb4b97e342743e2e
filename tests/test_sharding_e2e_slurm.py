"""End to end on the real cluster: 20 shards, one fails, retry finds it, --submit reruns it."""
import json
from pathlib import Path

import pytest
from conftest import run_cli

from sharding.assign import shard_for
from sharding.example import make_input


def run_four_shards_one_failing(tmp_path: Path, test_site: Path, cli_env: dict[str, str]):
    """`hyperion-submit slurm` of the example over 4 shards of 2 records each (SHARD=1:4, log/shard.SHARD.log,
    checkpoint ck/), the record doc-0002-0001 failing: its shard is `shard_for("p000002", 4, 1)`."""
    make_input(tmp_path / "in", files=4, records=2)
    return run_cli(
        "hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "SHARD=1:4",
        "--output-file", str(tmp_path / "log" / "shard.SHARD.log"), "--",
        "hyperion-shard-example", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
        "--checkpoint", str(tmp_path / "ck"), "--shard-index", "SHARD", "--total-shards", "4",
        "--minimum-shard-index", "1", "--fail-record", "doc-0002-0001",
        cwd=tmp_path, env=cli_env, timeout=300)


@pytest.mark.slurm
def test_twenty_shards_one_fails_and_is_resubmitted(slurm_cluster, test_site, tmp_path, cli_env):
    make_input(tmp_path / "in", files=20, records=3)
    poison_task = "p000007"  # holds doc-0007-0001
    bad_shard = shard_for(poison_task, 20, 1)
    first = run_cli(
        "hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "SHARD=1:20",
        "--output-file", str(tmp_path / "log" / "shard.SHARD.log"), "--",
        "hyperion-shard-example", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
        "--checkpoint", str(tmp_path / "ck"), "--shard-index", "SHARD", "--total-shards", "20",
        "--minimum-shard-index", "1", "--fail-record", "doc-0007-0001", "--fail-once",
        cwd=tmp_path, env=cli_env, timeout=300)
    assert first.returncode == 1, first.stderr
    ck = str(tmp_path / "ck")

    retry = run_cli("hyperion-checkpoint", "retry", ck, "--format", "fields", env=cli_env)
    assert retry.stdout == f"{bad_shard} 0 1 20\n", retry.stderr
    failed = json.loads(run_cli("hyperion-checkpoint", "failed", ck, "--json", env=cli_env).stdout)
    assert [(r["shard"], r["details"]["task_ids"]) for r in failed] == [(bad_shard, [poison_task])]
    assert failed[0]["slurm_job"].isdigit() and failed[0]["array_task"] == str(bad_shard)  # offset 0: physical = logical

    record = tmp_path / "log" / "q" / "shard.SHARD.submit.json"
    again = run_cli("hyperion-checkpoint", "retry", ck, "--submit", str(record), env=cli_env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"--array SHARD={bad_shard}" in again.stderr

    assert run_cli("hyperion-checkpoint", "retry", ck, env=cli_env).stdout == ""
    shards = json.loads(run_cli("hyperion-checkpoint", "shards", ck, "--json", env=cli_env).stdout)
    assert shards["counts"] == {"complete": 20, "incomplete": 0, "failed": 0}
    outputs = sorted(p.name for p in (tmp_path / "out").glob("*.jsonl"))
    assert outputs == [f"p{i:06d}.jsonl" for i in range(20)]
    assert (tmp_path / "log" / f"shard.{bad_shard}.log").exists()
    # the resubmission is the submission's second attempt: the first record and log are kept
    history = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
    assert [(a["attempt"], a["kind"], a["values"]) for a in history["attempts"]] == [
        (1, "submit", "1-20"), (2, "resubmit", str(bad_shard))]
    first_log = tmp_path / "log" / "q" / "attempts" / "1" / f"shard.{bad_shard}.log"
    assert "doc-0007-0001" in first_log.read_text()
    status = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    assert status["exit_status"] == 0 and len(status["tasks"]) == 20


@pytest.mark.slurm
def test_a_forced_rerun_of_a_complete_shard_that_fails_is_not_complete_since(slurm_cluster, test_site, tmp_path,
                                                                             cli_env):
    """Three shards complete on the cluster; the user reruns shard 2 from the shell history with a
    record that now fails. `failed` said "(shard complete since)" of that newer failure; it says it
    came after the completion, and that retry skips the shard, which retry does (nothing planned)."""
    make_input(tmp_path / "in", files=6, records=2)
    doc = next(f"doc-{int(t[1:]):04d}-0001" for t in (f"p{i:06d}" for i in range(6)) if shard_for(t, 3, 1) == 2)

    def submit(array: str, *extra: str):
        return run_cli(
            "hyperion-submit", "slurm", "--cfg", str(test_site), "--array", array,
            "--output-file", str(tmp_path / "log" / "shard.SHARD.log"), "--",
            "hyperion-shard-example", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
            "--checkpoint", str(tmp_path / "ck"), "--shard-index", "SHARD", "--total-shards", "3",
            "--minimum-shard-index", "1", *extra, cwd=tmp_path, env=cli_env, timeout=300)

    assert submit("SHARD=1:3").returncode == 0
    rerun = submit("SHARD=2:2", "--fail-record", doc)
    assert rerun.returncode == 1, rerun.stderr
    ck = str(tmp_path / "ck")
    listed = run_cli("hyperion-checkpoint", "failed", ck, env=cli_env)
    lines = [line for line in listed.stdout.splitlines() if line.startswith("shard ")]
    assert len(lines) == 1 and lines[0].startswith("shard 2  job ")
    assert lines[0].endswith("  (failed after its shard completed; retry skips the shard)"), lines
    retry = run_cli("hyperion-checkpoint", "retry", ck, env=cli_env)
    assert retry.stdout == ""
    # retry says so too, and which manifest to remove to rerun the shard (it said nothing)
    from sharding.store import RunConfig, manifest_name
    note = (f"hyperion-checkpoint: note: 1 shard (2) has a failure newer than its completion manifest (a rerun "
            "failed after it completed): retry skips it because the manifest says complete; to rerun it, remove "
            f"{ck}/.nemo_curator_metadata/.slurm_array_completion/{manifest_name(RunConfig(1, 3), 2)}, "
            "then retry again\n")
    assert retry.stderr == note
    record = tmp_path / "log" / "q" / "shard.SHARD.submit.json"
    nothing = run_cli("hyperion-checkpoint", "retry", ck, "--submit", str(record), env=cli_env)
    assert (nothing.returncode, nothing.stderr) == (
        0, f"hyperion-checkpoint: every shard of {ck} is complete; nothing resubmitted\n{note}")


@pytest.mark.slurm
def test_resubmitting_a_shard_above_the_array_limit_uses_a_window(slurm_cluster, test_site, tmp_path, cli_env):
    """Shard 1003 of 1005 cannot be a physical index (MaxArraySize 1001): it runs at an offset."""
    from sharding.store import Checkpoint, RunConfig

    make_input(tmp_path / "in", files=3, records=1)
    first = run_cli(
        "hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "SHARD=1:2",
        "--output-file", str(tmp_path / "log" / "shard.SHARD.log"), "--",
        "hyperion-shard-example", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
        "--checkpoint", str(tmp_path / "ck"), "--shard-index", "SHARD", "--total-shards", "1005",
        "--minimum-shard-index", "1", cwd=tmp_path, env=cli_env, timeout=300)
    assert first.returncode == 0, first.stderr
    store = Checkpoint(tmp_path / "ck")
    assert store.read_run() == RunConfig(1, 1005)
    for shard in set(range(3, 1006)) - {1003}:  # pretend the other windows ran
        store.write_completion(shard)
    ck = str(tmp_path / "ck")
    fields = run_cli("hyperion-checkpoint", "retry", ck, "--max-array-size", "1001", env=cli_env)
    assert fields.stdout == "2 1001 1 1005\n", fields.stderr
    again = run_cli("hyperion-checkpoint", "retry", ck, "--submit", str(tmp_path / "log" / "q" / "shard.SHARD.submit.json"),
                    env=cli_env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "offset 1001" in again.stderr
    final = run_cli("hyperion-checkpoint", "retry", ck, env=cli_env)
    assert final.stdout == "", final.stderr
    assert "shard 1003 of 1005" in (tmp_path / "log" / "shard.1003.log").read_text()


@pytest.mark.slurm
def test_a_recipe_taking_its_shard_from_slurm_runs_the_logical_shard_in_a_later_window(slurm_cluster, test_site,
                                                                                       tmp_path, cli_env):
    """A Curator-style recipe reads its index from SLURM_ARRAY_TASK_ID. In hyperion-submit's second window
    that is the physical index (0, 1...): SHARD=1002 silently ran shard 1 again and reported success,
    SHARD=1001 failed on "shard 0", and shards 1001-1200 stayed missing through every retry."""
    from sharding.store import Checkpoint

    make_input(tmp_path / "in", files=40, records=1)
    ran = run_cli(
        "hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "SHARD=1000:1002",
        "--env", "HYPERION_ARRAY_TOTAL_SHARDS=1200", "--env", "HYPERION_ARRAY_MINIMUM_SHARD_INDEX=1",
        "--output-file", str(tmp_path / "log" / "shard.SHARD.log"), "--",
        "hyperion-shard-example", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
        "--checkpoint", str(tmp_path / "ck"), cwd=tmp_path, env=cli_env, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert "offset 1001" in ran.stderr
    for shard in (1000, 1001, 1002):
        assert f"shard {shard} of 1200" in (tmp_path / "log" / f"shard.{shard}.log").read_text()
    assert Checkpoint(tmp_path / "ck").completed()[0] == {1000, 1001, 1002}


# A Curator-style shard: a failed-task record and exit 1 while its shard is listed in fail.txt,
# else its completion manifest.
SHARD_JOB = ("import pathlib, sys; from sharding.store import Attempt, Checkpoint, RunConfig; "
             "shard = int(sys.argv[1]); run = RunConfig(1, 9); store = Checkpoint('ck'); store.ensure_run(run); "
             "bad = shard in {int(s) for s in pathlib.Path('fail.txt').read_text().split()}; "
             "bad and store.write_failed(shard, Attempt.from_env(), {'task_ids': [f'p{shard}'], 'error': 'boom'}); "
             "bad or store.write_completion(shard, run); sys.exit(1 if bad else 0)")


@pytest.mark.slurm
def test_a_window_script_of_attempt_one_rewritten_by_attempt_three_is_kept_as_attempt_ones(
        slurm_cluster, test_site, tmp_path, cli_env):
    """Attempt 2 reran only shard 9 (its one window is q/<stem>.sh), so attempt 1's
    q/<stem>.offset8.sh stayed in q/ until attempt 3 wrote that name again: it was filed
    under attempts/2/ and the ledger called it attempt 2's."""
    import sys

    site = tmp_path / "site4.yaml"
    site.write_text(test_site.read_text().replace("max_array_size: 1001", "max_array_size: 4"))
    (tmp_path / "fail.txt").write_text("2 9\n")
    first = run_cli("hyperion-submit", "slurm", "--cfg", str(site), "--array", "SHARD=1:9",
                    "--output-file", "log/s.SHARD.log", "--", sys.executable, "-c", SHARD_JOB, "SHARD",
                    cwd=tmp_path, env=cli_env, timeout=300)
    assert first.returncode == 1, first.stderr
    q = tmp_path / "log" / "q"
    record = q / "s.SHARD.submit.json"
    first_window = (q / "s.SHARD.offset8.sh").read_text()
    assert "8" in first_window
    only_nine = run_cli("hyperion-jobs", "retry", str(record), "--values", "9", "--yes",
                        cwd=tmp_path, env=cli_env, timeout=300)
    assert only_nine.returncode == 1, only_nine.stderr
    assert (q / "s.SHARD.offset8.sh").read_text() == first_window     # attempt 2 wrote no such window

    (tmp_path / "fail.txt").write_text("")
    again = run_cli("hyperion-checkpoint", "retry", "ck", "--submit", str(record),
                    cwd=tmp_path, env=cli_env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "offset 8" in again.stderr
    assert (q / "attempts" / "1" / "s.SHARD.offset8.sh").read_text() == first_window
    assert not (q / "attempts" / "2" / "s.SHARD.offset8.sh").exists()
    moved = [json.loads(line) for line in (q / "s.SHARD.attempts.jsonl").read_text().splitlines()]
    scripts = {(m["attempt"], Path(m["target"]).relative_to(q).as_posix())
               for m in moved if m["type"] == "moved" and m["what"] == "script"}
    assert scripts == {(1, "attempts/1/s.SHARD.sh"), (1, "attempts/1/s.SHARD.offset8.sh"),
                       (2, "attempts/2/s.SHARD.sh")}
    assert run_cli("hyperion-checkpoint", "retry", "ck", cwd=tmp_path, env=cli_env).stdout == ""


@pytest.mark.slurm
def test_a_failed_resubmission_names_hyperion_checkpoint_retry_as_the_next_step(slurm_cluster, test_site, tmp_path,
                                                                               cli_env):
    """After `hyperion-checkpoint retry --submit` failed again, the last line named `hyperion-jobs retry
    RECORD`, which reruns that attempt's shard windows as they were; the run was launched from the
    checkpoint, and `hyperion-checkpoint retry CK --submit RECORD` finds again what is still missing.
    The line names that command, ready to paste, and pasted it resubmits the shard still missing."""
    import shlex

    bad_shard = shard_for("p000002", 4, 1)      # holds doc-0002-0001, which fails every time
    first = run_four_shards_one_failing(tmp_path, test_site, cli_env)
    record = tmp_path / "log" / "q" / "shard.SHARD.submit.json"
    assert first.returncode == 1, first.stderr
    assert first.stderr.splitlines()[-1] == (
        f"hyperion-submit: 1 of 4 task(s) did not succeed (failed 1); rerun only those with: hyperion-jobs retry {record}")

    again = run_cli("hyperion-checkpoint", "retry", "ck", "--submit", "log/q/shard.SHARD.submit.json",
                    cwd=tmp_path, env=cli_env, timeout=300)
    assert again.returncode == 1, again.stderr
    command = f"hyperion-checkpoint retry {tmp_path / 'ck'} --submit {record}"
    assert again.stderr.splitlines()[-1] == f"hyperion-submit: 1 of 1 task(s) did not succeed (failed 1); rerun only those with: {command}"

    pasted = run_cli(*shlex.split(command), cwd=tmp_path / "in", env=cli_env, timeout=300)
    assert pasted.returncode == 1, pasted.stderr
    assert f"resubmitting 1 of 4 shard(s) ({bad_shard})" in pasted.stderr
    assert pasted.stderr.splitlines()[-1] == again.stderr.splitlines()[-1]


@pytest.mark.slurm
def test_retry_submit_is_refused_while_the_records_shards_still_run_and_accepted_once_they_end(
        slurm_cluster, test_site, tmp_path, cli_env):
    """Shards still running have no manifest yet: `retry` lists them as missing, and `--submit` ran them a
    second time, two tasks writing one shard. It is refused in one line naming the shards and the job
    (exit 2, no new attempt); once the array ended, the same command resubmits the shard that failed."""
    import subprocess
    import time

    make_input(tmp_path / "in", files=4, records=1)
    bad_shard = shard_for("p000000", 4, 1)      # holds doc-0000-0000, which fails once
    # shard 1 ends at once (the checkpoint exists), the others wait for the file `go`
    gate = 's=$1; shift; [ "$s" = 1 ] || until [ -e go ]; do sleep 0.5; done; exec hyperion-shard-example --shard-index "$s" "$@"'
    first = subprocess.Popen(
        ["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "SHARD=1:4",
         "--output-file", str(tmp_path / "log" / "shard.SHARD.log"), "--", "sh", "-c", gate, "gate", "SHARD",
         "--input", "in", "--output", "out", "--checkpoint", "ck", "--total-shards", "4",
         "--minimum-shard-index", "1", "--fail-record", "doc-0000-0000", "--fail-once"],
        cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "shard.SHARD.submit.json"
    try:
        deadline = time.monotonic() + 240
        while run_cli("hyperion-checkpoint", "retry", "ck", "--format", "ranges", cwd=tmp_path,
                      env=cli_env).stdout.strip() != "2-4":
            assert time.monotonic() < deadline, "shard 1 never completed"
            time.sleep(1)
        job = json.loads(record.read_text())["jobs"][0]["job_id"]
        for extra in ((), ("--dry-run",)):
            refused = run_cli("hyperion-checkpoint", "retry", "ck", "--submit", str(record), *extra,
                              cwd=tmp_path, env=cli_env, timeout=120)
            assert refused.returncode == 2, refused.stderr
            assert refused.stdout == ""
            assert refused.stderr == (
                f"hyperion-checkpoint: error: --submit: shard(s) 2-4 (3 of the 3 listed missing) still running in "
                f"job(s) {job} of {record}: not missing, only unfinished, and a resubmission would run them twice; "
                f"wait for them (hyperion-jobs watch {record}) or cancel them (hyperion-jobs cancel {job}), then "
                "retry; nothing resubmitted\n")
        history = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
        assert len(history["attempts"]) == 1
    finally:
        (tmp_path / "go").touch()
        first.wait(timeout=300)
    assert first.returncode == 1, first.stderr.read() if first.stderr else ""
    again = run_cli("hyperion-checkpoint", "retry", "ck", "--submit", str(record), cwd=tmp_path, env=cli_env,
                    timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"resubmitting 1 of 4 shard(s) ({bad_shard})" in again.stderr


@pytest.mark.slurm
def test_two_terminals_retrying_one_checkpoint_run_its_missing_shards_once(
        slurm_cluster, test_site, tmp_path, cli_env, monkeypatch, capsys):
    """The second terminal read the checkpoint while the first's retry still ran shards 2 and 9; by the
    time Slurm answered it (a slow sacct) they had completed, and it resubmitted them as attempt 3."""
    import sys

    import sharding.resubmit as resubmit_module
    from sharding import cli

    (tmp_path / "fail.txt").write_text("2 9\n")
    first = run_cli("hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "SHARD=1:9",
                    "--output-file", "log/s.SHARD.log", "--", sys.executable, "-c", SHARD_JOB, "SHARD",
                    cwd=tmp_path, env=cli_env, timeout=300)
    assert first.returncode == 1, first.stderr
    (tmp_path / "fail.txt").write_text("")
    record = tmp_path / "log" / "q" / "s.SHARD.submit.json"
    ckpt = str(tmp_path / "ck")
    asked = resubmit_module.check_not_running
    other = []

    def slow_answer(record_path, retry=None):
        other.append(run_cli("hyperion-checkpoint", "retry", ckpt, "--submit", str(record),
                             env=cli_env, timeout=300))
        return asked(record_path, retry)

    monkeypatch.setattr(resubmit_module, "check_not_running", slow_answer)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main(["retry", "ck", "--submit", str(record)])
    err = capsys.readouterr().err
    assert other[0].returncode == 0 and "--array SHARD=2,9" in other[0].stderr, other[0].stderr
    assert exited.value.code == 2, err
    assert err.splitlines() == [
        f"hyperion-checkpoint: error: --submit: shard(s) 2,9 (2 of the 2 planned) completed after this retry "
        f"read {ckpt} (their tasks ended meanwhile: the record's own, "
        f"or another retry's); nothing resubmitted: run it again to plan from "
        "what is missing now"]
    history = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
    assert [(a["attempt"], a["values"]) for a in history["attempts"]] == [(1, "1-9"), (2, "2,9")]


# A NeMo Curator pipeline's view of its shard (nemo_curator/backends/slurm_array.py, SlurmArrayConfig.from_env):
# Curator's names, else Slurm's; out of range is an error for a checkpointed run; run.json must not change.
# (The array is named PART: the literal NAME is substituted in the program text, and SHARD is in Curator's names.)
CURATOR_JOB = """\
import os, pathlib, sys
from sharding.store import Attempt, Checkpoint, RunConfig
def read(name, fallback=None, default=None):
    text = os.environ.get(name, os.environ.get(fallback) if fallback else None)
    if text is None and default is None:
        raise ValueError(f"{name} is not set")
    return default if text is None else int(text)
P = "NEMO_CURATOR_SLURM_ARRAY_"
shard, total = read(P + "SHARD_INDEX", "SLURM_ARRAY_TASK_ID"), read(P + "TOTAL_SHARDS", "SLURM_ARRAY_TASK_COUNT")
minimum = read(P + "MINIMUM_SHARD_INDEX", default=0)
if not minimum <= shard < minimum + total:
    raise ValueError(f"shard_index {shard} is outside the shard range [{minimum}, {minimum + total - 1}]")
print("shard", shard, "of", total)
run, store = RunConfig(minimum, total), Checkpoint("ck")
store.ensure_run(run)
if shard in {int(s) for s in pathlib.Path("fail.txt").read_text().split()}:
    store.write_failed(shard, Attempt.from_env(), {"task_ids": [f"p{shard}"], "error": "boom"})
    sys.exit(1)
store.write_completion(shard, run)
"""


@pytest.mark.slurm
def test_a_curator_pipeline_is_retried_with_its_run_and_its_logical_shards(slurm_cluster, test_site, tmp_path,
                                                                           cli_env):
    """A Curator pipeline takes its total from SLURM_ARRAY_TASK_COUNT and its shard from SLURM_ARRAY_TASK_ID
    unless NEMO_CURATOR_SLURM_ARRAY_* say otherwise. `retry --submit` exported only HYPERION_ARRAY_*, so the
    retried shards 3 and 4 read a total of 2 ("shard_index 3 is outside the shard range [1, 2]") and the
    same retry was proposed for ever; in a window at an offset the shard read was the physical index."""
    import sys

    (tmp_path / "fail.txt").write_text("3 4\n")
    first = run_cli("hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "PART=1:4",
                    "--env", "NEMO_CURATOR_SLURM_ARRAY_MINIMUM_SHARD_INDEX=1", "--output-file", "log/c.PART.log",
                    "--", sys.executable, "-c", CURATOR_JOB, cwd=tmp_path, env=cli_env, timeout=300)
    assert first.returncode == 1, first.stderr
    assert run_cli("hyperion-checkpoint", "retry", "ck", cwd=tmp_path, env=cli_env).stdout == "3-4 0 1 4\n"

    (tmp_path / "fail.txt").write_text("")
    again = run_cli("hyperion-checkpoint", "retry", "ck", "--submit", "log/q/c.PART.submit.json",
                    "--max-array-size", "3", cwd=tmp_path, env=cli_env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "offset 3" in again.stderr                       # shards 3, 4 ran as Slurm's tasks 0, 1
    # the hyperion-submit command it names would window by the site's 1001: the line says what it cannot
    assert "--array PART=3:4 " in again.stderr and ", in windows of at most 3 tasks (--max-array-size)" \
        in again.stderr, again.stderr
    for shard in (3, 4):
        log = (tmp_path / "log" / f"c.{shard}.log").read_text()
        assert f"shard {shard} of 4" in log, log
    assert run_cli("hyperion-checkpoint", "retry", "ck", cwd=tmp_path, env=cli_env).stdout == ""
    shards = json.loads(run_cli("hyperion-checkpoint", "shards", "ck", "--json", cwd=tmp_path, env=cli_env).stdout)
    assert shards["counts"] == {"complete": 4, "incomplete": 0, "failed": 0}
