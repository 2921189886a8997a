from __future__ import annotations

from pathlib import Path

from meta_support import committed, fill_history_pair, open_meta, task

from statemeta.invariants import reopen
from statemeta.lifecycle import TaskEvent, TaskStatus
from statemeta.meta import VirtualClock


def test_close_then_reopen_keeps_exactly_what_was_reported_done(tmp_path: Path) -> None:
    stream, history = fill_history_pair(0x30)
    meta = open_meta(tmp_path)
    for i in (3, 1, 0x200):
        assert meta.register(task(i), 5)
    meta.register(stream, 5)
    meta.register(history, 5)
    meta.unregister(0x10, 1)
    meta.unregister(history.stream_id, history.task_id)
    meta.save_task(task(3, checkpoint_id=5))  # never committed: lost
    meta.handle_event(0x10, 3, TaskEvent.PAUSE)
    done = {t.id: t.task for t in meta.view().tasks}
    done[task(3).id] = task(3, checkpoint_ver=4)
    meta.close()
    keys = list(committed(tmp_path))
    meta = open_meta(tmp_path)
    report = meta.load_all()
    reopen(keys, meta.view())
    assert set(report.loaded) == set(done)
    assert {t.id: t.task for t in meta.view().tasks} == done
    assert meta.task_ids() == (task(0x200).id, task(3).id, stream.id)  # key byte order


def test_notify_close_stops_every_task_and_close_cancels_timers(tmp_path: Path) -> None:
    clock = VirtualClock()
    meta = open_meta(tmp_path, clock=clock)
    meta.register(task(1, trigger_param=100), 5)
    meta.register(task(2), 5)
    meta.start_task_timer(0x10, 2, 1000)
    assert meta.notify_close() == 1
    assert {t.status for t in meta.view().tasks} == {TaskStatus.STOP}
    meta.close()
    assert clock.pending == 0
    assert meta.closed
