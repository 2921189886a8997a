"""ReferenceAdapter: the reference StreamMeta (or one broken variant) behind the Adapter protocol.

Level 1 holds one ``TaskLifecycle`` per pool slot (a lifecycle variant's, for one of those),
levels 2 and 3 one ``StreamMeta`` on a ``FaultyStore`` over a ``MemoryStore`` (fast, the
default) or a real ``LmdbStore`` in a temporary directory, with a ``VirtualClock`` and a
transport that records the heartbeats each operation sends. The meta runs in check mode: every
operation and timer callback ends with the whole invariant catalogue, and an
``InvariantViolation`` propagates (it is never a result); so does ``UndefinedBehaviour``, the
seed's memory error (after it the seed's process would be gone: the harness stops the
example). With ``observe`` / ``outcomes`` it declares and reports only part of its view
(``serve --observe``: statemeta.harness.observation).

Each operation runs in the ``do_*`` method its row of the operation table names (its
``handler`` column; checked at import).

A crash drops the meta without closing it: the store's open transaction is lost, its timers die
with its clock, and its handles are forgotten; the reopened meta gets a new clock from the same
time. Table rows reached are counted in ``coverage`` (the reference only).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal, Self

import attrs

from statemeta.codec import STREAM_TASK_KEY_LEN, EpSet, StreamTask, TaskId, cached
from statemeta.errors import (
    InvariantViolation,
    MisuseError,
    PreconditionError,
    StatemetaError,
    UndefinedBehaviour,
)
from statemeta.harness.adapter import PROTOCOL_VERSION
from statemeta.harness.callers import Callers, caller_broken
from statemeta.harness.coverage_model import (
    Before,
    classify,
    lifecycle_before,
    meta_before,
    role_class,
    row_class,
)
from statemeta.harness.normalize import (
    Json,
    lifecycle_view_json,
    meta_view_json,
    to_json,
)
from statemeta.harness.observation import Observation, declared, observes_json
from statemeta.harness.operations import (
    LEVELS,
    OP_SPECS,
    REGISTER_VER,
    REOPENS,
    TASK_POOL,
    Op,
    TaskFacts,
    TaskSlot,
    ops_at,
    task_slot,
)
from statemeta.harness.variants import VARIANTS
from statemeta.lifecycle import (
    Outcome,
    StatusChange,
    TaskEvent,
    TaskLifecycle,
    TaskStatus,
    transition_row,
)
from statemeta.meta import (
    CheckTrace,
    DropResult,
    LoadReport,
    StartStep,
    StreamMeta,
    TaskHandle,
    VirtualClock,
)
from statemeta.meta.core import TASK_TABLE
from statemeta.meta.persist import dropped_at_load
from statemeta.meta.state import MetaState
from statemeta.roles import RoleEvent, role_row
from statemeta.semantics import Semantics, Switch
from statemeta.store import (
    FAULT_OPS,
    FaultOp,
    FaultyStore,
    LmdbStore,
    MemoryState,
    MemoryStore,
    Store,
)
from statemeta.store.memory_store import PRIVATE_PATH
from statemeta.tables import Role, TransitionRow

__all__ = ["VG_ID", "Backend", "Coverage", "ObservedStreamMeta", "ReferenceAdapter", "saved_record"]

VG_ID = 7
"""The vnode the reference plays (not an snode: it starts UNINIT)."""

Backend = Literal["memory", "lmdb"]
_FAULT_OPS: dict[str, FaultOp] = {op: op for op in FAULT_OPS}


def saved_record(record: StreamTask, status: TaskStatus, checkpointing_id: int) -> StreamTask:
    """What save_task writes: the in-memory record with the current status byte and the
    checkpoint in progress (as the seed saves the live task)."""
    return attrs.evolve(
        record,
        task_status=int(status),
        checkpoint_id=checkpointing_id or record.checkpoint_id,
    )


@attrs.define(slots=True)
class Coverage:
    """Lifecycle and role table rows reached (status changes, and attached rows queued), and,
    when counted, the classes of behaviour of statemeta.harness.coverage_model."""

    lifecycle_rows: Counter[TransitionRow] = attrs.field(factory=Counter)
    role_rows: Counter[tuple[Role, RoleEvent, Role]] = attrs.field(factory=Counter)
    classes: Counter[str] | None = None
    """Each class reached, with how often; None: classes are not counted."""
    step: list[str] = attrs.field(factory=list)
    """The classes of the call running, or of the last one (counted only)."""

    def add_row(self, row: TransitionRow) -> None:
        self.lifecycle_rows[row] += 1
        if self.classes is not None:
            self.step.append(row_class(row))

    def add_trace(self, trace: CheckTrace) -> None:
        for change in trace.status_changes:
            if change.row is not None:
                self.add_row(change.row)
        for role in trace.role_changes:
            self.role_rows[role.old, role.event, role.new] += 1
            if self.classes is not None:
                self.step.append(role_class(role_row(role.old, role.event)))

    def end_step(self, classes: list[str]) -> None:
        """The call's other classes: the step is complete and counted."""
        assert self.classes is not None
        self.step += classes
        self.classes.update(self.step)


class ObservedStreamMeta(StreamMeta):
    """The reference, counting the rows of every trace its invariant check takes."""

    coverage: Coverage | None = None

    def take_trace(self) -> CheckTrace:
        trace = super().take_trace()
        if self.coverage is not None:
            self.coverage.add_trace(trace)
        return trace


@attrs.frozen
class _SlotFacts:
    """A level-1 slot as a precondition reads it: its record and lifecycle (no meta)."""

    task: StreamTask
    lifecycle: TaskLifecycle
    downstream_ready: bool = False


class ReferenceAdapter:
    """The reference (``variant=None``) or a broken variant, in process."""

    def __init__(
        self,
        variant: str | None = None,
        *,
        backend: Backend = "memory",
        check_invariants: bool = True,
        semantics: Semantics | str = Semantics.INTENDED,
        observe: Sequence[str] | None = None,
        outcomes: str = "full",
        flipped: frozenset[Switch] = frozenset(),
        callers: Callers | str = Callers.DIRECT,
    ) -> None:
        if variant is not None and variant not in VARIANTS:
            raise MisuseError(f"no variant {variant!r}; variants are {sorted(VARIANTS)}")
        self.variant = variant
        self.observed: dict[int, Observation] | None = (
            None if observe is None and outcomes == "full" else declared(observe, outcomes)
        )
        """What it declares and reports (``serve --observe``); None: everything."""
        self.semantics = Semantics.of(semantics)
        self.profile = self.semantics.profile.flipped(flipped)
        """What it follows: ``semantics`` but for the switches ``flipped``."""
        self.callers = Callers.of(callers)
        """Who calls it: generation and the explorer send only what ``caller_broken`` allows."""
        self.backend = backend
        self.check_invariants = check_invariants
        self.coverage = Coverage()
        self.level = 0
        self._accepted: frozenset[str] = frozenset()
        self._path: str | None = None
        self._committed = MemoryState()
        """Memory backend: the committed state a reopen starts from (a private store, no
        process-wide registry, so a deep copy of the adapter is an independent instance)."""
        self._meta: StreamMeta | None = None
        self._store: FaultyStore | None = None
        self._clock = VirtualClock()
        self._lifecycles: dict[str, TaskLifecycle] = {}
        self._handles: dict[str, list[TaskHandle]] = {}
        self._given_back: dict[str, TaskHandle] = {}
        self._sent: list[str] = []

    # -- the Adapter protocol ------------------------------------------------------------------

    def hello(self) -> dict[str, Json]:
        name = "statemeta-reference" + ("" if self.variant is None else f"[{self.variant}]")
        hello: dict[str, Json] = {
            "protocol": PROTOCOL_VERSION,
            "name": name,
            "levels": list(LEVELS),
            "semantics": self.semantics.value,
        }
        if self.observed is not None:
            hello.update(observes_json(self.observed))
        return hello

    def start(self, level: int) -> None:
        accepted = frozenset(s.name for s in ops_at(level))
        self.stop()
        self.level = level
        self._accepted = accepted
        if level == 1:
            lifecycle = self._meta_class().lifecycle_class  # a lifecycle variant's too
            self._lifecycles = {s.name: lifecycle(semantics=self.profile) for s in TASK_POOL}
            self._listen()
            return
        if self.backend == "lmdb":
            self._path = tempfile.mkdtemp(prefix="statemeta-ref-")
        else:
            self._path = PRIVATE_PATH
            self._committed = MemoryState()
        self._clock = VirtualClock()
        self._open()

    def call(self, op: Op) -> dict[str, Json]:
        if op.name not in self._accepted:
            raise MisuseError(f"{op!r} is not an operation of level {self.level or 'none'}")
        self._sent = []
        before = None
        if self.coverage.classes is not None:
            self.coverage.step = []
            before = self._before(op)
        try:
            if self.level == 1:  # a lifecycle alone does not know its slot's record
                broken = self.precondition_broken(op)
                if broken is not None:
                    raise PreconditionError(broken)
            value = to_json(getattr(self, op.spec.handler)(op))
        except (InvariantViolation, UndefinedBehaviour):
            raise  # neither is a result: a check failed, or the seed's process would be gone
        except StatemetaError as e:
            result: dict[str, Json] = {"error": type(e).__name__}
        else:
            result = {"ok": value}
        if self._sent:
            result["heartbeats"] = self._sent
        if before is not None:
            self._count(op, before, result)
        if self.observed is not None:
            return self.observed[self.level].result_of(op, result)
        return result

    def precondition_broken(self, op: Op) -> str | None:
        """The precondition of ``op`` (its OpSpec's column) that it would break now, or None
        (also when it names no task, or a task that is not mapped)."""
        precondition = op.spec.precondition
        if precondition is None:
            return None
        slot = task_slot(op)
        facts: TaskFacts | None
        if self.level == 1:
            facts = _SlotFacts(slot.record, self._lifecycles[slot.name])
        else:
            facts = self.meta.state.entries.get(slot.id)
        return None if facts is None else precondition.broken(facts, op)

    def caller_broken(self, op: Op) -> str | None:
        """The rule of the vnode's call discipline (statemeta.harness.callers) that ``op``
        would break now, under ``Callers.VNODE``; None under ``Callers.DIRECT``."""
        if self.callers is Callers.DIRECT or self.level == 1:
            return None
        return caller_broken(self, op)

    @property
    def meta_state(self) -> MetaState:
        return self.meta.state

    def pending_delete(self) -> bool:
        """The open transaction deletes a committed task row (memory backend)."""
        inner = self.store.inner
        if not isinstance(inner, MemoryStore):
            raise MisuseError("pending_delete needs the memory backend")
        if not inner.in_transaction:
            return False
        table = inner.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
        return any(table.get(key) is None for key, _ in inner.committed_items(TASK_TABLE))

    def count_classes(self) -> None:
        """Count the classes of behaviour of every call from now on (``coverage.classes``):
        what the explorer's directed corpus and the coverage reports read."""
        if self.coverage.classes is None:
            self.coverage.classes = Counter()
        self._listen()

    def view(self) -> dict[str, Json]:
        if self.level == 1:
            view = lifecycle_view_json(self._lifecycles.items())
        else:
            view = meta_view_json(self.meta.view(), self.level, self._clock.now_ms())
        return view if self.observed is None else self.observed[self.level].view_of(view)

    def stop(self) -> None:
        if self._meta is not None:
            self._meta.close()
            self._meta = None
        if self._path is not None and self.backend == "lmdb":
            shutil.rmtree(self._path, ignore_errors=True)
        self._path = None
        self._store = None
        self._lifecycles = {}
        self._forget_handles()
        self.level = 0
        self._accepted = frozenset()

    # -- for the property suite -----------------------------------------------------------------

    @property
    def meta(self) -> StreamMeta:
        if self._meta is None:
            raise MisuseError("the reference adapter has no meta (start it at level 2 or 3)")
        return self._meta

    @property
    def store(self) -> FaultyStore:
        if self._store is None:
            raise MisuseError("the reference adapter has no store (start it at level 2 or 3)")
        return self._store

    @property
    def clock(self) -> VirtualClock:
        return self._clock

    @property
    def handles(self) -> Mapping[str, Sequence[TaskHandle]]:
        """Outstanding acquires per slot (release gives back the last one)."""
        return self._handles

    @property
    def given_back(self) -> Mapping[str, TaskHandle]:
        """Per slot, the handle last released (release with none outstanding reuses it)."""
        return self._given_back

    def fork(self) -> Self:
        """An independent adapter in this one's state (its meta forked over a copy of its
        memory store, on a new clock at the same time), sharing ``coverage``. Forking is
        copying data: the explorer forks each state it expands."""
        new = object.__new__(type(self))  # copy.copy, without its generic protocol
        new.__dict__.update(self.__dict__)
        new._lifecycles = {name: lc.copy() for name, lc in self._lifecycles.items()}
        new._handles = {name: list(held) for name, held in self._handles.items()}
        new._given_back = dict(self._given_back)
        new._sent = []
        new._clock = VirtualClock(self._clock.now_ms())
        if self._meta is not None:
            new._store = self.store.copy()
            new._meta = self._meta.fork(new._store, new._clock, transport=new._transport)
            if isinstance(new._meta, ObservedStreamMeta):
                new._meta.coverage = self.coverage
        return new

    def use_handles(
        self, held: Mapping[str, Sequence[TaskHandle]], given_back: Mapping[str, TaskHandle]
    ) -> None:
        """Replace the outstanding and given-back handles (the linearizability spec keeps one
        set per client and installs the calling client's before an acquire or release)."""
        self._handles = {name: list(handles) for name, handles in held.items()}
        self._given_back = dict(given_back)

    def lifecycle(self, slot: str) -> TaskLifecycle:
        return self._lifecycles[slot]

    def committed_records(self) -> dict[TaskId, StreamTask | None]:
        """The committed task.db records (memory backend: without closing anything)."""
        store = self.store.inner
        if not isinstance(store, MemoryStore):
            raise MisuseError("committed_records needs the memory backend")
        return {cached.key_id(k): _decoded(v) for k, v in store.committed_items(TASK_TABLE)}

    # -- the operations: each row of the operation table names its method (``handler``) -----

    def do_handle(self, op: Op) -> Outcome:
        """Also counts the attached row an event is queued by (it never shows as a change)."""
        lifecycle = self.lifecycle(task_slot(op).name)
        event = _event(op)
        before = lifecycle.status
        return self._queued(before, event, lifecycle.handle(event))

    def do_complete(self, op: Op) -> Outcome:
        return self.lifecycle(task_slot(op).name).complete(_event(op))

    def do_restore(self, op: Op) -> Outcome:
        return self.lifecycle(task_slot(op).name).resume()

    def do_reset(self, op: Op) -> None:
        self.lifecycle(task_slot(op).name).reset()

    def do_set_ready(self, op: Op) -> Outcome:
        return self.lifecycle(task_slot(op).name).set_ready()

    def do_register(self, op: Op) -> bool:
        return self.meta.register(task_slot(op).record, REGISTER_VER)

    def do_unregister(self, op: Op) -> DropResult:
        return self.meta.unregister(*_ids(op))

    def do_acquire(self, op: Op) -> bool:
        slot = task_slot(op)
        handle = self.meta.acquire(slot.id.stream_id, slot.id.task_id)
        if handle is None:
            return False
        self._handles.setdefault(slot.name, []).append(handle)
        return True

    def do_release(self, op: Op) -> None:
        slot = task_slot(op)
        held = self._handles.get(slot.name)
        handle = held[-1] if held else self._given_back.get(slot.name, TaskHandle(slot.id, 0))
        self.meta.release(handle)
        if held:
            held.pop()
            self._given_back[slot.name] = handle

    def do_handle_event(self, op: Op) -> Outcome:
        """Also counts the attached row an event is queued by (it never shows as a change)."""
        stream_id, task_id = _ids(op)
        event = _event(op)
        before = self.meta.status(stream_id, task_id)
        return self._queued(before, event, self.meta.handle_event(stream_id, task_id, event))

    def do_complete_event(self, op: Op) -> Outcome:
        return self.meta.complete_event(*_ids(op), _event(op))

    def do_resume(self, op: Op) -> Outcome:
        return self.meta.resume(*_ids(op))

    def do_begin_checkpoint(self, op: Op) -> Outcome:
        return self.meta.begin_checkpoint(*_ids(op), _int(op, "checkpoint"), 1)

    def do_save_task(self, op: Op) -> None:
        tid = task_slot(op).id
        record = self.meta.task(tid.stream_id, tid.task_id)
        if self.profile.seed(Switch.SAVE_TASK_KEEPS_RECORD):  # M13: the record as it is
            self.meta.save_task(record)
            return
        view = self.meta.view().task(tid)
        assert view is not None
        self.meta.save_task(saved_record(record, view.status, view.checkpointing_id))

    def do_commit(self, op: Op) -> None:
        self.meta.commit()

    def do_load_all(self, op: Op) -> LoadReport:
        return self.meta.load_all()

    def do_latest_checkpoint_id(self, op: Op) -> int:
        return self.meta.latest_checkpoint_id()

    def do_start_all(self, op: Op) -> tuple[tuple[TaskId, StartStep], ...]:
        return self.meta.start_all()

    def do_start_one(self, op: Op) -> StartStep:
        return self.meta.start_one(*_ids(op))

    def do_report_launch(self, op: Op) -> bool:
        return self.meta.report_launch(*_ids(op), bool(op.arg("ready")))

    def do_all_tasks_ready(self, op: Op) -> bool:
        return self.meta.all_tasks_ready()

    def do_stop_all(self, op: Op) -> tuple[TaskId, ...]:
        return self.meta.stop_all()

    def do_notify_close(self, op: Op) -> int:
        return self.meta.notify_close()

    def do_clear(self, op: Op) -> None:
        self.meta.clear()

    def do_reset_start_info(self, op: Op) -> None:
        self.meta.reset_start_info()

    def do_update_stage_role(self, op: Op) -> Role:
        return self.meta.update_stage_role(_int(op, "stage"), bool(op.arg("is_leader")))

    def do_advance_clock(self, op: Op) -> None:
        self._advance(_int(op, "ms"))

    def do_start_task_timer(self, op: Op) -> None:
        self.meta.start_task_timer(*_ids(op))

    def do_report_downstream_update(self, op: Op) -> None:
        self.meta.report_downstream_update(*_ids(op), _int(op, "node"))

    def do_close_reopen(self, op: Op) -> object:
        return self._reopen(crash=False)

    def do_crash_reopen(self, op: Op) -> object:
        return self._reopen(crash=True)

    def do_corrupt_record(self, op: Op) -> object:
        return self._reopen(crash=True, torn=task_slot(op))

    def do_fail_next(self, op: Op) -> None:
        self.store.fail_next(_FAULT_OPS[str(op.arg("op"))])

    # -- internals ------------------------------------------------------------------------------

    def _meta_class(self) -> type[StreamMeta]:
        return ObservedStreamMeta if self.variant is None else VARIANTS[self.variant].meta_class

    def _store_factory(self, path: str) -> Store:
        inner: Store = (
            LmdbStore.open(path, durable=False)
            if self.backend == "lmdb"
            else MemoryStore(self._committed)
        )
        self._store = FaultyStore(inner)
        return self._store

    def _transport(self, mnode_ep_set: EpSet, payload: bytes) -> None:
        self._sent.append(payload.hex())

    def _open(self) -> None:
        assert self._path is not None
        meta = self._meta_class().open(
            self._path,
            VG_ID,
            store_factory=self._store_factory,
            clock=self._clock,
            transport=self._transport,
            check_invariants=self.check_invariants,
            semantics=self.profile,
        )
        if isinstance(meta, ObservedStreamMeta):
            meta.coverage = self.coverage
        self._meta = meta
        self._listen()

    def _listen(self) -> None:
        """When classes are counted: the rows each call takes reach ``coverage`` (level 1:
        each lifecycle's listener; levels 2-3: the meta's trace, recorded without checks)."""
        if self.coverage.classes is None:
            return
        for lifecycle in self._lifecycles.values():
            lifecycle.listener = self._heard
        if self._meta is not None:
            self._meta.record_trace = True

    def _heard(self, lifecycle: TaskLifecycle, change: StatusChange) -> None:
        if change.row is not None:
            self.coverage.add_row(change.row)

    def _queued(self, before: TaskStatus, event: TaskEvent, outcome: Outcome) -> Outcome:
        """``outcome``, its attached row counted when the event was queued in ``before``."""
        row = transition_row(before, event)
        if outcome is Outcome.PENDING and row is not None:
            self.coverage.add_row(row)
        return outcome

    def _before(self, op: Op) -> Before:
        """What the classes of ``op``'s call read of the state before it."""
        if self.level == 1:
            return lifecycle_before(self._lifecycles[str(op.arg("task"))])
        meta = self.meta
        dropping = op.name in REOPENS and self.backend == "memory" and any(
            r is not None and dropped_at_load(r)
            for r in self.committed_records().values()
        )
        return meta_before(op, meta.state, self._clock.now_ms(), self.store.armed_faults(),
                           dropping)

    def _count(self, op: Op, before: Before, result: dict[str, Json]) -> None:
        """The call's classes, counted (its rows are in ``coverage.step`` already)."""
        rounds = before.rounds
        faults: tuple[int, ...] = ()
        if self._meta is not None:
            self._meta.take_trace()  # the rows not checked yet: an ObservedStreamMeta counts them
            start = self._meta.state.start
            rounds = (start.completed, start.superseded)
            faults = tuple(len(f) for f in self.store.armed_faults())
        self.coverage.end_step(classify(op, before, result, rounds=rounds, faults=faults))

    def _reopen(self, *, crash: bool, torn: TaskSlot | None = None) -> object:
        """Close (or crash), then open and load_all; ``torn``: its torn record is committed
        between the crash and the open (corrupt_record)."""
        inner = self.store.inner
        if isinstance(inner, MemoryStore):
            self._committed = inner.committed_state()  # what the files would hold
        if crash:
            self.store.crash()
        else:
            self.meta.close()
            self.meta.take_trace()  # the CLOSE role change (no check runs once closed)
        self._meta = None
        self._forget_handles()
        if torn is not None:
            self._commit_torn(torn)
        self._clock = VirtualClock(self._clock.now_ms())
        self._open()
        return self.meta.load_all()

    def _commit_torn(self, slot: TaskSlot) -> None:
        """Commit the slot's torn record into the closed store's files, as a torn write leaves
        it (through the store's own interface, not through a meta)."""
        assert self._path is not None
        store: Store = (
            LmdbStore.open(self._path, durable=False)
            if self.backend == "lmdb"
            else MemoryStore(self._committed)
        )
        try:
            table = store.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
            store.begin()
            table.upsert(*slot.torn_record)
            store.commit()
            if isinstance(store, MemoryStore):
                self._committed = store.committed_state()
        finally:
            store.close()

    def _advance(self, ms: int) -> None:
        """The clock moves (the facade target: under the facade's lock)."""
        self.clock.advance(ms)

    def _forget_handles(self) -> None:
        self._handles = {}
        self._given_back = {}


def _ids(op: Op) -> tuple[int, int]:
    """The stream and task id of the slot ``op`` names."""
    tid = task_slot(op).id
    return tid.stream_id, tid.task_id


def _int(op: Op, name: str) -> int:
    value = op.arg(name)
    assert isinstance(value, int)
    return value


def _event(op: Op) -> TaskEvent:
    return TaskEvent[str(op.arg("event")).upper()]


def _decoded(value: bytes) -> StreamTask | None:
    """The committed record, None if it does not decode (the durable check compares it)."""
    try:
        return cached.decode(value)
    except StatemetaError:
        return None


def _check_handlers() -> None:
    """Every row of the operation table names a method of the reference (checked at import)."""
    missing = sorted(
        s.name for s in OP_SPECS.values()
        if not callable(getattr(ReferenceAdapter, s.handler, None))
    )
    if missing:
        raise MisuseError(f"operations {missing} name a handler ReferenceAdapter does not have")


_check_handlers()
