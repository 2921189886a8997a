"""The thread-safe facade: a StreamMeta behind a writer-preferring reader-writer lock.

As in streamMeta.c, views (the list, the counters, a snapshot) take the read lock and every
operation that changes the meta takes the write lock; acquire and release take it too, since
Python has no atomic counter to bump under a read lock. Timer callbacks (the heartbeat chain,
trigger and task timers) run under the write lock as well, whichever thread fires them.
Start-complete callbacks run after the lock is released, in the thread whose operation
completed the round, so a callback may call back into the facade.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from statemeta.arguments import checked_api
from statemeta.codec import StreamTask, TaskId
from statemeta.lifecycle import Outcome, TaskEvent, TaskStatus
from statemeta.meta.clock import Clock, RealClock, TimerCallback, WrappedClock
from statemeta.meta.core import DropResult, TaskHandle
from statemeta.meta.persist import LoadReport
from statemeta.meta.rwlock import RWLock
from statemeta.meta.start_round import StartStep
from statemeta.meta.stream_meta import StreamMeta
from statemeta.roles import Role
from statemeta.views import MetaView, StartRoundView

P = ParamSpec("P")
R = TypeVar("R")


def _documented(cls: type[ThreadSafeStreamMeta]) -> type[ThreadSafeStreamMeta]:
    """Give each undocumented member the docstring of the StreamMeta member it locks around."""
    for name, member in vars(cls).items():
        if name.startswith("_") or (member.__doc__ or "").strip():
            continue
        inner = getattr(StreamMeta, name, None)
        doc = f"``StreamMeta.{name}``, under the facade's lock: {(inner.__doc__ or '').strip()}"
        member.__doc__ = doc
    return cls


@_documented
@checked_api
class ThreadSafeStreamMeta:
    """A StreamMeta any number of threads may share."""

    meta_class: type[StreamMeta] = StreamMeta
    """What the wrapped meta is (a broken variant substitutes a subclass)."""

    def __init__(self, clock: Clock) -> None:
        """Use ``ThreadSafeStreamMeta.open``."""
        self._lock = RWLock()
        self._local = threading.local()
        self._clock = clock
        self._meta: StreamMeta | None = None

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        vg_id: int,
        stage: int = -1,
        *,
        clock: Clock | None = None,
        **options: Any,
    ) -> ThreadSafeStreamMeta:
        """``StreamMeta.open`` with the same options; the clock defaults to a RealClock."""
        facade = cls(clock if clock is not None else RealClock())
        locked_clock = WrappedClock(facade._clock, facade._locked)
        meta = cls.meta_class.open(path, vg_id, stage, clock=locked_clock, **options)
        meta.defer_callbacks = True
        facade._meta = meta
        return facade

    @property
    def core(self) -> StreamMeta:
        """The wrapped meta (for tests: not thread-safe on its own)."""
        assert self._meta is not None
        return self._meta

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- locking ---------------------------------------------------------------------------

    def locked(self, body: Callable[[], R]) -> R:
        """``body()`` under the write lock, as one operation (its callbacks run after): for a
        caller whose step spans several calls, e.g. a harness adapter reading then saving."""
        return self._write(body)

    def _write(self, body: Callable[[], R]) -> R:
        if getattr(self._local, "writing", False):  # a timer fired inside this thread's write
            return body()
        with self._lock.write():
            self._local.writing = True
            try:
                result = body()
            finally:
                self._local.writing = False
                callbacks = self.core.take_callbacks()
        for callback in callbacks:
            callback()
        return result

    def _locked(self, callback: TimerCallback) -> TimerCallback:
        """A timer callback that runs under the write lock, whichever thread fires it."""
        return lambda: self._write(callback)

    def _read(self, body: Callable[[], R]) -> R:
        if getattr(self._local, "writing", False):
            return body()
        with self._lock.read():
            return body()

    def advance(self, ms: int) -> int:
        """Advance a VirtualClock under the write lock (its timers fire in this thread)."""
        advance: Callable[[int], int] = getattr(self._clock, "advance")  # noqa: B009
        return self._write(lambda: advance(ms))

    # -- operations (write lock) -------------------------------------------------------------

    def register(self, task: StreamTask, ver: int) -> bool:
        return self._write(lambda: self.core.register(task, ver))

    def unregister(self, stream_id: int, task_id: int) -> DropResult:
        return self._write(lambda: self.core.unregister(stream_id, task_id))

    def acquire(self, stream_id: int, task_id: int) -> TaskHandle | None:
        return self._write(lambda: self.core.acquire(stream_id, task_id))

    def release(self, handle: TaskHandle) -> None:
        self._write(lambda: self.core.release(handle))

    def handle_event(self, stream_id: int, task_id: int, event: TaskEvent) -> Outcome:
        return self._write(lambda: self.core.handle_event(stream_id, task_id, event))

    def complete_event(self, stream_id: int, task_id: int, event: TaskEvent) -> Outcome:
        return self._write(lambda: self.core.complete_event(stream_id, task_id, event))

    def resume(self, stream_id: int, task_id: int) -> Outcome:
        return self._write(lambda: self.core.resume(stream_id, task_id))

    def begin_checkpoint(
        self, stream_id: int, task_id: int, checkpoint_id: int, trans_id: int
    ) -> Outcome:
        return self._write(
            lambda: self.core.begin_checkpoint(stream_id, task_id, checkpoint_id, trans_id)
        )

    def report_downstream_update(self, stream_id: int, task_id: int, node_id: int) -> None:
        self._write(lambda: self.core.report_downstream_update(stream_id, task_id, node_id))

    def start_task_timer(self, stream_id: int, task_id: int, delay_ms: int = 100) -> None:
        self._write(lambda: self.core.start_task_timer(stream_id, task_id, delay_ms))

    def save_task(self, task: StreamTask) -> None:
        self._write(lambda: self.core.save_task(task))

    def commit(self) -> None:
        self._write(self.core.commit)

    def load_all(self) -> LoadReport:
        return self._write(self.core.load_all)

    def latest_checkpoint_id(self) -> int:
        return self._write(self.core.latest_checkpoint_id)

    def start_all(self) -> tuple[tuple[TaskId, StartStep], ...]:
        return self._write(self.core.start_all)

    def start_one(self, stream_id: int, task_id: int) -> StartStep:
        return self._write(lambda: self.core.start_one(stream_id, task_id))

    def report_launch(self, stream_id: int, task_id: int, ready: bool) -> bool:
        return self._write(lambda: self.core.report_launch(stream_id, task_id, ready))

    def stop_all(self) -> tuple[TaskId, ...]:
        return self._write(self.core.stop_all)

    def notify_close(self) -> int:
        return self._write(self.core.notify_close)

    def update_stage_role(self, stage: int, is_leader: bool) -> Role:
        return self._write(lambda: self.core.update_stage_role(stage, is_leader))

    def clear(self) -> None:
        self._write(self.core.clear)

    def reset_start_info(self) -> None:
        self._write(self.core.reset_start_info)

    def close(self) -> None:
        self._write(self.core.close)

    # -- views (read lock) -------------------------------------------------------------------

    def all_tasks_ready(self) -> bool:
        return self._read(self.core.all_tasks_ready)

    def task_ids(self) -> tuple[TaskId, ...]:
        return self._read(self.core.task_ids)

    def task(self, stream_id: int, task_id: int) -> StreamTask:
        return self._read(lambda: self.core.task(stream_id, task_id))

    def status(self, stream_id: int, task_id: int) -> TaskStatus:
        return self._read(lambda: self.core.status(stream_id, task_id))

    def refcount(self, stream_id: int, task_id: int) -> int:
        return self._read(lambda: self.core.refcount(stream_id, task_id))

    def start_round(self) -> StartRoundView:
        return self._read(self.core.start_round)

    def view(self) -> MetaView:
        return self._read(self.core.view)

    @property
    def num_tasks(self) -> int:
        return self._read(lambda: self.core.num_tasks)

    @property
    def stream_count(self) -> int:
        return self._read(lambda: self.core.stream_count)

    @property
    def paused_count(self) -> int:
        return self._read(lambda: self.core.paused_count)

    @property
    def role(self) -> Role:
        return self._read(lambda: self.core.role)

    @property
    def stage(self) -> int:
        return self._read(lambda: self.core.stage)

    @property
    def closed(self) -> bool:
        return self.core.closed
