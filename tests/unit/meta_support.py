"""Shared set-up for the meta tests: a meta on a real LMDB store (relaxed sync) in tmp_path."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from statemeta.codec import StreamTask, TaskId
from statemeta.meta import StreamMeta, VirtualClock
from statemeta.store import FaultyStore, LmdbStore, Store

lmdb_factory = functools.partial(LmdbStore.open, durable=False)


def faulty_factory(path: str) -> Store:
    return FaultyStore(LmdbStore.open(path, durable=False))


def open_meta(path: Path, vg_id: int = 7, **options: Any) -> StreamMeta:
    options.setdefault("store_factory", lmdb_factory)
    options.setdefault("clock", VirtualClock())
    options.setdefault("check_invariants", True)
    return StreamMeta.open(path, vg_id, **options)


def task(task_id: int, stream_id: int = 0x10, **fields: Any) -> StreamTask:
    return StreamTask(stream_id=stream_id, task_id=task_id, **fields)


def fill_history_pair(stream_id: int = 0x20) -> tuple[StreamTask, StreamTask]:
    """A stream task and its fill-history task, pointing at each other."""
    stream = StreamTask(stream_id=stream_id, task_id=1, h_task_id=TaskId(stream_id, 2))
    history = StreamTask(
        stream_id=stream_id, task_id=2, fill_history=1, stream_task_id=TaskId(stream_id, 1)
    )
    return stream, history


def committed(path: Path) -> dict[bytes, bytes]:
    """The task.db records a fresh store sees (the meta must be closed)."""
    store = LmdbStore.open(path, durable=False)
    try:
        return dict(store.table("task.db", 16).items())
    finally:
        store.close()
