"""The downstream-ready step and the fill-history launch (reference sections 8.2 and 8.5), the
launch retry timer on a virtual clock, and the preconditions the seed asserts (8.1)."""

from __future__ import annotations

import math
from pathlib import Path

import attrs
import pytest
from meta_support import fill_history_pair, open_meta

from statemeta.codec import NO_RELATED_TASK, StreamTask, TableOutput
from statemeta.errors import PreconditionError, UnknownTaskError
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.lifecycle import Outcome, TaskEvent, TaskLifecycle, TaskStatus
from statemeta.meta import StartRoundResult, StartStep, StreamMeta, TimerKind, VirtualClock
from statemeta.meta.launch import LAUNCH_TICK_MS
from statemeta.semantics import Semantics

E = TaskEvent
SEMANTICS = pytest.mark.parametrize("semantics", list(Semantics), ids=lambda s: s.value)


def no_downstream(task: StreamTask) -> StreamTask:
    return attrs.evolve(task, output=TableOutput())


def started(tmp_path: Path, semantics: Semantics, clock: VirtualClock | None = None) -> tuple[
    StreamMeta, StreamTask, StreamTask
]:
    stream, history = fill_history_pair()
    meta = open_meta(tmp_path, semantics=semantics, clock=clock or VirtualClock())
    return meta, stream, history


# -- tasks with nothing downstream --------------------------------------------------------


@SEMANTICS
def test_init_of_a_task_with_nothing_downstream_is_applied_at_once(
    tmp_path: Path, semantics: Semantics
) -> None:
    meta = open_meta(tmp_path, semantics=semantics)
    sink = no_downstream(StreamTask(stream_id=0x30, task_id=1))
    other = StreamTask(stream_id=0x30, task_id=2)
    meta.register(sink, 5)
    meta.register(other, 5)
    assert dict(meta.start_all()) == {sink.id: StartStep.READY, other.id: StartStep.STARTED}
    assert meta.status(0x30, 1) is TaskStatus.READY
    assert meta.state.entries[sink.id].downstream_ready
    assert meta.start_round().ready == (sink.id,)  # its ready result, in the same call
    assert meta.handle_event(0x30, 2, E.INIT) is Outcome.STARTED  # a dispatcher: two-phase


@SEMANTICS
def test_handle_event_init_of_a_sink_task_completes_it(
    tmp_path: Path, semantics: Semantics
) -> None:
    meta = open_meta(tmp_path, semantics=semantics)
    meta.register(no_downstream(StreamTask(stream_id=0x30, task_id=1)), 5)
    assert meta.handle_event(0x30, 1, E.INIT) is Outcome.APPLIED
    assert meta.status(0x30, 1) is TaskStatus.READY
    assert meta.all_tasks_ready()


# -- the fill-history launch ---------------------------------------------------------------


@SEMANTICS
def test_start_all_launches_the_fill_history_task_of_a_downstream_ready_stream_task(
    tmp_path: Path, semantics: Semantics
) -> None:
    meta, stream, history = started(tmp_path, semantics)
    meta.register(stream, 5)
    meta.register(history, 5)
    meta.handle_event(stream.stream_id, 1, E.INIT)
    meta.state.entries[stream.id].lifecycle.complete(E.INIT)  # ready, outside any launch
    meta.state.entries[stream.id].downstream_ready = True
    assert meta.state.entries[history.id].lifecycle.active is None
    steps = dict(meta.start_all())
    assert steps == {stream.id: StartStep.READY, history.id: StartStep.SKIPPED}
    assert meta.state.entries[history.id].lifecycle.active is E.INIT_SCANHIST  # launched
    assert meta.start_round().ready == (stream.id,)
    assert meta.complete_event(history.stream_id, 2, E.INIT_SCANHIST) is Outcome.APPLIED
    assert meta.status(history.stream_id, 2) is TaskStatus.SCAN_HISTORY
    assert meta.start_round().completed == 1  # the fill-history task's ready result came


@SEMANTICS
@pytest.mark.parametrize(
    ("setup", "ready"),
    [
        ("history_ready", True),
        ("history_stopped", False),
        ("stream_paused", False),
    ],
)
def test_the_launch_records_the_fill_history_result(
    tmp_path: Path, semantics: Semantics, setup: str, ready: bool
) -> None:
    meta, stream, history = started(tmp_path, semantics)
    rounds: list[StartRoundResult] = []
    meta = open_meta(tmp_path / "m", semantics=semantics, on_start_complete=rounds.append)
    meta.register(stream, 5)
    meta.register(no_downstream(history), 5)
    meta.start_all()
    if setup == "history_ready":  # INIT_SCANHIST of a task with nothing downstream: at once
        assert meta.handle_event(history.stream_id, 2, E.INIT_SCANHIST) is Outcome.APPLIED
    elif setup == "history_stopped":
        meta.handle_event(history.stream_id, 2, E.STOP)
    meta.complete_event(stream.stream_id, 1, E.INIT)
    if setup == "stream_paused":
        meta.handle_event(stream.stream_id, 1, E.PAUSE)
    meta.start_all()  # the stream task is downstream-ready: it launches its fill-history task
    result = rounds[-1]
    assert result.ready[0] == stream.id
    assert (history.id in result.ready, history.id in result.failed) == (ready, not ready)


@SEMANTICS
def test_completing_init_launches_the_fill_history_task(
    tmp_path: Path, semantics: Semantics
) -> None:
    meta, stream, history = started(tmp_path, semantics)
    meta.register(stream, 5)
    meta.register(history, 5)
    meta.start_all()
    assert meta.complete_event(stream.stream_id, 1, E.INIT) is Outcome.APPLIED
    assert meta.start_round().ready == (stream.id,)
    assert meta.state.entries[history.id].lifecycle.active is E.INIT_SCANHIST


def launch_timer_fires(meta: StreamMeta) -> int:
    return sum(1 for t in meta.state.schedule.armed.values() if t.kind is TimerKind.LAUNCH)


@SEMANTICS
def test_the_retry_timer_gives_up_after_its_retries_and_clears_the_link(
    tmp_path: Path, semantics: Semantics
) -> None:
    clock = VirtualClock(now=1_000)
    meta, stream, _history = started(tmp_path, semantics, clock)
    meta.register(stream, 5)
    meta.start_all()
    meta.complete_event(stream.stream_id, 1, E.INIT)  # not registered: the retry timer
    entry = meta.state.entries[stream.id]
    assert entry.timer_active == 1 and launch_timer_fires(meta) == 1
    ticks: list[int] = []
    retries: list[int] = []
    while launch_timer_fires(meta):
        kind = meta.state.schedule.in_firing_order()[0].kind  # the seed's heartbeat too (M12)
        clock.run_next()
        if kind is TimerKind.LAUNCH:
            ticks.append(clock.now)
        launch = entry.launch
        if launch is not None and launch.retry_times > len(retries):
            retries.append(clock.now)
    # the seed's figures (streamInt.h): a wait of 100 ms growing x1.2 (an int32: whole ms),
    # counted in ticks of 100 ms; it retries while its count is <= 40 before the retry
    expected_retries, due, wait = [], 1_100, 100
    for _ in range(41):
        expected_retries.append(due)
        wait = int(wait * 1.2)
        due += 100 * math.ceil(wait / 100)
    assert retries == expected_retries
    assert ticks == list(range(1_100, due + 1, 100))  # a tick every 100 ms, up to the give-up
    assert entry.timer_active == 0 and entry.launch is None
    assert meta.task(stream.stream_id, 1).h_task_id == NO_RELATED_TASK


@SEMANTICS
def test_the_retry_launches_a_fill_history_task_registered_meanwhile(
    tmp_path: Path, semantics: Semantics
) -> None:
    clock = VirtualClock()
    meta, stream, history = started(tmp_path, semantics, clock)
    meta.register(stream, 5)
    meta.handle_event(stream.stream_id, 1, E.INIT)
    meta.complete_event(stream.stream_id, 1, E.INIT)
    clock.advance(250)  # retries at 100 ms, then after two ticks (300 ms)
    meta.register(history, 5)
    assert meta.state.entries[stream.id].timer_active == 1
    clock.advance(50)
    assert meta.state.entries[history.id].lifecycle.active is E.INIT_SCANHIST
    assert meta.state.entries[stream.id].timer_active == 0
    assert launch_timer_fires(meta) == 0


@SEMANTICS
def test_a_stream_task_dropped_while_retrying_is_removed_at_the_next_tick(
    tmp_path: Path, semantics: Semantics
) -> None:
    clock = VirtualClock()
    meta, stream, _history = started(tmp_path, semantics, clock)
    meta.register(stream, 5)
    meta.handle_event(stream.stream_id, 1, E.INIT)
    meta.complete_event(stream.stream_id, 1, E.INIT)
    assert meta.unregister(stream.stream_id, 1).value == "deferred"
    clock.advance(LAUNCH_TICK_MS)
    assert meta.task_ids() == ()
    assert launch_timer_fires(meta) == 0


# -- start_one -----------------------------------------------------------------------------


def test_start_one_of_an_unmapped_task_records_a_failed_result_then_raises(tmp_path: Path) -> None:
    meta = open_meta(tmp_path, semantics="seed")
    stream, history = fill_history_pair()
    meta.register(stream, 5)
    meta.register(StreamTask(stream_id=0x10, task_id=1), 5)
    meta.start_all()
    with pytest.raises(UnknownTaskError):
        meta.start_one(history.stream_id, history.task_id)
    assert meta.start_round().failed == (history.id,)  # the seed records any id


# -- preconditions -------------------------------------------------------------------------


@SEMANTICS
def test_halt_on_a_task_without_a_fill_history_task_is_a_precondition_error(
    tmp_path: Path, semantics: Semantics
) -> None:
    meta = open_meta(tmp_path, semantics=semantics)
    meta.register(StreamTask(stream_id=0x10, task_id=1), 5)
    meta.handle_event(0x10, 1, E.INIT)
    meta.complete_event(0x10, 1, E.INIT)
    before = meta.view()
    with pytest.raises(PreconditionError, match="no fill-history task"):
        meta.handle_event(0x10, 1, E.HALT)
    assert meta.view() == before


@SEMANTICS
def test_an_attached_halt_firing_after_the_link_is_cleared_is_a_precondition_error(
    tmp_path: Path, semantics: Semantics
) -> None:
    meta, stream, history = started(tmp_path, semantics)
    meta.register(stream, 5)
    meta.register(history, 5)
    meta.handle_event(stream.stream_id, 1, E.INIT)
    meta.complete_event(stream.stream_id, 1, E.INIT)
    meta.begin_checkpoint(stream.stream_id, 1, 1, 1)
    assert meta.handle_event(stream.stream_id, 1, E.HALT) is Outcome.PENDING  # has its link
    meta.unregister(history.stream_id, 2)  # clears the stream task's link
    before = meta.view()
    with pytest.raises(PreconditionError):
        meta.handle_event(stream.stream_id, 1, E.CHECKPOINT_DONE)  # would fire the HALT
    assert meta.view() == before
    assert meta.status(stream.stream_id, 1) is TaskStatus.CK


@SEMANTICS
@pytest.mark.parametrize(
    ("then", "asserts"),
    [((), True), ((E.SCANHIST_DONE,), False), ((E.SCANHIST_DONE, E.HALT), True),
     ((E.SCANHIST_DONE, E.GEN_CHECKPOINT), True)],
    ids=["scan_history", "ready", "halt", "ck"],
)
def test_a_second_phase_with_nothing_active_is_a_precondition_error_where_the_seed_asserts(
    semantics: Semantics, then: tuple[TaskEvent, ...], asserts: bool
) -> None:
    lifecycle = TaskLifecycle(semantics=semantics)
    assert lifecycle.complete(E.INIT) is Outcome.REJECTED  # UNINIT: allowed, rejected
    lifecycle.handle(E.INIT_SCANHIST)
    lifecycle.complete(E.INIT_SCANHIST)  # SCAN_HISTORY, nothing active
    for event in then:
        assert lifecycle.handle(event) is Outcome.APPLIED
    if asserts:
        with pytest.raises(PreconditionError, match=lifecycle.status.name):
            lifecycle.complete(E.INIT_SCANHIST)
    else:
        assert lifecycle.complete(E.INIT_SCANHIST) is Outcome.REJECTED


@SEMANTICS
def test_start_one_of_a_downstream_ready_task_is_a_precondition_error(
    tmp_path: Path, semantics: Semantics
) -> None:
    meta = open_meta(tmp_path, semantics=semantics)
    meta.register(StreamTask(stream_id=0x10, task_id=1), 5)
    assert meta.start_one(0x10, 1) is StartStep.STARTED
    meta.complete_event(0x10, 1, E.INIT)
    with pytest.raises(PreconditionError, match="downstream-ready"):
        meta.start_one(0x10, 1)
    meta.handle_event(0x10, 1, E.STOP)
    assert meta.start_one(0x10, 1) is StartStep.FAILED  # the acquire fails first: no assert


def test_the_level_1_reference_applies_the_slot_s_halt_rule() -> None:
    """A lifecycle alone does not know its record: the adapter applies the row's rule."""
    adapter = ReferenceAdapter()
    adapter.start(1)
    for slot in ("s1", "f1"):
        adapter.call(Op.of("handle", task=slot, event="init"))
        adapter.call(Op.of("complete", task=slot, event="init"))
    assert adapter.call(Op.of("handle", task="s1", event="halt")) == {
        "error": "PreconditionError"
    }
    assert adapter.call(Op.of("handle", task="f1", event="halt")) == {"ok": "applied"}
    adapter.stop()
