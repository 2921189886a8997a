"""The meta's costs against raw baselines measured in the same run (not a test).

- register with a durable commit per task, against raw LMDB put + commit of the same record,
  encoded in the loop as register must (goal: >= 0.8x the raw rate);
- load_all of 100,000 tasks (``--quick``: 2,000), against a raw LMDB scan plus ``decode_task``
  of the same values (goal: <= 1.5x the raw time); every run decodes every record cold (a meta
  caches its codec only in check mode, which this one is not in);
- one heartbeat (build and encode) over 10,000 tasks (``--quick``: 1,000), against encoding the
  same message alone (no goal: the figure is the cost per heartbeat).

Run: ``python -m benchmarks.bench_meta [--quick]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import lmdb

from benchmarks._table import print_module
from statemeta.codec import EpSet, StreamTask, decode_hb, decode_task, encode_hb, encode_task
from statemeta.codec import encode_task_key as key_of
from statemeta.meta import (
    META_HB_CHECK_INTERVAL,
    META_HB_SEND_IDLE_COUNTER,
    StreamMeta,
    VirtualClock,
)
from statemeta.store import LmdbStore

Row = dict[str, object]


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def _task(n: int) -> StreamTask:
    return StreamTask(stream_id=1 + n % 13, task_id=n + 1)


def bench_register(root: Path, count: int, repeats: int) -> Row:
    meta_rates: list[float] = []
    raw_rates: list[float] = []
    for r in range(repeats):
        tasks = [_task(n) for n in range(count)]
        meta = StreamMeta.open(root / f"meta{r}", 1)
        meta_rates.append(
            count / _timed(lambda m=meta, ts=tasks: [m.register(t, 5) for t in ts])
        )
        meta.close()
        env = lmdb.open(str(root / f"raw{r}"), max_dbs=4, map_size=1 << 28)
        db = env.open_db(b"task.db")

        def raw(
            env: lmdb.Environment = env, db: object = db, tasks: list[StreamTask] = tasks
        ) -> None:
            for t in tasks:
                with env.begin(write=True) as txn:
                    txn.put(key_of(t.stream_id, t.task_id), encode_task(t), db=db)

        raw_rates.append(count / _timed(raw))
        env.close()
    value, base = _median(meta_rates), _median(raw_rates)
    return {
        "name": f"register, durable commit each ({count} tasks)",
        "value": round(value, 1),
        "unit": "tasks/s",
        "baseline": "raw lmdb encode + put + commit",
        "baseline_value": round(base, 1),
        "ratio": round(value / base, 3),
        "goal": ">= 0.8x",
    }


def bench_load(root: Path, count: int, repeats: int) -> Row:
    path = root / "load"
    store = LmdbStore.open(path, durable=False)
    table = store.table("task.db", 16)
    store.begin()
    for n in range(count):
        t = _task(n)
        table.upsert(key_of(t.stream_id, t.task_id), encode_task(t))
    store.commit()
    store.close()
    env_path = str(path / "stream")

    def raw() -> None:
        env = lmdb.open(env_path, max_dbs=16, readonly=True, lock=False)
        db = env.open_db(b"task.db", create=False)
        with env.begin() as txn:
            for _key, value in txn.cursor(db=db):
                decode_task(value)
        env.close()

    def load() -> None:
        meta = StreamMeta.open(path, 1, durable=False)  # not check mode: no decode is cached
        meta.load_all()
        meta.close()

    meta_times = [_timed(load) for _ in range(repeats)]
    raw_times = [_timed(raw) for _ in range(repeats)]
    value, base = _median(meta_times), _median(raw_times)
    return {
        "name": f"open + load_all ({count} tasks)",
        "value": round(value, 3),
        "unit": "s",
        "baseline": "raw lmdb scan + decode_task",
        "baseline_value": round(base, 3),
        "ratio": round(value / base, 3),
        "goal": "<= 1.5x",
    }


def bench_heartbeat(root: Path, count: int, repeats: int) -> Row:
    clock = VirtualClock()
    payloads: list[bytes] = []

    def transport(ep_set: EpSet, payload: bytes) -> None:
        payloads.append(payload)

    meta = StreamMeta.open(
        root / "hb", 1, durable=False, clock=clock, transport=transport
    )
    store = meta.store
    table = store.table("task.db", 16)
    store.begin()
    for n in range(count):
        t = _task(n)
        table.upsert(key_of(t.stream_id, t.task_id), encode_task(t))
    store.commit()
    meta.load_all()
    meta.update_stage_role(1, True)
    period = META_HB_CHECK_INTERVAL * META_HB_SEND_IDLE_COUNTER
    meta_times = [_timed(lambda: clock.advance(period)) for _ in range(repeats)]
    msg = decode_hb(payloads[-1])
    raw_times = [_timed(lambda: encode_hb(msg)) for _ in range(repeats)]
    meta.close()
    value, base = _median(meta_times), _median(raw_times)
    return {
        "name": f"heartbeat build + encode ({count} tasks)",
        "value": round(value * 1000, 2),
        "unit": "ms",
        "baseline": "encode_hb of the same message",
        "baseline_value": round(base * 1000, 2),
        "ratio": round(value / base, 3),
        "goal": "",
    }


def run(quick: bool) -> list[Row]:
    root = Path(tempfile.mkdtemp(prefix="bench_meta_"))
    try:
        return [
            bench_register(root, 50 if quick else 500, 3),
            bench_load(root, 2_000 if quick else 100_000, 3),
            bench_heartbeat(root, 1_000 if quick else 10_000, 3 if quick else 5),
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    args = parser.parse_args()
    print_module("meta", run(args.quick))


if __name__ == "__main__":
    main()
