"""The meta's role (UNINIT, LEADER, FOLLOWER), moved by one shared machine from spec/roles.toml.

Every (role, event) pair is a row, so ``apply`` never refuses; the row it returns carries the
effects (start or stop the heartbeat, send the before-close heartbeat) that the meta carries out.
A vnode's meta starts as UNINIT, an snode's (vg_id -2) as LEADER; closing returns to UNINIT.
"""

from __future__ import annotations

import attrs
from transitions import Machine

from statemeta.arguments import checked, checked_api
from statemeta.tables import ROLES, Role, RoleEvent, RoleRow

__all__ = ["ROLE_MACHINE", "ROLE_ROWS", "Role", "RoleEvent", "RoleMachine", "RoleRow", "role_row"]

ROLE_ROWS: tuple[RoleRow, ...] = ROLES.rows

_ROWS: dict[tuple[Role, RoleEvent], RoleRow] = {(r.from_role, r.event): r for r in ROLE_ROWS}


@checked
def role_row(role: Role, event: RoleEvent) -> RoleRow:
    """The row for (role, event); the table has one for every pair."""
    return _ROWS[role, event]


ROLE_MACHINE = Machine(
    model=None,
    states=Role,
    initial=ROLES.initial,
    auto_transitions=False,
    ignore_invalid_triggers=False,
    model_attribute="role",
    name="meta-role",
)
for _row in ROLE_ROWS:
    ROLE_MACHINE.add_transition(_row.event.name.lower(), _row.from_role, _row.to_role)


@checked_api
@attrs.define(eq=False)
class RoleMachine:
    """A meta's role, moved by the shared role machine."""

    role: Role = ROLES.initial

    def apply(self, event: RoleEvent) -> RoleRow:
        """Changes the role by the row for (role, event) and returns that row."""
        row = _ROWS[self.role, event]
        ROLE_MACHINE.events[event.name.lower()].trigger(self)
        return row
