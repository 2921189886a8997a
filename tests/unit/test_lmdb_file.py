"""Damaged data.mdb files are StoreErrors naming the path, never a SIGBUS (spec/store.md).

The checks that map a damaged file run in a child process: a SIGBUS there shows up as the
child's exit status instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest
from meta_support import fill_history_pair, open_meta, task

from statemeta.errors import StoreError
from statemeta.store import ENV_DIR, LmdbStore
from statemeta.store.lmdb_file import FORMATS, MAGIC, check_data_file

REPO_ROOT = Path(__file__).resolve().parents[2]
TASKS = (task(5, stream_id=0x100), task(6, checkpoint_id=12), *fill_history_pair(), task(9))

# For each directory: StreamMeta.open + load_all, inspect_meta, and the inspect command, each
# reported as one JSON line: "ok" with the counts (tasks loaded; tasks and undecodable records
# inspected), or the error's class and message.
CHILD = """
import contextlib, io, json, sys
from statemeta.cli import main
from statemeta.errors import StatemetaError
from statemeta.meta import StreamMeta
from statemeta.tools.inspect import inspect_meta

def inspected(path):
    found = inspect_meta(path)
    return [len(found.tasks), len(found.bad_records)]

def outcome(run):
    try:
        return ["ok", run()]
    except StatemetaError as e:
        return [type(e).__name__, str(e)]

def open_and_load(path):
    meta = StreamMeta.open(path, 7)
    try:
        meta.load_all()
        return len(meta.task_ids())
    finally:
        meta.close()

for path in sys.argv[1:]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["inspect", path])
    print(json.dumps({
        "path": path,
        "open": outcome(lambda: open_and_load(path)),
        "inspect": outcome(lambda: inspected(path)),
        "command": [code, err.getvalue()],
    }), flush=True)
"""


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A meta directory written by StreamMeta (durably, as a user's) holding TASKS."""
    path = tmp_path_factory.mktemp("store") / "vnode"
    meta = open_meta(path, store_factory=LmdbStore.open)
    for t in TASKS:
        meta.register(t, ver=3)
    meta.close()
    return path


def _data(path: Path) -> Path:
    return path / ENV_DIR / "data.mdb"


def _copies(store_dir: Path, root: Path, damage: dict[str, bytes]) -> list[Path]:
    """One copy of store_dir per entry, its data.mdb replaced by the entry's bytes."""
    paths = []
    for name, data in damage.items():
        copy = root / name
        shutil.copytree(store_dir, copy)
        _data(copy).write_bytes(data)
        paths.append(copy)
    return paths


def _run_child(paths: list[Path]) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *map(str, paths)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, (
        f"the child died with status {done.returncode} after {len(lines)} of {len(paths)} "
        f"stores (-7 is SIGBUS); next: {paths[len(lines)] if len(lines) < len(paths) else '-'}"
        f"\n{done.stderr[-2000:]}"
    )
    assert len(lines) == len(paths)
    return [json.loads(line) for line in lines]


def _assert_refused_naming_the_path(report: dict[str, object]) -> None:
    data_path = str(_data(Path(str(report["path"]))))
    for check in ("open", "inspect"):
        kind, message = report[check]  # type: ignore[misc]
        # a garbage value may carry a version <= 1: open refuses it too, naming the path
        assert kind in ("StoreError", "IncompatibleVersionError"), (check, report)
        assert data_path in message or str(report["path"]) in message, (check, report)
    code, stderr = report["command"]  # type: ignore[misc]
    assert code == 1, report
    assert len(stderr.splitlines()) == 1 and str(report["path"]) in stderr, report


def test_a_store_cut_at_every_kib_is_refused_naming_the_path(
    store_dir: Path, tmp_path: Path
) -> None:
    """No cut keeps every page the newest meta page uses, so every cut is refused."""
    whole = _data(store_dir).read_bytes()
    in_use = check_data_file(str(_data(store_dir))).needed_bytes
    assert in_use == len(whole)  # so no cut below is harmless
    cuts = {f"cut{size}": whole[:size] for size in range(0, len(whole), 1024)}
    assert len(cuts) >= 32
    for report in _run_child(_copies(store_dir, tmp_path, cuts)):
        _assert_refused_naming_the_path(report)


def test_the_command_on_a_cut_store_exits_1_with_one_line(
    store_dir: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "cut"
    shutil.copytree(store_dir, cut)
    os.truncate(_data(cut), 8192)
    done = subprocess.run(
        [sys.executable, "-m", "statemeta", "inspect", str(cut)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert f"cannot read {cut}: damaged LMDB data file {_data(cut)}" in done.stderr
    assert "cut short" in done.stderr


def test_garbage_pages_are_store_errors_or_unused(store_dir: Path, tmp_path: Path) -> None:
    """A file of the right length with a page of garbage: LMDB's own checks (page numbers up
    to mm_last_pg, page types) report it, or the page held part of a value (the record is
    then reported undecodable), or the page is free."""
    whole = _data(store_dir).read_bytes()
    page_size = check_data_file(str(_data(store_dir))).page_size
    rng = random.Random(20)
    damage = {}
    for number in range(2, len(whole) // page_size):
        at = number * page_size
        for kind, page in (("zero", bytes(page_size)), ("random", rng.randbytes(page_size))):
            damage[f"{kind}{number}"] = whole[:at] + page + whole[at + page_size :]
    reports = _run_child(_copies(store_dir, tmp_path, damage))
    refused = 0
    for report in reports:
        if report["open"][0] == "ok":  # type: ignore[index]
            kind, (tasks, undecodable) = report["inspect"]  # type: ignore[misc]
            assert tasks + undecodable == len(TASKS), report
            assert report["open"] == ["ok", tasks], report
            assert report["command"][0] == 0  # type: ignore[index]
        else:
            _assert_refused_naming_the_path(report)
            refused += 1
    assert refused > 0  # the pages in use were damaged too


# -- the meta pages, checked before anything is mapped (in this process) --------------------


def _patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    return data[:offset] + struct.pack(fmt, value) + data[offset + struct.calcsize(fmt) :]


META = FORMATS[0].meta_at  # statemeta's stores are LMDB 0.9 files


@pytest.mark.parametrize(
    ("offset", "fmt", "value", "reason"),
    [
        (META, "<I", 0x12345678, "no LMDB magic"),  # page 0's magic
        (4096 + META, "<I", 0, "page 1 is not a LMDB 0.9 meta page"),
        (4096 + FORMATS[0].flags_at, "<H", 0x02, "page 1 is not a LMDB 0.9 meta page"),
        (META + 24, "<I", 1000, "gives the page size 1000"),
        (4096 + META + 24, "<I", 8192, "disagree on the page size"),
        (4096 + META + 120, "<Q", 10**6, "uses pages 0..1000000"),  # page 1's mm_last_pg
    ],
)
def test_damaged_meta_pages_are_refused_before_mapping(
    store_dir: Path, tmp_path: Path, offset: int, fmt: str, value: int, reason: str
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store_dir, copy)
    data = _data(copy)
    data.write_bytes(_patched(data.read_bytes(), offset, fmt, value))
    for readonly in (True, False):
        with pytest.raises(StoreError, match=rf"damaged LMDB data file {data}: .*{reason}"):
            LmdbStore.open(copy, readonly=readonly)


def test_an_unknown_lmdb_format_version_is_named(store_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store_dir, copy)
    data = _data(copy)
    data.write_bytes(_patched(data.read_bytes(), META + 4, "<I", 2))
    with pytest.raises(StoreError, match=rf"{data}: LMDB data format version 2; this reader"):
        LmdbStore.open(copy, readonly=True)


def test_only_the_newest_meta_page_must_fit_the_file(store_dir: Path, tmp_path: Path) -> None:
    """LMDB uses the meta page with the higher txn id; the older one may name any pages."""
    newest = check_data_file(str(_data(store_dir)))
    copy = tmp_path / "copy"
    shutil.copytree(store_dir, copy)
    data = _data(copy)
    older_last_page = (1 - newest.number) * newest.page_size + META + 120
    data.write_bytes(_patched(data.read_bytes(), older_last_page, "<Q", 10**6))
    with LmdbStore.open(copy, readonly=True) as reader:
        assert len(list(reader.table("task.db", 16).items())) == len(TASKS)


def test_lmdb_1_0_files_are_checked_too(tmp_path: Path) -> None:
    env = lmdb.open(str(tmp_path / ENV_DIR), lib_version=1, max_dbs=2)
    with env.begin(write=True) as txn:
        txn.put(b"k", b"v" * 5000, db=env.open_db(b"task.db", txn=txn))
    env.close()
    data = tmp_path / ENV_DIR / "data.mdb"
    first = data.read_bytes()[: FORMATS[1].meta_at + 8]
    assert struct.unpack_from("<II", first, FORMATS[1].meta_at) == (MAGIC, 3)
    assert check_data_file(str(data)).needed_bytes == data.stat().st_size
    with LmdbStore.open(tmp_path, readonly=True) as reader:
        assert list(reader.table("task.db", None).items()) == [(b"k", b"v" * 5000)]
    os.truncate(data, data.stat().st_size - 1)
    with pytest.raises(StoreError, match="cut short"):
        LmdbStore.open(tmp_path, readonly=True)
