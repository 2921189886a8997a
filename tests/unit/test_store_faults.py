"""The fault-injecting wrapper: what each fault does to the store beneath (both backends)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from statemeta.errors import (
    KeyLengthError,
    MisuseError,
    StoreClosedError,
    StoreFault,
    TransactionError,
)
from statemeta.store import FaultyStore, OverlayTable, Store
from tests.unit import store_backends
from tests.unit.store_backends import Opener


def task_key(stream_id: int, task_id: int) -> bytes:
    return struct.pack("<qq", stream_id, task_id)


reopen = store_backends.reopen  # the fixture, parametrized over both backends


@pytest.fixture
def faulty(reopen: Opener, tmp_path: Path) -> Iterator[FaultyStore]:
    wrapper = FaultyStore(reopen(tmp_path))
    yield wrapper
    wrapper.close()


def committed_items(reopen: Opener, path: Path) -> list[tuple[bytes, bytes]]:
    reopened = reopen(path)
    try:
        return list(reopened.table("task.db", 16).items())
    finally:
        reopened.close()


def test_faulty_store_satisfies_the_protocol_and_wraps_real_tables(faulty: FaultyStore) -> None:
    as_protocol: Store = faulty
    assert as_protocol.path == faulty.inner.path
    tasks = faulty.table("task.db", 16)
    assert isinstance(tasks.inner, OverlayTable)
    with pytest.raises(KeyLengthError):
        tasks.get(b"short")


def test_failed_put_writes_nothing_and_keeps_the_transaction(faulty: FaultyStore) -> None:
    tasks = faulty.table("task.db", 16)
    faulty.begin()
    faulty.fail_next("put", skip=1)
    tasks.upsert(task_key(1, 1), b"first")
    with pytest.raises(StoreFault, match=r"put failure #2 table 'task.db' key "):
        tasks.upsert(task_key(1, 2), b"second")
    tasks.upsert(task_key(1, 3), b"third")
    assert faulty.in_transaction
    assert tasks.get(task_key(1, 2)) is None
    faulty.commit()
    assert [key for key, _ in tasks.items()] == [task_key(1, 1), task_key(1, 3)]


def test_failed_delete_keeps_the_key(faulty: FaultyStore) -> None:
    tasks = faulty.table("task.db", 16)
    faulty.begin()
    tasks.upsert(task_key(1, 1), b"v")
    faulty.fail_next("delete")
    with pytest.raises(StoreFault, match="delete failure"):
        tasks.delete(task_key(1, 1))
    assert tasks.get(task_key(1, 1)) == b"v"
    tasks.delete(task_key(1, 1))  # the fault fired once
    assert tasks.get(task_key(1, 1)) is None


def test_failed_commit_aborts_the_transaction(
    faulty: FaultyStore, reopen: Opener, tmp_path: Path
) -> None:
    tasks = faulty.table("task.db", 16)
    faulty.begin()
    tasks.upsert(task_key(1, 1), b"committed")
    faulty.commit()
    faulty.begin()
    tasks.upsert(task_key(1, 2), b"lost")
    faulty.fail_next("commit")
    with pytest.raises(StoreFault, match="commit failure"):
        faulty.commit()
    assert not faulty.in_transaction
    with pytest.raises(TransactionError):
        tasks.upsert(task_key(1, 3), b"needs a new begin")
    assert list(tasks.items()) == [(task_key(1, 1), b"committed")]
    faulty.close()
    assert committed_items(reopen, tmp_path) == [(task_key(1, 1), b"committed")]


def test_failed_begin_opens_no_transaction(faulty: FaultyStore) -> None:
    faulty.fail_next("begin")
    with pytest.raises(StoreFault, match="begin failure"):
        faulty.begin()
    assert not faulty.in_transaction
    faulty.begin()
    assert faulty.in_transaction


def test_crash_drops_the_open_transaction_and_disables_the_wrapper(
    reopen: Opener, tmp_path: Path
) -> None:
    faulty = FaultyStore(reopen(tmp_path))
    tasks = faulty.table("task.db", 16)
    faulty.begin()
    tasks.upsert(task_key(1, 1), b"committed")
    faulty.commit()
    faulty.begin()
    tasks.upsert(task_key(1, 1), b"uncommitted")
    faulty.crash()
    assert faulty.crashed
    assert not faulty.in_transaction
    calls: list[Callable[[], object]] = [
        faulty.begin,
        faulty.commit,
        faulty.abort,
        faulty.crash,
        lambda: faulty.table("task.db", 16),
        lambda: faulty.fail_next("put"),
        lambda: tasks.get(task_key(1, 1)),
        lambda: tasks.upsert(task_key(1, 1), b"v"),
        lambda: tasks.delete(task_key(1, 1)),
        lambda: tasks.items(),
    ]
    for call in calls:
        with pytest.raises(StoreClosedError, match="crashed"):
            call()
    faulty.close()  # closing a crashed store is a no-op
    assert committed_items(reopen, tmp_path) == [(task_key(1, 1), b"committed")]


def test_crash_next_crashes_in_place_of_the_chosen_call(reopen: Opener, tmp_path: Path) -> None:
    faulty = FaultyStore(reopen(tmp_path))
    tasks = faulty.table("task.db", 16)
    faulty.crash_next("commit", skip=1)
    for task_id in (1, 2):
        faulty.begin()
        tasks.upsert(task_key(1, task_id), b"v")
        if task_id == 1:
            faulty.commit()
    with pytest.raises(StoreFault, match="injected crash at commit #2"):
        faulty.commit()
    assert faulty.crashed
    with pytest.raises(StoreClosedError):
        faulty.begin()
    assert committed_items(reopen, tmp_path) == [(task_key(1, 1), b"v")]


def test_counters_count_every_call_faulted_ones_included(faulty: FaultyStore) -> None:
    tasks = faulty.table("task.db", 16)
    faulty.begin()
    tasks.upsert(task_key(1, 1), b"v")
    faulty.fail_next("put")
    with pytest.raises(StoreFault):
        tasks.upsert(task_key(1, 2), b"v")
    tasks.get(task_key(1, 1))
    list(tasks.items())
    tasks.delete(task_key(1, 1))
    faulty.commit()
    faulty.abort()
    assert faulty.calls == {
        "begin": 1,
        "put": 2,
        "get": 1,
        "items": 1,
        "delete": 1,
        "commit": 1,
        "abort": 1,
    }
    assert faulty.faults_injected == 1


def test_several_faults_can_be_planned_at_once(faulty: FaultyStore) -> None:
    tasks = faulty.table("task.db", 16)
    faulty.begin()
    faulty.fail_next("put")
    faulty.fail_next("put", skip=2)
    outcomes = []
    for task_id in range(4):
        try:
            tasks.upsert(task_key(1, task_id), b"v")
            outcomes.append("ok")
        except StoreFault:
            outcomes.append("fault")
    assert outcomes == ["fault", "ok", "fault", "ok"]


@pytest.mark.parametrize(("op", "skip"), [("get", 0), ("abort", 0), ("put", -1)])
def test_bad_fault_plans_are_refused(faulty: FaultyStore, op: str, skip: int) -> None:
    with pytest.raises(MisuseError):
        faulty.fail_next(op, skip)  # type: ignore[arg-type]
