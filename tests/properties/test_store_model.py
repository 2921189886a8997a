"""Both store backends against a dict model, and the key order against memcmp.

The model holds the committed tables and, while a transaction is open, the pending view
(committed plus the writes since begin). After every step the open transaction must read the
pending view; with none open (after commit, abort, a fault, a reopen or a crash) the store
must read the committed view.
"""

from __future__ import annotations

import copy
import shutil
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from statemeta.errors import (
    KeyLengthError,
    MissingKeyError,
    StoreFault,
    TransactionError,
)
from statemeta.store import FaultyStore, FaultyTable, LmdbStore, MemoryStore, Store

TABLES = {"task.db": 16, "checkpoint.db": 4}  # the two tables of reference §3.1

INT64 = st.integers(-(2**63), 2**63 - 1)
# Few distinct ids, so that keys repeat: replaces and deletes of present keys are common.
FEW_IDS = st.sampled_from([0, 1, 255, 256, -1, -256, 2**63 - 1, -(2**63)])
KEYS = {
    "task.db": st.builds(lambda s, t: struct.pack("<qq", s, t), FEW_IDS, FEW_IDS),
    "checkpoint.db": st.builds(lambda n: struct.pack("<i", n), st.sampled_from([0, 1, 256, -1])),
}
TABLE_KEYS = st.sampled_from(sorted(TABLES)).flatmap(
    lambda name: st.tuples(st.just(name), KEYS[name])
)
VALUES = st.binary(max_size=32) | st.integers(1_000, 5_000).map(lambda n: b"v" * n)
FAULTS = st.sampled_from([False, False, False, True])  # inject a fault one call in four
TRANSACTION_ENDS = ["commit", "commit", "failed commit", "abort", "crash at commit"]

Tables = dict[str, dict[bytes, bytes]]


class StoreModel(RuleBasedStateMachine):
    """The rules; a subclass per backend says how to open, and remove, a path's store."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="statemeta-store-model-"))
        self.committed: Tables = {name: {} for name in TABLES}
        self.pending: Tables | None = None
        self.touched: set[tuple[str, bytes]] = set()  # every key ever written or committed
        self.open_store()

    def open_backend(self) -> Store:
        raise NotImplementedError

    def open_store(self) -> None:
        self.store = FaultyStore(self.open_backend())
        self.tables: dict[str, FaultyTable] = {
            name: self.store.table(name, key_len) for name, key_len in TABLES.items()
        }
        self.pending = None

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory)

    def in_transaction(self) -> bool:
        return self.pending is not None

    def has_rows(self) -> bool:
        return self.pending is not None and any(self.pending.values())

    @rule()
    def begin(self) -> None:
        if self.pending is not None:
            with pytest.raises(TransactionError):
                self.store.begin()
            return
        self.store.begin()
        self.pending = copy.deepcopy(self.committed)
        self.touched |= {(name, key) for name in TABLES for key in self.committed[name]}

    @precondition(lambda self: not self.in_transaction())
    @rule(table_key=TABLE_KEYS)
    def write_outside_a_transaction(self, table_key: tuple[str, bytes]) -> None:
        name, key = table_key
        with pytest.raises(TransactionError):
            self.tables[name].upsert(key, b"v")
        with pytest.raises(TransactionError):
            self.tables[name].delete(key)
        with pytest.raises(TransactionError):
            self.store.commit()

    @precondition(lambda self: not self.in_transaction())
    @rule(data=st.data(), writes=st.integers(1, 8), end=st.sampled_from(TRANSACTION_ENDS))
    def whole_transaction(self, data: st.DataObject, writes: int, end: str) -> None:
        """Begin, several writes (the views checked after each), then commit or not.

        Single-call rules rarely string enough writes between begin and commit; this one
        makes transactions that change committed rows common.
        """
        self.begin()
        for _ in range(writes):
            if self.has_rows() and data.draw(st.booleans(), label="delete"):
                self.delete_present(data)
            else:
                self.upsert(data.draw(TABLE_KEYS), data.draw(VALUES), fault=False)
            self.reads_match_the_model()
        if end == "commit":
            self.commit(fault=False)
        elif end == "failed commit":
            self.commit(fault=True)
        elif end == "abort":
            self.abort()
        else:
            self.crash_at_commit()

    @precondition(in_transaction)
    @rule(table_key=TABLE_KEYS, value=VALUES, fault=FAULTS)
    def upsert(self, table_key: tuple[str, bytes], value: bytes, fault: bool) -> None:
        assert self.pending is not None
        name, key = table_key
        self.touched.add(table_key)
        if fault:
            self.store.fail_next("put")
            with pytest.raises(StoreFault):
                self.tables[name].upsert(key, value)
        else:
            self.tables[name].upsert(key, value)
            self.pending[name][key] = value

    @precondition(in_transaction)
    @rule(table_key=TABLE_KEYS, fault=FAULTS)
    def delete(self, table_key: tuple[str, bytes], fault: bool) -> None:
        """Any key: most are absent (MissingKeyError)."""
        assert self.pending is not None
        name, key = table_key
        if fault:
            self.store.fail_next("delete")
            with pytest.raises(StoreFault):
                self.tables[name].delete(key)
        elif key not in self.pending[name]:
            with pytest.raises(MissingKeyError):
                self.tables[name].delete(key)
        else:
            self.tables[name].delete(key)
            del self.pending[name][key]

    @precondition(has_rows)
    @rule(data=st.data())
    def delete_present(self, data: st.DataObject) -> None:
        """A key the transaction sees (committed or written since begin)."""
        assert self.pending is not None
        present = sorted((name, key) for name in TABLES for key in self.pending[name])
        name, key = data.draw(st.sampled_from(present))
        self.tables[name].delete(key)
        del self.pending[name][key]

    @rule(name=st.sampled_from(sorted(TABLES)), size=st.integers(0, 20))
    def wrong_key_length(self, name: str, size: int) -> None:
        if size == TABLES[name]:
            size += 1
        with pytest.raises(KeyLengthError):
            self.tables[name].upsert(b"k" * size, b"")

    @precondition(in_transaction)
    @rule(fault=FAULTS)
    def commit(self, fault: bool) -> None:
        if fault:
            self.store.fail_next("commit")
            with pytest.raises(StoreFault):
                self.store.commit()
        else:
            self.store.commit()
            assert self.pending is not None
            self.committed = self.pending
        self.pending = None

    @rule()
    def abort(self) -> None:
        self.store.abort()
        self.pending = None

    @rule(crash=st.booleans())
    def reopen(self, crash: bool) -> None:
        """Close and open again, or crash (the open transaction is lost) and open again."""
        if crash:
            self.store.crash()
        else:
            self.store.close()
        self.open_store()

    @precondition(in_transaction)
    @rule()
    def crash_at_commit(self) -> None:
        self.store.crash_next("commit")
        with pytest.raises(StoreFault):
            self.store.commit()
        self.open_store()

    @invariant()
    def reads_match_the_model(self) -> None:
        view = self.committed if self.pending is None else self.pending
        assert self.store.in_transaction == (self.pending is not None)
        for name, table in self.tables.items():
            assert list(table.items()) == sorted(view[name].items())
        for name, key in self.touched:
            assert self.tables[name].get(key) == view[name].get(key)


class LmdbStoreModel(StoreModel):
    def open_backend(self) -> Store:
        return LmdbStore.open(self.directory, durable=False)


class MemoryStoreModel(StoreModel):
    def open_backend(self) -> Store:
        return MemoryStore.open(self.directory)

    def teardown(self) -> None:
        super().teardown()
        MemoryStore.remove(self.directory)


LmdbStoreModel.TestCase.settings = settings(stateful_step_count=50)
MemoryStoreModel.TestCase.settings = settings(stateful_step_count=50)
test_lmdb_store_matches_the_dict_model = LmdbStoreModel.TestCase
test_memory_store_matches_the_dict_model = MemoryStoreModel.TestCase


@settings(max_examples=50)
@given(ids=st.sets(st.tuples(INT64, INT64), max_size=40))
def test_cursor_order_is_memcmp_order_of_keys(ids: set[tuple[int, int]]) -> None:
    keys = [struct.pack("<qq", stream_id, task_id) for stream_id, task_id in ids]
    with (
        tempfile.TemporaryDirectory(prefix="statemeta-store-order-") as directory,
        LmdbStore.open(directory, durable=False) as store,
    ):
        tasks = store.table("task.db", 16)
        store.begin()
        for key in keys:
            tasks.upsert(key, key[::-1])
        assert [key for key, _ in tasks.items()] == sorted(keys)  # bytes compare = memcmp
        store.commit()
        assert list(tasks.items()) == [(key, key[::-1]) for key in sorted(keys)]
