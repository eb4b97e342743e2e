"""The bridge from a retry plan to hyperion-submit's core: rerun only the missing shards.

The only `sharding` module that imports `backends` beyond its range math and
error type. It reuses the original submission's record (q/<stem>.submit.json)
so the retry runs the same command with the same resources, logs and site file; only the array changes (to the
missing shards) and the run's shard configuration is exported so a program
reading HYPERION_ARRAY_* keeps the original total and minimum.
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from dataclasses import dataclass
from typing import TextIO

from backends.errors import InputError
from backends.launch import run_plan, working_dir
from backends.printable import printable
from backends.records.record import SubmitRecord, load_record
from backends.records.trust import check_trusted
from backends.submit.array import MAX_VALUES, ArraySpec
from backends.submit.config import load_site
from backends.submit.model import SubmitOptions, SubmitPlan
from backends.submit.plan import build_plan
from sharding.retry import RetryPlan, plan_retry

PROG = "hyperion-checkpoint"
RUN_ENV = ("HYPERION_ARRAY_TOTAL_SHARDS", "HYPERION_ARRAY_MINIMUM_SHARD_INDEX")


def _array_name(record: SubmitRecord) -> str:
    array = record.options.get("array") or {}
    name = record.array_name or array.get("name")
    if not name:
        raise InputError("record", f"{record.path} is not an array submission: nothing to restrict to the missing shards")
    return str(name)


def retry_options(plan: RetryPlan, record: SubmitRecord) -> SubmitOptions:
    """The record's options with the array restricted to ``plan.missing`` and the run exported."""
    if plan.complete:
        raise InputError("checkpoint", f"{plan.checkpoint}: every shard is complete; nothing to resubmit")
    first = plan.missing_runs[0][0]
    if first < 1:
        raise InputError("run.json", f"shard {first} is missing but hyperion-submit array values start "
                         "at 1; submit shard 0 by hand (or use minimum_shard_index >= 1 for new runs)")
    if plan.missing_count > MAX_VALUES:   # refused before the values are built
        raise InputError("--array", f"{plan.missing_count} missing shards; at most {MAX_VALUES} tasks per "
                         f"submission (resubmit part of them: {plan.expression[:80]})")
    opts = record.options
    env = tuple((k, v) for k, v in (tuple(pair) for pair in opts.get("env") or ()) if k not in RUN_ENV)
    env += ((RUN_ENV[0], str(plan.run.total_shards)), (RUN_ENV[1], str(plan.run.minimum_shard_index)))
    return SubmitOptions(
        backend=record.backend, cfg=record.cfg, output_file=str(opts["output_file"]),
        command=tuple(opts["command"]), num_gpus=int(opts.get("num_gpus") or 0),
        num_threads=int(opts.get("num_threads") or 1), mem=opts.get("mem"), mem_per_cpu=opts.get("mem_per_cpu"),
        time=opts.get("time"), array=ArraySpec(_array_name(record), plan.missing),
        max_jobs_run=opts.get("max_jobs_run"), env=env)


@dataclass(frozen=True)
class Resubmission:
    """What a retry would submit: ``plan`` is None when every shard is complete."""

    retry: RetryPlan
    record: SubmitRecord | None
    plan: SubmitPlan | None


def prepare_resubmit(path: str, record_path: str, max_array_size: int | None = None) -> Resubmission:
    """Plan without running anything (reads the checkpoint, the record and the site file).

    ``max_array_size`` (if given) also caps the site's own limit, so windows
    match what ``retry --format fields --max-array-size`` printed.
    """
    retry = plan_retry(path, max_array_size)
    record = load_record(os.path.abspath(record_path))  # a bad record is an error even with nothing to do
    if retry.complete:
        return Resubmission(retry, record, None)
    site = load_site(record.cfg)
    if max_array_size is not None:
        limit = min(max_array_size, site.max_array_size or max_array_size)
        site = dataclasses.replace(site, max_array_size=limit)
    return Resubmission(retry, record, build_plan(site, retry_options(retry, record)))


def resubmit(path: str, record_path: str, max_array_size: int | None = None, err: TextIO | None = None,
             trust: bool = False) -> int:
    """Resubmit the missing shards of checkpoint ``path`` like ``record_path``; the exit status.

    0 when nothing is missing (nothing is submitted) or every resubmitted task
    succeeded; 1 when a task failed. Bad input raises InputError/ShardingError,
    and so does a record another user owns or others may write, unless `trust`
    (the record says what runs, as you).
    """
    err = err or sys.stderr
    check_trusted(os.path.abspath(record_path), trust)
    prepared = prepare_resubmit(os.path.abspath(path), os.path.abspath(record_path), max_array_size)
    retry, plan = prepared.retry, prepared.plan
    for problem in retry.problems:
        print(printable(f"{PROG}: warning: {problem.path}: {problem.message}"), file=err)
    if plan is None or prepared.record is None:
        print(printable(f"{PROG}: every shard of {retry.checkpoint} is complete; nothing resubmitted"), file=err)
        return 0
    print(printable(f"{PROG}: resubmitting {retry.missing_count} of {retry.run.total_shards} shard(s) "
                    f"({retry.expression}) in {prepared.record.cwd}: {shlex.join(plan.argv)}"), file=err, flush=True)
    with working_dir(prepared.record.cwd):
        return run_plan(plan, "resubmit")
