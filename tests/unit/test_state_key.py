"""The explorer's key covers the meta's whole state: every field of every state record is read
by the key or left out for a stated reason, and changing any field read changes the key."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from statemeta.explore.search import ForkableReference
from statemeta.explore.state import KEY_RECORDS, StateAbstraction
from statemeta.harness.operations import TASK_POOL, Op, slot_of
from statemeta.identity import key_fields, outside_key
from statemeta.lifecycle import TaskEvent, TaskStatus
from statemeta.meta import MetaState, TimerKind
from statemeta.meta.entry import TaskEntry
from statemeta.meta.launch import LaunchRetry
from statemeta.meta.start_round import LaunchResult, StartRound

S1, S3 = slot_of("s1").id, slot_of("s3").id


@pytest.mark.parametrize("record", KEY_RECORDS, ids=lambda c: str(c.__name__))
def test_every_field_a_state_record_leaves_out_of_the_key_says_why(record: type) -> None:
    ignores = outside_key(record)
    assert set(key_fields(record)) | ignores.keys() == {f.name for f in attrs.fields(record)}
    assert all(isinstance(reason, str) and reason.strip() for reason in ignores.values())


def _entry(state: MetaState) -> TaskEntry:
    return state.entries[S1]





_STATE: dict[str, Callable[[MetaState], object]] = {
    "stage": lambda s: setattr(s, "stage", s.stage + 1),
    "role": lambda s: setattr(s, "role", s.role.__class__.LEADER),
    "ids": lambda s: s.ids.clear(),
    "entries": lambda s: s.entries.__setitem__(S3, attrs.evolve(_entry(s), id=S3)),
    "stream_count": lambda s: setattr(s, "stream_count", s.stream_count + 1),
    "paused_count": lambda s: setattr(s, "paused_count", s.paused_count + 1),
    "detached": lambda s: s.detached.__setitem__(99, _entry(s).copy()),
    "removed": lambda s: s.removed.add(S3),
    "loaded": lambda s: setattr(s, "loaded", not s.loaded),
    "uncommitted": lambda s: s.uncommitted.__setitem__(S1, _entry(s).task),
    "transaction_stale": lambda s: setattr(s, "transaction_stale", not s.transaction_stale),
    "start": lambda s: setattr(s.start, "round", StartRound((S1,), 0)),
    "send_before_close": lambda s: setattr(s, "send_before_close", not s.send_before_close),
    "closing": lambda s: setattr(s, "closing", not s.closing),
    "heartbeat": lambda s: setattr(s.heartbeat, "tick_counter", 3),
    "schedule": lambda s: s.schedule.arm(50, TimerKind.TASK, S1, _entry(s).incarnation),
}
_ENTRY: dict[str, Callable[[TaskEntry], object]] = {
    "task": lambda e: setattr(e, "task", attrs.evolve(e.task, checkpoint_id=7)),
    "lifecycle": lambda e: e.lifecycle.handle(TaskEvent.STOP),
    "refcount": lambda e: setattr(e, "refcount", e.refcount + 1),
    "acquires": lambda e: setattr(e, "acquires", e.acquires + 1),
    "trigger_held": lambda e: setattr(e, "trigger_held", not e.trigger_held),
    "downstream_ready": lambda e: setattr(e, "downstream_ready", not e.downstream_ready),
    "timer_active": lambda e: setattr(e, "timer_active", e.timer_active + 1),
    "drop_pending": lambda e: setattr(e, "drop_pending", not e.drop_pending),
    "next_process_ver": lambda e: setattr(e, "next_process_ver", e.next_process_ver + 1),
    "checkpointing_id": lambda e: setattr(e, "checkpointing_id", 5),
    "checkpoint_trans_id": lambda e: setattr(e, "checkpoint_trans_id", 5),
    "failed_checkpoint_id": lambda e: setattr(e, "failed_checkpoint_id", 5),
    "update_nodes": lambda e: setattr(e, "update_nodes", (*e.update_nodes, 3)),
    "launch": lambda e: setattr(e, "launch", LaunchRetry(S3)),
}
_LIFECYCLE: dict[str, Callable[[TaskEntry], None]] = {
    "status": lambda e: setattr(e.lifecycle, "status", TaskStatus.READY),
    "active": lambda e: setattr(e.lifecycle, "active", TaskEvent.INIT),
    "waiting": lambda e: setattr(e.lifecycle, "waiting", ((TaskStatus.READY, TaskEvent.HALT),)),
    "saved": lambda e: setattr(e.lifecycle, "saved", (TaskStatus.READY,)),
}
_HEARTBEAT: dict[str, Callable[[MetaState], object]] = {
    "tick_counter": lambda s: setattr(s.heartbeat, "tick_counter", 4),
    "timer": lambda s: setattr(
        s.heartbeat, "timer", s.schedule.arm(200, TimerKind.HEARTBEAT)
    ),
}


_ROUND: dict[str, Callable[[StartRound], object]] = {
    "members": lambda r: setattr(r, "members", (S1, S3)),
    "ready": lambda r: r.ready.__setitem__(S1, LaunchResult(S1, True, 0, 0)),
    "failed": lambda r: r.failed.__setitem__(S3, LaunchResult(S3, False, 0, 0)),
}
"""Each on a round open over s1 (``failed`` names a non-member, as only the seed records)."""


def _round(state: MetaState) -> StartRound:
    if state.start.round is None:
        state.start.round = StartRound((S1,), 0)
    return state.start.round


def test_the_perturbations_below_cover_every_field_the_key_reads() -> None:
    assert _ROUND.keys() == set(key_fields(StartRound))
    assert _STATE.keys() == set(key_fields(MetaState))
    assert _ENTRY.keys() == set(key_fields(TaskEntry))
    assert _LIFECYCLE.keys() == set(key_fields(type(_base().meta.state.entries[S1].lifecycle)))
    assert _HEARTBEAT.keys() == set(key_fields(type(_base().meta.state.heartbeat)))


@attrs.define(slots=True, eq=False)
class _ExtendedEntry(TaskEntry):
    """A task entry with a field the key's code has never heard of."""

    extra: int = 0


def test_a_new_field_of_a_task_entry_is_in_the_key_without_an_edit() -> None:
    """The key reads an entry by its class's fields: one added to the record (here through a
    subclass, as a new field of TaskEntry would be) is read with no change to the key, and
    survives a fork."""

    def extended(extra: int) -> Callable[[MetaState], object]:
        def put(state: MetaState) -> None:
            entry = _entry(state)
            names = [f.name for f in attrs.fields(TaskEntry)]
            state.entries[S1] = _ExtendedEntry(
                **{n: getattr(entry, n) for n in names}, extra=extra
            )
        return put

    abstraction = StateAbstraction(TASK_POOL, symmetry=False)
    keys = []
    for extra in (0, 1):
        adapter = _base()
        extended(extra)(adapter.meta.state)
        fork = adapter.fork()
        assert fork.meta.state.entries[S1].extra == extra  # type: ignore[attr-defined]
        keys.append(abstraction.key(fork))
    assert keys[0] != keys[1]


def _base() -> ForkableReference:
    adapter = ForkableReference()
    adapter.start(3)
    adapter.call(Op.of("register", task="s1"))
    return adapter


def _changes_the_key(perturb: Callable[[MetaState], object]) -> bool:
    abstraction = StateAbstraction(TASK_POOL, symmetry=False)
    base = _base()
    changed = base.fork()
    perturb(changed.meta.state)
    return bool(abstraction.key(changed) != abstraction.key(base))


@pytest.mark.parametrize("field", sorted(_STATE))
def test_changing_a_field_of_the_meta_state_changes_the_key(field: str) -> None:
    assert _changes_the_key(_STATE[field])


@pytest.mark.parametrize("field", sorted(_ENTRY))
def test_changing_a_field_of_a_task_entry_changes_the_key(field: str) -> None:
    assert _changes_the_key(lambda s: _ENTRY[field](_entry(s)))


@pytest.mark.parametrize("field", sorted(_ROUND))
def test_changing_a_field_of_the_start_round_changes_the_key(field: str) -> None:
    def perturb(state: MetaState) -> None:
        _ROUND[field](_round(state))

    base = _base()
    _round(base.meta.state)
    changed = base.fork()
    perturb(changed.meta.state)
    abstraction = StateAbstraction(TASK_POOL, symmetry=False)
    assert abstraction.key(changed) != abstraction.key(base)


def test_a_launch_timer_is_in_the_key() -> None:
    assert _changes_the_key(
        lambda s: s.schedule.arm(100, TimerKind.LAUNCH, S1, _entry(s).incarnation)
    )


@pytest.mark.parametrize("field", sorted(_LIFECYCLE))
def test_changing_a_field_of_a_lifecycle_changes_the_key(field: str) -> None:
    assert _changes_the_key(lambda s: _LIFECYCLE[field](_entry(s)))


@pytest.mark.parametrize("field", sorted(_HEARTBEAT))
def test_changing_a_field_of_the_heartbeat_chain_changes_the_key(field: str) -> None:
    assert _changes_the_key(_HEARTBEAT[field])


def test_a_fork_has_the_same_key_and_the_copy_shares_no_mutable_part() -> None:
    base = _base()
    base.call(Op.of("start_task_timer", task="s1"))
    copy = base.fork()
    abstraction = StateAbstraction(TASK_POOL, symmetry=False)
    assert abstraction.key(copy) == abstraction.key(base)
    original, copied = base.meta.state, copy.meta.state
    assert copied.entries[S1] is not original.entries[S1]
    assert copied.entries[S1].lifecycle is not original.entries[S1].lifecycle
    assert copied.entries[S1].task is original.entries[S1].task  # frozen: shared
    assert copied.schedule.armed is not original.schedule.armed
