"""The store on LMDB: one environment in ``<path>/stream``, one named sub-database per table.

LMDB gives what tdb gives streamMeta.c: byte keys in memcmp order (shorter key first on a
tie, as tdb's default comparator), atomic durable commits and no recovery step after a
crash. The open transaction is the overlay's write set (statemeta/store/overlay.py): LMDB
sees one short write transaction per ``commit``, in the calling thread, so no LMDB write
transaction outlives a call and none is tied to a thread between calls.

Committed reads run in a fresh read transaction each, so they see the latest committed
state. One writer per directory, as tdb and the meta assume: a read-write store holds an
advisory lock (``flock`` on ``<path>/stream/statemeta.lock``) while open; read-only ones
take none (spec/store.md).
"""

from __future__ import annotations

import fcntl
import os

import lmdb

from statemeta.errors import StoreError
from statemeta.store.overlay import OverlayStore, Rows, Writes

ENV_DIR = "stream"  # tdb's directory under the vnode's tq path (reference §3.1)
LOCK_FILE = "statemeta.lock"  # the one-writer lock, beside LMDB's own lock.mdb
DEFAULT_MAP_SIZE = 1 << 30  # address space, not disk: the file grows only as pages are written
MAX_TABLES = 16


def lock_writer(env_path: str) -> int:
    """Take the directory's writer lock without waiting; its descriptor holds it."""
    lock_path = os.path.join(env_path, LOCK_FILE)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as e:
        os.close(fd)
        raise StoreError(
            f"open {env_path}: it is already open read-write (by another process, or another "
            f"store in this one: {lock_path} is locked); one writer per directory"
        ) from e
    return fd


class LmdbStore(OverlayStore["lmdb._Database"]):
    """The file-backed transactional store (implements ``statemeta.store.protocol.Store``)."""

    def __init__(
        self, path: str, env: lmdb.Environment, *, readonly: bool, lock_fd: int | None
    ) -> None:
        super().__init__(path, readonly=readonly)
        self._env = env
        self._lock_fd = lock_fd
        self._table_names: dict[lmdb._Database, str] = {}  # for error messages

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
        ``readonly`` never creates or writes a file (see spec/store.md for the lock choice).
        """
        env_path = os.path.join(os.path.abspath(path), ENV_DIR)
        lock_fd = None
        try:
            if readonly:
                if not os.path.isfile(os.path.join(env_path, "data.mdb")):
                    raise StoreError(f"open read-only {env_path}: no LMDB environment there")
                # A writer always has lock.mdb; without one no locking process has it open.
                lock = os.path.isfile(os.path.join(env_path, "lock.mdb"))
                env = lmdb.open(
                    env_path, map_size=map_size, readonly=True, lock=lock, create=False,
                    max_dbs=MAX_TABLES,
                )
            else:
                os.makedirs(env_path, exist_ok=True)
                lock_fd = lock_writer(env_path)
                env = lmdb.open(
                    env_path, map_size=map_size, sync=durable, metasync=durable,
                    max_dbs=MAX_TABLES, max_spare_txns=1,
                )
        except (lmdb.Error, OSError) as e:
            if lock_fd is not None:
                os.close(lock_fd)
            raise StoreError(f"open {env_path}: {e}") from e
        return cls(env_path, env, readonly=readonly, lock_fd=lock_fd)

    @property
    def durable(self) -> bool:
        """Whether a commit waits for fsync (LMDB's ``sync`` flag as the environment has it)."""
        self._live("durable")
        return bool(self._env.flags()["sync"])

    # -- the backend of the overlay --------------------------------------------------------

    def _open_table(self, name: str) -> lmdb._Database:
        try:
            db = self._env.open_db(name.encode(), create=not self._readonly)
        except lmdb.NotFoundError as e:
            raise StoreError(f"open table {name!r} in read-only {self._path}: no such table") from e
        except lmdb.Error as e:
            raise self._error("open table", e, name) from e
        self._table_names[db] = name
        return db

    def _read(self, handle: lmdb._Database, key: bytes) -> bytes | None:
        self._live("get")
        try:
            with self._env.begin() as txn:
                return txn.get(key, db=handle)
        except lmdb.Error as e:
            raise self._error("get", e, self._table_names[handle], key) from e

    def _scan(self, handle: lmdb._Database) -> Rows:
        self._live("items")
        try:
            with self._env.begin() as txn:
                return list(txn.cursor(db=handle))
        except lmdb.Error as e:
            raise self._error("items", e, self._table_names[handle]) from e

    def _apply(self, batch: list[tuple[lmdb._Database, Writes]]) -> None:
        """One LMDB write transaction; any failure aborts it, so nothing of it is durable."""
        try:
            with self._env.begin(write=True) as txn:  # commits on exit, aborts on an error
                for db, writes in batch:
                    for key, value in writes.items():
                        if value is None:
                            txn.delete(key, db=db)
                        else:
                            txn.put(key, value, db=db)
        except lmdb.Error as e:
            raise self._error("commit (nothing of the transaction is durable)", e) from e

    def _release(self) -> None:
        self._env.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the writer lock

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
