"""The store on LMDB: one environment in ``<path>/stream``, one named sub-database per table.

LMDB gives what tdb gives streamMeta.c: byte keys in memcmp order (shorter key first on a
tie, as tdb's default comparator), atomic durable commits and no recovery step after a
crash. The open transaction is the overlay's write set (statemeta/store/overlay.py): LMDB
sees one short write transaction per ``commit``, in the calling thread, so no LMDB write
transaction outlives a call and none is tied to a thread between calls.

LMDB trusts its file, so statemeta never lets it map one it has not checked: a read-write
open walks the whole file in Python first (statemeta/store/lmdb_pages.py) and then holds the
one writer lock, an exclusive ``flock`` on ``data.mdb`` itself, so that no other process
changes the file under it; read-only stores never call LMDB: they read the file through the
same walk, so neither damage nor a writer beside them can crash them (spec/store.md). The
files are opened as statemeta/store/lmdb_dir.py says (no symlinks, no FIFOs); each record's
checksum is kept beside it (statemeta/store/checksums.py).
"""

from __future__ import annotations

import os

import attrs
import lmdb

from statemeta.errors import StoreError
from statemeta.store.checksums import checked_rows, checked_value, record_sum, sums_table
from statemeta.store.lmdb_dir import (
    DATA_FILE,
    create_data_file,
    lock_writer,
    mark,
    open_data_file,
    prepare_lmdb_lock_file,
    same_file,
)
from statemeta.store.lmdb_file import parse_meta_pages
from statemeta.store.lmdb_pages import FileImage, read_image
from statemeta.store.overlay import OverlayStore, Rows, Writes

ENV_DIR = "stream"  # tdb's directory under the vnode's tq path (reference §3.1)
LOCK_FILE = DATA_FILE  # the file the one-writer lock is held on
DEFAULT_MAP_SIZE = 1 << 30  # address space, not disk: the file grows only as pages are written
MAX_TABLES = 16
UNLOCKED_READ_ATTEMPTS = 5


@attrs.frozen
class _Tables:
    """A table's LMDB sub-database and its checksums' (a writer's handles)."""

    rows: lmdb._Database
    sums: lmdb._Database


class LmdbStore(OverlayStore[str]):
    """The file-backed transactional store (implements ``statemeta.store.protocol.Store``)."""

    def __init__(self, path: str, fd: int, env: lmdb.Environment | None) -> None:
        super().__init__(path, readonly=env is None)
        self._fd = fd  # data.mdb: a writer holds its flock; a reader reads through it
        self._data_path = os.path.join(path, DATA_FILE)
        self._env = env  # None: read-only, LMDB never called
        self._handles: dict[str, _Tables] = {}

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        durable: bool = True,
        map_size: int = DEFAULT_MAP_SIZE,
        readonly: bool = False,
    ) -> LmdbStore:
        """Open the environment in ``<path>/stream``, creating it unless ``readonly``.

        ``durable=False`` skips the fsync at commit (for tests only): a killed process still
        loses nothing committed, an operating-system crash may lose the last commits.
        ``readonly`` never creates or writes a file and never calls LMDB (spec/store.md,
        Read-only mode). A damaged data file, a symlink, a FIFO, or a missing data file in a
        directory that held a store is a StoreError before anything is mapped.
        """
        env_path = os.path.join(os.path.abspath(path), ENV_DIR)
        fd = None
        try:
            if readonly:
                fd = open_data_file(env_path, write=False)
                store = cls(env_path, fd, None)
                store._image()  # refuses a damaged file at open, as a writer does
                return store
            os.makedirs(env_path, exist_ok=True)
            create_data_file(env_path)
            fd = open_data_file(env_path, write=True)
            lock_writer(env_path, fd)
            read_image(fd, os.path.join(env_path, DATA_FILE))  # the whole file, before LMDB
            prepare_lmdb_lock_file(env_path)
            env = lmdb.open(
                env_path, map_size=map_size, sync=durable, metasync=durable,
                max_dbs=2 * MAX_TABLES, max_spare_txns=1, create=False,
            )
            try:
                same_file(fd, os.path.join(env_path, DATA_FILE))
                mark(env_path)
            except BaseException:
                env.close()
                raise
            return cls(env_path, fd, env)
        except BaseException as e:
            if fd is not None:
                os.close(fd)
            if isinstance(e, (lmdb.Error, OSError)):
                raise StoreError(f"open {env_path}: {e}") from e
            raise

    @property
    def durable(self) -> bool:
        """Whether a commit waits for fsync (LMDB's ``sync`` flag as the environment has it)."""
        self._live("durable")
        return self._env is not None and bool(self._env.flags()["sync"])

    # -- the backend of the overlay --------------------------------------------------------

    def _open_table(self, name: str) -> str:
        if self._env is None:
            if name not in self._image().tables:
                raise StoreError(f"open table {name!r} in read-only {self._path}: no such table")
            return name
        try:
            self._handles[name] = self._open_writer_tables(self._env, name)
        except lmdb.Error as e:
            raise self._error("open table", e, name) from e
        return name

    @staticmethod
    def _open_writer_tables(env: lmdb.Environment, name: str) -> _Tables:
        """The table and its checksums; a table without them (written before checksums were
        kept) gets them now, from its rows as they are."""
        rows = env.open_db(name.encode())
        try:
            return _Tables(rows, env.open_db(sums_table(name).encode(), create=False))
        except lmdb.NotFoundError:
            pass
        with env.begin(write=True) as txn:
            sums = env.open_db(sums_table(name).encode(), txn=txn)
            for key, value in txn.cursor(db=rows):
                txn.put(key, record_sum(key, value), db=sums)
        return _Tables(rows, sums)

    def _read(self, handle: str, key: bytes) -> bytes | None:
        self._live("get")
        if self._env is None:
            return dict(self._rows(self._image(), handle)).get(key)
        tables = self._handles[handle]
        try:
            with self._env.begin() as txn:
                value = txn.get(key, db=tables.rows)
                stored_sum = txn.get(key, db=tables.sums)
        except lmdb.Error as e:
            raise self._error("get", e, handle, key) from e
        return None if value is None else checked_value(key, value, stored_sum)

    def _scan(self, handle: str) -> Rows:
        self._live("items")
        if self._env is None:
            return self._rows(self._image(), handle)
        tables = self._handles[handle]
        try:
            with self._env.begin() as txn:
                rows = list(txn.cursor(db=tables.rows))
                sums = dict(txn.cursor(db=tables.sums))
        except lmdb.Error as e:
            raise self._error("items", e, handle) from e
        return checked_rows(rows, sums)

    @staticmethod
    def _rows(image: FileImage, name: str) -> Rows:
        rows = list(image.tables.get(name, ()))
        sums = image.tables.get(sums_table(name))
        return rows if sums is None else checked_rows(rows, dict(sums))  # None: never kept

    def _image(self) -> FileImage:
        """The whole file read and checked, at one committed state (a reader's read).

        No reader slot protects the pages read, and a writer may reuse them from its second
        commit after the read began on. So a read counts only if at most one commit happened
        from just before it to its end; else (or if it found damage) it is read again, up to
        ``UNLOCKED_READ_ATTEMPTS`` times (spec/store.md, Read-only mode).
        """
        failure: StoreError | None = None
        for _attempt in range(UNLOCKED_READ_ATTEMPTS):
            try:
                before = self._last_txnid()
                image = read_image(self._fd, self._data_path)
                if self._last_txnid() <= before + 1:
                    return image
                failure = None
            except StoreError as e:
                failure = e
        raise failure or StoreError(
            f"read {self._path}: a writer committed twice or more during each of "
            f"{UNLOCKED_READ_ATTEMPTS} reads; try again"
        )

    def _last_txnid(self) -> int:
        fd = self._fd
        size = os.fstat(fd).st_size
        return parse_meta_pages(self._data_path, lambda at, n: os.pread(fd, n, at), size)[1].txnid

    def _apply(self, batch: list[tuple[str, Writes]]) -> None:
        """One LMDB write transaction; any failure aborts it, so nothing of it is durable."""
        assert self._env is not None  # begin refuses a read-only store
        try:
            with self._env.begin(write=True) as txn:  # commits on exit, aborts on an error
                for name, writes in batch:
                    tables = self._handles[name]
                    for key, value in writes.items():
                        if value is None:
                            txn.delete(key, db=tables.rows)
                            txn.delete(key, db=tables.sums)
                        else:
                            txn.put(key, value, db=tables.rows)
                            txn.put(key, record_sum(key, value), db=tables.sums)
        except lmdb.Error as e:
            raise self._error("commit (nothing of the transaction is durable)", e) from e

    def _release(self) -> None:
        if self._env is not None:
            self._env.close()
        os.close(self._fd)  # releases the writer lock

    def _error(
        self, operation: str, error: lmdb.Error, table: str = "", key: bytes | None = None
    ) -> StoreError:
        where = f" table {table!r}" if table else ""
        if key is not None:
            where += f" key {key.hex()}"
        hint = ""
        if isinstance(error, lmdb.MapFullError):
            hint = "; committed data is intact, reopen with a larger map_size"
        return StoreError(f"{operation} in {self._path}{where}: {error}{hint}")
