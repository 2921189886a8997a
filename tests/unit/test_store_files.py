"""The files of a store directory, as issue 34 found them misused (findings 3, 4, 6 and 7).

Each open that LMDB could hang in (a FIFO) runs in a child process with a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from meta_support import committed, open_meta, task

from statemeta.codec import decode_task, encode_task, encode_task_key
from statemeta.errors import StoreError
from statemeta.store import ENV_DIR, MARKER_FILE, LmdbStore
from statemeta.tools.inspect import inspect_meta

REPO_ROOT = Path(__file__).resolve().parents[2]
OLD_LOCK_FILE = "statemeta.lock"  # where the writer lock was before issue 34

CHILD_WRITER = """
import struct, sys
from statemeta.store import LmdbStore
store = LmdbStore.open(sys.argv[1])
tasks = store.table("task.db", 16)
store.begin()
tasks.upsert(struct.pack("<qq", 1, 1), b"first writer")
store.commit()
print("ready", flush=True)
sys.stdin.readline()
"""

CHILD_OPEN = """
import sys
from statemeta.errors import StoreError
from statemeta.store import LmdbStore
try:
    LmdbStore.open(sys.argv[1], readonly=sys.argv[2] == "ro").close()
    print("opened")
except StoreError as e:
    print("StoreError", e)
"""


def _stored(path: Path) -> Path:
    with LmdbStore.open(path) as store:
        store.table("task.db", 16)
    return path / ENV_DIR


def test_deleting_the_lock_files_lets_no_second_writer_in(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_WRITER, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        for name in ("lock.mdb", OLD_LOCK_FILE, MARKER_FILE):
            (tmp_path / ENV_DIR / name).unlink(missing_ok=True)
        with pytest.raises(StoreError, match="already open read-write"):
            LmdbStore.open(tmp_path)
    finally:
        child.kill()
        child.wait(timeout=30)


def test_a_symlinked_lock_mdb_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    env = _stored(tmp_path / "store")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    (env / "lock.mdb").unlink()
    (env / "lock.mdb").symlink_to(victim)
    with pytest.raises(StoreError, match=rf"{env / 'lock.mdb'} is a symlink"):
        LmdbStore.open(tmp_path / "store")
    assert victim.read_bytes() == b"precious"


@pytest.mark.parametrize("readonly", [False, True])
def test_a_dangling_data_mdb_symlink_creates_nothing(tmp_path: Path, readonly: bool) -> None:
    env = tmp_path / "store" / ENV_DIR
    env.mkdir(parents=True)
    target = tmp_path / "elsewhere" / "data.mdb"
    target.parent.mkdir()
    (env / "data.mdb").symlink_to(target)
    with pytest.raises(StoreError, match=rf"{env / 'data.mdb'} is a symlink"):
        LmdbStore.open(tmp_path / "store", readonly=readonly)
    assert not target.exists()


@pytest.mark.parametrize("readonly", [False, True])
def test_a_fifo_in_place_of_data_mdb_is_refused_at_once(tmp_path: Path, readonly: bool) -> None:
    env = _stored(tmp_path)
    (env / "data.mdb").unlink()
    os.mkfifo(env / "data.mdb")
    done = subprocess.run(
        [sys.executable, "-c", CHILD_OPEN, str(tmp_path), "ro" if readonly else "rw"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True,
        timeout=60,
    )
    assert done.stdout.startswith(f"StoreError {env / 'data.mdb'} is not a regular file"), done


@pytest.mark.parametrize("readonly", [False, True])
def test_a_deleted_data_mdb_is_refused_not_opened_empty(tmp_path: Path, readonly: bool) -> None:
    env = _stored(tmp_path)
    (env / "data.mdb").unlink()
    with pytest.raises(StoreError, match=f"data.mdb is missing although {MARKER_FILE}"):
        LmdbStore.open(tmp_path, readonly=readonly)
    assert not (env / "data.mdb").exists()


def test_a_first_open_that_fails_leaves_no_data_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk while the new file is built: nothing is linked in, the next open works."""
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(StoreError, match="No space left"):
        LmdbStore.open(tmp_path)
    assert os.listdir(tmp_path / ENV_DIR) == []
    monkeypatch.setattr(os, "fsync", real_fsync)
    with LmdbStore.open(tmp_path) as store:
        assert list(store.table("task.db", 16).items()) == []


def test_a_flipped_bit_that_still_decodes_is_reported(tmp_path: Path) -> None:
    """Finding 7: a changed checkpoint id decoded fine and load reported nothing."""
    stored = task(6, checkpoint_id=12)
    meta = open_meta(tmp_path)
    meta.register(stored, ver=3)
    meta.close()
    (value,) = committed(tmp_path).values()
    changed = encode_task(attrs.evolve(decode_task(value), checkpoint_id=13))
    at = next(i for i, (a, b) in enumerate(zip(value, changed, strict=True)) if a != b)
    data = tmp_path / ENV_DIR / "data.mdb"
    raw = bytearray(data.read_bytes())
    assert raw.count(value) == 1
    where = raw.find(value) + at
    raw[where] ^= 12 ^ 13
    data.write_bytes(raw)
    key = encode_task_key(stored.stream_id, stored.task_id).hex()
    found = inspect_meta(tmp_path)
    assert found.tasks == () and [b.key_hex for b in found.bad_records] == [key]
    assert "checksum mismatch" in found.bad_records[0].reason
    meta = open_meta(tmp_path, check_invariants=False)  # store-mirror decodes without the sums
    try:
        report = meta.load_all()
    finally:
        meta.close()
    assert report.loaded == () and [r.key_hex for r in report.undecodable] == [key]
