"""Submit screen: the core's validation messages, the dry-run preview, local and Slurm submits."""
from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import group_members, kill_groups, run_cli
from test_console_fixtures import confirmation, notifications, one_read, posted, table_column, wait_for

from backends.errors import InputError
from backends.submit.commandline import parse_submit_argv
from backends.submit.plan import build_plan
from hyperion_console.app import make_app
from hyperion_console.form import form_argv
from hyperion_console.messages import JobsUpdated, PreviewUpdated, SubmitRequested
from hyperion_console.screens.confirm import ConfirmScreen
from hyperion_console.screens.jobs import JobsScreen
from hyperion_console.screens.submit import SubmitScreen

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def fill(screen, **fields: str) -> None:
    for name, value in fields.items():
        screen.set_field(name, value)


def core_error(argv: list[str]) -> str:
    """What the core says about an argv: the message the CLI would print after `error: `."""
    try:
        build_plan(*parse_submit_argv(argv))
    except InputError as exc:
        return str(exc)
    raise AssertionError(f"the core accepts {argv}")


@pytest.mark.parametrize("field, value, highlighted", [
    ("time", "abc", "#time"),
    ("num_gpus", "-2", "#num_gpus"),
    ("mem", "lots", "#mem"),
    ("mem", "-5G", "#mem"),
    ("array", "JOB=5:1", "#array"),
    ("output_file", "", "#output_file"),
    ("env", "1BAD=x", "#env"),
    ("env", "JOB=3", "#env"),                   # the array's own NAME
    ("env", "SECONDS=30", "#env"),              # bash resets it in the batch script
    ("env", "A=1 _=x", "#env"),
    ("env", "GREETING='hello", "#env"),
])
def test_invalid_field_shows_the_cores_message_inline(tmp_path: Path, field: str, value: str,
                                                      highlighted: str) -> None:
    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            screen = app.submit_screen
            fill(screen, output_file=str(tmp_path / "log" / "t.JOB.log"), array="JOB=1:2",
                 command="echo JOB")
            fill(screen, **{field: value})
            await pilot.pause()
            try:
                expected = core_error(form_argv(screen.form()))
            except InputError as exc:                # a field that cannot be split into words
                expected = str(exc)
            assert "expected one argument" not in expected     # "-2" is the value, not an option
            assert str(screen.query_one("#submit-error").content) == expected
            assert screen.query_one(highlighted).has_class("invalid")
            previews = posted(seen, PreviewUpdated)
            assert previews[-1].error == expected and previews[-1].command_line is None
            await pilot.press("ctrl+s")          # refused with the same message, nothing asked
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
            assert expected in notifications(app)

    asyncio.run(scenario())


def test_preview_is_what_hyperion_submit_dry_run_prints(tmp_path: Path, cli_env) -> None:
    async def scenario() -> tuple[str, str]:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            fill(screen, backend="slurm", num_gpus="2", mem="1G", mem_scope="cpu", time="00:05:00",
                 array="JOB=1:3", max_jobs_run="2", output_file=str(tmp_path / "log" / "t.JOB.log"),
                 env="SHARDS=12 'GREETING=hello world'", command="python -c 'print(1)' --part JOB")
            await pilot.pause()
            assert str(screen.query_one("#submit-error").content) == (
                "✓ valid · ⚠ torchrun will not start this command: see the warning under it")
            return (str(screen.query_one("#submit-command").content),
                    str(screen.query_one("#submit-preview").content))

    command, preview = asyncio.run(scenario())
    argv = shlex.split(command.removeprefix("$ "))
    assert argv[0] == "hyperion-submit" and "--mem-per-cpu" in argv and "--gres=gpu:v100:2" in preview
    assert argv[argv.index("GREETING=hello world") - 1] == "--env" and "SHARDS=12" in argv
    dry = run_cli(*argv[:2], "--dry-run", *argv[2:], env=cli_env, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    # two GPUs and `python -c ...`: torchrun would run `python -u python`; both faces warn first
    warning, _, rest = preview.partition("\n")
    assert warning == "# " + dry.stderr.strip() and "hyperion-submit: warning: --num-gpus 2" in warning, dry.stderr
    assert rest.rstrip("\n") == dry.stdout.rstrip("\n")
    assert not (tmp_path / "log").exists()      # planning wrote nothing


def test_the_preview_at_80_columns_breaks_a_path_after_a_slash_not_inside_a_name(tmp_path: Path) -> None:
    """At 80x24 the preview pane is 38 columns: the command and the dry run wrapped a path where the
    column ended, `/tmp/hyperion-console-fixtures/submi` over `t/exp/log/extract.JOB.log`, a name
    cut in two that reads as two names. A line now breaks at a space or after a `/`; a value with
    markup in it stays the characters typed."""
    from test_console_fixtures import FIXED_ROOT, fresh, rendered

    root = fresh(FIXED_ROOT / "submit-wrap")      # fixed: where the column ends is the same each run
    log = root / "experiments" / "extraction_of_features" / "log" / "extract.JOB.log"
    command = "hyperion-extract --tag '[b]x[/b]' --part JOB --num-parts 4"

    async def scenario() -> tuple[str, list[str]]:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            fill(screen, backend="slurm", array="JOB=1:4", mem="200M", time="00:05:00", output_file=str(log),
                 command=command)
            await pilot.pause(0.3)
            assert str(screen.query_one("#submit-error").content) == "✓ valid"
            shown = screen.query_one("#submit-command")
            text = str(shown.content) + "\n" + str(screen.query_one("#submit-preview").content)
            return text, [line.rstrip() for line in rendered(shown)]

    text, lines = asyncio.run(scenario())
    assert len(lines) > 3 and all(len(line) <= 38 for line in lines), lines
    for before, after in zip(lines, lines[1:]):
        # each line ends after a `/` or before a space of the command: never inside a name
        assert before.endswith("/") or f"{before.split()[-1]} {after.split()[0]}" in text, (before, after)
    assert "".join(lines).replace(" ", "") == text.split("\n")[0].replace(" ", ""), lines   # all of it
    assert "'[b]x[/b]'" in "".join(lines)          # the brackets typed, not bold


def test_a_torchrun_warning_below_a_long_command_is_said_where_the_screen_shows_it(tmp_path: Path) -> None:
    """`--num-gpus 2 -- python train.py ...` with a recipe's long arguments, at 80x24: the command
    filled the preview pane and its warning (the preview's first line) was below the fold; the
    line above the pane said only `✓ valid`, and the confirmation said nothing of it either."""
    script = tmp_path / "train.py"         # there: a missing one is warned about too
    script.write_text("print('hi')\n")
    long_args = " ".join(f"--opt{i} /data/experiments/resnet34/with/a/long/path/{i}" for i in range(12))

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            fill(screen, backend="slurm", num_gpus="2", output_file=str(tmp_path / "log" / "t.log"),
                 command=f"python train.py {long_args}")
            await pilot.pause()
            preview = screen.query_one("#submit-preview")
            assert str(preview.content).startswith("# hyperion-submit: warning: --num-gpus 2 runs the command under")
            assert preview.region.y >= 24 - 1, preview.region          # below what the screen shows
            status = screen.query_one("#submit-error")
            assert status.region.y + status.region.height <= 23, status.region     # on the screen
            assert str(status.content) == (
                "✓ valid · ⚠ torchrun will not start this command: see the warning under it")
            fill(screen, command=f"{script} " + long_args)               # a Python file: no warning
            await pilot.pause()
            assert str(status.content) == "✓ valid"

    asyncio.run(scenario())


def test_the_preview_warns_of_the_array_name_replaced_after_a_dollar_and_still_submits(tmp_path: Path,
                                                                                     cli_env) -> None:
    """`--array JOB=1:2 -- bash -c 'test $JOB -ne 3'` runs `test $1 -ne 3` (the contract's literal
    substitution): every task failed, and the form said `✓ valid`. The preview now starts with
    hyperion-submit's own warning line, the line above it says to look, and the form still submits."""
    log = tmp_path / "log" / "w.JOB.log"

    async def scenario() -> str:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            fill(screen, backend="local", array="JOB=1:2", output_file=str(log), command="bash -c 'test $JOB -ne 3'")
            await pilot.pause()
            status = screen.query_one("#submit-error")
            assert str(status.content) == (
                "✓ valid · ⚠ --array replaces JOB after $ or inside a longer name: see the warning under it")
            assert not screen.query(".invalid") and screen.plan is not None
            preview = str(screen.query_one("#submit-preview").content)
            fill(screen, command="bash -c 'test JOB -ne 3'")          # the value in the text: no warning
            await pilot.pause()
            assert str(status.content) == "✓ valid"
            fill(screen, command="bash -c 'test $JOB -ne 3'")
            await pilot.pause()
            await pilot.press("ctrl+s")                                # a warning, not an error: it asks
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            return preview

    preview = asyncio.run(scenario())
    dry = run_cli("hyperion-submit", "local", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--dry-run",
                  "--array", "JOB=1:2", "--output-file", str(log), "--", "bash", "-c", "test $JOB -ne 3",
                  env=cli_env, cwd=tmp_path)
    first, _, rest = preview.partition("\n")
    assert first == "# " + dry.stderr.strip() and "has $JOB: it becomes $1 before the shell sees it" in first, \
        (first, dry.stderr)
    assert rest.rstrip("\n") == dry.stdout.rstrip("\n")


def test_preview_says_which_sbatch_variables_of_the_environment_are_not_passed(tmp_path: Path, cli_env,
                                                                             monkeypatch) -> None:
    """`hyperion-submit slurm` says so on stderr; the console's submissions drop the same variables,
    and said nothing of it."""
    monkeypatch.setenv("SBATCH_GRES", "gpu:v100:1")

    async def scenario() -> str:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            fill(app.submit_screen, backend="slurm", array="JOB=1:2", output_file=str(tmp_path / "log" / "g.JOB.log"),
                 command="true")
            await pilot.pause()
            return str(app.submit_screen.query_one("#submit-preview").content)

    preview = asyncio.run(scenario())
    first, _, rest = preview.partition("\n")
    dry = run_cli("hyperion-submit", "slurm", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--dry-run",
                  "--array", "JOB=1:2", "--output-file", str(tmp_path / "log" / "g.JOB.log"), "--", "true",
                  env={**cli_env, "SBATCH_GRES": "gpu:v100:1"}, cwd=tmp_path)
    assert first == "# " + dry.stderr.strip() and "not passing SBATCH_GRES" in first, (first, dry.stderr)


def test_in_a_split_pane_the_preview_goes_under_the_form_at_full_width(tmp_path: Path) -> None:
    """At 60 columns the preview beside the form had 18 of them, a word or two a line."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(60, 20)) as pilot:
            screen = app.submit_screen
            await pilot.press("1")
            fill(screen, backend="local", output_file=str(tmp_path / "log" / "t.JOB.log"), array="JOB=1:3",
                 command="python -c 'print(1)' --part JOB")
            await pilot.pause()
            form, preview = screen.query_one("#submit-form"), screen.query_one("#submit-preview-pane")
            assert preview.region.y >= form.region.bottom and preview.region.width >= 56
            assert preview.region.bottom <= 19 and preview.region.height >= 6     # above the footer
            command = screen.query_one("#submit-command")
            assert command.region.width >= 50
            await pilot.resize_terminal(100, 24)
            await pilot.pause()
            assert preview.region.x >= form.region.right and preview.region.y == form.region.y

    asyncio.run(scenario())


def test_local_submit_confirms_then_watches_on_the_jobs_screen(tmp_path: Path) -> None:
    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            screen = app.submit_screen
            fill(screen, backend="local", output_file=str(tmp_path / "log" / "t.JOB.log"))
            for field, text in (("#array", "JOB=1:3"), ("#command", "echo hello from task JOB")):
                await pilot.click(field)             # typed as a user would
                await pilot.press(*text)
            await pilot.press("escape")
            await pilot.pause()
            assert screen.form().array == "JOB=1:3"
            await pilot.press("ctrl+s")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")             # no: nothing runs
            await pilot.pause()
            assert not (tmp_path / "log").exists()
            await pilot.press("ctrl+s")
            await pilot.press("y")
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 20)
            jobs = app.screen
            await wait_for(pilot, lambda: table_column(jobs.query_one("#tasks"), "state")
                           == ["COMPLETED"] * 3, 30)
            await wait_for(pilot, lambda: "hello from task 1" in "\n".join(jobs.query_one("#log").lines), 10)
            records = jobs.query_one("#records")          # the new submission is listed, marked open
            await wait_for(pilot, lambda: records.current in records.paths, 10)
            label = str(records.get_option_at_index(records.paths.index(records.current)).prompt)
            assert label.startswith("▸ local") and "3 tasks" in label
        requested = posted(seen, SubmitRequested)
        assert len(requested) == 1 and requested[0].argv[0] == "local"
        assert "\nhello from task 3\n" in (tmp_path / "log" / "t.3.log").read_text()  # ran once, here

    asyncio.run(scenario())


def test_extra_env_of_the_form_reaches_every_task(tmp_path: Path) -> None:
    """The form's "extra env" words are --env NAME=VALUE each, quoted words kept whole."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            fill(screen, backend="local", output_file=str(tmp_path / "log" / "e.JOB.log"), array="JOB=1:2",
                 env="SHARDS=2 'GREETING=hello there'",
                 command="""sh -c 'echo "$GREETING, task JOB of $SHARDS"'""")
            await pilot.pause()
            assert str(screen.query_one("#submit-error").content) == "✓ valid"
            await pilot.press("ctrl+s", "y")
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 20)
            await wait_for(pilot, lambda: table_column(app.screen.query_one("#tasks"), "state")
                           == ["COMPLETED"] * 2, 30)

    asyncio.run(scenario())
    for value in (1, 2):
        assert f"\nhello there, task {value} of 2\n" in (tmp_path / "log" / f"e.{value}.log").read_text()


async def _local_run_started(app, pilot, tmp_path: Path, stem: str, values: int, script: str) -> None:
    """Submit `script` as a local array JOB=1:`values` from the form; back once task 1 wrote its pid."""
    fill(app.submit_screen, backend="local", output_file=str(tmp_path / "log" / f"{stem}.JOB.log"),
         array=f"JOB=1:{values}", command=f"bash -c {shlex.quote(script)}")
    await pilot.pause()
    await pilot.press("ctrl+s", "y")
    await wait_for(pilot, lambda: (tmp_path / "pid.1").exists() and (tmp_path / "pid.1").read_text(), 20)


def _local_states(tmp_path: Path, stem: str, cli_env) -> dict:
    """What `hyperion-jobs status --json` says of each value of the record: (state, exit code)."""
    import json

    from conftest import run_cli

    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / f"{stem}.JOB.submit.json"), "--json",
                    env=cli_env)
    return {t["value"]: (t["state"], t["exit_code"]) for t in json.loads(shown.stdout)["tasks"]}


@pytest.mark.parametrize("task_obeys", [True, False], ids=["task-obeys-ctrl-c", "task-ignores-ctrl-c"])
def test_quitting_during_a_local_run_asks_then_stops_it_and_records_it(tmp_path: Path, cli_env,
                                                                        task_obeys: bool) -> None:
    """A local run lives in the console: quitting left the terminal blank until the whole array had
    run, and a Ctrl-C then traced back and left a task LOST. Now q asks; 'no' lets it run on, 'yes'
    stops the task as Ctrl-C would and the console ends once it ended, the rest NOT_RUN."""
    import os
    import signal

    trap = "" if task_obeys else "trap '' INT; "
    script = f"{trap}echo $$ > {tmp_path}/pid.JOB; echo started JOB; sleep 30"
    quit_at: list[float] = []

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await _local_run_started(app, pilot, tmp_path, "q", 3, script)
            await pilot.press("escape", "q")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")                       # no: it runs on, the console stays
            await pilot.pause(0.5)
            assert app.is_running and app.local_runs.active()
            await pilot.press("q", "y")
            quit_at.append(time.monotonic())
            if not task_obeys:
                await pilot.pause(0.5)
                assert app.is_running                    # its task has 10 s of grace
                await pilot.press("q")                   # q again: SIGKILL now
            await wait_for(pilot, lambda: not app.local_runs.active(), 15)

    asyncio.run(scenario())
    assert time.monotonic() - quit_at[0] < 5
    group = int((tmp_path / "pid.1").read_text())
    try:
        os.killpg(group, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive, "the task's group runs on after the console quit"
    assert not (tmp_path / "pid.2").exists()
    code = 128 + (signal.SIGINT if task_obeys else signal.SIGKILL)
    assert _local_states(tmp_path, "q", cli_env) == {1: ("FAILED", code), 2: ("NOT_RUN", None), 3: ("NOT_RUN", None)}
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / "q.JOB.submit.json"), env=cli_env).stdout
    killed = "FAILED (killed (SIGKILL) at a second stop (q))"      # its 137 is no out-of-memory
    assert (killed in shown) != task_obeys, shown


_HOLD_STATUS = """
import ctypes, sys, time
if ctypes.CDLL(None, use_errno=True).ptrace(0x4206, int(sys.argv[1]), None, None) != 0:   # PTRACE_SEIZE
    sys.exit(f"cannot attach: errno {ctypes.get_errno()}")
print("attached", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_quitting_a_local_run_whose_task_never_gives_its_status_back_ends_within_the_kill_bound(
        tmp_path: Path, cli_env) -> None:
    """A debugger (here: a bare ptrace) is attached to the running task. Stop and quit, then q again:
    the task is SIGKILLed and dies, but the console's worker waited for its status with a blocking
    waitpid, which the attached process holds until it lets go (a minute here; for ever for a
    process stuck in the kernel), so the console never ended. The worker now gives its leader the
    10 s after SIGKILL the CLI gives it, and records it as the CLI does (the interrupt's code, and
    why), the rest NOT_RUN."""
    script = f"echo $$ > {tmp_path}/pid.JOB; sleep 60"
    holder: list[subprocess.Popen] = []
    quit_at: list[float] = []

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await _local_run_started(app, pilot, tmp_path, "h", 3, script)
            leader = int((tmp_path / "pid.1").read_text())
            holder.append(subprocess.Popen([sys.executable, "-c", _HOLD_STATUS, str(leader), "60"],
                                           stdout=subprocess.PIPE, text=True))
            assert holder[0].stdout.readline() == "attached\n", "no ptrace here"
            await pilot.press("escape", "q")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await pilot.pause(0.5)
            await pilot.press("q")                       # q again: SIGKILL now
            quit_at.append(time.monotonic())
            await wait_for(pilot, lambda: not app.local_runs.active(), 20)

    try:
        asyncio.run(scenario())
        took = time.monotonic() - quit_at[0]
    finally:
        for process in holder:
            process.kill()
            process.wait()
    assert took < 15, f"the quit waited {took:.0f} s for the killed task's status"
    assert _local_states(tmp_path, "h", cli_env) == {1: ("FAILED", 130), 2: ("NOT_RUN", None), 3: ("NOT_RUN", None)}
    shown = run_cli("hyperion-jobs", "status", str(tmp_path / "log" / "q" / "h.JOB.submit.json"), env=cli_env).stdout
    assert "killed (SIGKILL) at a second stop (q); its process did not end (stuck in the kernel?)" in shown, shown


def test_stop_and_quit_waits_for_the_tasks_background_jobs_and_records_what_the_task_returned(
        tmp_path: Path, cli_env) -> None:
    """A task that traps Ctrl-C, saves and exits 3, leaving `sleep 30 &` (a shell's background job
    ignores SIGINT): "Stop and quit" ended the console as the script exited and the sleep ran on,
    orphaned. Now the console waits for the task's whole group (its 10 s, or q again: SIGKILL), and
    records 3 as hyperion-submit does."""
    script = (f"trap 'echo saving; exit 3' INT; echo $$ > {tmp_path}/pid.JOB; sleep 30 & "
              "while :; do sleep 0.1; done")

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await _local_run_started(app, pilot, tmp_path, "b", 2, script)
            await pilot.pause(0.3)
            await pilot.press("escape", "q")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await wait_for(pilot, lambda: "saving" in (tmp_path / "log" / "b.1.log").read_text(), 5)
            await pilot.pause(0.5)
            assert app.is_running and app.local_runs.active(), "the console ended while `sleep 30 &` runs on"
            await pilot.press("q")                       # q again: SIGKILL now
            await wait_for(pilot, lambda: not app.local_runs.active(), 15)

    try:
        asyncio.run(scenario())
        assert group_members(int((tmp_path / "pid.1").read_text())) == [], \
            "the task's background job runs on after the console quit"
    finally:
        kill_groups(int((tmp_path / "pid.1").read_text()))
    assert _local_states(tmp_path, "b", cli_env) == {1: ("FAILED", 3), 2: ("NOT_RUN", None)}


def test_a_failed_local_task_is_recorded_failed_under_a_parent_that_ignores_sigchld(tmp_path: Path, cli_env) -> None:
    """Started where SIGCHLD is ignored (inherited), the kernel reaped the console's local tasks and
    a task that exited 3 was recorded COMPLETED 0 (the runner, in a worker thread, cannot reset it)."""
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            fill(app.submit_screen, backend="local", output_file=str(tmp_path / "log" / "c.JOB.log"),
                 array="JOB=1:2", command="sh -c 'exit 3'")
            await pilot.pause()
            await pilot.press("ctrl+s", "y")
            record = tmp_path / "log" / "q" / "c.JOB.submit.json"
            await wait_for(pilot, lambda: record.exists() and not app.local_runs.active(), 20)

    try:
        asyncio.run(scenario())
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert _local_states(tmp_path, "c", cli_env) == {1: ("FAILED", 3), 2: ("NOT_RUN", None)}


def test_the_quit_dialog_offers_no_retry_once_the_runs_site_file_is_gone(tmp_path: Path) -> None:
    """The quit dialog named `hyperion-jobs retry RECORD` for a run whose site file was deleted
    meanwhile, a command that can only be refused (`watch` and hyperion-submit offer none then)."""
    import shutil

    cfg_dir = tmp_path / "conf"
    shutil.copytree(CONF, cfg_dir)
    shown: list[str] = []

    async def scenario() -> None:
        app = make_app(cfg_dir=cfg_dir, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await _local_run_started(app, pilot, tmp_path, "g", 2, f"echo $$ > {tmp_path}/pid.JOB; sleep 30")
            await pilot.press("escape", "q")
            assert isinstance(app.screen, ConfirmScreen)
            shown.append(app.screen.detail)
            await pilot.press("n")
            for site in cfg_dir.glob("*.yaml"):
                site.unlink()
            await pilot.press("q")
            assert isinstance(app.screen, ConfirmScreen)
            shown.append(app.screen.detail)
            await pilot.press("y")
            await wait_for(pilot, lambda: not app.local_runs.active(), 15)

    asyncio.run(scenario())
    record = tmp_path / "log" / "q" / "g.JOB.submit.json"
    assert f"hyperion-jobs retry {record}" in shown[0], shown[0]
    assert "hyperion-jobs retry" not in shown[1] and "no retry can run it: its site file " in shown[1], shown[1]


def test_a_console_ending_otherwise_than_by_q_stops_its_local_run_too(tmp_path: Path, cli_env) -> None:
    """An error or a signal ends the app without the quit dialog: the run went on unseen, Python
    waiting for it. The app's unmount stops it; a run planned but not started then never starts."""
    from hyperion_console.local_runs import ConsoleClosed

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await _local_run_started(app, pilot, tmp_path, "e", 2, f"echo $$ > {tmp_path}/pid.JOB; sleep 30")
            app.exit()
        with pytest.raises(ConsoleClosed):
            with app.local_runs.running("later"):
                pass

    started = time.monotonic()
    asyncio.run(scenario())                          # returns once the run's worker thread ended
    assert time.monotonic() - started < 25           # not the 30 s of the task, let alone the array
    assert _local_states(tmp_path, "e", cli_env) == {1: ("FAILED", 130), 2: ("NOT_RUN", None)}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["kill", "terminal-closed"])
def test_a_console_killed_or_whose_terminal_closed_stops_its_local_run_as_quit_does(tmp_path: Path, cli_env,
                                                                                      signum) -> None:
    """`kill PID` or a closed terminal ended the console at once (Python's default): its local run's
    task ran on unwatched, without a footer, and was recorded LOST. Now the signal stops it as
    "Stop and quit" does (SIGINT to its group, the rest NOT_RUN) and the console exits 128 + N."""
    reached_default: list[int] = []
    before = signal.signal(signum, lambda *_: reached_default.append(1))   # not the app's: the test would die

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await _local_run_started(app, pilot, tmp_path, "k", 3, f"echo $$ > {tmp_path}/pid.JOB; sleep 30")
            os.kill(os.getpid(), signum)
            await wait_for(pilot, lambda: not app.local_runs.active(), 15)
            await pilot.pause(0.5)
        return app

    try:
        started = time.monotonic()
        app = asyncio.run(scenario())
        assert time.monotonic() - started < 25
        assert not reached_default, "the signal reached the handler the app should have replaced"
        assert app.return_code == 128 + signum
        assert signal.getsignal(signum) is not signal.SIG_DFL        # what it was before, given back
    finally:
        signal.signal(signum, before)
    with pytest.raises(ProcessLookupError):
        os.killpg(int((tmp_path / "pid.1").read_text()), 0)
    assert _local_states(tmp_path, "k", cli_env) == {1: ("FAILED", 130), 2: ("NOT_RUN", None), 3: ("NOT_RUN", None)}


@pytest.mark.slurm
def test_slurm_submit_is_watched_until_completed(slurm_cluster, tmp_path: Path) -> None:
    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            screen = app.submit_screen
            fill(screen, backend="slurm", array="JOB=1:3", time="00:02:00",
                 output_file=str(tmp_path / "log" / "s.JOB.log"),
                 command="sh -c 'sleep 2; echo slurm task JOB'")
            await pilot.pause()
            await pilot.press("ctrl+s", "y")
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 90)
            jobs = app.screen
            await wait_for(pilot, lambda: table_column(jobs.query_one("#tasks"), "state")
                           == ["COMPLETED"] * 3, 240)
            assert jobs.query_one("#jobs-progress").percentage == 1.0
            assert str(jobs.query_one("#jobs-summary").content) == "3 tasks  COMPLETED 3"
            await wait_for(pilot, lambda: "slurm task 1" in "\n".join(jobs.query_one("#log").lines), 10)
            await wait_for(pilot, lambda: any(u.all_terminal for u in posted(seen, JobsUpdated)), 60)
        updates = posted(seen, JobsUpdated)
        assert updates and updates[-1].all_terminal
        last: dict = {}
        for update in updates:                    # only what changed travels to the UI (rows of the core)
            for state in update.changed:
                key = (state.job_id, state.task_id)
                assert last.get(key) != state, f"{state} sent again unchanged"
                last[key] = state
        assert {s.state.value for s in last.values()} == {"COMPLETED"} and len(last) == 3

    asyncio.run(scenario())


@pytest.mark.parametrize("text, key", [(None, "--cfg"), ('time: "[bold]1[/]"\n', "time"), ("mem: lots\n", "mem"),
                                       ("a: &x 1\nb: *x\n", "a")], ids=["no-site", "time", "mem", "anchor"])
def test_a_site_problem_marks_the_site_selector_not_an_option_field(tmp_path: Path, text: str | None,
                                                                    key: str) -> None:
    """An empty site directory is reported, not a crash; a site file's `time: "[bold]1[/]"` marked the empty
    time field red, and an anchor marked nothing."""
    sites = tmp_path / "conf"
    sites.mkdir()
    if text is not None:
        (sites / "bad.yaml").write_text("sbatch_command: sbatch\n" + text)

    async def scenario() -> None:
        app = make_app(cfg_dir=sites, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            fill(screen, output_file=str(tmp_path / "t.log"), command="true")
            await pilot.pause()
            if text is None:     # the folder is said, not the core's `--cfg: expected a site YAML path, got ''`
                expected = (f"--cfg: no site file in {sites} (no .yaml or .yml file in it): start the console "
                            "with --cfg-dir DIR, the folder of your site YAML files")
            else:
                expected = core_error(form_argv(screen.form()))
            assert expected.startswith(f"{key}: ")
            assert text is None or f"(in the site file {sites / 'bad.yaml'})" in expected
            assert str(screen.query_one("#submit-error").content) == expected
            assert screen.query_one("#cfg").has_class("invalid")
            assert not [field for field in ("#time", "#mem", "#num_gpus") if screen.query_one(field).has_class("invalid")]
            await pilot.press("ctrl+s")
            assert expected in notifications(app)

    asyncio.run(scenario())


def test_the_site_selector_lists_only_regular_files(tmp_path: Path) -> None:
    """A FIFO named like a site file, held open by a writer that sends nothing, was listed; once picked,
    every keystroke in the form froze the console for 10 s while the preview waited on it."""
    import shutil
    import subprocess

    cfg = tmp_path / "cfg"
    cfg.mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml", cfg)
    os.mkfifo(cfg / "a_fifo.yaml")
    (cfg / "b_dir.yaml").mkdir()
    (cfg / "c_zero.yaml").symlink_to("/dev/zero")
    writer = subprocess.Popen(["sh", "-c", f"exec sleep 60 > '{cfg / 'a_fifo.yaml'}'"])

    async def scenario() -> None:
        app = make_app(cfg_dir=cfg, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            select = app.submit_screen.query_one("#cfg")
            assert [value for _, value in select._options if isinstance(value, str)] == \
                [str(cfg / "submit_test_cluster.yaml")]

    try:
        asyncio.run(scenario())
    finally:
        writer.kill()
        writer.wait()


@pytest.mark.parametrize("field, value, option", [
    ("num_gpus", "-1", "--num-gpus"),
    ("num_threads", "0", "--num-threads"),
    ("mem", "-5G", "--mem"),
    ("time", "0", "--time"),
    ("array", "JOB=0:3", "--array"),
    ("max_jobs_run", "0", "--max-jobs-run"),
])
def test_a_field_filled_top_down_is_judged_before_the_log_path_and_command_below_it(
        tmp_path: Path, cli_env, field: str, value: str, option: str) -> None:
    """A user fills the form from the top: a bad GPU count was hidden behind "command: no command
    after '--'" (and "--output-file: required") until the last field was filled. The CLI says the same."""
    async def scenario() -> tuple[str, list[str]]:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.click(f"#{field}")
            await pilot.press(*value)
            screen = app.submit_screen
            error = screen.query_one("#submit-error")
            # the form is judged in a worker: on a loaded machine a pause still showed "updating…"
            await wait_for(pilot, lambda: str(error.content) and not str(error.content).startswith("updating"), 10)
            return str(error.content), [w.id for w in screen.query(".invalid")]

    shown, marked = asyncio.run(scenario())
    assert shown.startswith(f"{option}: ") and marked == [field]
    dry = run_cli("hyperion-submit", "slurm", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--dry-run",
                  f"{option}={value}", "--", env=cli_env, cwd=tmp_path)
    assert dry.returncode == 2 and dry.stderr.strip() == f"hyperion-submit: error: {shown}"


def test_tab_after_escape_goes_to_the_site_selector_through_every_field_in_form_order(tmp_path: Path) -> None:
    """Escape leaves a field (so 1/2/3 switch screens); the next Tab landed on the form's scroll
    container, which shows no focus: Enter then did nothing and the user was lost."""
    order = ["cfg", "backend", "num_gpus", "num_threads", "mem", "mem_scope", "time", "array",
             "max_jobs_run", "output_file", "env", "command", "submit-button", "submit-preview-scroll"]

    async def scenario() -> list[str | None]:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.click("#time")
            await pilot.press("escape")
            assert app.focused is None
            seen = []
            for _ in range(len(order) + 1):
                await pilot.press("tab")
                seen.append(app.focused.id if app.focused else None)
            return seen

    assert asyncio.run(scenario()) == [*order, "cfg"]


def test_enter_in_a_field_submits_after_the_confirmation_as_ctrl_s_does(tmp_path: Path) -> None:
    """Enter, the key a form is sent with, did nothing in any field of the Submit screen."""
    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            await pilot.click("#command")
            await pilot.press("enter")              # invalid: refused with the core's message
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
            assert "--output-file: required: the combined stdout/stderr log path" in notifications(app)
            fill(screen, backend="local", output_file=str(tmp_path / "log" / "t.log"))
            await pilot.click("#command")
            await pilot.press(*"echo hi", "enter")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await confirmation(pilot, "#confirm-detail Static")
            assert "-- echo hi" in str(app.screen.query_one("#confirm-detail Static").content)
            await pilot.press("n")
            await pilot.pause()
            assert app.screen is screen and app.focused is screen.query_one("#command")
        assert not (tmp_path / "log").exists()

    asyncio.run(scenario())


def test_a_submission_slurm_refuses_is_told_in_the_words_hyperion_submit_uses(slurm_cluster, tmp_path: Path,
                                                                                cli_env) -> None:
    """sbatch refusing the job (a node the site excludes that this cluster lacks) was told under the
    worker's name "run_submission" as "SubmitError: sbatch failed ..."; the CLI says "error: sbatch failed ..."."""
    site = tmp_path / "site.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text().replace(
        "  - --partition=cpu\n", "  - --partition=cpu\n  - --nodelist=no-such-node\n"))
    argv = ["slurm", "--cfg", str(site), "--output-file", str(tmp_path / "cli" / "r.log"), "--", "true"]
    cli = run_cli("hyperion-submit", *argv, env=cli_env, cwd=tmp_path, timeout=120)
    assert cli.returncode == 1 and "sbatch failed" in cli.stderr
    said = cli.stderr.strip().removeprefix("hyperion-submit: error: ").replace("/cli/", "/console/")

    async def scenario() -> None:
        app = make_app(cfg_dir=tmp_path, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            fill(app.submit_screen, cfg=str(site), output_file=str(tmp_path / "console" / "r.log"), command="true")
            await pilot.pause()
            await pilot.press("ctrl+s", "y")
            await wait_for(pilot, lambda: any(n.severity == "error" for n in app._notifications), 90)
            told = [(n.title, n.message) for n in app._notifications if n.severity == "error"]
            assert told == [("submit failed", said)]

    asyncio.run(scenario())


@pytest.mark.slurm
def test_a_later_window_slurm_refuses_is_told_as_hyperion_submit_tells_it_and_the_first_is_watched(
        slurm_cluster, tmp_path: Path, cli_env) -> None:
    """Window 2 refused after window 1 went in: the console said "submit failed", the Jobs screen never
    opened, and window 1's jobs ran with no record any screen could show. Now window 1 is recorded and
    watched, and the notification is the line hyperion-submit prints, titled "partly submitted" (it was
    "submit failed", though jobs went in and are watched)."""
    site = tmp_path / "site.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text().replace("max_array_size: 1001",
                                                                          "max_array_size: 1500"))
    argv = ["slurm", "--cfg", str(site), "--array", "JOB=5,2999", "--time", "00:02:00",
            "--output-file", str(tmp_path / "cli" / "w.JOB.log"), "--", "true"]
    cli = run_cli("hyperion-submit", *argv, env=cli_env, cwd=tmp_path, timeout=300)
    assert cli.returncode == 1, cli.stderr
    said = cli.stderr.splitlines()[0].removeprefix("hyperion-submit: error: ")
    cli_job = json.loads((tmp_path / "cli/q/w.JOB.submit.json").read_text())["jobs"][0]["job_id"]
    record = tmp_path / "console/q/w.JOB.submit.json"
    record.parent.parent.mkdir()

    async def scenario() -> None:     # (searching tmp_path, the CLI's record opened it on the Jobs screen)
        app = make_app(cfg_dir=tmp_path, search_dirs=[record.parent.parent])
        async with app.run_test(size=(80, 24)) as pilot:
            fill(app.submit_screen, cfg=str(site), array="JOB=5,2999", time="00:02:00",
                 output_file=str(tmp_path / "console" / "w.JOB.log"), command="true")
            await pilot.pause()
            await pilot.press("ctrl+s", "y")
            await wait_for(pilot, lambda: any(n.severity == "error" for n in app._notifications), 90)
            job = json.loads(record.read_text())["jobs"][0]["job_id"]
            told = [(n.title, n.message) for n in app._notifications if n.severity == "error"]
            assert told == [("partly submitted", said.replace("/cli/", "/console/").replace(f"job(s) {cli_job})",
                                                                                         f"job(s) {job})"))]
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 30)
            await wait_for(pilot, lambda: table_column(app.screen.query_one("#tasks"), "state") == ["COMPLETED"], 120)

    asyncio.run(scenario())


@pytest.mark.slurm
def test_what_sbatch_warns_while_queuing_is_notified_escaped(slurm_cluster, tmp_path: Path) -> None:
    """An sbatch that queued the job but warned on stderr: the console said nothing of it. Now the
    warning is a notification titled "sbatch", as hyperion-submit prints it (controls escaped)."""
    wrapper = tmp_path / "warning-sbatch"
    wrapper.write_text("#!/bin/bash\nprintf 'sbatch: warning: \\033]0;owned\\007memory lowered\\n' >&2\n"
                       "echo 'sbatch: warning: time limit lowered' >&2\n"
                       'exec sbatch "$@"\n')
    wrapper.chmod(0o755)
    site = tmp_path / "site.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text().replace("sbatch_command: sbatch",
                                                                          f"sbatch_command: {wrapper}"))
    record = tmp_path / "q/w.submit.json"

    async def scenario() -> None:
        app = make_app(cfg_dir=tmp_path, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            fill(app.submit_screen, cfg=str(site), time="00:02:00", output_file=str(tmp_path / "w.log"),
                 command="true")
            await pilot.pause()
            await pilot.press("ctrl+s", "y")
            await wait_for(pilot, lambda: any(n.severity == "warning" for n in app._notifications), 90)
            job = json.loads(record.read_text())["jobs"][0]["job_id"]
            told = [(n.title, n.message) for n in app._notifications if n.severity == "warning"]
            assert told == [("sbatch", f"sbatch said of job {job}: sbatch: warning: \\x1b]0;owned\\x07memory lowered | "
                                       f"sbatch said of job {job}: sbatch: warning: time limit lowered")]  # one toast
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 30)

    asyncio.run(scenario())


@pytest.mark.slurm
def test_a_retry_whose_later_window_slurm_refuses_is_told_as_partly_submitted_not_refused(
        slurm_cluster, tmp_path: Path, cli_env) -> None:
    """A Retry of JOB=5 (failed) and 2999 (left out) whose window of 2999 sbatch refuses again: value 5
    went in as attempt 2 and is watched, but the Jobs screen posted RetryRefused ("nothing ran") under
    the title "retry". Now it is told as partly submitted, and the open attempt says what is left out."""
    from hyperion_console.messages import RetryRefused
    from hyperion_console.screens.retry import RetryScreen

    site = tmp_path / "site.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text().replace("max_array_size: 1001",
                                                                          "max_array_size: 1500"))
    cli = run_cli("hyperion-submit", "slurm", "--cfg", str(site), "--array", "JOB=5,2999", "--time", "00:02:00",
                  "--output-file", str(tmp_path / "w.JOB.log"), "--", "false", env=cli_env, cwd=tmp_path, timeout=300)
    assert cli.returncode == 1, cli.stderr
    record = tmp_path / "q/w.JOB.submit.json"

    async def scenario() -> None:
        seen: list = []
        app = make_app(cfg_dir=tmp_path, record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30), message_hook=seen.append) as pilot:
            table = app.jobs_screen.query_one("#tasks")
            await wait_for(pilot, lambda: table_column(table, "state") == ["FAILED"], 60)
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, RetryScreen), 20)
            await wait_for(pilot, lambda: not app.screen.query_one("#retry-run").disabled, 20)
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
            await pilot.press("y")
            await wait_for(pilot, lambda: any(n.severity == "error" for n in app._notifications)
                           or posted(seen, RetryRefused), 90)
            told = [(n.title, n.message) for n in app._notifications if n.severity == "error"]
            assert not posted(seen, RetryRefused), told
            assert len(told) == 1 and told[0][0] == "retry partly submitted", told
            assert "JOB=2999 not submitted; JOB=5 (job(s)" in told[0][1]
            await wait_for(pilot, lambda: json.loads(record.read_text())["attempt"] == 2, 30)
            status = app.jobs_screen.query_one("#poll-status")
            await wait_for(pilot, lambda: "JOB=2999 of attempt 2 not submitted" in status.line().plain, 30)

    asyncio.run(scenario())


def test_a_huge_array_previews_its_head_and_says_how_to_see_the_rest(tmp_path: Path, cli_env) -> None:
    """JOB=1:100000 (the most an array may hold) made a 100,000-line preview that Textual wrapped
    again at every keystroke: 4 s per key typed anywhere in the form. The head is the dry run's."""
    async def scenario() -> tuple[str, str, float]:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            fill(screen, output_file=str(tmp_path / "log" / "b.JOB.log"), array="JOB=1:100000", command="echo JOB")
            await pilot.pause()
            await pilot.click("#time")
            started = time.monotonic()
            await pilot.press(*"00:05:00")
            await pilot.pause()
            return (str(screen.query_one("#submit-command").content),
                    str(screen.query_one("#submit-preview").content), (time.monotonic() - started) / 8)

    command, preview, per_key = asyncio.run(scenario())
    argv = shlex.split(command.removeprefix("$ "))
    dry = run_cli(*argv[:2], "--dry-run", *argv[2:], env=cli_env, cwd=tmp_path)
    lines = dry.stdout.splitlines()
    head, _, note = preview.rstrip("\n").rpartition("\n")
    assert head.splitlines() == lines[:len(head.splitlines())] and len(head.splitlines()) <= 2000
    assert note == (f"… {len(lines) - len(head.splitlines())} more lines: the command above with --dry-run "
                    "prints them all")
    assert per_key < 2.0, f"{per_key:.1f} s per key"


@pytest.mark.parametrize("typed", [
    r'''sh -c "echo rank=\$LOCAL_RANK \`hostname\` \"q\" \\ \x"''',
    r'''printf '%s\n' "a\$b" 'c\$d' e\$f "g\
h"''',
])
def test_fields_are_split_into_the_words_a_shell_would_make(tmp_path: Path, typed: str) -> None:
    """README: split as a shell splits them. Inside double quotes a shell drops the backslash of \\$
    and \\`; the form kept it, so `sh -c "echo \\$RANK"` printed a literal $RANK in every task."""
    bash = subprocess.run(["bash", "-c", "printf '%s\\0' " + typed], capture_output=True, text=True, check=True)
    words = bash.stdout.split("\0")[:-1]

    async def scenario() -> str:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            fill(app.submit_screen, output_file=str(tmp_path / "t.log"), command=typed)
            await pilot.pause()
            return str(app.submit_screen.query_one("#submit-command").content)

    argv = shlex.split(asyncio.run(scenario()).removeprefix("$ "))
    assert argv[argv.index("--") + 1:] == words


def test_a_listed_site_file_replaced_by_a_fifo_is_refused_at_once_not_waited_for(tmp_path: Path) -> None:
    """The list holds regular files, but one replaced by a FIFO afterwards (a writer holding it open,
    sending nothing) froze the form for 10 s at every key: the preview waited for it as for --cfg <(...)."""
    conf = tmp_path / "conf"
    conf.mkdir()
    site = conf / "site.yaml"
    site.write_text((CONF / "submit_test_cluster.yaml").read_text())

    async def scenario() -> tuple[str, float]:
        app = make_app(cfg_dir=conf, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            fill(app.submit_screen, output_file=str(tmp_path / "t.log"), command="true")
            await pilot.pause()
            assert str(app.submit_screen.query_one("#submit-error").content) == "✓ valid"
            site.unlink()
            os.mkfifo(site)
            writer = subprocess.Popen(["sh", "-c", f"exec 3>'{site}'; sleep 60"])
            try:
                started = time.monotonic()
                await pilot.click("#time")
                await pilot.press("5")
                await pilot.pause()
                return str(app.submit_screen.query_one("#submit-error").content), time.monotonic() - started
            finally:
                writer.kill()
                writer.wait()

    said, took = asyncio.run(scenario())
    assert said == f"--cfg: cannot read {site}: a FIFO, not a regular file" and took < 3, (said, took)


@pytest.mark.parametrize("log", ["~/exp/log/t.log", "~", "~root/t.log"])
def test_a_log_path_starting_with_a_tilde_is_refused_not_made_a_folder_named_tilde(tmp_path: Path, cli_env,
                                                                                  log: str) -> None:
    """No shell expands ~ in the form (nor in --output-file=~/x): the log went to ./~/exp/log/, a
    folder named ~ in the working directory that `rm -rf ~` would then "clean up"."""
    async def scenario() -> tuple[str, list[str]]:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            fill(app.submit_screen, output_file=log, command="true")
            await pilot.pause()
            screen = app.submit_screen
            return str(screen.query_one("#submit-error").content), [w.id for w in screen.query(".invalid")]

    said, marked = asyncio.run(scenario())
    home = os.path.expanduser(log)
    assert said == (f"--output-file: '{log}' starts with ~, which nothing expands here: it would be a folder "
                    f"named ~ in the working directory; give the full path, e.g. {home}") and marked == ["output_file"]
    cli = run_cli("hyperion-submit", "slurm", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--dry-run",
                  f"--output-file={log}", "--", "true", env=cli_env, cwd=tmp_path)
    assert cli.returncode == 2 and cli.stderr.strip() == f"hyperion-submit: error: {said}"
    assert not (tmp_path / "~").exists()


def test_site_files_with_one_stem_are_told_apart_in_the_selector(tmp_path: Path) -> None:
    """a.yaml and a.yml were both listed as "a": which one the preview used could not be seen."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    for name in ("a.yaml", "a.yml", "b.yaml"):
        (cfg / name).write_text((CONF / "submit_test_cluster.yaml").read_text())

    async def scenario() -> list[str]:
        app = make_app(cfg_dir=cfg, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            select = app.submit_screen.query_one("#cfg")
            return [str(label) for label, value in select._options if isinstance(value, str)]

    assert asyncio.run(scenario()) == ["a.yaml", "a.yml", "b"]


def burst_submits(tmp_path: Path, burst: str, backend: str, focus: str | None = None) -> tuple[list[str], list[int]]:
    """Keys read at once on a filled Submit form (`focus`: the field the cursor is in): the
    notifications once the Jobs screen is up, and the attempt numbers the ledger then holds. Exactly
    one SubmitRequested is asserted on the way."""
    async def scenario() -> list[str]:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            fill(app.submit_screen, backend=backend, output_file=str(tmp_path / "log" / "b.JOB.log"),
                 time="00:01:00", command="true")
            if focus is not None:
                app.submit_screen.query_one(focus).focus()
            await pilot.pause()
            one_read(app, burst)
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 60)
            await pilot.pause(1)
            assert len(posted(seen, SubmitRequested)) == 1
            return notifications(app)

    said = asyncio.run(scenario())
    ledger = [json.loads(line) for line in (tmp_path / "log" / "q" / "b.JOB.attempts.jsonl").read_text().splitlines()]
    return said, [line["number"] for line in ledger if line["type"] == "attempt"]


@pytest.mark.parametrize("backend", ["local", pytest.param("slurm", marks=pytest.mark.slurm)])
def test_ctrl_s_y_twice_in_one_burst_submits_once_and_says_so(tmp_path: Path, backend: str,
                                                              request) -> None:
    """`ctrl+s y ctrl+s y` read at once (a double tap, a paste): the second ctrl+s arrived while the
    dialog was still up and was lost without a word. Now it is refused with a notification while the
    first submission is being sent, and there is still exactly one attempt."""
    if backend == "slurm":
        request.getfixturevalue("slurm_cluster")

    said, attempts = burst_submits(tmp_path, "\x13y\x13y", backend)
    assert any(n.startswith("a submission is already being sent") for n in said), said
    assert attempts == [1]


def test_a_site_file_written_while_the_console_runs_is_listed(tmp_path: Path) -> None:
    """A site YAML written in another terminal was not offered until the console restarted. Now the
    selector lists the folder again when it gets the focus and every few seconds; a FIFO named like
    a site file (a writer holding it open) is still left out, and the chosen site stays chosen."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    site_text = (CONF / "submit_test_cluster.yaml").read_text()
    (cfg / "a.yaml").write_text(site_text)
    writer = None

    async def scenario() -> None:
        nonlocal writer
        app = make_app(cfg_dir=cfg, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            select = screen.query_one("#cfg")

            def listed() -> list[str]:
                return [str(label) for label, value in select._options if isinstance(value, str)]

            await pilot.pause()
            assert listed() == ["a"]
            (cfg / "b.yaml").write_text(site_text)
            os.mkfifo(cfg / "c.yaml")
            writer = subprocess.Popen(["sh", "-c", f"exec sleep 60 > '{cfg / 'c.yaml'}'"])
            await pilot.press("tab")                     # the selector, as a user gets to it
            assert select.has_focus
            await wait_for(pilot, lambda: listed() == ["a", "b"], 1)   # at the focus, not the 2 s timer
            await pilot.press("enter", "down", "enter")   # b is picked as any other
            await pilot.pause()
            assert screen.form().cfg == str(cfg / "b.yaml")
            await pilot.press("escape", "tab")            # away from the selector: the timer lists
            (cfg / "a.yml").write_text(site_text)
            await wait_for(pilot, lambda: listed() == ["a.yaml", "a.yml", "b"], 5)
            assert screen.form().cfg == str(cfg / "b.yaml")
            assert str(screen.query_one("#submit-error").content).startswith(("✓ valid", "--output-file"))

    try:
        asyncio.run(scenario())
    finally:
        if writer is not None:
            writer.kill()


def no_site_screen(tmp_path: Path, cfg_dir: Path) -> tuple[list[str], str, list[str], bool, str]:
    """The Submit screen started from `tmp_path` (a fresh experiment folder) with `cfg_dir` holding
    no site file: its frame, the selector's text, the notifications after ctrl+s, whether a dialog
    asked, and the site selector's invalid mark."""
    from test_console_fixtures import screen_lines

    async def scenario():
        app = make_app(cfg_dir=cfg_dir, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.press("1")
            await pilot.pause()
            lines = screen_lines(app)
            await pilot.press("ctrl+s")
            await pilot.pause()
            select = app.submit_screen.query_one("#cfg")
            return (lines, str(select.query_one("SelectCurrent Static#label").content), notifications(app),
                    isinstance(app.screen, ConfirmScreen), select.has_class("invalid"))

    return asyncio.run(scenario())


@pytest.mark.parametrize("made, why", [
    (None, "no such folder"),                       # started in an experiment folder: no conf/ there
    ("empty", "no .yaml or .yml file in it"),
])
def test_no_site_file_says_where_the_console_looked_and_how_to_name_the_folder(
        tmp_path: Path, monkeypatch, made: str | None, why: str) -> None:
    """Started from an experiment folder (no conf/ in it), the site selector was empty and the only
    line was `--cfg: expected a site YAML path, got ''`, which said neither where the console had
    looked nor that --cfg-dir names the folder. The form now says both, the selector says there is
    no site file, and ctrl+s refuses with the same line, nothing asked."""
    monkeypatch.chdir(tmp_path)
    if made:
        (tmp_path / "conf").mkdir()
        (tmp_path / "conf" / "notes.txt").write_text("not a site")
    lines, selector, said, asked, marked = no_site_screen(tmp_path, Path("conf"))
    message = (f"--cfg: no site file in {tmp_path / 'conf'} ({why}): start the console with --cfg-dir DIR, "
               "the folder of your site YAML files")
    pane = "".join("".join(line.split("▕", 1)[-1].split()) for line in lines[1:8])   # wrapped, a path mid-word
    assert "".join(message.split()) in pane, "\n".join(lines)
    assert "got ''" not in "\n".join(lines)
    assert selector == "no site file" and marked
    assert said == [message] and not asked


def test_a_site_file_written_after_a_start_without_one_is_chosen(tmp_path: Path) -> None:
    """With no site file at the start, one written meanwhile (the user followed the line's advice in
    another terminal) is chosen as at a start with it, and the line about the missing folder goes."""
    cfg = tmp_path / "cfg"

    async def scenario() -> None:
        app = make_app(cfg_dir=cfg, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            error = screen.query_one("#submit-error")
            await pilot.pause()
            assert "(no such folder)" in str(error.content)
            cfg.mkdir()
            await wait_for(pilot, lambda: "(no .yaml or .yml file in it)" in str(error.content), 5)
            (cfg / "site.yaml").write_text((CONF / "submit_test_cluster.yaml").read_text())
            await wait_for(pilot, lambda: screen.form().cfg == str(cfg / "site.yaml"), 5)
            fill(screen, output_file=str(tmp_path / "log" / "t.log"), command="true")
            await pilot.pause()
            assert str(error.content) == "✓ valid"

    asyncio.run(scenario())


def test_a_site_folder_of_hostile_size_is_looked_at_only_so_far(tmp_path: Path) -> None:
    """Listed again every few seconds, a folder of a million entries (a mistyped --cfg-dir) would be
    walked whole each time: only the first MAX_SITE_ENTRIES entries are looked at."""
    from hyperion_console.screens.submit import MAX_SITE_ENTRIES, site_files

    for number in range(100):
        (tmp_path / f"s{number:03}.yaml").write_text("")
    assert len(site_files(tmp_path, max_entries=10)) == 10
    assert len(site_files(tmp_path)) == 100 and MAX_SITE_ENTRIES >= 1000


def core_preview(form) -> tuple[str, str]:
    """The command line and dry-run text the core gives for `form`, as the preview shows them."""
    from backends.submit.plan import describe_plan, submit_argv
    from hyperion_console.screens.submit import preview_text

    site, options = parse_submit_argv(form_argv(form), pipes=False)
    text = preview_text(describe_plan(build_plan(site, options)))
    return "$ " + shlex.join(["hyperion-submit", *submit_argv(options)]), str(text)


def test_typing_at_a_big_array_shows_each_key_at_once_and_ends_with_the_final_preview(tmp_path: Path) -> None:
    """With --array JOB=1:100000 every key in the form waited for the core to plan 100,000 tasks (0.4 s
    and more per key). Now the keys show at once, the preview says it is out of date while they come,
    and once they pause it is the core's preview of what was typed last, never of a form before."""
    import time as clock

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
            screen = app.submit_screen
            fill(screen, backend="slurm", output_file=str(tmp_path / "log" / "t.JOB.log"), command="echo JOB",
                 array="JOB=1:100000")
            await wait_for(pilot, lambda: screen.plan is not None and len(screen.plan.tasks) == 100_000
                           and not getattr(screen, "updating", False), 60)
            started = clock.perf_counter()
            build_plan(*parse_submit_argv(form_argv(screen.form()), pipes=False))
            one_plan = clock.perf_counter() - started
            field = screen.query_one("#command")
            field.focus()
            await pilot.pause()
            field.cursor_position = len(field.value)
            started = clock.perf_counter()
            await pilot.press(*" --part JOB")
            typing = clock.perf_counter() - started
            assert field.value == "echo JOB --part JOB"
            # each key waited for a plan before: 11 keys took 11 plans; a loaded machine slows the keys too
            assert typing < 4 * one_plan, f"11 keys took {typing:.2f} s, one plan {one_plan:.2f} s"
            assert str(screen.query_one("#submit-error").content).startswith("updating…")
            assert screen.plan is None            # the plan of "echo JOB" is not the form's any more
            await wait_for(pilot, lambda: not screen.updating, 60)
            command, preview = core_preview(screen.form())
            assert str(screen.query_one("#submit-error").content) == "✓ valid"
            assert str(screen.query_one("#submit-command").content) == command
            assert command.endswith("echo JOB --part JOB")
            assert str(screen.query_one("#submit-preview").content) == preview
            assert screen.plan.argv[-4:] == ("echo", "JOB", "--part", "JOB")
            # the message is seen when it is handled, a moment after the screen showed its preview
            await wait_for(pilot, lambda: posted(seen, PreviewUpdated)[-1].command_line == command.removeprefix("$ "), 10)
            await pilot.press("backspace", "backspace", "backspace", "x")     # an error once the keys pause
            await wait_for(pilot, lambda: not screen.updating, 60)
            assert str(screen.query_one("#submit-command").content).endswith("echo JOB --part x")

    asyncio.run(scenario())


def test_submit_right_after_typing_submits_what_was_typed_last(tmp_path: Path, monkeypatch) -> None:
    """ctrl+s before the keys pause (the preview still of the form before them) submits the form as
    typed: the plan is made again at the key, never taken from the out-of-date preview."""
    import hyperion_console.screens.submit as submit_module

    monkeypatch.setattr(submit_module, "SLOW_PREVIEW", 0.0, raising=False)    # every form waits for a pause

    async def scenario() -> None:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            screen = app.submit_screen
            fill(screen, backend="local", output_file=str(tmp_path / "log" / "t.JOB.log"), array="JOB=1:2",
                 command="sh -c 'echo typed-JOB")
            field = screen.query_one("#command")
            field.focus()
            await pilot.pause()
            field.cursor_position = len(field.value)
            await pilot.press(*"-last'", "ctrl+s")
            assert isinstance(app.screen, ConfirmScreen)
            assert "typed-JOB-last" in app.screen.detail
            await pilot.press("y")
            await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 20)
            await wait_for(pilot, lambda: (tmp_path / "log" / "t.2.log").exists()
                           and "# Ended" in (tmp_path / "log" / "t.2.log").read_text(), 30)
            (requested,) = posted(seen, SubmitRequested)
            assert list(requested.argv[-3:]) == ["sh", "-c", "echo typed-JOB-last"]
            assert "\ntyped-2-last\n" in (tmp_path / "log" / "t.2.log").read_text()

    asyncio.run(scenario())



@pytest.mark.parametrize("burst", ["\x13n\x13y\x13y", "\rn\x13y\x13y"],
                         ids=["ctrl+s n ctrl+s y ctrl+s y", "enter n ctrl+s y ctrl+s y"])
def test_a_burst_of_asks_and_answers_submits_once(tmp_path: Path, burst: str) -> None:
    """`enter n ctrl+s y ctrl+s y` read at once, the cursor in the command field: the ctrl+s came before
    Enter's dialog was up and stacked a second dialog, and each `y` submitted (two SubmitRequested; the
    second run refused only by the log path's lock). One dialog asks at a time and only its answer
    acts: one submission, and the last ctrl+s is told it submitted nothing. The same with ctrl+s first."""
    said, attempts = burst_submits(tmp_path, burst, "local", focus="#command")
    assert any(n.startswith("a submission is already being sent") for n in said), said
    assert not any("another process is submitting" in n for n in said), said
    assert attempts == [1]


@pytest.mark.parametrize("array, question, windows", [
    ("JOB=1:100", "Submit 100 task(s) to slurm in 3 sbatch calls?",
     "3 array windows, as the preview lists them: at most 40 task(s) each (the site's max_array_size)"),
    ("JOB=1:30", "Submit 30 task(s) to slurm in 1 sbatch call?", None),
])
def test_the_submit_confirmation_says_how_many_tasks_and_sbatch_calls(tmp_path: Path, array: str,
                                                                       question: str, windows: str | None) -> None:
    """A 100-task array at a site limit of 40 goes out as 3 sbatch windows, which the preview said
    and the confirmation did not ('Submit to slurm?' and the command). It now asks with the task count
    and the number of sbatch calls of the plan the preview shows, and says why there are several."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    site = (CONF / "submit_test_cluster.yaml").read_text().replace("max_array_size: 1001", "max_array_size: 40")
    (cfg / "small.yaml").write_text(site)

    async def scenario() -> tuple[str, str, str]:
        app = make_app(cfg_dir=cfg, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.submit_screen
            fill(screen, cfg=str(cfg / "small.yaml"), backend="slurm", array=array,
                 output_file=str(tmp_path / "log" / "w.JOB.log"), command="echo JOB")
            await pilot.pause()
            preview = str(screen.query_one("#submit-preview").content)
            await pilot.press("ctrl+s")
            assert isinstance(app.screen, ConfirmScreen)
            await confirmation(pilot, "#confirm-title", "#confirm-detail Static")
            await pilot.pause()
            title = str(app.screen.query_one("#confirm-title").content)
            detail = str(app.screen.query_one("#confirm-detail Static").content)
            await pilot.press("n")
            await pilot.pause()
            assert not (tmp_path / "log").exists()
            return title, detail, preview

    title, detail, preview = asyncio.run(scenario())
    assert title == question
    calls = int(question.split(" in ")[1].split()[0])
    assert f"# window {calls}/{calls}:" in preview          # the preview's count, the same plan
    if windows:
        assert detail.splitlines()[0] == windows
    assert detail.splitlines()[-1].startswith("$ hyperion-submit slurm --cfg ")


@pytest.mark.parametrize("burst, answer", [("\rn", "n"), ("\rnecho", "n"), ("\ry", "y")],
                         ids=["enter n", "enter n, then more letters", "enter y"])
def test_keys_read_with_enter_answer_its_dialog_and_never_reach_the_field(tmp_path: Path, burst: str,
                                                                        answer: str) -> None:
    """`enter n` read at once, the cursor in the command field: the `n` was typed into the command
    (`truen`) before Enter's dialog was up, and the dialog then waited for an answer already given.
    The keys read behind Enter go to the dialog it asks: `n` says no, `y` submits, the field stays."""
    async def scenario() -> tuple[str, type, int]:
        seen = []
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path])
        async with app.run_test(size=(80, 24), message_hook=seen.append) as pilot:
            screen = app.submit_screen
            fill(screen, backend="local", output_file=str(tmp_path / "log" / "k.JOB.log"),
                 time="00:01:00", command="true")
            screen.query_one("#command").focus()
            await pilot.pause()
            one_read(app, burst)
            if answer == "y":
                await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), 60)
            await pilot.pause(0.5)
            return screen.query_one("#command").value, type(app.screen), len(posted(seen, SubmitRequested))

    command, on_screen, submitted = asyncio.run(scenario())
    assert command == "true"
    if answer == "n":
        assert (on_screen, submitted) == (SubmitScreen, 0)
    else:
        assert (on_screen, submitted) == (JobsScreen, 1)


def test_the_confirmation_says_the_output_file_ran_before_and_where_its_logs_go(tmp_path: Path) -> None:
    """A recipe started again from the console: the question comes with the CLI's attempt line,
    before the yes (the user learnt only afterwards that yesterday's logs were being rewritten)."""
    log = tmp_path / "log" / "t.JOB.log"
    first = run_cli("hyperion-submit", "local", "--cfg", str(CONF / "submit_test_cluster.yaml"), "--array",
                    "JOB=1:2", "--output-file", str(log), "--", "echo", "first run JOB", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    files = sorted((tmp_path / "log").rglob("*"))
    (tmp_path / "elsewhere").mkdir()    # records listed there are none: the console opens on its Submit screen

    async def scenario() -> None:
        app = make_app(cfg_dir=CONF, search_dirs=[tmp_path / "elsewhere"])
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.submit_screen
            fill(screen, backend="local", output_file=str(log), array="JOB=1:2", command="echo second run JOB")
            await pilot.pause()
            await pilot.press("ctrl+s")
            assert isinstance(app.screen, ConfirmScreen)
            # what the preview says of a local array, in the question too
            assert app.screen.title_text == ("Submit 2 task(s) to local, run here one after another, stopping at "
                                             "the first failure?")
            assert app.screen.detail.startswith(
                f"attempt 2 of this --output-file (it ran before): the earlier logs it rewrites are moved "
                f"to {tmp_path / 'log' / 'q' / 'attempts'}/ first")
            # first in the preview: a long plan is cut at MAX_PREVIEW_LINES, and its end is below the fold
            assert str(screen.query_one("#submit-preview").content).startswith("# attempt 2 of this --output-file")
            await pilot.press("n")
            await pilot.pause()
        assert (tmp_path / "log" / "t.1.log").read_text().count("\nfirst run 1\n") == 1   # nothing moved or run
        assert sorted((tmp_path / "log").rglob("*")) == files

    asyncio.run(scenario())
