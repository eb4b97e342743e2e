"""Usage and memory enforcement on the real cluster: what sacct measures, OUT_OF_MEMORY, retry sizes.

The cluster (tests/slurm/up.sh) enforces --mem with the cgroup memory controller
and samples accounting every second, so a task of a few seconds is measured.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import can_drop_rights, first_job_once_recorded, run_cli, without_rights

from backends.records.record import load_record
from backends.watch.rows import usage_missing
from backends.watch.usage import parse_size

pytestmark = pytest.mark.slurm
MB = 1000 ** 2
REPO = Path(__file__).resolve().parents[1]
HOLD = "import sys, time; x = b'\\1' * (int(sys.argv[1]) << 20); time.sleep(4)"


def submit(site: Path, tmp_path: Path, env: dict[str, str], *argv: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """hyperion-submit slurm as a user runs it; its result and the job ids from its record."""
    done = run_cli("hyperion-submit", "slurm", "--cfg", str(site), *argv, cwd=tmp_path, env=env, timeout=300)
    records = sorted((tmp_path / "log" / "q").glob("*.submit.json"), key=lambda p: p.stat().st_mtime)
    assert records, done.stdout + done.stderr
    return done, [job.job_id for job in load_record(records[-1]).jobs]


def status_json(record: Path, env: dict[str, str], want: int) -> dict:
    """hyperion-jobs status --json once `want` tasks show their peak and request (accounting lags)."""
    deadline = time.monotonic() + 60
    while True:
        shown = run_cli("hyperion-jobs", "status", str(record), "--json", env=env)
        assert shown.returncode == 0, shown.stderr
        data = json.loads(shown.stdout)
        known = [t for t in data["tasks"] if t["max_rss_bytes"] is not None and t["req_mem_bytes"] is not None]
        if len(known) >= want or time.monotonic() > deadline:
            return data
        time.sleep(1)


def failing_slurm_clients(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """An environment whose sacct and squeue fail, as when accounting was purged and the controller is away."""
    bin_dir = tmp_path / "broken-bin"
    bin_dir.mkdir()
    for name in ("sacct", "squeue"):
        tool = bin_dir / name
        tool.write_text("#!/bin/sh\necho 'slurm_persist_conn_open_without_init: failed to open' >&2\nexit 1\n")
        tool.chmod(0o755)
    return {**env, "PATH": f"{bin_dir}:{env['PATH']}"}


def test_tasks_holding_300_mb_report_it_and_the_history_keeps_it(enforced_memory, test_site, tmp_path, cli_env) -> None:
    done, jobs = submit(test_site, tmp_path, cli_env, "--mem", "1G", "--array", "T=1:2",
                        "--output-file", "log/hold.T.log", "--", "python", "-c", HOLD, "300")
    assert done.returncode == 0, done.stderr
    record = tmp_path / "log" / "q" / "hold.T.submit.json"
    tasks = status_json(record, cli_env, 2)["tasks"]
    for task in tasks:
        assert 250 * MB <= task["max_rss_bytes"] <= 600 * MB, task
        assert (task["req_mem_bytes"], task["alloc_cpus"], task["time_limit_seconds"]) == (1024 ** 3, 1, 600.0)
        assert task["elapsed_seconds"] >= 4 and task["cpu_seconds"] > 0
    table = run_cli("hyperion-jobs", "status", str(record), env=cli_env).stdout
    assert "MEM USED/REQ" in table and "M/1G " in table and "/00:10:00" in table
    # by job id, the same usage as by record (it used to show none)
    by_job = json.loads(run_cli("hyperion-jobs", "status", jobs[0], "--json", env=cli_env, cwd=tmp_path).stdout)
    assert [(t["value"], t["max_rss_bytes"], t["req_mem_bytes"]) for t in by_job["tasks"]] == [
        (t["value"], t["max_rss_bytes"], t["req_mem_bytes"]) for t in tasks]
    assert "M/1G " in run_cli("hyperion-jobs", "status", f"{jobs[0]}_2", env=cli_env, cwd=tmp_path).stdout
    summary = json.loads(run_cli("hyperion-jobs", "usage", str(record), "--json", env=cli_env).stdout)["summary"]
    assert summary["tasks"] == 2 and 250 * MB <= summary["max_rss_bytes"]["median"] <= 600 * MB
    # Slurm unreachable (or its accounting purged): the history still says what the tasks used
    offline = run_cli("hyperion-jobs", "status", str(record), "--json", env=failing_slurm_clients(tmp_path, cli_env))
    assert offline.returncode == 0, offline.stderr
    assert [t["max_rss_bytes"] for t in json.loads(offline.stdout)["tasks"]] == [t["max_rss_bytes"] for t in tasks]


def test_an_out_of_memory_array_task_is_retried_with_proposed_memory_until_it_fits(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """A user's session: 2 tasks, one needs 600 MB in a 100M job; hyperion-jobs retry --mem auto."""
    script = "import sys, time; x = b'\\1' * ((600 if sys.argv[1] == '2' else 20) << 20); time.sleep(4)"
    done, _ = submit(test_site, tmp_path, cli_env, "--mem", "100M", "--array", "T=1:2",
                     "--output-file", "log/fit.T.log", "--", "python", "-c", script, "T")
    assert done.returncode == 1 and "T=2" in done.stderr and "OUT_OF_MEMORY" in done.stderr, done.stderr
    assert "signal" not in next(line for line in done.stderr.splitlines() if "OUT_OF_MEMORY" in line)
    record = tmp_path / "log" / "q" / "fit.T.submit.json"
    oom = status_json(record, cli_env, 2)["tasks"][1]   # accounting has the request of the OOM task
    # sacct says 0:125: a marker, not a signal, and the task exited with no code of its own
    assert (oom["state"], oom["exit_code"], oom["signal"]) == ("OUT_OF_MEMORY", None, None)
    usage = run_cli("hyperion-jobs", "usage", str(record), env=cli_env)   # said 'over 90% of --mem: none'
    assert f"over 90% of --mem: {oom['job_id']}_{oom['task_id']} (reached it)" in usage.stdout, usage.stdout
    # the command hyperion-submit ends with asks for more memory (the same --mem would end the same way)
    assert done.stderr.rstrip().endswith(f"rerun only those with: hyperion-jobs retry {record} --mem auto"), done.stderr
    watched = run_cli("hyperion-jobs", "watch", str(record), env=cli_env)      # its summary names the same
    assert watched.stdout.rstrip().endswith(f"rerun only those with: hyperion-jobs retry {record} --mem auto"), \
        watched.stdout
    kept = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", env=cli_env)
    assert "  sizes: as before; --mem auto would ask for --mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request " \
        in kept.stdout, kept.stdout
    given = run_cli("hyperion-jobs", "retry", str(record), "--mem", "1G", "--dry-run", env=cli_env)
    assert given.returncode == 0 and "sizes:" not in given.stdout, given.stdout
    sizes = []
    for _ in range(3):
        preview = run_cli("hyperion-jobs", "retry", str(record), "--mem", "auto", "--dry-run", env=cli_env)
        assert preview.returncode == 0 and "values: 2" in preview.stdout, preview.stdout + preview.stderr
        line = next(line for line in preview.stdout.splitlines() if "sizes: --mem" in line)
        sizes.append(line.split("--mem ")[1].split(":")[0])
        retried = run_cli("hyperion-jobs", "retry", str(record), "--mem", "auto", "--yes", cwd=tmp_path,
                          env=cli_env, timeout=300)
        if retried.returncode == 0:
            break
        assert "OUT_OF_MEMORY" in retried.stderr, retried.stderr
        status_json(record, cli_env, 2)
    assert retried.returncode == 0, f"still out of memory after {sizes}"
    assert parse_size(sizes[0], "M") >= 2 * 100 * 1024 ** 2
    assert parse_size(sizes[-1], "M") >= 600 * MB and all(
        parse_size(b, "M") >= 2 * parse_size(a, "M") for a, b in zip(sizes, sizes[1:]))
    history = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
    assert [a["overrides"].get("mem") for a in history["attempts"]] == [None, *sizes]
    shown = json.loads(run_cli("hyperion-jobs", "status", str(record), "--json", env=cli_env).stdout)
    assert [(t["value"], t["state"]) for t in shown["tasks"]] == [(1, "COMPLETED"), (2, "COMPLETED")]


def _strip_usage(ledger: Path, values: dict[int, str]) -> None:
    """The ledger as a console closed early leaves it: finals written without usage ("none") or without
    the peak ("no-rss", a cancelled task's MaxRSS comes later), and no usage line after them."""
    lines = []
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    # what accounting told after the final (when it lagged the end) belongs to the final here
    later = {(raw.get("attempt"), raw.get("value")): raw["usage"] for raw in entries if raw.get("type") == "usage"}
    for raw in entries:
        if raw.get("type") == "usage":
            continue
        how = values.get(raw.get("value")) if raw.get("type") == "final" else None
        if how == "none":
            raw["usage"] = None
        elif how == "no-rss":
            told = raw.get("usage") or later.get((raw.get("attempt"), raw.get("value"))) or {}
            raw["usage"] = {**told, "max_rss_bytes": None}
        elif how == "no-request":   # sacct's row just after the end: no ReqMem ("16?"), no Timelimit
            told = raw.get("usage") or later.get((raw.get("attempt"), raw.get("value"))) or {}
            raw["usage"] = {**told, "req_mem_bytes": None, "time_limit_seconds": None}
        lines.append(json.dumps(raw))
    ledger.write_text("".join(line + "\n" for line in lines))


def test_a_single_job_out_of_memory_is_offered_twice_its_request_even_when_accounting_lacked_it(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """A job (no array) ran out of its 60M. Just after its end sacct shows its row without ReqMem and
    Timelimit; the history kept that and never asked again, so status showed no request and
    --mem auto offered 1.5x the peak (2M): less than before, and out of memory again."""
    from backends.records.attempts import ledger_path

    done, _ = submit(test_site, tmp_path, cli_env, "--mem", "60M", "--output-file", "log/one.log",
                     "--", "python3", "-c", HOLD, "300")
    assert done.returncode == 1 and "OUT_OF_MEMORY" in done.stderr, done.stderr
    record = tmp_path / "log" / "q" / "one.submit.json"
    (task,) = status_json(record, cli_env, 1)["tasks"]        # asked for again once the ledger lacks it
    assert (task["state"], task["req_mem_bytes"], task["time_limit_seconds"]) == ("OUT_OF_MEMORY", 60 << 20, 600)
    preview = run_cli("hyperion-jobs", "retry", str(record), "--mem", "auto", "--dry-run", env=cli_env)
    assert "sizes: --mem 120M: 1 task(s) OUT_OF_MEMORY; 2x the request 60M" in preview.stdout, preview.stdout
    # accounting purged or away, the history without the request: the record says what was asked
    _strip_usage(ledger_path(record), {None: "no-request"})
    away = failing_slurm_clients(tmp_path, cli_env)
    preview = run_cli("hyperion-jobs", "retry", str(record), "--mem", "auto", "--dry-run", env=away)
    assert preview.returncode == 0, preview.stderr
    assert "sizes: --mem 120M: 1 task(s) OUT_OF_MEMORY; 2x the request 60M" in preview.stdout, preview.stdout


def test_usage_the_history_lacks_is_asked_for_and_the_console_shows_what_the_cli_shows(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """Three tasks holding 40 MB ended; the history lost what two of them used (a console closed while
    another task ran on, a peak accounting told late). Opening the console asks accounting once, keeps the
    answer in the history and shows the figures `hyperion-jobs usage` prints."""
    import asyncio

    from test_console_fixtures import wait_for

    from backends.records.attempts import ledger_path
    from backends.records.history import load_history
    from hyperion_console.app import make_app

    done, _ = submit(test_site, tmp_path, cli_env, "--array", "JOB=1:3", "--mem", "300M",
                     "--output-file", "log/u.JOB.log", "--", "python3", "-c", HOLD, "40")
    assert done.returncode == 0, done.stderr
    record = tmp_path / "log" / "q" / "u.JOB.submit.json"
    assert len([t for t in status_json(record, cli_env, 3)["tasks"] if t["max_rss_bytes"]]) == 3
    _strip_usage(ledger_path(record), {1: "none", 2: "no-rss"})
    history = load_history(record)
    assert [bool(history.final(t).usage and history.final(t).usage.get("max_rss_bytes"))
            for t in history.latest_tasks()] == [False, False, True]
    # a peak still missing an hour after the end is not asked for again and again
    assert [task.value for task, _ in usage_missing(history, now=time.time() + 7200).values()] == [1]
    # every state is in the history: Slurm away, or a history the user may not write, still shows them
    away = run_cli("hyperion-jobs", "status", str(record), env=failing_slurm_clients(tmp_path, cli_env))
    assert away.returncode == 0 and away.stdout.count("COMPLETED") >= 3, away.stderr
    if can_drop_rights():
        ledger_path(record).chmod(0o444)
        shown = run_cli(*without_rights("hyperion-jobs", "status", str(record)), env=cli_env)
        ledger_path(record).chmod(0o644)
        assert shown.returncode == 0 and shown.stdout.count("COMPLETED") >= 3, shown.stderr

    async def scenario() -> str:
        app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("u")
            line = app.jobs_screen.query_one("#usage-line-1")
            await wait_for(pilot, lambda: "(3 of 3)" in str(line.content), 20)
            return str(line.content)

    shown = asyncio.run(scenario())
    history = load_history(record)
    assert all(history.final(t).usage.get("max_rss_bytes") for t in history.latest_tasks())
    cli = run_cli("hyperion-jobs", "usage", str(record), env=cli_env)
    assert cli.returncode == 0, cli.stderr
    median = shown.split("med ")[1].split(" ")[0]
    assert f"median {median}" in cli.stdout and "(3 of 3 tasks)" in cli.stdout, (shown, cli.stdout)


def test_the_console_watching_a_run_to_its_end_shows_the_usage_accounting_tells_after_it(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """A researcher watches an array in the console and cancels it; then presses u: the usage columns
    said '-' (a cancelled task's MaxRSS comes on its batch step after the end, when the watch had
    stopped) until the record was opened again, while `hyperion-jobs status` showed the figures."""
    import asyncio

    from test_console_fixtures import wait_for

    from hyperion_console.app import make_app

    hold = "import sys, time; x = b'\\1' * (int(sys.argv[1]) << 20); print('holding', flush=True); time.sleep(120)"
    proc = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "JOB=1:2",
                             "--mem", "300M", "--output-file", "log/w.JOB.log", "--", "python3", "-c", hold, "40"],
                            cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "w.JOB.submit.json"
    logs = [tmp_path / "log" / f"w.{value}.log" for value in (1, 2)]
    try:
        deadline = time.monotonic() + 60
        while not all(log.exists() and "holding" in log.read_text() for log in logs) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)                                   # a sample or two of accounting

        async def scenario() -> str:
            app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
            async with app.run_test(size=(100, 30)) as pilot:
                summary = app.jobs_screen.query_one("#jobs-summary")
                await wait_for(pilot, lambda: "RUNNING 2" in str(summary.content), 30)
                subprocess.run(["scancel", load_record(record).jobs[0].job_id], check=True)
                await wait_for(pilot, lambda: str(summary.content) == "2 tasks  CANCELLED 2", 60)
                await pilot.press("u")
                line = app.jobs_screen.query_one("#usage-line-1")
                # a busy slurmdbd is late: the console's last ask comes 243 s after the end
                # (USAGE_FOLLOW_UP), just past the 240 s this waited (CI failed on it once)
                await wait_for(pilot, lambda: "(2 of 2)" in str(line.content), 300)
                return str(line.content)

        line = asyncio.run(scenario())
    finally:
        subprocess.run(["scancel", load_record(record).jobs[0].job_id]) if record.exists() else None
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    median = line.split("med ")[1].split(" ")[0]
    cli = run_cli("hyperion-jobs", "usage", str(record), env=cli_env)
    assert f"median {median}" in cli.stdout and "(2 of 2 tasks)" in cli.stdout, (line, cli.stdout)


def peaks_untold(stop):
    """The real squeue and sacct (killed by `stop`), sacct's MaxRSS column blank: a console that
    asked before accounting had the peak, which another writer then got first."""
    from backends.watch.slurm.accounting import CommandResult, stoppable

    real = stoppable(stop)

    def run(argv) -> CommandResult:
        done = real(argv)
        if argv[0] != "sacct":
            return done
        column = argv[argv.index("-o") + 1].split(",").index("MaxRSS")
        lines = [line.split("|") for line in done.stdout.splitlines()]
        for fields in lines:
            if len(fields) > column:
                fields[column] = ""
        return CommandResult(done.returncode, "".join("|".join(f) + "\n" for f in lines), done.stderr)
    return run


def test_usage_another_terminal_recorded_first_reaches_the_console_watching_the_run(slurm_cluster, tmp_path,
                                                                                      cli_env) -> None:
    """A researcher watches an array in the console, cancels it and runs `hyperion-jobs usage` in another
    terminal, which puts the peaks in the history first (hyperion-submit's own wait may too). The
    console's asks after the end found nothing missing and stopped: its usage columns said '-' for
    ever (CI failed on it). Here the console's own sacct never tells the peak, as when it asked before
    accounting had it: what the console shows can only come from the history."""
    import threading

    from conftest import submit_real_array

    from backends.records.history import load_history
    from hyperion_console.watch import watch_slurm

    hold = "import sys, time; x = b'\\1' * (int(sys.argv[1]) << 20); print('holding', flush=True); time.sleep(120)"
    record = submit_real_array(tmp_path / "log" / "o.JOB.log", "JOB=1:2", "python3", "-c", hold, "40", cwd=tmp_path)
    job = record.jobs[0].job_id
    stop = threading.Event()
    without_peaks = peaks_untold(stop)
    shown: dict = {}
    ended = threading.Event()

    def deliver(seen) -> None:
        shown.update(((row.job_id, row.task_id), row) for row in seen.rows)
        if seen.all_terminal:
            ended.set()

    watching = threading.Thread(target=watch_slurm, args=(load_history(record.path), deliver, stop),
                                kwargs={"runner": without_peaks}, daemon=True)
    try:
        deadline = time.monotonic() + 60
        logs = [tmp_path / "log" / f"o.{value}.log" for value in (1, 2)]
        while not all(log.exists() and "holding" in log.read_text() for log in logs) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)                                   # a sample or two of accounting
        watching.start()
        subprocess.run(["scancel", job], check=True)
        assert ended.wait(60), shown
        assert not any(row.usage and row.usage.max_rss_bytes for row in shown.values()), shown
        told = run_cli("hyperion-jobs", "usage", record.path, env=cli_env)
        deadline = time.monotonic() + 60
        while "(2 of 2 tasks)" not in told.stdout and time.monotonic() < deadline:   # accounting lags
            time.sleep(1)
            told = run_cli("hyperion-jobs", "usage", record.path, env=cli_env)
        assert "(2 of 2 tasks)" in told.stdout, told.stdout + told.stderr
        deadline = time.monotonic() + 40                # the console's asks come 3, 13, 33 s after the end
        while not all(row.usage and row.usage.max_rss_bytes for row in shown.values()) \
                and time.monotonic() < deadline:
            time.sleep(0.5)
        peaks = sorted(row.usage.max_rss_bytes for row in shown.values() if row.usage and row.usage.max_rss_bytes)
    finally:
        stop.set()
        subprocess.run(["scancel", job])
    watching.join(10)
    recorded = load_history(record.path)
    assert peaks == sorted(recorded.final(t).usage["max_rss_bytes"] for t in recorded.latest_tasks()), shown
    assert all(peak > 40 * MB for peak in peaks), peaks


def test_a_peak_hyperion_submit_recorded_reaches_the_console_while_the_array_runs(slurm_cluster, tmp_path,
                                                                                  cli_env, monkeypatch) -> None:
    """hyperion-submit waits in one terminal, the console watches in another. Task 1 ended; the wait
    (here `hyperion-jobs usage`, which records as it does) put its peak in the history first. The
    console's asks beside its watch look only for what the history lacks: task 1's peak stayed '-'
    until the whole array ended, hours later for a long one."""
    import threading

    import hyperion_console.watch as watch_module
    from conftest import submit_real_array

    from backends.records.history import load_history
    from backends.states import JobState
    from hyperion_console.watch import watch_slurm

    monkeypatch.setattr(watch_module, "USAGE_BESIDE_WATCH", 2.0)    # its 30 s, shortened
    script = ("import sys, time; x = b'\\1' * (40 << 20); print('holding', flush=True); "
              "time.sleep(3 if sys.argv[1] == '1' else 120)")
    record = submit_real_array(tmp_path / "log" / "p.JOB.log", "JOB=1:2", "python3", "-c", script, "JOB",
                               cwd=tmp_path)
    job = record.jobs[0].job_id
    stop = threading.Event()
    shown: dict = {}

    def deliver(seen) -> None:
        shown.update(((row.job_id, row.task_id), row) for row in seen.rows)

    def first() -> object:
        return shown.get((job, record.tasks[0].array_task_id))

    watching = threading.Thread(target=watch_slurm, args=(load_history(record.path), deliver, stop),
                                kwargs={"runner": peaks_untold(stop)}, daemon=True)
    watching.start()
    try:
        deadline = time.monotonic() + 90
        while not (first() and first().state is JobState.COMPLETED) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert first() and first().state is JobState.COMPLETED, shown
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:        # accounting lags: the other terminal's ask until it tells
            run_cli("hyperion-jobs", "usage", record.path, env=cli_env)
            kept = (load_history(record.path).final(record.tasks[0]) or None)
            if kept and kept.usage and kept.usage.get("max_rss_bytes"):
                break
            time.sleep(1)
        assert kept and kept.usage and kept.usage.get("max_rss_bytes"), kept
        deadline = time.monotonic() + 20
        while not (first().usage and first().usage.max_rss_bytes) and time.monotonic() < deadline:
            time.sleep(0.5)
        second = shown.get((job, record.tasks[1].array_task_id))
    finally:
        stop.set()
        subprocess.run(["scancel", job])
    watching.join(10)
    assert first().usage and first().usage.max_rss_bytes == kept.usage["max_rss_bytes"], (first(), kept)
    assert second is not None and second.state is JobState.RUNNING, second      # while the array still ran


def test_a_pending_task_used_no_time_and_the_heading_names_running_and_pending(slurm_cluster, test_site, tmp_path,
                                                                               cli_env) -> None:
    """Mid-run, one task ended, one running, one waiting for it (--max-jobs-run 1): `status` showed the
    pending task's TIME USED as 00:00:00/00:01:00 beside an ELAPSED of '-', and `usage` headed its
    summary '(1 ended; accounting measured 2)', the running and pending tasks only implied. The
    console's usage columns and heading say what the CLI says."""
    import asyncio
    import re

    from test_console_fixtures import table_column, wait_for

    from hyperion_console.app import make_app

    proc = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "JOB=1:3",
                             "--max-jobs-run", "1", "--time", "00:01:00", "--output-file", "log/p.JOB.log",
                             "--", "bash", "-c", 'sleep $(( $0 == 1 ? 1 : 40 ))', "JOB"],
                            cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "p.JOB.submit.json"
    # how many tasks accounting measured depends on when the running task's first sample came
    heading = re.compile(r"usage of [12] of 3 task\(s\) \(1 ended, 1 running, 1 pending; accounting measured [12]\)")
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "log" / "p.2.log").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        deadline = time.monotonic() + 60
        while True:         # accounting tells what the ended task used a moment after its end
            status = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
            assert status.returncode == 0, status.stderr
            rows = [re.split(r"  +", line) for line in status.stdout.splitlines()]
            if "TIME USED/LIMIT" in rows[0] or time.monotonic() > deadline:
                break
            time.sleep(1)
        header = rows[0]
        cells = {row[2].split()[0]: dict(zip(header, row)) for row in rows[1:4]}
        assert cells["PENDING"]["ELAPSED"] == "-" and cells["PENDING"]["TIME USED/LIMIT"] == "-/00:01:00", \
            status.stdout
        assert re.fullmatch(r"00:00:\d\d/00:01:00", cells["RUNNING"]["TIME USED/LIMIT"]), status.stdout
        usage = run_cli("hyperion-jobs", "usage", str(record), env=cli_env)
        assert usage.returncode == 0, usage.stderr
        assert usage.stdout.startswith(f"{record}: ") and heading.fullmatch(
            usage.stdout.splitlines()[0][len(f"{record}: "):]), usage.stdout

        async def scenario() -> tuple[list[str], str]:
            app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
            async with app.run_test(size=(100, 30)) as pilot:
                table = app.jobs_screen.query_one("#tasks")
                await wait_for(pilot, lambda: table_column(table, "state") == ["COMPLETED", "RUNNING", "PENDING"],
                               30)
                await pilot.press("u")
                shown = app.jobs_screen.query_one("#usage-heading")
                await wait_for(pilot, lambda: heading.fullmatch(str(shown.content)) is not None, 30)
                await wait_for(pilot, lambda: table_column(table, "time")[2:] == ["-/60s"], 30)
                return table_column(table, "time"), str(shown.content)

        times, _ = asyncio.run(scenario())
        assert re.fullmatch(r"\d+s/60s", times[1]), times
    finally:
        if record.exists():
            subprocess.run(["scancel", load_record(record).jobs[0].job_id])
        proc.communicate(timeout=120)


def test_usage_of_a_job_id_is_that_jobs_tasks_not_the_records_newest_runs(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """After a retry, `usage JOB` of the first attempt summed up the retry's runs: 'over 90% of --mem:
    none' of a job whose task ran out of memory, and the retry's one-task job counted 3 tasks."""
    script = "import sys, time; x = b'\\1' * ((400 if sys.argv[1] == '2' else 20) << 20); time.sleep(3)"
    done, (first,) = submit(test_site, tmp_path, cli_env, "--mem", "100M", "--array", "T=1:3",
                            "--output-file", "log/use.T.log", "--", "python", "-c", script, "T")
    assert done.returncode == 1 and "OUT_OF_MEMORY" in done.stderr, done.stderr
    record = tmp_path / "log" / "q" / "use.T.submit.json"
    status_json(record, cli_env, 3)
    retried = run_cli("hyperion-jobs", "retry", str(record), "--mem", "600M", "--yes", cwd=tmp_path,
                      env=cli_env, timeout=300)
    assert retried.returncode == 0, retried.stderr
    second = load_record(record).jobs[0].job_id
    status_json(record, cli_env, 3)

    of_first = run_cli("hyperion-jobs", "usage", first, env=cli_env, cwd=tmp_path)
    assert of_first.returncode == 0, of_first.stderr
    assert of_first.stdout.startswith(f"job {first} of {record}: usage of 3 of 3 task(s)"), of_first.stdout
    assert f"over 90% of --mem: {first}_2 (reached it)" in of_first.stdout, of_first.stdout
    of_second = json.loads(run_cli("hyperion-jobs", "usage", second, "--json", env=cli_env, cwd=tmp_path).stdout)
    assert [(t["job_id"], t["value"]) for t in of_second["tasks"]] == [(second, 2)]
    assert of_second["summary"]["tasks"] == 1 and of_second["summary"]["max_rss_bytes"]["max"] >= 300 * MB
    # the record is still its newest runs: value 2 from the retry, which fit
    of_record = run_cli("hyperion-jobs", "usage", str(record), env=cli_env)
    assert "usage of 3 of 3 task(s)" in of_record.stdout and "over 90% of --mem: none" in of_record.stdout
    # Slurm down: the job's ends and usage are all in the ledger, so they are shown as recorded
    # (it failed: `usage JOB` asked Slurm whatever the ledger held)
    from test_jobs_slurm_down import slurm_down

    offline = run_cli("hyperion-jobs", "usage", first, env=slurm_down(tmp_path, cli_env), cwd=tmp_path)
    assert offline.returncode == 0, offline.stderr
    assert offline.stdout == of_first.stdout
    assert offline.stderr.endswith("; shown as last recorded\n"), offline.stderr


def test_a_retry_runs_tasks_with_the_memory_they_had_not_an_other_retrys(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """A speech engineer's day: the OOM tasks retried with --mem 600M, then the failed one retried on
    its own. That second retry inherited the first's 600M (the newest attempt's options): a task that
    had 100M and did not need more asked Slurm for six times that, and `history` did not say it."""
    script = ("import sys, time; n = int(sys.argv[1]); x = b'\\1' * ((400 if n == 1 else 20) << 20); "
              "time.sleep(3); sys.exit(3 if n == 2 else 0)")
    done, _ = submit(test_site, tmp_path, cli_env, "--mem", "100M", "--array", "T=1:3",
                     "--output-file", "log/day.T.log", "--", "python", "-c", script, "T")
    assert done.returncode == 1 and "OUT_OF_MEMORY" in done.stderr and "FAILED" in done.stderr, done.stderr
    record = tmp_path / "log" / "q" / "day.T.submit.json"
    status_json(record, cli_env, 3)
    oom = run_cli("hyperion-jobs", "retry", str(record), "--state", "OUT_OF_MEMORY", "--mem", "600M", "--yes",
                  cwd=tmp_path, env=cli_env, timeout=300)
    assert oom.returncode == 0, oom.stderr

    preview = run_cli("hyperion-jobs", "retry", str(record), "--dry-run", env=cli_env)
    assert "values: 2\n" in preview.stdout and " --mem 100M " in preview.stdout, preview.stdout
    again = run_cli("hyperion-jobs", "retry", str(record), "--yes", cwd=tmp_path, env=cli_env, timeout=300)
    assert again.returncode == 1 and "T=2" in again.stderr, again.stderr     # the program fails again
    tasks = {t["value"]: t for t in status_json(record, cli_env, 3)["tasks"]}
    assert (tasks[1]["attempt"], tasks[1]["req_mem_bytes"]) == (2, 600 * 1024 ** 2)
    assert (tasks[2]["attempt"], tasks[2]["req_mem_bytes"]) == (3, 100 * 1024 ** 2), tasks[2]
    history = json.loads(run_cli("hyperion-jobs", "history", str(record), "--json", env=cli_env).stdout)
    assert [a["overrides"].get("mem") for a in history["attempts"]] == [None, "600M", "100M"]


T_PY = """import sys, time
from sharding.store import Checkpoint, RunConfig
checkpoint, shard = sys.argv[2], int(sys.argv[3])      # t.py --checkpoint ckpt S
run = RunConfig(1, 2)
store = Checkpoint(checkpoint)
store.ensure_run(run)
x = b'\\1' * ((150 if shard == 1 else 10) << 20)
time.sleep(2)
store.write_completion(shard, run)
"""


def test_a_sharded_run_whose_shard_ran_out_of_memory_is_resubmitted_with_mem_auto_until_complete(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """A user's session: a checkpoint recipe of 2 shards, shard 1 needs 150 MB under the site's 100M.
    `hyperion-checkpoint retry --submit` had no --mem: it reran the shard with 100M, ran out again and
    named itself as the next step, a loop. Now the dry run says the shard ran out of memory, the
    rerun line asks for --mem auto, and pasted, it completes the checkpoint."""
    import shlex

    (tmp_path / "t.py").write_text(T_PY)
    done, _ = submit(test_site, tmp_path, cli_env, "--mem", "100M", "--array", "S=1:2",
                     "--output-file", "log/t.S.log", "--", "python", "t.py", "--checkpoint", "ckpt", "S")
    record = tmp_path / "log" / "q" / "t.S.submit.json"
    assert done.returncode == 1 and "OUT_OF_MEMORY" in done.stderr, done.stderr
    assert done.stderr.rstrip().endswith(f"rerun only those with: hyperion-jobs retry {record} --mem auto"), done.stderr
    status_json(record, cli_env, 2)      # accounting has the shards' usage

    plan = run_cli("hyperion-checkpoint", "retry", "ckpt", "--submit", "log/q/t.S.submit.json", "--dry-run",
                   cwd=tmp_path, env=cli_env)
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.splitlines()[0].startswith("would resubmit 1 of 2 shard(s) (1) in "), plan.stdout
    assert plan.stdout.splitlines()[1].startswith(
        "  sizes: as before; --mem auto would ask for --mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request 100M"), \
        plan.stdout

    # as before (the user's first try): out of memory again, and the next step asks for more memory
    again = run_cli("hyperion-checkpoint", "retry", "ckpt", "--submit", "log/q/t.S.submit.json", cwd=tmp_path,
                    env=cli_env, timeout=300)
    assert again.returncode == 1 and "OUT_OF_MEMORY" in again.stderr, again.stderr
    assert "  sizes: as before; --mem auto would ask for --mem 200M" in again.stderr, again.stderr
    command = f"hyperion-checkpoint retry {tmp_path / 'ckpt'} --submit {record} --mem auto"
    assert again.stderr.rstrip().endswith(f"rerun only those with: {command}"), again.stderr
    status_json(record, cli_env, 2)
    watched = run_cli("hyperion-jobs", "watch", str(record), env=cli_env)     # told later: the same command
    assert watched.stdout.rstrip().endswith(f"rerun only those with: {command}"), watched.stdout

    pasted = run_cli(*shlex.split(command), cwd=tmp_path, env=cli_env, timeout=300)
    assert pasted.returncode == 0, pasted.stderr
    assert "  sizes: --mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request 100M" in pasted.stderr, pasted.stderr
    assert " --mem 200M " in pasted.stderr.splitlines()[0], pasted.stderr
    assert run_cli("hyperion-checkpoint", "retry", "ckpt", cwd=tmp_path, env=cli_env).stdout == ""
    shown = run_cli("hyperion-checkpoint", "show", "ckpt", "--json", cwd=tmp_path, env=cli_env)
    assert json.loads(shown.stdout)["counts"]["complete"] == 2, shown.stdout


def test_a_task_that_ended_after_a_look_at_its_waiting_row_shows_the_time_it_ran(slurm_cluster, test_site,
                                                                                  tmp_path, cli_env) -> None:
    """A morning after: `scancel J_4` of a waiting task made the wait ask sacct, whose pending range row
    gave tasks 2-3 an elapsed 0; task 2 then ran 4 s and its end went into the ledger with that 0, and
    the wait was hung up before its last sacct. `status` showed `ELAPSED 0:00:04` beside `TIME USED
    00:00:00/00:10:00` and CPU `-` (after an hour for good: a figure the ledger holds is not asked again)."""
    import re
    import signal

    proc = subprocess.Popen(["hyperion-submit", "slurm", "--cfg", str(test_site), "--array", "JOB=1:4",
                             "--max-jobs-run", "1", "--output-file", "log/s.JOB.log", "--", "sleep", "4"],
                            cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    record = tmp_path / "log" / "q" / "s.JOB.submit.json"
    ledger = tmp_path / "log" / "q" / "s.JOB.attempts.jsonl"
    job = None
    try:
        deadline = time.monotonic() + 60
        job = first_job_once_recorded(record)
        subprocess.run(["scancel", f"{job}_4"], check=True)
        ended = '"state":"COMPLETED","task_id":2,'
        while ended not in (ledger.read_text() if ledger.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ended in ledger.read_text()
        proc.send_signal(signal.SIGHUP)                 # the ssh session dropped: no last sacct
        proc.communicate(timeout=60)
        status = run_cli("hyperion-jobs", "status", str(record), env=cli_env)
        assert status.returncode == 0, status.stderr
        rows = [re.split(r"  +", line) for line in status.stdout.splitlines()]
        cells = [dict(zip(rows[0], row)) for row in rows[1:5]]
        second = cells[1]
        assert second["STATE"] == "COMPLETED", status.stdout
        assert second["TIME USED/LIMIT"] == f"0{second['ELAPSED']}/00:10:00", status.stdout
    finally:
        if job is not None:
            subprocess.run(["scancel", job])
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)


WORKER_PY = """import subprocess, sys
from sharding.store import Checkpoint, RunConfig
checkpoint, shard = sys.argv[2], int(sys.argv[3])      # w.py --checkpoint ckpt S
run = RunConfig(1, 3)
store = Checkpoint(checkpoint)
store.ensure_run(run)
if shard == 1:      # a worker holding 180 MB under --mem 100M: the cgroup kills it, the shard carries on
    worker = subprocess.run([sys.executable, "-c", "import time; x = b'\\\\1' * (180 << 20); time.sleep(3)"])
    print(f"worker ended {worker.returncode}", flush=True)
if shard == 3:      # the program itself holds 180 MB: the kill ends it
    x = b'\\1' * (180 << 20)
store.write_completion(shard, run)
print(f"shard {shard} complete", flush=True)
"""


def test_a_shard_whose_worker_alone_was_killed_for_memory_is_told_as_the_program_ending_not_slurm(
        enforced_memory, test_site, tmp_path, cli_env) -> None:
    """A research engineer's recipe: shard 1's worker process ran past --mem 100M and the cgroup killed
    it; the shard carried on, wrote its completion manifest and its log's `# Ended (code 0)`. Slurm calls
    the task OUT_OF_MEMORY (sacct's ExitCode 0:125, as for a program the kill ended), and `logs` said
    `ended OUT_OF_MEMORY (Slurm ended it, not the program)`, the console `ended OUT_OF_MEMORY by Slurm`:
    untrue of a program that ran to its end. Shard 3, whose program the kill ended, keeps those words."""
    import asyncio

    from test_console_fixtures import wait_for

    from hyperion_console.app import make_app

    (tmp_path / "w.py").write_text(WORKER_PY)
    done, jobs = submit(test_site, tmp_path, cli_env, "--mem", "100M", "--array", "S=1:3",
                        "--output-file", "log/w.S.log", "--", "python3", "w.py", "--checkpoint", "ckpt", "S")
    record = tmp_path / "log" / "q" / "w.S.submit.json"
    assert done.returncode == 1 and "S=1 " in done.stderr and "S=3 " in done.stderr, done.stderr
    assert "out-of-memory 2" in done.stderr, done.stderr
    # Slurm's state stays; the rerun line still asks for more memory (a process was killed for want of it)
    assert done.stderr.rstrip().endswith(f"rerun only those with: hyperion-jobs retry {record} --mem auto"), done.stderr
    # sacct tells the two alike: its exit code is no help, the log's footer is
    rows = {}
    for _ in range(60):
        rows = {task: sacct for task in (1, 3)
                if (sacct := subprocess.run(["sacct", "-j", f"{jobs[0]}_{task}", "-X", "-P", "-n", "-o", "State,ExitCode"],
                                            capture_output=True, text=True, check=False).stdout.strip())}
        if len(rows) == 2:
            break
        time.sleep(1)
    assert rows == {1: "OUT_OF_MEMORY|0:125", 3: "OUT_OF_MEMORY|0:125"}, rows
    log = (tmp_path / "log" / "w.1.log").read_text()
    assert "worker ended -9" in log and "shard 1 complete" in log, log
    assert log.splitlines()[-1].startswith("# Ended (code 0) at "), log
    assert (tmp_path / "log" / "w.3.log").read_text().splitlines()[-1].startswith("# Ended (code 137) at ")

    name = "log/q/w.S.submit.json"
    shown = run_cli("hyperion-jobs", "logs", f"{name}:1", cwd=tmp_path, env=cli_env)
    assert shown.returncode == 0 and "shard 1 complete" in shown.stdout, shown.stderr
    assert shown.stderr == (f"hyperion-jobs: {name}:1 ended OUT_OF_MEMORY: the program ended (code 0); a process "
                            f"of it was OOM-killed; Slurm's reason: hyperion-jobs logs {name}:1 --err\n"), shown.stderr
    killed = run_cli("hyperion-jobs", "logs", f"{name}:3", cwd=tmp_path, env=cli_env)
    assert killed.stderr == (f"hyperion-jobs: {name}:3 ended OUT_OF_MEMORY (Slurm ended it, not the program); "
                             f"Slurm's reason: hyperion-jobs logs {name}:3 --err\n"), killed.stderr
    # the checkpoint's own retry reruns shard 3 alone: shard 1 is complete
    assert run_cli("hyperion-checkpoint", "retry", "ckpt", cwd=tmp_path, env=cli_env).stdout.startswith("3 ")

    async def scenario() -> list[str]:
        app = make_app(cfg_dir=REPO / "conf", record=record, search_dirs=[tmp_path])
        async with app.run_test(size=(100, 30)) as pilot:
            jobs_screen = app.jobs_screen
            title = jobs_screen.query_one("#log-title")
            await wait_for(pilot, lambda: jobs_screen.selected_task() is not None, 20)
            jobs_screen.query_one("#tasks").focus()
            titles = []
            for key, ended in (("home", "ended OUT_OF_MEMORY: "), ("down", "ended COMPLETED"),
                               ("down", "ended OUT_OF_MEMORY by")):
                await pilot.press(key)
                await wait_for(pilot, lambda ended=ended: ended in str(title.content), 20)
                titles.append(str(title.content))
            await pilot.press("up", "up")        # back to shard 1: its words come again, never shard 2's code
            await wait_for(pilot, lambda: "w.1.log" in str(title.content) and "(code 0)" in str(title.content), 20)
            return titles

    first, second, third = asyncio.run(scenario())
    assert first.endswith("w.1.log · ended OUT_OF_MEMORY: the program ended (code 0); a process of it was "
                          "OOM-killed (l: its .err)"), first
    assert second.endswith("w.2.log · ended COMPLETED (exit 0)"), second
    assert third.endswith("w.3.log · ended OUT_OF_MEMORY by Slurm (l: its .err)"), third
