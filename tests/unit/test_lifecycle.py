"""The task lifecycle against the reference's matrix (§1.5), transcribed here by hand."""

from __future__ import annotations

import pytest

from statemeta.lifecycle import (
    LIFECYCLE_MACHINE,
    LIFECYCLE_ROWS,
    Outcome,
    StatusChange,
    TaskEvent,
    TaskLifecycle,
    TaskStatus,
    ready_to_run,
    should_pause,
    should_stop,
    transition_row,
)

S, E = TaskStatus, TaskEvent
R = "rejected"


class Started:
    """handle() starts a two-phase row; complete() leads to ``to``."""

    def __init__(self, to: TaskStatus) -> None:
        self.to = to


class Queued:
    """handle() queues an attached event that fires once the status is ``required``."""

    def __init__(self, required: TaskStatus, to: TaskStatus) -> None:
        self.required = required
        self.to = to


# tdengine-stream-meta.md §1.5 (rows: status; columns: event), with §1.4's attach/two-phase.
MATRIX: dict[TaskStatus, dict[TaskEvent, object]] = {
    S.READY: {
        E.INIT: R,
        E.INIT_SCANHIST: R,
        E.SCANHIST_DONE: R,
        E.STOP: S.STOP,
        E.GEN_CHECKPOINT: S.CK,
        E.CHECKPOINT_DONE: R,
        E.PAUSE: S.PAUSE,
        E.RESUME: R,
        E.HALT: S.HALT,
        E.DROPPING: S.DROPPING,
    },
    S.DROPPING: {
        E.INIT: R,
        E.INIT_SCANHIST: R,
        E.SCANHIST_DONE: R,
        E.STOP: S.STOP,
        E.GEN_CHECKPOINT: R,
        E.CHECKPOINT_DONE: R,
        E.PAUSE: S.DROPPING,
        E.RESUME: R,
        E.HALT: R,
        E.DROPPING: S.DROPPING,
    },
    S.UNINIT: {
        E.INIT: Started(S.READY),
        E.INIT_SCANHIST: Started(S.SCAN_HISTORY),
        E.SCANHIST_DONE: R,
        E.STOP: S.STOP,
        E.GEN_CHECKPOINT: R,
        E.CHECKPOINT_DONE: R,
        E.PAUSE: S.PAUSE,
        E.RESUME: R,
        E.HALT: R,
        E.DROPPING: S.DROPPING,
    },
    S.STOP: {
        E.INIT: R,
        E.INIT_SCANHIST: R,
        E.SCANHIST_DONE: R,
        E.STOP: S.STOP,
        E.GEN_CHECKPOINT: R,
        E.CHECKPOINT_DONE: R,
        E.PAUSE: S.STOP,
        E.RESUME: R,
        E.HALT: R,
        E.DROPPING: S.DROPPING,
    },
    S.SCAN_HISTORY: {
        E.INIT: R,
        E.INIT_SCANHIST: R,
        E.SCANHIST_DONE: S.READY,
        E.STOP: S.STOP,
        E.GEN_CHECKPOINT: R,
        E.CHECKPOINT_DONE: R,
        E.PAUSE: S.PAUSE,
        E.RESUME: R,
        E.HALT: R,
        E.DROPPING: S.DROPPING,
    },
    S.HALT: {
        E.INIT: R,
        E.INIT_SCANHIST: R,
        E.SCANHIST_DONE: R,
        E.STOP: S.STOP,
        E.GEN_CHECKPOINT: R,
        E.CHECKPOINT_DONE: R,
        E.PAUSE: Queued(S.READY, S.PAUSE),
        E.RESUME: R,
        E.HALT: S.HALT,
        E.DROPPING: S.DROPPING,
    },
    S.PAUSE: {
        E.INIT: R,
        E.INIT_SCANHIST: R,
        E.SCANHIST_DONE: R,
        E.STOP: S.STOP,
        E.GEN_CHECKPOINT: R,
        E.CHECKPOINT_DONE: R,
        E.PAUSE: S.PAUSE,
        E.RESUME: R,
        E.HALT: S.HALT,
        E.DROPPING: S.DROPPING,
    },
    S.CK: {
        E.INIT: R,
        E.INIT_SCANHIST: R,
        E.SCANHIST_DONE: R,
        E.STOP: S.STOP,
        E.GEN_CHECKPOINT: R,
        E.CHECKPOINT_DONE: S.READY,
        E.PAUSE: Queued(S.READY, S.PAUSE),
        E.RESUME: R,
        E.HALT: Queued(S.READY, S.HALT),
        E.DROPPING: S.DROPPING,
    },
}

# How to reach each status from a new lifecycle, by calls that are all applied.
ROUTE: dict[TaskStatus, list[tuple[str, TaskEvent]]] = {
    S.UNINIT: [],
    S.READY: [("handle", E.INIT), ("complete", E.INIT)],
    S.SCAN_HISTORY: [("handle", E.INIT_SCANHIST), ("complete", E.INIT_SCANHIST)],
    S.CK: [("handle", E.INIT), ("complete", E.INIT), ("handle", E.GEN_CHECKPOINT)],
    S.PAUSE: [("handle", E.INIT), ("complete", E.INIT), ("handle", E.PAUSE)],
    S.HALT: [("handle", E.INIT), ("complete", E.INIT), ("handle", E.HALT)],
    S.STOP: [("handle", E.STOP)],
    S.DROPPING: [("handle", E.DROPPING)],
}


def lifecycle_in(status: TaskStatus, changes: list[StatusChange] | None = None) -> TaskLifecycle:
    task = TaskLifecycle(None if changes is None else lambda _, c: changes.append(c))
    for method, event in ROUTE[status]:
        getattr(task, method)(event)
    assert task.status is status
    return task


CELLS = [(status, event) for status in TaskStatus for event in TaskEvent]


def test_matrix_is_complete() -> None:
    assert len(CELLS) == 80
    assert all(set(MATRIX[s]) == set(TaskEvent) for s in TaskStatus)


@pytest.mark.parametrize(("status", "event"), CELLS, ids=lambda x: x.name.lower())
def test_every_cell_of_the_matrix(status: TaskStatus, event: TaskEvent) -> None:
    changes: list[StatusChange] = []
    task = lifecycle_in(status, changes)
    before = (task.prev_status, task.prev_event, task.saved)
    changes.clear()
    expected = MATRIX[status][event]
    outcome = task.handle(event)
    if expected == R:
        assert outcome is Outcome.REJECTED
        assert outcome.code == 0x80004103
        assert task.status is status
        assert (task.prev_status, task.prev_event, task.saved) == before
        assert task.waiting == ()
        assert changes == []
    elif isinstance(expected, Started):
        assert outcome is Outcome.STARTED
        assert (task.status, task.active) == (status, event)
        assert changes == []
        assert task.complete(event) is Outcome.APPLIED
        assert task.status is expected.to
    elif isinstance(expected, Queued):
        assert outcome is Outcome.PENDING
        assert task.status is status
        assert task.waiting == ((expected.required, event),)
        assert changes == []
    else:
        assert outcome is Outcome.APPLIED
        assert outcome.code == 0
        assert task.status is expected
        assert (task.prev_status, task.prev_event) == (status, event)
        assert [(c.old, c.new, c.event, c.cause) for c in changes] == [
            (status, expected, event, "event")
        ]
        assert changes[0].row == transition_row(status, event)


def test_rows_and_lookup_agree() -> None:
    assert len(LIFECYCLE_ROWS) == 33
    for row in LIFECYCLE_ROWS:
        assert transition_row(row.from_status, row.event) is row
    assert transition_row(S.READY, E.RESUME) is None


def test_enum_values_and_display_names() -> None:
    assert (S.READY, S.DROPPING, S.UNINIT, S.CK) == (0, 1, 2, 7)
    assert (E.INIT, E.RESUME, E.DROPPING) == (1, 8, 10)
    displays = [S.DROPPING.display, S.PAUSE.display, S.CK.display]
    assert displays == ["dropped", "paused", "checkpoint"]
    assert E.SCANHIST_DONE.display == "scan-history-completed"
    assert Outcome.APPLIED.code == Outcome.STARTED.code == Outcome.PENDING.code == 0


# -- two-phase INIT ---------------------------------------------------------------------------


def test_init_is_started_then_completed() -> None:
    task = TaskLifecycle()
    assert task.handle(E.INIT) is Outcome.STARTED
    assert (task.status, task.active) == (S.UNINIT, E.INIT)
    assert task.complete(E.INIT) is Outcome.APPLIED
    assert (task.status, task.active, task.prev_status, task.prev_event) == (
        S.READY,
        None,
        S.UNINIT,
        E.INIT,
    )


@pytest.mark.parametrize("override", [E.PAUSE, E.STOP, E.DROPPING])
def test_started_init_is_overridden_and_its_late_completion_rejected(override: TaskEvent) -> None:
    task = TaskLifecycle()
    task.handle(E.INIT)
    assert task.handle(override) is Outcome.APPLIED
    assert task.active is None
    status = task.status
    assert task.complete(E.INIT) is Outcome.REJECTED
    assert task.status is status


def test_init_again_restarts_and_scanhist_replaces() -> None:
    task = TaskLifecycle()
    task.handle(E.INIT)
    assert task.handle(E.INIT_SCANHIST) is Outcome.STARTED
    assert task.active is E.INIT_SCANHIST
    assert task.complete(E.INIT) is Outcome.REJECTED
    assert task.active is E.INIT_SCANHIST  # a rejected completion leaves it alone
    assert task.complete(E.INIT_SCANHIST) is Outcome.APPLIED
    assert task.status is S.SCAN_HISTORY


def test_rejected_event_leaves_the_started_transition() -> None:
    task = TaskLifecycle()
    task.handle(E.INIT)
    assert task.handle(E.HALT) is Outcome.REJECTED
    assert task.active is E.INIT
    assert task.complete(E.INIT) is Outcome.APPLIED


def test_complete_with_nothing_started_is_rejected() -> None:
    task = TaskLifecycle()
    assert task.complete(E.INIT) is Outcome.REJECTED
    assert task.complete(E.STOP) is Outcome.REJECTED
    assert task.status is S.UNINIT


# -- attached events --------------------------------------------------------------------------


def test_pause_during_checkpoint_fires_on_checkpoint_done() -> None:
    changes: list[StatusChange] = []
    task = lifecycle_in(S.CK, changes)
    changes.clear()
    assert task.handle(E.PAUSE) is Outcome.PENDING
    assert task.handle(E.CHECKPOINT_DONE) is Outcome.APPLIED
    assert task.status is S.PAUSE
    assert task.waiting == ()
    assert [(c.old, c.new, c.cause) for c in changes] == [
        (S.CK, S.READY, "event"),
        (S.READY, S.PAUSE, "waiting"),
    ]
    assert changes[1].row == transition_row(S.READY, E.PAUSE)
    assert task.resume() is Outcome.APPLIED
    assert task.status is S.READY


def test_waiting_events_fire_in_order_and_stop_at_the_first_mismatch() -> None:
    task = lifecycle_in(S.CK)
    task.handle(E.HALT)
    task.handle(E.PAUSE)
    assert task.waiting == ((S.READY, E.HALT), (S.READY, E.PAUSE))
    task.handle(E.CHECKPOINT_DONE)
    # HALT fired first; in HALT the queued PAUSE (needs READY) waits.
    assert task.status is S.HALT
    assert task.waiting == ((S.READY, E.PAUSE),)
    assert task.resume() is Outcome.APPLIED  # back to READY, then PAUSE fires
    assert task.status is S.PAUSE
    assert task.waiting == ()
    assert task.resume() is Outcome.APPLIED
    assert task.status is S.READY


def test_pause_queued_in_halt_fires_after_resume() -> None:
    task = lifecycle_in(S.HALT)
    assert task.handle(E.PAUSE) is Outcome.PENDING
    task.resume()
    assert (task.status, task.saved, task.waiting) == (S.PAUSE, (S.READY,), ())


@pytest.mark.parametrize("event", [E.STOP, E.DROPPING])
def test_entering_stop_or_dropping_drops_waiting_events(event: TaskEvent) -> None:
    task = lifecycle_in(S.CK)
    task.handle(E.PAUSE)
    task.handle(E.HALT)
    task.handle(event)
    assert task.waiting == ()


def test_resume_into_uninit_drops_waiting_events() -> None:
    task = TaskLifecycle()
    task.handle(E.PAUSE)
    task.handle(E.HALT)
    task.handle(E.PAUSE)  # queued in HALT
    task.resume()
    assert (task.status, task.waiting) == (S.PAUSE, ((S.READY, E.PAUSE),))
    task.resume()
    assert (task.status, task.waiting) == (S.UNINIT, ())


# -- pause, halt, resume ----------------------------------------------------------------------


@pytest.mark.parametrize("event", [E.PAUSE, E.HALT])
def test_repeated_pause_or_halt_keeps_the_saved_status(event: TaskEvent) -> None:
    task = lifecycle_in(S.READY)
    for _ in range(3):
        assert task.handle(event) is Outcome.APPLIED
    assert task.saved == (S.READY,)
    assert task.resume() is Outcome.APPLIED
    assert task.status is S.READY
    assert task.resume() is Outcome.REJECTED


def test_halt_of_a_paused_task_resumes_to_pause_then_ready() -> None:
    task = lifecycle_in(S.PAUSE)
    task.handle(E.HALT)
    assert task.saved == (S.READY, S.PAUSE)
    task.resume()
    assert task.status is S.PAUSE
    task.resume()
    assert task.status is S.READY


@pytest.mark.parametrize("status", [S.SCAN_HISTORY, S.UNINIT])
def test_resume_restores_the_status_before_the_pause(status: TaskStatus) -> None:
    task = lifecycle_in(status)
    task.handle(E.PAUSE)
    task.resume()
    assert (task.status, task.prev_status, task.prev_event) == (status, S.PAUSE, None)


@pytest.mark.parametrize("status", [s for s in TaskStatus if s not in (S.PAUSE, S.HALT)])
def test_resume_outside_pause_and_halt_is_rejected(status: TaskStatus) -> None:
    task = lifecycle_in(status)
    prev = (task.prev_status, task.prev_event)
    assert task.resume() is Outcome.REJECTED
    assert (task.status, task.prev_status, task.prev_event) == (status, *prev)


def test_stop_of_a_paused_task_forgets_the_saved_status() -> None:
    task = lifecycle_in(S.PAUSE)
    task.handle(E.STOP)
    assert (task.status, task.saved) == (S.STOP, ())
    task.handle(E.PAUSE)  # a self-transition in STOP, as in the seed
    assert (task.status, task.prev_status, task.prev_event) == (S.STOP, S.STOP, E.PAUSE)


# -- reset and set_ready ----------------------------------------------------------------------


def test_reset_returns_to_uninit_and_forgets_everything() -> None:
    changes: list[StatusChange] = []
    task = lifecycle_in(S.CK, changes)
    task.handle(E.PAUSE)
    changes.clear()
    assert task.reset() is None
    assert (task.status, task.active, task.waiting, task.saved) == (S.UNINIT, None, (), ())
    assert [(c.old, c.new, c.row, c.cause) for c in changes] == [(S.CK, S.UNINIT, None, "reset")]
    assert task.handle(E.INIT) is Outcome.STARTED
    task.reset()
    assert task.active is None


def test_set_ready_forces_ready_and_clears_waiting() -> None:
    task = lifecycle_in(S.CK)
    task.handle(E.PAUSE)
    assert task.set_ready() is Outcome.APPLIED
    assert (task.status, task.waiting, task.prev_status, task.prev_event) == (
        S.READY,
        (),
        S.CK,
        None,
    )


def test_set_ready_is_refused_while_dropping() -> None:
    task = lifecycle_in(S.DROPPING)
    assert task.set_ready() is Outcome.REJECTED
    assert task.status is S.DROPPING


# -- listener, predicates, shared machine -----------------------------------------------------


def test_listener_lets_an_owner_keep_an_exact_paused_count() -> None:
    paused = 0

    def count(_: TaskLifecycle, change: StatusChange) -> None:
        nonlocal paused
        paused += (change.new is S.PAUSE) - (change.old is S.PAUSE)

    tasks = [TaskLifecycle(count) for _ in range(3)]
    tasks[0].handle(E.PAUSE)
    tasks[0].handle(E.PAUSE)
    tasks[1].handle(E.STOP)
    tasks[1].handle(E.PAUSE)
    assert paused == 1
    tasks[2].handle(E.INIT)
    tasks[2].complete(E.INIT)
    tasks[2].handle(E.GEN_CHECKPOINT)
    tasks[2].handle(E.PAUSE)
    assert paused == 1  # pending
    tasks[2].handle(E.CHECKPOINT_DONE)
    assert paused == 2
    tasks[2].handle(E.HALT)
    tasks[0].reset()
    assert paused == 0
    tasks[2].resume()
    assert paused == 1


def test_predicates() -> None:
    assert {s for s in TaskStatus if should_stop(s)} == {S.STOP, S.DROPPING}
    assert {s for s in TaskStatus if should_pause(s)} == {S.PAUSE}
    assert {s for s in TaskStatus if ready_to_run(s, 1)} == {S.READY, S.SCAN_HISTORY, S.CK}
    assert {s for s in TaskStatus if ready_to_run(s, 2)} == {S.READY, S.SCAN_HISTORY, S.CK}
    assert {s for s in TaskStatus if ready_to_run(s, 3)} == {
        S.READY,
        S.SCAN_HISTORY,
        S.CK,
        S.PAUSE,
        S.HALT,
    }


def test_one_shared_machine_and_no_model_per_task() -> None:
    tasks = [lifecycle_in(s) for s in TaskStatus]
    assert LIFECYCLE_MACHINE.models == []
    assert {t.status for t in tasks} == set(TaskStatus)
    assert not hasattr(tasks[0], "__dict__")  # slots: a lifecycle stays small


def test_a_listener_passed_to_a_call_hears_that_calls_changes_only() -> None:
    heard: list[StatusChange] = []
    task = TaskLifecycle()
    task.handle(E.PAUSE, listener=lambda _lc, change: heard.append(change))
    task.handle(E.HALT)  # no listener: not heard
    task.resume(listener=lambda _lc, change: heard.append(change))
    assert [(c.old, c.new, c.cause) for c in heard] == [
        (S.UNINIT, S.PAUSE, "event"), (S.HALT, S.PAUSE, "resume")
    ]
    assert task.listener is None


def test_a_copy_is_independent_and_keeps_the_subclass() -> None:
    class Sub(TaskLifecycle):
        pass

    task = Sub()
    task.handle(E.PAUSE)
    copy = task.copy()
    copy.resume()
    assert type(copy) is Sub
    assert (task.status, task.saved) == (S.PAUSE, (S.UNINIT,))
    assert (copy.status, copy.saved) == (S.UNINIT, ())
