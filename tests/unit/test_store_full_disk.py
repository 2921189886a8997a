"""A real full disk at a store's first open (issue 34, finding 6): a small tmpfs, not an injected
``ENOSPC``. Every amount of free space from one page up ends the open with a typed
``StoreError`` naming the directory, or a store that works, never a signal; and once space is
freed the next open works (before the store built a new ``data.mdb`` aside, 4 and 8 KiB left a
file every later open refused as damaged).

Mounting needs root (CAP_SYS_ADMIN); where the mount is refused the test skips and says so.
Each open runs in a child process, so that a signal is seen as the child's death, not ours.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

FREE_KIB = (4, 8, 12, 16, 20, 24, 28, 32)
"""tmpfs sizes: one page up to past what a new store needs (about 28 KiB of files)."""

CHILD = """
import struct, sys
from statemeta.errors import StoreError
from statemeta.store import LmdbStore
try:
    with LmdbStore.open(sys.argv[1]) as store:
        tasks = store.table("task.db", 16)
        store.begin()
        tasks.upsert(struct.pack("<qq", 1, 1), b"v")
        store.commit()
    with LmdbStore.open(sys.argv[1]) as store:
        print("stored", len(list(store.table("task.db", 16).items())))
except StoreError as e:
    print("StoreError", e)
"""


def _mount(point: Path, kib: int, remount: bool = False) -> subprocess.CompletedProcess[str]:
    options = f"{'remount,' if remount else ''}size={kib}k"
    return subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
        capture_output=True, text=True, check=False,
    )


def _open(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], cwd=path.parent,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.mark.skipif(sys.platform != "linux", reason="mounts a tmpfs")
@pytest.mark.parametrize("kib", FREE_KIB)
def test_a_full_disk_at_the_first_open_is_an_error_and_freeing_space_heals_it(
    kib: int, tmp_path: Path
) -> None:
    point = tmp_path / "disk"
    point.mkdir()
    mounted = _mount(point, kib)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        meta = point / "meta"
        first = _open(meta)
        assert first.returncode == 0, f"the open died: {first.returncode} {first.stderr[-2000:]}"
        said = first.stdout.strip()
        assert said == "stored 1" or (
            said.startswith("StoreError") and str(meta) in said
            and ("No space left" in said or "Input/output error" in said)
        ), said
        assert _mount(point, 1024, remount=True).returncode == 0
        again = _open(meta)
        assert again.returncode == 0, again.stderr[-2000:]
        assert again.stdout.strip() == "stored 1"
    finally:
        subprocess.run(["umount", str(point)], check=False)
