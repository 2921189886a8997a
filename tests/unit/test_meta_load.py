from __future__ import annotations

import struct
from pathlib import Path

import pytest
from meta_support import committed, fill_history_pair, open_meta, task

from statemeta.codec import NO_RELATED_TASK, StreamTask, encode_task, encode_task_key
from statemeta.errors import IncompatibleVersionError
from statemeta.lifecycle import TaskEvent, TaskStatus
from statemeta.store import LmdbStore


def write_records(path: Path, records: dict[bytes, bytes]) -> None:
    store = LmdbStore.open(path, durable=False)
    table = store.table("task.db", 16)
    store.begin()
    for key, value in records.items():
        table.upsert(key, value)
    store.commit()
    store.close()


def record(t: StreamTask) -> tuple[bytes, bytes]:
    return encode_task_key(t.stream_id, t.task_id), encode_task(t)


def with_version(value: bytes, ver: int) -> bytes:
    return value[:4] + struct.pack("<q", ver) + value[12:]


def test_load_in_key_byte_order_with_dropping_duplicate_and_corrupt(tmp_path: Path) -> None:
    keep_a, keep_b = task(0x100), task(0x1)  # 0x100 sorts first: little-endian bytes
    dropping = task(0x5, task_status=int(TaskStatus.DROPPING))
    corrupt_key, _ = record(task(0x7))
    write_records(
        tmp_path,
        dict([record(keep_a), record(keep_b), record(dropping)])
        | {corrupt_key: b"\x05\x00\x00\x00\x02"},
    )
    meta = open_meta(tmp_path)
    meta.register(task(0x1, checkpoint_id=42), 9)  # already in the map before load
    report = meta.load_all()
    assert report.loaded == (keep_a.id,)
    assert report.removed == (dropping.id,)
    assert report.duplicates == (keep_b.id,)
    (skipped,) = report.undecodable
    assert skipped.key_hex == corrupt_key.hex()
    assert skipped.reason
    assert meta.task_ids() == (keep_b.id, keep_a.id)
    assert meta.task(0x10, 0x1).checkpoint_id == 42  # the in-memory task is kept
    view = meta.view()
    assert all(t.status is TaskStatus.UNINIT and not t.downstream_ready for t in view.tasks)
    meta.close()
    stored = committed(tmp_path)  # only the DROPPING record was deleted, durably
    assert set(stored) == {record(keep_a)[0], record(keep_b)[0], corrupt_key}


def test_load_removes_dropping_fill_history_and_clears_its_stream_task(tmp_path: Path) -> None:
    stream, history = fill_history_pair()
    history = StreamTask(
        stream_id=history.stream_id,
        task_id=history.task_id,
        fill_history=1,
        stream_task_id=history.stream_task_id,
        task_status=int(TaskStatus.DROPPING),
    )
    write_records(tmp_path, dict([record(stream), record(history)]))
    meta = open_meta(tmp_path)
    report = meta.load_all()
    assert report.removed == (history.id,)
    assert report.cleared == (stream.id,)
    assert meta.task(stream.stream_id, stream.task_id).h_task_id == NO_RELATED_TASK
    meta.close()
    assert set(committed(tmp_path)) == {record(stream)[0]}


def test_version_1_record_makes_open_fail_naming_the_path(tmp_path: Path) -> None:
    key, value = record(task(1))
    write_records(tmp_path, {key: with_version(value, 1)})
    with pytest.raises(IncompatibleVersionError, match=str(tmp_path)) as info:
        open_meta(tmp_path)
    assert info.value.version == 1
    assert committed(tmp_path) == {key: with_version(value, 1)}  # nothing deleted


def test_newer_version_is_skipped_and_reported(tmp_path: Path) -> None:
    key, value = record(task(1))
    write_records(tmp_path, {key: with_version(value, 3)})
    meta = open_meta(tmp_path)
    report = meta.load_all()
    assert report.loaded == ()
    assert [s.key_hex for s in report.undecodable] == [key.hex()]


def test_loaded_tasks_are_uninit_and_unpaused(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    meta.handle_event(0x10, 1, TaskEvent.PAUSE)
    meta.close()
    meta = open_meta(tmp_path)
    meta.load_all()
    assert meta.status(0x10, 1) is TaskStatus.UNINIT
    assert meta.paused_count == 0


def test_latest_checkpoint_id(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    assert meta.latest_checkpoint_id() == 0
    meta.register(task(1, checkpoint_id=7), 5)
    meta.register(task(2, checkpoint_id=3), 5)
    assert meta.latest_checkpoint_id() == 7


def test_save_task_is_durable_only_after_commit(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    meta.register(task(2), 5)
    saved = task(1, checkpoint_id=11, checkpoint_ver=4)
    meta.save_task(saved)
    assert meta.task(0x10, 1) == saved
    meta.commit()
    meta.save_task(task(2, checkpoint_id=12, checkpoint_ver=4))
    meta.close()  # aborts the uncommitted save
    meta = open_meta(tmp_path)
    meta.load_all()
    assert meta.task(0x10, 1).checkpoint_id == 11
    assert meta.task(0x10, 2).checkpoint_id == 0
