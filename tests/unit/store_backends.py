"""The store backends the store tests run against, as one parametrized fixture."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from statemeta.store import LmdbStore, MemoryStore, OverlayStore

AnyStore = OverlayStore[Any]
Opener = Callable[[Path], AnyStore]


def open_lmdb(path: Path) -> AnyStore:
    return LmdbStore.open(path, durable=False)


@pytest.fixture(params=["lmdb", "memory"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens a store of the backend under test on a path (the same path: the same state)."""
    if request.param == "lmdb":
        yield open_lmdb
    else:
        yield MemoryStore.open
        MemoryStore.remove(tmp_path)
