"""The restart path (shared reference §8.3): clear -> load_all -> start_all as a vnode restarts
its tasks while it stays leader, and reset_start_info; in both semantics."""

from __future__ import annotations

from pathlib import Path

import pytest
from meta_support import fill_history_pair, open_meta, task

from statemeta.codec import NO_RELATED_TASK, EpSet
from statemeta.lifecycle import Outcome, TaskEvent, TaskStatus
from statemeta.meta import META_HB_CHECK_INTERVAL, StartRoundResult, StartStep, VirtualClock
from statemeta.meta.facade import ThreadSafeStreamMeta
from statemeta.roles import Role

SEMANTICS = pytest.mark.parametrize("semantics", ["intended", "seed"])


class Transport:
    def __init__(self) -> None:
        self.sent: list[int] = []
        self.clock: VirtualClock | None = None

    def __call__(self, mnode_ep_set: EpSet, payload: bytes) -> None:
        assert self.clock is not None
        self.sent.append(self.clock.now_ms())


@SEMANTICS
def test_restart_keeps_role_stage_and_heartbeat(tmp_path: Path, semantics: str) -> None:
    clock, transport = VirtualClock(), Transport()
    transport.clock = clock
    rounds: list[StartRoundResult] = []
    meta = open_meta(tmp_path, clock=clock, transport=transport, semantics=semantics,
                     on_start_complete=rounds.append)
    for i in (1, 2):
        meta.register(task(i, trigger_param=300 * i), 5)
    meta.update_stage_role(4, True)  # tick 1 at 0 ms
    meta.start_all()
    meta.complete_event(0x10, 1, TaskEvent.INIT)
    meta.handle_event(0x10, 2, TaskEvent.PAUSE)
    clock.advance(1000)  # ticks 2..6
    before = meta.view().heartbeat

    meta.clear()
    cleared = meta.view()
    assert (cleared.ids, cleared.num_tasks, cleared.stream_count, cleared.paused_count) == (
        (), 0, 0, 0
    )
    assert (cleared.role, cleared.stage, cleared.heartbeat) == (Role.LEADER, 4, before)
    if semantics == "seed":  # taskStarting kept, its sets emptied (M7)
        assert cleared.start_round.open and cleared.start_round.ready == ()
    else:  # no member left in memory: the round completes with the results it had
        assert not cleared.start_round.open
        assert [(r.ready, r.failed) for r in rounds] == [((task(1).id,), ())]
    assert not cleared.loaded  # store-mirror waits for the reload
    assert clock.pending == 1  # the heartbeat chain only: the trigger timers are gone

    report = meta.load_all()
    assert set(report.loaded) == {task(1).id, task(2).id}
    steps = dict(meta.start_all())
    assert set(steps.values()) == {StartStep.STARTED}
    assert meta.view().start_round.superseded == (1 if semantics == "seed" else 0)
    for i in (1, 2):
        meta.complete_event(0x10, i, TaskEvent.INIT)
        meta.report_launch(0x10, i, True)
    assert rounds[-1].ready == (task(1).id, task(2).id)
    assert len(rounds) == (1 if semantics == "seed" else 2)
    after = meta.view()
    assert (after.role, after.stage) == (Role.LEADER, 4)
    assert {t.status for t in after.tasks} == {TaskStatus.READY}
    clock.advance(4000)  # the chain counted on through the restart: its 25th tick at 4.8 s
    assert transport.sent == [24 * META_HB_CHECK_INTERVAL]


@SEMANTICS
def test_a_round_left_open_by_clear_waits_for_a_result(tmp_path: Path, semantics: str) -> None:
    """After clear nothing but a recorded result completes the seed's round (its count of
    results against the map's size is taken in AddTaskLaunchResult only); the intended
    round has completed in clear itself, so no later operation completes it, not even an
    event the task rejects."""
    rounds: list[StartRoundResult] = []
    meta = open_meta(tmp_path, semantics=semantics, on_start_complete=rounds.append)
    meta.register(task(1), 5)
    meta.start_all()
    meta.clear()
    assert len(rounds) == (0 if semantics == "seed" else 1)
    meta.register(task(2), 5)
    assert meta.handle_event(0x10, 2, TaskEvent.SCANHIST_DONE) is Outcome.REJECTED
    assert meta.view().start_round.open is (semantics == "seed")
    assert meta.report_launch(0x10, 2, True) is (semantics == "seed")  # the seed takes any id
    assert not meta.view().start_round.open
    assert len(rounds) == 1


@SEMANTICS
def test_clear_detaches_an_acquired_task(tmp_path: Path, semantics: str) -> None:
    meta = open_meta(tmp_path, semantics=semantics)
    meta.register(task(1), 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    meta.clear()
    (detached,) = meta.view().detached
    assert (detached.id, detached.refcount) == (task(1).id, 1)
    meta.release(handle)
    assert meta.view().detached == ()


@SEMANTICS
def test_reset_start_info_drops_the_round_without_its_callback(
    tmp_path: Path, semantics: str
) -> None:
    rounds: list[StartRoundResult] = []
    meta = open_meta(tmp_path, semantics=semantics, on_start_complete=rounds.append)
    meta.register(task(1), 5)
    meta.start_all()
    meta.reset_start_info()
    assert not meta.view().start_round.open
    meta.complete_event(0x10, 1, TaskEvent.INIT)
    assert meta.report_launch(0x10, 1, True) is False  # taskStarting is 0: not recorded
    assert rounds == []


def test_the_facade_restarts_too(tmp_path: Path) -> None:
    meta = ThreadSafeStreamMeta.open(tmp_path, 7, clock=VirtualClock())
    meta.register(task(1), 5)
    meta.update_stage_role(2, True)
    meta.clear()
    assert meta.num_tasks == 0 and meta.role is Role.LEADER
    assert meta.load_all().loaded == (task(1).id,)
    meta.start_all()
    meta.reset_start_info()
    assert not meta.start_round().open
    meta.close()


@SEMANTICS
def test_a_stream_task_loaded_after_its_fill_history_task_went_loses_the_link(
    tmp_path: Path, semantics: str
) -> None:
    """clear, then the fill-history task registered and removed, then load_all: the stream
    task comes back from the store naming a removed task; load clears and saves the link."""
    stream, history = fill_history_pair()
    meta = open_meta(tmp_path, semantics=semantics)
    meta.register(stream, 5)
    meta.clear()
    meta.register(history, 5)
    meta.unregister(history.stream_id, history.task_id)
    report = meta.load_all()
    assert report.cleared == (stream.id,)
    assert meta.task(stream.stream_id, stream.task_id).h_task_id == NO_RELATED_TASK
    (stored,) = (t for _key, t in meta.stored_tasks())
    assert stored is not None and stored.h_task_id == NO_RELATED_TASK
    meta.close()
