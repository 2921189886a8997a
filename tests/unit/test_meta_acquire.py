from __future__ import annotations

from pathlib import Path

import pytest
from meta_support import open_meta, task

from statemeta.errors import ReleaseError, UnknownTaskError
from statemeta.lifecycle import TaskEvent
from statemeta.meta import TaskHandle


def test_acquire_and_release_count_references(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    first = meta.acquire(0x10, 1)
    second = meta.acquire(0x10, 1)
    assert first == second == TaskHandle(task(1).id, first.incarnation if first else 0)
    assert meta.refcount(0x10, 1) == 3
    assert first is not None and second is not None
    meta.release(first)
    meta.release(second)
    assert meta.refcount(0x10, 1) == 1


def test_acquire_missing_returns_none(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    assert meta.acquire(0x10, 1) is None


@pytest.mark.parametrize("event", [TaskEvent.STOP, TaskEvent.DROPPING])
def test_acquire_of_stopping_or_dropping_returns_none(tmp_path: Path, event: TaskEvent) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    meta.handle_event(0x10, 1, event)
    assert meta.acquire(0x10, 1) is None
    assert meta.refcount(0x10, 1) == 1


def test_release_below_zero_raises(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    meta.release(handle)
    with pytest.raises(ReleaseError, match="0x10-0x1"):
        meta.release(handle)
    assert meta.refcount(0x10, 1) == 1


def test_release_of_a_dropped_task_frees_it_then_raises(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    meta.unregister(0x10, 1)
    meta.release(handle)
    with pytest.raises(ReleaseError):
        meta.release(handle)


def test_handle_from_an_old_registration_is_not_the_new_ones(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    old = meta.acquire(0x10, 1)
    assert old is not None
    meta.unregister(0x10, 1)
    meta.register(task(1), 6)
    meta.release(old)  # releases the detached registration, not the new one
    assert meta.refcount(0x10, 1) == 1
    assert meta.view().detached == ()


def test_events_on_unknown_task_raise(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    with pytest.raises(UnknownTaskError, match="0x10-0x1"):
        meta.handle_event(0x10, 1, TaskEvent.PAUSE)
    with pytest.raises(UnknownTaskError):
        meta.resume(0x10, 1)
    with pytest.raises(UnknownTaskError):
        meta.complete_event(0x10, 1, TaskEvent.INIT)
