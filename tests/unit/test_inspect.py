"""statemeta inspect: a meta directory's tasks and undecodable records, read-only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import attrs
import pytest
from meta_support import fill_history_pair, open_meta, task

from statemeta.cli import main
from statemeta.codec import STREAM_TASK_KEY_LEN, encode_task_key
from statemeta.meta.core import TASK_TABLE
from statemeta.store import LmdbStore
from statemeta.tools.inspect import StoredTask, inspect_meta

# Key order is memcmp of the little-endian key: stream 0x100 sorts before stream 0x20.
TASKS = (task(5, stream_id=0x100), task(6, checkpoint_id=12), *fill_history_pair())


@pytest.fixture
def meta_dir(tmp_path: Path) -> tuple[Path, int]:
    """A directory written by StreamMeta holding TASKS, and its latest checkpoint id."""
    path = tmp_path / "vnode"
    meta = open_meta(path)
    for t in TASKS:
        meta.register(t, ver=3)
    latest = meta.latest_checkpoint_id()
    meta.close()
    return path, latest


def _file_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _ids(tasks: tuple[StoredTask, ...]) -> list[tuple[int, int]]:
    return [(t.stream_id, t.task_id) for t in tasks]


def test_lists_exactly_the_meta_tasks_in_key_order(meta_dir: tuple[Path, int]) -> None:
    path, latest = meta_dir
    found = inspect_meta(path)
    keys = sorted(encode_task_key(t.stream_id, t.task_id) for t in TASKS)
    assert [encode_task_key(*ids) for ids in _ids(found.tasks)] == keys
    assert found.bad_records == ()
    assert found.latest_checkpoint_id == latest == 12
    by_id = {(t.stream_id, t.task_id): t for t in found.tasks}
    assert by_id[(0x20, 1)].h_task_id == (0x20, 2)
    assert by_id[(0x20, 2)].stream_task_id == (0x20, 1)
    assert by_id[(0x20, 2)].fill_history == 1
    assert by_id[(0x10, 6)].checkpoint_id == 12
    assert all(t.version == 2 and t.value_size > 1400 for t in found.tasks)


def test_a_corrupt_value_is_named_and_the_rest_listed(
    meta_dir: tuple[Path, int], tmp_path: Path
) -> None:
    path, _ = meta_dir
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    bad_key = encode_task_key(0x10, 6)
    store = LmdbStore.open(copy, durable=False)
    table = store.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
    store.begin()
    table.upsert(bad_key, b"\x10\x00\x00\x00garbage")
    store.commit()
    store.close()
    found = inspect_meta(copy)
    assert sorted(_ids(found.tasks)) == sorted(
        (t.stream_id, t.task_id) for t in TASKS if t.task_id != 6
    )
    assert [r.key_hex for r in found.bad_records] == [bad_key.hex()]
    assert "offset" in found.bad_records[0].reason
    assert found.latest_checkpoint_id == 0
    assert main(["inspect", str(copy)]) == 0


def _inspect_both_ways(path: Path) -> None:
    assert main(["inspect", str(path)]) == 0
    assert main(["inspect", str(path), "--json"]) == 0


def _file_states(root: Path) -> dict[str, tuple[bytes, int]]:
    files = _file_bytes(root)
    return {name: (data, (root / name).stat().st_mtime_ns) for name, data in files.items()}


def test_inspect_leaves_every_file_unchanged(
    meta_dir: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    """Bytes and modification times, lock.mdb included: inspect opens LMDB without locking."""
    path, _ = meta_dir
    before = _file_states(path)
    assert set(before) >= {"stream/data.mdb", "stream/lock.mdb"}
    _inspect_both_ways(path)
    assert _file_states(path) == before
    capsys.readouterr()


def test_inspect_of_a_copy_without_lock_file_creates_none(
    meta_dir: tuple[Path, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = meta_dir
    copy = tmp_path / "backup"
    shutil.copytree(path, copy)
    (copy / "stream" / "lock.mdb").unlink()
    before = _file_states(copy)
    _inspect_both_ways(copy)
    assert _file_states(copy) == before
    capsys.readouterr()


def test_inspect_a_store_this_process_has_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It reads through the open environment: the committed tasks, not the open write set."""
    meta = open_meta(tmp_path)
    meta.register(TASKS[0], ver=3)
    meta.register(TASKS[1], ver=3)  # checkpoint 12
    meta.save_task(attrs.evolve(TASKS[0], checkpoint_id=77))  # in the open transaction only
    assert inspect_meta(tmp_path).latest_checkpoint_id == 12
    assert main(["inspect", str(tmp_path)]) == 0
    assert "latest checkpoint id: 12" in capsys.readouterr().out
    meta.commit()
    assert inspect_meta(tmp_path).latest_checkpoint_id == 77
    meta.register(TASKS[2], ver=3)  # the writer still works after the inspections
    meta.close()
    assert len(inspect_meta(tmp_path).tasks) == 3


def test_a_writer_opens_beside_this_process_readers(meta_dir: tuple[Path, int]) -> None:
    """Readers never call LMDB (they read the file in Python), so they hold nothing a writer
    needs."""
    path, _ = meta_dir
    with LmdbStore.open(path, readonly=True) as reader:
        meta = open_meta(path)
        meta.register(task(7), ver=3)
        meta.close()
        assert len(list(reader.table(TASK_TABLE, None).items())) == len(TASKS) + 1


def test_the_command_prints_every_task(
    meta_dir: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = meta_dir
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("\nstream=") == len(TASKS)
    assert "stream=0x0000000000000020 task=0x00000002 level=source fill_history=1" in out
    assert "latest checkpoint id: 12" in out
    assert main(["inspect", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["tasks"]) == len(TASKS)
    assert doc["latest_checkpoint_id"] == 12
    assert doc["bad_records"] == []


def test_no_meta_store_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path)]) == 1
    assert f"cannot read {tmp_path}: " in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
