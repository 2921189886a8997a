"""The explorer's state: a canonical, hashable abstraction of a running reference adapter.

Two adapters with the same key behave the same from then on, up to a relabelling of
interchangeable pool slots: the key holds everything a later operation can read (the meta's
list, map, lifecycles, references, start round, role and heartbeat chain, every armed timer as
its delay from now and its firing order, the committed store and the open transaction, the
armed store faults, the adapter's outstanding handles) and forgets what no operation reads:
absolute time, counters that only count (heartbeats sent, rounds completed or superseded) and
registration numbers (a handle is kept as what it names: the live entry, a detached one, or
nothing).

The key also holds everything the state invariants read (statemeta.invariants: the view
invariants and store-mirror), even what the reference never produces (a mapped id missing from
the list, a record stored under another task's key): their verdict is a function of the key,
so the explorer checks each distinct state once (docs/formal-checking.md).

The key is read from the meta's public state (``StreamMeta.state``: plain data, no
``MetaView``, no JSON), the adapter's handles and the store's public snapshot (its committed
rows, the open transaction's view, ``armed_faults``): it is computed after every transition.
``KEY_FIELDS`` lists every field of the state records with what the key makes of it (read, or
ignored and why); a test checks it against the records' fields and perturbs each one read.

Symmetry: slots whose records are equal except for their ids, and that no other record names,
are interchangeable (``symmetry_classes``). Each slot gets a signature of its own state in which
every relation to the rest is positional (its place in the task list, in the start round, in
the timer order); a class's signatures are then sorted, which relabels the class canonically
without enumerating permutations. The one thing a relabelling does not preserve is the byte
order of the slots' keys (load order); see docs/formal-checking.md.
"""

from __future__ import annotations

import hashlib
import io
import operator
import pickle
from collections.abc import Callable, Hashable, Sequence
from typing import Any, cast

import attrs

from statemeta.codec import (
    NO_RELATED_TASK,
    STREAM_TASK_KEY_LEN,
    StreamTask,
    TaskId,
    decode_task,
    decode_task_key,
)
from statemeta.codec.cached import encode
from statemeta.errors import StatemetaError
from statemeta.harness.operations import TaskSlot
from statemeta.harness.reference import ReferenceAdapter
from statemeta.identity import key_fields
from statemeta.lifecycle import TaskLifecycle, TaskStatus
from statemeta.meta import MetaState, TaskHandle, TimerKind
from statemeta.meta.core import TASK_TABLE
from statemeta.meta.entry import TaskEntry
from statemeta.meta.start_round import StartInfo, StartRound
from statemeta.meta.state import ArmedTimer, HeartbeatState, Schedule
from statemeta.store import FaultyStore, MemoryStore

StateKey = Hashable
Fingerprint = int
FINGERPRINT_BITS = 64
"""The seen set keeps each state's fingerprint, not its key (TLC's approach)."""

_NO_HANDLE = "none"
_REMOVED = ("removed",)
_DELETED = ("deleted",)
_MAP_ONLY = ("map_only",)
_NO_TWINS: frozenset[str] = frozenset()


def _reader(cls: type[Any], without: frozenset[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A function that reads, as a tuple, the fields of ``cls`` that are part of a state's
    identity (statemeta.identity), less ``without`` (those the key reads its own way)."""
    names = [name for name in key_fields(cls) if name not in without]
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda value: (one(value),)
    return cast(Callable[[Any], tuple[Any, ...]], operator.attrgetter(*names))


class _Part:
    """A record's part of the key, read by its class's fields (a variant's subclass of a
    record, with a field of its own, has that field read too)."""

    def __init__(self, without: frozenset[str] = frozenset()) -> None:
        self._without = without
        self._readers: dict[type, Callable[[Any], tuple[Any, ...]]] = {}

    def __call__(self, value: Any) -> tuple[Any, ...]:
        reader = self._readers.get(type(value))
        if reader is None:
            reader = self._readers[type(value)] = _reader(type(value), self._without)
        return reader(value)


_lifecycle_part = _Part()
_entry_part = _Part(frozenset({"task", "lifecycle"}))
"""An entry's runtime fields: its record is interned with its ids relabelled (``record``) and
its lifecycle read by ``_lifecycle_part``."""


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
    """Content ids for records and stored values, computed once per record object and per
    value: strings (their hash is cached), equal in every process, so keys computed by
    parallel workers compare (search.py).

    A record is named without its ids when they are its slot's (symmetric slots share the
    name), and whole when they are not (a record stored under another task's key); a value
    that does not decode by itself."""

    records: dict[StreamTask, str] = attrs.field(factory=dict)
    by_identity: dict[int, tuple[StreamTask, str, tuple[int, int]]] = attrs.field(factory=dict)
    values: dict[bytes, tuple[str, tuple[int, int] | None]] = attrs.field(factory=dict)

    def record(self, record: StreamTask, slot: tuple[int, int]) -> str:
        known = self.by_identity.get(id(record))
        if known is None or known[0] is not record:
            stripped = _without_ids(record)
            name = self.records.get(stripped)
            if name is None:
                name = self.records[stripped] = _content(stripped)
            known = self.by_identity[id(record)] = (
                record, name, (record.stream_id, record.task_id)
            )
        if known[2] == slot:
            return known[1]
        return "foreign " + _content(record)

    def value(self, value: bytes, slot: tuple[int, int]) -> str:
        known = self.values.get(value)
        if known is None:
            try:
                record = decode_task(value)
            except StatemetaError:  # an undecodable value: distinct, never a record
                known = ("undecodable " + value.hex(), None)
            else:
                own = (record.stream_id, record.task_id)
                known = (self.record(record, own), own)
            self.values[value] = known
        name, stored_as = known
        if stored_as is None or stored_as == slot:
            return name
        return self.record(decode_task(value), slot)


def _content(record: StreamTask) -> str:
    """A record's content id: a 128-bit digest of its encoding, the same for equal records in
    every process (its repr is not: an enum field shows as ``<TaskLevel.SOURCE: 1>`` in a
    record the reference made and as ``1`` in one decoded from the store, and the two are
    equal). The encoding itself (about 1 KB) made keys slow to fingerprint and to ship."""
    return hashlib.blake2b(encode(record), digest_size=16).hexdigest()


def fingerprint(key: StateKey) -> Fingerprint:
    """A ``FINGERPRINT_BITS``-bit fingerprint of a key: blake2b of its pickle. The pickler
    keeps no memo, so the bytes are a function of the key's value, not of which of its parts
    happen to be one object; a key holds tuples, strings, ints, bools, None and enums only.
    Keys of two processes fingerprint alike once in one canonical form (``adopt``)."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.fast = True  # no memo
    pickler.dump(key)
    return int.from_bytes(hashlib.blake2b(out.getvalue(), digest_size=8).digest(), "big")


def collision_probability(states: int) -> float:
    """The chance that two of ``states`` distinct states share a fingerprint (one is then
    taken for the other and not explored), fingerprints taken as uniform: n(n-1)/2^(b+1)."""
    return states * (states - 1) / 2.0 ** (FINGERPRINT_BITS + 1)


class StateAbstraction:
    """Computes the canonical key of an adapter's state (see the module docstring)."""

    def __init__(self, slots: Sequence[TaskSlot], *, symmetry: bool) -> None:
        self._slots = tuple(slots)
        self._names = tuple(s.name for s in self._slots)
        self._index = {s.id: i for i, s in enumerate(self._slots)}
        self._by_name = {s.name: i for i, s in enumerate(self._slots)}
        self._ids = tuple((s.id.stream_id, s.id.task_id) for s in self._slots)
        self._keys: dict[bytes, int] = {}
        self._committed: dict[int, tuple[tuple[tuple[bytes, bytes], ...], tuple[Any, ...]]] = {}
        """The committed rows' part of the key, by the identity of the (immutable) rows, which
        forks share until a commit changes them."""
        self._classes = (
            symmetry_classes(self._slots) if symmetry else tuple((s.name,) for s in self._slots)
        )
        self._class_index = tuple(
            tuple(self._by_name[name] for name in names) for names in self._classes
        )
        self._interner = _Interner()
        self.statuses: set[TaskStatus] = set()
        """Every task status seen in a state keyed so far (for the coverage report)."""

    @property
    def classes(self) -> tuple[tuple[str, ...], ...]:
        return self._classes

    def key(self, adapter: ReferenceAdapter, extra: Hashable = None) -> StateKey:
        """The canonical key of ``adapter`` (plus ``extra``: what the caller's search adds to
        a state, e.g. the linearizability checker's clients)."""
        return self.key_and_twins(adapter, extra)[0]

    def key_and_twins(
        self, adapter: ReferenceAdapter, extra: Hashable = None
    ) -> tuple[StateKey, frozenset[str]]:
        """The key, and the twins: each slot whose signature equals that of an earlier slot of
        its class. Swapping the two leaves the state as it is, so an operation on the twin
        leads to a relabelling of what the same operation on the earlier slot leads to."""
        return self._key(adapter, extra)

    def _key(
        self, adapter: ReferenceAdapter, extra: Hashable
    ) -> tuple[StateKey, frozenset[str]]:
        """The key and the twins."""
        meta = adapter.meta
        state = meta.state  # the meta's public state (statemeta.meta.state), read only
        store = adapter.store
        now = adapter.clock.now_ms()
        timers = state.schedule.in_firing_order()
        ranks = {t.seq: rank for rank, t in enumerate(timers)}
        triggers: dict[int, tuple[int, int]] = {}
        launches: dict[int, tuple[int, int]] = {}
        task_timers: dict[int, list[tuple[int, int, int]]] = {}
        for t in timers:
            if t.kind is TimerKind.TRIGGER:
                triggers[t.incarnation] = (t.due - now, ranks[t.seq])
            elif t.kind is TimerKind.LAUNCH:
                launches[t.incarnation] = (t.due - now, ranks[t.seq])
            elif t.kind is TimerKind.TASK:
                task_timers.setdefault(t.incarnation, []).append((t.seq, t.due - now, ranks[t.seq]))
        sigs: list[list[Any]] = [[] for _ in self._slots]
        index = self._index
        ids = self._ids
        record = self._interner.record
        entries = state.entries
        listed = state.ids
        statuses = self.statuses
        for position, tid in enumerate(listed):
            entry = entries.get(tid)
            if entry is None:  # listed, not mapped: the seed's failed register (M2)
                sigs[self._slot(tid)].append(("list_only", position))
                continue
            lifecycle = entry.lifecycle
            status = lifecycle.status
            statuses.add(status)
            slot = index.get(tid)
            if slot is None:
                slot = self._slot(tid)
            armed = task_timers.get(entry.incarnation)
            sigs[slot].append((
                "mapped",
                position,
                record(entry.task, ids[slot]),
                _lifecycle_part(lifecycle),
                _entry_part(entry),
                triggers.get(entry.incarnation),
                tuple([(delay, rank) for _seq, delay, rank in sorted(armed)]) if armed else (),
                launches.get(entry.incarnation),
            ))
        for tid in entries.keys() - set(listed):  # list-map broken: never in the reference
            sigs[self._slot(tid)].append(_MAP_ONLY)
        detached_rank = {}
        if state.detached:
            for rank, (incarnation, d) in enumerate(sorted(state.detached.items())):
                detached_rank[incarnation] = rank
                sigs[self._slot(d.id)].append(("detached", rank, d.refcount, d.acquires))
        for tid in state.removed:
            sigs[self._slot(tid)].append(_REMOVED)
        started = state.start.round
        if started is not None:
            ready, failed = started.ready, started.failed
            for position, member in enumerate(started.members):
                sigs[self._slot(member)].append(
                    ("member", position, member in ready, member in failed)
                )
            for outside in (ready.keys() | failed.keys()) - started.member_set:  # the seed's
                sigs[self._slot(outside)].append(
                    ("result", outside in ready, outside in failed)
                )
        self._store_part(state, store, sigs)
        by_name = self._by_name
        for name, handles in adapter.handles.items():
            refs = tuple([handle_ref(entries, detached_rank, h) for h in handles])
            sigs[by_name[name]].append(("handles", refs))
        for name, handle in adapter.given_back.items():
            sigs[by_name[name]].append(("given_back", handle_ref(entries, detached_rank, handle)))
        hb = state.heartbeat
        overall = (
            state.role,
            state.stage,
            state.loaded,
            state.stream_count,
            state.paused_count,
            started is not None,
            hb.timer is not None,
            hb.tick_counter,
            state.send_before_close,
            state.closing,
            None if hb.timer is None else (state.schedule.armed[hb.timer].due - now,
                                           ranks[hb.timer]),
            tuple([t.due - now for t in timers]),
            store.in_transaction,
            state.transaction_stale,
            store.armed_faults(),
            extra,
        )
        slot_sigs = tuple([tuple(sig) for sig in sigs])
        classes: list[tuple[Any, ...]] = []
        twins: frozenset[str] = _NO_TWINS
        for members in self._class_index:
            if len(members) == 1:
                classes.append(slot_sigs[members[0]])
                continue
            signatures = [slot_sigs[i] for i in members]
            for j in range(1, len(members)):
                if signatures[j] in signatures[:j]:
                    twins = twins | {self._names[members[j]]}
            classes.append(tuple(sorted(signatures, key=hash)))
        return (overall, tuple(classes)), twins

    def adopt(self, key: StateKey) -> StateKey:
        """A key computed in another process, in this process's canonical form. A class of
        interchangeable slots is ordered by its signatures' hashes, and a string's hash differs
        from process to process (PYTHONHASHSEED): a cluster's workers' keys are re-sorted here
        (cheaper than an order every process shares, e.g. by repr: 2.5x the cost of a key)."""
        overall, classes = cast(tuple[Any, tuple[Any, ...]], key)
        return overall, tuple(
            tuple(sorted(part, key=hash)) if len(members) > 1 else part
            for members, part in zip(self._class_index, classes, strict=True)
        )

    def _slot(self, tid: TaskId) -> int:
        slot = self._index.get(tid)
        if slot is None:
            raise StatemetaError(f"task {tid} is not a slot of the explored pool")
        return slot

    def _store_part(self, state: MetaState, store: FaultyStore, sigs: list[list[Any]]) -> None:
        """The committed rows, the open transaction's view of them, and the records that a
        failed commit would restore in memory."""
        inner = store.inner
        if not isinstance(inner, MemoryStore):
            raise StatemetaError("the explorer needs the memory backend")
        value = self._interner.value
        ids = self._ids
        committed = inner.committed_items(TASK_TABLE)
        known = self._committed.get(id(committed))
        if known is None or known[0] is not committed:
            parts = []
            for key, stored in committed:
                slot = self._key_slot(key)
                parts.append((slot, ("committed", value(stored, ids[slot]))))
            known = self._committed[id(committed)] = (committed, tuple(parts))
        for slot, part in known[1]:
            sigs[slot].append(part)
        if inner.in_transaction:
            table = inner.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
            seen = dict(committed)
            for key, stored in table.items():
                if seen.get(key) != stored:
                    slot = self._key_slot(key)
                    sigs[slot].append(("written", value(stored, ids[slot])))
                seen.pop(key, None)
            for key in seen:
                sigs[self._key_slot(key)].append(_DELETED)
        for tid, restored in state.uncommitted.items():
            slot = self._slot(tid)
            sigs[slot].append(("restore", self._interner.record(restored, ids[slot])))

    def _key_slot(self, key: bytes) -> int:
        slot = self._keys.get(key)
        if slot is None:
            slot = self._keys[key] = self._slot(TaskId(*decode_task_key(key)))
        return slot


def handle_ref(
    entries: dict[TaskId, TaskEntry],
    detached_rank: dict[int, int],
    handle: TaskHandle,
) -> tuple[str, int] | str:
    """What ``handle`` names: the live entry, a detached one (by its rank among the detached,
    in registration order), or nothing."""
    entry = entries.get(handle.id)
    if entry is not None and entry.incarnation == handle.incarnation:
        return "live"
    rank = detached_rank.get(handle.incarnation)
    return _NO_HANDLE if rank is None else ("detached", rank)


KEY_RECORDS: tuple[type, ...] = (
    MetaState, TaskEntry, TaskLifecycle, HeartbeatState, StartInfo, StartRound, Schedule,
    ArmedTimer,
)
"""The state records the key reads: every field of each that its declaration does not mark
``OUTSIDE_KEY`` (statemeta.identity), with the reason; tests/unit/test_state_key.py perturbs
each field read and checks the key changes."""

