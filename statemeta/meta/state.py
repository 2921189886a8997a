"""The meta's whole state, as plain data: what a copy copies, a snapshot shows and a key reads.

A ``MetaState`` holds records, ids, counters and each task's lifecycle; timers are rows of a
``Schedule`` ("due at T, this kind, for this task"), not closures, and the open transaction and
armed faults live in the store (for the memory store, copied by ``MemoryStore.copy`` and
``FaultyStore.copy``). Nothing in it refers back to the meta, so ``copy`` is a copy of data:
frozen records, tuples and enums are shared, and only the mutable containers (the list, the
maps, the sets, each entry and lifecycle, the open start round, the schedule) are copied.
"""

from __future__ import annotations

import enum

import attrs

from statemeta.codec import StreamTask, TaskId
from statemeta.identity import ABSOLUTE_TIME, COUNTS_ONLY, OUTSIDE_KEY, REGISTRATION
from statemeta.meta.entry import TaskEntry
from statemeta.meta.start_round import StartInfo
from statemeta.roles import Role


class TimerKind(enum.Enum):
    """What a timer does when it fires."""

    HEARTBEAT = "heartbeat"
    """A tick of a heartbeat chain (heartbeat.py)."""
    TRIGGER = "trigger"
    """A task's trigger timer: re-armed every trigger_param ms until the task stops or pauses."""
    TASK = "task"
    """A task timer (start_task_timer): timerActive - 1 when it fires."""
    LAUNCH = "launch"
    """A tick of a stream task's fill-history launch retry (launch.py); timerActive holds 1
    from its arming to its end."""


@attrs.frozen
class ArmedTimer:
    """One armed timer of a meta."""

    seq: int
    """Its place in arming order (its id): timers due at the same time fire in this order."""
    due: int
    """When it fires, in ms on the meta's clock."""
    kind: TimerKind
    task: TaskId | None = None
    """The task of a trigger or task timer."""
    incarnation: int = 0
    """The registration of ``task`` that armed it."""
    chain: int = attrs.field(default=0, metadata={
        OUTSIDE_KEY: "only a broken variant has more chains: its timers are in the key",
    })
    """A heartbeat timer's chain (0: the meta's one)."""


@attrs.define(slots=True, eq=False)
class Schedule:
    """The armed timers, in arming order (``armed`` is keyed and ordered by ``seq``)."""

    armed: dict[int, ArmedTimer] = attrs.field(factory=dict)
    next_seq: int = attrs.field(default=1, metadata={
        OUTSIDE_KEY: "only orders timers: the key holds their order as ranks",
    })

    def arm(
        self,
        due: int,
        kind: TimerKind,
        task: TaskId | None = None,
        incarnation: int = 0,
        chain: int = 0,
    ) -> int:
        seq = self.next_seq
        self.next_seq = seq + 1
        self.armed[seq] = ArmedTimer(seq, due, kind, task, incarnation, chain)
        return seq

    def cancel(self, seq: int) -> None:
        self.armed.pop(seq, None)

    def take(self, seq: int) -> ArmedTimer | None:
        """The timer ``seq``, no longer armed (None if it is not armed: cancelled, or fired)."""
        return self.armed.pop(seq, None)

    def of_task(self, entry: TaskEntry, kind: TimerKind) -> list[ArmedTimer]:
        """The timers of ``kind`` that ``entry`` (this registration of its task) armed."""
        return [
            t for t in self.armed.values()
            if t.kind is kind and t.task == entry.id and t.incarnation == entry.incarnation
        ]

    def in_firing_order(self) -> list[ArmedTimer]:
        """Every armed timer, in the order a clock fires them: due time, then arming order."""
        return sorted(self.armed.values(), key=_firing_order)

    def copy(self) -> Schedule:
        return Schedule(dict(self.armed), self.next_seq)


def _firing_order(timer: ArmedTimer) -> tuple[int, int]:
    return timer.due, timer.seq


@attrs.define(slots=True, eq=False)
class HeartbeatState:
    """One heartbeat chain (heartbeat.py)."""

    tick_counter: int = 0
    started_ms: int = attrs.field(default=0, metadata={OUTSIDE_KEY: ABSOLUTE_TIME})
    """hbStart: when the running chain first ticked as leader; 0 when not running."""
    timer: int | None = None
    """The seq of its armed tick; None when the chain is not running."""

    def copy(self) -> HeartbeatState:
        return HeartbeatState(self.tick_counter, self.started_ms, self.timer)


@attrs.define(slots=True, eq=False)
class MetaState:
    """Everything a meta holds in memory (streamMeta.c's SStreamMeta, as data).

    Public and documented for reading (``StreamMeta.state``: the explorer's key, tests); only
    the meta changes it."""

    vg_id: int = attrs.field(metadata={
        OUTSIDE_KEY: "the explored meta's vg_id is the same in every state",
    })
    stage: int
    role: Role
    ids: list[TaskId] = attrs.field(factory=list)
    """The task list, in registration (after load) order."""
    entries: dict[TaskId, TaskEntry] = attrs.field(factory=dict)
    """The task map."""
    stream_count: int = 0
    paused_count: int = 0
    detached: dict[int, TaskEntry] = attrs.field(factory=dict)
    """Removed while still acquired, by registration number: freed at the last release."""
    removed: set[TaskId] = attrs.field(factory=set)
    """Ids this meta removed and that were not registered since."""
    loaded: bool = False
    """load_all has run since open (or since the last clear)."""
    next_incarnation: int = attrs.field(default=1, metadata={OUTSIDE_KEY: REGISTRATION})
    """The registration number the next register or load gives."""
    uncommitted: dict[TaskId, StreamTask] = attrs.field(factory=dict)
    """The committed record of each task save_task changed since the last commit (a failed
    commit restores it)."""
    transaction_stale: bool = False
    """The seed's transaction handle after a begin failed at the tail of a commit (M15):
    writes still land in the open transaction, no commit succeeds until close."""
    start: StartInfo = attrs.field(factory=StartInfo)
    send_before_close: bool = False
    closing: bool = False
    """notify_close has run since open or since the last election as leader (which re-arms
    the heartbeat chain notify_close ended, M16)."""
    hb_sent: int = attrs.field(default=0, metadata={OUTSIDE_KEY: COUNTS_ONLY})
    """hbCount: heartbeats handed to the transport."""
    heartbeat: HeartbeatState = attrs.field(factory=HeartbeatState)
    schedule: Schedule = attrs.field(factory=Schedule)
    closed: bool = attrs.field(default=False, metadata={
        OUTSIDE_KEY: "an explored meta is open between operations (a reopen opens a new one)",
    })

    def copy(self) -> MetaState:
        """An independent copy (see the module docstring)."""
        return MetaState(
            self.vg_id,
            self.stage,
            self.role,
            list(self.ids),
            {tid: e.copy() for tid, e in self.entries.items()},
            self.stream_count,
            self.paused_count,
            {inc: e.copy() for inc, e in self.detached.items()},
            set(self.removed),
            self.loaded,
            self.next_incarnation,
            dict(self.uncommitted),
            self.transaction_stale,
            self.start.copy(),
            self.send_before_close,
            self.closing,
            self.hb_sent,
            self.heartbeat.copy(),
            self.schedule.copy(),
            self.closed,
        )
