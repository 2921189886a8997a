"""Breadth-first search over the reference's states: every invariant in every state, and the
shortest counterexample when one fails.

The explored system is the reference adapter, or, for a broken variant, the pair (reference,
variant) driven in lockstep and compared after every step exactly as the harness compares an
implementation (statemeta.harness.machine.compare_step): some variants break no invariant of
their own and differ only in what they return or show. The meta runs in check mode, so every
operation (and every timer it fires) ends with the whole invariant catalogue; the explorer adds
the ``reopen`` invariant after each close or crash and reopen.

Each state is expanded once, on forks of its adapters (fork.py); a successor whose canonical
key (state.py) was seen before is dropped. Levels are explored in order, so the first failure
found is at the least depth: the counterexample is a shortest one. Its results are recomputed
by replaying it on fresh adapters, which also checks that it fails again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence

import attrs

from statemeta.codec import decode_task, decode_task_key
from statemeta.errors import InvariantViolation, StatemetaError
from statemeta.explore.bounds import BUDGETED, Bounds
from statemeta.explore.fork import fork
from statemeta.explore.state import StateAbstraction
from statemeta.harness.normalize import Json
from statemeta.harness.operations import Op
from statemeta.harness.reference import Coverage, ReferenceAdapter
from statemeta.invariants import reopen
from statemeta.lifecycle import TaskStatus
from statemeta.meta.core import TASK_TABLE
from statemeta.roles import Role, RoleEvent, role_row
from statemeta.store import FaultyStore, MemoryState, MemoryStore, Store

Budgets = tuple[tuple[str, int], ...]
Progress = Callable[["Stats"], None]
_REOPENS = frozenset({"close_reopen", "crash_reopen"})
PROGRESS_EVERY = 0.5
"""Seconds between two calls of the progress callback."""


@attrs.define(slots=True)
class Stats:
    """How far a search got (updated as it runs; the progress callback sees it)."""

    states: int = 1
    transitions: int = 0
    depth: int = 0
    """The deepest level whose states have all been found."""
    seconds: float = 0.0
    per_depth: list[int] = attrs.field(factory=lambda: [1])
    """Distinct states first found at each depth."""

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


@attrs.frozen
class Step:
    op: Op
    reference: dict[str, Json]
    variant: dict[str, Json] | None


@attrs.frozen
class Counterexample:
    """A shortest failing path from the empty meta, with what each side returned."""

    steps: tuple[Step, ...]
    kind: str
    """invariant (the reference or the variant broke one), result or view (they differ),
    crash (an exception that is no statemeta error)."""
    detail: str
    reference_view: dict[str, Json] | None = None
    variant_view: dict[str, Json] | None = None

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(s.op for s in self.steps)


@attrs.define
class Exploration:
    """What one search found."""

    bounds: Bounds
    variant: str | None
    symmetry: bool
    stats: Stats
    complete: bool
    """Every state within the bounds was visited (no failure stopped the search)."""
    counterexample: Counterexample | None
    coverage: Coverage
    statuses: frozenset[TaskStatus]
    """Task statuses seen in some state."""
    leaves: tuple[tuple[Op, ...], ...] = ()
    """With keep_paths: a path to each state that is no other state's parent (together they
    pass through every state found)."""


class _Failure(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


System = list["ForkableReference"]
"""The reference, and the variant when one is explored."""


def explore(
    bounds: Bounds,
    *,
    variant: str | None = None,
    symmetry: bool = True,
    keep_paths: bool = False,
    progress: Progress | None = None,
) -> Exploration:
    """Visit every state reachable within ``bounds``; stop at the first failure."""
    started = time.perf_counter()
    abstraction = StateAbstraction(bounds.slots, symmetry=symmetry)
    alphabet = [(op, BUDGETED.get(op.name)) for op in bounds.alphabet()]
    root = _start(bounds.level, variant)
    coverage = root[0].coverage
    budgets = bounds.budgets()
    root_key = _key(abstraction, root, budgets)
    parents: dict[Hashable, tuple[Hashable, Op] | None] = {root_key: None}
    has_child: set[Hashable] = set()
    stats = Stats()
    frontier: list[tuple[Hashable, System, Budgets]] = [(root_key, root, budgets)]
    found: Counterexample | None = None
    shown = started
    for depth in range(bounds.max_depth):
        last = depth + 1 == bounds.max_depth
        next_frontier: list[tuple[Hashable, System, Budgets]] = []
        new_states = 0
        for key, system, left in frontier:
            work: System | None = None
            for op, budget in alphabet:
                child_left: Budgets | None = left
                if budget is not None:
                    child_left = _spend(left, budget)
                if child_left is None:
                    continue
                if work is None:
                    work = fork(system, share=(coverage,))
                try:
                    _step(work, op, [])
                except _Failure as failure:
                    found = _counterexample(bounds, variant, [*_path(parents, key), op], failure)
                    break
                stats.transitions += 1
                child = _key(abstraction, work, child_left)
                if child == key and child_left == left:
                    continue  # the same state: keep the fork for the next operation
                if child not in parents:
                    parents[child] = (key, op)
                    has_child.add(key)
                    new_states += 1
                    stats.states += 1
                    if not last:
                        next_frontier.append((child, work, child_left))
                work = None
            if found is not None:
                break
            if progress is not None and time.perf_counter() - shown > PROGRESS_EVERY:
                shown = time.perf_counter()
                stats.seconds = shown - started
                progress(stats)
        stats.per_depth.append(new_states)
        if found is not None:
            break
        stats.depth = depth + 1
        frontier = next_frontier
        if not frontier:
            break
    stats.seconds = time.perf_counter() - started
    leaves: tuple[tuple[Op, ...], ...] = ()
    if keep_paths and found is None:
        leaves = tuple(tuple(_path(parents, k)) for k in parents if k not in has_child)
    for adapter in root:
        adapter.stop()
    return Exploration(
        bounds=bounds,
        variant=variant,
        symmetry=symmetry,
        stats=stats,
        complete=found is None,
        counterexample=found,
        coverage=coverage,
        statuses=frozenset(abstraction.statuses),
        leaves=leaves,
    )


class ForkableReference(ReferenceAdapter):
    """The reference adapter on a private memory store per instance, so that a fork of it is
    independent: a reopen opens a new store over the committed state kept here, not the
    process-wide registry entry of its path, which every fork would share."""

    def start(self, level: int) -> None:
        self._committed = MemoryState()
        super().start(level)

    def _reopen(self, *, crash: bool) -> object:
        inner = self.store.inner
        assert isinstance(inner, MemoryStore)
        self._committed = inner.committed_state()
        return super()._reopen(crash=crash)

    def _store_factory(self, path: str) -> Store:
        del path
        self._store = FaultyStore(MemoryStore(self._committed))
        return self._store


def _start(level: int, variant: str | None) -> System:
    system = [ForkableReference()]
    if variant is not None:
        system.append(ForkableReference(variant))
    for adapter in system:
        adapter.start(level)
    return system


def _key(abstraction: StateAbstraction, system: System, budgets: Budgets) -> Hashable:
    if len(system) == 1:
        return abstraction.key(system[0], budgets)
    return abstraction.key(system[0], budgets), abstraction.key(system[1], None)


def _spend(budgets: Budgets, name: str) -> Budgets | None:
    out: list[tuple[str, int]] = []
    for budget, left in budgets:
        if budget == name:
            if left == 0:
                return None
            left -= 1
        out.append((budget, left))
    return tuple(out)


def _step(system: System, op: Op, results: list[dict[str, Json]]) -> None:
    """Run ``op`` on every adapter of the system, appending each result to ``results``;
    raise _Failure for anything that fails."""
    for side, adapter in zip(("reference", "variant"), system, strict=False):
        expected = _committed_ids(adapter) if op.name in _REOPENS else None
        closing = adapter.meta.role if op.name == "close_reopen" else None
        try:
            results.append(adapter.call(op))
            if closing is not None and side == "reference":
                _count_close(adapter.coverage, closing)
            if expected is not None:
                reopen(expected, adapter.meta.view())
        except InvariantViolation as violation:
            raise _Failure("invariant", f"{side}: {violation}") from violation
        except Exception as error:  # the reference must not fail in any other way
            raise _Failure("crash", f"{side}: {type(error).__name__}: {error}") from error
    if len(system) == 2:
        _compare(op, results[0], results[1], system)


def _compare(
    op: Op, reference: dict[str, Json], variant: dict[str, Json], system: System
) -> None:
    from statemeta.harness.machine import Divergence, compare_step

    try:
        compare_step(op, reference, variant, system[0].view(), system[1].view())
    except Divergence as divergence:
        raise _Failure(divergence.kind, divergence.detail) from divergence


def _count_close(coverage: Coverage, role: Role) -> None:
    """The role row a close takes: the meta's trace of it ends with the meta, unchecked."""
    row = role_row(role, RoleEvent.CLOSE)
    coverage.role_rows[row.from_role, row.event, row.to_role] += 1


def _committed_ids(adapter: ReferenceAdapter) -> list[bytes]:
    """The keys a reopen must load: the committed records, less those persisted as DROPPING."""
    inner = adapter.store.inner
    assert isinstance(inner, MemoryStore)
    keys = []
    for key, value in inner.committed_items(TASK_TABLE):
        try:
            if decode_task(value).task_status == TaskStatus.DROPPING:
                continue
            decode_task_key(key)
        except StatemetaError:
            continue
        keys.append(key)
    return keys


def _path(parents: dict[Hashable, tuple[Hashable, Op] | None], key: Hashable) -> list[Op]:
    ops: list[Op] = []
    link = parents[key]
    while link is not None:
        key, op = link
        ops.append(op)
        link = parents[key]
    ops.reverse()
    return ops


def _counterexample(
    bounds: Bounds, variant: str | None, ops: Sequence[Op], failure: _Failure
) -> Counterexample:
    """Replays ``ops`` on fresh adapters to record each side's results (and to fail again)."""
    system = _start(bounds.level, variant)
    steps: list[Step] = []
    try:
        for op in ops:
            results: list[dict[str, Json]] = []
            try:
                _step(system, op, results)
            except _Failure as again:
                reference = results[0] if results else {"error": "InvariantViolation"}
                steps.append(Step(op, reference, results[1] if len(results) > 1 else None))
                return Counterexample(tuple(steps), again.kind, again.detail, *_views(system))
            steps.append(Step(op, results[0], results[1] if variant is not None else None))
    finally:
        for adapter in system:
            adapter.stop()
    raise StatemetaError(
        f"the counterexample {list(ops)} ({failure.kind}: {failure.detail}) did not fail again "
        "when replayed on fresh adapters: the search depends on something its states forget"
    )


def _views(system: System) -> tuple[dict[str, Json] | None, dict[str, Json] | None]:
    views: list[dict[str, Json] | None] = []
    for adapter in system:
        try:
            views.append(adapter.view())
        except Exception:  # a view of a meta in a broken state may itself fail
            views.append(None)
    return views[0], views[1] if len(views) > 1 else None

