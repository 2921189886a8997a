"""minimize: ddmin over a failing trace's operations (statemeta/harness/minimize.py)."""

from __future__ import annotations

import attrs

from statemeta.harness.minimize import minimize
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import Failure, Trace, TraceStep, replay

VARIANT = "paused_count_self_pause"
CORE = (
    Op.of("register", task="s1"),
    Op.of("handle_event", task="s1", event="pause"),
    Op.of("handle_event", task="s1", event="pause"),
)
PADDED = (
    Op.of("register", task="s2"),
    Op.of("latest_checkpoint_id"),
    CORE[0],
    Op.of("commit"),
    Op.of("handle_event", task="s2", event="pause"),
    CORE[1],
    Op.of("update_stage_role", stage=1, is_leader=True),
    Op.of("all_tasks_ready"),
    CORE[2],
    Op.of("commit"),
)


def _sut() -> ReferenceAdapter:
    return ReferenceAdapter(VARIANT, check_invariants=False)


def _fails(ops: tuple[Op, ...]) -> Trace | None:
    return replay(ops, level=2, sut=_sut(), sut_command=VARIANT)


def test_a_padded_trace_is_minimized_to_the_operations_the_failure_needs() -> None:
    trace = _fails(PADDED)
    assert trace is not None and len(trace.ops) > len(CORE)
    trace = attrs.evolve(trace, seed=11)
    small = minimize(trace, sut=_sut())
    assert small.ops == CORE
    assert small.failure.kind == trace.failure.kind
    assert small.seed == 11  # the run that found it


def test_the_result_is_one_minimal_and_still_fails() -> None:
    trace = _fails(PADDED)
    assert trace is not None
    small = minimize(trace, sut=_sut())
    again = _fails(small.ops)
    assert again is not None and again.failure.kind == small.failure.kind
    for i in range(len(small.ops)):
        shorter = _fails(small.ops[:i] + small.ops[i + 1:])
        assert shorter is None or shorter.failure.kind != small.failure.kind


def test_a_trace_that_already_is_minimal_is_kept() -> None:
    trace = _fails(CORE)
    assert trace is not None
    assert minimize(trace, sut=_sut()).ops == CORE


def test_a_protocol_failure_is_returned_as_it_is() -> None:
    trace = Trace(
        level=2,
        sut="impl",
        steps=(TraceStep(CORE[0], {"ok": True}, None),),
        failure=Failure("sut", "the implementation closed its output"),
    )
    assert minimize(trace, sut=_sut()) is trace
