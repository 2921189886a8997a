"""The meta role machine against the reference's §2.1, transcribed by hand."""

from __future__ import annotations

import pytest

from statemeta.roles import ROLE_MACHINE, ROLE_ROWS, Role, RoleEvent, RoleMachine, role_row

L, F, U = Role.LEADER, Role.FOLLOWER, Role.UNINIT
LEAD, FOLLOW, CLOSE = RoleEvent.BECOME_LEADER, RoleEvent.BECOME_FOLLOWER, RoleEvent.CLOSE

# (role, event) -> (next role, start_heartbeat, stop_heartbeat, send_before_close)
EXPECTED = {
    (U, LEAD): (L, True, False, False),
    (U, FOLLOW): (F, False, False, False),
    (U, CLOSE): (U, False, False, False),
    (L, LEAD): (L, True, False, False),  # streamMetaStartHb at every election (§2.2)
    (L, FOLLOW): (F, False, True, True),
    (L, CLOSE): (U, False, True, False),
    (F, LEAD): (L, True, False, False),
    (F, FOLLOW): (F, False, False, False),
    (F, CLOSE): (U, False, False, False),
}


def test_values() -> None:
    assert (Role.UNINIT, Role.LEADER, Role.FOLLOWER) == (1, 2, 3)


@pytest.mark.parametrize(("role", "event"), list(EXPECTED), ids=str)
def test_every_pair_is_a_row_with_its_effects(role: Role, event: RoleEvent) -> None:
    machine = RoleMachine(role)
    row = machine.apply(event)
    assert machine.role is EXPECTED[role, event][0]
    assert (row.to_role, row.start_heartbeat, row.stop_heartbeat, row.send_before_close) == (
        EXPECTED[role, event]
    )
    assert (row.from_role, row.event) == (role, event)
    assert role_row(role, event) is row


def test_vnode_opens_uninit_and_snode_leader() -> None:
    assert RoleMachine().role is Role.UNINIT
    snode = RoleMachine(Role.LEADER)
    snode.apply(CLOSE)
    assert snode.role is Role.UNINIT


def test_elections_share_one_machine() -> None:
    metas = [RoleMachine() for _ in range(3)]
    for meta in metas:
        for event in (LEAD, FOLLOW, LEAD, CLOSE):
            meta.apply(event)
    assert ROLE_MACHINE.models == []
    assert [m.role for m in metas] == [U, U, U]
    assert len(ROLE_ROWS) == len(EXPECTED)
