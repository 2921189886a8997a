"""Deliberately broken variants of the meta: the proof that the suites have teeth.

Each variant is a ``StreamMeta`` subclass with one realistic bug (most of them bugs the seed
has or once had), selected by name only: ``ReferenceAdapter(variant=NAME)``,
``python -m statemeta.serve --variant NAME``, the explorer's ``--variant``. The property suite
must catch every one (tests/properties/test_variants_caught.py). They reach into the meta's
internals on purpose: a bug lives where the code is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from statemeta.codec import (
    StreamTask,
    TaskId,
    decode_task,
    decode_task_key,
    encode_task,
    encode_task_key,
)
from statemeta.errors import ReleaseError, StatemetaError
from statemeta.lifecycle import StatusChange, TaskLifecycle, TaskStatus
from statemeta.meta.clock import WrappedClock
from statemeta.meta.core import (
    LoadReport,
    StreamMeta,
    TaskHandle,
    operation,
)
from statemeta.meta.heartbeat import HeartbeatChain
from statemeta.meta.start_round import StartRound
from statemeta.roles import Role
from statemeta.store import Table

__all__ = ["VARIANTS", "Variant"]


@attrs.frozen
class Variant:
    name: str
    doc: str
    meta_class: type[StreamMeta]


class PausedCountSelfPause(StreamMeta):
    def _on_status_change(self, lifecycle: TaskLifecycle, change: StatusChange) -> None:
        super()._on_status_change(lifecycle, change)
        if change.old is TaskStatus.PAUSE and change.new is TaskStatus.PAUSE:
            self._paused_count += 1


class PausedCountForgetsStop(StreamMeta):
    def _on_status_change(self, lifecycle: TaskLifecycle, change: StatusChange) -> None:
        super()._on_status_change(lifecycle, change)
        if change.old is TaskStatus.PAUSE and change.new in (TaskStatus.STOP, TaskStatus.DROPPING):
            self._paused_count += 1  # only resume was thought to leave PAUSE


class StreamCountCountsFillHistory(StreamMeta):
    def _add_entry(self, task: StreamTask, ver: int) -> None:
        super()._add_entry(task, ver)
        if task.fill_history:
            self._stream_count += 1


class RegisterWithoutCommit(StreamMeta):
    @operation
    def register(self: StreamMeta, /, task: StreamTask, ver: int) -> bool:
        if task.id in self._map:
            return False
        expanded = self._expand(task, 1 if task.fill_history else ver)
        self._ensure_transaction()
        self._tasks.upsert(*_record(expanded))
        self._add_entry(expanded, ver)
        self._removed.discard(task.id)
        return True  # durable only at whatever commit comes next


class DeleteWithoutCommit(StreamMeta):
    def _durably(
        self,
        upserts: Sequence[tuple[bytes, bytes]],
        deletes: Sequence[bytes],
        apply: Any,
    ) -> None:
        if not deletes:
            super()._durably(upserts, deletes, apply)
            return
        self._ensure_transaction()
        for key in deletes:
            self._tasks.delete(key)
        for key, value in upserts:
            self._tasks.upsert(key, value)
        apply()


class MemoryBeforeWrite(StreamMeta):
    def _durably(
        self,
        upserts: Sequence[tuple[bytes, bytes]],
        deletes: Sequence[bytes],
        apply: Any,
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


class NumericLoadOrder(StreamMeta):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tasks = _NumericOrderTable(self._tasks)


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


class ReleaseBelowZero(StreamMeta):
    @operation
    def release(self: StreamMeta, /, handle: TaskHandle) -> None:
        entry = self._map.get(handle.id) or self._detached.get(handle.incarnation)
        if entry is None:
            raise ReleaseError(f"release of unknown task {handle.id}")
        entry.acquires -= 1  # no check that anything was acquired
        entry.refcount -= 1
        if entry.refcount == 0:
            self._detached.pop(entry.incarnation, None)


class DroppingKeptAtLoad(StreamMeta):
    @operation
    def load_all(self: StreamMeta, /) -> LoadReport:
        loaded: list[StreamTask] = []
        duplicates = []
        for _key, value in self._tasks.items():
            try:
                task = decode_task(value)
            except StatemetaError:
                continue
            if task.id in self._map:
                duplicates.append(task.id)
            else:
                loaded.append(task)  # a DROPPING record loads like any other
        for task in loaded:
            self._add_entry(task, task.checkpoint_ver + 1)
        self._loaded = True
        return LoadReport(tuple(t.id for t in loaded), (), tuple(duplicates), (), ())


class StartRoundByCount(StreamMeta):
    def _round_done(self, started: StartRound) -> bool:
        return len(started.results) >= len(self._map)  # the seed: results counted, not matched


class SecondHeartbeatChain(StreamMeta):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._extra_chains: list[HeartbeatChain] = []

    def update_stage_role(self, stage: int, is_leader: bool) -> Role:
        was_leader = self._roles.role is Role.LEADER
        role = super().update_stage_role(stage, is_leader)
        if is_leader and was_leader:  # the seed starts a chain on every election
            chain = HeartbeatChain(WrappedClock(self._clock, self._callback), self._is_leader,
                                   self._tick_send)
            chain.start()
            self._extra_chains.append(chain)
        return role

    def close(self) -> None:
        for chain in self._extra_chains:
            chain.stop()
        super().close()


class AcquireDropping(StreamMeta):
    @operation
    def acquire(self: StreamMeta, /, stream_id: int, task_id: int) -> TaskHandle | None:
        entry = self._map.get(TaskId(stream_id, task_id))
        if entry is None or entry.lifecycle.status is TaskStatus.STOP:  # forgets DROPPING
            return None
        entry.refcount += 1
        entry.acquires += 1
        if self._check:
            self._trace_acquired.append(entry.lifecycle.status)
        return TaskHandle(entry.id, entry.incarnation)


def _record(task: StreamTask) -> tuple[bytes, bytes]:
    return encode_task_key(task.stream_id, task.task_id), encode_task(task)


_VARIANTS: tuple[Variant, ...] = (
    Variant("paused_count_self_pause", "paused_count also counts PAUSE -> PAUSE",
            PausedCountSelfPause),
    Variant("paused_count_forgets_stop", "leaving PAUSE by STOP or DROPPING is not counted",
            PausedCountForgetsStop),
    Variant("stream_count_counts_fill_history", "stream_count counts fill-history tasks too",
            StreamCountCountsFillHistory),
    Variant("register_without_commit", "register writes its record but never commits it",
            RegisterWithoutCommit),
    Variant("delete_without_commit", "removals are written but not committed (a crash "
            "brings the task back)", DeleteWithoutCommit),
    Variant("memory_before_write", "list and map change before the write that can fail",
            MemoryBeforeWrite),
    Variant("numeric_load_order", "load_all visits records in numeric, not key byte, order",
            NumericLoadOrder),
    Variant("waiting_fired_lifo", "attached waiting events fire newest first",
            WaitingFiredLifo),
    Variant("waiting_fired_early", "an attached event fires at the next status change, "
            "before its required status is reached", WaitingFiredEarly),
    Variant("release_below_zero", "release without an outstanding acquire still decrements",
            ReleaseBelowZero),
    Variant("dropping_kept_at_load", "load_all loads DROPPING records instead of removing them",
            DroppingKeptAtLoad),
    Variant("start_round_by_count", "a start round completes when results >= map size",
            StartRoundByCount),
    Variant("second_heartbeat_chain", "a re-election as leader starts a second heartbeat chain",
            SecondHeartbeatChain),
    Variant("acquire_dropping", "acquire refuses STOP but hands out DROPPING tasks",
            AcquireDropping),
)

VARIANTS: dict[str, Variant] = {v.name: v for v in _VARIANTS}
