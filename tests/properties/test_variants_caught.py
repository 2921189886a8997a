"""Proof of teeth: the stateful suite catches every broken variant of the meta.

Each variant runs as the system under test beside the reference (differential mode) with its
own check mode on, so it is caught by an invariant it breaks, by the durable model, or by a
divergence from the reference: always a ``Divergence``. An exception of any other kind is a
failure of the reference itself and fails the test. ``pytest -s`` prints, per variant, what
caught it, the time to the first failure and the length of the shrunk counterexample.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from statemeta.harness.machine import Divergence, Step, build_machine
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.variants import VARIANTS

MAX_SHRUNK_STEPS = 10
BUDGETS = (
    settings(max_examples=1_000, stateful_step_count=15, report_multiple_bugs=False, database=None),
    settings(max_examples=1_000, stateful_step_count=50, report_multiple_bugs=False, database=None),
)
"""Short examples first (before stop_all, notify_close or a stop event park every task in
STOP), then long ones. Generation stops at the first failure: a budget is only spent in
full on a variant it does not catch."""

NOT_CAUGHT_HERE = {
    "waiting_fired_lifo",
    "waiting_fired_early",
    "dropping_kept_at_load",
    "second_heartbeat_chain",
    "paused_count_self_pause",
}
"""Not caught reliably by this random search within these budgets (issue 5 stays open on it).
waiting_fired_lifo / waiting_fired_early need one task driven through 4 to 7 precise
lifecycle events in a row; waiting_fired_early shrinks to 17 steps when found. The other
three were caught in some full runs and missed in others with the same settings (why is not
yet understood: open work). The exhaustive explorer catches
every variant, deterministically (tests/properties/test_explore_variants.py)."""

_REPORT: dict[str, tuple[str, float, float, int]] = {}


@pytest.mark.parametrize("name", sorted(VARIANTS.keys() - NOT_CAUGHT_HERE))
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
    steps: list[Step] = Timed.last_steps
    _REPORT[name] = (
        caught.kind + ": " + caught.detail[:50],
        first_failure[0],
        time.perf_counter() - start,
        len(steps),
    )
    assert len(steps) <= MAX_SHRUNK_STEPS, (
        f"{name}: the shrunk counterexample has {len(steps)} steps: "
        + "; ".join(repr(op) for op, _ref, _sut in steps)
    )


def teardown_module() -> None:
    print(f"\n{'variant':34} {'first (s)':>9} {'total (s)':>9} {'steps':>5}  caught by")
    for name, (by, first, total, length) in sorted(_REPORT.items()):
        print(f"{name:34} {first:9.2f} {total:9.2f} {length:5}  {by}")
