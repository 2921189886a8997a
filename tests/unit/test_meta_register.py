from __future__ import annotations

from pathlib import Path

import pytest
from meta_support import committed, faulty_factory, open_meta, task

from statemeta.codec import StreamTask, decode_task, encode_task_key
from statemeta.errors import MetaClosedError, StoreFault
from statemeta.store import FaultyStore


def test_register_saves_commits_and_counts(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    assert meta.register(task(1), 10) is True
    assert meta.register(task(2, fill_history=1), 10) is True
    assert meta.task_ids() == (task(1).id, task(2).id)
    assert meta.num_tasks == 2
    assert meta.stream_count == 1
    assert meta.task(0x10, 1).checkpoint_ver == 9  # ver - 1
    assert meta.task(0x10, 2).checkpoint_ver == 0  # fill-history tasks start at version 1
    assert meta.view().tasks[0].next_process_ver == 10
    meta.close()
    stored = committed(tmp_path)
    assert decode_task(stored[encode_task_key(0x10, 1)]) == task(1, checkpoint_ver=9)


def test_duplicate_register_changes_nothing(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    assert meta.register(task(1), 10)
    before = meta.view()
    assert meta.register(task(1, checkpoint_id=99), 20) is False
    assert meta.view() == before
    assert meta.task(0x10, 1).checkpoint_id == 0


@pytest.mark.parametrize("op", ["put", "commit"])
def test_failed_save_or_commit_leaves_everything_unchanged(tmp_path: Path, op: str) -> None:
    meta = open_meta(tmp_path, store_factory=faulty_factory)
    meta.register(task(1), 5)
    before = meta.view()
    store = meta.store
    assert isinstance(store, FaultyStore)
    store.fail_next(op)  # type: ignore[arg-type]
    with pytest.raises(StoreFault):
        meta.register(task(2), 5)
    assert meta.view() == before
    assert meta.task_ids() == (task(1).id,)
    assert meta.stream_count == 1
    assert meta.register(task(2), 5) is True  # the meta still works
    meta.close()
    assert set(committed(tmp_path)) == {encode_task_key(0x10, 1), encode_task_key(0x10, 2)}


def test_failed_register_keeps_store_unchanged(tmp_path: Path) -> None:
    meta = open_meta(tmp_path, store_factory=faulty_factory)
    meta.register(task(1), 5)
    assert isinstance(meta.store, FaultyStore)
    meta.store.fail_next("commit")
    with pytest.raises(StoreFault):
        meta.register(task(2), 5)
    meta.close()
    assert set(committed(tmp_path)) == {encode_task_key(0x10, 1)}


def test_expand_hook_failure_changes_nothing(tmp_path: Path) -> None:
    def expand(t: StreamTask, ver: int) -> StreamTask:
        raise RuntimeError("expand failed")

    meta = open_meta(tmp_path, expand=expand)
    with pytest.raises(RuntimeError):
        meta.register(task(1), 5)
    assert meta.num_tasks == 0
    meta.close()
    assert committed(tmp_path) == {}


def test_trigger_timer_holds_a_reference(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1, trigger_param=1000), 5)
    meta.register(task(2, trigger_param=1000, fill_history=1), 5)
    assert meta.refcount(0x10, 1) == 2
    assert meta.refcount(0x10, 2) == 1


def test_closed_meta_refuses_operations(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.close()
    meta.close()  # idempotent
    with pytest.raises(MetaClosedError):
        meta.register(task(1), 5)
    with pytest.raises(MetaClosedError):
        meta.view()
