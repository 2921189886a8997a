"""What one can observe of a meta, as values: its views, and the trace of what happened.

A view is a snapshot of everything a meta lets one observe (frozen, hashable, hash cached),
built from the meta in one pass and holding no reference to its mutable state: compared
across implementations by the harness, checked by ``statemeta.invariants``. A ``CheckTrace``
is what a meta in check mode recorded between two checks (status and role changes, heartbeats
sent, acquires). These records sit below the meta (DESIGN §3's layers) so that the invariants
read them without importing the meta.
"""

from __future__ import annotations

import attrs

from statemeta.codec import HbMsg, StreamTask, TaskId
from statemeta.lifecycle import StatusChange, TaskEvent, TaskStatus
from statemeta.roles import Role, RoleEvent


@attrs.frozen(cache_hash=True)
class TaskView:
    """One mapped task: its record and its runtime state."""

    id: TaskId
    task: StreamTask
    """The in-memory record; task.task_status is the persisted status byte."""
    status: TaskStatus
    saved: tuple[TaskStatus, ...]
    """What resume restores (innermost last)."""
    active: TaskEvent | None
    waiting: tuple[tuple[TaskStatus, TaskEvent], ...]
    refcount: int
    acquires: int
    trigger_held: bool
    downstream_ready: bool
    timer_active: int
    drop_pending: bool
    next_process_ver: int
    checkpointing_id: int
    failed_checkpoint_id: int

    @property
    def fill_history(self) -> bool:
        return self.task.fill_history == 1


@attrs.frozen(cache_hash=True)
class DetachedView:
    """A task removed from the meta while still acquired (freed at its last release)."""

    id: TaskId
    incarnation: int
    refcount: int
    acquires: int


@attrs.frozen(cache_hash=True)
class HeartbeatView:
    """The heartbeat chain and what it has sent."""

    armed: bool
    tick_counter: int
    sent: int
    """hbCount: messages handed to the transport (the before-close one included)."""
    send_before_close: bool


@attrs.frozen(cache_hash=True)
class StartRoundView:
    """The start bookkeeping as observed: the open round (if any) and the rounds so far."""

    open: bool
    members: tuple[TaskId, ...]
    ready: tuple[TaskId, ...]
    """Members with a ready result, in member order."""
    failed: tuple[TaskId, ...]
    completed: int
    """Rounds completed; the meta calls the start-complete callback once for each."""
    superseded: int
    """Rounds abandoned by a new start_all before they completed (no callback)."""


@attrs.frozen(cache_hash=True)
class MetaView:
    """Everything observable about a meta, in a canonical form."""

    vg_id: int
    stage: int
    role: Role
    ids: tuple[TaskId, ...]
    """The task list, in order."""
    map_ids: frozenset[TaskId]
    """The task map's keys."""
    tasks: tuple[TaskView, ...]
    """The mapped tasks in list order."""
    stream_count: int
    paused_count: int
    start_round: StartRoundView
    heartbeat: HeartbeatView
    detached: tuple[DetachedView, ...]
    removed: frozenset[TaskId]
    """Ids this meta removed (unregister, load's DROPPING records) and not registered since."""
    loaded: bool
    """load_all has run since open."""
    closing: bool = False
    """notify_close has run since open or since the last election as leader."""

    @property
    def num_tasks(self) -> int:
        """Tasks in the task list (fill-history tasks included)."""
        return len(self.ids)

    def task(self, task_id: TaskId) -> TaskView | None:
        """The view of the mapped task ``task_id``, or None if it is not mapped."""
        for t in self.tasks:
            if t.id == task_id:
                return t
        return None


@attrs.frozen
class RoleChange:
    """One application of the role table (recorded for the role invariant)."""

    old: Role
    event: RoleEvent
    new: Role


@attrs.frozen
class SentHeartbeat:
    """One heartbeat handed to the transport (recorded for the heartbeat invariant)."""

    msg: HbMsg
    payload: bytes
    role: Role
    before_close: bool
    expected_ids: tuple[TaskId, ...]
    """The mapped non-fill-history tasks in list order when it was built."""


@attrs.frozen
class CheckTrace:
    """What happened since the last invariant check (recorded only in check mode)."""

    status_changes: tuple[StatusChange, ...]
    role_changes: tuple[RoleChange, ...]
    heartbeats: tuple[SentHeartbeat, ...]
    acquired: tuple[TaskStatus, ...]
    """The status of each task acquire returned, when it returned it."""

