"""hyperion-submit local, run as a user runs it: real child processes, real logs."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TEST_SITE, group_members, kill_groups, reaped, run_cli

from backends.logheader import parse_ended
from backends.records.record import load_record

PY = sys.executable


def submit(tmp_path: Path, env: dict, *args: str, timeout: float = 60):
    return run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), *args,
                   cwd=tmp_path, env=env, timeout=timeout)


def body(log: Path) -> list[str]:
    """The log without its header (2 lines) and footer (1 line)."""
    return log.read_text().splitlines()[2:-1]


def task_states(record: Path, env: dict) -> dict:
    """What `hyperion-jobs status --json` says of each value: (state, exit code)."""
    shown = run_cli("hyperion-jobs", "status", str(record), "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    return {t["value"]: (t["state"], t["exit_code"]) for t in json.loads(shown.stdout)["tasks"]}


def test_array_runs_in_ascending_order_and_stops_at_first_failure(tmp_path, cli_env):
    order = tmp_path / "order.txt"
    script = (f"import os, sys; open({str(order)!r}, 'a').write(os.environ['J' 'OB'] + '\\n'); "
              "sys.exit(3 if os.environ['J' 'OB'] == '3' else 0)")  # 'J' 'OB': not substituted
    result = submit(tmp_path, cli_env, "--array", "JOB=1:2,3:5", "--output-file", "log/t.JOB.log",
                    "--", PY, "-c", script)
    assert result.returncode == 1
    assert order.read_text().split() == ["1", "2", "3"]
    assert [p.name for p in sorted((tmp_path / "log").glob("t.*.log"))] == ["t.1.log", "t.2.log", "t.3.log"]
    assert "exit code 3" in result.stderr and str(tmp_path / "log" / "t.3.log") in result.stderr
    assert "Traceback" not in result.stderr
    assert task_states(tmp_path / "log" / "q" / "t.JOB.submit.json", cli_env) == {
        1: ("COMPLETED", 0), 2: ("COMPLETED", 0), 3: ("FAILED", 3), 4: ("NOT_RUN", None),
        5: ("NOT_RUN", None)}


def test_max_jobs_run_is_accepted_and_local_tasks_still_run_one_at_a_time(tmp_path, cli_env):
    """The contract: local and slurm accept the same options, and local arrays always run sequentially."""
    spans = tmp_path / "spans.txt"
    script = (f"import time; start = time.time(); time.sleep(0.3); "
              f"open({str(spans)!r}, 'a').write(f'{{start}} {{time.time()}}\\n')")
    result = submit(tmp_path, cli_env, "--array", "JOB=1:3", "--max-jobs-run", "3",
                    "--output-file", "log/s.JOB.log", "--", PY, "-c", script)
    assert result.returncode == 0, result.stderr
    runs = sorted(tuple(map(float, line.split())) for line in spans.read_text().splitlines())
    assert len(runs) == 3
    assert all(end <= next_start for (_, end), (next_start, _) in zip(runs, runs[1:])), runs


def test_local_records_scheduler_requests_but_enforces_none(tmp_path, cli_env):
    """As the README says (and run.pl does): --time and --mem are a scheduler's to enforce; a local
    task running past its --time of 1 s is not stopped, and the record keeps what was asked."""
    result = submit(tmp_path, cli_env, "--time", "0:01", "--mem", "1M", "--num-threads", "2",
                    "--output-file", "log/slow.log", "--", PY, "-c", "import time; time.sleep(1.5); print('done')")
    assert result.returncode == 0, result.stderr
    assert body(tmp_path / "log" / "slow.log") == ["done"]
    options = load_record(tmp_path / "log" / "q" / "slow.submit.json").options
    assert (options["time"], options["mem"], options["num_threads"]) == ("0:01", "1M", 2)


def test_name_is_in_env_args_and_log_path(tmp_path, cli_env):
    script = "import os, sys; print(sys.argv[1:], os.environ['J' 'OB'], os.environ['EXTRA'])"
    result = submit(tmp_path, cli_env, "--array", "JOB=7:8", "--env", "EXTRA=e x",
                    "--output-file", "JOB/out.JOB.log", "--", PY, "-c", script,
                    "--part", "JOB", "file.JOB.ark", "JOBJOB")
    assert result.returncode == 0, result.stderr
    assert body(tmp_path / "7" / "out.7.log") == ["['--part', '7', 'file.7.ark', '77'] 7 e x"]
    assert body(tmp_path / "8" / "out.8.log") == ["['--part', '8', 'file.8.ark', '88'] 8 e x"]
    assert result.stdout.count(": ok") == 2


TOTAL = ("--env", "NEMO_CURATOR_SLURM_ARRAY_TOTAL_SHARDS=2")


@pytest.mark.parametrize("given,seen", [
    (TOTAL, ("1 1", "2 2")),                                   # sharded: each task its own shard
    ((), ("None None", "None None")),                          # no total: unsharded, as before
    ((*TOTAL, "--env", "NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX=9"), ("9 1", "9 2")),   # an --env wins
], ids=["sharded", "unsharded", "env-wins"])
def test_each_array_task_tells_a_sharded_program_its_shard_over_one_left_in_the_shell(tmp_path, cli_env, given,
                                                                                    seen):
    """A NeMo Curator pipeline reads its shard from NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX, else
    SLURM_ARRAY_TASK_ID, which a local task has not: a local retry of a Curator checkpoint (which
    exports the total) failed every task ('... is not set'), and a value left in the shell ran one
    shard in every task. Without a total a program runs unsharded, as it did."""
    show = ("import os; print('shard', os.environ.get('NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX'), "
            "os.environ.get('HYPERION_ARRAY_SHARD_INDEX'))")
    env = {**cli_env, "NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX": "5", "HYPERION_ARRAY_SHARD_INDEX": "5"}   # debugging
    result = submit(tmp_path, env, "--array", "PART=1:2", *given, "--output-file", "c.PART.log", "--",
                    PY, "-c", show)
    assert result.returncode == 0, result.stderr
    assert [body(tmp_path / f"c.{v}.log") for v in (1, 2)] == [[f"shard {s}"] for s in seen]
    single = submit(tmp_path, env, "--output-file", "one.log", "--", PY, "-c", show)
    assert single.returncode == 0 and body(tmp_path / "one.log") == ["shard 5 5"]   # no array: the shell's


def test_a_shells_report_of_a_signal_says_the_signal(tmp_path, cli_env):
    """`bash -c` reporting its program's segfault gave `exit code 139` alone; 137 (SIGKILL, the OOM
    killer's) and 130 too are 128+N. An exit code of 128 or 3 gets no note."""
    result = submit(tmp_path, cli_env, "--output-file", "s.log", "--", "bash", "-c", 'bash -c "kill -SEGV \\$\\$"')
    assert result.returncode == 1
    assert "task: FAILED with exit code 139 (128+SIGSEGV) (" in result.stdout, result.stdout
    failures = run_cli("hyperion-jobs", "status", str(tmp_path / "q" / "s.submit.json"), "--failures", env=cli_env)
    assert "1 FAILED exit 139 (128+SIGSEGV)  values -" in failures.stdout, failures.stdout
    plain = submit(tmp_path, cli_env, "--output-file", "p.log", "--", "bash", "-c", "exit 128")
    assert "task: FAILED with exit code 128 (" in plain.stdout, plain.stdout


def test_an_argument_holding_a_newline_keeps_the_log_header_one_line(tmp_path, cli_env):
    """`# Running:` joined the command with shlex.join: an argument holding a newline spanned two lines
    of the log, read as a command and a stray line (and `logs` showed it so). The header is one line,
    a newline or tab in bash's $'...' quoting, and pasted into bash runs the same command."""
    args = ("printf", "%s|", "two\nlines", "tab\there", "it's")
    result = submit(tmp_path, cli_env, "--output-file", "n.log", "--", *args)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "n.log").read_text()
    lines = text.splitlines()
    assert lines[0] == "# Running: printf '%s|' $'two\\nlines' $'tab\\there' 'it'\"'\"'s'", lines
    assert lines[1].startswith("# Started at ")
    pasted = subprocess.run(["bash", "-c", lines[0].removeprefix("# Running: ")], capture_output=True, text=True)
    assert text.split("\n", 2)[2].startswith(pasted.stdout) and pasted.stdout == "two\nlines|tab\there|it's|"
    shown = run_cli("hyperion-jobs", "logs", str(tmp_path / "q" / "n.submit.json"), env=cli_env)
    assert shown.returncode == 0 and shown.stdout.splitlines()[0] == lines[0], shown.stdout


def test_log_has_combined_output_and_header_footer(tmp_path, cli_env):
    script = "import sys; print('to out', flush=True); print('to err', file=sys.stderr, flush=True); sys.exit(4)"
    result = submit(tmp_path, cli_env, "--output-file", "t.log", "--", PY, "-c", script)
    assert result.returncode == 1
    lines = (tmp_path / "t.log").read_text().splitlines()
    assert lines[0] == f"# Running: {shlex.join([PY, '-c', script])}"
    assert re.fullmatch(r"# Started at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d on \S+", lines[1])
    assert lines[2:4] == ["to out", "to err"]
    code, _, elapsed = parse_ended(lines[-1])
    assert (code, elapsed) == (4, 0)


def test_success_writes_record_and_exits_zero(tmp_path, cli_env):
    result = submit(tmp_path, cli_env, "--output-file", "log/run.log", "--", "true")
    assert result.returncode == 0, result.stderr
    record = load_record(tmp_path / "log" / "q" / "run.submit.json")
    assert record.backend == "local" and record.jobs[0].job_id == "local"
    assert record.tasks[0].log == str(tmp_path / "log" / "run.log")
    assert record.argv[:2] == ("hyperion-submit", "local")
    assert task_states(tmp_path / "log" / "q" / "run.submit.json", cli_env) == {None: ("COMPLETED", 0)}


def test_missing_executable_fails_with_127(tmp_path, cli_env):
    result = submit(tmp_path, cli_env, "--output-file", "t.log", "--", "no-such-program-xyz", "a")
    assert result.returncode == 1
    assert "exit code 127" in result.stderr and "Traceback" not in result.stderr
    log = (tmp_path / "t.log").read_text().splitlines()
    assert "no-such-program-xyz: command not found" in log[2]
    assert parse_ended(log[-1])[0] == 127


def test_torchrun_prefix_for_more_than_one_gpu(tmp_path, cli_env):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    torchrun = fake_bin / "torchrun"  # stands in for the launched command, not the scheduler
    torchrun.write_text("#!/bin/sh\necho \"torchrun got: $*\"\n")
    torchrun.chmod(0o755)
    env = {**cli_env, "PATH": f"{fake_bin}{os.pathsep}{cli_env['PATH']}"}
    result = submit(tmp_path, env, "--num-gpus", "2", "--output-file", "t.log", "--", "train", "--lr", "1")
    assert result.returncode == 0, result.stderr
    assert body(tmp_path / "t.log") == ["torchrun got: --standalone --nnodes=1 --nproc-per-node=2 train --lr 1"]


def test_a_command_torchrun_will_not_start_is_warned_about_before_it_runs(tmp_path, cli_env):
    """`--num-gpus 2 -- python train.py` was accepted without a word: torchrun runs `python -u python
    train.py`, found out from the log after a wait in the queue. hyperion-submit warns (the prefix
    is the contract's: the run goes on), naming why, for the interpreter, a name looked for on PATH,
    a script of another interpreter; a Python file and one GPU are not warned about; a FIFO named
    first is not opened (it would hang the submission)."""
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "run.sh").write_text("#!/bin/bash\necho hi\n")
    (tmp_path / "shim").write_text("#!/usr/bin/env python3\nprint('hi')\n")
    os.mkfifo(tmp_path / "pipe")

    tools = tmp_path.parent / f"{tmp_path.name}-bin"     # a console script installed on PATH
    tools.mkdir()
    (tools / "hyperion-train").write_text("#!/usr/bin/env python3\nprint('hi')\n")
    (tools / "hyperion-train").chmod(0o755)

    def warned(*command: str, gpus: str = "2", path: bool = False) -> str:
        env = {**cli_env, "PATH": f"{tools}{os.pathsep}{cli_env['PATH']}"} if path else cli_env
        run = submit(tmp_path, env, "--dry-run", "--num-gpus", gpus, "--output-file", "t.log", "--", *command,
                     timeout=20)
        assert run.returncode == 0 and "torchrun" in run.stdout or gpus == "1", (run.stdout, run.stderr)
        return run.stderr

    said = warned("python", "train.py")
    assert said.startswith("hyperion-submit: warning: --num-gpus 2 runs the command under torchrun, which starts "
                           "its first word as a Python script (`python -u python ...`"), said
    assert "give the script first (-- train.py ARGS)" in said and said.count("\n") == 1
    assert "interpreter read as a script" in warned("python3.11", "x.py")
    assert "interpreter read as a script" in warned("/usr/bin/python3")
    os.symlink("loop", tmp_path / "loop")
    assert "loop cannot be read (Too many levels of symbolic links)" in warned("./loop")
    assert 'hyperion-train is not a file in the working directory (torchrun does not look on PATH); give a Python ' \
           'file (-- "$(command -v hyperion-train)" ...)' in warned("hyperion-train", "resnet", path=True)
    # not on PATH either: `"$(command -v hyperion-train)"` pasted is an empty word
    assert warned("hyperion-train", "resnet").endswith(
        "hyperion-train is not a file in the working directory, nor a command on PATH; give a Python file "
        "(-- SCRIPT.py ...)\n")
    assert "./run.sh is a script for another interpreter" in warned("./run.sh")
    assert "pipe is not a regular file" in warned("pipe")
    assert warned("train.py", "--lr", "1") == "" and warned("./shim") == ""
    assert "nosuch.py is not a file in the working directory" in warned("nosuch.py")     # it said nothing
    assert warned("python", "train.py", gpus="1") == ""
    assert not (tmp_path / "t.log").exists()


def test_the_torchrun_warning_looks_at_the_first_word_a_task_runs_and_advises_only_what_starts(tmp_path, cli_env):
    """`-- exp/JOB/train.sh` of an array: each task runs exp/1/train.sh, ..., yet the warning said
    `exp/JOB/train.sh is not a file in the working directory`, of a Python script that starts. And
    `-- bash run.sh` was told to give `-- "$(command -v bash)" ...`, which torchrun does not start
    either (bash is a compiled program): that hint is for a Python console script only."""
    for value in (1, 2):
        (tmp_path / "exp" / str(value)).mkdir(parents=True)
        (tmp_path / "exp" / str(value) / "train").write_text("#!/usr/bin/env python3\nprint('hi')\n")
        (tmp_path / "exp" / str(value) / "run").write_text("#!/bin/bash\necho hi\n")

    def warned(*command: str) -> str:
        run = submit(tmp_path, cli_env, "--dry-run", "--num-gpus", "2", "--array", "JOB=1:2",
                     "--output-file", "t.JOB.log", "--", *command, timeout=20)
        assert run.returncode == 0 and "torchrun" in run.stdout, (run.stdout, run.stderr)
        return run.stderr

    assert warned("exp/JOB/train", "--lr", "1") == ""
    assert "exp/JOB/run is a script for another interpreter" in warned("exp/JOB/run")
    bash = warned("bash", "run.sh")
    assert "command -v bash" not in bash and "on PATH is a compiled program, not a Python script; " \
           "give a Python file (-- SCRIPT.py ...)" in bash, bash


def test_the_torchrun_warning_of_a_script_in_the_working_directory_advises_no_path_lookup(tmp_path, cli_env):
    """`-- run.sh` (a bash script in the working directory, not on PATH) was told to give
    `-- "$(command -v run.sh)" ...`: pasted, `command -v run.sh` prints nothing and torchrun is handed
    an empty word. torchrun opens run.sh where it is; the advice is to name a Python file."""
    (tmp_path / "run.sh").write_text("#!/bin/bash\necho hi\n")
    os.mkfifo(tmp_path / "pipe")

    def warned(*command: str) -> str:
        run = submit(tmp_path, cli_env, "--dry-run", "--num-gpus", "2", "--output-file", "t.log", "--", *command,
                     timeout=20)
        assert run.returncode == 0 and "torchrun" in run.stdout, (run.stdout, run.stderr)
        return run.stderr

    for name, why in (("run.sh", "is a script for another interpreter"), ("pipe", "is not a regular file")):
        said = warned(name, "--lr", "1")
        pasted = subprocess.run(["bash", "-c", f"command -v {name}"], cwd=tmp_path, env=cli_env,
                                capture_output=True, text=True).stdout
        assert pasted == "", pasted       # what the old advice's "$(command -v ...)" gave
        assert f"{name} {why}" in said and "command -v" not in said, said
        assert said.rstrip().endswith("give a Python file (-- SCRIPT.py ...)"), said


def test_one_gpu_runs_the_command_directly(tmp_path, cli_env):
    result = submit(tmp_path, cli_env, "--num-gpus", "1", "--output-file", "t.log", "--",
                    PY, "-c", "import sys; print(sys.argv)")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "t.log").read_text().splitlines()[0].startswith(f"# Running: {PY} -c")


def test_env_cuda_visible_devices_is_the_users_choice_locally(tmp_path, cli_env):
    """Slurm refuses --env CUDA_VISIBLE_DEVICES (it sets it for its allocation); on the user's own
    machine there is no allocation, so the value given reaches the task."""
    result = submit(tmp_path, {**cli_env, "CUDA_VISIBLE_DEVICES": "3"}, "--num-gpus", "1",
                    "--env", "CUDA_VISIBLE_DEVICES=0", "--output-file", "t.log", "--",
                    "sh", "-c", 'echo "cuda=$CUDA_VISIBLE_DEVICES"')
    assert result.returncode == 0, result.stderr
    assert body(tmp_path / "t.log") == ["cuda=0"]


def test_dry_run_prints_commands_and_touches_nothing(tmp_path, cli_env):
    result = submit(tmp_path, cli_env, "--dry-run", "--num-gpus", "4", "--array", "JOB=1:2",
                    "--output-file", "log/t.JOB.log", "--", "train", "--part", "JOB")
    assert result.returncode == 0, result.stderr
    assert "JOB=1 torchrun --standalone --nnodes=1 --nproc-per-node=4 train --part 1" in result.stdout
    assert "JOB=2 torchrun --standalone --nnodes=1 --nproc-per-node=4 train --part 2" in result.stdout
    assert str(tmp_path / "log" / "t.2.log") in result.stdout
    assert list(tmp_path.iterdir()) == []


def signal_first_of_two_tasks(tmp_path, cli_env, signum: int) -> tuple[int, str]:
    """Run a 2-task local array, send `signum` while task 1 runs; (exit status, stderr)."""
    marker = tmp_path / "started"
    script = f"import time; open({str(marker)!r}, 'w').close(); time.sleep(60)"
    proc = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                             "--output-file", "t.JOB.log", "--", PY, "-c", script],
                            cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=20)
    return proc.returncode, err


@pytest.mark.parametrize("signum, status, message", [
    (signal.SIGINT, 130, "hyperion-submit: interrupted"),
    (signal.SIGTERM, 143, "hyperion-submit: terminated"),
    (signal.SIGHUP, 129, "hyperion-submit: hangup"),           # the terminal closed
    (signal.SIGQUIT, 131, "hyperion-submit: quit"),            # Ctrl-\\
], ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"])
def test_signal_stops_the_running_task_records_it_and_runs_no_more(tmp_path, cli_env, signum, status,
                                                                   message):
    returncode, err = signal_first_of_two_tasks(tmp_path, cli_env, signum)
    assert returncode == status
    assert message in err and "Traceback" not in err
    assert parse_ended((tmp_path / "t.1.log").read_text().splitlines()[-1])[0] == status  # child waited for
    assert not (tmp_path / "t.2.log").exists()
    # a hangup is recorded as Slurm records a task a signal stopped: the signal, no exit code (see status)
    recorded = None if signum == signal.SIGHUP else status
    assert task_states(tmp_path / "q" / "t.JOB.submit.json", cli_env) == {
        1: ("FAILED", recorded), 2: ("NOT_RUN", None)}


def _trapping_run(tmp_path: Path, cli_env: dict, trap: str) -> tuple[subprocess.Popen, int]:
    """A local run of a bash task that sets `trap` and loops; (the runner, the task's process group)."""
    marker = tmp_path / "started"
    script = f"{trap}; echo $$ > {shlex.quote(str(marker))}; while :; do sleep 0.1; done"
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file", "t.log",
                               "--", "bash", "-c", script], cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    if not _until(lambda: marker.exists() and marker.read_text().strip()):
        runner.kill()
        raise AssertionError("the task never started")
    return runner, int(marker.read_text())


def test_a_second_interrupt_kills_a_task_that_ignores_the_first(tmp_path, cli_env):
    """Ctrl-C twice: the task ignores SIGINT, and the runner's grace wait ends at the second one with SIGKILL
    for the task's group, rather than leaving it running while its record says FAILED."""
    runner, group = _trapping_run(tmp_path, cli_env, "trap '' INT")
    try:
        runner.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert runner.poll() is None    # waiting for the task to end
        runner.send_signal(signal.SIGINT)
        _, err = runner.communicate(timeout=5)
        assert runner.returncode == 130 and "Traceback" not in err
        assert _until(lambda: not _group_lives(group), 2), "the task runs on after its runner ended"
    finally:
        kill_groups(group)
        runner.kill()
        runner.wait()
    # what it died of, SIGKILL (as the console records it), while hyperion-submit exits 130 for the Ctrl-C
    assert task_states(tmp_path / "q" / "t.submit.json", cli_env) == {None: ("FAILED", 137)}
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "q" / "t.submit.json"), env=cli_env).stdout
    assert "FAILED (killed (SIGKILL) at a second Ctrl-C)" in shown, shown     # why: 137 read as out of memory


def test_a_second_hangup_does_not_cut_the_tasks_grace_short(tmp_path, cli_env):
    """A closing terminal sends SIGHUP twice (bash passes it on, then the kernel): the task still gets its
    10 s to clean up, as the README promises; only a second Ctrl-C kills at once."""
    runner, group = _trapping_run(tmp_path, cli_env, "trap 'echo got-hup; sleep 1; echo cleanup-done; exit 0' HUP")
    with reaped(runner, group):
        runner.send_signal(signal.SIGHUP)
        time.sleep(0.05)
        runner.send_signal(signal.SIGHUP)
        runner.communicate(timeout=20)
    assert runner.returncode == 129
    assert "got-hup\ncleanup-done\n" in (tmp_path / "t.log").read_text()


def test_a_terminal_closed_on_a_stopped_run_is_recorded_as_its_hangup(tmp_path, cli_env):
    """Ctrl-Z, then the terminal window closed: bash sends its stopped job SIGHUP, SIGTERM and SIGCONT
    at once. The SIGTERM replaced the hangup while the task was being stopped: 'terminated', exit 143,
    the task FAILED with exit 143, as if someone had killed it. It is the hangup the README says."""
    runner, task, _ticks, go = _ticking_run(tmp_path, cli_env, process_group=0)
    try:
        os.kill(runner.pid, signal.SIGSTOP)          # what Ctrl-Z leaves: the runner stopped
        assert _until(lambda: _state(runner.pid) == "T")
        for signum in (signal.SIGHUP, signal.SIGTERM, signal.SIGCONT):   # bash's hangup of a stopped job
            os.kill(runner.pid, signum)
        _, err = runner.communicate(timeout=30)
    finally:
        go.touch()
        kill_groups(task)
        if runner.poll() is None:
            runner.kill()
        runner.wait()
    assert runner.returncode == 129 and "hyperion-submit: hangup" in err, err
    assert task_states(tmp_path / "q" / "t.submit.json", cli_env) == {None: ("FAILED", None)}
    shown = run_cli("hyperion-jobs", "history", str(tmp_path / "q" / "t.submit.json"), env=cli_env)
    assert "FAILED (SIGHUP) 1" in shown.stdout


def test_a_hangup_whose_terminal_is_gone_still_exits_129(tmp_path, cli_env):
    """The terminal window closed: the 'hangup' line cannot be written there any more (EIO), and
    that error ended hyperion-submit with 1, an ordinary failure, where the README promises 129."""
    import pty

    master, slave = pty.openpty()
    marker = tmp_path / "started"
    script = f"import time; open({str(marker)!r}, 'w').close(); time.sleep(60)"
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file", "t.log",
                               "--", PY, "-c", script], cwd=tmp_path, env=cli_env, stdin=slave, stdout=slave,
                              stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        assert _until(marker.exists), "the task never started"
        os.close(master)                    # the window closed: writes to the terminal fail from now on
        runner.send_signal(signal.SIGHUP)   # and the kernel hangs up on its session
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.wait()
    assert runner.returncode == 129
    assert task_states(tmp_path / "q" / "t.submit.json", cli_env) == {None: ("FAILED", None)}


def _a_run_stopped_with_ctrl_c(tmp_path: Path, cli_env: dict, script: str) -> tuple[subprocess.Popen, int]:
    """hyperion-submit local (SIGINT at its default, as from a terminal) of a 2-task sh array running `script`
    after it wrote its process group to `pg`; Ctrl-C once that is there: (the runner, the task's group)."""
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                               "--output-file", "t.JOB.log", "--", "sh", "-c", f"echo $$ > pg; {script}"],
                              cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = tmp_path / "pg"
    if not _until(lambda: marker.exists() and marker.read_text().strip()):
        runner.kill()
        raise AssertionError("the task never started")
    time.sleep(0.3)                        # its background job started
    runner.send_signal(signal.SIGINT)
    return runner, int(marker.read_text())


def test_ctrl_c_ends_the_tasks_background_jobs_before_it_records_the_task(tmp_path, cli_env):
    """A recipe's `cmd &` ignores SIGINT (a POSIX shell's background job): Ctrl-C ended the script,
    hyperion-submit said the task ended (FAILED 130) and `sleep 30` ran on, orphaned, writing into
    the log after its footer. Now the runner waits for the whole group (10 s, or a second Ctrl-C:
    SIGKILL), and returns only once nothing of the task runs."""
    runner, group = _a_run_stopped_with_ctrl_c(tmp_path, cli_env, "sleep 30 & wait")
    with reaped(runner, group):
        time.sleep(1.5)
        assert runner.poll() is None, "hyperion-submit ended while its task's `sleep 30 &` runs on"
        assert group_members(group), "the background job is gone already: nothing was tested"
        runner.send_signal(signal.SIGINT)   # Ctrl-C again: SIGKILL now
        _, err = runner.communicate(timeout=10)
        assert runner.returncode == 130 and "Traceback" not in err, err
        # the wait was said (the terminal showed `^C` alone for 10 s), and how to cut it short
        assert err.startswith("hyperion-submit: the task's processes have not ended yet: SIGKILL in "), err
        assert " s, or at once at Ctrl-C again\n" in err, err
        assert group_members(group) == [], "the task's background job runs on after hyperion-submit returned"
    assert parse_ended((tmp_path / "t.1.log").read_text().splitlines()[-1])[0] == 130   # sh, killed by SIGINT
    assert task_states(tmp_path / "q" / "t.JOB.submit.json", cli_env) == {1: ("FAILED", 130), 2: ("NOT_RUN", None)}
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "q" / "t.JOB.submit.json"), env=cli_env).stdout
    assert "killed" not in shown, shown           # its 130 is its own: only its leftovers were killed


def test_ctrl_c_gives_the_tasks_background_jobs_their_grace_to_clean_up(tmp_path, cli_env):
    """A background worker that saves its state on SIGINT (1 s) was cut off: the runner returned when
    the shell ended. Now it finishes, and the run returns after it, without waiting the whole 10 s."""
    done = tmp_path / "saved"
    worker = (f"import signal, sys, time\ndef save(*_):\n    time.sleep(1); open({str(done)!r}, 'w').close(); "
              "sys.exit(0)\nsignal.signal(signal.SIGINT, save)\ntime.sleep(30)\n")
    runner, group = _a_run_stopped_with_ctrl_c(tmp_path, cli_env, f"{shlex.quote(PY)} -c {shlex.quote(worker)} & wait")
    with reaped(runner, group):
        _, err = runner.communicate(timeout=10)
        assert group_members(group) == [], "the task's background worker runs on after hyperion-submit returned"
    assert runner.returncode == 130 and done.exists(), err


def test_what_a_task_leaves_running_is_killed_before_its_end_is_recorded_and_the_next_task_starts(
        tmp_path, cli_env):
    """The task's shell ends, its `( ... ) &` runs on: the task was recorded COMPLETED and the next one
    started beside it, the late output landing after the log's footer. As slurmstepd at a step's
    end, what is left of the task's group is killed (SIGKILL) before its end is written."""
    script = ("for f in bg.*; do [ -f \"$f\" ] && echo \"$f: $(cut -d' ' -f3 /proc/$(cat $f)/stat 2>/dev/null)\"; "
              "done; (sleep 3; echo late JOB) & echo $! > bg.JOB; echo leader done")
    started = time.monotonic()
    result = submit(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "t.JOB.log", "--", "sh", "-c", script)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 3, "the run waited for the background job instead of ending it"
    # task 2 saw task 1's leftover gone (no process, or a zombie nobody reaped yet)
    assert re.search(r"^bg\.1: Z?$", (tmp_path / "t.2.log").read_text(), re.M), (tmp_path / "t.2.log").read_text()
    time.sleep(3.5)                        # the leftovers' `echo late` would have run by now
    for value in (1, 2):
        lines = (tmp_path / f"t.{value}.log").read_text().splitlines()
        assert lines[-2] == "leader done" and parse_ended(lines[-1])[0] == 0, lines   # the footer is the last line
    assert task_states(tmp_path / "q" / "t.JOB.submit.json", cli_env) == {1: ("COMPLETED", 0), 2: ("COMPLETED", 0)}


@pytest.mark.parametrize("signum, trap, recorded", [
    (signal.SIGINT, "trap 'echo saving; exit 3' INT", ("FAILED", 3)),
    (signal.SIGTERM, "trap 'echo saving; exit 3' TERM", ("FAILED", 3)),
    (signal.SIGINT, "trap 'echo saving; exit 0' INT", ("COMPLETED", 0)),
], ids=["ctrl-c-exit-3", "sigterm-exit-3", "ctrl-c-exit-0"])
def test_a_task_that_handles_the_stop_is_recorded_with_the_code_it_ended_with(tmp_path, cli_env, signum, trap,
                                                                              recorded):
    """A task that traps Ctrl-C, saves and exits 3 was recorded 130 by hyperion-submit (footer
    `# Ended (code 130)`) and 3 by the console. Both now record what it returned (130 or 143 only
    when the signal killed it); hyperion-submit itself still exits 128 + N."""
    runner, group = _trapping_run(tmp_path, cli_env, trap)
    with reaped(runner, group):
        runner.send_signal(signum)
        _, err = runner.communicate(timeout=10)
    assert runner.returncode == 128 + signum and "Traceback" not in err, err
    lines = (tmp_path / "t.log").read_text().splitlines()
    assert lines[-2] == "saving" and parse_ended(lines[-1])[0] == recorded[1], lines
    assert task_states(tmp_path / "q" / "t.submit.json", cli_env) == {None: recorded}


def _group_lives(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _state(pid: int) -> str:
    """The process's state letter from /proc (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _until(check, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()


def _ticking_run(tmp_path: Path, cli_env: dict, **popen) -> tuple[subprocess.Popen, int, Path, Path]:
    """A local run whose task appends to `ticks` every 20 ms until `go` exists; (runner, task pid, ticks, go)."""
    ticks, go = tmp_path / "ticks", tmp_path / "go"
    script = (f"import os, time, pathlib\nt, g = pathlib.Path({str(ticks)!r}), pathlib.Path({str(go)!r})\n"
              "(t.parent / 'pid').write_text(str(os.getpid()))\n"
              "while not g.exists():\n    with t.open('a') as f: f.write('.')\n    time.sleep(0.02)\n")
    runner = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file", "t.log",
                               "--", PY, "-c", script], cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, **popen)
    assert _until(lambda: ticks.exists()), "the task never started"
    return runner, int((tmp_path / "pid").read_text()), ticks, go


def test_ctrl_z_stops_the_task_with_the_runner_and_fg_resumes_both(tmp_path, cli_env):
    """Ctrl-Z reaches the runner only (the terminal's foreground group, here the runner's own); the task,
    in its own group, is stopped with it rather than running on unwatched, and fg (SIGCONT) resumes both."""
    runner, task, ticks, go = _ticking_run(tmp_path, cli_env, process_group=0)
    try:
        os.kill(runner.pid, signal.SIGTSTP)
        assert _until(lambda: _state(runner.pid) == "T"), "the runner did not stop"
        assert _until(lambda: _state(task) == "T"), "the task runs on while its runner is stopped"
        size = ticks.stat().st_size
        time.sleep(0.3)
        assert ticks.stat().st_size == size
        os.kill(runner.pid, signal.SIGCONT)
        assert _until(lambda: ticks.stat().st_size > size), "fg did not resume the task"
        assert _state(runner.pid) != "T"
        go.touch()
        _, err = runner.communicate(timeout=30)
    finally:
        go.touch()
        if runner.poll() is None:
            os.kill(runner.pid, signal.SIGCONT)
        runner.wait(timeout=30)
    assert runner.returncode == 0, err
    assert task_states(tmp_path / "q" / "t.submit.json", cli_env) == {None: ("COMPLETED", 0)}


def test_ctrl_z_without_job_control_leaves_the_task_running(tmp_path, cli_env):
    """A runner whose process group has no job control (a session of its own, as under setsid) is not
    stopped by SIGTSTP: its task must not be left stopped either, or the run would never end."""
    runner, task, ticks, go = _ticking_run(tmp_path, cli_env, start_new_session=True)
    try:
        os.kill(runner.pid, signal.SIGTSTP)
        time.sleep(0.3)
        size = ticks.stat().st_size
        assert _until(lambda: ticks.stat().st_size > size), "the task was left stopped"
        assert _state(runner.pid) != "T" and _state(task) != "T"
        go.touch()
        _, err = runner.communicate(timeout=30)
    finally:
        go.touch()
        runner.wait(timeout=30)
    assert runner.returncode == 0, err


@pytest.mark.skipif(not shutil.which("script"), reason="needs script(1) for a terminal")
def test_a_task_that_reads_the_terminal_fails_with_the_reason_instead_of_hanging(tmp_path, cli_env):
    """Tasks run in their own process group, so a prompt on /dev/tty stops them (SIGTTIN): the runner ends
    the task and says why in its log, as a batch job without a terminal would fail, rather than wait for ever."""
    command = shlex.join(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file", "t.log", "--",
                          "bash", "-c", "echo asking; read x < /dev/tty; echo got $x"])
    done = subprocess.run(["script", "-qec", command, "/dev/null"], cwd=tmp_path, env=cli_env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    log = (tmp_path / "t.log").read_text()
    assert "asking\nhyperion-submit: the task was stopped for using the terminal" in log
    assert parse_ended(log.splitlines()[-1])[0] == 137 and "\ngot" not in log


# --- files follow the umask; a full disk is FAILED with the reason and the log (issue 13) -----------

def _under_umask(umask: int, argv: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f'umask {umask:03o}; exec "$@"', "bash", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600)])
def test_local_records_results_and_logs_follow_the_umask(tmp_path, cli_env, umask, mode):
    old_log = tmp_path / "log" / "t.log"
    old_log.parent.mkdir()
    old_log.write_text("an earlier run's log, left world-readable\n")
    old_log.chmod(0o666)
    result = _under_umask(umask, ["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--env", "TOKEN=s3cret",
                                  "--output-file", "log/t.log", "--", "true"], tmp_path, cli_env)
    assert result.returncode == 0, result.stderr
    q = tmp_path / "log" / "q"
    written = [q / "t.submit.json", q / "t.attempts.jsonl", old_log]
    assert "s3cret" in written[0].read_text()
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in written} == {p.name: oct(mode) for p in written}


def test_a_full_disk_while_the_log_is_written_is_failed_with_the_reason_and_the_log(small_disk, cli_env):
    filler = "import sys\nfor _ in range(100000): print('x' * 100)\n"
    result = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file", "log/t.log",
                     "--", PY, "-c", filler, cwd=small_disk, env=cli_env, timeout=120)
    log = small_disk / "log" / "t.log"
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"hyperion-submit: cannot write the log {log}: No space left on device"]
    status = run_cli("hyperion-jobs", "status", str(small_disk / "log" / "q" / "t.submit.json"), "--json",
                     env=cli_env)
    task = json.loads(status.stdout)["tasks"][0]
    assert task["state"] == "FAILED" and task["log"] == str(log)
    assert task["reason"] == f"cannot write the log {log}: No space left on device"


@pytest.mark.parametrize("how, what", [
    ("rm -f log/t.1.log", "is missing (removed while the task ran)"),
    ("mv log/t.1.log log/moved.log; echo new > log/t.1.log", "was replaced by another file while the task ran"),
], ids=["removed", "replaced"])
def test_a_log_the_task_removes_or_replaces_fails_the_run_naming_it(tmp_path, cli_env, how, what):
    """The contract: a missing log makes the run exit non-zero naming it. Locally it said "ok" and 0.
    A replaced log is there when the user looks: it was called "missing" all the same."""
    result = submit(tmp_path, cli_env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log", "--",
                    "bash", "-c", f'[ JOB = 1 ] && {{ {how}; }}; exit 0')
    assert result.returncode == 1
    log = tmp_path / "log" / "t.1.log"
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    # the run stops there, and says what it never ran and how to run it (task 1 COMPLETED: not again)
    assert result.stderr.splitlines()[-2:] == [
        f"hyperion-submit: JOB=1 exited 0 but its log {log} {what}",
        f"hyperion-submit: JOB=2 not run (a local array stops at its first failure); "
        f"rerun JOB=2 with: hyperion-jobs retry {record}"]
    status = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / "t.JOB.submit.json"), "--json",
                     env=cli_env)
    assert json.loads(status.stdout)["tasks"][0]["reason"] == f"its log {log} {what}"
    assert not (tmp_path / "log" / "t.2.log").exists()       # the run stops there, as at a failure
    assert task_states(tmp_path / "log" / "q" / "t.JOB.submit.json", cli_env) == {
        1: ("COMPLETED", 0), 2: ("NOT_RUN", None)}


def test_a_log_folder_that_cannot_be_made_mid_run_is_a_failed_task_with_the_reason_not_lost(tmp_path, cli_env):
    """Logs in a folder per value (out/JOB/t.log); while task 1 ran, a file took the place of out/2.
    The run ended with `error: cannot write .../out/2: File exists` and task 2 a start without an
    end: status called it LOST (its runner killed), a retry's reason unknown. It is FAILED with
    the reason, as a log that cannot be written is, and the line names the log."""
    result = submit(tmp_path, cli_env, "--array", "JOB=1:3", "--output-file", "out/JOB/t.log", "--",
                    "bash", "-c", "[ JOB = 1 ] && touch out/2; exit 0")
    log = tmp_path / "out" / "2" / "t.log"
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"hyperion-submit: cannot write the log {log}: Not a directory" in result.stderr.splitlines()
    status = run_cli("hyperion-jobs", "status", str(tmp_path / "out" / "JOB" / "q" / "t.submit.json"), "--json",
                     env=cli_env)
    tasks = {t["value"]: t for t in json.loads(status.stdout)["tasks"]}
    assert [(v, t["state"]) for v, t in tasks.items()] == [(1, "COMPLETED"), (2, "FAILED"), (3, "NOT_RUN")]
    assert tasks[2]["reason"] == f"cannot write the log {log}: Not a directory"
    record = tmp_path / "out" / "JOB" / "q" / "t.submit.json"
    assert result.stderr.splitlines()[-1] == (f"hyperion-submit: JOB=3 not run (a local array stops at its "
                                              f"first failure); rerun JOB=2-3 with: hyperion-jobs retry {record}")
    (tmp_path / "out" / "2").unlink()
    rerun = run_cli(*_printed_retry(result.stderr), "--yes", cwd=tmp_path, env=cli_env)
    assert rerun.returncode == 0, rerun.stderr
    assert task_states(record, cli_env) == {v: ("COMPLETED", 0) for v in (1, 2, 3)}


def test_a_closed_stdout_stops_the_lines_not_the_run(tmp_path, cli_env):
    """`hyperion-submit local ... | head -1`: the second task's line hit the closed pipe and the rest of
    the array was never run; the lines stop, the tasks go on, and the exit status is theirs."""
    result = subprocess.run(["bash", "-c", 'hyperion-submit "$@" | true; exit ${PIPESTATUS[0]}', "-", "local",
                             "--cfg", str(TEST_SITE), "--array", "JOB=1:4", "--output-file", "log/t.JOB.log",
                             "--", "true"], cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert task_states(tmp_path / "log" / "q" / "t.JOB.submit.json", cli_env) == {
        value: ("COMPLETED", 0) for value in (1, 2, 3, 4)}


@pytest.mark.parametrize("free_pages", [0, 1, 2], ids=["none", "lock-only", "lock-and-record"])
def test_a_disk_already_full_is_one_line_naming_the_file_that_could_not_be_written(small_disk, cli_env,
                                                                                     free_pages):
    """A submission into a folder whose disk was already full said only `hyperion-submit: error:
    cannot write: No space left on device`: which file, on which disk? Now the line names it."""
    (small_disk / "log" / "q").mkdir(parents=True)
    fill = small_disk / "fill"
    fd = os.open(fill, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    os.ftruncate(fd, max(0, os.fstat(fd).st_size - free_pages * 4096))   # whole pages back: lock, record
    os.close(fd)
    result = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                     "--output-file", "log/t.JOB.log", "--", "true", cwd=small_disk, env=cli_env, timeout=60)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0], result.stderr
    assert re.fullmatch(rf"hyperion-submit: (error: )?cannot write (the log )?{small_disk}/log/\S+: "
                        r"No space left on device", lines[0]), lines[0]


def test_a_retry_onto_a_full_disk_is_one_line_naming_the_file_not_a_traceback(small_disk, cli_env):
    """`hyperion-jobs retry` of a local run whose disk has filled up since printed a Python traceback."""
    first = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                    "--output-file", "log/t.JOB.log", "--", "false", cwd=small_disk, env=cli_env, timeout=60)
    assert first.returncode == 1
    fd = os.open(small_disk / "fill", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        os.close(fd)
    retry = run_cli("hyperion-jobs", "retry", str(small_disk / "log" / "q"), "--yes", cwd=small_disk, env=cli_env,
                    timeout=60)
    assert retry.returncode == 1
    assert "Traceback" not in retry.stderr, retry.stderr
    last = retry.stderr.splitlines()[-1]
    assert re.fullmatch(rf"hyperion-jobs: cannot write {small_disk}/log/q/\S+: No space left on device", last), last


def _printed_retry(stderr: str) -> list[str]:
    """The `hyperion-jobs retry RECORD` a failed run's last line names, as argv."""
    (line,) = [line for line in stderr.splitlines() if "hyperion-jobs retry" in line]
    return shlex.split(line.split(" with: ", 1)[1])


def test_a_failed_array_names_what_it_did_not_run_and_the_retry_that_runs_it(tmp_path, cli_env):
    """The user should not have to find the record: the last line is the command, pasted as is."""
    fixed = tmp_path / "fixed"
    script = (f"import os, sys; sys.exit(3 if os.environ['J' 'OB'] == '3' and not os.path.exists({str(fixed)!r}) "
              "else 0)")
    result = submit(tmp_path, cli_env, "--array", "JOB=1:5", "--output-file", "log/t.JOB.log", "--", PY, "-c", script)
    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    assert last == (f"hyperion-submit: JOB=4-5 not run (a local array stops at its first failure); "
                    f"rerun JOB=3-5 with: hyperion-jobs retry {record}")
    fixed.touch()
    rerun = run_cli(*_printed_retry(result.stderr), "--yes", cwd=tmp_path, env=cli_env)
    assert rerun.returncode == 0, rerun.stderr
    assert "hyperion-jobs retry" not in rerun.stderr
    assert task_states(record, cli_env) == {v: ("COMPLETED", 0) for v in range(1, 6)}


def test_a_failed_plain_job_names_its_retry_and_a_piped_site_file_names_none(tmp_path, cli_env):
    result = submit(tmp_path, cli_env, "--output-file", "log/one.log", "--", "false")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"hyperion-submit: rerun it with: hyperion-jobs retry {tmp_path / 'log' / 'q' / 'one.submit.json'}")
    piped = run_cli("bash", "-c", f"hyperion-submit local --cfg <(cat {shlex.quote(str(TEST_SITE))}) "
                    "--output-file log/two.log -- false", cwd=tmp_path, env=cli_env)
    assert piped.returncode == 1 and "failed (exit code 1)" in piped.stderr
    assert "hyperion-jobs retry" not in piped.stderr   # its record names /dev/fd/N: a retry is refused


@pytest.mark.parametrize("signum, said", [(signal.SIGINT, "interrupted"), (signal.SIGHUP, "hangup")],
                         ids=["Ctrl-C", "SIGHUP"])
def test_a_stopped_local_array_names_the_retry_of_the_stopped_task_and_the_ones_never_reached(
        tmp_path, cli_env, signum, said):
    """Ctrl-C of a local array printed `interrupted` and nothing else, where a failed run names the
    values it never reached and the retry that runs them: the user had to find the record and which
    values were left. The stopped task and the unreached ones are named, and the command reruns them."""
    started, fixed = tmp_path / "started", tmp_path / "fixed"
    script = (f"import os, time; v = os.environ['J' 'OB']; "
              f"v == '2' and not os.path.exists({str(fixed)!r}) and (open({str(started)!r}, 'w').close(), "
              "time.sleep(60))")
    proc = subprocess.Popen(["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:4",
                             "--output-file", "log/t.JOB.log", "--", PY, "-c", script],
                            cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert _until(started.exists, 20), "task 2 never started"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum, err
    record = tmp_path / "log" / "q" / "t.JOB.submit.json"
    assert err.splitlines()[-2:] == [
        f"hyperion-submit: JOB=3-4 not run (the run was stopped); rerun JOB=2-4 with: hyperion-jobs retry {record}",
        f"hyperion-submit: {said}"], err
    fixed.touch()
    rerun = run_cli(*_printed_retry(err), "--yes", cwd=tmp_path, env=cli_env)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stderr.count("retrying 3 task(s)") == 1, rerun.stderr
    assert task_states(record, cli_env) == {v: ("COMPLETED", 0) for v in range(1, 5)}


# A Ctrl-C lands between two statements; these runners raise it at the two places that once lost it.
_CTRL_C_AS_IT_STARTS = """
import sys
from backends.submit.local import run
real, calls = run.process_start, []
def interrupted(pid):
    calls.append(pid)
    start = real(pid)
    if len(calls) == 1:
        raise KeyboardInterrupt
    return start
run.process_start = interrupted
from backends.cli.submit import main
sys.argv = ["hyperion-submit", *sys.argv[1:]]
sys.exit(main())
"""
_CTRL_C_AS_IT_IS_REAPED = """
import os, sys
real, fired = os.waitpid, []
def waitpid(pid, options):
    got = real(pid, options)
    if not fired and got[0] == pid and os.WIFEXITED(got[1]):
        fired.append(got)
        raise KeyboardInterrupt
    return got
os.waitpid = waitpid
from backends.cli.submit import main
sys.argv = ["hyperion-submit", *sys.argv[1:]]
sys.exit(main())
"""


def _processes_with(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(entry.name)
        except OSError:
            continue
    return found


def test_a_ctrl_c_right_as_a_task_starts_stops_its_group_too(tmp_path, cli_env):
    """A Ctrl-C handled between the task's start and the runner's watch of it left the task
    running, unrecorded, writing `late 1` after a footer that said it ended with 130."""
    marker = f"{time.time_ns() % 10**6}.25"      # a sleep nobody else runs
    done = subprocess.run([PY, "-c", _CTRL_C_AS_IT_STARTS, "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                           "--output-file", "t.JOB.log", "--", "sh", "-c", f"sleep {marker}; echo late JOB"],
                          cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=60)
    try:
        assert done.returncode == 130, done.stderr
        assert _processes_with(f"sleep {marker}") == [], "the task runs on after hyperion-submit returned"
        shown = json.loads(run_cli("hyperion-jobs", "status", str(tmp_path / "q" / "t.JOB.submit.json"), "--json",
                                   env=cli_env).stdout)
        assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "FAILED"), (2, "NOT_RUN")]
    finally:
        for pid in _processes_with(f"sleep {marker}"):
            os.kill(int(pid), signal.SIGKILL)


def test_a_ctrl_c_right_as_a_failed_task_is_reaped_does_not_record_it_completed(tmp_path, cli_env):
    """A Ctrl-C handled after the runner reaped a task that exited 1 but before it kept the status:
    the task was recorded COMPLETED 0 (`JOB=1: ok`) and left out of the rerun line."""
    done = subprocess.run([PY, "-c", _CTRL_C_AS_IT_IS_REAPED, "local", "--cfg", str(TEST_SITE), "--array", "JOB=1:2",
                           "--output-file", "t.JOB.log", "--", "sh", "-c", "echo failing; exit 1"],
                          cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert "JOB=1: ok" not in done.stdout + done.stderr
    shown = json.loads(run_cli("hyperion-jobs", "status", str(tmp_path / "q" / "t.JOB.submit.json"), "--json",
                               env=cli_env).stdout)
    assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "FAILED"), (2, "NOT_RUN")]
    assert "rerun JOB=1-2 with: " in done.stderr, done.stderr


def test_a_failed_task_is_recorded_failed_under_a_parent_that_ignores_sigchld(tmp_path, cli_env):
    """Started by a program that ignores SIGCHLD (inherited across exec), every task read `ok`."""
    ignoring = ("import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
                "os.execvp(sys.argv[1], sys.argv[1:])")
    done = subprocess.run([PY, "-c", ignoring, "hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file",
                           "t.log", "--", "sh", "-c", "exit 3"], cwd=tmp_path, env=cli_env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "task: FAILED with exit code 3" in done.stdout, (done.stdout, done.stderr)


def _tool(folder: Path, name: str, script: str) -> Path:
    """An executable shell script `folder/name` (the folder made)."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(0o755)
    return tool


def test_a_program_replaced_or_removed_mid_run_is_found_as_a_path_search_finds_it(tmp_path, cli_env):
    """The run looks a bare name up on PATH once (not in every task's child); a later task still
    runs what a PATH search finds then: task 1 puts a new version in place (mv), whose task 2
    removes it, and task 3 runs the copy further along PATH, as a shell whose hashed program is
    gone searches again."""
    first, later = tmp_path / "bin1", tmp_path / "bin2"
    new = _tool(tmp_path / "new", "tool", 'echo "new $JOB"; rm "$0"')
    _tool(first, "tool", f'echo "old $JOB"; mv {shlex.quote(str(new))} "$0"')
    _tool(later, "tool", 'echo "further along PATH $JOB"')
    env = {**cli_env, "PATH": f"{first}{os.pathsep}{later}{os.pathsep}{cli_env['PATH']}"}
    result = submit(tmp_path, env, "--array", "JOB=1:3", "--output-file", "log/t.JOB.log", "--", "tool")
    assert result.returncode == 0, result.stderr
    assert [body(tmp_path / "log" / f"t.{v}.log") for v in (1, 2, 3)] == [
        ["old 1"], ["new 2"], ["further along PATH 3"]]


def test_a_program_is_looked_up_in_the_tasks_own_path_per_name_with_argv0_as_typed(tmp_path, cli_env):
    """`--env PATH=...` is the PATH the task's program is found in (not the runner's); a NAME in the
    program's name finds each task's own program; the program sees argv[0] as typed (`sh`, not
    /usr/bin/sh), as `ps` shows it."""
    mine, runners = tmp_path / "mine", tmp_path / "runners"
    for value in (1, 2):
        _tool(mine, f"tool_{value}", f'echo "mine {value} $JOB"')
        _tool(runners, f"tool_{value}", 'echo "the runner\'s PATH"')
    env = {**cli_env, "PATH": f"{runners}{os.pathsep}{cli_env['PATH']}"}
    result = submit(tmp_path, env, "--array", "JOB=1:2", "--output-file", "log/t.JOB.log",
                    "--env", f"PATH={mine}{os.pathsep}{cli_env['PATH']}", "--", "tool_JOB")
    assert result.returncode == 0, result.stderr
    assert [body(tmp_path / "log" / f"t.{v}.log") for v in (1, 2)] == [["mine 1 1"], ["mine 2 2"]]
    shown = submit(tmp_path, cli_env, "--output-file", "sh.log", "--",
                   "sh", "-c", "tr '\\000' ' ' < /proc/$$/cmdline; echo")
    assert shown.returncode == 0, shown.stderr
    assert body(tmp_path / "sh.log") == ["sh -c tr '\\000' ' ' < /proc/$$/cmdline; echo "]
