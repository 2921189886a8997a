"""The store on LMDB: one environment in ``<path>/stream``, one named sub-database per table.

LMDB gives what tdb gives streamMeta.c: byte keys in memcmp order (shorter key first on a
tie, as tdb's default comparator), atomic durable commits and no recovery step after a
crash. The open transaction is the overlay's write set (statemeta/store/overlay.py): LMDB
sees one short write transaction per ``commit``, in the calling thread, so no LMDB write
transaction outlives a call and none is tied to a thread between calls.

Committed reads run in a fresh read transaction each, so they see the latest committed
state. One writer per directory, as tdb and the meta assume: a read-write store holds an
advisory lock (``flock`` on ``<path>/stream/statemeta.lock``) while open; read-only ones
take none, and open LMDB without its locking so that they write no file (spec/store.md,
Read-only mode). The data file is checked before LMDB maps it (statemeta/store/lmdb_file.py).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from typing import TypeVar

import attrs
import lmdb

from statemeta.errors import StoreError
from statemeta.store.lmdb_file import check_data_file
from statemeta.store.overlay import OverlayStore, Rows, Writes

ENV_DIR = "stream"  # tdb's directory under the vnode's tq path (reference §3.1)
DATA_FILE = "data.mdb"
LOCK_FILE = "statemeta.lock"  # the one-writer lock, beside LMDB's own lock.mdb
DEFAULT_MAP_SIZE = 1 << 30  # address space, not disk: the file grows only as pages are written
MAX_TABLES = 16
UNLOCKED_READ_ATTEMPTS = 5
_T = TypeVar("_T")


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


@attrs.define
class _SharedEnv:
    """One LMDB environment open in this process and the stores that use it.

    LMDB forbids opening one environment twice in a process (its locks belong to the process
    and the file, so a second open's close would drop the first one's), and the ``lmdb``
    package refuses it. So every store on the same data file in this process shares one.
    """

    env: lmdb.Environment
    locked: bool  # opened with LMDB's locking (by a writer); False: read-only, no locking
    users: int = 1


_ENVS: dict[tuple[int, int], _SharedEnv] = {}  # by (st_dev, st_ino) of data.mdb
_ENVS_LOCK = threading.Lock()


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _attach(env_path: str, *, readonly: bool, durable: bool, map_size: int) -> _SharedEnv:
    """The environment in ``env_path``: this process's open one, or a newly opened one.

    The caller holds ``_ENVS_LOCK`` (and, to write, the directory's writer lock).
    """
    data_path = os.path.join(env_path, DATA_FILE)
    file_id = _file_id(data_path)
    shared = _ENVS.get(file_id) if file_id is not None else None
    if shared is not None:
        if not readonly:
            raise StoreError(
                f"open {env_path}: {shared.users} read-only store(s) of this process still "
                "have it open; close them before opening it read-write"
            )
        shared.users += 1
        return shared
    if file_id is None and readonly:
        raise StoreError(f"open read-only {env_path}: no LMDB environment there")
    if file_id is not None:
        check_data_file(data_path)
    if readonly:
        env = lmdb.open(
            env_path, map_size=map_size, readonly=True, lock=False, create=False,
            max_dbs=MAX_TABLES,
        )
    else:
        env = lmdb.open(
            env_path, map_size=map_size, sync=durable, metasync=durable,
            max_dbs=MAX_TABLES, max_spare_txns=1,
        )
    created = os.stat(data_path)
    shared = _SharedEnv(env, locked=not readonly)
    _ENVS[created.st_dev, created.st_ino] = shared
    return shared


class LmdbStore(OverlayStore["lmdb._Database"]):
    """The file-backed transactional store (implements ``statemeta.store.protocol.Store``)."""

    def __init__(
        self, path: str, shared: _SharedEnv, *, readonly: bool, lock_fd: int | None
    ) -> None:
        super().__init__(path, readonly=readonly)
        self._shared = shared
        self._env = shared.env
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
        ``readonly`` never creates or writes a file, and shares the environment when this
        process has it open already (spec/store.md, Read-only mode). A data file that is
        cut short or whose meta pages are damaged is a StoreError before anything is mapped.
        """
        env_path = os.path.join(os.path.abspath(path), ENV_DIR)
        lock_fd = None
        try:
            if not readonly:
                os.makedirs(env_path, exist_ok=True)
                lock_fd = lock_writer(env_path)
            with _ENVS_LOCK:
                shared = _attach(env_path, readonly=readonly, durable=durable, map_size=map_size)
        except BaseException as e:
            if lock_fd is not None:
                os.close(lock_fd)
            if isinstance(e, (lmdb.Error, OSError)):
                raise StoreError(f"open {env_path}: {e}") from e
            raise
        return cls(env_path, shared, readonly=readonly, lock_fd=lock_fd)

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
        return self._in_snapshot(
            lambda txn: txn.get(key, db=handle), "get", self._table_names[handle], key
        )

    def _scan(self, handle: lmdb._Database) -> Rows:
        return self._in_snapshot(
            lambda txn: list(txn.cursor(db=handle)), "items", self._table_names[handle]
        )

    def _in_snapshot(
        self, read: Callable[[lmdb.Transaction[bytes]], _T], operation: str, table: str,
        key: bytes | None = None,
    ) -> _T:
        """``read`` in a fresh read transaction, so it sees the latest committed state.

        Without LMDB's locking no reader slot protects the snapshot's pages, and a writer
        may reuse them from its second commit after the snapshot on. So an unlocked read
        counts as done only if at most one commit happened from just before it to its end;
        else it is read again (spec/store.md, Read-only mode).
        """
        self._live(operation)
        for _attempt in range(UNLOCKED_READ_ATTEMPTS):
            before = self._last_txnid()
            try:
                with self._env.begin() as txn:
                    result = read(txn)
            except lmdb.Error as e:
                if self._shared.locked or self._last_txnid() <= before + 1:
                    raise self._error(operation, e, table, key) from e
                continue
            if self._shared.locked or self._last_txnid() <= before + 1:
                return result
        raise StoreError(
            f"{operation} in {self._path} table {table!r}: a writer committed twice or more "
            f"during each of {UNLOCKED_READ_ATTEMPTS} unlocked reads; try again"
        )

    def _last_txnid(self) -> int:
        return -1 if self._shared.locked else int(self._env.info()["last_txnid"])

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
        with _ENVS_LOCK:
            self._shared.users -= 1
            if self._shared.users == 0:
                self._env.close()
                for file_id, shared in list(_ENVS.items()):
                    if shared is self._shared:
                        del _ENVS[file_id]
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
