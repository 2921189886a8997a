"""Copies of a memory store and of its fault wrapper: independent, in the same state."""

from __future__ import annotations

from pathlib import Path

import pytest

from statemeta.errors import MisuseError, StoreFault
from statemeta.store import FaultyStore, LmdbStore, MemoryStore

K1, K2 = b"\x01" * 4, b"\x02" * 4


def _store() -> MemoryStore:
    store = MemoryStore()
    table = store.table("t", 4)
    store.begin()
    table.upsert(K1, b"committed")
    store.commit()
    store.begin()
    table.upsert(K2, b"open")
    return store


def test_a_copy_has_the_committed_rows_and_the_open_transaction() -> None:
    store = _store()
    copy = store.copy()
    assert copy.in_transaction
    assert list(copy.table("t", 4).items()) == [(K1, b"committed"), (K2, b"open")]
    assert copy.committed_items("t") == ((K1, b"committed"),)


def test_a_copy_and_its_origin_are_independent() -> None:
    store = _store()
    copy = store.copy()
    copy.table("t", 4).delete(K1)
    copy.commit()
    assert store.in_transaction
    assert list(store.table("t", 4).items()) == [(K1, b"committed"), (K2, b"open")]
    store.abort()
    assert store.committed_items("t") == ((K1, b"committed"),)
    assert copy.committed_items("t") == ((K2, b"open"),)
    copy.close()
    assert store.table("t", 4).get(K1) == b"committed"


def test_a_faulty_copy_keeps_the_fault_plan_and_the_counts() -> None:
    faulty = FaultyStore(_store())
    faulty.fail_next("commit", skip=1)
    faulty.fail_next("put")
    copy = faulty.copy()
    assert copy.armed_faults() == faulty.armed_faults() == ((), (1,), (), (2,))
    assert copy.calls == faulty.calls
    with pytest.raises(StoreFault):
        copy.table("t", 4).upsert(K1, b"x")
    assert copy.armed_faults() == ((), (), (), (2,))
    assert faulty.armed_faults() == ((), (1,), (), (2,))  # the origin's plan is its own
    copy.commit()
    assert copy.armed_faults() == ((), (), (), (1,))


def test_only_a_live_memory_store_is_copied(tmp_path: Path) -> None:
    lmdb = FaultyStore(LmdbStore.open(str(tmp_path)))
    with pytest.raises(MisuseError):
        lmdb.copy()
    lmdb.close()
    crashed = FaultyStore(_store())
    crashed.crash()
    with pytest.raises(MisuseError):
        crashed.copy()
