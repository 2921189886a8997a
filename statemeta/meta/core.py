"""StreamMeta: the reference implementation of streamMeta.c, as a deterministic sans-IO core.

Theory of operation
-------------------
One meta per vnode (or snode) owns the task list (registration order after load order), the
task map (id -> entry), the counters, the start bookkeeping, the role and the heartbeat chain,
and persists every task in the table ``task.db`` of an injected store. The store, the clock
(timers included), the heartbeat transport, the task-expand hook and the start-complete
callback are injected, so a run is a pure function of the calls made on it and its clock.

Durability: every mutating operation that writes commits its own writes before it returns
(register, unregister, load's removals, the clearing of a stream task's fill-history id);
memory changes only after the commit succeeded. When a write or the commit fails, the store is
rolled back to its last commit, records that ``save_task`` had written since then are restored
in memory, and the store's error is raised: memory and the committed store agree. ``save_task``
is the one exception, as in the seed: it writes into the open transaction, ``commit`` makes it
durable and ``close`` throws it away. A write transaction is begun when a write needs one.

Counters are exact by construction: ``stream_count`` moves with the map, ``paused_count`` with
the lifecycle listener (entries into and exits from PAUSE), never with calls.

Reference counts: a mapped task holds 1 for the meta, 1 while its trigger timer holds it, and 1
per outstanding acquire (a ``TaskHandle``). Unregister drops the first two; a task removed while
still acquired is detached until its last release. Releasing more than was acquired raises.

Timers: the heartbeat chain (heartbeat.py), each task's trigger timer (re-armed every
``trigger_param`` ms until the task stops or pauses; its reference is held until unregister
or close) and task timers (``start_task_timer``: the downstream re-check and launch timers that
set ``timerActive``). Unregister of a task with an active task timer moves it to DROPPING and
defers the removal to the end of its last timer; close cancels every timer.

Operations raise MetaClosedError once the meta is closed; operations that need a task raise
UnknownTaskError for an id that is not mapped (unregister and report_launch ignore it).
With ``check_invariants=True`` every operation (and every timer callback) ends with
``statemeta.invariants.check_invariants`` (the explorer sets ``check_state`` to False: its
operations end with the trace invariants, and it checks each distinct state once itself).
"""

from __future__ import annotations

import enum
import functools
import itertools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

import attrs

from statemeta.codec import (
    NO_RELATED_TASK,
    SSTREAM_TASK_INCOMPATIBLE_VER,
    STREAM_TASK_KEY_LEN,
    HbMsg,
    StreamTask,
    TaskId,
    cached,
    decode_checkpoint_info,
    decode_task_record,
    encode_hb,
    encode_task,
    encode_task_key,
    latest_checkpoint_id,
)
from statemeta.errors import (
    DecodeError,
    IncompatibleVersionError,
    KeyLengthError,
    MetaClosedError,
    MisuseError,
    ReleaseError,
    UnknownTaskError,
)
from statemeta.lifecycle import (
    Outcome,
    StatusChange,
    TaskEvent,
    TaskLifecycle,
    TaskStatus,
    should_pause,
    should_stop,
)
from statemeta.meta.clock import Clock, TimerCallback, VirtualClock, WrappedClock
from statemeta.meta.entry import ExpandHook, TaskEntry, expand_task
from statemeta.meta.heartbeat import HeartbeatChain, HeartbeatTransport, build_hb_msg
from statemeta.meta.start_round import (
    LaunchResult,
    StartCompleteCallback,
    StartInfo,
    StartRound,
    StartRoundView,
    StartStep,
)
from statemeta.meta.view import DetachedView, HeartbeatView, MetaView, TaskView
from statemeta.roles import Role, RoleEvent, RoleMachine
from statemeta.semantics import Profile, Semantics, as_profile
from statemeta.store import LmdbStore, Store, Table

if TYPE_CHECKING:
    from statemeta.roles import RoleRow

SNODE_HANDLE = -2
"""The vg_id of an snode's meta, which is leader from the start."""
TASK_TABLE = "task.db"
CHECKPOINT_TABLE = "checkpoint.db"
CHECKPOINT_KEY_LEN = 4
CHECK_DOWNSTREAM_INTERVAL = 100
"""ms: the default delay of a task timer (the downstream re-check)."""

StoreFactory = Callable[[str], Store]


class DropResult(enum.Enum):
    """What unregister did."""

    REMOVED = "removed"
    """Removed from list, map and store (committed)."""
    DEFERRED = "deferred"
    """DROPPING now; removed when its last active task timer ends."""
    NOT_FOUND = "not_found"
    """No such task: nothing changed."""


@attrs.frozen
class TaskHandle:
    """One acquire of one registration of a task; give it back to ``release``."""

    id: TaskId
    incarnation: int


@attrs.frozen
class SkippedRecord:
    """A task.db record load_all could not use (left in the store)."""

    key_hex: str
    reason: str


@attrs.frozen
class LoadReport:
    """What load_all did with each record of task.db, in key byte order."""

    loaded: tuple[TaskId, ...]
    removed: tuple[TaskId, ...]
    """Persisted as DROPPING: deleted, and the deletion committed."""
    duplicates: tuple[TaskId, ...]
    """Already in the map: the in-memory task was kept."""
    undecodable: tuple[SkippedRecord, ...]
    """Did not decode: skipped, reported, never deleted."""
    cleared: tuple[TaskId, ...]
    """Stream tasks whose fill-history task was removed: their related id cleared, saved."""


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


P = ParamSpec("P")
R = TypeVar("R")


def operation(
    method: Callable[Concatenate[StreamMeta, P], R],
) -> Callable[Concatenate[StreamMeta, P], R]:
    """A meta operation: refused once closed; ends with the invariant check and the callbacks."""

    def run(self: StreamMeta, /, *args: P.args, **kwargs: P.kwargs) -> R:
        self._live(method.__name__)
        return self._run(functools.partial(method, self, *args, **kwargs))

    functools.update_wrapper(run, method)
    return run


@functools.lru_cache(maxsize=4096, typed=True)
def _task_id(stream_id: int, task_id: int) -> TaskId:
    """Cached (bounded; a TaskId is frozen): every operation on a task looks its id up, and a
    TaskId validates its fields when it is made."""
    return TaskId(stream_id, task_id)


class StreamMeta:
    """One vnode's or snode's stream-task meta (SStreamMeta). Not thread-safe: see facade.py."""

    lifecycle_class: type[TaskLifecycle] = TaskLifecycle
    """What each task's lifecycle is (a test may substitute a subclass)."""

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
    ) -> StreamMeta:
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
        try:
            tasks = store.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
            store.table(CHECKPOINT_TABLE, CHECKPOINT_KEY_LEN)
            _check_compatible(store, tasks, _codec(check_invariants))
        except BaseException:
            store.close()
            raise
        return cls(
            store,
            tasks,
            vg_id,
            stage,
            clock=clock if clock is not None else VirtualClock(),
            transport=transport,
            expand=expand,
            on_start_complete=on_start_complete,
            check_invariants=check_invariants,
            semantics=semantics,
        )

    def __init__(
        self,
        store: Store,
        tasks: Table,
        vg_id: int,
        stage: int,
        *,
        clock: Clock,
        transport: HeartbeatTransport | None,
        expand: ExpandHook,
        on_start_complete: StartCompleteCallback | None,
        check_invariants: bool,
        semantics: Semantics | str | Profile = Semantics.INTENDED,
    ) -> None:
        """Use ``StreamMeta.open``."""
        self._profile = as_profile(semantics)
        self._store = store
        self._tasks = tasks
        self._vg_id = vg_id
        self._stage = stage
        self._clock = clock
        self._transport = transport
        self._expand = expand
        self._on_start_complete = on_start_complete
        self._check = check_invariants
        self._codec = _codec(check_invariants)
        self.check_state = True
        """In check mode: an operation ends with the whole catalogue (True), or with the trace
        invariants only (False: the explorer checks each distinct state once, as
        docs/formal-checking.md argues). A timer callback always ends with the whole catalogue."""
        self._list: list[TaskId] = []
        self._map: dict[TaskId, TaskEntry] = {}
        self._stream_count = 0
        self._paused_count = 0
        self._detached: dict[int, TaskEntry] = {}
        self._removed: set[TaskId] = set()
        self._loaded = False
        self._incarnations = itertools.count(1)
        self._uncommitted: dict[TaskId, StreamTask] = {}
        self._start = StartInfo()
        self._send_before_close = False
        self._hb_sent = 0
        hb_clock = WrappedClock(clock, self._callback)
        self._hb = HeartbeatChain(hb_clock, self._is_leader, self._tick_send)
        self._roles = RoleMachine(Role.LEADER if vg_id == SNODE_HANDLE else Role.UNINIT)
        self._closed = False
        self._depth = 0
        self._callbacks: list[Callable[[], None]] = []
        self.defer_callbacks = False
        """Set by the facade: callbacks wait for ``take_callbacks`` instead of running."""
        self._trace_changes: list[StatusChange] = []
        self._trace_roles: list[RoleChange] = []
        self._trace_hbs: list[SentHeartbeat] = []
        self._trace_acquired: list[TaskStatus] = []
        if self._roles.role is Role.LEADER:
            self._hb.start()

    # -- registration ------------------------------------------------------------------------

    @operation
    def register(self, task: StreamTask, ver: int) -> bool:
        """streamMetaRegisterTask: False (nothing changed) if the id is registered already.

        Expands (a fill-history task at version 1), saves and commits; only then the list,
        the map and the counters change. A failure at any step changes nothing and raises.
        A stream task naming a fill-history task this meta removed is stored with the link
        cleared (spec/divergences.md).
        """
        tid = task.id
        if tid in self._map:
            return False
        if task.fill_history:
            ver = 1
        expanded = self._expand(task, ver)
        if expanded.id != tid or expanded.fill_history != task.fill_history:
            raise MisuseError(
                f"the expand hook changed the id or fill-history flag of task {tid}"
            )
        if not expanded.fill_history and expanded.h_task_id in self._removed:
            # its fill-history task was dropped here: the link is cleared, as unregister does
            expanded = attrs.evolve(expanded, h_task_id=NO_RELATED_TASK)

        def apply() -> None:
            self._add_entry(expanded, ver)
            self._removed.discard(tid)

        self._durably([self._record(expanded)], (), apply)
        return True

    @operation
    def unregister(self, stream_id: int, task_id: int) -> DropResult:
        """streamMetaUnregisterTask: DROPPING, then removed from list, map and store (committed).

        A fill-history task's stream task gets its related id cleared and saved in the same
        commit. With a task timer active the removal waits for the timer's end (DEFERRED).
        """
        entry = self._map.get(_task_id(stream_id, task_id))
        if entry is None:
            return DropResult.NOT_FOUND
        entry.lifecycle.handle(TaskEvent.DROPPING)
        if entry.timer_active > 0:
            entry.drop_pending = True
            return DropResult.DEFERRED
        self._remove(entry)
        return DropResult.REMOVED

    # -- references -------------------------------------------------------------------------

    @operation
    def acquire(self, stream_id: int, task_id: int) -> TaskHandle | None:
        """streamMetaAcquireTask: +1 reference, or None for a missing, stopped or dropping task."""
        entry = self._map.get(_task_id(stream_id, task_id))
        if entry is None or should_stop(entry.lifecycle.status):
            return None
        entry.refcount += 1
        entry.acquires += 1
        if self._check:
            self._trace_acquired.append(entry.lifecycle.status)
        return TaskHandle(entry.id, entry.incarnation)

    @operation
    def release(self, handle: TaskHandle) -> None:
        """streamMetaReleaseTask: -1 reference; ReleaseError if nothing is left to release."""
        entry = self._map.get(handle.id)
        if entry is None or entry.incarnation != handle.incarnation:
            entry = self._detached.get(handle.incarnation)
        if entry is None or entry.acquires == 0:
            refcount = 0 if entry is None else entry.refcount
            raise ReleaseError(
                f"release of task {handle.id} (registration {handle.incarnation}) with no "
                f"outstanding acquire: its refcount {refcount} would go below what the meta "
                f"holds (below zero once the task is dropped)"
            )
        entry.acquires -= 1
        entry.refcount -= 1
        if entry.refcount == 0:
            del self._detached[entry.incarnation]

    # -- task events ------------------------------------------------------------------------

    @operation
    def handle_event(self, stream_id: int, task_id: int, event: TaskEvent) -> Outcome:
        """streamTaskHandleEvent on a mapped task."""
        entry = self._entry(stream_id, task_id)
        outcome = entry.lifecycle.handle(event)
        if event is TaskEvent.CHECKPOINT_DONE and outcome is Outcome.APPLIED:
            entry.checkpointing_id = 0
            entry.checkpoint_trans_id = 0
        return outcome

    @operation
    def complete_event(self, stream_id: int, task_id: int, event: TaskEvent) -> Outcome:
        """The second phase of INIT / INIT_SCANHIST: the task becomes downstream-ready."""
        entry = self._entry(stream_id, task_id)
        outcome = entry.lifecycle.complete(event)
        if outcome is Outcome.APPLIED:
            entry.downstream_ready = True
        return outcome

    @operation
    def resume(self, stream_id: int, task_id: int) -> Outcome:
        """streamTaskResume: back to the status saved by PAUSE or HALT."""
        return self._entry(stream_id, task_id).lifecycle.resume()

    @operation
    def begin_checkpoint(
        self, stream_id: int, task_id: int, checkpoint_id: int, trans_id: int
    ) -> Outcome:
        """The checkpoint-source request: GEN_CHECKPOINT, recording the checkpoint in progress."""
        entry = self._entry(stream_id, task_id)
        outcome = entry.lifecycle.handle(TaskEvent.GEN_CHECKPOINT)
        if outcome is Outcome.APPLIED:
            entry.checkpointing_id = checkpoint_id
            entry.checkpoint_trans_id = trans_id
        return outcome

    @operation
    def report_downstream_update(self, stream_id: int, task_id: int, node_id: int) -> None:
        """Queue ``node_id`` for the next heartbeat's update nodes (pDownstreamUpdateList)."""
        self._entry(stream_id, task_id).update_nodes.append(node_id)

    @operation
    def start_task_timer(
        self, stream_id: int, task_id: int, delay_ms: int = CHECK_DOWNSTREAM_INTERVAL
    ) -> None:
        """Arm a task timer: timerActive + 1 now, - 1 when it fires ``delay_ms`` later."""
        entry = self._entry(stream_id, task_id)
        entry.timer_active += 1

        def end() -> None:
            entry.task_timers.remove(timer)
            entry.timer_active -= 1
            if entry.drop_pending and entry.timer_active == 0 and self._mapped(entry):
                entry.drop_pending = False  # a failed removal stays DROPPING: unregister retries
                self._remove(entry)

        timer = self._clock.call_later(delay_ms, self._callback(end))
        entry.task_timers.append(timer)

    # -- persistence ------------------------------------------------------------------------

    @operation
    def save_task(self, task: StreamTask) -> None:
        """streamMetaSaveTask: write a mapped task's new record into the open transaction.

        Not durable until ``commit`` (or the commit of any later writing operation); close
        throws it away, and a failed commit restores the committed record in memory too.
        """
        entry = self._entry(task.stream_id, task.task_id)
        if task.fill_history != entry.task.fill_history:
            raise MisuseError(f"save_task cannot change the fill-history flag of task {entry.id}")
        self._ensure_transaction()
        self._tasks.upsert(*self._record(task))
        self._uncommitted.setdefault(entry.id, entry.task)
        entry.task = task

    @operation
    def commit(self) -> None:
        """streamMetaCommit: make the open transaction durable."""
        self._durably((), (), lambda: None)

    @operation
    def load_all(self) -> LoadReport:
        """streamMetaLoadAllTasks: add every stored task that is not mapped yet.

        Records are visited in key byte order. DROPPING records are deleted (committed) and a
        stream task pointing at a deleted fill-history task gets its related id cleared (saved
        in the same commit). A mapped id keeps its in-memory task. An undecodable record is
        skipped and reported. Loaded tasks are UNINIT, not downstream-ready. If the commit or
        the expand hook fails, nothing is loaded and the error is raised.
        """
        loaded: list[StreamTask] = []
        loaded_ids: set[TaskId] = set()
        removed: list[TaskId] = []
        duplicates: list[TaskId] = []
        undecodable: list[SkippedRecord] = []
        deletes: list[bytes] = []
        for key, value in self._tasks.items():
            try:
                task = self._codec.decode_record(key, value)
            except (DecodeError, IncompatibleVersionError, KeyLengthError) as e:
                undecodable.append(SkippedRecord(key.hex(), str(e)))
                continue
            if task.id in self._map:
                duplicates.append(task.id)
            elif task.task_status == TaskStatus.DROPPING:
                removed.append(task.id)
                deletes.append(key)
            else:
                loaded.append(self._expand(task, task.checkpoint_ver + 1))
                loaded_ids.add(task.id)
        dropped = set(removed)
        cleared: list[StreamTask] = []
        for task in itertools.chain((e.task for e in self._map.values()), loaded):
            if not task.fill_history and task.h_task_id in dropped:
                cleared.append(attrs.evolve(task, h_task_id=NO_RELATED_TASK))
        cleared_by_id = {t.id: t for t in cleared}
        upserts = [self._record(t) for t in cleared]

        def apply() -> None:
            for task in loaded:
                self._add_entry(cleared_by_id.get(task.id, task), task.checkpoint_ver + 1)
            for tid, task in cleared_by_id.items():
                if tid in self._map:
                    self._map[tid].task = task
            self._removed.update(dropped)
            self._loaded = True

        if deletes or upserts:
            self._durably(upserts, deletes, apply)
        else:
            apply()
        return LoadReport(
            tuple(t.id for t in loaded),
            tuple(removed),
            tuple(duplicates),
            tuple(undecodable),
            tuple(cleared_by_id),
        )

    @operation
    def latest_checkpoint_id(self) -> int:
        """streamMetaGetLatestCheckpointId: the largest stored checkpointId (0 if none).

        Reads each record's checkpoint-info prefix; records that do not decode are skipped.
        """
        return latest_checkpoint_id(value for _key, value in self._tasks.items())

    def stored_tasks(self) -> tuple[tuple[bytes, StreamTask | None], ...]:
        """Every record of task.db as the open transaction sees it (None: does not decode)."""
        self._live("stored_tasks")
        rows: list[tuple[bytes, StreamTask | None]] = []
        for key, value in self._tasks.items():
            try:
                rows.append((key, cached.decode(value)))
            except (DecodeError, IncompatibleVersionError):
                rows.append((key, None))
        return tuple(rows)

    # -- start ------------------------------------------------------------------------------

    @operation
    def start_all(self) -> tuple[tuple[TaskId, StartStep], ...]:
        """streamMetaStartAllTasks: open a round over the listed tasks and start each one.

        A round still open is superseded (its callback never runs). A round over zero tasks,
        or one whose every member has a result already, completes before this returns.
        """
        info = self._start
        if info.round is not None:
            info.superseded += 1
        now = self._clock.now_ms()
        info.round = StartRound(tuple(self._list), now)
        steps = tuple((tid, self._start_task(self._map[tid], now)) for tid in info.round.members)
        self._complete_round_if_done()
        return steps

    @operation
    def start_one(self, stream_id: int, task_id: int) -> StartStep:
        """streamMetaStartOneTask: start one mapped task (it joins the open round, if any)."""
        entry = self._entry(stream_id, task_id)
        if self._start.round is not None:
            self._start.round.add_member(entry.id)
        step = self._start_task(entry, self._clock.now_ms())
        self._complete_round_if_done()
        return step

    @operation
    def report_launch(self, stream_id: int, task_id: int, ready: bool) -> bool:
        """streamMetaAddTaskLaunchResult: False (ignored) outside a round, for a non-member or
        for a member that has a result already (the first one is kept)."""
        accepted = self._record_launch(_task_id(stream_id, task_id), ready, self._clock.now_ms())
        self._complete_round_if_done()
        return accepted

    def all_tasks_ready(self) -> bool:
        """streamMetaAllTasksReady: every listed task is downstream-ready."""
        self._live("all_tasks_ready")
        return all(self._map[tid].downstream_ready for tid in self._list)

    # -- stop and close ---------------------------------------------------------------------

    @operation
    def stop_all(self) -> tuple[TaskId, ...]:
        """streamMetaStopAllTasks: STOP every listed task that is not stopping or dropping.

        First, if the meta was leader and became follower, the before-close heartbeat: tasks in
        CK have their checkpoint marked failed and one heartbeat is sent at once, whatever the
        role or the tick count. Returns the ids stopped, in list order.
        """
        if not self._list:
            return ()
        if self._send_before_close:
            for tid in self._list:
                entry = self._map[tid]
                if entry.lifecycle.status is TaskStatus.CK:
                    entry.failed_checkpoint_id = entry.checkpointing_id
            self._send_heartbeat(before_close=True)
            self._send_before_close = False
        stopped: list[TaskId] = []
        for tid in self._list:
            lifecycle = self._map[tid].lifecycle
            if not should_stop(lifecycle.status):
                lifecycle.handle(TaskEvent.STOP)
                stopped.append(tid)
        return tuple(stopped)

    @operation
    def notify_close(self) -> int:
        """streamMetaNotifyClose: STOP every mapped task (list order).

        Returns how many tasks still have an active task timer (the seed waits for them; a live
        caller may advance its clock, and ``close`` cancels them).
        """
        for tid in self._list:
            self._map[tid].lifecycle.handle(TaskEvent.STOP)
        return sum(1 for e in self._map.values() if e.timer_active > 0)

    def close(self) -> None:
        """streamMetaClose: cancel every timer, abort the open transaction, close the store.

        Idempotent. Whatever an operation reported done is durable; save_task writes not
        committed are lost.
        """
        if self._closed:
            return
        self._closed = True
        self._hb.stop()
        for entry in itertools.chain(self._map.values(), self._detached.values()):
            self._cancel_timers(entry)
        self._apply_role(RoleEvent.CLOSE)
        self._list.clear()
        self._map.clear()
        self._detached.clear()
        self._stream_count = 0
        self._paused_count = 0
        self._start.round = None
        self._store.close()

    # -- role and heartbeat -----------------------------------------------------------------

    @operation
    def update_stage_role(self, stage: int, is_leader: bool) -> Role:
        """streamMetaUpdateStageRole: new stage; LEADER starts the (one) heartbeat chain,
        LEADER -> FOLLOWER stops it and arms the before-close heartbeat."""
        self._stage = stage
        row = self._apply_role(RoleEvent.BECOME_LEADER if is_leader else RoleEvent.BECOME_FOLLOWER)
        if row.send_before_close:
            self._send_before_close = True
        if row.stop_heartbeat:
            self._hb.stop()
        if row.start_heartbeat:
            self._hb.start()
        return self._roles.role

    # -- views ------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def path(self) -> str:
        return self._store.path

    @property
    def store(self) -> Store:
        """The injected store (a FaultyStore in fault tests)."""
        return self._store

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def profile(self) -> Profile:
        """The semantics this meta follows (``profile.semantics``: its name, if it has one)."""
        return self._profile

    @property
    def vg_id(self) -> int:
        return self._vg_id

    @property
    def stage(self) -> int:
        self._live("stage")
        return self._stage

    @property
    def role(self) -> Role:
        self._live("role")
        return self._roles.role

    @property
    def num_tasks(self) -> int:
        self._live("num_tasks")
        return len(self._list)

    @property
    def stream_count(self) -> int:
        self._live("stream_count")
        return self._stream_count

    @property
    def paused_count(self) -> int:
        self._live("paused_count")
        return self._paused_count

    def task_ids(self) -> tuple[TaskId, ...]:
        """The task list, in order."""
        self._live("task_ids")
        return tuple(self._list)

    def task(self, stream_id: int, task_id: int) -> StreamTask:
        """The in-memory record of a mapped task."""
        self._live("task")
        return self._entry(stream_id, task_id).task

    def status(self, stream_id: int, task_id: int) -> TaskStatus:
        self._live("status")
        return self._entry(stream_id, task_id).lifecycle.status

    def refcount(self, stream_id: int, task_id: int) -> int:
        self._live("refcount")
        return self._entry(stream_id, task_id).refcount

    def start_round(self) -> StartRoundView:
        self._live("start_round")
        return self._start.view()

    def view(self) -> MetaView:
        """Everything observable, as one frozen value."""
        self._live("view")
        tasks = tuple(_task_view(self._map[tid]) for tid in self._list)
        detached = tuple(
            DetachedView(e.id, e.incarnation, e.refcount, e.acquires)
            for _inc, e in sorted(self._detached.items())
        )
        return MetaView(
            vg_id=self._vg_id,
            stage=self._stage,
            role=self._roles.role,
            ids=tuple(self._list),
            map_ids=frozenset(self._map),
            tasks=tasks,
            stream_count=self._stream_count,
            paused_count=self._paused_count,
            start_round=self._start.view(),
            heartbeat=HeartbeatView(
                self._hb.armed, self._hb.tick_counter, self._hb_sent, self._send_before_close
            ),
            detached=detached,
            removed=frozenset(self._removed),
            loaded=self._loaded,
        )

    def take_trace(self) -> CheckTrace:
        """What happened since the last call (recorded only with check_invariants=True)."""
        trace = CheckTrace(
            tuple(self._trace_changes),
            tuple(self._trace_roles),
            tuple(self._trace_hbs),
            tuple(self._trace_acquired),
        )
        self._trace_changes.clear()
        self._trace_roles.clear()
        self._trace_hbs.clear()
        self._trace_acquired.clear()
        return trace

    def take_callbacks(self) -> list[Callable[[], None]]:
        """The start-complete callbacks owed (the facade runs them outside its lock)."""
        callbacks, self._callbacks = self._callbacks, []
        return callbacks

    # -- internals --------------------------------------------------------------------------

    def _live(self, what: str) -> None:
        if self._closed:
            raise MetaClosedError(f"{what} on the closed meta of vgId {self._vg_id}")

    def _run(self, body: Callable[[], R], *, timer: bool = False) -> R:
        """Runs an operation or a timer callback; the outermost one checks and calls back."""
        self._depth += 1
        try:
            result = body()
        except BaseException as error:
            self._depth -= 1
            if self._depth == 0:
                self._end_check(timer)  # an InvariantViolation here names what the error broke
            raise error
        self._depth -= 1
        if self._depth == 0:
            self._end_check(timer)
            if not self.defer_callbacks:
                for callback in self.take_callbacks():
                    callback()
        return result

    def _callback(self, body: TimerCallback) -> TimerCallback:
        """A timer callback that runs as an operation (nothing once the meta is closed)."""

        def fire() -> None:
            if not self._closed:
                self._run(body, timer=True)

        return fire

    def _end_check(self, timer: bool) -> None:
        """Check mode: the invariant check an outermost operation or timer callback ends with."""
        if not self._check or self._closed:
            return
        from statemeta.invariants import check_invariants, check_trace

        if self.check_state or timer:
            check_invariants(self)
        elif self._trace_changes or self._trace_roles or self._trace_hbs or self._trace_acquired:
            check_trace(self.take_trace())

    def _entry(self, stream_id: int, task_id: int) -> TaskEntry:
        entry = self._map.get(_task_id(stream_id, task_id))
        if entry is None:
            raise UnknownTaskError(stream_id, task_id)
        return entry

    def _mapped(self, entry: TaskEntry) -> bool:
        return self._map.get(entry.id) is entry

    def _is_leader(self) -> bool:
        return self._roles.role is Role.LEADER

    def _on_status_change(self, _lifecycle: TaskLifecycle, change: StatusChange) -> None:
        """The lifecycle listener: keeps paused_count exact."""
        if change.new is TaskStatus.PAUSE and change.old is not TaskStatus.PAUSE:
            self._paused_count += 1
        elif change.old is TaskStatus.PAUSE and change.new is not TaskStatus.PAUSE:
            self._paused_count -= 1
        if self._check:
            self._trace_changes.append(change)

    def _apply_role(self, event: RoleEvent) -> RoleRow:
        old = self._roles.role
        row = self._roles.apply(event)
        if self._check:
            self._trace_roles.append(RoleChange(old, event, self._roles.role))
        return row

    def _add_entry(self, task: StreamTask, ver: int) -> None:
        """streamTaskInit's runtime part: refcount 1, UNINIT, the trigger timer's reference."""
        entry = TaskEntry(
            id=task.id,
            task=task,
            lifecycle=self.lifecycle_class(
                listener=self._on_status_change, semantics=self._profile
            ),
            incarnation=next(self._incarnations),
            next_process_ver=ver,
        )
        if task.trigger_param != 0 and not task.fill_history:
            entry.trigger_held = True
            entry.refcount += 1
            self._arm_trigger(entry)
        self._list.append(entry.id)
        self._map[entry.id] = entry
        if not task.fill_history:
            self._stream_count += 1

    def _arm_trigger(self, entry: TaskEntry) -> None:
        """streamSetupScheduleTrigger / streamSchedByTimer: re-armed until the task stops or
        pauses; the reference stays held until unregister or close."""

        def fire() -> None:
            entry.trigger_timer = None
            status = entry.lifecycle.status
            if self._mapped(entry) and not (should_stop(status) or should_pause(status)):
                self._arm_trigger(entry)

        entry.trigger_timer = self._clock.call_later(
            max(1, entry.task.trigger_param), self._callback(fire)
        )

    def _cancel_timers(self, entry: TaskEntry) -> None:
        if entry.trigger_timer is not None:
            entry.trigger_timer.cancel()
            entry.trigger_timer = None
        for timer in entry.task_timers:
            timer.cancel()
        entry.task_timers.clear()
        entry.timer_active = 0

    def _remove(self, entry: TaskEntry) -> None:
        """The second half of unregister: delete (and clear the stream task's id), commit,
        then drop it from list, map and counters and release the meta's references."""
        tid = entry.id
        upserts: list[tuple[bytes, bytes]] = []
        stream_entry = self._map.get(entry.task.stream_task_id) if entry.task.fill_history else None
        cleared: StreamTask | None = None
        if stream_entry is not None and stream_entry.task.h_task_id == tid:
            cleared = attrs.evolve(stream_entry.task, h_task_id=NO_RELATED_TASK)
            upserts.append(self._record(cleared))

        def apply() -> None:
            if stream_entry is not None and cleared is not None:
                stream_entry.task = cleared
            del self._map[tid]
            self._list.remove(tid)
            if not entry.task.fill_history:
                self._stream_count -= 1
            if entry.trigger_held:
                entry.trigger_held = False
                entry.refcount -= 1
            self._cancel_timers(entry)
            entry.drop_pending = False
            entry.refcount -= 1
            if entry.refcount > 0:
                self._detached[entry.incarnation] = entry
            self._removed.add(tid)
            self._complete_round_if_done()

        self._durably(upserts, (self._codec.task_key(tid.stream_id, tid.task_id),), apply)

    def _record(self, task: StreamTask) -> tuple[bytes, bytes]:
        """The task's key and value in task.db."""
        return self._codec.task_key(task.stream_id, task.task_id), self._codec.encode(task)

    def _ensure_transaction(self) -> None:
        if not self._store.in_transaction:
            self._store.begin()

    def _durably(
        self,
        upserts: Sequence[tuple[bytes, bytes]],
        deletes: Sequence[bytes],
        apply: Callable[[], None],
    ) -> None:
        """Write and commit; only then ``apply`` the memory changes. On failure: roll back."""
        try:
            self._ensure_transaction()
            for key in deletes:
                self._tasks.delete(key)
            for key, value in upserts:
                self._tasks.upsert(key, value)
            self._store.commit()
        except BaseException:
            self._rollback()
            raise
        self._uncommitted.clear()
        apply()

    def _rollback(self) -> None:
        """Back to the last commit, in the store and in the records save_task changed."""
        if self._store.in_transaction:
            self._store.abort()
        for tid, task in self._uncommitted.items():
            entry = self._map.get(tid)
            if entry is not None:
                entry.task = task
        self._uncommitted.clear()

    def _start_task(self, entry: TaskEntry, now: int) -> StartStep:
        status = entry.lifecycle.status
        if should_stop(status):
            self._record_launch(entry.id, False, now)
            return StartStep.FAILED
        if entry.task.fill_history:
            return StartStep.SKIPPED
        if entry.downstream_ready:
            self._record_launch(entry.id, True, now)
            return StartStep.READY
        if entry.lifecycle.handle(TaskEvent.INIT) is Outcome.REJECTED:
            self._record_launch(entry.id, False, now)
            if entry.task.h_task_id != NO_RELATED_TASK:
                self._record_launch(entry.task.h_task_id, False, now)
            return StartStep.FAILED
        return StartStep.STARTED

    def _record_launch(self, tid: TaskId, ready: bool, now: int) -> bool:
        started = self._start.round
        if started is None:
            return False
        return started.record(LaunchResult(tid, ready, started.started_ms, now))

    def _complete_round_if_done(self) -> None:
        info = self._start
        started = info.round
        if started is None or not self._round_done(started):
            return
        result = started.result(self._clock.now_ms())
        info.round = None
        info.completed += 1
        info.last = result
        callback = self._on_start_complete
        if callback is not None:
            self._callbacks.append(lambda: callback(result))

    def _round_done(self, started: StartRound) -> bool:
        """A round completes when every listed task still mapped has a result."""
        return started.complete(self._map)

    def _tick_send(self) -> None:
        self._send_heartbeat(before_close=False)

    def _send_heartbeat(self, *, before_close: bool) -> bool:
        """metaHeartbeatToMnodeImpl: build, encode and hand one message to the transport."""
        built = build_hb_msg(self._vg_id, self._stage, (self._map[t] for t in self._list))
        if built is None:
            return False
        msg, ep_set = built
        payload = encode_hb(msg)
        self._hb_sent += 1
        if self._check:
            expected = tuple(t for t in self._list if not self._map[t].task.fill_history)
            self._trace_hbs.append(
                SentHeartbeat(msg, payload, self._roles.role, before_close, expected)
            )
        if self._transport is not None:
            self._transport(ep_set, payload)
        return True


@attrs.frozen
class _Codec:
    """The codec functions a meta calls to persist and load its records."""

    task_key: Callable[[int, int], bytes]
    encode: Callable[[StreamTask], bytes]
    decode_record: Callable[[bytes, bytes], StreamTask]
    checkpoint_info: Callable[[bytes], tuple[int, int, int]]


_PLAIN_CODEC = _Codec(encode_task_key, encode_task, decode_task_record, decode_checkpoint_info)
"""A meta's codec outside check mode: the plain functions."""
_CHECK_CODEC = _Codec(cached.task_key, cached.encode, cached.decode_record, cached.checkpoint_info)
"""The codec in check mode: memoised (statemeta/codec/cached.py says why that is safe)."""


def _codec(check_invariants: bool) -> _Codec:
    return _CHECK_CODEC if check_invariants else _PLAIN_CODEC


def _check_compatible(store: Store, tasks: Table, codec: _Codec) -> None:
    """streamMetaCheckBackendCompatible, over every record: version <= 1 cannot be opened."""
    for _key, value in tasks.items():
        try:
            msg_ver, _checkpoint_id, _checkpoint_ver = codec.checkpoint_info(value)
        except DecodeError:
            continue  # load_all reports it
        if msg_ver <= SSTREAM_TASK_INCOMPATIBLE_VER:
            raise IncompatibleVersionError(msg_ver, path=store.path)


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

