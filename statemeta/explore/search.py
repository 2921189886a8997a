"""Breadth-first search over the reference's states: every invariant in every state, and the
shortest counterexample when one fails (or, with ``all_violations``, every distinct one).

The explored system is the reference adapter, or, for a broken variant, the pair (reference,
variant) driven in lockstep and compared after every step exactly as the harness compares an
implementation (statemeta.harness.machine.compare_step): some variants break no invariant of
their own and differ only in what they return or show. The meta's operations end with the
trace invariants (what the operation did; timer callbacks with the whole catalogue), the
explorer checks the state invariants once per distinct state (their verdict is a function of
the key: docs/formal-checking.md) and the ``reopen`` invariant after each close or crash and
reopen.

Each state is expanded once, each operation on a fork of its adapters (a copy of plain
data: ``ReferenceAdapter.fork``); a successor whose canonical key (state.py) was seen before
is dropped, and an operation on a twin slot is not run (its successor mirrors the earlier
slot's). Levels are explored in order, so the first failure found is at the least depth: the
counterexample is a shortest one. Its results are recomputed by replaying it on fresh adapters
that check everything after every operation, which also checks that it fails again. Large
levels may be expanded by forked worker processes, or on a cluster (cluster.py: the frontier,
partitioned by state fingerprint, shipped as paths); the parent merges what they found in the
serial order.

With ``all_violations`` the search does not stop at a failure: a violating state is neither
kept nor expanded (a trace through it would show two faults at once), the search goes on, and
the first failure of each (invariant, operation) pair in the serial order, a shortest one by
the same argument, becomes a ``Violation``. The seed's defects are collected this way. (The
pair is the search's, which checks the state invariants after the operation; the replay
checks the whole catalogue inside it and may name another invariant first, e.g. a variant's
refcount where the search saw the results differ: a violation is listed under the replay's
pair, once.) The seed's undefined behaviour (statemeta.errors.UndefinedBehaviour) is a failure
of kind ``undefined-behaviour``, named after its divergence row (``undefined-behaviour-U2``).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import multiprocessing
import os
import signal
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from typing import Protocol, TypeVar, cast

import attrs

from statemeta.codec import TaskId, decode_task, decode_task_key
from statemeta.errors import InvariantViolation, StatemetaError, UndefinedBehaviour
from statemeta.explore.bounds import BUDGETED, Bounds
from statemeta.explore.state import Fingerprint, StateAbstraction, fingerprint
from statemeta.harness.callers import Callers
from statemeta.harness.failure import Failure, Step
from statemeta.harness.keeper import die_with_parent
from statemeta.harness.normalize import Json
from statemeta.harness.operations import REOPENS, Op, slot_of
from statemeta.harness.reference import Coverage, ReferenceAdapter
from statemeta.interrupts import raise_if_interrupted
from statemeta.invariants import VIEW_INVARIANTS, reopen, store_mirror
from statemeta.lifecycle import TaskStatus
from statemeta.meta.core import TASK_TABLE
from statemeta.meta.launch import LaunchRetry
from statemeta.meta.persist import dropped_at_load
from statemeta.roles import Role, RoleEvent
from statemeta.semantics import Semantics
from statemeta.store import MemoryStore
from statemeta.tables import TaskEvent, TransitionRow

Budgets = tuple[tuple[str, int], ...]
Progress = Callable[["Stats"], None]
PROGRESS_EVERY = 0.5
"""Seconds between two calls of the progress callback."""
_In = TypeVar("_In")
_Out = TypeVar("_Out")


class Executor(Protocol):
    """Where large levels are expanded when not in forked processes: a cluster
    (statemeta.explore.cluster). The functions and items it is given are plain data."""

    @property
    def workers(self) -> int: ...

    @property
    def address(self) -> str: ...

    def map(self, function: Callable[[_In], _Out], items: Iterable[_In]) -> list[_Out]:
        """``function`` of each item, elsewhere, in the items' order."""
        ...


@attrs.define(slots=True)
class Stats:
    """How far a search got (updated as it runs; the progress callback sees it). Two are
    equal when the searches found the same: the times are not compared."""

    states: int = 1
    """Nodes explored: distinct states, each with the budgets left on the first path found to
    it, less the nodes subsumed (``Covered``)."""
    transitions: int = 0
    depth: int = 0
    """The deepest level whose states have all been found."""
    seconds: float = attrs.field(default=0.0, eq=False)
    per_depth: list[int] = attrs.field(factory=lambda: [1])
    """Distinct states first found at each depth."""
    mirrored: int = 0
    """Transitions not run because they mirror one that was: the operation names a twin slot
    (interchangeable with an earlier slot of its class, and in the same state), so its
    successor is a relabelling of the earlier slot's (docs/formal-checking.md)."""
    refused: int = 0
    """Transitions of the reference alone not run because the operation names a task the meta
    does not map and the operation table says it changes nothing there (``unmapped_result``):
    each would lead back to its state."""
    step_seconds: float = attrs.field(default=0.0, eq=False)
    """Time spent running the transitions' operations on the adapters (summed over worker
    processes; a worker's replays of the paths to its states are not counted): the floor under
    ``seconds`` that no change to the search can lower (docs/formal-checking.md, Throughput)."""

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


@attrs.frozen
class Counterexample:
    """A shortest failing path from the empty meta: its steps (the variant's results as the
    steps' ``sut``) and its failure (the variant's view as ``sut_view``; no ``at``)."""

    steps: tuple[Step, ...]
    failure: Failure

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(s.op for s in self.steps)

    @property
    def kind(self) -> str:
        """invariant (the reference or the variant broke one), result or view (they differ),
        crash (an exception that is no statemeta error)."""
        return self.failure.kind

    @property
    def detail(self) -> str:
        return self.failure.detail

    @property
    def reference_view(self) -> dict[str, Json] | None:
        return self.failure.reference_view

    @property
    def variant_view(self) -> dict[str, Json] | None:
        return self.failure.sut_view


ROOT_OPERATION = "start"
"""The operation a violation names when the empty meta itself breaks an invariant."""


@attrs.frozen
class Violation:
    """One distinct failure: an invariant broken by an operation, with a shortest trace."""

    invariant: str
    """The broken invariant's id (spec/invariants.md) as the replay on fresh adapters that
    check everything after every operation reports it (as its trace file does); with a
    variant also ``result`` or ``view`` (the two sides differ); ``crash`` for an exception
    that is no statemeta error."""
    counterexample: Counterexample

    @property
    def operation(self) -> str:
        ops = self.counterexample.ops
        return ops[-1].name if ops else ROOT_OPERATION


@attrs.define
class Exploration:
    """What one search found."""

    bounds: Bounds
    variant: str | None
    symmetry: bool
    stats: Stats
    complete: bool
    """Every state within the bounds was visited (no failure stopped the search; with
    all_violations, violating states are not expanded and the search is complete)."""
    counterexample: Counterexample | None
    """The first failure found: a shortest one."""
    coverage: Coverage
    statuses: frozenset[TaskStatus]
    """Task statuses seen in some state."""
    leaves: tuple[tuple[Op, ...], ...] = ()
    """With keep_paths: a path to each state that is no other state's parent (together they
    pass through every state found)."""
    workers: int = 1
    """Processes that expanded the large levels."""
    cluster: str | None = None
    """The address of the cluster that expanded them, if one did."""
    semantics: Semantics = Semantics.INTENDED
    """The reference's semantics (and the variant's)."""
    violations: tuple[Violation, ...] = ()
    """Each distinct failure, in the order found (shortest first); without all_violations,
    the one that stopped the search."""
    all_violations: bool = False
    class_paths: dict[str, tuple[Op, ...]] = attrs.field(factory=dict)
    """With ``classes``: each class of behaviour (statemeta.harness.coverage_model) reached,
    with the first path that reaches it in the serial order (a shortest one)."""
    callers: Callers = Callers.DIRECT
    """Who called the meta: with ``Callers.VNODE`` only the calls the vnode's callers make
    (statemeta.harness.callers) were run."""


class _Failure(Exception):
    """A step or a state check failed: what failed (the harness's ``Failure``, without the
    views a replay adds) and the invariant (or failure kind) that names it."""

    def __init__(self, kind: str, detail: str, invariant: str) -> None:
        super().__init__(detail)
        self.failure = Failure(kind, detail)
        self.invariant = invariant


@attrs.frozen
class _Found:
    """A failure an expansion met (plain data: workers send it to the parent)."""

    position: int
    """Its state's place in the frontier."""
    op_index: int
    failure: Failure
    invariant: str


Parents = dict[Fingerprint, tuple[Fingerprint, Op] | None]
"""The seen set: each node found (a state with the budgets left: ``_node``), by its
fingerprint, with its parent's and the operation that found it (a path is read back through
it)."""
Covered = dict[Fingerprint, list["Budgets"]]
"""Budget subsumption: each state explored (its key's fingerprint; the key holds no budgets)
with the budgets left at each node explored in it. A node whose budgets are each at most
those of a node explored in the same state at the same or a lesser depth is subsumed: every
path from it is a path from that node, within the bounds (docs/formal-checking.md)."""
System = list["ForkableReference"]
"""The reference, and the variant when one is explored."""
_Alphabet = list[tuple[Op, str | None, str | None, bool, TaskId | None]]
"""Each operation, the budget it spends, the slot it names, whether it has a precondition
(the operation table's column: never run where the reference says it is broken), and the
id of its task if it changes nothing where that task is not mapped (``unmapped_result``)."""


@attrs.frozen
class _Visit:
    """A state to expand."""

    key: Hashable
    fingerprint: Fingerprint
    """The node's: its state's with the budgets left (``_node``)."""
    state: Fingerprint
    """Its key's."""
    left: Budgets
    """The budgets left."""
    twins: frozenset[str]
    system: System | None
    """Its adapters; None after a parallel level (a worker rebuilds them from the path)."""


@attrs.frozen
class _Child:
    """A successor first found by one expansion (no earlier level had it)."""

    position: int
    """Its parent's place in the frontier."""
    op_index: int
    key: Hashable
    fingerprint: Fingerprint
    state: Fingerprint
    left: Budgets
    twins: frozenset[str]
    system: System | None


@attrs.define
class _Expansion:
    """What expanding some states of a level found, in the serial search's order."""

    start: int
    """The frontier position of the first state expanded."""
    found: list[_Child] = attrs.field(factory=list)
    failures: list[_Found] = attrs.field(factory=list)
    """The failures met, in order; without all_violations the expansion stops at the first."""
    transitions: int = 0
    mirrored: int = 0
    refused: int = 0
    step_seconds: float = 0.0
    lifecycle_rows: Counter[TransitionRow] = attrs.field(factory=Counter)
    """A worker's coverage and statuses, which the parent adds to its own."""
    role_rows: Counter[tuple[Role, RoleEvent, Role]] = attrs.field(factory=Counter)
    statuses: set[TaskStatus] = attrs.field(factory=set)
    classes: Counter[str] = attrs.field(factory=Counter)
    first_classes: list[tuple[str, int, int]] = attrs.field(factory=list)
    """Classes no earlier level reached, each with the (position, op_index) of the first
    transition in this expansion that reached it."""


@attrs.define
class _Level:
    """What expanding a level reads; parallel workers inherit it (fork) and change nothing
    the parent sees."""

    abstraction: StateAbstraction
    alphabet: _Alphabet
    root: System
    """The empty meta's adapters (a rebuilt path starts from a fork of them)."""
    coverage: Coverage
    parents: Parents
    covered: Covered
    frontier: list[_Visit]
    keep_systems: bool
    """The level is not the last: its children are expanded next (in this process, on the
    adapters found; after a parallel level, on adapters rebuilt from their paths)."""
    all_violations: bool = False
    """Go on past a failure (the failing state is dropped)."""
    subsume: bool = True
    """Drop the nodes ``covered`` subsumes."""
    inherited: frozenset[str] = frozenset()
    """The invariants the empty meta breaks already (``_inherited``): not checked below it."""
    known_classes: frozenset[str] | None = None
    """With classes counted: those reached at earlier levels."""
    vnode: bool = False
    """Only the calls the vnode's callers make (``ReferenceAdapter.caller_broken``)."""


PARALLEL_MIN_STATES = 64
"""A level with fewer states to expand is expanded in process (a pool costs more)."""
_CHUNKS_PER_WORKER = 4
_SIGNAL_POLL = 0.2
"""Seconds between the main thread's wakes while workers expand a level: Python runs a
signal's handler only in the main thread, and the kernel may give SIGINT or SIGTERM to one of
the pool's threads, leaving a main thread blocked without a timeout asleep until the level
ends (issue 34, finding 8)."""
_LEVEL: _Level | None = None
"""The level the pool's workers expand (set before the pool forks them)."""


def explore(
    bounds: Bounds,
    *,
    variant: str | None = None,
    symmetry: bool = True,
    keep_paths: bool = False,
    progress: Progress | None = None,
    workers: int = 1,
    semantics: Semantics | str = Semantics.INTENDED,
    all_violations: bool = False,
    cluster: Executor | None = None,
    classes: bool = False,
    subsume: bool = True,
    callers: Callers | str = Callers.DIRECT,
) -> Exploration:
    """Visit every state reachable within ``bounds`` of the reference in ``semantics`` (and
    of ``variant`` in it); stop at the first failure, or with ``all_violations`` collect the
    first of each (invariant, operation) pair and go on.

    With ``workers`` > 1 each large level is expanded by that many processes, each over a run
    of the frontier; the parent merges what they found in the serial order, so the states,
    the paths, the counterexample and the report are the serial search's. Workers are forked
    (the ``fork`` start method: not on Windows). With ``cluster`` the large levels are expanded
    there instead, by the same function (``_expand_partition``), with the same result.

    With ``subsume`` a node is not explored where a node in the same state with as many of each
    budget left was (``Covered``): the same verdicts and counterexample lengths, fewer nodes.
    With ``classes`` the reference counts the
    classes of behaviour of every transition, and the result names a shortest path to each
    (``class_paths``: the directed corpus). With ``callers`` vnode only the calls that break
    no rule of the vnode's call discipline are run (statemeta.harness.callers)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    started = time.perf_counter()
    semantics = Semantics.of(semantics)
    callers = Callers.of(callers)
    context = _Context(bounds, variant, semantics, symmetry, all_violations, classes, subsume,
                       callers)
    abstraction, alphabet, root = _setup(context)
    start = functools.partial(_start, bounds.level, variant, semantics, callers=callers)
    coverage = root[0].coverage
    budgets = bounds.budgets()
    root_key, root_twins = _key(abstraction, root)
    root_state = fingerprint(root_key)
    root_print = _node(root_state, budgets)
    parents: Parents = {root_print: None}
    covered: Covered = {root_state: [budgets]}
    has_child: set[Fingerprint] = set()
    stats = Stats()
    frontier = [_Visit(root_key, root_print, root_state, budgets, root_twins, root)]
    violations: dict[tuple[str, str], Violation] = {}
    """By the replay's (invariant, operation)."""
    class_paths: dict[str, tuple[Op, ...]] = {}
    met: set[tuple[str, str]] = set()
    """The search's (invariant, operation) pairs replayed so far."""
    stopped = False
    inherited = _inherited(root)
    for failure in _root_failures(root, inherited):
        violation = _violation(start, [], failure.failure, inherited - {failure.invariant})
        violations[violation.invariant, violation.operation] = violation
        if not all_violations:
            stopped = True
            frontier = []
            break
    for depth in range(bounds.max_depth):
        raise_if_interrupted()
        level = _level(context, (abstraction, alphabet, root), parents, covered, frontier,
                       keep_systems=depth + 1 < bounds.max_depth,
                       known_classes=frozenset(class_paths))
        if len(frontier) < PARALLEL_MIN_STATES:
            expansions = [_expand_here(level, stats, started, progress)]
        elif cluster is not None:
            expansions = _expand_on_cluster(level, context, cluster)
        elif workers > 1:
            expansions = _expand_in_parallel(level, workers)
        else:
            expansions = [_expand_here(level, stats, started, progress)]
        failures = [f for e in expansions for f in e.failures]  # in the serial order
        first = failures[0] if failures and not all_violations else None
        next_frontier: list[_Visit] = []
        new_states = 0
        for expansion in expansions:
            if first is not None and expansion.start > first.position:
                break  # the serial search stops at the failure: it never gets here
            stats.transitions += expansion.transitions
            stats.mirrored += expansion.mirrored
            stats.refused += expansion.refused
            stats.step_seconds += expansion.step_seconds
            coverage.lifecycle_rows.update(expansion.lifecycle_rows)
            coverage.role_rows.update(expansion.role_rows)
            if coverage.classes is not None:
                coverage.classes.update(expansion.classes)
            abstraction.statuses |= expansion.statuses
            for cls, position, op_index in expansion.first_classes:
                if cls not in class_paths:
                    path = _path(parents, frontier[position].fingerprint)
                    class_paths[cls] = (*path, alphabet[op_index][0])
            for child in expansion.found:  # a failing expansion found nothing after it
                if child.fingerprint in parents:
                    continue  # an earlier run of the frontier found it
                if level.subsume and _covers(covered, child.state, child.left):
                    continue  # an earlier run of the frontier found a node that subsumes it
                covered.setdefault(child.state, []).append(child.left)
                parent = frontier[child.position].fingerprint
                parents[child.fingerprint] = (parent, alphabet[child.op_index][0])
                has_child.add(parent)
                new_states += 1
                if level.keep_systems:
                    next_frontier.append(_Visit(
                        child.key, child.fingerprint, child.state, child.left, child.twins,
                        child.system,
                    ))
        stats.states += new_states
        stats.per_depth.append(new_states)
        for failure_found in failures[:1] if first is not None else failures:
            op = alphabet[failure_found.op_index][0]
            if (failure_found.invariant, op.name) in met:
                continue  # a shortest trace of it is already kept
            met.add((failure_found.invariant, op.name))
            path = [*_path(parents, frontier[failure_found.position].fingerprint), op]
            violation = _violation(start, path, failure_found.failure, inherited)
            violations.setdefault((violation.invariant, violation.operation), violation)
        if first is not None:
            stopped = True
            break
        stats.depth = depth + 1
        if progress is not None:
            stats.seconds = time.perf_counter() - started
            progress(stats)
        frontier = next_frontier
        if not frontier:
            break
    stats.seconds = time.perf_counter() - started
    leaves: tuple[tuple[Op, ...], ...] = ()
    if keep_paths and not violations:
        leaves = tuple(tuple(_path(parents, k)) for k in parents if k not in has_child)
    for adapter in root:
        adapter.stop()
    found = tuple(violations.values())
    return Exploration(
        bounds=bounds,
        variant=variant,
        symmetry=symmetry,
        stats=stats,
        complete=not stopped,
        counterexample=found[0].counterexample if found else None,
        coverage=coverage,
        statuses=frozenset(abstraction.statuses),
        leaves=leaves,
        workers=workers if cluster is None else cluster.workers,
        cluster=None if cluster is None else cluster.address,
        semantics=semantics,
        violations=found,
        all_violations=all_violations,
        class_paths=class_paths,
        callers=callers,
    )


@attrs.frozen
class _Context:
    """What a level's expansion needs besides its frontier: plain data a cluster's worker
    receives (it builds the rest, once per context: ``_setup``)."""

    bounds: Bounds
    variant: str | None
    semantics: Semantics
    symmetry: bool
    all_violations: bool
    classes: bool = False
    subsume: bool = True
    callers: Callers = Callers.DIRECT


def _level(
    context: _Context,
    setup: tuple[StateAbstraction, _Alphabet, System],
    parents: Parents,
    covered: Covered,
    frontier: list[_Visit],
    *,
    keep_systems: bool,
    known_classes: frozenset[str] = frozenset(),
) -> _Level:
    abstraction, alphabet, root = setup
    return _Level(
        abstraction, alphabet, root, root[0].coverage, parents, covered, frontier,
        keep_systems=keep_systems, all_violations=context.all_violations,
        inherited=_inherited(root),
        subsume=context.subsume,
        known_classes=known_classes if context.classes else None,
        vnode=context.callers is Callers.VNODE,
    )


def _setup(context: _Context) -> tuple[StateAbstraction, _Alphabet, System]:
    """The state abstraction, the alphabet and the empty meta's adapters of a search."""
    bounds = context.bounds
    alphabet: _Alphabet = [
        (op, BUDGETED.get(op.name), slot, op.spec.precondition is not None,
         None if slot is None or op.spec.unmapped_result is None else slot_of(slot).id)
        for op in bounds.alphabet()
        for slot in (_task_slot(op),)
    ]
    root = _start(bounds.level, context.variant, context.semantics, deferred=True,
                  callers=context.callers)
    if context.classes:
        root[0].count_classes()
    return StateAbstraction(bounds.slots, symmetry=context.symmetry), alphabet, root


def _expand_here(
    level: _Level, stats: Stats, started: float, progress: Progress | None
) -> _Expansion:
    """The whole level in this process (with the progress display)."""
    shown = [time.perf_counter()]
    states = stats.states

    def tick(expansion: _Expansion) -> None:
        if progress is not None and time.perf_counter() - shown[0] > PROGRESS_EVERY:
            shown[0] = time.perf_counter()
            stats.seconds = shown[0] - started
            shown_stats = attrs.evolve(
                stats,
                states=states + len(expansion.found),
                transitions=stats.transitions + expansion.transitions,
            )
            progress(shown_stats)

    return _expand(level, range(len(level.frontier)), tick, keep_systems=level.keep_systems)


def _expand_in_parallel(level: _Level, workers: int) -> list[_Expansion]:
    """The level in runs of the frontier, expanded by a pool of forked workers."""
    global _LEVEL
    size = len(level.frontier)
    chunks = workers * _CHUNKS_PER_WORKER
    cuts = [size * i // chunks for i in range(chunks + 1)]
    runs = [(lo, hi) for lo, hi in itertools.pairwise(cuts) if lo < hi]
    _LEVEL = level
    others = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork"),
        initializer=_worker_started, initargs=(os.getpid(),),
    )
    try:  # a worker that dies makes result raise BrokenProcessPool: nothing waits for it
        jobs = [pool.submit(_expand_run, run) for run in runs]
        pending = set(jobs)
        while pending:  # timed: a signal the kernel gave to a pool's thread is handled here
            done, pending = wait(pending, _SIGNAL_POLL, return_when=FIRST_EXCEPTION)
            for job in done:
                job.result()  # a worker's error, at once
            raise_if_interrupted()
        return [job.result() for job in jobs]
    except BaseException:  # a worker's error, an interrupt: the others are not waited for
        for worker in set(multiprocessing.active_children()) - others:
            worker.kill()
        raise
    finally:
        pool.shutdown(cancel_futures=True)
        _LEVEL = None


def _worker_started(parent: int) -> None:
    """In a forked worker: it dies with the search's process (whatever ends that: SIGTERM,
    SIGKILL), and leaves an interrupt to it (a terminal's SIGINT reaches the whole group)."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _expand_run(run: tuple[int, int]) -> _Expansion:
    """In a forked worker: expand a run of the level it inherited."""
    assert _LEVEL is not None
    return _expand_counted(_LEVEL, range(*run), set(), {})


def _expand_counted(
    level: _Level, positions: range, seen: set[Fingerprint], covered: Covered
) -> _Expansion:
    """In a worker: rebuild the states at ``positions`` from their paths, expand them, and
    report the coverage and statuses the expansion added."""
    coverage = level.coverage
    lifecycle_before = coverage.lifecycle_rows.copy()
    roles_before = coverage.role_rows.copy()
    classes_before = Counter(coverage.classes)
    level.abstraction.statuses.clear()
    expansion = _expand(level, positions, None, keep_systems=False, seen=seen,
                        covered=covered)
    expansion.lifecycle_rows = coverage.lifecycle_rows - lifecycle_before
    expansion.role_rows = coverage.role_rows - roles_before
    expansion.classes = Counter(coverage.classes) - classes_before
    expansion.statuses = set(level.abstraction.statuses)
    return expansion


_Shipped = tuple[int, tuple[Op, ...], Budgets]
"""A state of the frontier as a cluster's worker receives it: position, path, budgets left."""
CLUSTER_RESULTS: tuple[type, ...] = (
    _Expansion, _Child, _Found, Failure, Op, TaskId, LaunchRetry, TransitionRow,
    TaskStatus, TaskEvent, Role, RoleEvent,
)
"""Every class a cluster worker's result (``_expand_partition``'s) holds: the only classes
statemeta.explore.cluster builds from what a worker sends (statemeta.explore.shipped)."""


def _expand_on_cluster(level: _Level, context: _Context, cluster: Executor) -> list[_Expansion]:
    """The level on a cluster: its frontier partitioned by state fingerprint (each state's
    partition is its fingerprint modulo their number), each partition shipped as its states'
    positions and paths; each state comes back as its own expansion, so that the merge keeps
    the serial order whatever the partition. A worker's keys are adopted into this process's
    form, and fingerprinted here."""
    parts = cluster.workers * _CHUNKS_PER_WORKER
    partitions: list[list[_Shipped]] = [[] for _ in range(parts)]
    for position, visit in enumerate(level.frontier):
        path = tuple(_path(level.parents, visit.fingerprint))
        partitions[visit.fingerprint % parts].append((position, path, visit.left))
    expand = functools.partial(_expand_partition, context)
    found = cluster.map(expand, [p for p in partitions if p])
    adopt = functools.partial(_adopt, level.abstraction, len(level.root) > 1)
    return sorted(
        (attrs.evolve(e, found=[_adopted(c, adopt(c.key)) for c in e.found])
         for expansions in found for e in expansions),
        key=lambda e: e.start,
    )


def _adopted(child: _Child, key: Hashable) -> _Child:
    state = fingerprint(key)
    return attrs.evolve(child, key=key, state=state, fingerprint=_node(state, child.left))


def _adopt(abstraction: StateAbstraction, pair: bool, key: Hashable) -> Hashable:
    """A key a cluster's worker computed, in this process's form (state.py ``adopt``)."""
    if not pair:
        return abstraction.adopt(key)
    reference, variant = cast(tuple[Hashable, Hashable], key)
    return abstraction.adopt(reference), abstraction.adopt(variant)


_WORKER = threading.local()
"""A cluster worker thread's setup of each context it has expanded (the abstraction's caches
stay warm from one level to the next; per thread, as a worker may run tasks in several)."""


def _expand_partition(context: _Context, partition: list[_Shipped]) -> list[_Expansion]:
    """On a cluster's worker: each state of the partition rebuilt from its path and expanded,
    one expansion per state (at its frontier position); stops after the first failure unless
    all_violations. Successors found before are not known here: the parent drops them."""
    setups: dict[_Context, tuple[StateAbstraction, _Alphabet, System]] = (
        _WORKER.__dict__.setdefault("setups", {})
    )
    if context not in setups:
        setups[context] = _setup(context)
    abstraction = setups[context][0]
    level = _level(context, setups[context], {}, {}, [], keep_systems=False)
    seen: set[Fingerprint] = set()
    covered: Covered = {}
    out: list[_Expansion] = []
    for position, path, left in partition:
        system = _replay(level, path)
        key, twins = _key(abstraction, system)
        state = fingerprint(key)
        level.frontier = [_Visit(key, _node(state, left), state, left, twins, system)]
        expansion = _expand_counted(level, range(1), seen, covered)
        out.append(attrs.evolve(
            expansion,
            start=position,
            found=[attrs.evolve(c, position=position) for c in expansion.found],
            failures=[attrs.evolve(f, position=position) for f in expansion.failures],
        ))
        if expansion.failures and not context.all_violations:
            break  # the states after it in the frontier are not expanded by the serial search
    return out


def _rebuild(level: _Level, visit: _Visit) -> System:
    """The adapters of a state found by a worker."""
    return _replay(level, _path(level.parents, visit.fingerprint))


def _replay(level: _Level, path: Iterable[Op]) -> System:
    """A path replayed on a fork of the root (the coverage counts the path once, when it was
    found)."""
    coverage = level.coverage
    counted = coverage.lifecycle_rows.copy(), coverage.role_rows.copy()
    classes = None if coverage.classes is None else coverage.classes.copy()
    system = _fork(level.root)
    for op in path:
        _step(system, op, [])
    coverage.lifecycle_rows, coverage.role_rows = counted
    coverage.classes = classes
    return system


def _expand(
    level: _Level,
    positions: range,
    tick: Callable[[_Expansion], None] | None,
    *,
    keep_systems: bool,
    seen: set[Fingerprint] | None = None,
    covered: Covered | None = None,
) -> _Expansion:
    """Every operation from each state at ``positions``, in order, each on a fork of it; the
    successors no earlier level had and no node explored subsumes, each state checked once;
    stops at the first failure (with all_violations: records it, drops the failing state and
    goes on). ``seen`` and ``covered``: the successors already found by the caller's earlier
    expansions."""
    expansion = _Expansion(positions.start)
    seen = set() if seen is None else seen
    covered = {} if covered is None else covered
    abstraction = level.abstraction
    parents = level.parents
    explored = level.covered
    subsume = level.subsume
    known = level.known_classes
    vnode = level.vnode
    first: set[str] = set()
    for position in positions:
        visit = level.frontier[position]
        system = visit.system if visit.system is not None else _rebuild(level, visit)
        work: System | None = None
        mapped = (  # a variant may not refuse; a refusal is a class of its own
            system[0].meta.state.entries
            if len(system) == 1 and known is None
            else None
        )
        for op_index, (op, budget, slot, guarded, needs) in enumerate(level.alphabet):
            if slot in visit.twins:
                expansion.mirrored += 1
                continue
            if needs is not None and mapped is not None and needs not in mapped:
                expansion.refused += 1
                continue
            if guarded and system[0].precondition_broken(op) is not None:
                continue  # the caller's contract: never sent
            if vnode and system[0].caller_broken(op) is not None:
                continue  # not a call the vnode makes here
            child_left: Budgets | None = visit.left
            if budget is not None:
                child_left = _spend(visit.left, budget)
            if child_left is None:
                continue
            if work is None:
                work = _fork(system)
            step_started = time.perf_counter()
            try:
                _step(work, op, [])
            except _Failure as failure:
                expansion.failures.append(_found(position, op_index, failure))
                if not level.all_violations:
                    return expansion
                work = None  # the failing state is dropped
                continue
            finally:
                expansion.step_seconds += time.perf_counter() - step_started
            expansion.transitions += 1
            if known is not None:
                for cls in work[0].coverage.step:
                    if cls not in known and cls not in first:
                        first.add(cls)
                        expansion.first_classes.append((cls, position, op_index))
            child, twins = _key(abstraction, work)
            if child == visit.key and (subsume or child_left == visit.left):
                continue  # the same node, or one it subsumes: keep the fork for the next
            state = fingerprint(child)
            child_print = _node(state, child_left)
            if (
                child_print not in parents
                and child_print not in seen
                and not (subsume and (_covers(explored, state, child_left)
                                      or _covers(covered, state, child_left)))
            ):
                if state not in explored and state not in covered:
                    try:
                        _check_state(work, level.inherited)
                    except _Failure as failure:
                        expansion.failures.append(_found(position, op_index, failure))
                        if not level.all_violations:
                            return expansion
                        work = None  # the failing state is dropped (met again, it fails again)
                        continue
                seen.add(child_print)
                covered.setdefault(state, []).append(child_left)
                expansion.found.append(_Child(
                    position, op_index, child, child_print, state, child_left, twins,
                    work if keep_systems else None,
                ))
            work = None
        if tick is not None:
            tick(expansion)
    return expansion


class ForkableReference(ReferenceAdapter):
    """The reference adapter (memory backend: private stores, so forks are independent).

    With ``deferred_state_checks`` its meta's operations end with the trace invariants only:
    the search checks the state invariants once per distinct state (``_check_state``)."""

    deferred_state_checks = False

    def _open(self) -> None:
        super()._open()
        self.meta.check_state = not self.deferred_state_checks


def _found(position: int, op_index: int, failed: _Failure) -> _Found:
    return _Found(position, op_index, failed.failure, failed.invariant)


def _fork(system: System) -> System:
    return [adapter.fork() for adapter in system]


def _start(
    level: int, variant: str | None, semantics: Semantics, *, deferred: bool = False,
    callers: Callers = Callers.DIRECT,
) -> System:
    system = [ForkableReference(semantics=semantics, callers=callers)]
    if variant is not None:
        system.append(ForkableReference(variant, semantics=semantics, callers=callers))
    for adapter in system:
        adapter.deferred_state_checks = deferred
        adapter.start(level)
    return system


def _undefined_id(undefined: UndefinedBehaviour) -> str:
    """How a violation names the seed's undefined behaviour: the failure kind and the row of
    spec/divergences.md whose switch reaches it (``undefined-behaviour-U2``), so that each
    path is a distinct violation of its operation."""
    return f"undefined-behaviour-{undefined.divergence}"


def _check_state(system: System, inherited: frozenset[str] = frozenset()) -> None:
    """The state invariants (every view invariant, store-mirror) on a state found first, but
    for those ``inherited`` from the empty meta."""
    for side, adapter in zip(("reference", "variant"), system, strict=False):
        meta = adapter.meta
        view = meta.view()
        try:
            for invariant_id, check, _reads in VIEW_INVARIANTS:
                if invariant_id not in inherited:
                    check(view)
            if "store-mirror" not in inherited:
                store_mirror(view, meta.stored_tasks())
        except InvariantViolation as violation:
            raise _Failure(
                "invariant", f"{side}: {violation}", violation.invariant_id
            ) from violation


def _root_failures(root: System, inherited: frozenset[str]) -> list[_Failure]:
    """The empty meta's failures, one per invariant it breaks (``inherited``), in the
    catalogue's order."""
    failures: list[_Failure] = []
    for invariant_id in inherited:
        try:
            _check_state(root, inherited - {invariant_id})
        except _Failure as failure:
            failures.append(failure)
    return failures


def _inherited(root: System) -> frozenset[str]:
    """The invariants the empty meta breaks already (the seed's vnode arms its heartbeat chain
    at open, M12): each is reported once, at the root, with an empty trace, and not checked
    below it, since every state would inherit the violation and stopping there would leave
    the seed unexplored."""
    broken: list[str] = []
    while True:
        try:
            _check_state(root, frozenset(broken))
        except _Failure as failure:
            broken.append(failure.invariant)
            continue
        return frozenset(broken)


def _key(abstraction: StateAbstraction, system: System) -> tuple[Hashable, frozenset[str]]:
    """The system's key, and its twin slots (twins on every side)."""
    key, twins = abstraction.key_and_twins(system[0])
    if len(system) == 1:
        return key, twins
    variant_key, variant_twins = abstraction.key_and_twins(system[1], None)
    return (key, variant_key), twins & variant_twins


def _node(state: Fingerprint, left: Budgets) -> Fingerprint:
    """A node's fingerprint: its state's, with the budgets left (in the one order of the
    bounds' budgets)."""
    packed = struct.pack(f">Q{len(left)}Q", state, *(n for _, n in left))
    return int.from_bytes(hashlib.blake2b(packed, digest_size=8).digest(), "big")


def _covers(covered: Covered, state: Fingerprint, left: Budgets) -> bool:
    """Whether a node explored in ``state`` had at least ``left`` of each budget."""
    return any(
        all(mine <= theirs for (_, mine), (_, theirs) in zip(left, other, strict=True))
        for other in covered.get(state, ())
    )


def _task_slot(op: Op) -> str | None:
    """The slot an operation names, if any (the alphabet's operations name at most one)."""
    for name, value in op.args:
        if name == "task":
            return str(value)
    return None


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
        expected = _committed_ids(adapter, op) if op.name in REOPENS else None
        try:
            results.append(adapter.call(op))
            if expected is not None:
                reopen(expected, adapter.meta.view())
        except InvariantViolation as violation:
            raise _Failure(
                "invariant", f"{side}: {violation}", violation.invariant_id
            ) from violation
        except UndefinedBehaviour as undefined:  # the seed's memory error: a defect of its own
            raise _Failure(
                "undefined-behaviour", f"{side}: {undefined}", _undefined_id(undefined)
            ) from undefined
        except Exception as error:  # the reference must not fail in any other way
            raise _Failure("crash", f"{side}: {type(error).__name__}: {error}", "crash") from error
    if len(system) == 2:
        _compare(op, results[0], results[1], system)


def _compare(
    op: Op, reference: dict[str, Json], variant: dict[str, Json], system: System
) -> None:
    from statemeta.harness.machine import Divergence, compare_step

    try:
        compare_step(op, reference, variant, system[0].view(), system[1].view())
    except Divergence as divergence:
        cause = divergence.__cause__
        invariant = (
            cause.invariant_id if isinstance(cause, InvariantViolation) else divergence.kind
        )
        raise _Failure(divergence.kind, divergence.detail, invariant) from divergence


def _committed_ids(adapter: ReferenceAdapter, op: Op) -> list[bytes]:
    """The keys a reopen must load: the committed records, less those persisted as DROPPING
    and the one corrupt_record tears."""
    inner = adapter.store.inner
    assert isinstance(inner, MemoryStore)
    torn = slot_of(str(op.arg("task"))).torn_record[0] if op.name == "corrupt_record" else None
    return [
        key for key, value in inner.committed_items(TASK_TABLE)
        if key != torn and _loads(key, value)
    ]


@functools.lru_cache(maxsize=8192)
def _loads(key: bytes, value: bytes) -> bool:
    """Whether load_all loads a record: it decodes, and it was not persisted as DROPPING
    (cached: the same few records are reopened at every level)."""
    try:
        if dropped_at_load(decode_task(value)):
            return False
        decode_task_key(key)
    except StatemetaError:
        return False
    return True


def _path(parents: Parents, state: Fingerprint) -> list[Op]:
    ops: list[Op] = []
    link = parents[state]
    while link is not None:
        state, op = link
        ops.append(op)
        link = parents[state]
    ops.reverse()
    return ops


def _violation(
    start: Callable[[], System],
    ops: Sequence[Op],
    failure: Failure,
    inherited: frozenset[str] = frozenset(),
) -> Violation:
    """Replays ``ops`` on fresh adapters (made by ``start``) to record each side's results
    (and to fail again, at the last operation; with no operation, at the empty meta). The
    invariants ``inherited`` from the empty meta are not checked."""
    system = start()
    variant = len(system) > 1
    steps: list[Step] = []
    try:
        if not ops:
            try:
                _check_state(system, inherited)
            except _Failure as again:
                reference_view, variant_view = _views(system)
                failed = attrs.evolve(again.failure, reference_view=reference_view,
                                      sut_view=variant_view)
                return Violation(again.invariant, Counterexample((), failed))
        for op in ops:
            results: list[dict[str, Json]] = []
            try:
                _step(system, op, results)
                _check_state(system, inherited)  # a seed meta skips what its switches break
            except _Failure as again:
                reference = results[0] if results else {"error": "InvariantViolation"}
                steps.append(Step(op, reference, results[1] if len(results) > 1 else None))
                reference_view, variant_view = _views(system)
                failed = attrs.evolve(again.failure, reference_view=reference_view,
                                      sut_view=variant_view)
                cex = Counterexample(tuple(steps), failed)
                return Violation(again.invariant, cex)
            steps.append(Step(op, results[0], results[1] if variant else None))
    finally:
        for adapter in system:
            adapter.stop()
    raise StatemetaError(
        f"the counterexample {list(ops)} ({failure.kind}: {failure.detail}) did not fail again "
        "when replayed on fresh adapters: the search depends on something its states forget"
    )


def first_failure(
    ops: Sequence[Op], *, level: int, semantics: Semantics | str,
    callers: Callers = Callers.DIRECT,
) -> tuple[int, str] | None:
    """Where ``ops`` first fails when replayed as the search replays a counterexample (fresh
    adapters, every invariant after every operation but those the empty meta breaks already,
    as the search does): the step's index and the invariant id (``crash`` for an exception that
    is no statemeta error), or None."""
    system = _start(level, None, Semantics.of(semantics), callers=callers)
    inherited = _inherited(system)
    try:
        for position, op in enumerate(ops):
            try:
                _step(system, op, [])
                _check_state(system, inherited)
            except _Failure as failed:
                return position, failed.invariant
    finally:
        for adapter in system:
            adapter.stop()
    return None


def _views(system: System) -> tuple[dict[str, Json] | None, dict[str, Json] | None]:
    views: list[dict[str, Json] | None] = []
    for adapter in system:
        try:
            views.append(adapter.view())
        except Exception:  # a view of a meta in a broken state may itself fail
            views.append(None)
    return views[0], views[1] if len(views) > 1 else None

