"""Is a history linearizable? Wing & Gong's search, Lowe's memoisation, partitions checked alone.

The search (per partition) walks an *entry list*: the call and return events of the
operations, sorted by time, calls before returns at equal times (a tie is an overlap). The
calls before the first return are the operations that may take effect next; the search tries
each (the spec's ``step`` must give the observed result), lifts it with its return out of the
list and starts again from the head. Reaching a return means its operation cannot be next
any more: it backtracks (undoes the last lift, tries the next candidate). Success is every
completed operation lifted; pending operations are optional (they may not have taken effect)
and their result is not compared. Lowe's memoisation remembers every (operations lifted,
``key(state)``) pair reached; reaching one again cannot succeed where it failed before, so
it is skipped. The lifted set is an int used as a bitset.

A budget bounds the spec steps; when it runs out the verdict is UNKNOWN, never a guess.
Partitioning, the witness and the shrinking are argued in docs/linearizability.md.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar, cast

import attrs

from statemeta.errors import MisuseError
from statemeta.harness.linearizability.history import History, Operation

__all__ = ["DEFAULT_BUDGET", "Outcome", "SequentialSpec", "Verdict", "check"]

StateT = TypeVar("StateT")
OpT = TypeVar("OpT")
ResultT = TypeVar("ResultT")

Freed = tuple[tuple[int, Any], ...]
"""Results that operations whose result is not compared got in one linearization."""

DEFAULT_BUDGET = 1_000_000
"""Spec steps a check may spend deciding (and, separately, shrinking a failure)."""


def _same(state: Any) -> Hashable:
    return state  # type: ignore[no-any-return]


def _shared(op: Any) -> Hashable | None:
    return None


@attrs.frozen
class SequentialSpec(Generic[StateT, OpT, ResultT]):
    """What the object does when called one operation at a time.

    ``step(state, op)`` returns the next state and the op's result and must not mutate
    ``state`` (the search returns to it when it backtracks). ``key(state)`` is hashable and
    equal for states that behave alike from then on (memoisation); the default is the state
    itself. ``partition(op)`` names the part of the state the op touches, or None when it
    touches shared things; the contract of a partition is in docs/linearizability.md. The
    default puts every op in the shared partition: no partitioning.
    """

    initial: StateT
    step: Callable[[StateT, OpT], tuple[StateT, ResultT]]
    key: Callable[[StateT], Hashable] = _same
    partition: Callable[[OpT], Hashable | None] = _shared


class Outcome(enum.StrEnum):
    LINEARIZABLE = "linearizable"
    NOT_LINEARIZABLE = "not linearizable"
    UNKNOWN = "unknown"  # the budget ran out first


@attrs.frozen
class Verdict:
    """A check's answer; operations are named by their index in the checked history."""

    outcome: Outcome
    witness: tuple[int, ...] = ()
    """When linearizable: the operations that took effect, in an order consistent with real
    time in which the spec gives every observed result (pending ones left out did not)."""
    counterexample: tuple[int, ...] = ()
    """When not linearizable: the operations of a failing sub-history (a partition's, or,
    shrunk, a small one: see ``failed_at``)."""
    failed_at: float | None = None
    """When shrunk: the counterexample fails as seen at this time (``History.select``'s
    ``until``: operations returning later count as pending), and not at any earlier one."""
    possible: tuple[Freed, ...] = ()
    """When shrunk: what the operations responding at ``failed_at`` could have returned, one
    entry per way ((operation, result) pairs, by operation); none is what they returned."""
    steps: int = 0
    """Spec steps spent deciding (shrinking not counted)."""
    partitions: int = 1


class _Exhausted(Exception):
    """The budget ran out (internal: becomes Outcome.UNKNOWN or stops shrinking)."""


class _Budget:
    def __init__(self, steps: int) -> None:
        if steps < 0:
            raise MisuseError(f"a search budget is a number of steps >= 0, got {steps}")
        self.left = steps


def check(
    spec: SequentialSpec[StateT, OpT, ResultT],
    history: History[OpT, ResultT],
    *,
    budget: int = DEFAULT_BUDGET,
    memoise: bool = True,
    partition: bool = True,
    shrink: bool = True,
) -> Verdict:
    """Decides whether ``history`` is linearizable with respect to ``spec``.

    ``memoise`` and ``partition`` only change the cost, never the verdict (they are switches
    for the benchmark and the tests). ``shrink`` looks for a small counterexample.
    """
    counter = _Budget(budget)
    groups = _groups(spec, history) if partition else [list(range(len(history.operations)))]
    try:
        orders, failing = _decide(spec, history, groups, counter, memoise)
    except _Exhausted:
        return Verdict(Outcome.UNKNOWN, steps=budget, partitions=len(groups))
    steps = budget - counter.left
    if failing is not None:
        smallest, until, possible = (
            _shrink(spec, history, failing, budget, memoise) if shrink else (failing, None, ())
        )
        return Verdict(
            Outcome.NOT_LINEARIZABLE,
            counterexample=tuple(smallest),
            failed_at=until,
            possible=possible,
            steps=steps,
            partitions=len(groups),
        )
    return Verdict(
        Outcome.LINEARIZABLE,
        witness=_merge(history, orders),
        steps=steps,
        partitions=len(groups),
    )


def _groups(
    spec: SequentialSpec[StateT, OpT, ResultT], history: History[OpT, ResultT]
) -> list[list[int]]:
    """The operations of each partition, or all in one group if any op is shared."""
    groups: dict[Hashable, list[int]] = {}
    for index, operation in enumerate(history.operations):
        part = spec.partition(operation.op)
        if part is None:
            return [list(range(len(history.operations)))]
        groups.setdefault(part, []).append(index)
    return list(groups.values()) or [[]]


def _decide(
    spec: SequentialSpec[StateT, OpT, ResultT],
    history: History[OpT, ResultT],
    groups: list[list[int]],
    counter: _Budget,
    memoise: bool,
) -> tuple[list[list[int]], list[int] | None]:
    """Each group's linearization (history indices) or the first group that has none."""
    orders: list[list[int]] = []
    for group in groups:
        order = _search(spec, [history.operations[i] for i in group], counter, memoise)
        if order is None:
            return orders, group
        orders.append([group[i] for i in order])
    return orders, None


def _search(
    spec: SequentialSpec[StateT, OpT, ResultT],
    operations: Sequence[Operation[OpT, ResultT]],
    counter: _Budget,
    memoise: bool,
    free: frozenset[int] = frozenset(),
    possible: list[Freed] | None = None,
) -> list[int] | None:
    """A linearization of ``operations`` (their indices, in order), or None if none exists.

    The operations at ``free`` must take effect but their results are not compared. With
    ``possible``, the search goes on past each linearization and adds to ``possible`` the
    results the free operations get in it (each distinct list once), and returns None.
    """
    events = sorted(
        [(operation.invoked, 0, i) for i, operation in enumerate(operations)]
        + [
            (operation.returned, 1, i)
            for i, operation in enumerate(operations)
            if operation.returned is not None
        ]
    )
    # The entry list: node 0 is the head, nodes 1..n the events, node n + 1 the tail.
    n = len(events)
    tail = n + 1
    nxt = [*range(1, n + 2), tail]
    prv = [0, *range(n + 1)]
    op_of = [-1] + [i for _, _, i in events] + [-1]
    is_call = [False] + [kind == 0 for _, kind, _ in events] + [False]
    return_of = [0] * len(operations)  # the return node of each completed operation
    for node, (_, kind, i) in enumerate(events, start=1):
        if kind == 1:
            return_of[i] = node

    def lift(call: int) -> None:
        nxt[prv[call]] = nxt[call]
        prv[nxt[call]] = prv[call]
        done = return_of[op_of[call]]
        if done:
            nxt[prv[done]] = nxt[done]
            prv[nxt[done]] = prv[done]

    def unlift(call: int) -> None:  # the exact reverse of lift, so the links come back
        done = return_of[op_of[call]]
        if done:
            nxt[prv[done]] = done
            prv[nxt[done]] = done
        nxt[prv[call]] = call
        prv[nxt[call]] = call

    step, key = spec.step, spec.key
    seen: set[tuple[int, Hashable, tuple[int, ...]]] = set()
    distinct: list[Any] = []  # the free operations' results seen, numbered for memo keys
    state, lifted, freed = spec.initial, 0, cast(Freed, ())
    remaining = sum(1 for operation in operations if not operation.pending)
    stack: list[tuple[int, StateT, int, Freed]] = []  # a lifted call node, what was before it
    entry = nxt[0]
    left = counter.left
    while True:
        if not remaining and possible is None:
            counter.left = left
            return [op_of[node] for node, *_ in stack]
        if not remaining and possible is not None and freed not in possible:
            possible.append(freed)
        if not remaining or not is_call[entry]:  # a return: its operation had to be lifted
            if not stack:
                counter.left = left
                return None
            entry, state, lifted, freed = stack.pop()
            unlift(entry)
            remaining += operations[op_of[entry]].returned is not None
            entry = nxt[entry]
            continue
        i = op_of[entry]
        operation = operations[i]
        if left == 0:
            counter.left = 0
            raise _Exhausted
        left -= 1
        after, result = step(state, operation.op)
        now_freed = freed
        if i in free:
            now_freed = (*freed, (i, result))
        elif operation.returned is not None and result != operation.result:
            entry = nxt[entry]
            continue
        now = lifted | (1 << i)
        if memoise:
            memo = (now, key(after), _numbers(now_freed, distinct) if free else ())
            if memo in seen:
                entry = nxt[entry]
                continue
            seen.add(memo)
        stack.append((entry, state, lifted, freed))
        state, lifted, freed = after, now, now_freed
        lift(entry)
        remaining -= operation.returned is not None
        entry = nxt[0]


def _numbers(freed: Freed, distinct: list[Any]) -> tuple[int, ...]:
    """The free results as numbers (results need not be hashable; equal ones share one)."""
    numbers = []
    for _, result in freed:
        if result not in distinct:
            distinct.append(result)
        numbers.append(distinct.index(result))
    return tuple(numbers)


def _merge(history: History[OpT, ResultT], orders: list[list[int]]) -> tuple[int, ...]:
    """One order of all partitions' linearizations, consistent with real time.

    Each operation gets a point: the latest invocation so far in its partition's order. Points
    rise along each order and lie within each interval, so sorting by point keeps every
    partition's order and puts an operation that returned before another was invoked first.
    """
    placed = []
    for rank, order in enumerate(orders):
        point = float("-inf")
        for position, index in enumerate(order):
            point = max(point, history.operations[index].invoked)
            placed.append((point, rank, position, index))
    return tuple(index for *_, index in sorted(placed))


def _shrink(
    spec: SequentialSpec[StateT, OpT, ResultT],
    history: History[OpT, ResultT],
    failing: list[int],
    budget: int,
    memoise: bool,
) -> tuple[list[int], float | None, tuple[Freed, ...]]:
    """A small failing sub-history, the time at which it fails, what could have been seen then.

    First the earliest response time T at which the failing partition, seen at T, fails (the
    failures are monotone in T: binary search). The operations responding at T are the ones
    at fault; the results they could have had (over every linearization of the rest) are the
    *possible* results. Then operations are deleted (halves, quarters, ..., then one at a time
    until none can go) as long as the possible results stay the same: what remains fails for
    the same reason (docs/linearizability.md). Stops early, with what it has, if ``budget``
    runs out.
    """
    counter = _Budget(budget)

    def fails(indices: list[int], until: float) -> bool:
        sub = history.select(indices, until)
        return _decide(spec, sub, _groups(spec, sub), counter, memoise)[1] is not None

    def possible(indices: list[int], until: float) -> list[Freed]:
        sub = history.select(indices, until)
        at_fault = frozenset(j for j, op in enumerate(sub.operations) if op.returned == until)
        found: list[Freed] = []
        _search(spec, sub.operations, counter, memoise, at_fault, found)
        names = sorted(indices)  # the sub-history's operations, in its order
        return [tuple(sorted((names[j], result) for j, result in freed)) for freed in found]

    times = sorted({t for t in (history.operations[i].returned for i in failing) if t is not None})
    if not times:  # only pending operations: cannot fail
        return failing, None, ()
    low, high = 0, len(times) - 1
    target: list[Freed] = []
    try:
        while low < high:
            middle = (low + high) // 2
            if fails(failing, times[middle]):
                high = middle
            else:
                low = middle + 1
        until = times[high]
        kept = [i for i in failing if history.operations[i].invoked <= until]
        target = possible(kept, until)
        chunk = max(len(kept) // 2, 1)
        while True:
            removed = False
            start = 0
            while start < len(kept):
                trial = kept[:start] + kept[start + chunk :]
                found = possible(trial, until) if trial else []
                if len(found) == len(target) and all(way in target for way in found):
                    kept, removed = trial, True
                else:
                    start += chunk
            if chunk == 1 and not removed:
                break
            chunk = max(chunk // 2, 1)
    except _Exhausted:
        until = times[high]
        kept = [i for i in failing if history.operations[i].invoked <= until]
    return kept, until, tuple(target)
