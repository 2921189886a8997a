"""Snapshots of everything a meta lets one observe: compared across implementations by the
harness, hashed by the explorer, checked by statemeta.invariants.

A view is a value (frozen, hashable, hash cached) built from the meta in one pass; it holds
no reference to the meta's mutable state.
"""

from __future__ import annotations

import attrs

from statemeta.codec import StreamTask, TaskId
from statemeta.lifecycle import TaskEvent, TaskStatus
from statemeta.meta.start_round import StartRoundView
from statemeta.roles import Role


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

    @property
    def num_tasks(self) -> int:
        return len(self.ids)

    def task(self, task_id: TaskId) -> TaskView | None:
        for t in self.tasks:
            if t.id == task_id:
                return t
        return None
