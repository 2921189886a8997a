"""The store against spec/store.md: both backends, then LMDB's files, locks and processes."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from statemeta.errors import (
    KeyLengthError,
    MissingKeyError,
    StoreClosedError,
    StoreError,
    TransactionError,
)
from statemeta.store import LOCK_FILE, MARKER_FILE, LmdbStore, Store, lmdb_store
from statemeta.store.lmdb_pages import FileImage
from tests.unit import store_backends
from tests.unit.store_backends import AnyStore, Opener, open_lmdb

REPO_ROOT = Path(__file__).resolve().parents[2]
TASK_KEY_LEN = 16
CHECKPOINT_KEY_LEN = 4


def task_key(stream_id: int, task_id: int) -> bytes:
    return struct.pack("<qq", stream_id, task_id)


reopen = store_backends.reopen  # the fixture, parametrized over both backends


@pytest.fixture
def store(reopen: Opener, tmp_path: Path) -> Iterator[AnyStore]:
    with reopen(tmp_path) as opened:
        yield opened


def test_every_backend_satisfies_the_protocol(store: AnyStore) -> None:
    as_protocol: Store = store
    assert as_protocol.path == str(store.path)


def test_environment_lives_in_stream_subdirectory(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "vnode" / "tq") as opened:
        assert opened.path == str(tmp_path / "vnode" / "tq" / "stream")
    assert sorted(os.listdir(tmp_path / "vnode" / "tq" / "stream")) == [
        "data.mdb",
        "lock.mdb",
        MARKER_FILE,
    ]


def test_durable_by_default_relaxed_only_on_request(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "a") as durable:
        assert durable.durable
    with LmdbStore.open(tmp_path / "b", durable=False) as relaxed:
        assert not relaxed.durable


def test_committed_data_survives_reopen(reopen: Opener, tmp_path: Path) -> None:
    with reopen(tmp_path) as first:
        tasks = first.table("task.db", TASK_KEY_LEN)
        checkpoints = first.table("checkpoint.db", CHECKPOINT_KEY_LEN)
        first.begin()
        tasks.upsert(task_key(1, 2), b"task")
        checkpoints.upsert(struct.pack("<i", 7), b"checkpoint")
        first.commit()
    with reopen(tmp_path) as second:
        assert list(second.table("task.db", TASK_KEY_LEN).items()) == [(task_key(1, 2), b"task")]
        assert second.table("checkpoint.db", CHECKPOINT_KEY_LEN).get(struct.pack("<i", 7)) == (
            b"checkpoint"
        )


def test_aborted_writes_are_gone(store: AnyStore) -> None:
    tasks = store.table("task.db", TASK_KEY_LEN)
    store.begin()
    tasks.upsert(task_key(1, 1), b"kept")
    store.commit()
    store.begin()
    tasks.upsert(task_key(1, 2), b"aborted")
    tasks.delete(task_key(1, 1))
    store.abort()
    assert not store.in_transaction
    assert list(tasks.items()) == [(task_key(1, 1), b"kept")]


def test_close_with_open_transaction_aborts_it(reopen: Opener, tmp_path: Path) -> None:
    with reopen(tmp_path) as first:
        tasks = first.table("task.db", TASK_KEY_LEN)
        first.begin()
        tasks.upsert(task_key(1, 1), b"committed")
        first.commit()
        first.begin()
        tasks.upsert(task_key(1, 1), b"uncommitted")
        tasks.upsert(task_key(2, 2), b"uncommitted")
    with reopen(tmp_path) as second:
        assert list(second.table("task.db", TASK_KEY_LEN).items()) == [
            (task_key(1, 1), b"committed")
        ]


def test_reads_inside_the_transaction_see_its_own_writes(store: AnyStore) -> None:
    tasks = store.table("task.db", TASK_KEY_LEN)
    store.begin()
    tasks.upsert(task_key(1, 1), b"v1")
    assert tasks.get(task_key(1, 1)) == b"v1"
    tasks.upsert(task_key(1, 1), b"v2")
    assert tasks.get(task_key(1, 1)) == b"v2"
    assert list(tasks.items()) == [(task_key(1, 1), b"v2")]
    tasks.delete(task_key(1, 1))
    assert tasks.get(task_key(1, 1)) is None
    assert list(tasks.items()) == []


def test_items_is_a_snapshot_safe_to_write_under(store: AnyStore) -> None:
    tasks = store.table("task.db", TASK_KEY_LEN)
    keys = [task_key(1, n) for n in range(5)]
    store.begin()
    for key in keys:
        tasks.upsert(key, b"v")
    seen = []
    for key, _ in tasks.items():
        seen.append(key)
        tasks.delete(key)
        tasks.upsert(task_key(9, len(seen)), b"new")
    assert seen == sorted(keys)
    assert [key for key, _ in tasks.items()] == [task_key(9, n) for n in range(1, 6)]


def test_tables_are_separate(store: AnyStore) -> None:
    tasks = store.table("task.db", TASK_KEY_LEN)
    other = store.table("other.db", TASK_KEY_LEN)
    store.begin()
    tasks.upsert(task_key(1, 1), b"task")
    store.commit()
    assert other.get(task_key(1, 1)) is None
    assert list(other.items()) == []


def test_delete_of_a_missing_key_raises_and_keeps_the_transaction(store: AnyStore) -> None:
    tasks = store.table("task.db", TASK_KEY_LEN)
    store.begin()
    tasks.upsert(task_key(1, 1), b"v")
    with pytest.raises(MissingKeyError) as raised:
        tasks.delete(task_key(1, 2))
    assert raised.value.table == "task.db"
    assert raised.value.key == task_key(1, 2)
    assert task_key(1, 2).hex() in str(raised.value)
    store.commit()
    assert tasks.get(task_key(1, 1)) == b"v"


@pytest.mark.parametrize(("name", "key_len"), [("task.db", 16), ("checkpoint.db", 4)])
@pytest.mark.parametrize("size", [0, 3, 5, 15, 17])
def test_wrong_key_length_is_refused_before_lmdb(
    store: AnyStore, name: str, key_len: int, size: int
) -> None:
    table = store.table(name, key_len)
    key = b"k" * size
    calls: list[Callable[[], object]] = [
        lambda: table.get(key),
        lambda: table.delete(key),
        lambda: table.upsert(key, b""),
    ]
    for call in calls:
        with pytest.raises(KeyLengthError) as raised:
            call()  # no transaction is open: the length is checked first
        error = raised.value
        assert (error.table, error.expected, error.got) == (name, key_len, size)


def test_table_without_key_length_takes_any_lmdb_key(store: AnyStore) -> None:
    table = store.table("any", None)
    assert table.key_len is None
    store.begin()
    for size in (1, 4, 16, 511):
        table.upsert(b"k" * size, bytes([size % 256]))
    for size in (0, 512):
        with pytest.raises(StoreError, match=f"has {size} bytes"):
            table.upsert(b"k" * size, b"")
    assert store.in_transaction
    store.commit()
    assert [len(key) for key, _ in table.items()] == [1, 4, 16, 511]


def test_transaction_protocol_errors(store: AnyStore) -> None:
    tasks = store.table("task.db", TASK_KEY_LEN)
    with pytest.raises(TransactionError, match="no write transaction"):
        tasks.upsert(task_key(1, 1), b"v")
    with pytest.raises(TransactionError, match="no write transaction"):
        tasks.delete(task_key(1, 1))
    with pytest.raises(TransactionError, match="no write transaction"):
        store.commit()
    store.abort()  # a no-op with none open
    store.begin()
    with pytest.raises(TransactionError, match="open already"):
        store.begin()
    with pytest.raises(TransactionError, match="before begin"):
        store.table("late.db", 4)
    assert store.in_transaction


def test_a_transaction_may_move_between_threads(store: AnyStore) -> None:
    """Begin, write and commit from three threads (the facade's lock serializes them)."""
    tasks = store.table("task.db", TASK_KEY_LEN)
    steps: list[Callable[[], None]] = [
        store.begin,
        lambda: tasks.upsert(task_key(1, 1), b"v"),
        store.commit,
    ]
    raised: list[BaseException] = []

    def run(step: Callable[[], None]) -> None:
        try:
            step()
        except BaseException as e:
            raised.append(e)

    for step in steps:
        worker = threading.Thread(target=run, args=(step,))
        worker.start()
        worker.join()
    assert raised == []
    assert not store.in_transaction
    assert tasks.get(task_key(1, 1)) == b"v"


def test_writes_since_begin_overlay_the_committed_rows(store: AnyStore) -> None:
    tasks = store.table("task.db", TASK_KEY_LEN)
    store.begin()
    for task_id in (1, 3, 5):
        tasks.upsert(task_key(1, task_id), b"committed")
    store.commit()
    store.begin()
    tasks.upsert(task_key(1, 3), b"replaced")
    tasks.delete(task_key(1, 5))
    tasks.upsert(task_key(1, 4), b"new")
    tasks.upsert(task_key(1, 6), b"new then deleted")
    tasks.delete(task_key(1, 6))
    with pytest.raises(MissingKeyError):
        tasks.delete(task_key(1, 5))  # deleted in this transaction
    with pytest.raises(MissingKeyError):
        tasks.delete(task_key(1, 6))
    pending = [
        (task_key(1, 1), b"committed"),
        (task_key(1, 3), b"replaced"),
        (task_key(1, 4), b"new"),
    ]
    assert list(tasks.items()) == pending
    assert [tasks.get(task_key(1, n)) for n in (5, 6)] == [None, None]
    store.commit()
    assert list(tasks.items()) == pending
    assert tasks.get(task_key(1, 5)) is None


def test_use_after_close_raises_store_closed(reopen: Opener, tmp_path: Path) -> None:
    closed = reopen(tmp_path)
    tasks = closed.table("task.db", TASK_KEY_LEN)
    closed.close()
    closed.close()  # idempotent
    assert closed.closed
    assert not closed.in_transaction
    calls: list[Callable[[], object]] = [
        closed.begin,
        closed.commit,
        closed.abort,
        lambda: closed.table("task.db", TASK_KEY_LEN),
        lambda: tasks.get(task_key(1, 1)),
        lambda: tasks.upsert(task_key(1, 1), b"v"),
        lambda: tasks.delete(task_key(1, 1)),
        lambda: tasks.items(),
    ]
    for call in calls:
        with pytest.raises(StoreClosedError, match="closed"):
            call()


def test_same_table_name_returns_the_same_table(store: AnyStore) -> None:
    assert store.table("task.db", TASK_KEY_LEN) is store.table("task.db", TASK_KEY_LEN)
    with pytest.raises(StoreError, match="key length 16, asked for 4"):
        store.table("task.db", 4)
    with pytest.raises(StoreError, match=r"not in 1\.\.511"):
        store.table("huge", 512)


def test_key_order_is_memcmp_not_numeric(store: AnyStore) -> None:
    tasks = store.table("task.db", TASK_KEY_LEN)
    ids = [(1, 0), (256, 0), (-1, 0), (0, 5), (0, -5), (2**63 - 1, 0), (-(2**63), 0)]
    store.begin()
    for stream_id, task_id in ids:
        tasks.upsert(task_key(stream_id, task_id), b"")
    store.commit()
    order = [struct.unpack("<qq", key) for key, _ in tasks.items()]
    # 256 (00 01 ..) sorts before 1 (01 00 ..); -1 (ff ..) sorts after every positive id
    assert order == [(0, 5), (0, -5), (-(2**63), 0), (256, 0), (1, 0), (2**63 - 1, 0), (-1, 0)]


def test_map_full_at_commit_is_a_store_error_that_keeps_committed_data(tmp_path: Path) -> None:
    small = LmdbStore.open(tmp_path, durable=False, map_size=64 * 1024)
    tasks = small.table("task.db", TASK_KEY_LEN)
    small.begin()
    tasks.upsert(task_key(1, 1), b"committed")
    small.commit()
    small.begin()
    for n in range(1_000):  # 200 KiB into a 64 KiB map: the writes wait in the overlay
        tasks.upsert(task_key(2, n), b"x" * 200)
    with pytest.raises(StoreError, match=r"MDB_MAP_FULL.*reopen with a larger map_size") as raised:
        small.commit()
    assert "nothing of the transaction is durable" in str(raised.value)
    assert str(small.path) in str(raised.value)
    assert not small.in_transaction  # the failed commit ended the transaction
    assert list(tasks.items()) == [(task_key(1, 1), b"committed")]
    small.close()
    with LmdbStore.open(tmp_path, durable=False) as larger:
        assert list(larger.table("task.db", TASK_KEY_LEN).items()) == [
            (task_key(1, 1), b"committed")
        ]


def test_lmdb_errors_are_wrapped_with_the_path(tmp_path: Path) -> None:
    (tmp_path / "stream").write_bytes(b"not a directory")
    with pytest.raises(StoreError, match=re.escape(str(tmp_path / "stream"))):
        LmdbStore.open(tmp_path)


def test_a_second_writer_in_one_process_is_refused(
    store: AnyStore, reopen: Opener, tmp_path: Path
) -> None:
    with pytest.raises(StoreError, match="already open read-write"):
        reopen(tmp_path)
    store.close()
    with reopen(tmp_path) as second:  # the first one's close released the path
        assert second.table("task.db", TASK_KEY_LEN).get(task_key(1, 1)) is None


# -- crash and read-only access from other processes ---------------------------------------

CHILD_WRITER = """
import struct, sys, time
from statemeta.store import LmdbStore
store = LmdbStore.open(sys.argv[1])
tasks = store.table("task.db", 16)
key = lambda s, t: struct.pack("<qq", s, t)
store.begin()
tasks.upsert(key(1, 1), b"committed-1")
tasks.upsert(key(1, 2), b"committed-2")
store.commit()
store.begin()
tasks.upsert(key(1, 1), b"uncommitted")
tasks.delete(key(1, 2))
tasks.upsert(key(1, 3), b"uncommitted")
print("ready", flush=True)
if sys.argv[2] == "commit-on-input":
    sys.stdin.readline()
    store.commit()
    print("committed", flush=True)
time.sleep(60)
"""

COMMITTED = [(task_key(1, 1), b"committed-1"), (task_key(1, 2), b"committed-2")]


def child_process(script: str, *args: str) -> subprocess.Popen[str]:
    """``python -c script args``, talking over pipes (text lines)."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@contextlib.contextmanager
def writer_process(path: Path, mode: str) -> Iterator[subprocess.Popen[str]]:
    """A child process that committed COMMITTED and holds an uncommitted transaction."""
    with child_process(CHILD_WRITER, str(path), mode) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == "ready\n"
            yield child
        finally:
            child.kill()


def test_sigkill_mid_transaction_keeps_the_last_committed_state(tmp_path: Path) -> None:
    with writer_process(tmp_path, "sleep") as child:
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    with LmdbStore.open(tmp_path) as after:
        assert list(after.table("task.db", TASK_KEY_LEN).items()) == COMMITTED


def test_a_second_writer_process_is_refused_until_the_first_dies(tmp_path: Path) -> None:
    with writer_process(tmp_path, "sleep") as child:
        with pytest.raises(StoreError, match=f"already open read-write.*{LOCK_FILE}"):
            LmdbStore.open(tmp_path)
        with LmdbStore.open(tmp_path, readonly=True) as reader:  # a reader needs no lock
            assert list(reader.table("task.db", TASK_KEY_LEN).items()) == COMMITTED
        child.kill()
        child.wait(timeout=30)
    with LmdbStore.open(tmp_path) as after:  # the kernel released the dead writer's lock
        assert list(after.table("task.db", TASK_KEY_LEN).items()) == COMMITTED


CHILD_BULK_COMMIT = """
import struct, sys
from statemeta.store import LmdbStore
store = LmdbStore.open(sys.argv[1])
tasks = store.table("task.db", 16)
store.begin()
tasks.upsert(struct.pack("<qq", 0, 0), b"before")
store.commit()
store.begin()
for n in range(1, 20_001):
    tasks.upsert(struct.pack("<qq", 1, n), b"x" * 100)
print("committing", flush=True)
store.commit()
print("committed", flush=True)
sys.stdin.readline()
"""


def test_sigkill_during_a_large_commit_leaves_all_of_it_or_nothing(tmp_path: Path) -> None:
    with child_process(CHILD_BULK_COMMIT, str(tmp_path)) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == "committing\n"
        child.send_signal(signal.SIGKILL)  # most often while LMDB writes the 20k keys
        assert child.wait(timeout=30) == -signal.SIGKILL
    with LmdbStore.open(tmp_path) as after:
        rows = list(after.table("task.db", TASK_KEY_LEN).items())
    assert rows[0] == (task_key(0, 0), b"before")
    assert len(rows) in (1, 20_001)


def test_readonly_sees_committed_state_beside_a_live_writer(tmp_path: Path) -> None:
    with writer_process(tmp_path, "commit-on-input") as child:
        assert child.stdin is not None and child.stdout is not None
        files = sorted(os.listdir(tmp_path / "stream"))
        with LmdbStore.open(tmp_path, readonly=True) as reader:
            tasks = reader.table("task.db", TASK_KEY_LEN)
            assert list(tasks.items()) == COMMITTED
            assert tasks.get(task_key(1, 3)) is None
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline() == "committed\n"
            assert list(tasks.items()) == [
                (task_key(1, 1), b"uncommitted"),
                (task_key(1, 3), b"uncommitted"),
            ]
        assert sorted(os.listdir(tmp_path / "stream")) == files


def test_readonly_refuses_writes_and_missing_tables(tmp_path: Path) -> None:
    with open_lmdb(tmp_path) as writer:
        tasks = writer.table("task.db", TASK_KEY_LEN)
        writer.begin()
        tasks.upsert(task_key(1, 1), b"v")
        writer.commit()
    with LmdbStore.open(tmp_path, readonly=True) as reader:
        assert reader.readonly
        with pytest.raises(TransactionError, match="read-only"):
            reader.begin()
        with pytest.raises(StoreError, match=r"'checkpoint\.db'.*no such table"):
            reader.table("checkpoint.db", CHECKPOINT_KEY_LEN)
        assert reader.table("task.db", TASK_KEY_LEN).get(task_key(1, 1)) == b"v"


def test_readonly_creates_no_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no LMDB environment"):
        LmdbStore.open(tmp_path / "missing", readonly=True)
    assert not (tmp_path / "missing").exists()
    with open_lmdb(tmp_path) as writer:
        writer.table("task.db", TASK_KEY_LEN)
    for name in ("lock.mdb", MARKER_FILE):  # e.g. a copied backup: only data.mdb
        (tmp_path / "stream" / name).unlink()
    with LmdbStore.open(tmp_path, readonly=True) as reader:
        assert list(reader.table("task.db", TASK_KEY_LEN).items()) == []
    assert os.listdir(tmp_path / "stream") == ["data.mdb"]


CHILD_GENERATIONS = """
import struct, sys
from statemeta.store import LmdbStore
store = LmdbStore.open(sys.argv[1], durable=False)
tasks = store.table("task.db", 16)
for generation, _line in enumerate(iter(sys.stdin.readline, "")):
    store.begin()
    for n in range(300):
        tasks.upsert(struct.pack("<qq", 1, n), bytes([generation]) * 200)
    store.commit()
    print("committed", generation, flush=True)
"""


def test_an_unlocked_read_that_overlaps_two_commits_is_read_again(tmp_path: Path) -> None:
    """Without LMDB's locking a writer may reuse a reader's pages from its second commit on
    (spec/store.md, Read-only mode): such a read is not returned, it is read again."""
    with child_process(CHILD_GENERATIONS, str(tmp_path)) as child:
        assert child.stdin is not None and child.stdout is not None

        def commit(generation: int) -> None:
            child.stdin.write("commit\n")
            child.stdin.flush()
            assert child.stdout.readline() == f"committed {generation}\n"

        commit(0)
        reads: list[int] = []
        real_read_image = lmdb_store.read_image

        def read(fd: int, data_path: str) -> FileImage:
            reads.append(len(reads))
            if len(reads) == 1:  # the writer commits three times inside the first read
                for generation in (1, 2, 3):
                    commit(generation)
            return real_read_image(fd, data_path)

        with LmdbStore.open(tmp_path, readonly=True) as reader:
            table = reader.table("task.db", TASK_KEY_LEN)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(lmdb_store, "read_image", read)
                rows = list(table.items())  # the store's read path
        child.stdin.close()
        child.wait(timeout=30)
    assert reads == [0, 1]
    assert len(rows) == 300 and {value for _key, value in rows} == {bytes([3]) * 200}
