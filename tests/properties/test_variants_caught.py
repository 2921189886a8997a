"""Proof of teeth: the stateful suite catches every broken variant of the meta.

Each variant runs as the system under test beside the reference (differential mode) with its
own check mode on, so it is caught by an invariant it breaks, by the durable model, or by a
divergence from the reference: always a ``Divergence``. An exception of any other kind is a
failure of the reference itself and fails the test. As in ``statemeta check``, Hypothesis
searches and statemeta.harness.minimize shrinks the counterexample (it says why); the shrunk
trace must be short and still fail when replayed. ``pytest -s`` prints, per variant, what
caught it, the time to the first failure, the length of the example that failed first and
of its shrunk trace.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from statemeta.harness.machine import Divergence, build_machine
from statemeta.harness.minimize import minimize, without_shrinking
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import divergence_trace, replay
from statemeta.harness.variants import VARIANTS

MAX_SHRUNK_STEPS = 10
BUDGETS = tuple(
    without_shrinking(
        settings(max_examples=1_000, stateful_step_count=steps, report_multiple_bugs=False,
                 database=None)
    )
    for steps in (15, 50)
)
"""Short examples first (before stop_all, notify_close or a stop event park every task in
STOP), then long ones. Generation stops at the first failure: a budget is only spent in
full on a variant it does not catch."""

_REPORT: dict[str, tuple[str, float, float, int, int]] = {}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_is_caught(name: str) -> None:
    machine = build_machine(3, sut=ReferenceAdapter(variant=name), name=f"Variant_{name}")
    first_failure: list[float] = []
    start = time.perf_counter()

    class Timed(machine):  # type: ignore[valid-type, misc]
        def step(self, op: Op) -> None:
            try:
                super().step(op)
            except Divergence:
                if not first_failure:
                    first_failure.append(time.perf_counter() - start)
                raise

    caught: Divergence | None = None
    for budget in BUDGETS:
        try:
            run_state_machine_as_test(Timed, settings=budget)
        except Divergence as e:
            caught = e
            break
    assert caught is not None, f"variant {name} was not caught"
    sut = ReferenceAdapter(variant=name)
    trace = minimize(divergence_trace(caught, level=3, sut=name, seed=None), sut=sut)
    _REPORT[name] = (
        caught.kind + ": " + caught.detail[:50],
        first_failure[0],
        time.perf_counter() - start,
        len(caught.steps),
        len(trace.steps),
    )
    assert len(trace.steps) <= MAX_SHRUNK_STEPS, (
        f"{name}: the shrunk counterexample has {len(trace.steps)} steps: "
        + "; ".join(map(repr, trace.ops))
    )
    again = replay(trace.ops, level=3, sut=sut, sut_command=name)
    assert again is not None and again.failure.kind == trace.failure.kind


def teardown_module() -> None:
    print(f"\n{'variant':34} {'first (s)':>9} {'total (s)':>9} {'found':>6} {'shrunk':>6}"
          "  caught by")
    for name, (by, first, total, found, shrunk) in sorted(_REPORT.items()):
        print(f"{name:34} {first:9.2f} {total:9.2f} {found:6} {shrunk:6}  {by}")
