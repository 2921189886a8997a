"""The linearizability checker alone, on toy specifications written here.

Ops are tuples ``(name, *args)``. The toy specs (a register, a set, a counter, a map of
registers partitioned by key, with a shared ``sum``) are also used by the property tests.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from statemeta.errors import MisuseError
from statemeta.harness.linearizability import (
    HISTORY_FORMAT,
    History,
    Operation,
    Outcome,
    SequentialSpec,
    Verdict,
    check,
    format_verdict,
    timeline,
)

Op = tuple[Any, ...]
Spec = SequentialSpec[Any, Op, Any]


def _register(state: int, op: Op) -> tuple[int, Any]:
    if op[0] == "write":
        return op[1], None
    return state, state  # read


def _set(state: frozenset[int], op: Op) -> tuple[frozenset[int], bool]:
    name, item = op
    if name == "add":
        return state | {item}, item not in state
    if name == "remove":
        return state - {item}, item in state
    return state, item in state  # contains


def _counter(state: int, op: Op) -> tuple[int, int]:
    if op[0] == "inc":
        return state + 1, state + 1
    return state, state  # get


KEYS = 3


def _registers(state: tuple[int, ...], op: Op) -> tuple[tuple[int, ...], Any]:
    if op[0] == "write":
        _, key, value = op
        return (*state[:key], value, *state[key + 1 :]), None
    if op[0] == "read":
        return state, state[op[1]]
    return state, sum(state)  # sum: reads every register, so it is shared


REGISTER: Spec = SequentialSpec(0, _register)
SET: Spec = SequentialSpec(frozenset(), _set)
COUNTER: Spec = SequentialSpec(0, _counter)
REGISTERS: Spec = SequentialSpec(
    (0,) * KEYS, _registers, partition=lambda op: None if op[0] == "sum" else op[1]
)


def history(*rows: tuple[int, float, float | None, Op, Any]) -> History[Op, Any]:
    """A history from rows (client, invoked, returned or None, op, result)."""
    return History(tuple(Operation(*row) for row in rows))


def assert_witness(spec: Spec, checked: History[Op, Any], verdict: Verdict) -> None:
    """The witness is an order of every completed op (and some pending ones) that respects
    real time and in which the spec gives every observed result."""
    assert verdict.outcome is Outcome.LINEARIZABLE
    order = verdict.witness
    assert len(set(order)) == len(order)
    completed = {i for i, op in enumerate(checked.operations) if not op.pending}
    assert completed <= set(order)
    state = spec.initial
    for position, index in enumerate(order):
        operation = checked.operations[index]
        for later in order[position + 1 :]:
            returned = checked.operations[later].returned
            assert returned is None or returned >= operation.invoked, (index, later)
        state, result = spec.step(state, operation.op)
        if not operation.pending:
            assert result == operation.result, (index, operation)


def brute_force(
    spec: Spec, checked: History[Op, Any], free: frozenset[int] = frozenset()
) -> set[Any]:
    """An independent oracle: every order of the operations that respects real time, pending
    ones optional, in which the spec gives every observed result except those at ``free``;
    returns the results the ``free`` ones get, one sorted tuple of (index, result) per way
    (so ``{()}`` means linearizable, ``set()`` not)."""
    ops = checked.operations
    ways: set[Any] = set()

    def extend(done: tuple[int, ...], state: Any, got: tuple[tuple[int, Any], ...]) -> None:
        if all(i in done or op.pending for i, op in enumerate(ops)):
            ways.add(tuple(sorted(got)))
        for i, op in enumerate(ops):
            blocked = any(
                j not in done and other.returned is not None and other.returned < op.invoked
                for j, other in enumerate(ops)
            )
            if i in done or blocked:
                continue
            after, result = spec.step(state, op.op)
            if i in free:
                extend((*done, i), after, (*got, (i, result)))
            elif op.pending or result == op.result:
                extend((*done, i), after, got)

    extend((), spec.initial, ())
    return ways


def assert_shrunk(spec: Spec, checked: History[Op, Any], verdict: Verdict) -> None:
    """The counterexample fails as seen at ``failed_at`` and not before; ``possible`` is what
    the operations responding then could have returned; without any one of its operations
    the possible results differ (checked by brute force on small counterexamples)."""
    assert verdict.outcome is Outcome.NOT_LINEARIZABLE
    kept, until = verdict.counterexample, verdict.failed_at
    assert until is not None
    seen = checked.select(kept, until)
    assert check(spec, seen).outcome is Outcome.NOT_LINEARIZABLE
    names = sorted(kept)
    at_fault = frozenset(j for j, op in enumerate(seen.operations) if op.returned == until)
    assert at_fault

    def possible(sub: History[Op, Any], order: list[int]) -> set[Any]:
        free = frozenset(j for j, op in enumerate(sub.operations) if op.returned == until)
        ways = brute_force(spec, sub, free)
        return {tuple((order[j], result) for j, result in way) for way in ways}

    if len(kept) > 6:
        return
    assert possible(seen, names) == set(verdict.possible) != set()
    observed = tuple((names[j], seen.operations[j].result) for j in sorted(at_fault))
    assert observed not in set(verdict.possible)
    for dropped in kept:
        rest = [i for i in names if i != dropped]
        assert possible(checked.select(rest, until), rest) != set(verdict.possible), dropped


def verdict_of(spec: Spec, checked: History[Op, Any], **options: Any) -> Verdict:
    verdict = check(spec, checked, **options)
    if verdict.outcome is Outcome.LINEARIZABLE:
        assert_witness(spec, checked, verdict)
    if verdict.outcome is Outcome.NOT_LINEARIZABLE and options.get("shrink", True):
        assert_shrunk(spec, checked, verdict)
    return verdict


# -- rejected and accepted by hand ----------------------------------------------------------


def test_sequential_register_history_is_linearizable() -> None:
    h = history(
        (0, 0, 1, ("write", 1), None),
        (1, 2, 3, ("read",), 1),
        (0, 4, 5, ("write", 2), None),
        (1, 6, 7, ("read",), 2),
    )
    assert verdict_of(REGISTER, h).witness == (0, 1, 2, 3)


def test_read_overlapping_a_write_may_see_the_old_or_the_new_value() -> None:
    for seen in (0, 1):
        h = history((0, 0, 10, ("write", 1), None), (1, 2, 3, ("read",), seen))
        assert verdict_of(REGISTER, h).outcome is Outcome.LINEARIZABLE


def test_stale_read_after_a_completed_write_is_rejected() -> None:
    h = history((0, 0, 1, ("write", 1), None), (1, 2, 3, ("read",), 0))
    verdict = verdict_of(REGISTER, h)
    assert verdict.outcome is Outcome.NOT_LINEARIZABLE
    assert verdict.counterexample == (0, 1)


def test_read_of_a_value_never_written_is_rejected() -> None:
    h = history((0, 0, 5, ("write", 1), None), (1, 1, 6, ("read",), 7))
    verdict = verdict_of(REGISTER, h)
    assert verdict.outcome is Outcome.NOT_LINEARIZABLE
    assert verdict.counterexample == (0, 1)
    assert set(verdict.possible) == {((1, 0),), ((1, 1),)}  # the read could see 0 or 1


def test_reads_cannot_go_back_in_time() -> None:
    """Two reads in sequence during one long write: new then old is impossible."""
    h = history(
        (0, 0, 10, ("write", 1), None),
        (1, 1, 2, ("read",), 1),
        (1, 3, 4, ("read",), 0),
    )
    assert verdict_of(REGISTER, h).outcome is Outcome.NOT_LINEARIZABLE
    h = history(
        (0, 0, 10, ("write", 1), None),
        (1, 1, 2, ("read",), 0),
        (1, 3, 4, ("read",), 1),
    )
    assert verdict_of(REGISTER, h).outcome is Outcome.LINEARIZABLE


def test_two_concurrent_adds_of_one_item_cannot_both_succeed() -> None:
    both = history((0, 0, 2, ("add", 5), True), (1, 1, 3, ("add", 5), True))
    verdict = verdict_of(SET, both)
    assert verdict.outcome is Outcome.NOT_LINEARIZABLE
    assert verdict.counterexample == (0, 1)
    one = history((0, 0, 2, ("add", 5), True), (1, 1, 3, ("add", 5), False))
    assert verdict_of(SET, one).outcome is Outcome.LINEARIZABLE


def test_set_remove_and_contains() -> None:
    h = history(
        (0, 0, 1, ("add", 1), True),
        (0, 2, 6, ("remove", 1), True),
        (1, 3, 4, ("contains", 1), True),  # overlaps the remove: before it
        (1, 7, 8, ("contains", 1), False),
    )
    assert verdict_of(SET, h).outcome is Outcome.LINEARIZABLE
    late = history(
        (0, 0, 1, ("add", 1), True),
        (0, 2, 3, ("remove", 1), True),
        (1, 4, 5, ("contains", 1), True),  # after the remove returned
    )
    assert verdict_of(SET, late).outcome is Outcome.NOT_LINEARIZABLE


def test_counter_increments_are_not_lost() -> None:
    lost = history((0, 0, 2, ("inc",), 1), (1, 1, 3, ("inc",), 1))
    assert verdict_of(COUNTER, lost).outcome is Outcome.NOT_LINEARIZABLE
    either = history((0, 0, 2, ("inc",), 2), (1, 1, 3, ("inc",), 1), (2, 4, 5, ("get",), 2))
    assert verdict_of(COUNTER, either).witness == (1, 0, 2)


def test_equal_times_overlap() -> None:
    """A write returning at 1 and a read invoked at 1 are concurrent: the read may go first."""
    h = history((0, 0, 1, ("write", 1), None), (1, 1, 2, ("read",), 0))
    assert verdict_of(REGISTER, h).outcome is Outcome.LINEARIZABLE


# -- pending operations -----------------------------------------------------------------------


def test_a_pending_write_may_have_taken_effect() -> None:
    h = history((0, 0, None, ("write", 1), None), (1, 5, 6, ("read",), 1))
    verdict = verdict_of(REGISTER, h)
    assert verdict.witness == (0, 1)


def test_a_pending_write_may_not_have_taken_effect() -> None:
    h = history((0, 0, None, ("write", 1), None), (1, 5, 6, ("read",), 0))
    assert verdict_of(REGISTER, h).witness == (1,)  # the write left out


def test_a_pending_write_takes_effect_at_most_once_and_not_before_its_call() -> None:
    flicker = history(
        (0, 0, None, ("write", 1), None),
        (1, 1, 2, ("read",), 1),
        (1, 3, 4, ("read",), 0),
    )
    assert verdict_of(REGISTER, flicker).outcome is Outcome.NOT_LINEARIZABLE
    early = history((1, 0, 1, ("read",), 1), (0, 2, None, ("write", 1), None))
    assert verdict_of(REGISTER, early).outcome is Outcome.NOT_LINEARIZABLE


def test_a_pending_add_explains_a_failed_add() -> None:
    h = history((0, 0, None, ("add", 3), None), (1, 4, 5, ("add", 3), False))
    assert verdict_of(SET, h).outcome is Outcome.LINEARIZABLE


# -- partitions --------------------------------------------------------------------------------


def test_operations_on_different_keys_are_checked_alone() -> None:
    h = history(
        (0, 0, 1, ("write", 0, 1), None),
        (1, 0, 1, ("write", 1, 2), None),
        (0, 2, 3, ("read", 1), 2),
        (1, 2, 3, ("read", 0), 1),
    )
    verdict = verdict_of(REGISTERS, h)
    assert verdict.partitions == 2
    assert verdict_of(REGISTERS, h, partition=False).partitions == 1


def test_a_failing_partition_is_the_counterexample() -> None:
    h = history(
        (0, 0, 1, ("write", 0, 1), None),
        (1, 0, 1, ("write", 1, 2), None),
        (0, 2, 3, ("read", 1), 2),
        (1, 2, 3, ("read", 0), 0),  # stale
    )
    verdict = verdict_of(REGISTERS, h)
    assert verdict.outcome is Outcome.NOT_LINEARIZABLE
    assert verdict.counterexample == (0, 3)


def test_a_shared_operation_turns_partitioning_off() -> None:
    """Each key with the sum alone is linearizable, the whole is not: the sum comes after both
    writes returned and must see both. Checking (key + shared) groups would pass it."""
    h = history(
        (0, 1, 2, ("write", 0, 1), None),
        (1, 1, 2, ("write", 1, 1), None),
        (2, 5, 6, ("sum",), 1),
    )
    verdict = verdict_of(REGISTERS, h)
    assert verdict.outcome is Outcome.NOT_LINEARIZABLE
    assert verdict.partitions == 1
    for key in (0, 1):
        alone = verdict_of(REGISTERS, h.select([key, 2]))
        assert alone.outcome is Outcome.LINEARIZABLE, key


# -- shrinking, budget -------------------------------------------------------------------------


def _long_register_history(stale_at: int) -> History[Op, Any]:
    """Client 0 writes 0, 2, 4, ...; client 1 reads each; one read returns the value
    written before the last write."""
    rows: list[tuple[int, float, float | None, Op, Any]] = []
    value = 0
    for i in range(40):
        t = 4 * i
        if i % 2 == 0:
            value = i
            rows.append((0, t, t + 1, ("write", value), None))
        else:
            rows.append((1, t, t + 1, ("read",), value - 2 if i == stale_at else value))
    return history(*rows)


def test_shrinking_keeps_the_operations_at_fault() -> None:
    """Not the stale read alone: without write(20), the read could return only 18, the value
    it returned; shrinking keeps what the read could have returned (20) unchanged."""
    h = _long_register_history(stale_at=21)
    verdict = verdict_of(REGISTER, h)
    assert verdict.outcome is Outcome.NOT_LINEARIZABLE
    assert (verdict.counterexample, verdict.failed_at) == ((20, 21), 85)
    assert verdict.possible == (((21, 20),),)
    whole = verdict_of(REGISTER, h, shrink=False)
    assert whole.counterexample == tuple(range(40))


def test_the_counterexample_is_cut_at_the_failure_and_one_minimal() -> None:
    h = history(
        (0, 0, 1, ("add", 1), True),
        (1, 0, 1, ("add", 2), True),
        (0, 2, 3, ("remove", 1), True),
        (1, 2, 3, ("contains", 2), True),
        (0, 4, 5, ("contains", 1), True),  # after the remove: wrong
        (1, 4, 6, ("contains", 2), True),
    )
    verdict = verdict_of(SET, h)  # checks the shrinking's contract (assert_shrunk)
    assert (verdict.counterexample, verdict.failed_at) == ((0, 2, 4), 5)


def test_an_exhausted_budget_gives_unknown_never_a_guess() -> None:
    h = _long_register_history(stale_at=21)
    assert check(REGISTER, h, budget=0).outcome is Outcome.UNKNOWN
    small = check(REGISTER, h, budget=10)
    assert (small.outcome, small.steps) == (Outcome.UNKNOWN, 10)
    assert check(REGISTER, history(), budget=0).outcome is Outcome.LINEARIZABLE
    with pytest.raises(MisuseError, match="budget"):
        check(REGISTER, h, budget=-1)


def test_memoisation_prunes_the_search() -> None:
    """Seven concurrent adds, then a contains that none explains: without memoisation the
    search tries every order of the adds, with it every set of them once."""
    rows: list[tuple[int, float, float | None, Op, Any]] = [
        (client, 0, 10, ("add", client), True) for client in range(7)
    ]
    rows.append((7, 11, 12, ("contains", 99), True))
    h = history(*rows)
    with_memo = verdict_of(SET, h, shrink=False)
    without = verdict_of(SET, h, shrink=False, memoise=False)
    assert with_memo.outcome is without.outcome is Outcome.NOT_LINEARIZABLE
    assert with_memo.steps * 10 < without.steps


def test_memoisation_tells_states_apart() -> None:
    """Both writes done, in either order, is one set of operations but two states: only the
    order write(1), write(2) explains the read, and the search tries the other first."""
    h = history(
        (0, 0, 10, ("write", 2), None),
        (1, 1, 10, ("write", 1), None),
        (2, 11, 12, ("read",), 2),
    )
    assert verdict_of(REGISTER, h).witness == (1, 0, 2)


# -- the history's JSON form and its checks ------------------------------------------------------


def _as_tuple(value: Any) -> Op:
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise MisuseError(f"an op is [name, *args], got {value!r}")
    return tuple(value)


def test_json_round_trip_with_pending_operations() -> None:
    h = history((0, 0, 1.5, ("write", 1), None), (1, 0.5, None, ("read",), None))
    document = h.to_json(encode_op=list)
    assert document["format"] == HISTORY_FORMAT
    assert "result" in document["operations"][0]
    assert "result" not in document["operations"][1]
    assert History.from_json(document, decode_op=_as_tuple) == h


def _document(**changes: Any) -> dict[str, Any]:
    entry = {"client": 0, "invoked": 0, "returned": 1, "op": ["read"], "result": 0}
    entry.update(changes)
    return {"format": HISTORY_FORMAT, "operations": [entry]}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "not a history of format"),
        ({"format": "other", "operations": []}, "not a history of format"),
        ({"format": HISTORY_FORMAT, "operations": {}}, "a history is"),
        ({"format": HISTORY_FORMAT, "operations": [], "x": 1}, "a history is"),
        ({"format": HISTORY_FORMAT, "operations": [3]}, r"operations\[0\]: expected an object"),
        (_document(extra=1), r"operations\[0\]: expected an object"),
        (_document(client=-1), r"operations\[0\]\.client: expected an integer"),
        (_document(client=True), r"operations\[0\]\.client"),
        (_document(invoked="0"), r"operations\[0\]\.invoked: expected a finite number"),
        (_document(invoked=True), r"operations\[0\]\.invoked"),
        (_document(returned=float("inf")), r"operations\[0\]\.returned: expected a finite"),
        (_document(returned=None), "pending operation .* has no 'result'"),
        (_document(invoked=2), "returned at 1, before it was invoked at 2"),
        (_document(op="read"), r"operations\[0\]: an op is \[name, \*args\]"),
    ],
)
def test_malformed_history_documents_are_refused(document: Any, message: str) -> None:
    with pytest.raises(MisuseError, match=message):
        History.from_json(document, decode_op=_as_tuple)


def test_missing_result_is_refused() -> None:
    document = _document()
    del document["operations"][0]["result"]
    with pytest.raises(MisuseError, match="completed operation needs its 'result'"):
        History.from_json(document)


def test_a_client_calls_one_at_a_time() -> None:
    with pytest.raises(MisuseError, match=r"operations\[1\] of client 0 is invoked at 1"):
        history((0, 0, 1, ("read",), 0), (0, 1, 2, ("read",), 0))
    with pytest.raises(MisuseError, match=r"before operations\[0\] of the same client"):
        history((0, 0, None, ("read",), None), (0, 5, 6, ("read",), 0))
    document = History((Operation(0, 0, 1, ["read"], 0),)).to_json()
    document["operations"].append(dict(document["operations"][0]))
    with pytest.raises(MisuseError, match=r"^history: operations\[1\] of client 0"):
        History.from_json(document)


def test_a_pending_operation_has_no_result() -> None:
    with pytest.raises(MisuseError, match=r"is pending .* but has a result 1"):
        Operation(0, 0, None, ("read",), 1)


# -- printing ----------------------------------------------------------------------------------


def test_timeline_draws_one_lane_per_client() -> None:
    h = history(
        (0, 0, 1, ("write", 1), None),
        (1, 0.5, 3, ("read",), 0),
        (0, 2, None, ("write", 2), None),
    )
    assert timeline(h) == "\n".join(
        [
            "client 0 |[#0----------] [#2----------->",
            "client 1 |     [#1---------------]",
            "  #0 client 0 [0, 1]: ('write', 1) -> None",
            "  #1 client 1 [0.5, 3]: ('read',) -> 0",
            "  #2 client 0 [2, pending]: ('write', 2) no response",
        ]
    )


def test_format_verdict_shows_the_counterexample() -> None:
    h = _long_register_history(stale_at=21)
    report = format_verdict(check(REGISTER, h), h)
    assert report.splitlines() == [
        "not linearizable (40 operations, 1 partition(s)); no order of these 2 operations "
        "of 2 client(s) as seen at time 85 gives the observed results; possible: #21 -> 20:",
        "client 0 |[#20------]",
        "client 1 |            [#21------]",
        "  #20 client 0 [80, 81]: ('write', 20) -> None",
        "  #21 client 1 [84, 85]: ('read',) -> 18",
    ]
    stale = history(
        (0, 0, 1, ("write", 1), None),
        (1, 2, 3, ("read",), 0),
        (2, 0.5, 6, ("write", 2), None),
        (2, 7, 8, ("write", 5), None),
    )
    assert format_verdict(check(REGISTER, stale), stale).splitlines() == [
        "not linearizable (4 operations, 1 partition(s)); no order of these 3 operations "
        "of 3 client(s) as seen at time 3 gives the observed results; possible: #1 -> 2 or "
        "#1 -> 1:",
        "client 0 |[#0----------]",
        "client 1 |               [#1-----]",
        "client 2 |     [#2--------------------->",
        "  #0 client 0 [0, 1]: ('write', 1) -> None",
        "  #1 client 1 [2, 3]: ('read',) -> 0",
        "  #2 client 2 [0.5, pending]: ('write', 2) no response",
    ]
    ok = history((0, 0, 1, ("write", 1), None))
    assert format_verdict(check(REGISTER, ok), ok) == (
        "linearizable (1 operations, 1 partition(s), 1 steps): #0"
    )
    assert format_verdict(check(REGISTER, h, budget=3), h) == (
        "unknown: the budget of 3 steps ran out (40 operations, 1 partition(s))"
    )


def test_the_docs_example_prints_what_the_page_shows() -> None:
    page = (Path(__file__).parents[2] / "docs" / "linearizability.md").read_text()

    def block(name: str) -> str:
        marker = f"<!-- linearizability:{name} -->"
        (body,) = re.findall(rf"{marker}\n```\w*\n(.*?)```\n<!-- /", page, re.S)
        return str(body)

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block("example"), "docs/linearizability.md", "exec"), {})
    assert printed.getvalue() == block("example-output")
