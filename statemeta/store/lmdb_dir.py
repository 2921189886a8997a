"""The files of an LMDB environment directory, as statemeta opens them, before LMDB does.

LMDB opens ``data.mdb`` and ``lock.mdb`` by name with ``O_CREAT`` and follows symlinks, so a
symlinked ``lock.mdb`` has its target overwritten and a dangling ``data.mdb`` creates its
target wherever it points; a FIFO in their place blocks the open forever. And a lock on a
separate file can be deleted away from under its holder. So here:

- ``data.mdb``: a regular file, not a symlink (``lstat``, then ``O_NOFOLLOW | O_NONBLOCK``
  and ``fstat``). The writer holds an exclusive ``flock`` on it: the lock lives on the data
  itself, so no file can be deleted to let a second writer in (deleting ``data.mdb`` leaves
  the directory refused, below).
- ``lock.mdb``: a regular file or missing. statemeta creates it first, without following
  links, with its blocks allocated, so that LMDB's shared map of it cannot fault on a full
  disk.
- ``statemeta.store``: the marker, written once the directory holds a store. A directory with
  it and no ``data.mdb`` is refused, not opened as a new empty store.
- a new ``data.mdb`` is built whole in a temporary directory beside it, then linked in
  (``link`` never replaces a file): an open that fails half way (a full disk) leaves no file
  that later opens refuse.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile

import lmdb

from statemeta.errors import StoreError

DATA_FILE = "data.mdb"
LMDB_LOCK_FILE = "lock.mdb"
MARKER_FILE = "statemeta.store"  # "this directory holds a statemeta store"
MARKER = b"statemeta store: data.mdb holds its tables\n"
LOCK_BYTES = 8192  # LMDB's lock file for its default 126 readers: allocated before it maps it
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def refuse_non_regular(path: str) -> bool:
    """False if nothing is at ``path``; StoreError unless it is a regular file (not a link)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise StoreError(f"{path} is {kind} ({stat.filemode(st.st_mode)}); statemeta opens "
                         "only regular files there, never through a link")
    return True


def open_data_file(env_path: str, *, write: bool) -> int:
    """The descriptor of ``data.mdb``, refused unless a regular file; StoreError if missing."""
    path = os.path.join(env_path, DATA_FILE)
    if not refuse_non_regular(path):
        held = os.path.exists(os.path.join(env_path, MARKER_FILE))
        raise StoreError(
            f"open {env_path}: {DATA_FILE} is missing although {MARKER_FILE} says the "
            "directory held a store (restore it from a copy, or remove the directory)"
            if held else f"open read-only {env_path}: no LMDB environment there"
        )
    fd = os.open(path, (os.O_RDWR if write else os.O_RDONLY) | _OPEN_FLAGS)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the lstat
        os.close(fd)
        raise StoreError(f"{path} is not a regular file")
    return fd


def lock_writer(env_path: str, fd: int) -> None:
    """Take the exclusive writer lock on ``data.mdb`` (``fd``) without waiting."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as e:
        raise StoreError(
            f"open {env_path}: it is already open read-write (by another process, or another "
            f"store in this one: {DATA_FILE} is locked); one writer per directory"
        ) from e


def same_file(fd: int, path: str) -> None:
    """StoreError unless ``path`` still names the file of ``fd`` (not replaced meanwhile)."""
    held, named = os.fstat(fd), os.lstat(path)
    if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
        raise StoreError(f"{path} was replaced while being opened; try again")


def create_data_file(env_path: str) -> None:
    """A new, empty environment's ``data.mdb``, built aside and linked in when complete;
    nothing when the directory has one or held one (``open_data_file`` refuses that)."""
    if refuse_non_regular(os.path.join(env_path, DATA_FILE)) or os.path.lexists(
        os.path.join(env_path, MARKER_FILE)
    ):
        return
    work = tempfile.mkdtemp(prefix=".new-", dir=env_path)
    try:
        env = lmdb.open(work, max_dbs=1, lock=False)
        env.close()
        built = os.path.join(work, DATA_FILE)
        fd = os.open(built, os.O_RDONLY | _OPEN_FLAGS)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):  # another writer linked its own first
            os.link(built, os.path.join(env_path, DATA_FILE))
        _sync_dir(env_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def prepare_lmdb_lock_file(env_path: str) -> None:
    """``lock.mdb`` as a regular file with ``LOCK_BYTES`` allocated (ENOSPC here, not SIGBUS
    in LMDB's map of it)."""
    path = os.path.join(env_path, LMDB_LOCK_FILE)
    refuse_non_regular(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _OPEN_FLAGS, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreError(f"{path} is not a regular file")
        os.posix_fallocate(fd, 0, max(LOCK_BYTES, os.fstat(fd).st_size))
    finally:
        os.close(fd)


def mark(env_path: str) -> None:
    """Write the marker once the directory holds a checked data file."""
    path = os.path.join(env_path, MARKER_FILE)
    if refuse_non_regular(path):
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o644)
    try:
        os.write(fd, MARKER)
        os.fsync(fd)
    finally:
        os.close(fd)
    _sync_dir(env_path)


def _sync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
