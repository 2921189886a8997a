from __future__ import annotations

from pathlib import Path

import pytest
from meta_support import committed, faulty_factory, fill_history_pair, open_meta, task

from statemeta.codec import NO_RELATED_TASK, decode_task, encode_task_key
from statemeta.errors import StoreFault
from statemeta.lifecycle import Outcome, TaskEvent, TaskStatus
from statemeta.meta import DropResult, VirtualClock
from statemeta.store import FaultyStore


def test_unregister_removes_durably(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    meta.register(task(2), 5)
    assert meta.unregister(0x10, 1) is DropResult.REMOVED
    assert meta.task_ids() == (task(2).id,)
    assert meta.stream_count == 1
    assert meta.view().removed == {task(1).id}
    meta.close()
    assert set(committed(tmp_path)) == {encode_task_key(0x10, 2)}


def test_unregister_unknown_is_a_no_op(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    before = meta.view()
    assert meta.unregister(0x10, 99) is DropResult.NOT_FOUND
    assert meta.view() == before


def test_unregister_paused_task_keeps_paused_count_exact(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    meta.register(task(2), 5)
    for _ in range(3):
        assert meta.handle_event(0x10, 1, TaskEvent.PAUSE) is Outcome.APPLIED
    assert meta.paused_count == 1
    meta.unregister(0x10, 1)
    assert meta.paused_count == 0
    meta.handle_event(0x10, 2, TaskEvent.STOP)
    meta.handle_event(0x10, 2, TaskEvent.PAUSE)  # PAUSE in STOP stays STOP
    assert meta.paused_count == 0


def test_unregister_fill_history_clears_and_saves_stream_task(tmp_path: Path) -> None:
    stream, history = fill_history_pair()
    meta = open_meta(tmp_path)
    meta.register(stream, 5)
    meta.register(history, 5)
    assert meta.unregister(history.stream_id, history.task_id) is DropResult.REMOVED
    assert meta.task(stream.stream_id, stream.task_id).h_task_id == NO_RELATED_TASK
    assert meta.stream_count == 1
    meta.close()
    stored = committed(tmp_path)
    assert encode_task_key(history.stream_id, history.task_id) not in stored
    saved = decode_task(stored[encode_task_key(stream.stream_id, stream.task_id)])
    assert saved.h_task_id == NO_RELATED_TASK


def test_unregister_with_active_timer_waits_for_the_timer(tmp_path: Path) -> None:
    clock = VirtualClock()
    meta = open_meta(tmp_path, clock=clock)
    meta.register(task(1), 5)
    meta.start_task_timer(0x10, 1, 100)
    meta.start_task_timer(0x10, 1, 300)
    assert meta.unregister(0x10, 1) is DropResult.DEFERRED
    assert meta.status(0x10, 1) is TaskStatus.DROPPING
    assert meta.view().tasks[0].drop_pending
    assert meta.acquire(0x10, 1) is None
    clock.advance(100)
    assert meta.task_ids() == (task(1).id,)  # one timer still active
    clock.advance(200)
    assert meta.task_ids() == ()
    meta.close()
    assert committed(tmp_path) == {}


def test_failed_delete_keeps_the_task_and_can_be_retried(tmp_path: Path) -> None:
    meta = open_meta(tmp_path, store_factory=faulty_factory)
    meta.register(task(1), 5)
    assert isinstance(meta.store, FaultyStore)
    meta.store.fail_next("commit")
    with pytest.raises(StoreFault):
        meta.unregister(0x10, 1)
    assert meta.task_ids() == (task(1).id,)
    assert meta.status(0x10, 1) is TaskStatus.DROPPING
    assert meta.unregister(0x10, 1) is DropResult.REMOVED
    meta.close()
    assert committed(tmp_path) == {}


def test_unregister_releases_trigger_reference_and_detaches_acquired(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1, trigger_param=500), 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    assert meta.refcount(0x10, 1) == 3
    meta.unregister(0x10, 1)
    (detached,) = meta.view().detached
    assert (detached.refcount, detached.acquires) == (1, 1)
    meta.release(handle)
    assert meta.view().detached == ()


def test_stop_during_a_deferred_drop_still_removes_the_task(tmp_path: Path) -> None:
    """Found by the explorer: STOP leaves DROPPING (a table row); the removal still happens."""
    clock = VirtualClock()
    meta = open_meta(tmp_path, clock=clock)  # check_invariants=True
    meta.register(task(1), 5)
    meta.start_task_timer(0x10, 1, 100)
    assert meta.unregister(0x10, 1) is DropResult.DEFERRED
    assert meta.handle_event(0x10, 1, TaskEvent.STOP) is Outcome.APPLIED
    assert meta.status(0x10, 1) is TaskStatus.STOP
    clock.advance(100)
    assert meta.task_ids() == ()
    meta.close()
    assert committed(tmp_path) == {}


def test_stream_task_registered_after_its_fill_history_task_was_dropped(tmp_path: Path) -> None:
    """Found by the explorer: the link to a fill-history task removed here is cleared."""
    stream, history = fill_history_pair()
    meta = open_meta(tmp_path)  # check_invariants=True
    assert meta.register(history, 5)
    assert meta.unregister(history.stream_id, history.task_id) is DropResult.REMOVED
    assert meta.register(stream, 5)
    assert meta.task(stream.stream_id, stream.task_id).h_task_id == NO_RELATED_TASK
    meta.close()
    (value,) = committed(tmp_path).values()
    assert decode_task(value).h_task_id == NO_RELATED_TASK


def test_failed_deferred_removal_leaves_a_dropping_task_that_unregister_removes(
    tmp_path: Path,
) -> None:
    """Found by the property suite: the timer's removal fails to commit; nothing is lost."""
    clock = VirtualClock()
    meta = open_meta(tmp_path, clock=clock, store_factory=faulty_factory)
    store = meta.store
    assert isinstance(store, FaultyStore)
    meta.register(task(1), 5)
    meta.start_task_timer(0x10, 1, 100)
    assert meta.unregister(0x10, 1) is DropResult.DEFERRED
    store.fail_next("commit")
    with pytest.raises(StoreFault):
        clock.advance(100)
    assert meta.status(0x10, 1) is TaskStatus.DROPPING
    assert not meta.view().tasks[0].drop_pending
    assert meta.unregister(0x10, 1) is DropResult.REMOVED
    meta.close()
    assert committed(tmp_path) == {}
