"""MetaRegistry: the meta's state and the primitives every operation uses (core.py has the
operations themselves).

The registry owns the ``MetaState`` (plain data), the store it persists into and the outbox of
effects; its primitives keep the state's parts in step: adding an entry (list, map, counters,
its trigger timer), applying a role row, hearing a lifecycle's status changes (paused_count),
writing durably (write, commit, then change memory; roll back on failure), and recording the
trace check mode reads. ``copy`` copies the state and nothing that refers back to the meta.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Self

import attrs

from statemeta.codec import NO_RELATED_TASK, STREAM_TASK_KEY_LEN, StreamTask, TaskId
from statemeta.errors import StoreFault, UnknownTaskError
from statemeta.lifecycle import StatusChange, TaskLifecycle, TaskStatus
from statemeta.meta import heartbeat
from statemeta.meta.effects import Effect, StartComplete
from statemeta.meta.entry import ExpandHook, TaskEntry
from statemeta.meta.persist import Codec, codec_for
from statemeta.meta.start_round import LaunchResult, StartRound
from statemeta.meta.state import MetaState, TimerKind
from statemeta.roles import Role, RoleEvent, RoleRow, role_row
from statemeta.semantics import Profile, Semantics, Switch, as_profile
from statemeta.store.protocol import Store, Table
from statemeta.tables import DIVERGENCES
from statemeta.views import CheckTrace, RoleChange, SentHeartbeat

SNODE_HANDLE = -2
"""The vg_id of an snode's meta, which is leader from the start."""
TASK_TABLE = "task.db"
CHECKPOINT_TABLE = "checkpoint.db"
CHECKPOINT_KEY_LEN = 4
CHECK_DOWNSTREAM_INTERVAL = 100
"""ms: the default delay of a task timer (the downstream re-check)."""
META_SWITCHES = frozenset(
    r.switch for r in DIVERGENCES.rows if r.scope == "meta" and r.switch is not None
)
"""The switches of the meta itself (spec/divergences.md, "The meta")."""



@attrs.define(slots=True)
class _Recorder:
    """What happened since the last invariant check (recorded only in check mode)."""

    changes: list[StatusChange] = attrs.field(factory=list)
    roles: list[RoleChange] = attrs.field(factory=list)
    heartbeats: list[SentHeartbeat] = attrs.field(factory=list)
    acquired: list[TaskStatus] = attrs.field(factory=list)

    def __bool__(self) -> bool:
        return bool(self.changes or self.roles or self.heartbeats or self.acquired)

    def take(self) -> CheckTrace:
        trace = CheckTrace(
            tuple(self.changes), tuple(self.roles), tuple(self.heartbeats), tuple(self.acquired)
        )
        self.changes.clear()
        self.roles.clear()
        self.heartbeats.clear()
        self.acquired.clear()
        return trace


@functools.lru_cache(maxsize=4096, typed=True)
def task_id(stream_id: int, task_id: int) -> TaskId:
    """Cached (bounded; a TaskId is frozen): every operation on a task looks its id up, and a
    TaskId validates its fields when it is made."""
    return TaskId(stream_id, task_id)


class MetaRegistry:
    """The meta's state, its store and outbox, and the primitives over them."""

    def __init__(
        self,
        store: Store,
        vg_id: int,
        stage: int,
        *,
        expand: ExpandHook,
        check: bool,
        lifecycle_class: type[TaskLifecycle] = TaskLifecycle,
        now: int = 0,
        semantics: Semantics | str | Profile = Semantics.INTENDED,
    ) -> None:
        self.profile = as_profile(semantics)
        """The semantics the meta follows (statemeta.semantics); each task's lifecycle too."""
        self.keeps_invariants = not self.profile.seed_switches & META_SWITCHES
        """False when a meta switch takes the seed's side: the seed breaks invariants of the
        catalogue on purpose (list-map, paused-count, refcount, store-mirror...), so check mode
        checks only the trace invariants, which no switch breaks; the seed's violations of the
        others are what the explorer and the harness report as the seed's findings."""
        self.by_count = self.profile.seed(Switch.ROUND_COMPLETES_BY_COUNT)  # M7
        """A start round completes when its results number the map's tasks, and start_all
        over an empty list opens no round (the seed)."""
        self.by_kind = self.profile.seed(Switch.READY_STEP_BY_KIND)  # M14
        """The downstream-ready step completes the event of the task's kind and records its
        ready result whatever that completion did (doProcessDownstreamReadyRsp)."""
        self.paused_by_calls = self.profile.seed(Switch.PAUSED_COUNT_DRIFTS)  # M1
        """paused_count moves with the calls streamTaskPause, streamTaskResume and unregister
        make (``_paused_call``), as in the seed, instead of with the status changes."""
        self.kept_open = self.profile.seed(Switch.TRANSACTION_KEPT_OPEN)  # M15
        """A transaction is open from open on and each commit begins the next, as tdb's is in
        the seed (streamMetaOpen, streamMetaCommit); a failed commit rolls nothing back."""
        self.store = store
        self.tasks = self._task_table(store)
        self.expand = expand
        self.check = check
        """Check mode: every operation ends with invariant checks over the trace."""
        self.tracing = check
        """Record the trace (status and role changes, heartbeats, acquires): in check mode,
        and when a coverage count asks for it (``StreamMeta.record_trace``)."""
        self.codec: Codec = codec_for(check)
        self.lifecycle_class = lifecycle_class
        self.now = now
        """ms: the current time, set by the edge before each call."""
        role = Role.LEADER if vg_id == SNODE_HANDLE else Role.UNINIT
        self.state = MetaState(vg_id, stage, role)
        self.outbox: list[Effect] = []
        """Effects queued for the edge, in order."""
        self._trace = _Recorder()
        if role is Role.LEADER or self.profile.seed(Switch.HEARTBEAT_ENDS_AT_TICK):  # M12
            heartbeat.arm(self.state.heartbeat, self.state.schedule, now)
        if self.kept_open:
            self._ensure_transaction()

    def _task_table(self, store: Store) -> Table:
        return store.table(TASK_TABLE, STREAM_TASK_KEY_LEN)

    def copy(self, store: Store) -> Self:
        """A core in the same state over ``store`` (a copy of this core's store), with an
        empty outbox and trace. The configuration (codec, expand hook, lifecycle class) is
        shared; a subclass with more state copies it too."""
        new = object.__new__(type(self))  # copy.copy, without its generic protocol
        new.__dict__.update(self.__dict__)
        new.store = store
        new.tasks = new._task_table(store)
        new.state = self.state.copy()
        new.outbox = []
        new._trace = _Recorder()
        return new

    def _arm_trigger(self, entry: TaskEntry) -> None:
        """streamSetupScheduleTrigger: the next trigger, ``trigger_param`` ms from now."""
        due = self.now + max(1, entry.task.trigger_param)
        self.state.schedule.arm(due, TimerKind.TRIGGER, entry.id, entry.incarnation)

    def _cancel_timers(self, entry: TaskEntry) -> None:
        schedule = self.state.schedule
        for kind in (TimerKind.TRIGGER, TimerKind.TASK, TimerKind.LAUNCH):
            for timer in schedule.of_task(entry, kind):
                schedule.cancel(timer.seq)
        entry.timer_active = 0
        entry.launch = None

    def take_trace(self) -> CheckTrace:
        """What happened since the last call (recorded only in check mode)."""
        return self._trace.take()

    @property
    def traced(self) -> bool:
        """Something was recorded since the last ``take_trace``."""
        return bool(self._trace)

    def entry(self, stream_id: int, task_id_: int) -> TaskEntry:
        """The mapped entry of a task (UnknownTaskError if none)."""
        entry = self.state.entries.get(task_id(stream_id, task_id_))
        if entry is None:
            raise UnknownTaskError(stream_id, task_id_)
        return entry

    def _on_status_change(self, _lifecycle: TaskLifecycle, change: StatusChange) -> None:
        """Every lifecycle change the core causes: keeps paused_count exact (but in the seed)."""
        if not self.paused_by_calls:
            if change.new is TaskStatus.PAUSE and change.old is not TaskStatus.PAUSE:
                self.state.paused_count += 1
            elif change.old is TaskStatus.PAUSE and change.new is not TaskStatus.PAUSE:
                self.state.paused_count -= 1
        if self.tracing:
            self._trace.changes.append(change)

    def _paused_call(self, delta: int) -> None:
        """M1 seed: a call moves paused_count by ``delta`` whatever the task's status did
        (streamTaskPause +1 on every PAUSE; resume from PAUSE and unregister in PAUSE -1)."""
        if self.paused_by_calls:
            self.state.paused_count += delta

    def _apply_role(self, event: RoleEvent) -> RoleRow:
        state = self.state
        old = state.role
        row = role_row(old, event)
        state.role = row.to_role
        if self.tracing:
            self._trace.roles.append(RoleChange(old, event, row.to_role))
        return row

    def listed(self) -> Iterator[TaskEntry]:
        """The entry of each listed id, in list order. An id listed but not mapped, which only
        the seed's failed register leaves (M2), is skipped, as the seed's map lookup skips it."""
        entries = self.state.entries
        for tid in self.state.ids:
            entry = entries.get(tid)
            if entry is not None:
                yield entry

    def _add_entry(self, task: StreamTask, ver: int) -> None:
        """streamTaskInit's runtime part: refcount 1, UNINIT, the trigger timer's reference."""
        state = self.state
        entry = TaskEntry(
            id=task.id,
            task=task,
            lifecycle=self.lifecycle_class(semantics=self.profile),
            incarnation=state.next_incarnation,
            next_process_ver=ver,
        )
        state.next_incarnation += 1
        if task.trigger_param != 0 and not task.fill_history:
            entry.trigger_held = True
            entry.refcount += 1
            self._arm_trigger(entry)
        state.ids.append(entry.id)
        state.entries[entry.id] = entry
        if not task.fill_history:
            state.stream_count += 1

    def _let_go(self, entry: TaskEntry) -> None:
        """The meta lets go of a task leaving its map: the trigger timer's and its own
        references go, its timers are cancelled; still acquired, it is detached until its last
        release."""
        if entry.trigger_held:
            entry.trigger_held = False
            entry.refcount -= 1
        self._cancel_timers(entry)
        entry.drop_pending = False
        entry.refcount -= 1
        if entry.refcount > 0:
            self.state.detached[entry.incarnation] = entry

    def _ensure_transaction(self) -> None:
        if not self.store.in_transaction:
            self.store.begin()

    def _durably(
        self,
        upserts: Sequence[tuple[bytes, bytes]],
        deletes: Sequence[bytes],
        apply: Callable[[], None],
    ) -> None:
        """Write and commit; only then ``apply`` the memory changes. On failure: roll back
        (the seed, M15, rolls nothing back: the writes stay in its open transaction)."""
        try:
            self._write(upserts, deletes)
            self._commit()
        except BaseException:
            if not self.kept_open:
                self._rollback()
            raise
        apply()

    def _commit(self) -> None:
        """Commit the open transaction: save_task's changes are durable. The seed (M15)
        begins the next at once; a begin that fails there leaves the commit durable, raises,
        and makes the handle stale: no commit succeeds after it until close, while writes
        still land in the transaction."""
        state = self.state
        if self.kept_open and state.transaction_stale:
            raise StoreFault(
                "commit on a stale transaction handle: a begin failed at the tail of an "
                "earlier commit, and the seed commits nothing more until close (M15)"
            )
        self.store.commit()
        state.uncommitted.clear()
        if not self.kept_open:
            return
        try:
            self.store.begin()
        except StoreFault:
            state.transaction_stale = True
            self.store.begin()  # where the stale handle's writes land: never committed
            raise

    def _write(
        self, upserts: Sequence[tuple[bytes, bytes]], deletes: Sequence[bytes]
    ) -> None:
        """The writes, deletes first, into the open transaction (begun if none is open)."""
        self._ensure_transaction()
        for key in deletes:
            self.tasks.delete(key)
        for key, value in upserts:
            self.tasks.upsert(key, value)

    def _remove_durably(
        self,
        upserts: Sequence[tuple[bytes, bytes]],
        deletes: Sequence[bytes],
        apply: Callable[[], None],
    ) -> None:
        """A removal's writes (unregister, load's recycling): ``_durably``, or in the seed
        (M3) written into the open transaction and not committed: close throws them away,
        the next commit makes them durable. The seed only logs a failed write: ignored."""
        if not self.profile.seed(Switch.REMOVAL_NOT_COMMITTED):  # M3
            self._durably(upserts, deletes, apply)
            return
        for write in (*(functools.partial(self.tasks.delete, k) for k in deletes),
                      *(functools.partial(self.tasks.upsert, k, v) for k, v in upserts)):
            with contextlib.suppress(StoreFault):
                self._ensure_transaction()
                write()
        apply()

    # -- removal and the start round's bookkeeping --------------------------------------

    def _remove(self, entry: TaskEntry) -> None:
        """The second half of unregister: delete (and clear the stream task's id), commit,
        then drop it from list, map and counters and release the meta's references."""
        state = self.state
        tid = entry.id
        upserts: list[tuple[bytes, bytes]] = []
        stream_entry = (
            state.entries.get(entry.task.stream_task_id) if entry.task.fill_history else None
        )
        cleared: StreamTask | None = None
        if stream_entry is not None and (
            stream_entry.task.h_task_id == tid
            or self.profile.seed(Switch.UNREGISTER_CLEARS_ANY_LINK)  # M9
        ):
            cleared = attrs.evolve(stream_entry.task, h_task_id=NO_RELATED_TASK)
            upserts.append(self.codec.record(cleared))

        def apply() -> None:
            if stream_entry is not None and cleared is not None:
                stream_entry.task = cleared
            del state.entries[tid]
            state.ids.remove(tid)
            if not entry.task.fill_history:
                state.stream_count -= 1
            self._let_go(entry)
            state.removed.add(tid)
            self._complete_round_if_done()

        self._remove_durably(
            upserts, (self.codec.task_key(tid.stream_id, tid.task_id),), apply
        )

    def _end_task_timer(self, entry: TaskEntry) -> None:
        entry.timer_active -= 1
        if entry.drop_pending and entry.timer_active == 0:
            entry.drop_pending = False  # a failed removal stays DROPPING: unregister retries
            self._remove(entry)

    def _record_launch(self, tid: TaskId, ready: bool) -> bool:
        started = self.state.start.round
        if started is None:
            return False
        result = LaunchResult(tid, ready, started.started_ms, self.now)
        if not self.by_count:
            return started.record(result)
        accepted = started.record_seed(result)  # M7: the seed's two sets, counted as each
        if started.counted_out(self.state.entries):  # result comes (AddTaskLaunchResult)
            self._complete_round(started)
        return accepted

    def _complete_round_if_done(self) -> None:
        """Run as each operation that can change a round's verdict ends (a result recorded,
        a member gone): the round completes when every member still mapped has a result. The
        seed (M7) counts as each result is recorded instead (``_record_launch``)."""
        started = self.state.start.round
        if self.by_count or started is None or not self._round_done(started):
            return
        self._complete_round(started)

    def _round_done(self, started: StartRound) -> bool:
        """The reference's verdict on an open round (a method: a broken variant changes it)."""
        return started.complete(self.state.entries)

    def _complete_round(self, started: StartRound) -> None:
        info = self.state.start
        result = started.result(self.now)
        info.round = None
        info.completed += 1
        info.last = result
        self.outbox.append(StartComplete(result))

    def _rollback(self) -> None:
        """Back to the last commit, in the store and in the records save_task changed."""
        if self.store.in_transaction:
            self.store.abort()
        state = self.state
        for tid, task in state.uncommitted.items():
            entry = state.entries.get(tid)
            if entry is not None:
                entry.task = task
        state.uncommitted.clear()
