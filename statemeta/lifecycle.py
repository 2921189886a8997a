"""The stream-task lifecycle: one shared ``transitions`` machine, built from spec/lifecycle.toml.

Theory of operation
-------------------
Everything that affects a task's lifecycle lives in spec/lifecycle.toml and in this file.
The table has a row for some (status, event) pairs and lists every other pair as rejected; a
rejected event returns ``Outcome.REJECTED`` (TDengine's 0x80004103) and changes nothing.

One ``transitions.Machine`` is built at import from the rows that change status at once. It
serves every lifecycle: a ``TaskLifecycle`` is a detached model (never ``add_model``-ed), and
applying a row executes that row's ``Transition`` on it, which sets ``status``.
``TaskLifecycle.handle`` looks the pair up once and does one of four things:

- **plain row**: applied now (APPLIED). Self-transitions (PAUSE->PAUSE, STOP->STOP, PAUSE in
  STOP or DROPPING, ...) are applied too: they are real rows and update ``prev_*``.
- **two-phase row** (INIT, INIT_SCANHIST; TDengine's autoInvokeEndFn = false): the transition
  only starts (STARTED): ``active`` is set and the status stays UNINIT until ``complete(event)``
  applies the row (``complete`` with nothing active in ``complete_needs_active`` is the
  caller's error: PreconditionError, as the seed asserts). Any other accepted event overrides
  a started transition (``active`` is cleared), so a late ``complete`` is REJECTED; a
  rejected event leaves ``active`` alone.
- **attached row** (CK+HALT, CK+PAUSE, HALT+PAUSE): the status stays; (required status, event)
  is queued (PENDING). After every applied change the queue is drained in FIFO order: while its
  head's required status is the current status, the head is popped and fired through the row
  for (status, event). Entering a status of ``drops_waiting`` (STOP, DROPPING, UNINIT) empties
  the queue: those events are rejected, as TDengine's waiting caller sees them.

Resume is not an event. Entering PAUSE or HALT (``resumable``) from another status pushes that
status on the ``saved`` stack; a repeated PAUSE or HALT pushes nothing (idempotent); ``resume``
pops it, so READY -PAUSE-> PAUSE -HALT-> HALT resumes to PAUSE, then to READY. ``reset`` and
``set_ready`` are TDengine's direct setters: they bypass the table and clear ``active``, the
queue and the stack. ``_apply`` and ``_record`` are the one place these special cases live; the
listener hears every change, in order, so its owner can count entries into and exits from PAUSE.

Semantics: the above is the intended machine. With ``semantics="seed"`` a lifecycle is TDengine's
at the seed commit, bug for bug, one switch of spec/divergences.toml at a time (each asked in
one place below): a repeated PAUSE / HALT overwrites what resume restores (L1); resume swaps
with one saved status instead of popping a stack (L2); the queue's head fires but its last
entry is removed (L3); STOP, DROPPING and UNINIT keep the queue (L4); reset keeps ``prev`` (L6);
``prev`` starts as READY (L8).

A lifecycle is plain data (``copy`` is cheap). Its owner either keeps a ``listener`` on it, or
passes one to each call (``handle(event, listener=...)``): the meta does the latter, so that
none of its lifecycles holds a reference back to it and copying a meta is copying data.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Literal, Self

import attrs
from transitions import Event, EventData, Machine, State, Transition

from statemeta.arguments import checked, checked_api
from statemeta.errors import PreconditionError
from statemeta.identity import OUTSIDE_KEY
from statemeta.semantics import Profile, Semantics, as_profile
from statemeta.tables import LIFECYCLE, Switch, TaskEvent, TaskStatus, TransitionRow

__all__ = [
    "LIFECYCLE_ROWS",
    "TSDB_CODE_STREAM_INVALID_STATETRANS",
    "Cause",
    "Listener",
    "Outcome",
    "StatusChange",
    "TaskEvent",
    "TaskLifecycle",
    "TaskStatus",
    "TransitionRow",
    "ready_to_run",
    "should_pause",
    "should_stop",
    "transition_row",
]

TSDB_CODE_STREAM_INVALID_STATETRANS = 0x80004103
"""TDengine's code for an event the current status cannot handle."""


class Outcome(Enum):
    """What handling an event did."""

    APPLIED = "applied"
    STARTED = "started"
    """A two-phase INIT / INIT_SCANHIST has begun; the status stays UNINIT until complete()."""
    PENDING = "pending"
    """An attached event is queued until its required status is reached."""
    REJECTED = "rejected"
    """Nothing changed."""

    @property
    def code(self) -> int:
        """TDengine's return code: 0, or 0x80004103 for a rejection."""
        return TSDB_CODE_STREAM_INVALID_STATETRANS if self is Outcome.REJECTED else 0


Cause = Literal["event", "complete", "waiting", "resume", "reset", "set_ready"]


@attrs.frozen
class StatusChange:
    """One change told to a lifecycle's listener (old == new for a self-transition)."""

    old: TaskStatus
    new: TaskStatus
    event: TaskEvent | None
    row: TransitionRow | None
    """The table row applied; None for resume, reset and set_ready (not table rows)."""
    cause: Cause


Listener = Callable[["TaskLifecycle", StatusChange], None]

LIFECYCLE_ROWS: tuple[TransitionRow, ...] = LIFECYCLE.rows

_ROWS: dict[tuple[TaskStatus, TaskEvent], TransitionRow] = {
    (row.from_status, row.event): row for row in LIFECYCLE_ROWS
}
_DROPS_WAITING = LIFECYCLE.drops_waiting
_RESUMABLE = LIFECYCLE.resumable
_COMPLETE_NEEDS_ACTIVE = LIFECYCLE.complete_needs_active


@checked
def transition_row(status: TaskStatus, event: TaskEvent) -> TransitionRow | None:
    """The row for (status, event), or None when the table rejects the pair."""
    return _ROWS.get((status, event))


@checked
def should_stop(status: TaskStatus) -> bool:
    """streamTaskShouldStop: the task is stopped or being dropped (acquire refuses it)."""
    return status in LIFECYCLE.should_stop


@checked
def should_pause(status: TaskStatus) -> bool:
    """streamTaskShouldPause (HALT does not count)."""
    return status in LIFECYCLE.should_pause


@checked
def ready_to_run(status: TaskStatus, task_level: int) -> bool:
    """streamTaskReadyToRun: a sink-level task also runs while paused or halted."""
    if task_level == LIFECYCLE.sink_level:
        return status in LIFECYCLE.ready_to_run_sink
    return status in LIFECYCLE.ready_to_run


@attrs.frozen
class _Step:
    """A row bound to the shared machine: what executing it needs, resolved once."""

    row: TransitionRow
    transition: Transition
    source: State
    trigger: Event


def _build_machine() -> tuple[Machine, dict[tuple[TaskStatus, TaskEvent], _Step]]:
    """The shared machine over every row that changes status at once (not the attached ones)."""
    machine = Machine(
        model=None,
        states=TaskStatus,
        initial=LIFECYCLE.initial,
        auto_transitions=False,
        ignore_invalid_triggers=False,
        model_attribute="status",
        name="task-lifecycle",
    )
    steps: dict[tuple[TaskStatus, TaskEvent], _Step] = {}
    for row in LIFECYCLE_ROWS:
        if row.attach is None:
            machine.add_transition(row.event.name.lower(), row.from_status, row.to_status)
    for row in LIFECYCLE_ROWS:
        if row.attach is None:
            trigger = machine.events[row.event.name.lower()]
            (transition,) = trigger.transitions[row.from_status.name]
            steps[row.from_status, row.event] = _Step(
                row, transition, machine.get_state(row.from_status), trigger
            )
    return machine, steps


LIFECYCLE_MACHINE, _STEPS = _build_machine()


_RECORDED = (
    "recorded by each change and read by none: states that differ only here behave alike "
    "(the level-1 view shows it, and a conformance check compares it at every step)"
)


@checked_api
@attrs.define(eq=False)
class TaskLifecycle:
    """One task's lifecycle (TDengine's SStreamTaskSM); new ones start in UNINIT.

    ``semantics``: ``"intended"`` (the default), ``"seed"``, or a ``Profile`` of switches.
    """

    listener: Listener | None = attrs.field(default=None, metadata={
        OUTSIDE_KEY: "None in a meta: the meta passes its listener to each call",
    })
    profile: Profile = attrs.field(
        default=Semantics.INTENDED.profile, converter=as_profile, kw_only=True, alias="semantics",
        metadata={OUTSIDE_KEY: "the run's semantics: the same in every state of one exploration"},
    )
    status: TaskStatus = attrs.field(init=False, default=LIFECYCLE.initial)
    prev_status: TaskStatus | None = attrs.field(init=False, metadata={OUTSIDE_KEY: _RECORDED})
    """The status before the last change (TDengine's prev.state); None before any change, or
    READY in the seed (L8)."""
    prev_event: TaskEvent | None = attrs.field(
        init=False, default=None, metadata={OUTSIDE_KEY: _RECORDED}
    )
    """The event of the last change; None after resume, reset or set_ready (prev.evt = 0)."""
    active: TaskEvent | None = attrs.field(init=False, default=None)
    """A started two-phase event awaiting complete()."""
    waiting: tuple[tuple[TaskStatus, TaskEvent], ...] = attrs.field(init=False, default=())
    """Attached events, FIFO: (required status, event)."""
    saved: tuple[TaskStatus, ...] = attrs.field(init=False, default=())
    """Statuses resume() restores, innermost last (non-empty exactly in PAUSE or HALT); in the
    seed one status at most, the one a swap would restore (L2)."""

    @prev_status.default
    def _initial_prev(self) -> TaskStatus | None:
        return TaskStatus.READY if self.profile.seed(Switch.PREV_STARTS_READY) else None

    def copy(self) -> Self:
        """An independent copy (every field is an immutable value: a shallow copy)."""
        new = object.__new__(type(self))
        for name in _FIELDS:
            object.__setattr__(new, name, getattr(self, name))
        return new

    def handle(self, event: TaskEvent, *, listener: Listener | None = None) -> Outcome:
        """streamTaskHandleEvent: apply, start, queue or reject ``event``.

        ``listener`` (and the lifecycle's own) hears each change this call makes."""
        row = _ROWS.get((self.status, event))
        if row is None:
            return Outcome.REJECTED
        if row.two_phase:
            self.active = event
            return Outcome.STARTED
        self.active = None
        if row.attach is not None:
            self.waiting = (*self.waiting, (row.attach, event))
            return Outcome.PENDING
        self._apply(_STEPS[self.status, event], "event", listener)
        self._fire_waiting(listener)
        return Outcome.APPLIED

    def complete(self, event: TaskEvent, *, listener: Listener | None = None) -> Outcome:
        """streamTaskOnHandleEventSuccess: finish the started two-phase ``event``.

        PreconditionError with nothing active in a status of ``complete_needs_active`` (the
        seed asserts); REJECTED for any other mismatch."""
        if self.active is None and self.status in _COMPLETE_NEEDS_ACTIVE:
            raise PreconditionError(
                f"complete({event.name}) with no transition active in {self.status.name}: the "
                f"seed asserts a second phase there has one (streamTaskOnHandleEventSuccess)"
            )
        if self.active is None or self.active != event:
            return Outcome.REJECTED
        self.active = None
        self._apply(_STEPS[self.status, event], "complete", listener)
        self._fire_waiting(listener)
        return Outcome.APPLIED

    def resume(self, *, listener: Listener | None = None) -> Outcome:
        """streamTaskRestoreStatus: back to the status saved on entering PAUSE or HALT."""
        old = self.status
        if old not in _RESUMABLE:
            return Outcome.REJECTED
        *outer, self.status = self.saved
        if self.profile.seed(Switch.RESUME_SWAPS_PREV):  # L2: the old status is the one saved
            self.saved = (old,) if self.status in _RESUMABLE else ()
        else:
            self.saved = tuple(outer)
        self._record(old, None, None, "resume", listener)
        self._fire_waiting(listener)
        return Outcome.APPLIED

    def reset(self, *, listener: Listener | None = None) -> None:
        """streamTaskResetStatus: back to UNINIT, nothing active, waiting or saved."""
        self._force(TaskStatus.UNINIT, "reset", listener)

    def set_ready(self, *, listener: Listener | None = None) -> Outcome:
        """streamTaskSetStatusReady: force READY (refused while dropping)."""
        if self.status in LIFECYCLE.set_ready_refused:
            return Outcome.REJECTED
        self._force(TaskStatus.READY, "set_ready", listener)
        return Outcome.APPLIED

    def _force(self, new: TaskStatus, cause: Cause, listener: Listener | None) -> None:
        """A direct setter: bypasses the table and forgets every transition in progress."""
        old = self.status
        kept = (self.prev_status, self.prev_event)
        self.status = new
        self.active = None
        self.waiting = ()
        self.saved = ()
        self._record(old, None, None, cause, listener)
        if cause == "reset" and self.profile.seed(Switch.RESET_KEEPS_PREV):  # L6
            self.prev_status, self.prev_event = kept

    def _apply(self, step: _Step, cause: Cause, listener: Listener | None) -> None:
        """Executes one row on the shared machine (which sets ``status``), then records it."""
        old = self.status
        data = EventData(step.source, step.trigger, LIFECYCLE_MACHINE, self, (), {})
        step.transition.execute(data)
        new = self.status
        if new not in _RESUMABLE:
            self.saved = ()
        elif new != old or self.profile.seed(Switch.REPEAT_OVERWRITES_SAVED):  # L1
            if self.profile.seed(Switch.RESUME_SWAPS_PREV):  # L2: one slot
                self.saved = (old,)
            else:
                self.saved = (*self.saved, old)
        self._record(old, step.row.event, step.row, cause, listener)

    def _record(
        self,
        old: TaskStatus,
        event: TaskEvent | None,
        row: TransitionRow | None,
        cause: Cause,
        listener: Listener | None,
    ) -> None:
        """Every change ends here: prev, the dropped waiting events, the listeners."""
        self.prev_status = old
        self.prev_event = event
        if self.status in _DROPS_WAITING and not self.profile.seed(Switch.WAITING_KEPT_ON_STOP):
            self.waiting = ()  # L4
        if self.listener is None and listener is None:
            return
        change = StatusChange(old, self.status, event, row, cause)
        if self.listener is not None:
            self.listener(self, change)
        if listener is not None:
            listener(self, change)

    def _fire_waiting(self, listener: Listener | None) -> None:
        """Fires queued events while ``_next_waiting`` names one."""
        while (index := self._next_waiting()) is not None:
            status, event = self.waiting[index]
            if self.profile.seed(Switch.WAITING_POPS_LAST):  # L3: taosArrayPop removes the last
                index = len(self.waiting) - 1
            self.waiting = self.waiting[:index] + self.waiting[index + 1 :]
            self._apply(_STEPS[status, event], "waiting", listener)

    def _next_waiting(self) -> int | None:
        """The queued event to fire now: the oldest, once its required status holds (FIFO)."""
        if self.waiting and self.waiting[0][0] == self.status:
            return 0
        return None


_FIELDS = tuple(a.name for a in attrs.fields(TaskLifecycle))
"""Every field of a lifecycle, which ``copy`` copies."""
