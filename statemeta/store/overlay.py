"""The open write transaction as a write set kept in memory, over any committed state.

streamMeta.c keeps one tdb transaction open across operations, and the thread-safe facade
lets any thread run an operation. An LMDB write transaction belongs to the thread that
began it and holds the writer lock while open, so the store never keeps one open: ``begin``
starts an empty write set per table, writes go into it, reads look in it first (a value,
or None for a deleted key) and then in the committed state, and ``commit`` hands the whole
set to the backend, which applies it atomically in one short step in the calling thread.

A backend is a subclass of ``OverlayStore`` that supplies the committed state: open a table
(its handle), read a key, scan a table in key order, apply a batch of write sets at once,
release its resources. The LMDB backend keeps it in files, the memory backend in dicts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Generic, NoReturn, Self, TypeVar

from statemeta.errors import (
    KeyLengthError,
    MissingKeyError,
    StoreClosedError,
    StoreError,
    TransactionError,
)

Handle = TypeVar("Handle")  # how a backend names one of its tables
Writes = dict[bytes, bytes | None]  # a table's write set: key -> new value, None = deleted
Rows = Sequence[tuple[bytes, bytes]]  # in key order
MAX_KEY_SIZE = 511  # LMDB's default limit, which every backend keeps (spec/store.md)

_by_key = itemgetter(0)


def merge(committed: Rows, writes: Writes) -> list[tuple[bytes, bytes]]:
    """The committed rows (in key order) as the write set changes them, in key order."""
    rows = [row for row in committed if row[0] not in writes]
    rows.extend((key, value) for key, value in writes.items() if value is not None)
    rows.sort(key=_by_key)  # one sorted run plus k writes: timsort does O(n + k log k)
    return rows


class OverlayTable(Generic[Handle]):
    """One named table: the open transaction's write set over the backend's committed rows."""

    __slots__ = ("_handle", "_key_len", "_name", "_store", "_writes")

    def __init__(
        self, store: OverlayStore[Handle], name: str, key_len: int | None, handle: Handle
    ) -> None:
        self._store = store
        self._name = name
        self._key_len = key_len
        self._handle = handle
        self._writes: Writes | None = None  # None: no transaction open

    @property
    def name(self) -> str:
        return self._name

    @property
    def key_len(self) -> int | None:
        return self._key_len

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}({self._name!r}, key_len={self._key_len}, path={self._store.path!r})"

    def _check_other_length(self, key: bytes) -> None:
        """The slow path of the key check: ``len(key) != key_len`` (always so for None)."""
        size = len(key)
        if self._key_len is not None:
            raise KeyLengthError(self._name, self._key_len, size)
        if not 0 < size <= MAX_KEY_SIZE:
            raise StoreError(
                f"table {self._name!r} in {self._store.path}: key {key.hex()!r} has {size} "
                f"bytes; the store takes 1 to {MAX_KEY_SIZE}"
            )

    def get(self, key: bytes) -> bytes | None:
        if len(key) != self._key_len:
            self._check_other_length(key)
        writes = self._writes
        if writes is not None and key in writes:
            return writes[key]
        return self._store._read(self._handle, key)

    def upsert(self, key: bytes, value: bytes) -> None:
        if len(key) != self._key_len:
            self._check_other_length(key)
        writes = self._writes
        if writes is None:
            self._store._no_txn("upsert", self._name)
        writes[key] = value

    def delete(self, key: bytes) -> None:
        if len(key) != self._key_len:
            self._check_other_length(key)
        writes = self._writes
        if writes is None:
            self._store._no_txn("delete", self._name)
        present = writes[key] if key in writes else self._store._read(self._handle, key)
        if present is None:
            raise MissingKeyError(self._name, key)
        writes[key] = None

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        committed = self._store._scan(self._handle)
        writes = self._writes
        return iter(merge(committed, writes) if writes else committed)


class OverlayStore(ABC, Generic[Handle]):
    """The Store protocol over a backend's committed state (the backend is the subclass)."""

    def __init__(self, path: str, *, readonly: bool) -> None:
        self._path = path
        self._readonly = readonly
        self._closed = False
        self._in_transaction = False
        self._tables: dict[str, OverlayTable[Handle]] = {}

    # -- the backend -----------------------------------------------------------------------

    @abstractmethod
    def _open_table(self, name: str) -> Handle:
        """The handle of table ``name``, created unless read-only (StoreError if it cannot)."""

    @abstractmethod
    def _read(self, handle: Handle, key: bytes) -> bytes | None:
        """The latest committed value of ``key``; StoreClosedError once closed."""

    @abstractmethod
    def _scan(self, handle: Handle) -> Rows:
        """The latest committed rows in key order, read at one instant."""

    @abstractmethod
    def _apply(self, batch: list[tuple[Handle, Writes]]) -> None:
        """Make every write set of ``batch`` durable at once, or none of it (StoreError)."""

    @abstractmethod
    def _release(self) -> None:
        """Give the committed state's resources back (files, locks)."""

    # -- the Store protocol ----------------------------------------------------------------

    @property
    def path(self) -> str:
        return self._path

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    def __repr__(self) -> str:
        state = "closed" if self._closed else "in txn" if self._in_transaction else "open"
        return f"{type(self).__name__}({self._path!r}, {state})"

    def table(self, name: str, key_len: int | None) -> OverlayTable[Handle]:
        """Open (creating if needed) the table ``name``; tables are opened before ``begin``."""
        self._live("table")
        known = self._tables.get(name)
        if known is not None:
            if known.key_len != key_len:
                raise StoreError(
                    f"table {name!r} in {self._path} is open with key length "
                    f"{known.key_len}, asked for {key_len}"
                )
            return known
        if key_len is not None and not 0 < key_len <= MAX_KEY_SIZE:
            raise StoreError(
                f"table {name!r} in {self._path}: key length {key_len} is not in "
                f"1..{MAX_KEY_SIZE}"
            )
        if self._in_transaction:
            raise TransactionError(
                f"open table {name!r} in {self._path} before begin: the write transaction's "
                "tables are fixed when it begins"
            )
        table = OverlayTable(self, name, key_len, self._open_table(name))
        self._tables[name] = table
        return table

    def begin(self) -> None:
        self._live("begin")
        if self._in_transaction:
            raise TransactionError(f"begin in {self._path}: a write transaction is open already")
        if self._readonly:
            raise TransactionError(f"begin in {self._path}: the store is open read-only")
        for table in self._tables.values():
            table._writes = {}
        self._in_transaction = True

    def commit(self) -> None:
        """Apply the write sets at once; whether that succeeds or fails, the transaction ends."""
        self._live("commit")
        if not self._in_transaction:
            self._no_txn("commit")
        tables = self._tables.values()
        batch = [(table._handle, writes) for table in tables if (writes := table._writes)]
        self._end_transaction()
        if batch:
            self._apply(batch)

    def abort(self) -> None:
        self._live("abort")
        self._end_transaction()

    def close(self) -> None:
        if self._closed:
            return
        self._end_transaction()
        self._closed = True
        self._tables.clear()
        self._release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _copy_transaction_to(self, other: OverlayStore[Handle]) -> None:
        """Open this store's open tables in ``other`` and copy the open write sets into it (a
        backend's copy of a store calls it with the new store)."""
        for name, table in self._tables.items():
            other.table(name, table.key_len)
        for name, table in self._tables.items():
            writes = table._writes
            other._tables[name]._writes = None if writes is None else dict(writes)
        other._in_transaction = self._in_transaction

    # -- shared by the tables and the backends ---------------------------------------------

    def _end_transaction(self) -> None:
        for table in self._tables.values():
            table._writes = None
        self._in_transaction = False

    def _live(self, operation: str) -> None:
        if self._closed:
            raise StoreClosedError(f"{operation} on {self._path}: the store is closed")

    def _no_txn(self, operation: str, table: str = "") -> NoReturn:
        self._live(operation)
        where = f" table {table!r}" if table else ""
        raise TransactionError(f"{operation} in {self._path}{where}: no write transaction is open")
