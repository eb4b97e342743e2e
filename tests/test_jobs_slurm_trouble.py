"""`hyperion-jobs status` and `list` of a real array while one Slurm client misbehaves as a site
wrapper can: it hangs, or it answers nothing with exit 0. The recorded ends are shown, the rest as
what did answer says (or UNKNOWN), and one line names the command that did not answer.
(Only the misbehaving client is a wrapper on PATH; the other is the cluster's own.)"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import TEST_SITE, kill_noted_groups, run_cli, submit_real_array

ENDED = 5        # values 1-5 end at once (5 with exit code 3); 6-7 run until cancelled


def _wrapper(bin_dir: Path, tool: str, body: str, pids: Path | None = None) -> None:
    bin_dir.mkdir(exist_ok=True)
    note = f"echo $$ >> {pids}\n" if pids is not None else ""
    (bin_dir / tool).write_text(f"#!/bin/sh\n{note}{body}\n")
    (bin_dir / tool).chmod(0o755)


def _forgetting_wrappers(bin_dir: Path) -> None:
    """A controller that forgot every job it is asked about by id (`squeue -j J`: 'Invalid job id
    specified', exit 1; its other answers the cluster's own) and accounting that missed every end
    (slurmdbd's COMPLETED rows read RUNNING): a job whose end slurmdbd missed, without waiting for
    MinJobAge (300 s) and a controller restart."""
    import shutil
    squeue, sacct = shutil.which("squeue"), shutil.which("sacct")
    _wrapper(bin_dir, "squeue", 'case " $* " in *" -j "*) echo "slurm_load_jobs error: Invalid job id specified" >&2; '
                                f'exit 1;; esac\nexec {squeue} "$@"')
    _wrapper(bin_dir, "sacct", f'{sacct} "$@" | sed s/COMPLETED/RUNNING/g')


def _forgotten_line(prog: str, job: str, count: int) -> str:
    return (f"{prog}: controller (squeue) knows no job(s) {job}, which accounting (sacct) still has running "
            f"or waiting: it ended and accounting never filed how (slurmdbd missed its end): squeue -j {job} said "
            f"'Invalid job id specified'; the {count} task(s) with no recorded end are not known (UNKNOWN)")


def _accounted_running(job: str, tasks: tuple[int, ...]) -> bool:
    """Whether accounting has a row of its own saying RUNNING for each of `tasks` (it lags the
    controller by seconds: a task just started has none yet)."""
    rows = subprocess.run(["sacct", "-X", "-n", "-P", "-j", job, "-o", "JobID,State"], capture_output=True,
                          text=True).stdout.split()
    return all(f"{job}_{task}|RUNNING" in rows for task in tasks)


# The ends of `half_ended`'s values 1-5, as `status` shows them whatever Slurm's tools answer
HALF_ENDED = {"1": "COMPLETED", "2": "COMPLETED", "3": "COMPLETED", "4": "COMPLETED", "5": "FAILED"}


def _status_rows(result) -> dict[str, str]:
    """Value -> state of the 7 rows of a `hyperion-jobs status` table of `half_ended`."""
    return {line.split()[1]: line.split()[2] for line in result.stdout.splitlines()[1:8]}


@pytest.fixture
def half_ended(slurm_cluster, tmp_path):
    """A 7-task array whose first 5 ends the ledger holds (a plain `status` recorded them) while
    values 6-7 run (accounting says so too); cancelled at the end."""
    script = tmp_path / "task.sh"
    script.write_text('[ "$1" -le 4 ] && exit 0; [ "$1" = 5 ] && exit 3; sleep 300\n')
    record = submit_real_array(tmp_path / "log" / "t.JOB.log", "JOB=1:7", "sh", str(script), "JOB",
                               time_limit="00:06:00")
    job = record.jobs[0].job_id
    try:
        deadline = time.monotonic() + 240
        while True:
            status = run_cli("hyperion-jobs", "status", record.path, "--json", timeout=120)
            counts = json.loads(status.stdout)["counts"]
            if counts.get("COMPLETED") == 4 and counts.get("FAILED") == 1 and _accounted_running(job, (6, 7)):
                break
            assert time.monotonic() < deadline, counts
            time.sleep(2)
        ledger = Path(record.path.replace(".submit.json", ".attempts.jsonl")).read_text()
        assert ledger.count('"type":"final"') == ENDED
        yield record
    finally:
        subprocess.run(["scancel", job], check=False)


@pytest.mark.slurm
def test_status_with_squeue_hung_shows_the_table_and_says_which_command_did_not_answer(
        half_ended, tmp_path, cli_env) -> None:
    """squeue hung (sacct fine): `status RECORD` printed nothing for 30 s, then exited 1 with
    `squeue failed (rc 124)` and no table, though the ledger held 5 of the 7 ends. The table comes
    anyway (accounting's word for the live tasks, as a watch shows it), with one line naming squeue
    and how long it was waited for; exit 1: the states are not all known."""
    pids = tmp_path / "pids"
    _wrapper(tmp_path / "bin", "squeue", "sleep 3600", pids)
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    try:
        result = run_cli("hyperion-jobs", "status", half_ended.path, env=env, timeout=120)
    finally:
        kill_noted_groups(pids)
    assert result.returncode == 1, result.stderr
    assert _status_rows(result) == {**HALF_ENDED, "6": "RUNNING", "7": "RUNNING"}, result.stdout
    assert result.stderr == ("hyperion-jobs: controller (squeue) not answering: squeue failed (rc 124): squeue "
                             "timed out after 30 s; the 2 task(s) with no recorded end are shown as accounting "
                             "(sacct) has them, which may be behind\n")


@pytest.mark.slurm
def test_empty_answers_are_said_not_shown_as_unknown_or_as_no_live_jobs(half_ended, tmp_path, cli_env) -> None:
    """squeue and sacct printing nothing, exit 0 (a site wrapper): `status` showed the live tasks
    UNKNOWN with nothing on stderr and exit 0; `list`, with squeue alone empty, said "no live Slurm
    jobs" while the array ran. Each now says which command answered with no row."""
    job = half_ended.jobs[0].job_id
    bin_dir = tmp_path / "bin"
    _wrapper(bin_dir, "squeue", "exit 0")
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "no live Slurm jobs" not in listed.stdout
    assert listed.stdout.rstrip().endswith(": not known"), listed.stdout
    assert (f"hyperion-jobs: controller (squeue) lists none of job(s) {job}: squeue -u "
            in listed.stderr), listed.stderr

    _wrapper(bin_dir, "sacct", "exit 0")
    status = run_cli("hyperion-jobs", "status", half_ended.path, env=env, timeout=120)
    assert status.returncode == 1, status.stderr
    assert status.stdout.splitlines()[-1] == "7 tasks: COMPLETED 4, FAILED 1, UNKNOWN 2", status.stdout
    assert status.stderr == (f"hyperion-jobs: controller (squeue) lists none of job(s) {job}: squeue -j {job} "
                             f"exited 0 with no row; accounting (sacct) lists none of job(s) {job}: sacct -j {job} "
                             "exited 0 with no row; the 2 task(s) with no recorded end are not known (UNKNOWN)\n")
    as_json = json.loads(run_cli("hyperion-jobs", "status", half_ended.path, "--json", env=env).stdout)
    assert as_json["exit_status"] == 1 and "UNKNOWN" in as_json["error"]


@pytest.mark.slurm
def test_jobs_slurm_has_no_trace_of_are_unknown_not_a_failure(slurm_cluster, tmp_path, cli_env) -> None:
    """A record of a job accounting purged (hyperion-submit killed, no look since) or a mistyped one:
    squeue says 'Invalid job id specified' of one id and prints nothing, exit 0, of several; sacct
    prints nothing. `status` exited 1 on every run for ever ('squeue -j J exited 0 with no row; ...
    not known'), and `list` showed it `?` with `live Slurm jobs: not known`. Its tasks are UNKNOWN,
    as before, and nothing is said to have failed: `status` says why, as `watch` does (exit 0).
    (Job ids above MaxJobId: never the cluster's.)"""
    from test_console_fixtures import build_history

    from backends.records.attempts import ledger_path

    conf = Path(__file__).parents[1] / "conf" / "submit_test_cluster.yaml"
    one = build_history(tmp_path / "one", conf, n=2, job="99999999", unfinished=(1, 2))
    two = build_history(tmp_path / "two", conf, n=2, job="99999998", retry_job="99999999", unfinished=(2,),
                        failures={1: ("FAILED", 1, "x")}, retried={1: ("COMPLETED", 0), 2: ("COMPLETED", 0)})
    ledger = ledger_path(two)        # attempt 2 (job 99999999) has no recorded end either
    ledger.write_text("".join(line + "\n" for line in ledger.read_text().splitlines()
                              if not (json.loads(line)["type"] == "final" and json.loads(line)["attempt"] == 2)))
    for record in (one, two):
        for _ in range(2):
            status = run_cli("hyperion-jobs", "status", str(record), env=cli_env, timeout=120)
            assert (status.returncode, status.stderr) == (0, (
                f"hyperion-jobs: Slurm knows no job 99999999, which {record} submitted; the 2 task(s) "
                "with no recorded end are not known (UNKNOWN)\n")), status.stderr
            assert status.stdout.splitlines()[-1] == "2 tasks: UNKNOWN 2", status.stdout
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=cli_env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "lists none of" not in listed.stderr and "not known" not in listed.stdout, listed.stderr
    assert listed.stdout.count("UNKNOWN 2") == 2, listed.stdout


def _hang(bin_dir: Path, tools: tuple[str, ...], pids: Path) -> dict[str, str]:
    """`tools` as site wrappers that hang (their pids noted in `pids`, for the cleanup)."""
    for tool in tools:
        _wrapper(bin_dir, tool, "sleep 3600", pids)
    return {"PATH": f"{bin_dir}{os.pathsep}"}


@pytest.mark.slurm
def test_status_with_squeue_and_sacct_hung_waits_one_timeout_not_both(half_ended, tmp_path, cli_env) -> None:
    """squeue and sacct both hung: `status RECORD` printed nothing for 60 s (30 s waiting for sacct,
    then 30 s for squeue) before its table. Both are asked at once: the wait is one timeout."""
    pids = tmp_path / "pids"
    env = {**cli_env, "PATH": _hang(tmp_path / "bin", ("squeue", "sacct"), pids)["PATH"] + cli_env["PATH"]}
    started = time.monotonic()
    try:
        result = run_cli("hyperion-jobs", "status", half_ended.path, env=env, timeout=120)
    finally:
        kill_noted_groups(pids)
    took = time.monotonic() - started
    assert took < 45, took
    assert result.returncode == 1, result.stderr
    assert _status_rows(result) == {**HALF_ENDED, "6": "UNKNOWN", "7": "UNKNOWN"}, result.stdout
    assert result.stderr == ("hyperion-jobs: accounting (sacct) not answering: sacct failed (rc 124): sacct timed "
                             "out after 30 s; controller (squeue) not answering: squeue failed (rc 124): squeue "
                             "timed out after 30 s; the 2 task(s) with no recorded end are not known (UNKNOWN)\n")


@pytest.mark.slurm
def test_list_with_squeue_hung_shows_accountings_states_as_status_does(half_ended, tmp_path, cli_env) -> None:
    """squeue hung (sacct fine): `list` showed the record as `?` while `status` of it showed its
    running tasks as accounting has them. It shows them too, and says that squeue did not answer
    and that they may be behind; the live jobs stay not known."""
    pids = tmp_path / "pids"
    env = {**cli_env, "PATH": _hang(tmp_path / "bin", ("squeue",), pids)["PATH"] + cli_env["PATH"]}
    try:
        listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=env, timeout=120)
    finally:
        kill_noted_groups(pids)
    assert listed.returncode == 0, listed.stderr
    states = [line.split(None, 5)[5] for line in listed.stdout.splitlines() if line.startswith(half_ended.path)]
    assert states == ["COMPLETED 4, FAILED 1, RUNNING 2"], listed.stdout
    assert listed.stdout.rstrip().endswith(": not known"), listed.stdout
    assert listed.stderr == ("hyperion-jobs: controller (squeue) not answering: squeue failed (rc 124): squeue "
                             "timed out after 30 s; the 2 task(s) with no recorded end are shown as accounting "
                             "(sacct) has them, which may be behind\n"), listed.stderr


@pytest.mark.slurm
def test_status_of_a_job_no_record_names_says_which_commands_failed(half_ended, tmp_path, cli_env) -> None:
    """`status J` of a job whose record is not found (another folder): with squeue and sacct both
    refused it said only `sacct failed (rc 1): ...` (squeue never named, nor that it was accounting);
    with squeue alone refused it failed the same way though accounting had every task. Both failed:
    one line naming each, exit 1, no table. Accounting answered: its table, and one line."""
    job = half_ended.jobs[0].job_id
    bin_dir, elsewhere = tmp_path / "bin", tmp_path / "elsewhere"
    elsewhere.mkdir()
    _wrapper(bin_dir, "squeue", 'echo "squeue: error: Unable to contact slurm controller (connect failure)" >&2; exit 1')
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    partly = run_cli("hyperion-jobs", "status", job, "--dir", str(elsewhere), env=env, timeout=120)
    assert partly.returncode == 1, partly.stderr
    rows = {line.split()[0]: line.split()[2] for line in partly.stdout.splitlines()[1:8]}
    assert rows == {f"{job}_{n}": "COMPLETED" for n in range(1, 5)} | {
        f"{job}_5": "FAILED", f"{job}_6": "RUNNING", f"{job}_7": "RUNNING"}, partly.stdout
    assert partly.stderr == ("hyperion-jobs: controller (squeue) not answering: squeue failed (rc 1): squeue: error: "
                             "Unable to contact slurm controller (connect failure); the 2 unended task(s) are shown "
                             "as accounting (sacct) has them, which may be behind\n")

    _wrapper(bin_dir, "sacct", 'echo "sacct: error: Problem talking to the database: Connection refused" >&2; exit 1')
    for args in ((job,), (job, "--json"), (f"{job}_6",)):
        neither = run_cli("hyperion-jobs", "status", *args, "--dir", str(elsewhere), env=env, timeout=120)
        assert (neither.returncode, neither.stdout) == (1, ""), neither.stdout
        assert neither.stderr == ("hyperion-jobs: accounting (sacct) not answering: sacct failed (rc 1): sacct: error: "
                                  "Problem talking to the database: Connection refused; controller (squeue) not "
                                  "answering: squeue failed (rc 1): squeue: error: Unable to contact slurm "
                                  "controller (connect failure)\n"), neither.stderr


@pytest.mark.slurm
def test_a_job_the_controller_forgot_while_accounting_has_it_running_is_unknown(half_ended, tmp_path, cli_env) -> None:
    """slurmdbd missed the end of tasks 6-7 (a controller restart): accounting has them RUNNING for
    ever while the controller says it knows no such job (`squeue -j J`: 'Invalid job id specified',
    exit 1, as it says of a job it forgot). `status` showed them RUNNING ("which may be behind") and
    exited 1 at every run for ever, as if Slurm did not answer. They are UNKNOWN, one line says why,
    and the exit status is 0: Slurm answered, and no later look will tell more (`--json`'s
    `exit_status` is 1: they did not all succeed). `list` counts them UNKNOWN, not `?`."""
    job = half_ended.jobs[0].job_id
    bin_dir = tmp_path / "bin"
    _wrapper(bin_dir, "squeue", 'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1')
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    line = (f"hyperion-jobs: controller (squeue) knows no job(s) {job}, which accounting (sacct) still has running "
            f"or waiting: it ended and accounting never filed how (slurmdbd missed its end): squeue -j {job} said "
            "'Invalid job id specified'; the 2 task(s) with no recorded end are not known (UNKNOWN)\n")
    for target in (half_ended.path, job):
        status = run_cli("hyperion-jobs", "status", target, env=env, cwd=tmp_path, timeout=120)
        assert status.returncode == 0, status.stderr
        assert status.stdout.splitlines()[-1] == "7 tasks: COMPLETED 4, FAILED 1, UNKNOWN 2", status.stdout
        assert status.stderr == line, status.stderr
    as_json = json.loads(run_cli("hyperion-jobs", "status", half_ended.path, "--json", env=env).stdout)
    assert as_json["exit_status"] == 1 and "knows no job(s)" in as_json["error"]
    listed = run_cli("hyperion-jobs", "list", str(tmp_path), env=env, timeout=120)
    states = [line.split(None, 5)[5] for line in listed.stdout.splitlines() if line.startswith(half_ended.path)]
    assert states == ["COMPLETED 4, FAILED 1, UNKNOWN 2"], listed.stdout


@pytest.mark.slurm
def test_status_of_a_job_no_record_names_with_squeue_hung_waits_one_timeout(half_ended, tmp_path, cli_env) -> None:
    """`status J` whose record is not found (another folder) with squeue hung took 60 s (90 s with
    sacct hung too), where README promises one 30 s timeout: the look at whether J is an array task's
    own id waited for squeue, and then `status` asked it again. That look is the status's look now
    (sacct and squeue at once); an array task's own id still shows its task, and what did not answer
    the first look is not asked again."""
    job = half_ended.jobs[0].job_id
    own = subprocess.run(["sacct", "-X", "-n", "-P", "-j", f"{job}_6", "-o", "JobIDRaw"], capture_output=True,
                         text=True, check=True).stdout.split()[0]
    assert own != job, own
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    whole = {f"{job}_{n}": "COMPLETED" for n in range(1, 5)} | {
        f"{job}_5": "FAILED", f"{job}_6": "RUNNING", f"{job}_7": "RUNNING"}
    for n, (hung, target, rows, line) in enumerate((
            (("squeue",), job, whole,
             "the 2 unended task(s) are shown as accounting (sacct) has them, which may be behind"),
            (("squeue",), own, {f"{job}_6": "RUNNING"},
             "the 1 unended task(s) are shown as accounting (sacct) has them, which may be behind"),
            (("squeue", "sacct"), job, None, None))):
        bin_dir, pids = tmp_path / f"bin{n}", tmp_path / f"pids{n}"
        env = {**cli_env, "PATH": _hang(bin_dir, hung, pids)["PATH"] + cli_env["PATH"]}
        started = time.monotonic()
        try:
            result = run_cli("hyperion-jobs", "status", target, "--dir", str(elsewhere), env=env, timeout=150)
        finally:
            kill_noted_groups(pids)
        took = time.monotonic() - started
        assert took < 45, (target, hung, took)
        assert result.returncode == 1, result.stderr
        if rows is None:       # nothing answered: one line naming each, no table
            assert result.stdout == "", result.stdout
            assert result.stderr == ("hyperion-jobs: accounting (sacct) not answering: sacct failed (rc 124): sacct "
                                     "timed out after 30 s; controller (squeue) not answering: squeue failed (rc 124): "
                                     "squeue timed out after 30 s\n"), result.stderr
            continue
        shown = {cells.split()[0]: cells.split()[2] for cells in result.stdout.splitlines()[1:-1]}
        assert shown == rows, result.stdout
        assert result.stderr == ("hyperion-jobs: controller (squeue) not answering: squeue failed (rc 124): squeue "
                                 f"timed out after 30 s; {line}\n"), result.stderr


@pytest.mark.slurm
def test_watch_of_a_job_the_controller_forgot_ends_with_its_tasks_unknown(half_ended, tmp_path, cli_env) -> None:
    """slurmdbd missed the end of tasks 6-7 (accounting has them RUNNING for ever) and the controller
    forgot the job (`squeue -j J`: 'Invalid job id specified', exit 1). `status` says so, but `watch`
    of the record or of the job showed them RUNNING and polled for ever. It ends at its first poll:
    6-7 UNKNOWN, the line `status` gives, exit 1 (not every task completed), no end recorded."""
    job = half_ended.jobs[0].job_id
    bin_dir, elsewhere = tmp_path / "bin", tmp_path / "elsewhere"
    elsewhere.mkdir()
    _wrapper(bin_dir, "squeue", 'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1')
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    ledger = Path(half_ended.path.replace(".submit.json", ".attempts.jsonl"))
    before = ledger.read_text()
    line = (f"hyperion-jobs: controller (squeue) knows no job(s) {job}, which accounting (sacct) still has running "
            f"or waiting: it ended and accounting never filed how (slurmdbd missed its end): squeue -j {job} said "
            "'Invalid job id specified'; the 2 task(s) with no recorded end are not known (UNKNOWN)\n")
    for args in ((half_ended.path,), (job,), (job, "--dir", str(elsewhere))):
        try:
            watched = run_cli("hyperion-jobs", "watch", *args, env=env, cwd=tmp_path, timeout=60)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"watch {' '.join(args)} still polling after 60 s: {exc.stdout!r}") from None
        assert watched.returncode == 1, (args, watched.stdout, watched.stderr)
        assert "7 tasks: COMPLETED 4, FAILED 1, UNKNOWN 2" in watched.stdout.splitlines(), watched.stdout
        unknown = [cells.split()[:2] for cells in watched.stdout.splitlines() if "UNKNOWN exit" in cells]
        assert unknown == [[f"{job}_6", "UNKNOWN"], [f"{job}_7", "UNKNOWN"]], watched.stdout
        assert watched.stderr == line, (args, watched.stderr)
    assert ledger.read_text() == before       # nothing recorded of tasks nobody knows the end of


@pytest.mark.slurm
def test_submit_wait_of_a_job_the_controller_forgot_says_why_its_tasks_are_unknown(slurm_cluster, tmp_path,
                                                                                     cli_env) -> None:
    """hyperion-submit's wait of a job the controller forgot while accounting has it running ended
    (the shared poller), but its closing lines called the tasks 'never reported by Slurm', though
    accounting reported them RUNNING. They are `not known (UNKNOWN)` with `status`'s line saying
    why; exit 1 (README: a task whose end is not known did not succeed)."""
    _forgetting_wrappers(tmp_path / "bin")
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    try:
        result = run_cli("hyperion-submit", "slurm", "--cfg", str(TEST_SITE), "--array", "JOB=1:2", "--output-file",
                         "log/f.JOB.log", "--", "true", cwd=tmp_path, env=env, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"hyperion-submit still waiting after 120 s: {exc.stderr!r}") from None
    from backends.records.history import load_history
    job = load_history(tmp_path / "log" / "q" / "f.JOB.submit.json").current.jobs[0].job_id
    assert result.returncode == 1, result.stderr
    assert "never reported by Slurm" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    for value in (1, 2):
        assert any(line.startswith(f"hyperion-submit: JOB={value} (job {job}_{value}): not known (UNKNOWN); log ")
                   for line in lines), result.stderr
    assert _forgotten_line("hyperion-submit", job, 2) in lines, result.stderr
    assert lines[-1].startswith("hyperion-submit: 2 of 2 task(s) did not succeed (unknown 2)"), result.stderr
    # the last progress line counts them as the closing line does: it read `... running 0 pending 2`
    counts = [line for line in lines if line.startswith("done ")]
    assert counts[-1] == "done 0/2 failed 0 unknown 2 running 0 pending 0", result.stderr


@pytest.mark.slurm
def test_logs_follow_of_a_task_of_a_job_the_controller_forgot_ends_with_status_line(half_ended, tmp_path,
                                                                                    cli_env) -> None:
    """`logs -f` of a task of a job the controller forgot while accounting has it running followed
    for ever (the poller ended, but the task's row had no state, so no end). It stops with `status`'s
    line and exit 0, as `logs -f` exits once a task has ended (the line is its outcome)."""
    job = half_ended.jobs[0].job_id
    _wrapper(tmp_path / "bin", "squeue", 'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1')
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    for task in (f"{job}_6", f"{half_ended.path}:7"):
        try:
            followed = run_cli("hyperion-jobs", "logs", task, "-f", env=env, cwd=tmp_path, timeout=60)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"logs {task} -f still following after 60 s: {exc.stderr!r}") from None
        assert followed.returncode == 0, (task, followed.stderr)
        assert followed.stderr.splitlines()[-1] == f"{_forgotten_line('hyperion-jobs', job, 1)}; stopped following", \
            (task, followed.stderr)


@pytest.mark.slurm
def test_status_of_a_job_no_record_names_the_controller_forgot_shows_its_tasks_unknown(half_ended, tmp_path,
                                                                                       cli_env) -> None:
    """`status J` of a job no record names, which the controller forgot while accounting has tasks
    6-7 running: `status J_6` printed one line and exited 1 with no table, `status J` the ended
    rows alone with '...; shown as accounting (sacct) has them', where `watch J` shows 6-7 UNKNOWN.
    The rows come UNKNOWN with `status RECORD`'s line, exit 0 as `status RECORD` of it exits."""
    job = half_ended.jobs[0].job_id
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _wrapper(tmp_path / "bin", "squeue", 'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1')
    env = {**cli_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{cli_env['PATH']}"}
    for target, unknown in ((f"{job}_6", (6,)), (job, (6, 7))):
        result = run_cli("hyperion-jobs", "status", target, "--dir", str(elsewhere), env=env, cwd=tmp_path,
                         timeout=120)
        assert result.returncode == 0, (target, result.stdout, result.stderr)
        shown = {cells.split()[0]: cells.split()[2] for cells in result.stdout.splitlines()
                 if cells.startswith(f"{job}_")}
        assert {task for task, state in shown.items() if state == "UNKNOWN"} == {f"{job}_{t}" for t in unknown}, \
            result.stdout
        assert len(shown) == (1 if target != job else 7), result.stdout
        assert result.stderr == f"{_forgotten_line('hyperion-jobs', job, len(unknown))}\n", (target, result.stderr)
