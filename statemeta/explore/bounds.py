"""What the explorer enumerates: the pool slots in play, the operations, and their budgets.

The operation alphabet is the harness's (statemeta.harness.operations): every op of the level,
with every argument from its finite domain, task arguments restricted to the slots in play.
Operations that would make the state space infinite or very large are budgeted: a path may
take at most so many of them, and what is left of each budget is part of the state.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from statemeta.errors import MisuseError
from statemeta.harness.operations import OP_SPECS, TASK_POOL, Op, TaskSlot, calls_of, ops_at

PLAIN_STREAM_SLOTS = ("s1", "s3")
"""Plain stream tasks, in the order --stream-tasks takes them (s3's key sorts before s1's)."""
TRIGGER_SLOT = "s2"
FILL_HISTORY_PAIR = ("f1", "h1")
NO_DOWNSTREAM_SLOT = "t1"

BUDGETED: Mapping[str, str] = {s.name: s.budget for s in OP_SPECS.values() if s.budget}
"""Operation -> the budget each call of it spends (the ``budget`` column of the operation
table)."""


@attrs.frozen
class Bounds:
    """The bounds of one exploration (the defaults are ``statemeta verify``'s)."""

    stream_tasks: int = attrs.field(default=2, validator=attrs.validators.in_((0, 1, 2)))
    """Plain stream tasks (s1, then s3)."""
    fill_history: bool = True
    """The stream task f1 and its fill-history task h1."""
    trigger_timer: bool = False
    """The stream task s2, with a trigger timer."""
    no_downstream: bool = False
    """The task t1, with nothing downstream (its INIT completes at once)."""
    role_changes: int = 2
    start_rounds: int = 1
    reopens: int = 1
    """close_reopen and crash_reopen together."""
    faults: int = 1
    """fail_next and corrupt_record together."""
    clock_advances: int = 1
    max_depth: int = 4
    """The longest path explored (operations from the empty meta)."""

    @property
    def slots(self) -> tuple[TaskSlot, ...]:
        names = set(PLAIN_STREAM_SLOTS[: self.stream_tasks])
        if self.trigger_timer:
            names.add(TRIGGER_SLOT)
        if self.no_downstream:
            names.add(NO_DOWNSTREAM_SLOT)
        if self.fill_history:
            names.update(FILL_HISTORY_PAIR)
        if not names:
            raise MisuseError("the bounds put no task in play")
        return tuple(s for s in TASK_POOL if s.name in names)

    @property
    def level(self) -> int:
        """3 (persistence) when reopens or faults are in play, else 2."""
        return 3 if self.reopens or self.faults else 2

    def budgets(self) -> tuple[tuple[str, int], ...]:
        """The starting budgets, by name (sorted)."""
        return tuple(sorted((name, getattr(self, name)) for name in set(BUDGETED.values())))

    def alphabet(self) -> tuple[Op, ...]:
        """Every operation of the level with every argument, tasks restricted to the slots."""
        slot_names = tuple(s.name for s in self.slots)
        return tuple(op for spec in ops_at(self.level) for op in calls_of(spec, slot_names))

    def deep(self) -> Bounds:
        """``statemeta verify``'s second search: the fill-history pair alone, the same
        budgets, one operation deeper. The rows that need five operations are one stream
        task's (a checkpoint interrupted or done: four operations reach CK, the fifth applies
        the event), and the pair has one; the pair alone at depth 5 is about a third of the
        nodes of every slot at depth 5 (docs/formal-checking.md)."""
        return attrs.evolve(self, stream_tasks=0, fill_history=True, trigger_timer=False,
                            no_downstream=False, max_depth=self.max_depth + 1)

    def to_json(self) -> dict[str, int | bool | list[str]]:
        out: dict[str, int | bool | list[str]] = attrs.asdict(self)
        out["slots"] = [s.name for s in self.slots]
        return out
