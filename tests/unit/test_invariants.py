from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from meta_support import fill_history_pair, open_meta, task

from statemeta import invariants
from statemeta.errors import InvariantViolation
from statemeta.lifecycle import StatusChange, TaskEvent, TaskLifecycle, TaskStatus
from statemeta.meta import MetaView
from statemeta.roles import Role, RoleEvent
from statemeta.semantics import Profile, Switch
from statemeta.views import RoleChange


def sample_view(tmp_path: Path) -> MetaView:
    meta = open_meta(tmp_path)
    stream, history = fill_history_pair()
    meta.register(stream, 5)
    meta.register(history, 5)
    meta.register(task(1, trigger_param=50), 5)
    meta.handle_event(0x10, 1, TaskEvent.PAUSE)
    meta.acquire(0x10, 1)
    meta.start_all()
    view = meta.view()
    invariants.check_view(view)
    return view


def broken(view: MetaView) -> dict[str, MetaView]:
    first = view.tasks[0]
    paused = view.tasks[2]
    r = view.start_round
    return {
        "list-map": attrs.evolve(view, ids=(*view.ids, view.ids[0])),
        "stream-count": attrs.evolve(view, stream_count=view.stream_count + 1),
        "paused-count": attrs.evolve(view, paused_count=0),
        "refcount": attrs.evolve(
            view, tasks=(*view.tasks[:2], attrs.evolve(paused, refcount=paused.refcount - 1))
        ),
        "start-round": attrs.evolve(
            view, start_round=attrs.evolve(r, ready=r.members[:1], failed=r.members[:1])
        ),
        "fill-history": attrs.evolve(
            view,
            ids=view.ids[:1] + view.ids[2:],
            map_ids=view.map_ids - {view.ids[1]},
            tasks=(first, paused),
            removed=frozenset({view.ids[1]}),
            stream_count=2,
        ),
        "heartbeat-chain": attrs.evolve(view, heartbeat=attrs.evolve(view.heartbeat, armed=True)),
        "drop-pending": attrs.evolve(
            view, tasks=(attrs.evolve(first, drop_pending=True), *view.tasks[1:])
        ),
    }


@pytest.mark.parametrize("invariant_id", [i for i, *_ in invariants.VIEW_INVARIANTS])
def test_each_view_invariant_catches_its_break(tmp_path: Path, invariant_id: str) -> None:
    view = sample_view(tmp_path)
    bad = broken(view)[invariant_id]
    check = {i: c for i, c, _ in invariants.VIEW_INVARIANTS}[invariant_id]
    with pytest.raises(InvariantViolation) as info:
        check(bad)
    assert info.value.invariant_id == invariant_id


def test_store_mirror_catches_a_differing_record(tmp_path: Path) -> None:
    meta = open_meta(tmp_path, check_invariants=False)
    meta.register(task(1), 5)
    stored = meta.stored_tasks()
    invariants.store_mirror(meta.view(), stored)
    ((key, _),) = stored
    with pytest.raises(InvariantViolation, match="store-mirror"):
        invariants.store_mirror(meta.view(), ((key, task(1, checkpoint_id=3)),))
    with pytest.raises(InvariantViolation, match="store-mirror"):
        invariants.store_mirror(meta.view(), ())


def test_trace_invariants_catch_bad_records() -> None:
    with pytest.raises(InvariantViolation, match="acquire-live"):
        invariants.acquire_live([TaskStatus.READY, TaskStatus.STOP])
    changes: list[StatusChange] = []
    lifecycle = TaskLifecycle(listener=lambda _lc, change: changes.append(change))
    lifecycle.handle(TaskEvent.PAUSE)
    lifecycle.resume()
    invariants.table(changes)
    with pytest.raises(InvariantViolation, match="table"):
        invariants.table([attrs.evolve(changes[0], new=TaskStatus.READY)])
    with pytest.raises(InvariantViolation, match="table"):
        invariants.table([attrs.evolve(changes[1], cause="event")])
    invariants.role([RoleChange(Role.UNINIT, RoleEvent.BECOME_LEADER, Role.LEADER)])
    with pytest.raises(InvariantViolation, match="role"):
        invariants.role([RoleChange(Role.UNINIT, RoleEvent.BECOME_LEADER, Role.FOLLOWER)])


def test_check_mode_raises_when_the_meta_breaks_an_invariant(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    meta.state.paused_count = 5  # a deliberately broken meta
    with pytest.raises(InvariantViolation, match="paused-count"):
        meta.handle_event(0x10, 1, TaskEvent.STOP)


def test_heartbeat_chain_catches_a_closing_leaders_chain_left_armed(tmp_path: Path) -> None:
    """The seed's side of M16 as a broken variant of the reference: notify_close of a leader
    that leaves its chain armed breaks heartbeat-chain; the reference's ends it, and a
    re-election ends the closing and re-arms it."""
    variant = open_meta(tmp_path / "variant",
                        semantics=Profile.only(Switch.HEARTBEAT_AFTER_NOTIFY_CLOSE))
    reference = open_meta(tmp_path / "reference")
    for meta in (variant, reference):
        meta.update_stage_role(1, True)
        meta.notify_close()
    with pytest.raises(InvariantViolation, match="role LEADER, closing, heartbeat chain armed"):
        invariants.heartbeat_chain(variant.view())
    assert reference.view().closing and not reference.view().heartbeat.armed
    invariants.check_view(reference.view())
    reference.update_stage_role(2, True)
    assert not reference.view().closing and reference.view().heartbeat.armed
    invariants.check_view(reference.view())
    variant.close()
    reference.close()
