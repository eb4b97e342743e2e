"""``hyperion-checkpoint``: inspect a checkpoint and plan (or submit) retries of missing shards.

Bad input prints one line ``hyperion-checkpoint: error: <field>: <problem>`` and
exits 2. Skipped files (corrupt or foreign manifests, stray records) are
reported as warnings on stderr and do not stop the command.
"""
from __future__ import annotations

import argparse
import copy
import sys
from typing import Any, NoReturn, Sequence

from backends import jsontext
from backends.errors import FieldError, check_working_dir, reader_gone
from backends.ranges import compress
from backends.printable import escape_unencodable_output, printable
from sharding.coverage import Coverage, Standing, build_coverage, coverage, coverage_json, too_many_shards
from sharding.errors import ShardingError
from sharding.retry import (
    RetryPlan,
    format_fields,
    format_ranges,
    parse_max_array_size,
    plan_json,
    plan_retry,
    skipped_line,
)
from sharding.store import Checkpoint, FailedRecord, Problem, RunConfig, outside_run
from sharding.failed_text import record_line
from sharding.usage import OneLineParser, fail

PROG = "hyperion-checkpoint"
FAILED_AFTER_WORD = "failed_after"   # `shards`' mark of complete shards a rerun failed since (Standing's word)
FORMATS = ("fields", "json", "ranges", "array")


def _fail(field: str, problem: str) -> NoReturn:
    fail(PROG, field, problem)


def _warn(problems: Sequence[Problem]) -> None:
    """One line per skipped file, escaped: a file name in a checkpoint may hold ESC sequences."""
    for p in problems:
        print(printable(f"{PROG}: warning: {p.path}: {p.message}"), file=sys.stderr)


def _max_array_size(text: str) -> int:
    try:
        return parse_max_array_size(text)
    except ShardingError as exc:   # argparse turns a plain ValueError into its own vaguer message
        raise argparse.ArgumentTypeError(exc.problem) from None


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=PROG, description="Inspect a NeMo Curator compatible array checkpoint and retry missing shards.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{show,shards,failed,retry}")
    helps = {"show": "run.json and shard counts", "shards": "per-shard complete/incomplete/failed",
             "failed": "failed-task records by task run (job, array task, restart)", "retry": "incomplete shards as retry submissions"}
    # `status`: what hyperion-jobs calls its counts, the first word a user of both types here
    aliases = {"show": ["status"]}
    for name, text in helps.items():
        p = sub.add_parser(name, help=text, description=text, aliases=aliases.get(name, []))
        p.add_argument("path", metavar="PATH", nargs="?", help="checkpoint directory")
        p.add_argument("--checkpoint-path", dest="checkpoint_path", help="same as PATH (Curator's spelling)")
        if name != "retry":
            p.add_argument("--json", action="store_true", help="print JSON")
        for alias in aliases.get(name, []):
            # argparse runs an alias with its name's parser: `status --help` said `usage: hyperion-checkpoint
            # show`. The alias gets the same parser under its own name (listed once, as `show (status)`).
            twin = copy.copy(p)
            twin.prog = f"{PROG} {alias}"
            sub.choices[alias] = twin
    retry = sub.choices["retry"]
    retry.add_argument("--format", choices=FORMATS, default="fields",
                       help="fields (default): 'ARRAY_EXPRESSION SHARD_INDEX_OFFSET MINIMUM_SHARD_INDEX TOTAL_SHARDS' "
                            "per window; json: plan with windows; ranges (alias array): the expression only")
    retry.add_argument("--max-array-size", type=_max_array_size, help="split into windows whose physical indices stay below N")
    retry.add_argument("--cfg", metavar="SITE",
                       help="split by this site file's max_array_size (the cluster's limit; a smaller --max-array-size wins)")
    retry.add_argument("--submit", metavar="RECORD", help="resubmit the missing shards with this q/*.submit.json record")
    retry.add_argument("--record", metavar="RECORD",
                       help="say which listed shards this q/*.submit.json record still runs (default: the records "
                            "in every q/ under the current folder whose command names the checkpoint); submits nothing")
    retry.add_argument("--dry-run", action="store_true",
                       help="with --submit: print what would be submitted (argv, windows, script), submit nothing")
    retry.add_argument("--mem", metavar="SIZE",
                       help="with --submit: memory per node instead of the record's, or auto: proposed from what "
                            "the shards used (as hyperion-jobs retry --mem auto)")
    retry.add_argument("--time", metavar="DURATION",
                       help="with --submit: time limit instead of the record's, or auto: twice the limit of "
                            "TIMEOUT shards")
    retry.add_argument("--trust-record", action="store_true",
                       help="run the record's command even if another user owns it or others may write it")
    return parser


def _path(args: argparse.Namespace) -> str:
    if args.path and args.checkpoint_path and args.path != args.checkpoint_path:
        _fail("PATH", "given twice with different values (PATH and --checkpoint-path)")
    path = args.path or args.checkpoint_path
    if not path:
        _fail("PATH", "required")
    return path


def _show(path: str, as_json: bool) -> int:
    cov = coverage(path)
    _warn(cov.problems)
    attempts = {r.attempt for r in cov.failed}
    unnamed = cov.unnamed   # a user's own failed-task folder names no shard
    standings = [cov.standing(r) for r in cov.failed]
    since = standings.count(Standing.COMPLETE_SINCE)    # old failures: the shard is complete now
    after = standings.count(Standing.FAILED_AFTER)      # a rerun of a complete shard failed
    if as_json:
        data = coverage_json(cov, per_shard=False)
        data.update(failed_records=len(cov.failed), failed_attempts=len(attempts), failed_records_without_shard=unnamed,
                    failed_records_complete_since=since, failed_records_after_completion=after)
        print(jsontext.dumps(data, indent=2))
        return 0
    run, counts = cov.run, cov.counts()
    print(f"checkpoint   {printable(cov.checkpoint)}")
    print(f"run.json     minimum_shard_index={run.minimum_shard_index} total_shards={run.total_shards} "
          f"(shards {run.minimum_shard_index}-{run.maximum_shard_index})")
    for status, n in counts.items():
        print(f"{status:<12} {n}")
    # "task run(s)": a (job, array task, restart); "attempt" is a submission, as `hyperion-jobs history` says
    print(f"failed-task records {len(cov.failed)} from {len(attempts)} task run(s)"
          + (f", {unnamed} in folders naming no shard_<i> (no shard's)" if unnamed else ""))
    if since:
        print(f"  {since} of them for shards complete since (a later attempt completed them)")
    if after:
        print(f"  {after} of them after their shard completed (a rerun failed; "
              "the shard's manifest stands: retry skips it)")
    skipped = sum(not p.counted for p in cov.problems)
    if skipped:
        print(f"skipped files {skipped} (see warnings)")
    if cov.without_details:
        print(f"failed-task records without readable details {cov.without_details} (see warnings)")
    return 0


def _shards(path: str, as_json: bool) -> int:
    cov: Coverage = coverage(path)
    _warn(cov.problems)
    if as_json:
        if not cov.listable:
            print(f"{PROG}: warning: shards: {too_many_shards(cov.run.total_shards)}", file=sys.stderr)
        print(jsontext.dumps(coverage_json(cov), indent=2))
        return 0
    counts, expressions = cov.counts(), cov.expressions()
    for status, expression in expressions.items():
        print(f"{status:<12} {counts[status]:>6}  {expression}".rstrip())
    after = cov.failed_after
    if after:       # among the complete ones, not a status of its own: retry skips them
        print(f"{FAILED_AFTER_WORD:<12} {len(after):>6}  {compress(after)}  "
              f"(complete, then a rerun failed: retry skips {'it' if len(after) == 1 else 'them'}; "
              "hyperion-checkpoint retry says how to rerun one)")
    return 0


def _record_json(r: FailedRecord, standing: Standing | None) -> dict[str, Any]:
    """`shard_complete`: the shard has a manifest (retry skips it); `complete_since`: and it was
    written at or after this failure (false for a failure after the shard completed). `slurm_id`: the
    task as `hyperion-jobs status --json` gives it (`12358_6`, `job_text`), where the record says;
    else its folder's job (`slurm_job`, the task's own SLURM_JOB_ID), null without one."""
    known = standing is not None
    return {"path": r.path, "shard": r.shard, "slurm_job": r.job, "slurm_id": r.array_id or r.job,
            "array_task": r.array_task,
            "restart": r.restart, "shard_complete": standing is not Standing.FAILING if known else None,
            "complete_since": standing is Standing.COMPLETE_SINCE if known else None, "details": r.details}


def _standings(store: Checkpoint, run: RunConfig | None,
               records: Sequence[FailedRecord]) -> list[Standing | None]:
    """Per record, where it stands against its shard's manifest (`Coverage.standing`, as `show`
    counts them; None without run.json or a shard): an old failure listed as it was read as a shard
    still failing. Skipped manifests are `show`'s and `shards`' to report."""
    if run is None:
        return [None] * len(records)
    cov = build_coverage(str(store.path), run, store.completion_times(run)[0], list(records), [])
    return [cov.standing(r) for r in records]


def _failed(path: str, as_json: bool) -> int:
    store = Checkpoint(path)
    run = store.read_run()  # listing needs no run.json, but a corrupt one means a broken checkpoint: say so
    records, problems = store.scan_failed()
    if run is not None:
        problems += [p for p in (outside_run(r, run) for r in records) if p is not None]
    _warn(sorted(problems, key=lambda p: p.path))
    standings = _standings(store, run, records)
    if as_json:
        print(jsontext.dumps([_record_json(r, c) for r, c in zip(records, standings)], indent=2))
        return 0
    if not records:     # an empty listing read as a command that did nothing, or one that failed quietly
        if problems:    # "no records" after a warning that the folder was not searched read as a contradiction
            print(printable(f"no readable failed-task records under {store.failed_dir} "
                            f"({len(problems)} warned about above)"))
        else:
            print(printable(f"no failed-task records under {store.failed_dir}"))
    for r, c in zip(records, standings):
        print(printable(record_line(r, c)))     # the console's Failed tab shows the same line
        print(f"    {printable(r.path)}")
    return 0


def _retry(path: str, fmt: str, max_array_size: int | None, record: str | None, trust: bool = False,
           dry_run: bool = False, cfg: str | None = None, preview_record: str | None = None,
           mem: str | None = None, time: str | None = None) -> int:
    if max_array_size is not None and fmt in ("ranges", "array") and record is None:
        _fail("--max-array-size", f"needs --format fields or json (--format {fmt} prints one expression without offsets)")
    if cfg is not None and record is not None:
        _fail("--cfg", "with --submit the record's own site file sets the limit; leave --cfg out")
    if cfg is not None and fmt in ("ranges", "array"):
        _fail("--cfg", f"needs --format fields or json (--format {fmt} prints one expression without offsets)")
    if trust and record is None:
        _fail("--trust-record", "only means something with --submit RECORD")
    if dry_run and record is None:
        _fail("--dry-run", "only means something with --submit RECORD (retry alone submits nothing)")
    if preview_record is not None and record is not None:
        _fail("--record", "with --submit the record is --submit's; leave --record out")
    for flag, value in (("--mem", mem), ("--time", time)):
        if value is not None and record is None:
            _fail(flag, "only means something with --submit RECORD (the sizes of a resubmission; "
                  "retry alone submits nothing)")
    if record is not None:
        from sharding.resubmit import check_sizes, resubmit
        mem, time = check_sizes(mem, time)          # a bad size: one line, before anything is read
        return resubmit(path, record, max_array_size, trust=trust, dry_run=dry_run, mem=mem, time=time)
    if cfg is not None:
        from sharding.resubmit import retry_limit, site_array_limit
        max_array_size = retry_limit(max_array_size, site_array_limit(cfg))
    plan: RetryPlan = plan_retry(path, max_array_size)
    notes = _running_notes(plan, preview_record)
    _warn(plan.problems)
    for note in notes:
        line = note.line(plan)
        if line is not None:
            print(printable(f"{PROG}: warning: {line}"), file=sys.stderr)
    skipped = skipped_line(plan)
    if skipped is not None:       # on stderr: stdout is the fields a script reads
        print(printable(f"{PROG}: note: {skipped}"), file=sys.stderr)
    if fmt == "json":
        data = plan_json(plan)
        if notes:
            data["still_running"] = [note.as_json() for note in notes if note.line(plan) is not None]
        print(jsontext.dumps(data, indent=2))
        return 0
    lines = format_fields(plan) if fmt == "fields" else format_ranges(plan)
    for line in lines:
        print(line)
    return 0


def _running_notes(plan: RetryPlan, record: str | None) -> list:
    """Which of the shards listed missing a record still runs (they have no manifest yet, only because
    they have not ended): --record's, else each record whose command names the checkpoint, found
    where `hyperion-jobs` finds records (every q/ under the current folder, `records_naming`).
    Asked only when shards are missing; the launcher's modules load only when there is a record to
    ask about (a plain preview among other runs' records starts as fast as before)."""
    if record is None:
        if plan.complete:
            return []
        from sharding.run_records import records_naming

        told: list[str] = []
        found = records_naming(plan.checkpoint, told=told)
        for line in told:
            print(printable(f"{PROG}: warning: {line}"), file=sys.stderr)
        if not found:
            return []
    from sharding.resubmit import preview_record, running_notes

    if record is not None:
        given = preview_record(plan, record)       # a bad --record is refused even with nothing missing
        return [] if plan.complete else running_notes([given])
    return running_notes(found)


def _command(args: argparse.Namespace) -> int:
    path = _path(args)
    Checkpoint(path).require_dir("PATH" if args.path else "--checkpoint-path")
    if args.command in ("show", "status"):
        return _show(path, args.json)
    if args.command == "shards":
        return _shards(path, args.json)
    if args.command == "failed":
        return _failed(path, args.json)
    return _retry(path, args.format, args.max_array_size, args.submit, args.trust_record, args.dry_run,
                  args.cfg, args.record, args.mem, args.time)


def main(argv: Sequence[str] | None = None) -> int:
    escape_unencodable_output()
    args = build_parser().parse_args(argv)
    try:
        check_working_dir()
        status = _command(args)
        sys.stdout.flush()   # here, not at the interpreter's exit, where a reader gone is exit 120
        return status
    except FieldError as exc:  # ShardingError, or backends' InputError from the bridge
        _fail(exc.field, exc.problem)
    except BrokenPipeError:           # `| head`: quiet; but a resubmission cut short is no success
        status = reader_gone()
        return 1 if args.command == "retry" and args.submit and not args.dry_run else status


if __name__ == "__main__":
    sys.exit(main())
