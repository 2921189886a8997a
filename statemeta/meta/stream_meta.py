"""StreamMeta: the public face of the meta, the edge between the sans-IO core and the world.

A ``StreamMeta`` wraps a ``MetaCore`` (core.py) with what the core leaves out: the store is
opened here (the LMDB default is chosen here, not in the core), the clock is read here and
given to the core as ``now``, and after each operation the core's effects are carried out:

- timers: the clock holds one timer per row of the core's schedule; after each operation the
  edge arms the rows that are new (in arming order) and cancels the ones that are gone, and a
  clock timer firing calls ``core.fire(seq)``. With a ``VirtualClock`` the timers fire inside
  ``advance``; with a ``RealClock`` on timer threads (use the thread-safe facade);
- heartbeats go to the transport; a completed start round to the start-complete callback, after
  the operation (the facade runs them outside its lock: ``defer_callbacks``).

So a run is a pure function of the calls made on it and its clock. Operations raise
MetaClosedError once the meta is closed. With ``check_invariants=True`` every operation (and
every timer) ends with ``statemeta.invariants.check_invariants`` (the explorer sets
``check_state`` to False: its operations end with the trace invariants, and it checks each
distinct state once itself). A meta taking the seed's side of a meta switch (semantics
``seed``) breaks invariants on purpose: its check mode checks the trace invariants only
(``MetaRegistry.keeps_invariants``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import ParamSpec, Self, TypeVar

from statemeta.arguments import checked_api
from statemeta.codec import STREAM_TASK_KEY_LEN, StreamTask, TaskId
from statemeta.errors import MetaClosedError
from statemeta.invariants import check_invariants, check_trace
from statemeta.lifecycle import Outcome, TaskEvent, TaskLifecycle, TaskStatus
from statemeta.meta.clock import Clock, Timer, VirtualClock
from statemeta.meta.core import (
    CHECK_DOWNSTREAM_INTERVAL,
    CHECKPOINT_KEY_LEN,
    CHECKPOINT_TABLE,
    TASK_TABLE,
    DropResult,
    MetaCore,
    TaskHandle,
)
from statemeta.meta.effects import SendHeartbeat
from statemeta.meta.entry import ExpandHook, TaskEntry, expand_task
from statemeta.meta.heartbeat import HeartbeatTransport
from statemeta.meta.persist import LoadReport, check_compatible, codec_for
from statemeta.meta.start_round import StartCompleteCallback, StartStep
from statemeta.meta.state import MetaState
from statemeta.roles import Role
from statemeta.semantics import Profile, Semantics, as_profile
from statemeta.store import LmdbStore, Store
from statemeta.views import (
    CheckTrace,
    DetachedView,
    HeartbeatView,
    MetaView,
    StartRoundView,
    TaskView,
)

StoreFactory = Callable[[str], Store]
P = ParamSpec("P")
R = TypeVar("R")


@checked_api
class StreamMeta:
    """One vnode's or snode's stream-task meta (SStreamMeta). Not thread-safe: see facade.py."""

    lifecycle_class: type[TaskLifecycle] = TaskLifecycle
    """What each task's lifecycle is (a test may substitute a subclass)."""
    core_class: type[MetaCore] = MetaCore
    """What the core is (a broken variant substitutes a subclass)."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        vg_id: int,
        stage: int = -1,
        *,
        store_factory: StoreFactory | None = None,
        durable: bool = True,
        clock: Clock | None = None,
        transport: HeartbeatTransport | None = None,
        expand: ExpandHook = expand_task,
        on_start_complete: StartCompleteCallback | None = None,
        check_invariants: bool = False,
        semantics: Semantics | str | Profile = Semantics.INTENDED,
    ) -> Self:
        """streamMetaOpen: open or create the store under ``path`` and check its records.

        ``semantics``: ``"intended"`` (the default) or ``"seed"`` (statemeta.semantics): each
        task's lifecycle follows it (the meta's own switches are spec/divergences.md's).

        The store comes from ``store_factory(path)`` (default: ``LmdbStore.open`` with
        ``durable``; wrap it in a FaultyStore to inject faults). A record of version <= 1 makes
        open fail with IncompatibleVersionError naming the store's path; nothing is deleted.
        The role is LEADER (and the heartbeat chain runs) for vg_id -2, UNINIT otherwise.
        """
        factory = store_factory or functools.partial(LmdbStore.open, durable=durable)
        store = factory(os.fspath(path))
        clock = clock if clock is not None else VirtualClock()
        try:
            tasks = store.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
            store.table(CHECKPOINT_TABLE, CHECKPOINT_KEY_LEN)
            check_compatible(store, tasks, codec_for(check_invariants), as_profile(semantics))
            core = cls.core_class(
                store,
                vg_id,
                stage,
                expand=expand,
                check=check_invariants,
                lifecycle_class=cls.lifecycle_class,
                now=clock.now_ms(),
                semantics=semantics,
            )
        except BaseException:
            store.close()
            raise
        return cls(core, clock=clock, transport=transport, on_start_complete=on_start_complete)

    def __init__(
        self,
        core: MetaCore,
        *,
        clock: Clock,
        transport: HeartbeatTransport | None = None,
        on_start_complete: StartCompleteCallback | None = None,
    ) -> None:
        """Use ``StreamMeta.open`` (or ``fork``)."""
        self._core = core
        self._clock = clock
        self._transport = transport
        self._on_start_complete = on_start_complete
        self._timers: dict[int, Timer] = {}
        """The clock's timer for each row of the core's schedule, by seq."""
        self._callbacks: list[Callable[[], None]] = []
        self.check_state = True
        """In check mode: an operation ends with the whole catalogue (True), or with the trace
        invariants only (False: the explorer checks each distinct state once, as
        docs/formal-checking.md argues). A timer always ends with the whole catalogue."""
        self.defer_callbacks = False
        """Set by the facade: callbacks wait for ``take_callbacks`` instead of running."""
        self._settle_timers()

    def fork(
        self,
        store: Store,
        clock: Clock,
        *,
        transport: HeartbeatTransport | None = None,
        on_start_complete: StartCompleteCallback | None = None,
    ) -> Self:
        """A meta in this meta's state over ``store`` (a copy of this meta's store, e.g. by
        ``FaultyStore.copy``) and ``clock`` (at this meta's time): its state is copied (plain
        data), its timers armed anew on ``clock``. The two are independent from then on."""
        new = type(self)(
            self._core.copy(store),
            clock=clock,
            transport=transport,
            on_start_complete=on_start_complete,
        )
        new.check_state = self.check_state
        new.defer_callbacks = self.defer_callbacks
        return new

    # -- operations -------------------------------------------------------------------------

    def register(self, task: StreamTask, ver: int) -> bool:
        """streamMetaRegisterTask: add a task, saved and committed at ``ver``; False (nothing
        changed) if its id is registered already (MetaCore.register)."""
        return self._op("register", self._core.register, task, ver)

    def unregister(self, stream_id: int, task_id: int) -> DropResult:
        """streamMetaUnregisterTask: drop a task from list, map and store, or mark it to be
        dropped when its task timer ends (MetaCore.unregister)."""
        return self._op("unregister", self._core.unregister, stream_id, task_id)

    def acquire(self, stream_id: int, task_id: int) -> TaskHandle | None:
        """streamMetaAcquireTask: +1 reference, or None for a missing, stopped or dropping task."""
        return self._op("acquire", self._core.acquire, stream_id, task_id)

    def release(self, handle: TaskHandle) -> None:
        """streamMetaReleaseTask: -1 reference; ReleaseError if nothing is left to release."""
        self._op("release", self._core.release, handle)

    def handle_event(self, stream_id: int, task_id: int, event: TaskEvent) -> Outcome:
        """streamTaskHandleEvent on a mapped task."""
        return self._op("handle_event", self._core.handle_event, stream_id, task_id, event)

    def complete_event(self, stream_id: int, task_id: int, event: TaskEvent) -> Outcome:
        """The second phase of INIT / INIT_SCANHIST: the task becomes downstream-ready."""
        return self._op("complete_event", self._core.complete_event, stream_id, task_id, event)

    def resume(self, stream_id: int, task_id: int) -> Outcome:
        """streamTaskResume: back to the status saved by PAUSE or HALT."""
        return self._op("resume", self._core.resume, stream_id, task_id)

    def begin_checkpoint(
        self, stream_id: int, task_id: int, checkpoint_id: int, trans_id: int
    ) -> Outcome:
        """The checkpoint-source request: GEN_CHECKPOINT, recording the checkpoint in progress."""
        return self._op(
            "begin_checkpoint", self._core.begin_checkpoint,
            stream_id, task_id, checkpoint_id, trans_id,
        )

    def report_downstream_update(self, stream_id: int, task_id: int, node_id: int) -> None:
        """Queue ``node_id`` for the next heartbeat's update nodes (pDownstreamUpdateList)."""
        self._op(
            "report_downstream_update", self._core.report_downstream_update,
            stream_id, task_id, node_id,
        )

    def start_task_timer(
        self, stream_id: int, task_id: int, delay_ms: int = CHECK_DOWNSTREAM_INTERVAL
    ) -> None:
        """Arm a task timer: timerActive + 1 now, - 1 when it fires ``delay_ms`` later."""
        self._op("start_task_timer", self._core.start_task_timer, stream_id, task_id, delay_ms)

    def save_task(self, task: StreamTask) -> None:
        """streamMetaSaveTask (MetaCore.save_task): into the open transaction, not durable."""
        self._op("save_task", self._core.save_task, task)

    def commit(self) -> None:
        """streamMetaCommit: make the open transaction durable."""
        self._op("commit", self._core.commit)

    def load_all(self) -> LoadReport:
        """streamMetaLoadAllTasks: read every stored task into memory after a restart; what is
        skipped and why is in the report (MetaCore.load_all)."""
        return self._op("load_all", self._core.load_all)

    def latest_checkpoint_id(self) -> int:
        """streamMetaGetLatestCheckpointId: the largest stored checkpointId (0 if none)."""
        return self._op("latest_checkpoint_id", self._core.latest_checkpoint_id)

    def start_all(self) -> tuple[tuple[TaskId, StartStep], ...]:
        """streamMetaStartAllTasks: open a start round and send INIT to every listed task; each
        task's first step is returned (MetaCore.start_all)."""
        return self._op("start_all", self._core.start_all)

    def start_one(self, stream_id: int, task_id: int) -> StartStep:
        """streamMetaStartOneTask: start one mapped task (it joins the open round, if any)."""
        return self._op("start_one", self._core.start_one, stream_id, task_id)

    def report_launch(self, stream_id: int, task_id: int, ready: bool) -> bool:
        """streamMetaAddTaskLaunchResult: record whether a task of the open start round came up
        ready; True once the round is complete (MetaCore.report_launch)."""
        return self._op("report_launch", self._core.report_launch, stream_id, task_id, ready)

    def stop_all(self) -> tuple[TaskId, ...]:
        """streamMetaStopAllTasks: send STOP to every listed task; the ids stopped are returned
        (MetaCore.stop_all)."""
        return self._op("stop_all", self._core.stop_all)

    def notify_close(self) -> int:
        """streamMetaNotifyClose: STOP every listed task and end the heartbeat chain (the meta
        is closing until an election as leader); returns how many still have an active task
        timer, which the seed waits for (MetaCore.notify_close)."""
        return self._op("notify_close", self._core.notify_close)

    def update_stage_role(self, stage: int, is_leader: bool) -> Role:
        """streamMetaUpdateStageRole: take the mnode's stage and role; a new leader starts the
        heartbeat chain, a follower stops it (MetaCore.update_stage_role)."""
        return self._op("update_stage_role", self._core.update_stage_role, stage, is_leader)

    def clear(self) -> None:
        """streamMetaClear (MetaCore.clear): every task leaves memory; role, stage, heartbeat
        and the open transaction stay, so load_all and start_all restart the tasks."""
        self._op("clear", self._core.clear)

    def reset_start_info(self) -> None:
        """streamMetaResetStartInfo: drop the open start round, uncompleted (no callback)."""
        self._op("reset_start_info", self._core.reset_start_info)

    def close(self) -> None:
        """streamMetaClose: cancel every timer, abort the open transaction, close the store.

        Idempotent. Whatever an operation reported done is durable; save_task writes not
        committed are lost.
        """
        if self._core.state.closed:
            return
        self._core.close()
        self._settle_timers()

    # -- views ------------------------------------------------------------------------------

    @property
    def state(self) -> MetaState:
        """The core's whole state, plain data (state.py): read it, never change it. The
        explorer's key and the tests read the meta through it."""
        return self._core.state

    @property
    def closed(self) -> bool:
        """True once ``close`` ran: every operation and view then raises MetaClosedError."""
        return self._core.state.closed

    @property
    def path(self) -> str:
        """The store's directory (what ``open`` was given)."""
        return self._core.store.path

    @property
    def store(self) -> Store:
        """The injected store (a FaultyStore in fault tests)."""
        return self._core.store

    @property
    def clock(self) -> Clock:
        """The clock the meta reads and arms its timers on."""
        return self._clock

    @property
    def profile(self) -> Profile:
        """The semantics this meta follows (``profile.semantics``: its name, if it has one)."""
        return self._core.profile

    @property
    def vg_id(self) -> int:
        """The vnode's vgroup id (-2: the snode, whose meta leads from the start)."""
        return self._core.state.vg_id

    @property
    def stage(self) -> int:
        """The stage the mnode last gave (``update_stage_role``); -1 before any."""
        self._live("stage")
        return self._core.state.stage

    @property
    def role(self) -> Role:
        """The node role (LEADER runs the heartbeat chain; UNINIT until a stage and role arrive)."""
        self._live("role")
        return self._core.state.role

    @property
    def num_tasks(self) -> int:
        """Tasks in the task list (streamMetaGetNumOfTasks), fill-history tasks included."""
        self._live("num_tasks")
        return len(self._core.state.ids)

    @property
    def stream_count(self) -> int:
        """Tasks that are not fill-history tasks (numOfStreamTasks), the count the
        heartbeat reports."""
        self._live("stream_count")
        return self._core.state.stream_count

    @property
    def paused_count(self) -> int:
        """Tasks paused (numOfPausedTasks: +1 on PAUSE, -1 on resume or drop of a
        paused task)."""
        self._live("paused_count")
        return self._core.state.paused_count

    def task_ids(self) -> tuple[TaskId, ...]:
        """The task list, in order."""
        self._live("task_ids")
        return tuple(self._core.state.ids)

    def task(self, stream_id: int, task_id: int) -> StreamTask:
        """The in-memory record of a mapped task."""
        self._live("task")
        return self._core.entry(stream_id, task_id).task

    def status(self, stream_id: int, task_id: int) -> TaskStatus:
        """The task's lifecycle status (TaskStatus)."""
        self._live("status")
        return self._core.entry(stream_id, task_id).lifecycle.status

    def refcount(self, stream_id: int, task_id: int) -> int:
        """The task's references: the meta's own one plus each acquire not yet released."""
        self._live("refcount")
        return self._core.entry(stream_id, task_id).refcount

    def all_tasks_ready(self) -> bool:
        """streamMetaAllTasksReady: every listed task is downstream-ready."""
        self._live("all_tasks_ready")
        return self._core.all_tasks_ready()

    def stored_tasks(self) -> tuple[tuple[bytes, StreamTask | None], ...]:
        """Every record of task.db as the open transaction sees it (None: does not decode)."""
        self._live("stored_tasks")
        return self._core.stored_tasks()

    def start_round(self) -> StartRoundView:
        """The open start round (start_all's bookkeeping), as a frozen view."""
        self._live("start_round")
        return self._core.state.start.view()

    def view(self) -> MetaView:
        """Everything observable, as one frozen value."""
        self._live("view")
        return view_of(self._core.state)

    def take_trace(self) -> CheckTrace:
        """What happened since the last call (recorded with check_invariants=True, or once
        ``record_trace`` is set)."""
        return self._core.take_trace()

    @property
    def record_trace(self) -> bool:
        """Whether the trace is recorded (check mode records it; a coverage count without the
        checks sets this and takes the trace itself after each operation)."""
        return self._core.tracing

    @record_trace.setter
    def record_trace(self, on: bool) -> None:
        self._core.tracing = on or self._core.check

    def take_callbacks(self) -> list[Callable[[], None]]:
        """The start-complete callbacks owed (the facade runs them outside its lock)."""
        callbacks, self._callbacks = self._callbacks, []
        return callbacks

    # -- the edge ---------------------------------------------------------------------------

    def _live(self, what: str) -> None:
        if self._core.state.closed:
            raise MetaClosedError(f"{what} on the closed meta of vgId {self._core.state.vg_id}")

    def _op(self, what: str, method: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Runs one core operation at the clock's time, then carries out its effects."""
        self._live(what)
        self._core.now = self._clock.now_ms()
        return self._run(functools.partial(method, *args, **kwargs), timer=False)

    def _fire(self, seq: int) -> None:
        """The clock's timer for schedule row ``seq`` fired."""
        self._timers.pop(seq, None)
        if self._core.state.closed:
            return
        self._core.now = self._clock.now_ms()
        self._run(functools.partial(self._core.fire, seq), timer=True)

    def _run(self, body: Callable[[], R], *, timer: bool) -> R:
        """``body``, then its effects (also when it failed), then the check and callbacks."""
        try:
            result = body()
        except BaseException:
            self._settle(timer)  # an InvariantViolation here names what the error broke
            raise
        self._settle(timer)
        if not self.defer_callbacks:
            for callback in self.take_callbacks():
                callback()
        return result

    def _settle(self, timer: bool) -> None:
        """Carry out the core's effects: timers, then heartbeats and callbacks; then check."""
        core = self._core
        try:
            self._settle_timers()
            effects, core.outbox = core.outbox, []
            for effect in effects:
                if isinstance(effect, SendHeartbeat):
                    if self._transport is not None:
                        self._transport(effect.ep_set, effect.payload)
                elif self._on_start_complete is not None:
                    self._callbacks.append(
                        functools.partial(self._on_start_complete, effect.result)
                    )
        finally:
            self._end_check(timer)

    def _settle_timers(self) -> None:
        """Keep the clock's timers in step with the core's schedule."""
        armed = self._core.state.schedule.armed
        timers = self._timers
        if timers.keys() == armed.keys():
            return
        for seq in [s for s in timers if s not in armed]:
            timers.pop(seq).cancel()
        now = self._clock.now_ms()
        for seq, row in armed.items():  # in arming order: equal due times fire in that order
            if seq not in timers:
                timers[seq] = self._clock.call_later(
                    max(0, row.due - now), functools.partial(self._fire, seq)
                )

    def _end_check(self, timer: bool) -> None:
        """Check mode: the invariant check an operation or timer ends with."""
        core = self._core
        if not core.check or core.state.closed:
            return
        if (self.check_state or timer) and core.keeps_invariants:
            check_invariants(self)
        elif core.traced:
            check_trace(self.take_trace())


def view_of(state: MetaState) -> MetaView:
    """Everything observable about a meta's state, as one frozen value."""
    entries = state.entries
    hb = state.heartbeat
    return MetaView(
        vg_id=state.vg_id,
        stage=state.stage,
        role=state.role,
        ids=tuple(state.ids),
        map_ids=frozenset(entries),
        # one view per mapped task, in list order (the seed's failed register, M2, can leave
        # an id listed twice, or listed and not mapped)
        tasks=tuple(_task_view(entries[tid]) for tid in dict.fromkeys(state.ids) if tid in entries),
        stream_count=state.stream_count,
        paused_count=state.paused_count,
        start_round=state.start.view(),
        heartbeat=HeartbeatView(
            hb.timer is not None, hb.tick_counter, state.hb_sent, state.send_before_close
        ),
        detached=tuple(
            DetachedView(e.id, e.incarnation, e.refcount, e.acquires)
            for _inc, e in sorted(state.detached.items())
        ),
        removed=frozenset(state.removed),
        loaded=state.loaded,
        closing=state.closing,
    )


def _task_view(entry: TaskEntry) -> TaskView:
    lifecycle = entry.lifecycle
    return TaskView(
        id=entry.id,
        task=entry.task,
        status=lifecycle.status,
        saved=lifecycle.saved,
        active=lifecycle.active,
        waiting=lifecycle.waiting,
        refcount=entry.refcount,
        acquires=entry.acquires,
        trigger_held=entry.trigger_held,
        downstream_ready=entry.downstream_ready,
        timer_active=entry.timer_active,
        drop_pending=entry.drop_pending,
        next_process_ver=entry.next_process_ver,
        checkpointing_id=entry.checkpointing_id,
        failed_checkpoint_id=entry.failed_checkpoint_id,
    )
