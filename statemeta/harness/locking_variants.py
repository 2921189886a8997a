"""Thread-safe facades that each drop one piece of locking: the proof that the concurrent check
has teeth.

Each is a ``ThreadSafeStreamMeta`` subclass with one realistic locking bug, selected by name:
``FacadeAdapter(variant=NAME)``, ``python -m statemeta.serve --concurrent --variant NAME``.
The window the bug opens is widened by a short sleep (``WINDOW_S``), as a real race is widened
by a context switch; without it the races would hardly ever show in a short run. They reach into
the meta's internals on purpose: a bug lives where the code is.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import attrs

from statemeta.codec import StreamTask, TaskId
from statemeta.lifecycle import should_stop
from statemeta.meta.core import MetaCore, TaskHandle
from statemeta.meta.entry import TaskEntry
from statemeta.meta.facade import ThreadSafeStreamMeta
from statemeta.meta.stream_meta import StreamMeta

__all__ = ["LOCKING_VARIANTS", "WINDOW_S", "LockingVariant"]

WINDOW_S = 0.002
"""How long each broken facade sleeps inside the window its missing lock leaves open."""


class _TwoHoldsCore(MetaCore):
    """Register in two steps: list the id (if not mapped), then map it trusting the first."""

    def list_id(self, task: StreamTask) -> bool:
        if task.id in self.state.entries:
            return False
        self.state.ids.append(task.id)
        return True

    def map_listed(self, task: StreamTask, ver: int) -> bool:
        expanded = self.expand(task, 1 if task.fill_history else ver)
        if task.id in self.state.ids:  # a clear in between empties the list
            self.state.ids.remove(task.id)  # _add_entry lists it again, in its place
        self._durably([self.codec.record(expanded)], (), lambda: self._add_entry(expanded, ver))
        return True


class _TwoHoldsMeta(StreamMeta):
    core_class = _TwoHoldsCore

    def list_id(self, task: StreamTask) -> bool:
        return self._op("register", cast(_TwoHoldsCore, self._core).list_id, task)

    def map_listed(self, task: StreamTask, ver: int) -> bool:
        return self._op("register", cast(_TwoHoldsCore, self._core).map_listed, task, ver)


class RegisterTwoHolds(ThreadSafeStreamMeta):
    """Register checks the map and lists the id under one write hold, then maps it under a
    second: two registers of one id both pass the check, both map it, both return true, and
    the id is listed twice."""

    meta_class = _TwoHoldsMeta

    def register(self, task: StreamTask, ver: int) -> bool:
        meta = cast(_TwoHoldsMeta, self.core)
        if not self._write(lambda: meta.list_id(task)):
            return False
        time.sleep(WINDOW_S)
        return self._write(lambda: meta.map_listed(task, ver))


class AcquireStatusUnlocked(ThreadSafeStreamMeta):
    """Acquire looks the task up and reads its status outside the lock, then takes the lock
    only to add the reference: a task unregistered in between gets a reference on its freed
    entry, and the handle's release then finds nothing to release."""

    def acquire(self, stream_id: int, task_id: int) -> TaskHandle | None:
        entry = self.core.state.entries.get(TaskId(stream_id, task_id))  # no lock
        if entry is None or should_stop(entry.lifecycle.status):
            return None
        time.sleep(WINDOW_S)
        found: TaskEntry = entry

        def take() -> TaskHandle:
            found.refcount += 1
            found.acquires += 1
            return TaskHandle(found.id, found.incarnation)

        return self._write(take)


class _TornListCore(MetaCore):
    """The heartbeat is built from ``torn`` (ids read without the lock) while it is set."""

    torn: list[TaskId] | None = None

    def listed(self) -> Iterator[TaskEntry]:
        if self.torn is None:
            yield from super().listed()
            return
        for tid in self.torn:
            entry = self.state.entries.get(tid)
            if entry is not None:
                yield entry


class _TornListMeta(StreamMeta):
    core_class = _TornListCore

    def build_from(self, torn: list[TaskId] | None) -> None:
        cast(_TornListCore, self._core).torn = torn


class HeartbeatListUnlocked(ThreadSafeStreamMeta):
    """The heartbeat builder walks the task list without the read lock (a timer's advance
    reads it element by element before taking the write lock): an unregister in the middle
    shifts the list under the walk, so a task registered all along is missing from the
    heartbeat, or one is reported twice."""

    meta_class = _TornListMeta

    def advance(self, ms: int) -> int:
        meta = cast(_TornListMeta, self.core)
        ids = meta.state.ids
        torn: list[TaskId] = []
        index = 0
        while True:
            try:
                torn.append(ids[index])
            except IndexError:
                break
            index += 1
            time.sleep(WINDOW_S)

        def body() -> int:
            meta.build_from(torn)
            try:
                return super(HeartbeatListUnlocked, self).advance(ms)
            finally:
                meta.build_from(None)

        return self._write(body)


@attrs.frozen
class LockingVariant:
    name: str
    facade_class: type[ThreadSafeStreamMeta]
    doc: str


def _variant(name: str, cls: type[ThreadSafeStreamMeta]) -> tuple[str, LockingVariant]:
    doc: Any = cls.__doc__
    return name, LockingVariant(name, cls, " ".join(str(doc).split()))


LOCKING_VARIANTS: dict[str, LockingVariant] = dict([
    _variant("register_two_holds", RegisterTwoHolds),
    _variant("acquire_status_unlocked", AcquireStatusUnlocked),
    _variant("heartbeat_list_unlocked", HeartbeatListUnlocked),
])
"""Every locking variant, by name."""
