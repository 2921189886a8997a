"""The memory backend's own parts: the path registry, read-only opens, snapshots and forks."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from statemeta.errors import StoreClosedError, StoreError, TransactionError
from statemeta.store import MemoryState, MemoryStore


def task_key(stream_id: int, task_id: int) -> bytes:
    return struct.pack("<qq", stream_id, task_id)


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    MemoryStore.remove(tmp_path)


def commit_tasks(store: MemoryStore, *task_ids: int, value: bytes = b"v") -> None:
    tasks = store.table("task.db", 16)
    store.begin()
    for task_id in task_ids:
        tasks.upsert(task_key(1, task_id), value)
    store.commit()


def test_private_stores_share_nothing() -> None:
    first, second = MemoryStore(), MemoryStore()
    commit_tasks(first, 1)
    assert first.path == "<memory>"
    assert list(second.table("task.db", 16).items()) == []


def test_a_path_keeps_its_committed_state_between_opens(path: Path) -> None:
    store = MemoryStore.open(path)
    assert store.path == str(path / "stream")
    commit_tasks(store, 1)
    store.begin()
    store.table("task.db", 16).upsert(task_key(1, 2), b"uncommitted")
    store.close()
    assert not (path / "stream").exists()  # nothing on disk
    with MemoryStore.open(path) as reopened:
        assert reopened.committed_items("task.db") == ((task_key(1, 1), b"v"),)
    MemoryStore.remove(path)
    with MemoryStore.open(path) as fresh:
        assert list(fresh.table("task.db", 16).items()) == []


def test_readonly_open_needs_the_path_and_its_tables(path: Path) -> None:
    with pytest.raises(StoreError, match="no memory store there"):
        MemoryStore.open(path, readonly=True)
    with MemoryStore.open(path) as writer:
        commit_tasks(writer, 1)
        with MemoryStore.open(path, readonly=True) as reader:  # beside the writer
            assert reader.readonly
            with pytest.raises(TransactionError, match="read-only"):
                reader.begin()
            with pytest.raises(StoreError, match=r"'checkpoint\.db'.*no such table"):
                reader.table("checkpoint.db", 4)
            tasks = reader.table("task.db", 16)
            commit_tasks(writer, 2)
            assert [key for key, _ in tasks.items()] == [task_key(1, 1), task_key(1, 2)]


def test_committed_items_are_in_key_order_without_the_open_transaction() -> None:
    store = MemoryStore()
    commit_tasks(store, 256, 1)
    store.begin()
    store.table("task.db", 16).upsert(task_key(1, 7), b"pending")
    assert store.committed_items("task.db") == (
        (task_key(1, 256), b"v"),  # 00 01 .. sorts before 01 00 ..
        (task_key(1, 1), b"v"),
    )
    with pytest.raises(StoreError, match=r"no table 'checkpoint\.db'"):
        store.committed_items("checkpoint.db")


def test_equal_committed_states_are_equal_snapshots() -> None:
    first, second = MemoryStore(), MemoryStore()
    commit_tasks(first, 1, 2)
    commit_tasks(second, 2)
    commit_tasks(second, 1)
    second.table("checkpoint.db", 4)
    assert first.committed_state() != second.committed_state()  # second has one more table
    first.table("checkpoint.db", 4)
    assert first.committed_state() == second.committed_state()
    assert len({first.committed_state(), second.committed_state()}) == 1


def test_a_snapshot_forks_an_independent_store() -> None:
    original = MemoryStore()
    commit_tasks(original, 1)
    state = original.committed_state()
    fork = MemoryStore(state)
    commit_tasks(fork, 2)
    commit_tasks(original, 1, value=b"changed")
    assert original.committed_state() != state
    assert MemoryStore(state).committed_state() == state
    assert fork.committed_items("task.db") == ((task_key(1, 1), b"v"), (task_key(1, 2), b"v"))


def test_install_restores_a_state_at_a_path(path: Path) -> None:
    source = MemoryStore()
    commit_tasks(source, 3)
    MemoryStore.install(path, source.committed_state())
    with MemoryStore.open(path) as store:
        assert store.committed_state() == source.committed_state()
        with pytest.raises(StoreError, match="a writer has it open"):
            MemoryStore.install(path, MemoryState())
    MemoryStore.install(path, MemoryState())
    with MemoryStore.open(path) as store:
        assert store.committed_state() == MemoryState()


def test_snapshots_need_an_open_store() -> None:
    store = MemoryStore()
    store.close()
    with pytest.raises(StoreClosedError):
        store.committed_state()
    with pytest.raises(StoreClosedError):
        store.committed_items("task.db")
