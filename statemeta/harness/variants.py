"""Deliberately broken variants of the meta: the proof that the suites have teeth.

Each variant is a ``StreamMeta`` over a ``MetaCore`` subclass (or with a ``TaskLifecycle``
subclass) with one realistic bug (most of them bugs the seed
has or once had), selected by name only: ``ReferenceAdapter(variant=NAME)``,
``python -m statemeta.serve --variant NAME``, the explorer's ``--variant``. The property suite
must catch every one (tests/properties/test_variants_caught.py). They reach into the meta's
internals on purpose: a bug lives where the code is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Self

import attrs

from statemeta.codec import (
    StreamTask,
    TaskId,
    decode_task_key,
    encode_task,
    encode_task_key,
)
from statemeta.errors import ReleaseError
from statemeta.lifecycle import StatusChange, TaskLifecycle, TaskStatus
from statemeta.meta import heartbeat
from statemeta.meta.core import MetaCore, TaskHandle
from statemeta.meta.start_round import StartRound
from statemeta.meta.state import ArmedTimer, HeartbeatState
from statemeta.meta.stream_meta import StreamMeta
from statemeta.roles import Role
from statemeta.store import Store, Table

__all__ = ["VARIANTS", "Variant"]


@attrs.frozen
class Variant:
    name: str
    doc: str
    meta_class: type[StreamMeta]


def _meta(core: type[MetaCore]) -> type[StreamMeta]:
    """The public meta over a broken core."""

    class Meta(StreamMeta):
        core_class = core

    Meta.__name__ = Meta.__qualname__ = core.__name__ + "Meta"
    return Meta


class PausedCountSelfPause(MetaCore):
    def _on_status_change(self, lifecycle: TaskLifecycle, change: StatusChange) -> None:
        super()._on_status_change(lifecycle, change)
        if change.old is TaskStatus.PAUSE and change.new is TaskStatus.PAUSE:
            self.state.paused_count += 1


class PausedCountForgetsStop(MetaCore):
    def _on_status_change(self, lifecycle: TaskLifecycle, change: StatusChange) -> None:
        super()._on_status_change(lifecycle, change)
        if change.old is TaskStatus.PAUSE and change.new in (TaskStatus.STOP, TaskStatus.DROPPING):
            self.state.paused_count += 1  # only resume was thought to leave PAUSE


class StreamCountCountsFillHistory(MetaCore):
    def _add_entry(self, task: StreamTask, ver: int) -> None:
        super()._add_entry(task, ver)
        if task.fill_history:
            self.state.stream_count += 1


class RegisterWithoutCommit(MetaCore):
    def register(self, task: StreamTask, ver: int) -> bool:
        if task.id in self.state.entries:
            return False
        expanded = self.expand(task, 1 if task.fill_history else ver)
        self._ensure_transaction()
        self.tasks.upsert(*_record(expanded))
        self._add_entry(expanded, ver)
        self.state.removed.discard(task.id)
        return True  # durable only at whatever commit comes next


class DeleteWithoutCommit(MetaCore):
    def _durably(
        self,
        upserts: Sequence[tuple[bytes, bytes]],
        deletes: Sequence[bytes],
        apply: Callable[[], None],
    ) -> None:
        if not deletes:
            super()._durably(upserts, deletes, apply)
            return
        self._write(upserts, deletes)  # and no commit
        apply()


class MemoryBeforeWrite(MetaCore):
    def _durably(
        self,
        upserts: Sequence[tuple[bytes, bytes]],
        deletes: Sequence[bytes],
        apply: Callable[[], None],
    ) -> None:
        apply()  # list and map first; the write below can still fail
        super()._durably(upserts, deletes, lambda: None)


class _NumericOrderTable:
    """task.db read in numeric (stream_id, task_id) order instead of memcmp key order."""

    def __init__(self, inner: Table) -> None:
        self._inner = inner
        self.name = inner.name
        self.key_len = inner.key_len

    def get(self, key: bytes) -> bytes | None:
        return self._inner.get(key)

    def upsert(self, key: bytes, value: bytes) -> None:
        self._inner.upsert(key, value)

    def delete(self, key: bytes) -> None:
        self._inner.delete(key)

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        return iter(sorted(self._inner.items(), key=lambda kv: decode_task_key(kv[0])))


class NumericLoadOrder(MetaCore):
    def _task_table(self, store: Store) -> Table:
        return _NumericOrderTable(super()._task_table(store))


class _EarlyWaitingLifecycle(TaskLifecycle):
    def _next_waiting(self) -> int | None:
        return 0 if self.waiting else None  # the required status is never compared


class WaitingFiredEarly(StreamMeta):
    lifecycle_class = _EarlyWaitingLifecycle


class _LifoLifecycle(TaskLifecycle):
    def _next_waiting(self) -> int | None:
        if self.waiting and self.waiting[-1][0] == self.status:
            return len(self.waiting) - 1  # the newest first
        return None


class WaitingFiredLifo(StreamMeta):
    lifecycle_class = _LifoLifecycle


class ReleaseBelowZero(MetaCore):
    def release(self, handle: TaskHandle) -> None:
        state = self.state
        entry = state.entries.get(handle.id) or state.detached.get(handle.incarnation)
        if entry is None:
            raise ReleaseError(f"release of unknown task {handle.id}")
        entry.acquires -= 1  # no check that anything was acquired
        entry.refcount -= 1
        if entry.refcount == 0:
            state.detached.pop(entry.incarnation, None)


class DroppingKeptAtLoad(MetaCore):
    def _dropped_at_load(self, task: StreamTask) -> bool:
        return False  # a DROPPING record loads like any other


class StartRoundByCount(MetaCore):
    def _round_done(self, started: StartRound) -> bool:
        return started.count >= len(self.state.entries)  # the seed: results counted


class SecondHeartbeatChain(MetaCore):
    """A re-election starts one more chain (a real duplicate: the seed re-arms its one chain,
    shared reference §2.2): each extra chain is a ``HeartbeatState`` of its own (numbered
    from 1), ticking through the same schedule."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.extra_chains: dict[int, HeartbeatState] = {}

    def copy(self, store: Store) -> Self:
        new = super().copy(store)
        new.extra_chains = {n: c.copy() for n, c in self.extra_chains.items()}
        return new

    def update_stage_role(self, stage: int, is_leader: bool) -> Role:
        was_leader = self.state.role is Role.LEADER
        role = super().update_stage_role(stage, is_leader)
        if is_leader and was_leader:
            number = len(self.extra_chains) + 1
            chain = self.extra_chains[number] = HeartbeatState()
            heartbeat.arm(chain, self.state.schedule, self.now, number)
        return role

    def _fire_heartbeat(self, timer: ArmedTimer) -> None:
        if timer.chain == 0:
            super()._fire_heartbeat(timer)
            return
        leader = self.state.role is Role.LEADER
        chain = self.extra_chains[timer.chain]
        if heartbeat.tick(chain, self.state.schedule, self.now, leader, timer.chain):
            self._send_heartbeat(before_close=False)


class AcquireDropping(MetaCore):
    def acquire(self, stream_id: int, task_id: int) -> TaskHandle | None:
        entry = self.state.entries.get(TaskId(stream_id, task_id))
        if entry is None or entry.lifecycle.status is TaskStatus.STOP:  # forgets DROPPING
            return None
        entry.refcount += 1
        entry.acquires += 1
        if self.check:
            self._trace.acquired.append(entry.lifecycle.status)
        return TaskHandle(entry.id, entry.incarnation)


def _record(task: StreamTask) -> tuple[bytes, bytes]:
    return encode_task_key(task.stream_id, task.task_id), encode_task(task)


_VARIANTS: tuple[Variant, ...] = (
    Variant("paused_count_self_pause", "paused_count also counts PAUSE -> PAUSE",
            _meta(PausedCountSelfPause)),
    Variant("paused_count_forgets_stop", "leaving PAUSE by STOP or DROPPING is not counted",
            _meta(PausedCountForgetsStop)),
    Variant("stream_count_counts_fill_history", "stream_count counts fill-history tasks too",
            _meta(StreamCountCountsFillHistory)),
    Variant("register_without_commit", "register writes its record but never commits it",
            _meta(RegisterWithoutCommit)),
    Variant("delete_without_commit", "removals are written but not committed (a crash "
            "brings the task back)", _meta(DeleteWithoutCommit)),
    Variant("memory_before_write", "list and map change before the write that can fail",
            _meta(MemoryBeforeWrite)),
    Variant("numeric_load_order", "load_all visits records in numeric, not key byte, order",
            _meta(NumericLoadOrder)),
    Variant("waiting_fired_lifo", "attached waiting events fire newest first",
            WaitingFiredLifo),
    Variant("waiting_fired_early", "an attached event fires at the next status change, "
            "before its required status is reached", WaitingFiredEarly),
    Variant("release_below_zero", "release without an outstanding acquire still decrements",
            _meta(ReleaseBelowZero)),
    Variant("dropping_kept_at_load", "load_all loads DROPPING records instead of removing them",
            _meta(DroppingKeptAtLoad)),
    Variant("start_round_by_count", "a start round completes when results >= map size",
            _meta(StartRoundByCount)),
    Variant("second_heartbeat_chain", "a re-election as leader starts a second heartbeat chain",
            _meta(SecondHeartbeatChain)),
    Variant("acquire_dropping", "acquire refuses STOP but hands out DROPPING tasks",
            _meta(AcquireDropping)),
)

VARIANTS: dict[str, Variant] = {v.name: v for v in _VARIANTS}
