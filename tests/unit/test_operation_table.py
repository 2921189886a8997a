"""The operation table (statemeta/harness/operations.py) is complete: every operation states
every column, each value is valid, and the columns that describe the reference's behaviour
(handler, commits, client handles) agree with the reference."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator
from typing import cast

import attrs
import pytest

from statemeta.errors import MisuseError, UndefinedBehaviour
from statemeta.explore.bounds import BUDGETED, Bounds
from statemeta.explore.state import StateAbstraction
from statemeta.harness import generation
from statemeta.harness.concurrent_run import CONTENDED
from statemeta.harness.coverage_model import LISTED_FAMILIES
from statemeta.harness.normalize import Json
from statemeta.harness.operations import (
    DOMAINS,
    LEVELS,
    OP_SPECS,
    TASK_POOL,
    Op,
    OpSpec,
    Param,
    Precondition,
    ops_at,
    slot_of,
)
from statemeta.harness.reference import ReferenceAdapter
from statemeta.semantics import Semantics

NOT_BUDGETS = frozenset({"stream_tasks", "max_depth"})
"""The int fields of Bounds that shape the slots and the depth; the others are budgets."""
BUDGETS = frozenset(
    f.name for f in attrs.fields(Bounds) if f.type in (int, "int") and f.name not in NOT_BUDGETS
)
"""The Bounds fields a call can spend (the explorer's budgets)."""


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def _is_weight(value: object) -> bool:
    return type(value) is int and value >= 1


def _valid_precondition(s: OpSpec) -> bool:
    """None, or a rule over the task the operation names."""
    if s.precondition is None:
        return True
    return isinstance(s.precondition, Precondition) and "task" in {p.name for p in s.params}


def _valid_params(s: OpSpec) -> bool:
    names = [p.name for p in s.params]
    return (
        names == sorted(set(names))
        and all(p.kind in DOMAINS and p.domain for p in s.params)
        and all(p.kind == "task" for p in s.params if p.name == "task")
    )


def _unique_rank(s: OpSpec) -> bool:
    """An int no other operation has (the walks' ranks are checked where they are drawn)."""
    others = [o.draw_rank for o in OP_SPECS.values() if o.name != s.name]
    return type(s.draw_rank) is int and s.draw_rank not in others


COLUMNS: dict[str, Callable[[OpSpec], bool]] = {
    "name": lambda s: OP_SPECS.get(s.name) is s,
    "level": lambda s: s.level in LEVELS,
    "doc": lambda s: isinstance(s.doc, str) and bool(s.doc.strip()),
    "params": _valid_params,
    "handler": lambda s: isinstance(s.handler, str)
    and callable(getattr(ReferenceAdapter, s.handler, None)),
    "precondition": _valid_precondition,
    "outcome": lambda s: _is_bool(s.outcome),
    "weight": lambda s: _is_weight(s.weight),
    "draw_rank": _unique_rank,
    "budget": lambda s: s.budget is None or s.budget in BUDGETS,
    "commits": lambda s: _is_bool(s.commits) and (s.level >= 2 or not s.commits),
    "reopens": lambda s: _is_bool(s.reopens) and (s.level == 3 or not s.reopens),
    "concurrent_weight": lambda s: _is_weight(s.concurrent_weight),
    "client_handles": lambda s: _is_bool(s.client_handles)
    and (not s.client_handles or "task" in {p.name for p in s.params}),
    "unmapped_result": lambda s: s.unmapped_result is None
    or (s.level >= 2 and "task" in {p.name for p in s.params}
        and isinstance(s.unmapped_result, tuple) and len(s.unmapped_result) == 2
        and s.unmapped_result[0] in ("ok", "error")),
    "coverage": lambda s: isinstance(s.coverage, tuple)
    and len(set(s.coverage)) == len(s.coverage) and set(s.coverage) <= LISTED_FAMILIES,
}
"""What a valid value of each column is."""

BROKEN: dict[str, object] = {
    "name": "no_such_op",
    "level": 4,
    "doc": " ",
    "params": (Param("task", "bool"),),
    "handler": "do_nothing",
    "precondition": "the task is mapped",
    "outcome": None,
    "weight": 0,
    "draw_rank": None,
    "budget": "no_such_budget",
    "commits": None,
    "reopens": None,
    "concurrent_weight": 0,
    "client_handles": None,
    "unmapped_result": ("refused", "UnknownTaskError"),
    "coverage": ("row",),
}
"""A value each column's check must refuse."""

FIELDS = tuple(f.name for f in attrs.fields(OpSpec))


def test_every_column_has_a_check_and_a_broken_value() -> None:
    assert set(COLUMNS) == set(FIELDS) == set(BROKEN)


@pytest.mark.parametrize("column", FIELDS)
def test_every_operation_has_a_valid_value_in_the_column(column: str) -> None:
    lacking = [s.name for s in OP_SPECS.values() if not COLUMNS[column](s)]
    assert lacking == [], f"operations lacking a valid {column}"


@pytest.mark.parametrize("column", FIELDS)
def test_a_row_without_the_column_does_not_construct(column: str) -> None:
    """No column has a default: a row must state every one (a missing one fails at import)."""
    spec = OP_SPECS["register"]
    values = {f: getattr(spec, f) for f in FIELDS if f != column}
    with pytest.raises(TypeError, match=column):
        OpSpec(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("column", FIELDS)
def test_each_check_refuses_a_broken_value(column: str) -> None:
    for spec in OP_SPECS.values():
        broken = attrs.evolve(spec, **{column: BROKEN[column]})
        assert not COLUMNS[column](broken), (spec.name, column)


# -- the derived views ------------------------------------------------------------------------


def test_the_views_are_the_columns() -> None:
    specs = OP_SPECS.values()
    assert {n: w for n, w in generation.FREQUENCY.items() if n in OP_SPECS} == {
        s.name: s.weight for s in specs
    }
    assert {s.name: s.budget for s in specs if s.budget is not None} == BUDGETED
    assert {s.name: s.concurrent_weight for s in specs if s.concurrent_weight > 1} == CONTENDED
    ranked = sorted(
        [(s.draw_rank, s.name) for s in specs]
        + [(w.draw_rank, n) for n, w in generation._WALKS.items()]
    )
    assert list(generation.FREQUENCY) == [name for _, name in ranked]


def test_every_budget_is_spent_by_some_operation() -> None:
    assert set(BUDGETED.values()) == BUDGETS


def test_a_shared_draw_rank_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    walk = attrs.evolve(generation._WALKS["role_walk"], draw_rank=OP_SPECS["reset"].draw_rank)
    monkeypatch.setattr(generation, "_WALKS", {**generation._WALKS, "role_walk": walk})
    with pytest.raises(MisuseError, match="draw ranks"):
        generation._frequency()


# -- the handler column ---------------------------------------------------------------------


def test_every_handler_of_the_reference_is_a_row_s() -> None:
    """No ``do_*`` method of the reference runs an operation the table does not have."""
    methods = {name for name in dir(ReferenceAdapter) if name.startswith("do_")}
    assert methods == {s.handler for s in OP_SPECS.values()}


# -- the commits column ---------------------------------------------------------------------

_COMMITTING_PATH = (
    Op.of("register", task="s1"),
    Op.of("start_task_timer", task="s1"),
    Op.of("unregister", task="s1"),  # deferred: its task timer is active (DROPPING)
    Op.of("save_task", task="s1"),  # DROPPING, written into the open transaction
    Op.of("commit"),  # stored as DROPPING: the next load removes it, and commits
    Op.of("clear"),
)
"""Along it, each committing operation commits in some state: register, unregister (from
the second state on), commit, advance_clock (the deferred removal), the reopens and load_all
(the stored DROPPING record removed)."""


def _alphabet(level: int) -> tuple[Op, ...]:
    slots = tuple(s.name for s in TASK_POOL)
    ops: list[Op] = []
    for spec in ops_at(level):
        domains = [slots if p.kind == "task" else p.domain for p in spec.params]
        for values in itertools.product(*domains):
            ops.append(Op.of(spec.name, **dict(zip((p.name for p in spec.params), values,
                                                   strict=True))))
    return tuple(ops)


ALPHABET = _alphabet(3)


def _path_states(semantics: Semantics) -> Iterator[ReferenceAdapter]:
    reference = ReferenceAdapter(check_invariants=False, semantics=semantics)
    reference.start(3)
    yield reference.fork()
    for op in _COMMITTING_PATH:
        assert "ok" in reference.call(op), op
        yield reference.fork()


def _walk_states(semantics: Semantics, seed: int, steps: int) -> Iterator[ReferenceAdapter]:
    """States of a random walk over the alphabet (faults, timers and reopens included)."""
    rng = random.Random(seed)
    reference = ReferenceAdapter(check_invariants=False, semantics=semantics)
    reference.start(3)
    for _ in range(steps):
        op = rng.choice(ALPHABET)
        if reference.precondition_broken(op) is None:
            after = reference.fork()
            if _called(after, op) is not None:  # else the seed's process is gone: go on before
                reference = after
                yield reference.fork()


def _called(adapter: ReferenceAdapter, op: Op) -> dict[str, Json] | None:
    """``op``'s result, or None where the seed reference hits undefined behaviour in it."""
    try:
        return adapter.call(op)
    except UndefinedBehaviour:
        return None


def _commits(state: ReferenceAdapter, op: Op) -> bool:
    """``op`` calls commit on the meta's store (a reopen: on the store it opens)."""
    adapter = state.fork()
    store = adapter.store
    before = store.calls.get("commit", 0)
    if _called(adapter, op) is None:
        return False  # the process is gone before any commit of its own
    base = before if adapter.store is store else 0
    return adapter.store.calls.get("commit", 0) > base


def _committing(states: Iterator[ReferenceAdapter], ops: tuple[Op, ...]) -> set[str]:
    found: set[str] = set()
    for state in states:
        found.update(
            op.name for op in ops
            if op.name not in found and state.precondition_broken(op) is None
            and _commits(state, op)
        )
    return found


def test_the_operations_marked_commits_commit_in_some_state() -> None:
    committing = {s.name for s in OP_SPECS.values() if s.commits}
    ops = tuple(op for op in ALPHABET if op.spec.commits)
    assert _committing(_path_states(Semantics.INTENDED), ops) == committing


@pytest.mark.parametrize("semantics", list(Semantics))
def test_the_other_operations_never_commit(semantics: Semantics) -> None:
    ops = tuple(op for op in ALPHABET if not op.spec.commits)
    states = itertools.chain(_path_states(semantics), _walk_states(semantics, 19, 120))
    assert _committing(states, ops) == set()


# -- the client handles column --------------------------------------------------------------


def test_client_handles_marks_the_operations_that_use_the_caller_s_handles() -> None:
    """Read off the reference: on a state with a handle held and one given back, exactly these
    operations change the adapter's handles (reopens, which forget them all, are level 3)."""
    reference = ReferenceAdapter(check_invariants=False)
    reference.start(2)
    for op in (Op.of("register", task="s1"), Op.of("acquire", task="s1"),
               Op.of("acquire", task="s1"), Op.of("release", task="s1")):
        reference.call(op)
    changing: set[str] = set()
    for op in _alphabet(2):
        if reference.precondition_broken(op) is not None:
            continue
        adapter = reference.fork()
        adapter.call(op)
        if (adapter.handles, adapter.given_back) != (reference.handles, reference.given_back):
            changing.add(op.name)
    assert changing == {s.name for s in OP_SPECS.values() if s.client_handles}


# -- the unmapped result column -------------------------------------------------------------

_KEYS = StateAbstraction(TASK_POOL, symmetry=False)


def _breadth_states(semantics: Semantics, depth: int) -> Iterator[ReferenceAdapter]:
    """Every state within ``depth`` operations of the empty level-3 meta (each once)."""
    reference = ReferenceAdapter(check_invariants=False, semantics=semantics)
    reference.start(3)
    frontier, keys = [reference], {_KEYS.key(reference)}
    for _ in range(depth):
        found: list[ReferenceAdapter] = []
        for state in frontier:
            yield state
            for op in ALPHABET:
                if state.precondition_broken(op) is None:
                    after = state.fork()
                    if _called(after, op) is None:
                        continue
                    key = _KEYS.key(after)
                    if key not in keys:
                        keys.add(key)
                        found.append(after)
        frontier = found
    yield from frontier


def _false_claims(specs: dict[str, OpSpec], states: Iterable[ReferenceAdapter]) -> set[str]:
    """The operations whose ``unmapped_result`` some state contradicts: called there on a task
    the meta does not map, it returned something else or changed the state."""
    claims = [op for op in ALPHABET if specs[op.name].unmapped_result is not None]
    false: set[str] = set()
    for state in states:
        key = _KEYS.key(state)
        for op in claims:
            if op.name in false or slot_of(str(op.arg("task"))).id in state.meta.state.entries:
                continue
            kind, value = cast(tuple[str, object], specs[op.name].unmapped_result)
            after = state.fork()
            if _called(after, op) != {kind: value} or _KEYS.key(after) != key:
                false.add(op.name)
    return false


def _unmapped_states(semantics: Semantics) -> Iterator[ReferenceAdapter]:
    return itertools.chain(
        _breadth_states(semantics, 2),
        _walk_states(semantics, 19, 120),
        _walk_states(semantics, 23, 120),
    )


@pytest.mark.parametrize("semantics", list(Semantics))
def test_each_unmapped_result_holds_in_every_state_tried(semantics: Semantics) -> None:
    """The explorer does not run these calls: the claim is checked in every state within two
    operations and along two random walks with faults, timers and reopens."""
    assert _false_claims(OP_SPECS, _unmapped_states(semantics)) == set()


def test_a_false_unmapped_result_is_caught() -> None:
    """start_one of an unmapped task during a start round may record a failed start, and
    report_launch may succeed: claiming they change nothing is refuted."""
    specs = {
        **OP_SPECS,
        **{name: attrs.evolve(OP_SPECS[name], unmapped_result=("error", "UnknownTaskError"))
           for name in ("start_one", "report_launch")},
    }
    states = itertools.chain(*(_unmapped_states(semantics) for semantics in Semantics))
    assert _false_claims(specs, states) == {"start_one", "report_launch"}
