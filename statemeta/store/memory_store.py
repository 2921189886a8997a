"""The store in memory: the same contract as the LMDB store, committed state in plain dicts.

For the property suite and the exhaustive explorer, which simulate crash and reopen by the
thousand and fork states: no disk, no fsync, and a committed state that is a value.

- ``MemoryStore()`` is private to its object (``MemoryStore(state)`` starts from a snapshot).
- ``MemoryStore.open(path)`` stands for the files of ``<path>/stream``: a process-local
  registry keyed by that path keeps the committed tables after close or crash, so a reopen
  sees the last commit, as with files. One read-write store per path at a time (as the LMDB
  store's writer lock); read-only opens share the path's committed state and see commits.
- ``committed_state()`` is a frozen, hashable snapshot of every committed table (equal states
  compare equal); ``MemoryStore(state)`` and ``MemoryStore.install(path, state)`` restore one.
- ``copy()`` is an independent private store in the same state, open transaction included
  (the explorer forks states with it): the committed rows' key-order tuples are shared.
"""

from __future__ import annotations

import os
from typing import ClassVar

import attrs

from statemeta.errors import StoreError
from statemeta.store.lmdb_store import ENV_DIR
from statemeta.store.overlay import OverlayStore, Rows, Writes

Row = tuple[bytes, bytes]
PRIVATE_PATH = "<memory>"


@attrs.frozen(cache_hash=True)
class MemoryState:
    """Every committed table as (name, rows in key order), tables in name order."""

    tables: tuple[tuple[str, tuple[Row, ...]], ...] = ()


@attrs.define(slots=True)
class MemoryTable:
    """One committed table: its rows, and their key order once asked for (until a change)."""

    rows: dict[bytes, bytes] = attrs.field(factory=dict)
    ordered: tuple[Row, ...] | None = None

    def in_key_order(self) -> tuple[Row, ...]:
        if self.ordered is None:
            self.ordered = tuple(sorted(self.rows.items()))
        return self.ordered


@attrs.define(slots=True)
class MemoryFiles:
    """What a path holds between opens: the committed tables, and whether a writer has it."""

    tables: dict[str, MemoryTable]
    writer_open: bool = False

    def copy(self) -> MemoryFiles:
        """The committed tables, copied (their key-order tuples shared); no writer."""
        return MemoryFiles({
            name: MemoryTable(dict(table.rows), table.ordered)
            for name, table in self.tables.items()
        })

    @classmethod
    def from_state(cls, state: MemoryState) -> MemoryFiles:
        return cls({
            name: MemoryTable(dict(rows), rows) for name, rows in state.tables
        })


class MemoryStore(OverlayStore[MemoryTable]):
    """The in-memory transactional store (implements ``statemeta.store.protocol.Store``)."""

    _registry: ClassVar[dict[str, MemoryFiles]] = {}  # env path -> its committed state

    def __init__(
        self,
        state: MemoryState | None = None,
        *,
        path: str = PRIVATE_PATH,
        files: MemoryFiles | None = None,
        readonly: bool = False,
    ) -> None:
        super().__init__(path, readonly=readonly)
        self._files = files or MemoryFiles.from_state(state or MemoryState())
        self._holds_writer = files is not None and not readonly
        if self._holds_writer:
            self._files.writer_open = True

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, readonly: bool = False) -> MemoryStore:
        """Open the committed state of ``<path>/stream``, creating it unless ``readonly``."""
        env_path = env_path_of(path)
        files = cls._registry.get(env_path)
        if files is None:
            if readonly:
                raise StoreError(f"open read-only {env_path}: no memory store there")
            files = cls._registry[env_path] = MemoryFiles({})
        if files.writer_open and not readonly:
            raise StoreError(
                f"open {env_path}: it is already open read-write (a memory store in this "
                "process); one writer per directory"
            )
        return cls(path=env_path, files=files, readonly=readonly)

    @classmethod
    def install(cls, path: str | os.PathLike[str], state: MemoryState) -> None:
        """Make ``state`` the committed state of ``path`` (as restoring a backup there)."""
        env_path = env_path_of(path)
        known = cls._registry.get(env_path)
        if known is not None and known.writer_open:
            raise StoreError(f"install into {env_path}: a writer has it open")
        cls._registry[env_path] = MemoryFiles.from_state(state)

    @classmethod
    def remove(cls, path: str | os.PathLike[str]) -> None:
        """Forget the committed state of ``path`` (as deleting its directory)."""
        cls._registry.pop(env_path_of(path), None)

    def copy(self) -> MemoryStore:
        """An independent private store in this store's state: its committed tables and its
        open transaction (write sets copied). Closing or crashing one leaves the other be."""
        self._live("copy")
        new = MemoryStore(path=self._path, files=self._files.copy(), readonly=self._readonly)
        self._copy_transaction_to(new)
        return new

    def committed_items(self, table: str) -> tuple[Row, ...]:
        """The committed rows of ``table`` in key order (open transaction not included)."""
        self._live("committed_items")
        known = self._files.tables.get(table)
        if known is None:
            raise StoreError(f"committed_items in {self._path}: no table {table!r}")
        return known.in_key_order()

    def committed_state(self) -> MemoryState:
        """A snapshot of every committed table, cheap to take, hash and compare."""
        self._live("committed_state")
        tables = sorted(self._files.tables.items())
        return MemoryState(tuple((name, table.in_key_order()) for name, table in tables))

    # -- the backend of the overlay --------------------------------------------------------

    def _open_table(self, name: str) -> MemoryTable:
        tables = self._files.tables
        if name not in tables:
            if self._readonly:
                raise StoreError(f"open table {name!r} in read-only {self._path}: no such table")
            tables[name] = MemoryTable()
        return tables[name]

    def _read(self, handle: MemoryTable, key: bytes) -> bytes | None:
        self._live("get")
        return handle.rows.get(key)

    def _scan(self, handle: MemoryTable) -> Rows:
        self._live("items")
        return handle.in_key_order()

    def _apply(self, batch: list[tuple[MemoryTable, Writes]]) -> None:
        for table, writes in batch:
            rows = table.rows
            for key, value in writes.items():
                if value is None:
                    rows.pop(key, None)
                else:
                    rows[key] = value
            table.ordered = None

    def _release(self) -> None:
        if self._holds_writer:
            self._files.writer_open = False


def env_path_of(path: str | os.PathLike[str]) -> str:
    """The registry key of ``path``: the environment directory an LmdbStore would use."""
    return os.path.join(os.path.abspath(path), ENV_DIR)
