"""The cluster sbatch queued a record's jobs on (a site file's --clusters / -M): read from sbatch's
answer, kept in the record (absent: the local cluster), checked as a plain Slurm name, and put as
-M NAME into every squeue, sacct, scancel and scontrol about that record's jobs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from backends.client import CommandResult
from backends.cluster import OnCluster, for_cluster, is_cluster_name, on_cluster, without_cluster_lines
from backends.errors import InputError
from backends.records.history import load_history
from backends.records.record import JobRecord, SubmitRecord, TaskRecord, load_record, record_json, save_record
from backends.submit.slurm.sbatch import parse_job_id, parse_sbatch_answer
from backends.watch.slurm.accounting import run_sacct, run_squeue_rows, sacct_argv, scontrol_argv, squeue_argv
from backends.watch.slurm.cancel import cancel, cancel_argv
from backends.watch.slurm.control import throttle_argv
from backends.watch.targets import history_status


def test_sbatch_answers_the_cluster_it_queued_the_job_on():
    assert parse_sbatch_answer("13750;localcluster\n") == ("13750", "localcluster")
    assert parse_sbatch_answer("13750\n") == ("13750", None)
    assert parse_job_id("13750;localcluster\n") == "13750"
    assert parse_sbatch_answer("13750;all\n") is None      # -M all would ask every cluster
    for hostile in ("12;--user=root", "12;a b", "12;x;y", "12;a,b", "12;", "12;\x1b[31mred"):
        assert parse_sbatch_answer(hostile) is None, hostile


@pytest.mark.parametrize("argv", [squeue_argv(["12"]), sacct_argv(["12"]), cancel_argv(["12_3"]),
                                  scontrol_argv("12_3"), throttle_argv("12", 4)])
def test_every_client_about_a_records_jobs_asks_its_cluster(argv):
    assert on_cluster(argv, "gpu-west") == [argv[0], "-M", "gpu-west", *argv[1:]]
    assert on_cluster(argv, None) == argv      # the local cluster: as before


def test_sbatch_and_names_that_are_no_cluster_name_never_get_minus_m():
    assert on_cluster(["sbatch", "--parsable", "x.sh"], "west") == ["sbatch", "--parsable", "x.sh"]
    for bad in ("-x", "--user=root", "a b", "", "a;b", "é", "a" * 65, "a,,b", "all", "ALL", "west,All"):
        assert not is_cluster_name(bad), bad
        with pytest.raises(ValueError):
            on_cluster(["squeue"], bad)
    assert is_cluster_name("west,east") and is_cluster_name("local_cluster-2.b")


def test_a_cluster_header_line_is_no_row():
    rows = "12_1|COMPLETED|0:0|00:00:02|vm|\n"
    assert without_cluster_lines(f"CLUSTER: west\n{rows}") == rows
    seen: list[list[str]] = []

    def runner(argv):
        seen.append(list(argv))
        return CommandResult(0, "CLUSTER: west\n", "")

    asked = for_cluster(runner, "west")
    assert run_squeue_rows(["12"], asked).states == []     # only the header: no row, not "unreadable"
    assert run_sacct(["12"], asked).own == []
    cancel(["12"], asked)
    assert [argv[:3] for argv in seen] == [["squeue", "-M", "west"], ["sacct", "-M", "west"], ["scancel", "-M", "west"]]
    assert for_cluster(runner, None) is runner and for_cluster(asked, "west") is asked
    assert isinstance(asked, OnCluster)


def _record(tmp_path: Path, cluster: str | None) -> SubmitRecord:
    path = tmp_path / "q" / "x.JOB.submit.json"
    path.parent.mkdir(exist_ok=True)
    record = SubmitRecord(
        path=str(path), backend="slurm", argv=("hyperion-submit",), cfg="", options={}, script=None,
        array_name="JOB", jobs=(JobRecord("424242", 0, "1-2"),),
        tasks=tuple(TaskRecord(v, "424242", v, str(tmp_path / f"x.{v}.log"), None, None) for v in (1, 2)),
        submitted_at="2026-01-01T00:00:00+00:00", cwd=str(tmp_path), cluster=cluster)
    save_record(record)
    return record


def test_the_record_keeps_the_cluster_and_an_old_record_is_the_local_one(tmp_path):
    record = _record(tmp_path, "gpu-west")
    assert load_record(record.path).cluster == "gpu-west"
    assert load_history(record.path).cluster == "gpu-west"
    local = _record(tmp_path, None)
    assert "cluster" not in record_json(local)            # written as records always were
    assert load_record(local.path).cluster is None


def test_status_of_a_record_asks_its_cluster(tmp_path):
    record = _record(tmp_path, "gpu-west")
    seen: list[list[str]] = []

    def runner(argv):
        seen.append(list(argv))
        return CommandResult(0, "", "")

    history_status(load_history(record.path), runner, unknown=[])
    assert seen and all(argv[1:3] == ["-M", "gpu-west"] for argv in seen), seen


@pytest.mark.parametrize("bad", ["--user=root", "a b", 7, "x;rm -rf ~", "all", "All", "west,ALL"])
def test_a_record_whose_cluster_is_no_name_is_one_line(tmp_path, bad):
    record = _record(tmp_path, "west")
    data = json.loads(Path(record.path).read_text())
    data["cluster"] = bad
    Path(record.path).write_text(json.dumps(data))
    with pytest.raises(InputError, match="cluster: expected a Slurm cluster name"):
        load_record(record.path)
    done = run_cli("hyperion-jobs", "status", record.path, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "cluster: expected a Slurm cluster name" in done.stderr, done.stderr


def test_list_asks_each_records_jobs_on_its_own_cluster(tmp_path):
    """`hyperion-jobs list` of a folder holding records from before a site file's --clusters (the
    local cluster) and after it: every record's jobs were asked on the named cluster (one -M for
    all), where the local ones are not known (or another job of that id is)."""
    from backends.watch.targets import histories_states

    (tmp_path / "far").mkdir()
    (tmp_path / "here").mkdir()
    far, here = _record(tmp_path / "far", "gpu-west"), _record(tmp_path / "here", None)
    seen: list[list[str]] = []

    def runner(argv):
        seen.append(list(argv))
        return CommandResult(0, "", "")

    histories_states([load_history(far.path), load_history(here.path)], runner, failed=[])
    assert {argv[0] for argv in seen if argv[1:3] == ["-M", "gpu-west"]} >= {"sacct", "squeue"}, seen
    assert {argv[0] for argv in seen if "-M" not in argv} >= {"sacct", "squeue"}, seen


def test_the_commands_printed_to_copy_ask_the_named_cluster(tmp_path, monkeypatch):
    """The hints a user copies (see/cancel jobs an unanswered sbatch queued, check for one, cancel a
    job no record names) asked the local cluster, where a site file's --clusters job is not."""
    from backends import attempt
    from backends.cluster import copyable
    from backends.launch_slurm import _check_and_cancel, _unknown_note, not_made_line

    assert copyable(["scancel", "12", "13"], "west") == "scancel -M west 12 13"
    assert copyable(["squeue", "--me", "-o", "%i %o"], None) == "squeue --me -o '%i %o'"
    assert copyable(["scancel", "12"], "all") == "scancel 12"          # no name: never printed as one
    assert _check_and_cancel(["12", "13"], "west") == (
        "see them with: squeue -M west --me -j 12,13; cancel them with: scancel -M west 12 13")
    assert _check_and_cancel(["12"]) == "see them with: squeue --me -j 12; cancel them with: scancel 12"
    note = _unknown_note("/x/q/t.sh", "squeue timed out", "west")
    assert "check with: squeue -M west --me -o '%i %o' (a job whose command is /x/q/t.sh is it; " \
           "scancel -M west it if" in note, note
    line = not_made_line(str(tmp_path / "log" / "q" / "t.submit.json"), 2, False, ("12",), cluster="west")
    assert "(see them with: squeue -M west --me -j 12; cancel them with: scancel -M west 12)" in line, line

    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "t.sh").write_text("#!/bin/bash\n")
    asked = []
    monkeypatch.setattr(attempt, "live_script_jobs",
                        lambda scripts, timeout, stop, cluster=None: asked.append(cluster) or ["77"])
    with pytest.raises(InputError) as refused:
        attempt.refuse_unrecorded_jobs(tmp_path / "q" / "t.submit.json", False, None, "west")
    assert asked == ["west"] and "wait for it or scancel -M west 77 before" in str(refused.value), refused.value


@pytest.mark.parametrize("items, named", [
    (["--clusters=west"], "west"), (["-M", "west"], "west"), (["-Mwest"], "west"), (["-HM", "west"], "west"),
    (["--partition=x", "--clusters", "a,b"], "a,b"), (["--partition=x"], None),
    (["--comment", "-Mx"], None), (["-M", "a", "--clusters=b"], "b")])
def test_the_site_files_cluster_is_read_in_every_spelling(items, named):
    from backends.submit.site_options import option_value

    assert option_value(items, "clusters") == named


def test_lists_live_jobs_are_asked_on_the_records_clusters_too(tmp_path, monkeypatch, capsys):
    """`hyperion-jobs list`'s live jobs came from `squeue -u USER` on the local cluster only: a
    running -M record's jobs were missing, and the empty answer was said to be a problem ('squeue
    -u USER exited 0 with no row, though Slurm's other answers have them running')."""
    from backends.cli.jobs import commands
    from backends.states import JobState, TaskState
    from backends.watch.slurm import accounting
    from backends.watch.slurm.accounting import LiveJob

    far = _record(tmp_path, "gpu-west")
    asked = []

    def user_jobs(user, runner=None):
        cluster = getattr(runner, "cluster", None)
        asked.append(cluster)
        return [LiveJob("424242_1", JobState.RUNNING, 5.0, "n1", "x.JOB")] if cluster == "gpu-west" else []

    monkeypatch.setattr(accounting, "user_jobs", user_jobs)   # imported by `_live_jobs` as it asks
    states = {("424242", 1): TaskState("424242", 1, JobState.RUNNING, source="squeue")}
    live, problem = commands._live_jobs([load_history(far.path)], states, [])
    assert asked == [None, "gpu-west"] and problem is None, (asked, problem)
    assert [(j.job_id, j.cluster) for j in live] == [("424242_1", "gpu-west")]

    from backends.cli.jobs import main

    monkeypatch.setattr(commands, "histories_states", lambda histories, failed, knows_none=None: states)
    assert main(["list", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "no row" not in err and "not known" not in out, (out, err)
    table = out.split("\n\n", 1)[1].splitlines()
    assert table[0].split() == ["JOBID", "CLUSTER", "STATE", "ELAPSED", "NODE", "NAME"], out
    assert table[1].split()[:3] == ["424242_1", "gpu-west", "RUNNING"], out


def _slurm_asked(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose squeue, sacct, scontrol and scancel only write down that they were asked."""
    import os

    bin_dir, asked = tmp_path / "bin", tmp_path / "asked"
    bin_dir.mkdir()
    for name in ("squeue", "sacct", "scontrol", "scancel"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {asked}\nexit 0\n')
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, asked


JOB_COMMANDS = [("status", "424242"), ("watch", "424242"), ("logs", "424242_1"), ("usage", "424242"),
                ("history", "424242"), ("cancel", "424242")]


@pytest.mark.parametrize("command,target", JOB_COMMANDS)
@pytest.mark.parametrize("bad,said", [("all", "'all' asks every cluster"), ("ALL", "'all' asks every cluster"),
                                      ("west,east", "name one cluster"), ("a b", "is not a Slurm cluster name"),
                                      ("x;rm", "is not a Slurm cluster name"), ("", "is not a Slurm cluster name")])
def test_minus_m_that_is_no_one_cluster_is_one_line_and_asks_nothing(tmp_path, command, target, bad, said):
    """`-M NAME` of a job id reaches squeue's argv: `all` (job J on every cluster, `scancel -M all J`
    cancels each), a list, or no name at all is refused before anything is asked."""
    env, asked = _slurm_asked(tmp_path)
    done = run_cli("hyperion-jobs", command, f"--clusters={bad}", target, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.startswith("hyperion-jobs: error: -M/--clusters: ") and said in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1 and not asked.exists(), (done.stderr, asked.exists())


@pytest.mark.parametrize("command,target,by_id", [(command, target, by_id) for command, target in JOB_COMMANDS
                                                  for by_id in (False, True)
                                                  if not (by_id and command == "cancel")])  # no --dir: no record of an id
@pytest.mark.parametrize("cluster", ["gpu-west", None])
def test_minus_m_naming_another_cluster_than_the_records_is_refused(tmp_path, command, target, by_id, cluster):
    """A record's jobs ran on the cluster it names (none: the local one); `-M east` with the record, or
    with a job id it names, would ask east about another job of that id (or none): refused, one line,
    nothing asked. The record's own cluster, in any case, is taken."""
    record = _record(tmp_path, cluster)
    env, asked = _slurm_asked(tmp_path)
    named = target if by_id else record.path + (":1" if command == "logs" else "")
    done = run_cli("hyperion-jobs", command, "-M", "east", named, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done
    ran = f"cluster {cluster}" if cluster else "the local cluster (the record names none)"
    assert done.stderr == (f"hyperion-jobs: error: -M/--clusters: the jobs of {record.path} ran on {ran}, not on "
                           "east: leave out -M east (a record's jobs are asked of its own cluster)\n"), done.stderr
    assert not asked.exists(), asked.read_text()
    if cluster is not None and command == "status":
        same = run_cli("hyperion-jobs", command, "-M", cluster.upper(), named, cwd=tmp_path, env=env, timeout=60)
        assert "-M/--clusters" not in same.stderr, same.stderr
        assert asked.exists() and all(line.split()[1:3] == ["-M", cluster] for line in asked.read_text().splitlines())


def test_cancel_of_a_job_id_a_record_names_asks_the_cluster_status_finds_it_on(tmp_path, monkeypatch, capsys):
    """`status 424242` found the record's job on gpu-west; `cancel 424242` asked the local cluster
    ("Slurm knows no job 424242", or a local job 424242 of yours was the one cancelled). It looks the
    job up in the records under --dir (the working folder by default), as status does."""
    from backends.cli.jobs import commands, main

    _record(tmp_path, "gpu-west")
    seen: list[list[str]] = []

    def runner(argv):
        seen.append(list(argv))
        if argv[0] == "squeue" and "-O" in argv:
            ids = argv[argv.index("-j") + 1].split(",")
            return CommandResult(0, "".join(f"{job}|RUNNING|0|0:31|node01|None|0|\n" for job in ids), "")
        return CommandResult(0, "", "")

    monkeypatch.setattr(commands, "run_command", runner)
    monkeypatch.chdir(tmp_path)
    assert main(["cancel", "--yes", "424242"]) == 0
    assert [argv for argv in seen if argv[0] == "scancel"] == [["scancel", "-M", "gpu-west", "424242"]], seen
    assert all(argv[1:3] == ["-M", "gpu-west"] for argv in seen), seen
    assert capsys.readouterr().out == "cancelled 424242 on cluster gpu-west\n"
    seen.clear()
    assert main(["cancel", "--yes", "-M", "east", "424242"]) == 2     # the record says where it ran
    assert "-M/--clusters" in capsys.readouterr().err and seen == []
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert main(["cancel", "--yes", "--dir", str(elsewhere), "424242"]) == 0   # no record there: local
    assert [argv for argv in seen if argv[0] == "scancel"] == [["scancel", "424242"]], seen


def test_cancel_asks_each_records_cluster_and_minus_m_for_the_job_ids(tmp_path, monkeypatch, capsys):
    """`cancel RECORD J`: one runner for all asked the record's cluster about J too (and `scancel -M
    gpu-west 424242 777` cancelled another job 777, or none); records of two clusters were cancelled
    on both (`-M a,b`). Each record's jobs are asked of its cluster, the job ids of -M's (or the local)."""
    from backends.cli.jobs import commands, main

    record = _record(tmp_path, "gpu-west")
    seen: list[list[str]] = []

    def runner(argv):
        seen.append(list(argv))
        if argv[0] == "squeue" and "-O" in argv:      # the state look: every job asked about runs
            ids = argv[argv.index("-j") + 1].split(",")
            return CommandResult(0, "".join(f"{job}|RUNNING|0|0:31|node01|None|0|\n" for job in ids), "")
        return CommandResult(0, "", "")

    monkeypatch.setattr(commands, "run_command", runner)
    assert main(["cancel", "--yes", record.path, "777"]) == 0
    cancelled = [argv for argv in seen if argv[0] == "scancel"]
    assert cancelled == [["scancel", "-M", "gpu-west", "424242"], ["scancel", "777"]], seen
    assert capsys.readouterr().out == "cancelled 424242 on cluster gpu-west, and 777 on the local cluster\n"
    seen.clear()
    assert main(["cancel", "--yes", "-M", "GPU-WEST", record.path, "777"]) == 0
    assert [argv for argv in seen if argv[0] == "scancel"] == [["scancel", "-M", "GPU-WEST", "424242", "777"]], seen
