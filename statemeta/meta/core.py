"""MetaCore: the reference implementation of streamMeta.c, as a sans-IO core over plain data.

Theory of operation
-------------------
One meta per vnode (or snode) owns the task list (registration order after load order), the
task map (id -> entry), the counters, the start bookkeeping, the role and the heartbeat chain,
and persists every task in the table ``task.db`` of an injected store. All of it is one
``MetaState`` (state.py): records, ids, counters, lifecycles, and the timers as a schedule of
rows. The core reads no clock (the edge sets ``now`` before each call), arms no real timer (it
adds rows to its schedule; the edge's clock calls ``fire(seq)``) and calls no transport or
callback (it queues ``effects`` in ``outbox``). Copying a core is copying its state (``copy``).
The public face is ``StreamMeta`` (stream_meta.py), which carries the effects out. Starting
tasks, the downstream-ready step and the fill-history launch are in starting.py, the
primitives every operation shares in registry.py.

Durability: every mutating operation that writes commits its own writes before it returns
(register, unregister, load's removals, the clearing of a stream task's fill-history id);
memory changes only after the commit succeeded. When a write or the commit fails, the store is
rolled back to its last commit, records that ``save_task`` had written since then are restored
in memory, and the store's error is raised: memory and the committed store agree. ``save_task``
is the one exception, as in the seed: it writes into the open transaction, ``commit`` makes it
durable and ``close`` throws it away. A write transaction is begun when a write needs one.

Counters are exact by construction: ``stream_count`` moves with the map, ``paused_count`` with
each status change the lifecycles report, never with calls (the seed's do: M1).

Semantics: each switch of spec/divergences.toml is asked in one place (``# Mn``); the seed's
side breaks invariants on purpose (spec/divergences.md, "The meta").

Reference counts: a mapped task holds 1 for the meta, 1 while its trigger timer holds it, and 1
per outstanding acquire (a ``TaskHandle``). Unregister drops the first two; a task removed while
still acquired is detached until its last release. Releasing more than was acquired raises.

Timers: the heartbeat chain (heartbeat.py), each task's trigger timer (re-armed every
``trigger_param`` ms until the task stops or pauses; its reference is held until unregister
or close) and task timers (``start_task_timer``: the downstream re-check and launch timers that
set ``timerActive``). Unregister of a task with an active task timer moves it to DROPPING and
defers the removal to the end of its last timer; close cancels every timer.
"""

from __future__ import annotations

import enum

import attrs

from statemeta.codec import (
    NO_RELATED_TASK,
    StreamTask,
    TaskId,
    cached,
    checkpoint_info_read_past_end,
    encode_hb,
    latest_checkpoint_id,
)
from statemeta.errors import (
    DecodeError,
    IncompatibleVersionError,
    MisuseError,
    ReleaseError,
    UndefinedBehaviour,
)
from statemeta.lifecycle import (
    Outcome,
    TaskEvent,
    TaskStatus,
    should_pause,
    should_stop,
)
from statemeta.meta import heartbeat
from statemeta.meta.effects import SendHeartbeat
from statemeta.meta.entry import TaskEntry
from statemeta.meta.persist import LoadReport, dropped_at_load, over_read, plan_load
from statemeta.meta.registry import (
    CHECK_DOWNSTREAM_INTERVAL,
    CHECKPOINT_KEY_LEN,
    CHECKPOINT_TABLE,
    SNODE_HANDLE,
    TASK_TABLE,
    task_id,
)
from statemeta.meta.restart import MetaRestart
from statemeta.meta.starting import MetaStarting
from statemeta.meta.state import ArmedTimer, TimerKind
from statemeta.roles import Role, RoleEvent
from statemeta.semantics import Switch
from statemeta.views import SentHeartbeat

__all__ = [
    "CHECKPOINT_KEY_LEN",
    "CHECKPOINT_TABLE",
    "CHECK_DOWNSTREAM_INTERVAL",
    "SNODE_HANDLE",
    "TASK_TABLE",
    "DropResult",
    "MetaCore",
    "TaskHandle",
]


class DropResult(enum.Enum):
    """What unregister did: removed, deferred until its task timer ends, or not found."""

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


class MetaCore(MetaRestart, MetaStarting):
    """The meta's operations (streamMeta.c; restart.py: clear; starting.py: start_all and the
    fill-history launch); no I/O but the injected store (see the docstring).

    The operations assume the meta is open (the edge refuses calls once closed) and that
    ``now`` is the current time. Operations that need a task raise UnknownTaskError for an id
    that is not mapped (unregister and report_launch ignore it)."""

    # -- registration ------------------------------------------------------------------------

    def register(self, task: StreamTask, ver: int) -> bool:
        """streamMetaRegisterTask: False (nothing changed) if the id is registered already.

        Expands (a fill-history task at version 1), saves and commits; only then the list,
        the map and the counters change. A failure at any step changes nothing and raises (the
        seed, M2, lists the id before the save: a failure leaves it listed, not mapped).
        A stream task naming a fill-history task this meta removed is stored with the link
        cleared (spec/divergences.md).
        """
        tid = task.id
        state = self.state
        if tid in state.entries:
            return False
        if task.fill_history:
            ver = 1
        expanded = self.expand(task, ver)
        if expanded.id != tid or expanded.fill_history != task.fill_history:
            raise MisuseError(
                f"the expand hook changed the id or fill-history flag of task {tid}"
            )
        if not expanded.fill_history and expanded.h_task_id in state.removed:
            # its fill-history task was dropped here: the link is cleared, as unregister does
            expanded = attrs.evolve(expanded, h_task_id=NO_RELATED_TASK)

        listed_first = self.profile.seed(Switch.REGISTER_LISTS_FIRST)  # M2
        if listed_first:
            state.ids.append(tid)

        def apply() -> None:
            if listed_first:
                state.ids.pop()  # still the list's last: _add_entry lists it in its place
            self._add_entry(expanded, ver)
            state.removed.discard(tid)

        self._durably([self.codec.record(expanded)], (), apply)
        return True

    def unregister(self, stream_id: int, task_id_: int) -> DropResult:
        """streamMetaUnregisterTask: DROPPING, then removed from list, map and store (committed).

        A fill-history task's stream task gets its related id cleared and saved in the same
        commit. With a task timer active the removal waits for the timer's end (DEFERRED).
        """
        entry = self.state.entries.get(task_id(stream_id, task_id_))
        if entry is None:
            return DropResult.NOT_FOUND
        if should_pause(entry.lifecycle.status):
            self._paused_call(-1)  # M1: the seed's "desc the paused task counter"
        entry.lifecycle.handle(TaskEvent.DROPPING, listener=self._on_status_change)
        if entry.timer_active > 0:
            entry.drop_pending = True
            return DropResult.DEFERRED
        self._remove(entry)
        return DropResult.REMOVED

    # -- references -------------------------------------------------------------------------

    def acquire(self, stream_id: int, task_id_: int) -> TaskHandle | None:
        """streamMetaAcquireTask: +1 reference, or None for a missing, stopped or dropping task."""
        entry = self.state.entries.get(task_id(stream_id, task_id_))
        if entry is None or should_stop(entry.lifecycle.status):
            return None
        entry.refcount += 1
        entry.acquires += 1
        if self.tracing:
            self._trace.acquired.append(entry.lifecycle.status)
        return TaskHandle(entry.id, entry.incarnation)

    def release(self, handle: TaskHandle) -> None:
        """streamMetaReleaseTask: -1 reference; ReleaseError if nothing is left to release.

        The seed (M8) releases anyway; where its release frees a task the meta still maps
        (U2) or writes a task freed already (U3) it raises UndefinedBehaviour."""
        state = self.state
        entry = state.entries.get(handle.id)
        if entry is None or entry.incarnation != handle.incarnation:
            entry = state.detached.get(handle.incarnation)
        if entry is not None and entry.acquires > 0:
            entry.acquires -= 1
        elif not self.profile.seed(Switch.RELEASE_BELOW_ZERO):  # M8
            refcount = 0 if entry is None else entry.refcount
            raise ReleaseError(
                f"release of task {handle.id} (registration {handle.incarnation}) with no "
                f"outstanding acquire: its refcount {refcount} would go below what the meta "
                f"holds (below zero once the task is dropped)"
            )
        elif entry is None:
            if handle.incarnation > 0 and self.profile.seed(Switch.RELEASE_OF_FREED):  # U3
                raise UndefinedBehaviour("use after free", f"task {handle.id}", "release",
                                         divergence="U3")
            return  # the seed's task is freed: its release writes freed memory, nothing here
        elif (entry.refcount == 1 and state.entries.get(entry.id) is entry
              and self.profile.seed(Switch.RELEASE_FREES_MAPPED)):  # U2
            raise UndefinedBehaviour("use after free", f"task {handle.id}", "release",
                                     divergence="U2")
        entry.refcount -= 1
        if entry.refcount == 0 and state.detached.get(entry.incarnation) is entry:
            del state.detached[entry.incarnation]

    # -- task events ------------------------------------------------------------------------

    def handle_event(self, stream_id: int, task_id_: int, event: TaskEvent) -> Outcome:
        """streamTaskHandleEvent on a mapped task. INIT / INIT_SCANHIST of a task with nothing
        downstream completes inside the call (APPLIED; see ``_downstream_ready``)."""
        entry = self.entry(stream_id, task_id_)
        self._require_halt_link(entry, event, lambda lc, hear: lc.handle(event, listener=hear))
        outcome = self._handle(entry, event)
        if event is TaskEvent.PAUSE:
            self._paused_call(+1)  # M1: streamTaskPause, whatever the outcome
        if event is TaskEvent.CHECKPOINT_DONE and outcome is Outcome.APPLIED:
            entry.checkpointing_id = 0
            entry.checkpoint_trans_id = 0
        self._complete_round_if_done()
        return outcome

    def complete_event(self, stream_id: int, task_id_: int, event: TaskEvent) -> Outcome:
        """The second phase of INIT / INIT_SCANHIST (the last downstream reply): the task
        becomes downstream-ready, its ready result is recorded and its fill-history task, if it
        has one, is launched (``_downstream_ready``)."""
        entry = self.entry(stream_id, task_id_)
        self._require_halt_link(entry, None, lambda lc, hear: lc.complete(event, listener=hear))
        if self.by_kind and should_stop(entry.lifecycle.status):
            return Outcome.REJECTED  # M14: streamProcessCheckRsp ignores a stopping task's answer
        outcome = self._downstream_ready(entry, event)
        self._complete_round_if_done()
        return outcome

    def resume(self, stream_id: int, task_id_: int) -> Outcome:
        """streamTaskResume: back to the status saved by PAUSE or HALT."""
        entry = self.entry(stream_id, task_id_)
        self._require_halt_link(entry, None, lambda lc, hear: lc.resume(listener=hear))
        if entry.lifecycle.status is TaskStatus.PAUSE:
            self._paused_call(-1)  # M1: streamTaskResume from PAUSE
        return entry.lifecycle.resume(listener=self._on_status_change)

    def begin_checkpoint(
        self, stream_id: int, task_id_: int, checkpoint_id: int, trans_id: int
    ) -> Outcome:
        """The checkpoint-source request: GEN_CHECKPOINT, recording the checkpoint in progress."""
        entry = self.entry(stream_id, task_id_)
        event = TaskEvent.GEN_CHECKPOINT
        self._require_halt_link(entry, event, lambda lc, hear: lc.handle(event, listener=hear))
        outcome = entry.lifecycle.handle(event, listener=self._on_status_change)
        if outcome is Outcome.APPLIED:
            entry.checkpointing_id = checkpoint_id
            entry.checkpoint_trans_id = trans_id
        return outcome

    def report_downstream_update(self, stream_id: int, task_id_: int, node_id: int) -> None:
        """Queue ``node_id`` for the next heartbeat's update nodes (pDownstreamUpdateList)."""
        entry = self.entry(stream_id, task_id_)
        entry.update_nodes = (*entry.update_nodes, node_id)

    def start_task_timer(
        self, stream_id: int, task_id_: int, delay_ms: int = CHECK_DOWNSTREAM_INTERVAL
    ) -> None:
        """Arm a task timer: timerActive + 1 now, - 1 when it fires ``delay_ms`` later."""
        if delay_ms < 0:
            raise ValueError(f"timer delay must be >= 0 ms, got {delay_ms}")
        entry = self.entry(stream_id, task_id_)
        entry.timer_active += 1
        self.state.schedule.arm(
            self.now + delay_ms, TimerKind.TASK, entry.id, entry.incarnation
        )

    # -- persistence ------------------------------------------------------------------------

    def save_task(self, task: StreamTask) -> None:
        """streamMetaSaveTask: write a mapped task's new record into the open transaction.

        Not durable until ``commit`` (or the commit of any later writing operation); close
        throws it away, and a failed commit restores the committed record in memory too.
        """
        entry = self.state.entries.get(task.id)
        if entry is None and self.profile.seed(Switch.SAVE_TASK_UNMAPPED):  # M10
            self._ensure_transaction()
            self.tasks.upsert(*self.codec.record(task))
            return
        entry = self.entry(task.stream_id, task.task_id)
        if task.fill_history != entry.task.fill_history:
            raise MisuseError(f"save_task cannot change the fill-history flag of task {entry.id}")
        self._ensure_transaction()
        self.tasks.upsert(*self.codec.record(task))
        self.state.uncommitted.setdefault(entry.id, entry.task)
        entry.task = task

    def commit(self) -> None:
        """streamMetaCommit: make the open transaction durable."""
        self._durably((), (), _nothing)

    def load_all(self) -> LoadReport:
        """streamMetaLoadAllTasks: add every stored task that is not mapped yet.

        Records are visited in key byte order (persist.plan_load says what happens to each).
        Loaded tasks are UNINIT, not downstream-ready. If the commit or the expand hook fails,
        nothing is loaded and the error is raised.
        """
        state = self.state
        mapped = {tid: e.task for tid, e in state.entries.items()}
        plan = plan_load(self.tasks.items(), mapped, self.codec, self.expand, self.profile,
                         state.removed, self._dropped_at_load)

        def apply() -> None:
            for task in plan.add:
                self._add_entry(plan.cleared.get(task.id, task), task.checkpoint_ver + 1)
            for tid, task in plan.cleared.items():
                if tid in mapped:
                    state.entries[tid].task = task
            state.removed.update(plan.report.removed)
            state.loaded = True

        if plan.writes:
            self._remove_durably([self.codec.record(t) for t in plan.cleared.values()],
                                 plan.deletes, apply)
        else:
            apply()
        if plan.aborted is not None:
            raise plan.aborted  # M4: the seed's load returns -1 (what it loaded stays)
        return plan.report

    def _dropped_at_load(self, task: StreamTask) -> bool:
        """Whether load_all deletes ``task``'s record (persist.dropped_at_load)."""
        return dropped_at_load(task)

    def latest_checkpoint_id(self) -> int:
        """streamMetaGetLatestCheckpointId: the largest stored checkpointId (0 if none).

        Reads each record's checkpoint-info prefix; records that do not decode are skipped
        (the seed's decoder reads a torn one past its end: UndefinedBehaviour, U1).
        """
        rows = list(self.tasks.items())
        if self.profile.seed(Switch.LENGTH_HEADER_TRUSTED):  # U1
            for key, value in rows:
                if checkpoint_info_read_past_end(value):
                    raise over_read(key, "latest_checkpoint_id")
        return latest_checkpoint_id(value for _key, value in rows)

    def stored_tasks(self) -> tuple[tuple[bytes, StreamTask | None], ...]:
        """Every record of task.db as the open transaction sees it (None: does not decode)."""
        rows: list[tuple[bytes, StreamTask | None]] = []
        for key, value in self.tasks.items():
            try:
                rows.append((key, cached.decode(value)))
            except (DecodeError, IncompatibleVersionError):
                rows.append((key, None))
        return tuple(rows)

    # -- stop and close ---------------------------------------------------------------------

    def stop_all(self) -> tuple[TaskId, ...]:
        """streamMetaStopAllTasks: STOP every listed task that is not stopping or dropping.

        First, if the meta was leader and became follower, the before-close heartbeat: tasks in
        CK have their checkpoint marked failed and one heartbeat is sent at once, whatever the
        role or the tick count. Returns the ids stopped, in list order.
        """
        state = self.state
        if not state.ids:
            return ()
        if state.send_before_close:
            for entry in self.listed():
                if entry.lifecycle.status is TaskStatus.CK:
                    entry.failed_checkpoint_id = entry.checkpointing_id
            self._send_heartbeat(before_close=True)
            state.send_before_close = False
        stopped: list[TaskId] = []
        for entry in self.listed():
            lifecycle = entry.lifecycle
            if not should_stop(lifecycle.status):
                lifecycle.handle(TaskEvent.STOP, listener=self._on_status_change)
                stopped.append(entry.id)
        return tuple(stopped)

    def notify_close(self) -> int:
        """streamMetaNotifyClose: STOP every mapped task (list order); the meta is closing, and
        its heartbeat chain ends (the seed's goes on, M16) until an election as leader.

        Returns how many tasks still have an active task timer (the seed waits for them; a live
        caller may advance its clock, and ``close`` cancels them).
        """
        state = self.state
        for entry in self.listed():
            entry.lifecycle.handle(TaskEvent.STOP, listener=self._on_status_change)
        state.closing = True
        if not self.profile.seed(Switch.HEARTBEAT_AFTER_NOTIFY_CLOSE):  # M16
            heartbeat.stop_chain(state.heartbeat, state.schedule)  # the C waits for its tick
        return sum(1 for e in state.entries.values() if e.timer_active > 0)

    def close(self) -> None:
        """streamMetaClose: cancel every timer, abort the open transaction, close the store."""
        state = self.state
        state.closed = True
        heartbeat.stop_chain(state.heartbeat, state.schedule)
        state.schedule.armed.clear()
        for entry in (*state.entries.values(), *state.detached.values()):
            entry.timer_active = 0
        self._apply_role(RoleEvent.CLOSE)
        state.ids.clear()
        state.entries.clear()
        state.detached.clear()
        state.stream_count = 0
        state.paused_count = 0
        state.start.round = None
        self.store.close()

    # -- role and heartbeat -----------------------------------------------------------------

    def update_stage_role(self, stage: int, is_leader: bool) -> Role:
        """streamMetaUpdateStageRole: new stage; becoming (or staying) LEADER ticks the one
        heartbeat chain at once (it may send) and ends a notice of close, LEADER -> FOLLOWER
        stops it and arms the before-close heartbeat."""
        state = self.state
        state.stage = stage
        row = self._apply_role(RoleEvent.BECOME_LEADER if is_leader else RoleEvent.BECOME_FOLLOWER)
        if row.send_before_close:
            state.send_before_close = True
        if row.stop_heartbeat and not self.profile.seed(Switch.HEARTBEAT_ENDS_AT_TICK):  # M12
            heartbeat.stop_chain(state.heartbeat, state.schedule)  # the seed's ends at its tick
        if row.start_heartbeat:
            state.closing = False  # an election as leader ends a notice of close (M16)
            if heartbeat.start(state.heartbeat, state.schedule, self.now):
                self._send_heartbeat(before_close=False)
        return state.role

    # -- timers -----------------------------------------------------------------------------

    def fire(self, seq: int) -> None:
        """Timer ``seq`` is due (``now`` is its due time): run it; nothing if not armed."""
        timer = self.state.schedule.take(seq)
        if timer is None:
            return
        if timer.kind is TimerKind.HEARTBEAT:
            self._fire_heartbeat(timer)
            return
        assert timer.task is not None
        entry = self.state.entries.get(timer.task)
        if entry is None or entry.incarnation != timer.incarnation:
            return  # its registration is gone (the removal cancels its timers: not reached)
        if timer.kind is TimerKind.TRIGGER:
            self._fire_trigger(entry)
        elif timer.kind is TimerKind.LAUNCH:
            self._fire_launch(entry)
            self._complete_round_if_done()
        else:
            self._end_task_timer(entry)

    def _fire_heartbeat(self, timer: ArmedTimer) -> None:
        state = self.state
        leader = state.role is Role.LEADER
        if heartbeat.tick(state.heartbeat, state.schedule, self.now, leader):
            self._send_heartbeat(before_close=False)

    def _fire_trigger(self, entry: TaskEntry) -> None:
        """streamSchedByTimer: re-armed until the task stops or pauses (the ref stays held)."""
        status = entry.lifecycle.status
        if not (should_stop(status) or should_pause(status)):
            self._arm_trigger(entry)

    # -- internals --------------------------------------------------------------------------

    def _send_heartbeat(self, *, before_close: bool) -> bool:
        """metaHeartbeatToMnodeImpl: build and encode one message, queued for the transport."""
        state = self.state
        built = heartbeat.build_hb_msg(state.vg_id, state.stage, self.listed())
        if built is None:
            return False
        msg, ep_set = built
        payload = encode_hb(msg)
        state.hb_sent += 1
        if self.tracing:
            expected = tuple(e.id for e in self.listed() if not e.task.fill_history)
            self._trace.heartbeats.append(
                SentHeartbeat(msg, payload, state.role, before_close, expected)
            )
        self.outbox.append(SendHeartbeat(ep_set, payload))
        return True


def _nothing() -> None:
    return None
