"""The explorer's state: a canonical, hashable abstraction of a running reference adapter.

Two adapters with the same key behave the same from then on, up to a relabelling of
interchangeable pool slots: the key holds everything a later operation can read (the meta's
list, map, lifecycles, references, start round, role and heartbeat chain, every armed timer as
its delay from now and its firing order, the committed store and the open transaction, the
armed store faults, the adapter's outstanding handles) and forgets what no operation reads:
absolute time, counters that only count (heartbeats sent, rounds completed or superseded) and
registration numbers (a handle is kept as what it names: the live entry, a detached one, or
nothing).

Symmetry: slots whose records are equal except for their ids, and that no other record names,
are interchangeable (``symmetry_classes``). Each slot gets a signature of its own state in which
every relation to the rest is positional (its place in the task list, in the start round, in
the timer order); a class's signatures are then sorted, which relabels the class canonically
without enumerating permutations. The one thing a relabelling does not preserve is the byte
order of the slots' keys (load order); see docs/formal-checking.md.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import attrs

from statemeta.codec import (
    NO_RELATED_TASK,
    STREAM_TASK_KEY_LEN,
    StreamTask,
    TaskId,
    decode_task,
    decode_task_key,
)
from statemeta.errors import StatemetaError
from statemeta.harness.operations import TaskSlot
from statemeta.harness.reference import ReferenceAdapter
from statemeta.lifecycle import TaskStatus
from statemeta.meta import StreamMeta, TaskHandle, VirtualClock
from statemeta.meta.core import TASK_TABLE
from statemeta.meta.entry import TaskEntry
from statemeta.store import FAULT_OPS, FaultyStore, MemoryStore

StateKey = Hashable

_NO_HANDLE = "none"


def symmetry_classes(slots: Sequence[TaskSlot]) -> tuple[tuple[str, ...], ...]:
    """The slots grouped into classes of interchangeable ones (each class in pool order)."""
    named = {t for s in slots for t in (s.record.h_task_id, s.record.stream_task_id)}
    classes: dict[StreamTask | str, list[str]] = {}
    for s in slots:
        referenced = s.id in named or s.record.h_task_id != NO_RELATED_TASK
        shape: StreamTask | str = (
            s.name
            if referenced or s.record.stream_task_id != NO_RELATED_TASK
            else _without_ids(s.record)
        )
        classes.setdefault(shape, []).append(s.name)
    return tuple(tuple(names) for names in classes.values())


def _without_ids(record: StreamTask) -> StreamTask:
    return attrs.evolve(record, stream_id=0, task_id=0)


@attrs.define(slots=True)
class _Interner:
    """Small ints for records (ids left out) and stored values, so keys hash and compare fast."""

    records: dict[StreamTask, int] = attrs.field(factory=dict)
    by_identity: dict[int, tuple[StreamTask, int]] = attrs.field(factory=dict)
    values: dict[bytes, int] = attrs.field(factory=dict)

    def record(self, record: StreamTask) -> int:
        known = self.by_identity.get(id(record))
        if known is not None and known[0] is record:
            return known[1]
        number = self.records.setdefault(_without_ids(record), len(self.records))
        self.by_identity[id(record)] = (record, number)
        return number

    def value(self, value: bytes) -> int:
        number = self.values.get(value)
        if number is None:
            try:
                number = self.record(decode_task(value))
            except StatemetaError:
                number = -1 - len(self.values)  # an undecodable value: distinct, never a record
            self.values[value] = number
        return number


class StateAbstraction:
    """Computes the canonical key of an adapter's state (see the module docstring)."""

    def __init__(self, slots: Sequence[TaskSlot], *, symmetry: bool) -> None:
        self._slots = tuple(slots)
        self._ids = {s.id: s.name for s in slots}
        self._keys: dict[bytes, str] = {}
        self._classes = (
            symmetry_classes(self._slots) if symmetry else tuple((s.name,) for s in self._slots)
        )
        self._interner = _Interner()
        self.statuses: set[TaskStatus] = set()
        """Every task status seen in a state keyed so far (for the coverage report)."""

    @property
    def classes(self) -> tuple[tuple[str, ...], ...]:
        return self._classes

    def key(self, adapter: ReferenceAdapter, extra: Hashable = None) -> StateKey:
        """The canonical key of ``adapter`` (plus ``extra``: the explorer's remaining budgets)."""
        meta = adapter.meta
        store = adapter.store
        clock = adapter.clock
        now = clock.now_ms()
        ranks, timers = _live_timers(clock, now)
        sigs: dict[str, list[Any]] = {s.name: [] for s in self._slots}
        view = meta.view()
        entries: dict[TaskId, TaskEntry] = meta._map  # read only
        for position, task in enumerate(view.tasks):
            entry = entries[task.id]
            self.statuses.add(task.status)
            sigs[self._name(task.id)].append((
                "mapped",
                position,
                self._interner.record(task.task),
                task.status,
                task.saved,
                task.active,
                task.waiting,
                task.refcount,
                task.acquires,
                task.trigger_held,
                task.downstream_ready,
                task.timer_active,
                task.drop_pending,
                task.next_process_ver,
                task.checkpointing_id,
                entry.checkpoint_trans_id,
                task.failed_checkpoint_id,
                tuple(entry.update_nodes),
                _timer(entry.trigger_timer, now, ranks),
                tuple(_timer(t, now, ranks) for t in entry.task_timers),
            ))
        detached_rank = {}
        for rank, d in enumerate(view.detached):
            detached_rank[d.incarnation] = rank
            sigs[self._name(d.id)].append(("detached", rank, d.refcount, d.acquires))
        for tid in view.removed:
            sigs[self._name(tid)].append(("removed",))
        r = view.start_round
        for index, member in enumerate(r.members):
            result = "ready" if member in r.ready else "failed" if member in r.failed else None
            sigs[self._name(member)].append(("member", index, result))
        self._store_part(meta, store, sigs)
        for slot, handles in adapter._handles.items():  # read only
            refs = tuple(_handle_ref(entries, detached_rank, h) for h in handles)
            sigs[slot].append(("handles", refs))
        for slot, handle in adapter._given_back.items():  # read only
            sigs[slot].append(("given_back", _handle_ref(entries, detached_rank, handle)))
        hb = view.heartbeat
        hb_timer = meta._hb._timer  # read only
        overall = (
            view.role,
            view.stage,
            view.loaded,
            view.stream_count,
            view.paused_count,
            r.open,
            hb.armed,
            hb.tick_counter,
            hb.send_before_close,
            _timer(hb_timer, now, ranks),
            timers,
            store.in_transaction,
            _fault_plan(store),
            extra,
        )
        classes = tuple(
            tuple(sorted((tuple(sigs[name]) for name in names), key=hash))
            if len(names) > 1
            else tuple(sigs[names[0]])
            for names in self._classes
        )
        return overall, classes

    def _name(self, tid: TaskId) -> str:
        name = self._ids.get(tid)
        if name is None:
            raise StatemetaError(f"task {tid} is not a slot of the explored pool")
        return name

    def _store_part(self, meta: StreamMeta, store: FaultyStore, sigs: dict[str, list[Any]]) -> None:
        """The committed rows, the open transaction's view of them, and the records that a
        failed commit would restore in memory."""
        inner = store.inner
        if not isinstance(inner, MemoryStore):
            raise StatemetaError("the explorer needs the memory backend")
        committed = inner.committed_items(TASK_TABLE)
        for key, value in committed:
            sigs[self._key_name(key)].append(("committed", self._interner.value(value)))
        if inner.in_transaction:
            table = inner.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
            seen = dict(committed)
            for key, value in table.items():
                if seen.get(key) != value:
                    sigs[self._key_name(key)].append(("written", self._interner.value(value)))
                seen.pop(key, None)
            for key in seen:
                sigs[self._key_name(key)].append(("deleted",))
        for tid, record in meta._uncommitted.items():  # read only
            sigs[self._name(tid)].append(("restore", self._interner.record(record)))

    def _key_name(self, key: bytes) -> str:
        name = self._keys.get(key)
        if name is None:
            name = self._keys[key] = self._name(TaskId(*decode_task_key(key)))
        return name


def _live_timers(clock: VirtualClock, now: int) -> tuple[dict[int, int], tuple[int, ...]]:
    """Each live timer's place in firing order (due time, then arming order), and every live
    timer's delay in that order: the latter also holds timers no field above names (a broken
    variant's second heartbeat chain)."""
    live = sorted(t for t in clock._heap if not t.cancelled)  # read only
    return {id(t): rank for rank, t in enumerate(live)}, tuple(t.due - now for t in live)


def _timer(timer: Any, now: int, ranks: dict[int, int]) -> tuple[int, int] | None:
    if timer is None or timer.cancelled:
        return None
    return (timer.due - now, ranks[id(timer)])


def _fault_plan(store: FaultyStore) -> tuple[tuple[int, ...], ...]:
    """Each store operation's armed faults, as calls from now."""
    calls = store._calls  # read only
    return tuple(
        tuple(sorted(n - calls[op] for n in store._faults[op])) for op in FAULT_OPS
    )


def _handle_ref(
    entries: dict[TaskId, TaskEntry],
    detached_rank: dict[int, int],
    handle: TaskHandle,
) -> tuple[str, int] | str:
    entry = entries.get(handle.id)
    if entry is not None and entry.incarnation == handle.incarnation:
        return "live"
    rank = detached_rank.get(handle.incarnation)
    return _NO_HANDLE if rank is None else ("detached", rank)

