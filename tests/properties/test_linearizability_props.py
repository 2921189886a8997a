"""Properties of the linearizability checker on generated histories of the toy specs.

A history generated from a real sequential execution (each operation's interval around its
point in that execution, each client calling one at a time) is always linearizable; the
same history with results perturbed may not be: the verdict agrees with a brute-force
search over every order (tests/unit), and memoisation and partitioning never change it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from statemeta.harness.linearizability import History, Operation, Outcome, check
from tests.unit.test_linearizability import (
    COUNTER,
    KEYS,
    REGISTER,
    REGISTERS,
    SET,
    Op,
    Spec,
    assert_shrunk,
    assert_witness,
    brute_force,
)

VALUES = st.integers(0, 2)
OPS: dict[str, st.SearchStrategy[Op]] = {
    "register": st.one_of(st.tuples(st.just("write"), VALUES), st.just(("read",))),
    "set": st.tuples(st.sampled_from(["add", "remove", "contains"]), VALUES),
    "counter": st.sampled_from([("inc",), ("get",)]),
    "registers": st.one_of(
        st.tuples(st.just("write"), st.integers(0, KEYS - 1), VALUES),
        st.tuples(st.just("read"), st.integers(0, KEYS - 1)),
    ),
    "registers+sum": st.one_of(
        st.tuples(st.just("write"), st.integers(0, KEYS - 1), VALUES),
        st.tuples(st.just("read"), st.integers(0, KEYS - 1)),
        st.just(("sum",)),
    ),
}
SPECS: dict[str, Spec] = {
    "register": REGISTER,
    "set": SET,
    "counter": COUNTER,
    "registers": REGISTERS,
    "registers+sum": REGISTERS,
}
GAP = 10
"""Time between two consecutive points of the sequential execution."""


@st.composite
def executed(draw: st.DrawFn, spec_name: str, max_ops: int = 8) -> History[Op, Any]:
    """A history whose operations ran one at a time, in the order drawn, on ``spec_name``.

    Operation i takes effect at time GAP * i + GAP; its interval contains that point and ends
    before its client's next point. A client's last operation may be pending (it took
    effect, nobody saw the result); a client may end with a pending operation that never
    took effect.
    """
    spec = SPECS[spec_name]
    ops = draw(st.lists(OPS[spec_name], max_size=max_ops))
    clients = draw(st.integers(1, 4))
    owners = [draw(st.integers(0, clients - 1)) for _ in ops]
    state, results = spec.initial, []
    for op in ops:
        state, result = spec.step(state, op)
        results.append(result)
    operations: list[Operation[Op, Any]] = []
    for client in range(clients):
        mine = [i for i, owner in enumerate(owners) if owner == client]
        free = 0  # the earliest time this client may call again
        for position, i in enumerate(mine):
            point = GAP * i + GAP
            next_point = GAP * mine[position + 1] + GAP if position + 1 < len(mine) else None
            invoked = draw(st.integers(free, point))
            returned = draw(st.integers(point, (next_point or point + 3 * GAP) - 1))
            if next_point is None and draw(st.booleans()):
                operations.append(Operation(client, invoked, None, ops[i]))
                break
            operations.append(Operation(client, invoked, returned, ops[i], results[i]))
            free = returned + 1
        else:
            if draw(st.booleans()):  # a call that never took effect
                late = draw(st.integers(free, free + GAP * (len(ops) + 1)))
                operations.append(Operation(client, late, None, draw(OPS[spec_name])))
    return History(tuple(draw(st.permutations(operations))))


def perturbed(history: History[Op, Any], data: st.DataObject) -> History[Op, Any]:
    """The history with one completed operation's result changed (maybe none)."""
    completed = [i for i, op in enumerate(history.operations) if not op.pending]
    if not completed or not data.draw(st.booleans()):
        return history
    index = data.draw(st.sampled_from(completed))
    operations = list(history.operations)
    old = operations[index].result
    new = (not old) if isinstance(old, bool) else (old or 0) + data.draw(st.integers(1, 2))
    operations[index] = Operation(
        operations[index].client,
        operations[index].invoked,
        operations[index].returned,
        operations[index].op,
        new,
    )
    return History(tuple(operations))


SPEC_NAMES = st.sampled_from(sorted(SPECS))


@given(SPEC_NAMES.flatmap(lambda name: st.tuples(st.just(name), executed(name, max_ops=30))))
def test_a_sequential_execution_is_linearizable(case: tuple[str, History[Op, Any]]) -> None:
    name, history = case
    verdict = check(SPECS[name], history)
    assert verdict.outcome is Outcome.LINEARIZABLE, verdict
    assert_witness(SPECS[name], history, verdict)


@given(SPEC_NAMES, st.data())
def test_verdict_agrees_with_brute_force_whatever_memoisation_and_partitioning(
    name: str, data: st.DataObject
) -> None:
    spec = SPECS[name]
    history = perturbed(data.draw(executed(name)), data)
    verdicts = {
        (memoise, partition): check(
            spec, history, memoise=memoise, partition=partition, shrink=False
        )
        for memoise in (True, False)
        for partition in (True, False)
    }
    outcomes = {verdict.outcome for verdict in verdicts.values()}
    assert len(outcomes) == 1, verdicts
    (outcome,) = outcomes
    assert (outcome is Outcome.LINEARIZABLE) == bool(brute_force(spec, history))
    event(f"{outcome}, {verdicts[True, True].partitions} partition(s)")
    assert outcome is not Outcome.UNKNOWN
    if outcome is Outcome.LINEARIZABLE:
        for verdict in verdicts.values():
            assert_witness(spec, history, verdict)
    else:
        assert_shrunk(spec, history, check(spec, history))
