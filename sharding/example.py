"""``hyperion-shard-example``: a small sharded JSONL pipeline that uses the checkpoint layout.

Run: ``hyperion-shard-example --input DIR --output DIR --checkpoint DIR
[--files-per-partition N] [--shard-index I --total-shards T --minimum-shard-index M]
[--fail-record ID [--fail-once]]``.

It lists ``DIR/*.jsonl`` sorted, groups N files per source task (ids ``p000000``...),
keeps the tasks of the active shard (flags, else HYPERION_ARRAY_*,
NEMO_CURATOR_SLURM_ARRAY_*, SLURM_ARRAY_TASK_ID/COUNT) and writes one output file
per task, ``<output>/<task_id>.jsonl`` (rewritten atomically, so a retry
overwrites rather than duplicates). Each output record is the input record plus
``shard``, ``task_id`` and ``sha256`` (of the input record's canonical JSON).

Failure injection: a record whose ``id`` equals ``--fail-record`` (or the
environment variable HYPERION_EXAMPLE_FAIL_ID) makes its task fail. The other
tasks still run; the shard then gets a failed-task record (attempt-scoped) and
no completion manifest, and the program exits 1. With ``--fail-once`` (or
HYPERION_EXAMPLE_FAIL_ONCE=1) the first failure of that record leaves the marker
``<checkpoint>/.hyperion_example/failed_once_<ID>`` and later attempts process
the record normally: a retry succeeds without changing the command.

``hyperion-shard-example make-input DIR --files N --records M`` writes demo input.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from backends.errors import FieldError, check_working_dir, discard_output
from backends.printable import printable
from sharding.arrayenv import ArrayConfig, resolve
from sharding.assign import select
from sharding.errors import ShardingError
from sharding.listing import SourceTask, list_sources
from sharding.store import Attempt, Checkpoint, RunConfig, compact_json, write_atomically
from sharding.usage import OneLineParser, fail

PROG = "hyperion-shard-example"
FAIL_ENV = "HYPERION_EXAMPLE_FAIL_ID"
FAIL_ONCE_ENV = "HYPERION_EXAMPLE_FAIL_ONCE"
MARKER_NAME_BYTES = 200


class InjectedFailure(RuntimeError):
    """The failure asked for with --fail-record."""


@dataclass(frozen=True)
class FailSpec:
    record_id: str
    once: bool
    marker: Path

    def armed(self) -> bool:
        return not (self.once and self.marker.exists())


def require_dir_or_absent(path: str | Path, field: str) -> None:
    """A directory the program will create or write into: an existing file there is bad input."""
    if Path(path).exists() and not Path(path).is_dir():
        raise ShardingError(field, f"not a directory: {path}")


def make_input(directory: str | Path, files: int, records: int) -> list[Path]:
    """Write ``files`` JSONL files of ``records`` records each (ids ``doc-FFFF-RRRR``); deterministic."""
    for field, count in (("--files", files), ("--records", records)):
        if count <= 0:
            raise ShardingError(field, f"must be a positive integer, got {count}")
    require_dir_or_absent(directory, "DIRECTORY")
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in range(files):
        path = root / f"part-{f:05d}.jsonl"
        lines = [json.dumps({"id": f"doc-{f:04d}-{r:04d}", "text": f"record {r} of file {f}"}, sort_keys=True)
                 for r in range(records)]
        write_atomically(path, "".join(line + "\n" for line in lines))
        paths.append(path)
    return paths


def transform(record: Mapping[str, Any], task_id: str, shard: int | None) -> dict[str, Any]:
    """The deterministic per-record step: the record plus where it went and a content hash."""
    digest = hashlib.sha256(compact_json(record).encode("utf-8")).hexdigest()
    return {**record, "sha256": digest, "shard": shard, "task_id": task_id}


def process_task(task: SourceTask, output_dir: Path, shard: int | None, fail: FailSpec | None) -> Path:
    """Transform every record of the task's files into ``<output>/<task_id>.jsonl``."""
    out: list[str] = []
    for path in task.files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc})") from None
            except RecursionError:
                raise ValueError(f"{path}:{number}: JSON nested too deeply") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: a JSON {type(record).__name__}, not a record (object)")
            if fail is not None and str(record.get("id")) == fail.record_id and fail.armed():
                raise InjectedFailure(f"record {fail.record_id!r} in {path.name} failed (--fail-record)")
            out.append(json.dumps(transform(record, task.task_id, shard), sort_keys=True, separators=(",", ":")))
    target = output_dir / f"{task.task_id}.jsonl"
    write_atomically(target, "".join(line + "\n" for line in out))
    return target


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:   # also a number of more than 4300 digits
        shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
        raise argparse.ArgumentTypeError(f"must be an integer, got {shown!r}") from None


def run_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=PROG, description="Sharded JSONL example pipeline (see `make-input DIR` for demo data).")
    p.add_argument("--input", required=True, help="directory of *.jsonl files")
    p.add_argument("--output", required=True, help="directory for <task_id>.jsonl outputs")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory shared by all shards of the run")
    p.add_argument("--files-per-partition", type=_int, default=1)
    p.add_argument("--shard-index", type=_int)
    p.add_argument("--total-shards", type=_int)
    p.add_argument("--minimum-shard-index", type=_int)
    p.add_argument("--fail-record", metavar="ID", help=f"make the task holding this record id fail (env {FAIL_ENV})")
    p.add_argument("--fail-once", action="store_true", help=f"fail only the first time (env {FAIL_ONCE_ENV}=1)")
    return p


def input_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=f"{PROG} make-input", description="Write deterministic demo JSONL input.")
    p.add_argument("directory", metavar="DIRECTORY")
    p.add_argument("--files", type=_int, default=20)
    p.add_argument("--records", type=_int, default=10)
    return p


def _fail_spec(args: argparse.Namespace, checkpoint: Path, env: Mapping[str, str]) -> FailSpec | None:
    record_id = args.fail_record or env.get(FAIL_ENV)
    if not record_id:
        return None
    once = args.fail_once or env.get(FAIL_ONCE_ENV, "").lower() in ("1", "true", "yes", "on")
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in record_id)
    if len(safe.encode("utf-8")) > MARKER_NAME_BYTES:   # a file name has at most 255 bytes
        start = safe.encode("utf-8")[:60].decode("utf-8", "ignore")
        safe = f"{start}-{hashlib.sha256(record_id.encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"
    return FailSpec(record_id, once, checkpoint / ".hyperion_example" / f"failed_once_{safe}")


def _say(line: str) -> None:
    """One progress line on stdout. Its reader may be gone (`| head -1`: EPIPE; a closed terminal: EIO):
    the line is only progress, so the rest of the output goes to /dev/null, and the task it reports
    neither fails nor leaves a failed-task record for work that was done."""
    try:
        print(line)
    except OSError:
        discard_output(sys.stdout)


def _flush_stdout() -> None:
    """The last buffered lines, flushed here so that a reader gone makes no 'Exception ignored' at exit."""
    try:
        sys.stdout.flush()
    except OSError:
        discard_output(sys.stdout)


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    config: ArrayConfig | None = resolve(env, shard_index=args.shard_index, total_shards=args.total_shards,
                                         minimum_shard_index=args.minimum_shard_index)
    tasks = list_sources(args.input, files_per_partition=args.files_per_partition)
    require_dir_or_absent(args.output, "--output")       # checked before run.json is written
    require_dir_or_absent(args.checkpoint, "--checkpoint")
    store = Checkpoint(args.checkpoint)
    run_config = RunConfig(config.minimum_shard_index, config.total_shards) if config else None
    if config is not None and not config.in_range:   # as Curator: refused before run.json exists
        raise ShardingError("shard_index", f"{config.shard_index} is outside the shard range "
                            f"[{config.minimum_shard_index}, {config.maximum_shard_index}] of this checkpointed run")
    if run_config is not None:
        store.ensure_run(run_config)
    selection = select(tasks, config)
    if selection.warning:
        print(f"{PROG}: warning: {selection.warning}", file=sys.stderr)
    shard = config.shard_index if config else None
    label = f"shard {shard} of {config.total_shards}" if config else "unsharded run"
    _say(f"{label}: {len(selection.tasks)} of {selection.total} source tasks")
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    fail = _fail_spec(args, store.path, env)
    failures: dict[str, str] = {}
    injected = False
    for task in selection.tasks:
        try:
            target = process_task(task, output, shard, fail)
        except Exception as exc:   # any task's failure is the shard's, recorded below; the others still run
            injected = injected or isinstance(exc, InjectedFailure)
            failures[task.task_id] = f"{exc.__class__.__name__}: {exc}"
            print(printable(f"  {task.task_id} FAILED: {exc}"), file=sys.stderr)
            continue
        _say(printable(f"  {task.task_id} -> {target}"))
    if failures:
        if config is not None and config.in_range:
            path = store.write_failed(config.shard_index, Attempt.from_env(env),
                                      {"task_ids": sorted(failures), "errors": failures,
                                       "error": next(iter(failures.values()))})
            print(printable(f"failed-task record {path}"), file=sys.stderr)
        if injected and fail is not None and fail.once:   # only the failure asked for disarms it
            write_atomically(fail.marker, json.dumps({"record": fail.record_id}) + "\n")
        return 1
    if config is not None and config.in_range and run_config is not None:
        _say(f"completion manifest {store.write_completion(config.shard_index, run_config)}")
    return 0


def _made_line(paths: Sequence[Path], records: int) -> str:
    """One line for what make-input wrote: 2000 files named one per line drowned the terminal."""
    names = paths[0].name if len(paths) == 1 else f"{paths[0].name} .. {paths[-1].name}"
    return f"wrote {len(paths)} file(s) of {records} record(s) in {printable(str(paths[0].parent))}: {names}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args: argparse.Namespace | None = None
    try:
        check_working_dir()   # else a deleted cwd reads as 'cannot write' of the argument named
        if argv[:1] == ["make-input"]:
            opts = input_parser().parse_args(argv[1:])
            _say(_made_line(make_input(**vars(opts)), opts.records))
            _flush_stdout()
            return 0
        args = run_parser().parse_args(argv)
        status = run(args, os.environ)
        _flush_stdout()
        return status
    except FieldError as exc:   # ShardingError, or the working directory gone
        fail(PROG, exc.field, exc.problem)
    except OSError as exc:   # e.g. a file where the checkpoint needs a folder, a read-only file system
        fail(PROG, _field_of(exc.filename, args),
             f"cannot write {exc.filename if exc.filename is not None else 'a file'}: {exc.strerror or exc}")


def _field_of(filename: object, args: argparse.Namespace | None) -> str:
    """The option that named the place that could not be written."""
    if args is None:
        return "DIRECTORY"
    if not isinstance(filename, str):
        return "--checkpoint"
    output, path = os.path.abspath(args.output), os.path.abspath(filename)
    return "--output" if path == output or path.startswith(output + os.sep) else "--checkpoint"


if __name__ == "__main__":
    sys.exit(main())
