"""Store costs against their raw baselines, measured in the same run (not a test).

- durable commits per second (one small upsert + commit each) against ``os.write`` +
  ``os.fsync`` of the same bytes on a file in the same directory (goal: >= 0.5x);
- upsert (begin, the upserts, commit), get and ordered scan per operation against the same
  calls on raw ``lmdb``, for the LMDB store (the overlay should stay thin: DESIGN §7 measured
  upsert 3.7 us, get 1.9 us raw) and for the memory store (which should beat raw lmdb).

Run: ``python -m benchmarks.bench_store [--quick] [--dir DIR]`` (DIR: where the files go;
fsync costs depend on the file system, so pick the one the meta will live on).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lmdb

from benchmarks._table import print_module
from statemeta.store import LmdbStore, MemoryStore, OverlayStore, Table

Row = dict[str, object]
VALUE = b"v" * 64  # a small record: the commit cost, not the copy, is measured
THIN_GOAL = "<= 1.5x"  # of raw lmdb
MEMORY_GOAL = "< 1x"  # of raw lmdb: the explorer's backend must beat the files it stands for


def task_key(n: int) -> bytes:
    return struct.pack("<qq", n % 7, n)


def median_seconds(measure: Callable[[], float], repeats: int) -> float:
    return statistics.median(measure() for _ in range(repeats))


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def durable_commits(directory: Path, commits: int, repeats: int) -> Row:
    store = LmdbStore.open(directory / "store")
    tasks = store.table("task.db", 16)

    def store_commits() -> None:
        for n in range(commits):
            store.begin()
            tasks.upsert(task_key(n), VALUE)
            store.commit()

    fd = os.open(directory / "raw.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    record = task_key(0) + VALUE

    def raw_commits() -> None:
        for _ in range(commits):
            os.write(fd, record)
            os.fsync(fd)

    try:  # alternate the two, so that a noisy neighbour on the disk hits both alike
        store_times, raw_times = [], []
        for _ in range(repeats):
            store_times.append(timed(store_commits))
            raw_times.append(timed(raw_commits))
        store_rate = commits / statistics.median(store_times)
        raw_rate = commits / statistics.median(raw_times)
    finally:
        os.close(fd)
        store.close()
    return {
        "name": "store.durable_commit",
        "value": round(store_rate),
        "unit": "commits/s",
        "baseline": "write + fsync, same dir",
        "baseline_value": round(raw_rate),
        "ratio": round(store_rate / raw_rate, 2),
        "goal": ">= 0.5x",
    }


def per_op_rows(directory: Path, ops: int, repeats: int) -> list[Row]:
    """Per-operation costs in microseconds: each backend against the same calls on raw lmdb."""
    keys = [task_key(n) for n in range(ops)]
    env = lmdb.open(
        str(directory / "ops-raw"), max_dbs=4, sync=False, map_size=1 << 30, max_spare_txns=1
    )
    db = env.open_db(b"task.db")

    def raw_upsert() -> float:
        def put_all() -> None:
            with env.begin(write=True) as txn:
                for key in keys:
                    txn.put(key, VALUE, db=db)

        return timed(put_all)

    def raw_get() -> float:
        with env.begin(write=True) as txn:
            return timed(lambda: [txn.get(key, db=db) for key in keys])

    def raw_get_committed() -> float:
        def get_committed(key: bytes) -> bytes | None:
            with env.begin() as txn:
                return txn.get(key, db=db)

        return timed(lambda: [get_committed(key) for key in keys])

    def raw_scan() -> float:
        with env.begin() as txn:
            return timed(lambda: list(txn.cursor(db=db)))

    backends: list[tuple[str, str, OverlayStore[Any]]] = [
        ("store", THIN_GOAL, LmdbStore.open(directory / "ops-store", durable=False)),
        ("memory", MEMORY_GOAL, MemoryStore()),
    ]
    rows: list[Row] = []
    try:
        for prefix, goal, store in backends:
            tasks = store.table("task.db", 16)

            def store_upsert(store: OverlayStore[Any] = store, tasks: Table = tasks) -> float:
                def upsert_all() -> None:
                    store.begin()
                    for key in keys:
                        tasks.upsert(key, VALUE)
                    store.commit()

                return timed(upsert_all)

            def store_get(store: OverlayStore[Any] = store, tasks: Table = tasks) -> float:
                store.begin()
                elapsed = timed(lambda: [tasks.get(key) for key in keys])
                store.abort()
                return elapsed

            def store_get_committed(tasks: Table = tasks) -> float:
                return timed(lambda: [tasks.get(key) for key in keys])

            def store_scan(tasks: Table = tasks) -> float:
                return timed(lambda: list(tasks.items()))

            pairs: list[tuple[str, str, Callable[[], float], Callable[[], float]]] = [
                ("upsert", "all in one commit", store_upsert, raw_upsert),
                ("get", "in a write txn", store_get, raw_get),
                ("get", "no txn open", store_get_committed, raw_get_committed),
                ("items", "ordered scan", store_scan, raw_scan),
            ]
            for name, what, ours, raw in pairs:
                ours_us = median_seconds(ours, repeats) / ops * 1e6
                raw_us = median_seconds(raw, repeats) / ops * 1e6
                rows.append({
                    "name": f"{prefix}.{name} ({what})",
                    "value": round(ours_us, 3),
                    "unit": "us/op",
                    "baseline": "raw lmdb, same calls",
                    "baseline_value": round(raw_us, 3),
                    "ratio": round(ours_us / raw_us, 2),
                    "goal": goal,
                })
    finally:
        for _, _, store in backends:
            store.close()
        env.close()
    return rows


def run(quick: bool, directory: str | None = None) -> list[Row]:
    """Every row of this benchmark; files go to a fresh temporary directory under ``directory``."""
    work = Path(tempfile.mkdtemp(prefix="statemeta-bench-store-", dir=directory))
    commits, ops, repeats = (200, 2_000, 3) if quick else (2_000, 20_000, 7)
    try:
        return [durable_commits(work, commits, repeats), *per_op_rows(work, ops, repeats)]
    finally:
        shutil.rmtree(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts, seconds")
    parser.add_argument("--dir", default=None, help="directory for the files (default: temp)")
    args = parser.parse_args()
    print_module("store", run(args.quick, args.dir))


if __name__ == "__main__":
    main()
