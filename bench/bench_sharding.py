"""Sharding figures: assignment throughput and retry discovery, each against a bare baseline.

    python bench/bench_sharding.py [--ids 1000000] [--shards 100000] [--repeat 3]

1. Assigning N task ids with `sharding.assign.shard_for` vs a bare hashlib loop
   computing the same formula inline (ratio = ours / bare; ~1 means no overhead
   beyond the hash itself), plus `select` (the filter an array task runs).
2. Retry discovery (`plan_retry`) on a synthetic checkpoint of S shards with
   every 10th shard missing vs a bare ``os.listdir`` of the completion folder,
   and vs listing + reading + json-parsing every manifest (what any correct
   reader must do at least). Best of --repeat runs, measured in this process.
3. Coverage + retry planning with the same --manifests manifests under a run of
   10**12 shards vs a run of exactly the shards they cover (target ratio < 2).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from report import emit  # noqa: E402
from timing import best  # noqa: E402  (bench/ is on sys.path when run as a script)

from sharding.arrayenv import ArrayConfig  # noqa: E402
from sharding.assign import select, shard_for, shards_for  # noqa: E402
from sharding.listing import SourceTask  # noqa: E402
from sharding.retry import format_fields, plan_retry  # noqa: E402
from sharding.store import Checkpoint, RunConfig, compact_json, manifest_identity, manifest_name  # noqa: E402


def bench_assignment(n: int, repeat: int, total: int = 1000) -> None:
    ids = [f"p{i:07d}" for i in range(n)]

    def bare() -> list[int]:
        sha = hashlib.sha256
        return [int(sha(i.encode("utf-8")).hexdigest()[:16], 16) % total for i in ids]

    def ours() -> list[int]:
        return [shard_for(i, total) for i in ids]

    tasks = [SourceTask(i, ()) for i in ids]
    t_bare, r_bare = best(bare, repeat)
    t_ours, r_ours = best(ours, repeat)
    t_many, r_many = best(lambda: shards_for(ids, total), repeat)
    assert r_bare == r_ours == r_many, "assignment differs from the bare formula"
    t_select, _ = best(lambda: select(tasks, ArrayConfig(0, total)), repeat)
    emit(f"shard_for_{n}_ids", t_ours, "s", baseline=t_bare)
    emit(f"shards_for_{n}_ids", t_many, "s", baseline=t_bare)
    emit(f"select_one_shard_of_{n}_tasks", t_select, "s", baseline=t_bare)


def make_checkpoint(root: Path, shards: int) -> int:
    """Synthetic checkpoint written directly (no fsync: this is set-up, not the thing measured)."""
    run = RunConfig(0, shards)
    Checkpoint(root).ensure_run(run)
    folder = Checkpoint(root).completion_dir
    missing = 0
    for shard in range(shards):
        if shard % 10 == 3:
            missing += 1
            continue
        payload = {**manifest_identity(run, shard), "status": "completed"}
        (folder / manifest_name(run, shard)).write_text(compact_json(payload))
    return missing


def bench_retry(shards: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ck"
        start = time.perf_counter()
        missing = make_checkpoint(root, shards)
        print(f"# synthetic checkpoint: {shards:,} shards, {shards - missing:,} manifests, "
              f"made in {time.perf_counter() - start:.1f} s")
        folder = Checkpoint(root).completion_dir

        def listing() -> int:
            return sum(1 for name in os.listdir(folder) if name.startswith("completed_slurm_array_"))

        def listing_and_reading() -> int:
            done = 0
            for name in os.listdir(folder):
                if name.startswith("completed_slurm_array_"):
                    with open(folder / name, encoding="utf-8") as handle:
                        done += json.load(handle).get("status") == "completed"
            return done

        t_list, count = best(listing, repeat)
        t_read, _ = best(listing_and_reading, repeat)
        t_plan, plan = best(lambda: plan_retry(root, max_array_size=1000), repeat)
        assert count == shards - missing and plan.missing_count == missing  # type: ignore[union-attr]
        lines = format_fields(plan)  # type: ignore[arg-type]
        print(f"# {missing:,} missing, {len(lines)} windows")
        emit(f"retry_discovery_{shards}_shards_vs_listdir", t_plan, "s", baseline=t_list)
        emit(f"retry_discovery_{shards}_shards_vs_read_all", t_plan, "s", baseline=t_read)


def bench_total_shards(manifests: int, repeat: int) -> None:
    """Coverage and retry planning cost what the manifests cost, not what total_shards says.

    The same `manifests` completion manifests (every 1000th shard) under a run
    of 10**12 shards and under a run of exactly as many shards as they cover
    (the baseline): the ratio should stay near 1 (target: below 2), memory flat.
    """
    from sharding.coverage import coverage
    from sharding.retry import format_ranges

    with tempfile.TemporaryDirectory() as tmp:
        times = {}
        for name, total in (("small", manifests * 1000), ("huge", 10 ** 12)):
            root = Path(tmp) / name
            run = RunConfig(0, total)
            Checkpoint(root).ensure_run(run)
            folder = Checkpoint(root).completion_dir
            for shard in range(0, manifests * 1000, 1000):
                payload = {**manifest_identity(run, shard), "status": "completed"}
                (folder / manifest_name(run, shard)).write_text(compact_json(payload) + "\n")

            def everything() -> int:
                cov = coverage(root)
                plan = plan_retry(root, max_array_size=total // 10)
                return len(cov.expressions()["incomplete"]) + len(format_ranges(plan)[0]) + len(format_fields(plan))

            times[name], _ = best(everything, repeat)
        emit("coverage_and_retry_1e12_shards", times["huge"] * 1000, "ms", baseline=times["small"] * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=100_000)
    parser.add_argument("--manifests", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bench_assignment(args.ids, args.repeat)
    bench_retry(args.shards, args.repeat)
    bench_total_shards(args.manifests, args.repeat)


if __name__ == "__main__":
    main()
