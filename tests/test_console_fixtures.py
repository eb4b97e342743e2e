"""Fixture builders for the console tests: a checkpoint and a local record, with fixed times.

Built only through the core's writers (sharding.store, backends.records), so the
console reads them exactly as the CLIs would. Snapshot tests build them under a
fixed directory so the paths shown on screen do not change between runs.
"""
from __future__ import annotations

import json
import os
import shutil
from contextlib import asynccontextmanager
from pathlib import Path

from backends.records.local_results import local_results_path
from backends.records.record import JobRecord, SubmitRecord, TaskRecord, save_record
from sharding.store import Attempt, Checkpoint, RunConfig

FIXED_TIME = 1_790_000_000  # 2026-09-21, any fixed instant will do
FIXED_ROOT = Path("/tmp/hyperion-console-fixtures")


def fresh(root: Path) -> Path:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    return root


def build_checkpoint(root: Path, total: int = 8, complete: tuple[int, ...] = (1, 2, 3, 4, 5, 7),
                     failed: tuple[int, ...] = (6,)) -> Path:
    """Run 1..total; `complete` shards have manifests, `failed` ones a failed-task record."""
    path = root / "checkpoint"
    store = Checkpoint(path)
    run = RunConfig(minimum_shard_index=1, total_shards=total)
    store.ensure_run(run)
    for shard in complete:
        store.write_completion(shard, run)
    for number, shard in enumerate(failed):
        record = store.write_failed(shard, Attempt(job=str(500 + number), array_task=str(shard),
                                                   restart="0"),
                                    {"task_ids": ["p000003"], "error": "InjectedFailure: boom"})
        os.utime(record, (FIXED_TIME, FIXED_TIME))
    return path


def build_local_record(root: Path, results: dict[int, tuple[str, int | None]]) -> Path:
    """A local array record JOB=1..n with per-task results (state, exit code) and logs."""
    log_dir = root / "exp" / "log"
    log_dir.mkdir(parents=True, exist_ok=True)
    values = sorted(results)
    tasks = []
    for value in values:
        log = log_dir / f"task.{value}.log"
        log.write_text(f"# task {value}\nworking on part {value}\ndone with part {value}\n")
        tasks.append(TaskRecord(value=value, job_id="local", array_task_id=None, log=str(log),
                                slurm_out=None, slurm_err=None))
    output = str(log_dir / "task.JOB.log")
    record_file = log_dir / "q" / "task.JOB.submit.json"
    record = SubmitRecord(
        path=str(record_file), backend="local",
        argv=("hyperion-submit", "local", "--cfg", "conf/submit_test_cluster.yaml", "--array",
              f"JOB={values[0]}:{values[-1]}", "--output-file", output, "--", "true"),
        cfg="conf/submit_test_cluster.yaml", options={"output_file": output}, script=None,
        array_name="JOB", jobs=(JobRecord("local", 0, None),), tasks=tuple(tasks),
        submitted_at="2026-09-21T12:00:00", cwd=str(root))
    save_record(record)
    start = "2026-09-21T12:00:00"
    local = {"tasks": {str(v): {"state": state, "exit_code": code, "start": start,
                                "end": "2026-09-21T12:00:07" if state != "RUNNING" else None}
                       for v, (state, code) in results.items()}}
    local_results_path(record_file).write_text(json.dumps(local))
    return record_file


def test_fixtures_read_back_through_the_core(tmp_path: Path) -> None:
    from backends.records.record import load_record
    from backends.watch.rows import local_rows
    from sharding.coverage import coverage

    cov = coverage(build_checkpoint(tmp_path))
    assert cov.counts() == {"complete": 6, "incomplete": 1, "failed": 1}
    rows = local_rows(load_record(build_local_record(tmp_path, {1: ("COMPLETED", 0), 2: ("FAILED", 3)})))
    assert [r.state_label for r in rows] == ["COMPLETED", "FAILED"]


@asynccontextmanager
async def console_on(record: Path, search_dirs: list[Path], size: tuple[int, int] = (80, 24)):
    """The console opened on `record` (its config from conf/), run headless at `size`: yields
    (app, pilot, seen), `seen` every message the app posts, for `posted`."""
    from hyperion_console.app import make_app

    seen: list = []
    app = make_app(cfg_dir=Path(__file__).resolve().parents[1] / "conf", record=record, search_dirs=search_dirs)
    async with app.run_test(size=size, message_hook=seen.append) as pilot:
        yield app, pilot, seen


async def wait_for(pilot, predicate, timeout: float = 30.0, step: float = 0.1) -> None:
    """Let the app run until `predicate()` holds; fail with what was awaited otherwise."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await pilot.pause(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate.__doc__ or predicate}; "
                         f"screen {pilot.app.screen}, notifications {notifications(pilot.app)}")


async def confirmation(pilot, *selectors: str, timeout: float = 10.0):
    """Wait until a confirmation dialog is on top, composed, with `selectors` in it; return it.
    app.screen is the ConfirmScreen as soon as it is pushed, before its widgets are composed (the
    detail and the buttons by their own containers, in either order), so a test that waited for
    the screen alone, or a pause, and queried them at once could fail under load (NoMatches)."""
    from hyperion_console.screens.confirm import ConfirmScreen

    app = pilot.app

    def composed() -> bool:
        return (isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted
                and all(app.screen.query(selector) for selector in selectors))

    composed.__doc__ = f"the confirmation on top, composed, with {', '.join(selectors) or 'its widgets'}"
    await wait_for(pilot, composed, timeout)
    return app.screen


async def checkpoint_read(pilot, timeout: float = 10.0) -> None:
    """Wait until the Checkpoint screen shows a read of its checkpoint whole: its "reading the
    checkpoint…" line gone, the run (or why it cannot be read) on the Coverage tab. The read runs in
    a worker thread, so a test asserting on it right after a key or a pause would race it."""
    screen = pilot.app.checkpoint_screen

    def shown() -> bool:
        """the Checkpoint screen showing a finished read"""
        reading = screen.query("#ckpt-reading")
        return (screen.is_mounted and not (reading and reading.first().display)
                and str(screen.query_one("#ckpt-run").content) != "")

    await wait_for(pilot, shown, timeout)
    await pilot.pause()          # and laid out: a map that grew pushes what is below it down


def one_read(app, data: str) -> None:
    """Post what the terminal driver posts for one read of `data` (a fast typist, tmux send-keys,
    an expect script): every key queued before the first is handled. Pilot.press cannot: it lets
    the app settle after each key."""
    from textual._xterm_parser import XTermParser

    for event in XTermParser().feed(data):
        app.post_message(event)


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


def table_column(table, column: str) -> list[str]:
    """The plain text of one column, top to bottom (a DataTable, or the console's TaskTable)."""
    if hasattr(table, "column_text"):   # a column the table does not show (yet) reads as empty
        return table.column_text(column) if column in {c.key for c in table.columns} else []
    return [str(table.get_cell(row.key, column)) for row in table.ordered_rows]   # as displayed


def text_of(static) -> str:
    """What a Static shows, as plain text (renders rich renderables like the coverage map)."""
    import io

    from rich.console import Console

    content = static.content
    if isinstance(content, str) or hasattr(content, "plain"):
        return str(content)
    console = Console(width=max(static.size.width, 40), file=io.StringIO(), record=True)
    console.print(content)
    return console.export_text()


def posted(seen: list, kind: type) -> list:
    """Messages of one kind from a run_test message_hook, once each (bubbling re-posts them)."""
    out, ids = [], set()
    for message in seen:
        if isinstance(message, kind) and id(message) not in ids:
            ids.add(id(message))
            out.append(message)
    return out


class Frames:
    """Counts the frames the app draws (headless: the compositor's update is still made); the idle
    tests and bench/bench_console.py count with it."""

    def __init__(self, app) -> None:
        self.count = 0
        original = app._display

        def display(screen, renderable) -> None:
            if renderable is not None:
                self.count += 1
            original(screen, renderable)

        app._display = display

    async def after(self, start_count: int, timeout: float = 30.0) -> float:
        """Wait for a frame after `start_count`; the time it arrived."""
        import asyncio
        import time
        deadline = time.perf_counter() + timeout
        while self.count <= start_count:
            if time.perf_counter() > deadline:
                raise TimeoutError("no frame rendered")
            await asyncio.sleep(0)
        return time.perf_counter()


def rendered(widget) -> list[str]:
    """The lines a widget draws on screen now (its own render, as the compositor gets it)."""
    strips = widget.render_lines(widget.size.region)
    return ["".join(segment.text for segment in strip) for strip in strips]


def screen_lines(app) -> list[str]:
    """The whole frame as plain text, one string per terminal line, as the user sees it."""
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


def slurm_like_record(root: Path, n: int, job: str = "4242", log_dir: Path | None = None):
    """A Slurm record of `n` tasks (values 1..n) that is never submitted: states come from the test."""
    from backends.records.record import JobRecord, SubmitRecord, TaskRecord

    log_dir = log_dir or root / "exp" / "log"
    tasks = tuple(TaskRecord(value=i, job_id=job, array_task_id=i, log=str(log_dir / f"t.{i}.log"),
                             slurm_out=None, slurm_err=None) for i in range(1, n + 1))
    return SubmitRecord(path=str(log_dir / "q" / "t.JOB.submit.json"), backend="slurm",
                        argv=("hyperion-submit",), cfg="conf/submit_test_cluster.yaml", options={},
                        script=None, array_name="JOB", jobs=(JobRecord(job, 0, f"1-{n}"),), tasks=tasks,
                        submitted_at="2026-09-21T12:00:00", cwd=str(root))


FIXED_ISO = "2026-09-21T12:00:00+00:00"
RETRY_ISO = "2026-09-21T12:30:00+00:00"
# A history's first attempt: every value COMPLETED but these (state, exit code, last log line).
FIRST_FAILURES = {3: ("FAILED", 3, "ValueError: corrupt input file"),
                  5: ("FAILED", 3, "ValueError: corrupt input file"),
                  6: ("OUT_OF_MEMORY", 0, "loading 2.1G of features")}


def ended_just_now(record: Path) -> None:
    """Move every recorded end of `record` to now, with all usage known: a run that ended lately,
    whose jobs a look asks squeue about again (Slurm may requeue them), but no sacct."""
    from datetime import datetime, timezone

    ledger = next(record.parent.glob("*.attempts.jsonl"))
    just_now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    used = ('{"alloc_cpus":1,"cpu_seconds":0.03,"elapsed_seconds":1.0,"max_rss_bytes":14209024,'
            '"req_mem_bytes":104857600,"time_limit_seconds":360.0}')
    ledger.write_text(ledger.read_text().replace(FIXED_ISO, just_now).replace('"usage":null', f'"usage":{used}'))


def _write_log(path: Path, value: int, attempt: int, last: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# Started at {FIXED_ISO} on node01", f"attempt {attempt}: working on part {value}"]
    lines += [last] if last else [f"part {value} done"]
    path.write_text("\n".join(lines) + "\n")


def build_history(root: Path, cfg: Path, n: int = 8, failures: dict | None = None,
                  retried: dict | None = None, job: str = "4242", retry_job: str = "4243",
                  unfinished: tuple[int, ...] = (), changed: dict | None = None) -> Path:
    """A Slurm submission of JOB=1..n (job `job`) with the final states of its tasks in the ledger,
    but the `unfinished` values, and, when `retried` ({value: (state, exit code)}) is given, a
    retry of those values with --mem 300M as attempt 2 (job `retry_job`): attempt 1's logs of
    them moved aside as the core does. Times are fixed; with every task final no Slurm is asked."""
    from dataclasses import replace

    from backends.records.attempts import FinalState, MovedFile, NewAttempt, append_entries, attempt_dir
    from backends.records.history import commit_attempt, load_history
    from backends.retry import RetryRequest, plan_retry
    from backends.submit.commandline import parse_submit_argv
    from backends.submit.plan import build_plan
    from backends.submit.slurm.sbatch import make_record
    from backends.watch.rows import history_rows

    failures = FIRST_FAILURES if failures is None else failures
    log_dir = root / "exp" / "log"
    site, options = parse_submit_argv([
        "slurm", "--cfg", str(cfg), "--array", f"JOB=1:{n}", "--mem", "100M", "--time", "00:06:00",
        "--output-file", str(log_dir / "extract.JOB.log"), "--", "python3", "extract.py", "--part", "JOB"])
    plan = build_plan(site, options)
    first = replace(make_record(plan, [(plan.windows[0], job)], NewAttempt(1)),
                    submitted_at=FIXED_ISO, cwd=str(root))
    commit_attempt(first, NewAttempt(1))
    finals = []
    for task in first.tasks:
        state, code, last = failures.get(task.value, ("COMPLETED", 0, None))
        _write_log(Path(task.log), task.value, 1, last)
        if task.value in unfinished:
            continue
        finals.append(FinalState(1, task.value, job, task.array_task_id, state, code, None,
                                 30.0 + task.value, "node01", 0, time=FIXED_ISO))
    append_entries(first.path, finals)
    if not retried:
        return Path(first.path)
    history = load_history(first.path)
    retry = plan_retry(history, history_rows(history, {}), RetryRequest(values=tuple(sorted(retried)),
                                                                        mem="300M"))
    moved = []
    for task in first.tasks:
        if task.value in retried:
            target = attempt_dir(first.path, 1) / Path(task.log).name
            Path(task.log).rename(target)
            moved.append(MovedFile(1, task.value, "log", task.log, str(target)))
    append_entries(first.path, moved)
    new = NewAttempt(2, "retry", changed if changed is not None else {"mem": "300M"})
    second = replace(make_record(retry.plan, [(w, retry_job) for w in retry.plan.windows], new),
                     submitted_at=RETRY_ISO, cwd=str(root))
    commit_attempt(second, new)
    finals = []
    for task in second.tasks:
        state, code = retried[task.value]
        _write_log(Path(task.log), task.value, 2, None if state == "COMPLETED" else "RuntimeError: again")
        finals.append(FinalState(2, task.value, retry_job, task.array_task_id, state, code, None,
                                 40.0, "node02", 0, time=RETRY_ISO))
    append_entries(second.path, finals)
    return Path(second.path)
