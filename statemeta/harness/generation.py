"""What the state machine draws next: the operation mix and the walks.

Theory of operation. The machine has one Hypothesis rule, ``command``, which draws a name from
``FREQUENCY`` (each operation, plus the walks, repeated by its weight) and runs it. One rule
instead of one per operation, because Hypothesis's choice among rules cannot be weighted and
is far from uniform: it favours the rules it sorts first (no-argument ones such as
all_tasks_ready ran 10x as often as update_stage_role), so a bug needing two elections and a
clock advance was never drawn.

A **walk** is a run of up to ``WALK_MAX`` operations focused on one machine, for the bugs that
need several precise operations in a row (a waiting event fired in the wrong order needs one
task taken through six lifecycle events: about 1e-5 per example when each step draws one
operation of 25, about 1e-2 along the table):

- the lifecycle walk takes one task along the rows of the lifecycle table from its current
  status (``lifecycle_moves``);
- the role walk elects, demotes and lets time pass (heartbeats);
- the round walk starts a start round and lets tasks come, go and report;
- the restart walk runs a vnode's restart (clear, load_all, start_all), then lets the tasks
  report and time (heartbeats) pass.

No operation is sent while it breaks its precondition (the ``precondition`` column of the
operation table): a drawn one is dropped, a walk's moves are filtered. Under vnode callers
(``--callers vnode``, statemeta.harness.callers) the same holds for every rule of the vnode's
call discipline (``Driver.allows``), and the lifecycle walk puts its moves between an acquire
and a release of its task, as the vnode's handlers do; under direct callers (the default)
nothing of this changes what is drawn.

Every operation of a walk is an ordinary step (the trace holds handle_event, register, ...);
Hypothesis shrinks a walk's length and moves like any other draw. Arguments are drawn from
their whole domains, with the values that make sense in the current state listed ahead
(``draw_args``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs
from hypothesis import strategies as st

from statemeta.codec import NO_RELATED_TASK
from statemeta.errors import MisuseError
from statemeta.harness.callers import Callers
from statemeta.harness.normalize import Json
from statemeta.harness.operations import (
    LEVELS,
    OP_SPECS,
    TASK_POOL,
    JsonScalar,
    Op,
    OpSpec,
    ops_at,
)
from statemeta.lifecycle import TaskEvent, TaskStatus, should_stop, transition_row
from statemeta.tables import LIFECYCLE

__all__ = ["FREQUENCY", "WALK_MAX", "Driver", "command", "lifecycle_moves", "slot_states"]

WALK_MAX = 12
"""The most operations one walk runs."""


@attrs.frozen
class _Walk:
    """A walk, drawn by name like an operation (its weight and draw rank are the walk's own
    columns; those of operations are in their rows)."""

    weight: int
    draw_rank: int
    """Its place among the operations' ``draw_rank`` values."""
    opening: tuple[str, ...] = ()
    """The operations that open the walk, in order (no arguments)."""
    moves: tuple[str, ...] = ()
    """The operations it then draws, each repeated by its weight (none: the lifecycle walk's
    moves come from the task's status, ``lifecycle_moves``)."""


_LIFECYCLE_WALK = "lifecycle_walk"
_WALKS: Mapping[str, _Walk] = {
    _LIFECYCLE_WALK: _Walk(12, 30),
    "round_walk": _Walk(
        2, 200, ("start_all",), ("register", "unregister", "start_one") + ("report_launch",) * 2
    ),
    "restart_walk": _Walk(
        1, 260, ("clear", "load_all", "start_all"),
        ("complete_event", "report_launch", "advance_clock", "update_stage_role"),
    ),
    "role_walk": _Walk(2, 290, (), ("update_stage_role",) * 2 + ("advance_clock",)),
}


def _frequency() -> dict[str, int]:
    """Every operation and walk by draw rank, with its weight (MisuseError on a shared rank
    or a walk over an operation that does not exist)."""
    ranked = sorted(
        [(s.draw_rank, s.name, s.weight) for s in OP_SPECS.values()]
        + [(w.draw_rank, name, w.weight) for name, w in _WALKS.items()]
    )
    ranks = [rank for rank, _, _ in ranked]
    if len(set(ranks)) != len(ranks):
        shared = sorted({r for r in ranks if ranks.count(r) > 1})
        raise MisuseError(f"draw ranks {shared} are shared by several operations or walks")
    for name, walk in _WALKS.items():
        unknown = {*walk.opening, *walk.moves} - OP_SPECS.keys()
        if unknown:
            raise MisuseError(f"{name} runs unknown operations {sorted(unknown)}")
    return {name: weight for _, name, weight in ranked}


FREQUENCY: Mapping[str, int] = _frequency()
"""How often each name is drawn, relative to the others of its level (a level draws the
walks whose operations it has), in draw order: each operation's ``weight`` column and the
walks' own, ordered by ``draw_rank``. The weights favour what builds state: walks, registers,
saves, commits, reopens and faults."""

_LIFECYCLE_OPS = {
    1: ("handle", "complete", "restore", None),  # the lifecycles alone: no save
    2: ("handle_event", "complete_event", "resume", "save_task"),
}
"""A lifecycle walk's operations: handle an event, complete it, resume, save."""

_SLOT_NAMES = tuple(s.name for s in TASK_POOL)
_EVENTS = {e.name.lower(): e for e in TaskEvent}


class Driver(Protocol):
    """What generation needs of the machine: its level, the reference's task states and a
    way to run one operation (checked and recorded)."""

    @property
    def level(self) -> int: ...

    def task_states(self) -> dict[str, dict[str, Json]]:
        """The reference's ``slot_states`` now."""

    def step(self, op: Op) -> None: ...

    def allows(self, op: Op) -> bool:
        """``op`` breaks no precondition of its OpSpec in the reference's state now, nor,
        under ``Callers.VNODE``, a rule of the vnode's call discipline."""

    @property
    def callers(self) -> Callers:
        """Who calls the meta (statemeta.harness.callers)."""

    def room(self) -> int | None:
        """How many more operations this example may run (None: no bound)."""


def slot_states(view: dict[str, Json], level: int) -> dict[str, dict[str, Json]]:
    """Each mapped pool slot's task in a view, by slot name (level 1: every slot)."""
    tasks = view["tasks"]
    if level == 1:
        return {t["slot"]: t for t in tasks}
    by_id = {(t["id"][0], t["id"][1]): t for t in tasks}
    return {
        s.name: by_id[s.id.stream_id, s.id.task_id]
        for s in TASK_POOL
        if (s.id.stream_id, s.id.task_id) in by_id
    }


def command(driver: Driver, data: st.DataObject) -> None:
    """The machine's one rule: a name drawn by ``FREQUENCY``, run (nothing once the example
    has run the operations its ``room`` allows: a walk stops there too)."""
    if not _has_room(driver):
        return
    name = data.draw(st.sampled_from(_CHOICES[driver.level]), "op")
    if name == _LIFECYCLE_WALK:
        _lifecycle_walk(driver, data)
    elif name in _WALKS:
        _walk(driver, _WALKS[name], data)
    else:
        _run(driver, name, data)


def _run(driver: Driver, name: str, data: st.DataObject) -> None:
    op = Op.of(name, **draw_args(driver, OP_SPECS[name], data))
    if driver.allows(op):
        driver.step(op)


def _has_room(driver: Driver) -> bool:
    room = driver.room()
    return room is None or room > 0


def draw_args(driver: Driver, spec: OpSpec, data: st.DataObject) -> dict[str, JsonScalar]:
    """The arguments of ``spec``, each drawn from its whole domain with the values that
    make sense now listed ahead (so drawn more often, and shrunk to): a mapped task (an
    unmapped one for register), an event that moves its lifecycle on (not into STOP or
    DROPPING), its started event."""
    states = driver.task_states()
    args: dict[str, JsonScalar] = {}
    params = sorted(spec.params, key=lambda p: p.name != "task")  # the task first
    for p in params:
        ahead: list[JsonScalar] = []
        state = states.get(str(args.get("task")))
        if p.name == "task" and spec.name == "register":
            ahead = [name for name in _SLOT_NAMES if name not in states]
        elif p.name == "task":
            ahead = list(states)
        elif p.kind == "event" and state is not None:
            status = _status(state)
            ahead = [e for e in p.domain if _moves_on(status, _EVENTS[str(e)])]
        elif p.kind == "two_phase_event" and state is not None and state["active"]:
            ahead = [state["active"]]
        args[p.name] = data.draw(st.sampled_from(ahead * 3 + list(p.domain)), p.name)
    return args


def _walk(driver: Driver, walk: _Walk, data: st.DataObject) -> None:
    for name in walk.opening:
        if not _has_room(driver):
            return
        op = Op.of(name)
        if driver.allows(op):
            driver.step(op)
    for _ in range(data.draw(st.integers(1, WALK_MAX), "walk length")):
        if not _has_room(driver):
            return
        _run(driver, data.draw(st.sampled_from(walk.moves), "move"), data)


def _lifecycle_walk(driver: Driver, data: st.DataObject) -> None:
    """One task (a mapped one not stopping if there is one; else a register first) taken
    through ``lifecycle_moves`` from its current status. A stream task with a fill-history
    task is drawn 3 times as often: only there can every row be taken (HALT's precondition)."""
    states = driver.task_states()
    names = [n for n, t in states.items() if not should_stop(_status(t))] or list(states)
    if names:
        name = data.draw(st.sampled_from(_favour_linked(names)), "walk task")
    else:
        name = data.draw(st.sampled_from(_favour_linked(_SLOT_NAMES)), "walk task")
        register = Op.of("register", task=name)
        if not driver.allows(register):
            return
        driver.step(register)
    bracket = driver.callers is Callers.VNODE and driver.level > 1
    if bracket:  # the vnode's handlers acquire a task before its events and release it after
        _step_if_allowed(driver, Op.of("acquire", task=name))
    _lifecycle_moves(driver, data, name)
    if bracket:
        _step_if_allowed(driver, Op.of("release", task=name))


def _step_if_allowed(driver: Driver, op: Op) -> None:
    if _has_room(driver) and driver.allows(op):
        driver.step(op)


def _lifecycle_moves(driver: Driver, data: st.DataObject, name: str) -> None:
    ops = _LIFECYCLE_OPS[min(driver.level, 2)]
    for _ in range(data.draw(st.integers(1, WALK_MAX), "walk length")):
        task = driver.task_states().get(name)
        if task is None or not _has_room(driver):  # removed on the way, or the example is full
            return
        moves = [
            op for op in (
                Op.of(name_, task=name, **dict(args))
                for name_, args in lifecycle_moves(_status(task), task["active"], ops)
            )
            if driver.allows(op)
        ]
        if not moves:
            return
        driver.step(data.draw(st.sampled_from(moves), "move"))


def _favour_linked(names: Sequence[str]) -> list[str]:
    return [n for n in names for _ in range(3 if n in _LINKED else 1)]


_LINKED = frozenset(s.name for s in TASK_POOL if s.record.h_task_id != NO_RELATED_TASK)
"""The pool's stream tasks with a fill-history task."""

_Move = tuple[str, tuple[tuple[str, JsonScalar], ...]]
"""An operation and its arguments other than the task."""


def lifecycle_moves(
    status: TaskStatus, active: Json, ops: tuple[str | None, ...]
) -> list[_Move]:
    """A lifecycle walk's moves from ``status``, each listed as often as it should be drawn:
    a row of the table that moves on 3 times, a row into STOP or DROPPING once, completing a
    started transition 12 times (about half the moves), a resume (from PAUSE or HALT) 3
    times, a save once."""
    handle, complete, resume, save = ops
    assert handle is not None and complete is not None and resume is not None
    moves: list[_Move] = []
    for event in TaskEvent:
        row = transition_row(status, event)
        if row is not None:
            move = (handle, (("event", event.name.lower()),))
            moves += [move] * (1 if should_stop(row.to_status) else 3)
    if active:
        moves += [(complete, (("event", str(active)),))] * 12
    if status in LIFECYCLE.resumable:
        moves += [(resume, ())] * 3
    if save is not None:
        moves.append((save, ()))
    return moves


def _status(task: dict[str, Json]) -> TaskStatus:
    return TaskStatus[str(task["status"]).upper()]


def _moves_on(status: TaskStatus, event: TaskEvent) -> bool:
    row = transition_row(status, event)
    return row is not None and not should_stop(row.to_status)


def _choices(level: int) -> tuple[str, ...]:
    """Each name of ``level`` repeated by its weight, in draw order."""
    ops = {spec.name for spec in ops_at(level)}
    walks = {name for name, walk in _WALKS.items() if {*walk.opening, *walk.moves} <= ops}
    names = ops | walks
    return tuple(n for n, weight in FREQUENCY.items() if n in names for _ in range(weight))


_CHOICES = {level: _choices(level) for level in LEVELS}
