"""The six points docs/meta.md ("The downstream-ready step and the fill-history launch",
"Heartbeat timing") and docs/harness-protocol.md state about the fill-history launch, its
retry timer and the heartbeat's tick counter, each shown on the reference: an implementation
written from the docs alone needs them (issue 33), and these tests keep the sentences true.

The launch's task pair is f1 (a stream task, dispatching) and h1 (its fill-history task); the
retry waits are those of the docs: 100 ms, then x1.2 truncated to whole ms, each rounded up to
whole 100 ms ticks.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from meta_support import fill_history_pair, open_meta

from statemeta.codec import NO_RELATED_TASK, StreamTask
from statemeta.lifecycle import TaskEvent, TaskStatus
from statemeta.meta import StartRoundResult, StreamMeta, VirtualClock
from statemeta.semantics import Semantics

E = TaskEvent
STREAM, HISTORY = fill_history_pair()
SID = STREAM.stream_id
OTHER = StreamTask(stream_id=0x10, task_id=1)
"""A task started and never completed: it keeps a round open, so its results stay in view."""


def retry_dues(launched_at: int, retries: int) -> list[int]:
    """When each retry is due, by the docs' rule: the first wait is 100 ms (one tick); each
    retry multiplies the wait by 1.2, truncated to whole ms, and waits ceil(wait / 100) ticks."""
    dues, due, wait = [], launched_at + 100, 100
    for _ in range(retries):
        dues.append(due)
        wait = int(wait * 1.2)
        due += 100 * math.ceil(wait / 100)
    return dues


def give_up_due(launched_at: int) -> int:
    """41 retries (the count is checked before it grows past 40), then the give-up."""
    return retry_dues(launched_at, 42)[-1]


class Run:
    """A meta on a virtual clock, with the completed start rounds it reported."""

    def __init__(self, path: Path, semantics: Semantics) -> None:
        self.clock = VirtualClock()
        self.rounds: list[StartRoundResult] = []
        self.meta: StreamMeta = open_meta(
            path, semantics=semantics, clock=self.clock, on_start_complete=self.rounds.append
        )

    def stream_ready(self) -> None:
        """f1's downstream check completes: it is READY and downstream-ready, and launches h1."""
        self.meta.handle_event(SID, 1, E.INIT)
        self.stream_ready_in_round()

    def stream_ready_in_round(self) -> None:
        """f1's INIT, started by start_all, completes: the same launch."""
        self.meta.complete_event(SID, 1, E.INIT)

    def launch_then_map_history(self) -> None:
        """A round over f1 and OTHER; f1's launch arms the timer (h1 not mapped); then h1 is
        registered and joins the round (start_one: skipped), so its result would be kept."""
        meta = self.meta
        meta.register(STREAM, 5)
        meta.register(OTHER, 5)
        meta.start_all()
        self.stream_ready_in_round()
        meta.register(HISTORY, 5)
        meta.start_one(SID, 2)

    def timer_active(self) -> int:
        return self.meta.state.entries[STREAM.id].timer_active

    def history_active(self) -> TaskEvent | None:
        return self.meta.state.entries[HISTORY.id].lifecycle.active

    def advance_to(self, ms: int) -> None:
        self.clock.advance(ms - self.clock.now)

    def run_until_timer_ends(self) -> int:
        """Fire timers until f1's launch timer has ended; the time it ended."""
        while self.timer_active():
            assert self.clock.run_next()
        return self.clock.now


@pytest.fixture(params=list(Semantics), ids=lambda s: s.value)
def run(tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    semantics: Semantics = request.param
    return Run(tmp_path, semantics)


# -- 1. overlapping rows: STOP or DROPPING is checked before downstream-ready ---------------


@pytest.mark.parametrize("how", ["stop", "dropping"])
def test_1_a_downstream_ready_fill_history_task_that_stops_gets_a_failed_result(
    run: Run, how: str
) -> None:
    meta = run.meta
    for task in (STREAM, HISTORY, OTHER):
        meta.register(task, 5)
    meta.handle_event(SID, 2, E.INIT_SCANHIST)
    meta.complete_event(SID, 2, E.INIT_SCANHIST)
    if how == "stop":
        meta.handle_event(SID, 2, E.STOP)
    else:  # a task timer holds the removal: h1 stays mapped, DROPPING
        meta.start_task_timer(SID, 2)
        assert meta.unregister(SID, 2).value == "deferred"
    assert meta.state.entries[HISTORY.id].downstream_ready
    run.stream_ready()  # outside any round: its launch's result is not kept
    meta.start_all()  # f1, listed first, launches h1 before h1's own (failed) step
    round_ = meta.start_round()
    assert (round_.ready, round_.failed) == ((STREAM.id,), (HISTORY.id,))


# -- 2. a second launch while the retry timer runs ----------------------------------------


def test_2_a_second_launch_restarts_the_retry_from_its_first_wait(run: Run) -> None:
    meta = run.meta
    meta.register(STREAM, 5)
    run.stream_ready()  # h1 not mapped: the timer, retries due at 100, 300, 500, ...
    run.advance_to(350)
    meta.start_all()  # f1 is downstream-ready: the second launch
    assert run.timer_active() == 1  # the same timer, re-armed: no second timerActive
    meta.register(HISTORY, 5)
    run.advance_to(449)
    assert run.history_active() is None
    run.advance_to(450)  # the first wait again (one tick), not the old schedule's 500
    assert run.history_active() is E.INIT_SCANHIST
    assert run.timer_active() == 0


def test_2_a_second_launch_restarts_the_retry_count(run: Run) -> None:
    run.meta.register(STREAM, 5)
    run.stream_ready()
    run.advance_to(350)
    run.meta.start_all()
    assert run.run_until_timer_ends() == give_up_due(350)  # 41 retries after the second launch
    assert run.meta.task(SID, 1).h_task_id == NO_RELATED_TASK


def test_2_a_second_launch_that_finds_the_task_mapped_leaves_the_timer_running(run: Run) -> None:
    meta = run.meta
    meta.register(STREAM, 5)
    run.stream_ready()
    run.advance_to(150)
    meta.register(HISTORY, 5)
    meta.start_all()  # h1 mapped: INIT_SCANHIST on it at once; the timer is not touched
    assert run.history_active() is E.INIT_SCANHIST
    assert run.timer_active() == 1
    run.advance_to(299)
    assert run.timer_active() == 1
    run.advance_to(300)  # its due retry finds h1 mapped: INIT_SCANHIST again, the timer ends
    assert run.timer_active() == 0
    assert run.history_active() is E.INIT_SCANHIST


# -- 3. a retry wait rounded up to whole ticks, and advance_clock at the boundary -----------


@pytest.mark.parametrize("retry", [2, 3, 5, 6])
@pytest.mark.parametrize("landing", [-1, 0, 1])
def test_3_a_retry_is_due_after_its_wait_rounded_up_to_whole_ticks(
    run: Run, retry: int, landing: int
) -> None:
    """Retry 2 waits 120 ms (2 ticks), 3 waits 144 (2), 5 waits 206 (3), 6 waits 247 (3): each
    lands on a tick boundary, and advance_clock fires it when it reaches the due time."""
    meta = run.meta
    meta.register(STREAM, 5)
    run.stream_ready()
    dues = retry_dues(0, retry)
    run.advance_to(dues[-2] + 1)  # just after the retry before: h1 was not mapped then
    meta.register(HISTORY, 5)
    run.advance_to(dues[-1] - 1)
    assert run.history_active() is None and run.timer_active() == 1
    run.advance_to(dues[-1] + landing)
    launched = landing >= 0
    assert (run.history_active() is E.INIT_SCANHIST) == launched
    assert run.timer_active() == int(not launched)


# -- 4. a launch whose INIT_SCANHIST is rejected records nothing ----------------------------


def test_4_a_rejected_init_scanhist_records_no_result(run: Run) -> None:
    meta = run.meta
    meta.register(STREAM, 5)
    meta.register(HISTORY, 5)
    meta.handle_event(SID, 2, E.PAUSE)  # PAUSE rejects INIT_SCANHIST
    meta.start_all()  # f1 started, h1 skipped: both members
    meta.complete_event(SID, 1, E.INIT)  # the launch: INIT_SCANHIST on h1, rejected
    round_ = meta.start_round()
    assert round_.open and (round_.ready, round_.failed) == ((STREAM.id,), ())
    assert run.rounds == []  # the round waits for h1's result (report_launch)
    assert meta.status(SID, 2) is TaskStatus.PAUSE


def test_4_a_due_retry_whose_init_scanhist_is_rejected_ends_the_timer_with_no_result(
    run: Run,
) -> None:
    meta = run.meta
    run.launch_then_map_history()
    meta.handle_event(SID, 2, E.PAUSE)
    run.advance_to(100)
    assert run.timer_active() == 0
    assert meta.start_round().failed == ()
    assert meta.task(SID, 1).h_task_id == HISTORY.id


# -- 5. a due retry treats a mapped task in STOP or DROPPING as not mapped yet ---------------


@pytest.mark.parametrize("how", ["stop", "dropping"])
def test_5_a_due_retry_waits_on_for_a_stopped_or_dropping_fill_history_task(
    run: Run, how: str
) -> None:
    meta = run.meta
    run.launch_then_map_history()
    if how == "stop":
        meta.handle_event(SID, 2, E.STOP)
    else:  # the task timer (due at 150) holds h1 DROPPING over the retry at 100
        run.advance_to(50)
        meta.start_task_timer(SID, 2)
        meta.unregister(SID, 2)
    run.advance_to(100)  # the first retry: h1 cannot be acquired, so the timer goes on
    assert run.timer_active() == 1
    assert meta.start_round().failed == ()
    if how == "stop":
        assert run.history_active() is None
        assert run.run_until_timer_ends() == give_up_due(0)  # the same count as unmapped
        assert meta.start_round().failed == (HISTORY.id,)
        assert meta.task(SID, 1).h_task_id == NO_RELATED_TASK


# -- 6. the tick counter is reset at every 25th tick, sent or not ---------------------------


@pytest.mark.parametrize("tasks", [(), (HISTORY,)], ids=["no_task", "fill_history_only"])
def test_6_the_tick_counter_is_reset_at_the_25th_tick_with_nothing_sent(
    run: Run, tasks: tuple[StreamTask, ...]
) -> None:
    meta = run.meta
    for task in tasks:
        meta.register(task, 5)
    meta.update_stage_role(1, True)  # tick 1, at once
    run.advance_to(24 * 200 - 1)
    assert meta.view().heartbeat.tick_counter == 24
    run.advance_to(24 * 200)  # the 25th tick: no task to report, no message, reset all the same
    heartbeat = meta.view().heartbeat
    assert (heartbeat.tick_counter, heartbeat.sent) == (0, 0)
    meta.register(STREAM, 5)  # a task to report: the next message is 25 ticks later
    run.advance_to(24 * 200 + 24 * 200)
    assert meta.view().heartbeat.sent == 0
    run.advance_to(24 * 200 + 25 * 200)
    assert meta.view().heartbeat.sent == 1
