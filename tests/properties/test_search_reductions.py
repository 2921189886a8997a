"""Budget subsumption and refusals on unmapped tasks lose no verdict: with them the explorer
takes the same lifecycle and role rows, sees the same statuses and reports the same
violations (invariant, operation, length, kind) as without them, for the reference in both
semantics and for every broken variant; refusals leave the states found as they are and only
spare the transitions back to the same state."""

from __future__ import annotations

import attrs
import pytest

from statemeta.explore.bounds import Bounds
from statemeta.explore.search import Exploration, explore
from statemeta.harness import operations
from statemeta.harness.variants import VARIANTS
from tests.properties.test_explore_variants import CATCHING_BOUNDS

SMALL = attrs.evolve(Bounds(), max_depth=3)


def verdicts(result: Exploration) -> tuple[object, ...]:
    """What a reduction must keep: rows, statuses, violations."""
    return (
        set(result.coverage.lifecycle_rows),
        set(result.coverage.role_rows),
        result.statuses,
        sorted(
            (v.invariant, v.operation, len(v.counterexample.steps), v.counterexample.kind)
            for v in result.violations
        ),
        result.complete,
    )


@pytest.mark.parametrize("semantics", ["intended", "seed"])
def test_subsumption_keeps_every_verdict_of_the_reference(semantics: str) -> None:
    plain = explore(SMALL, semantics=semantics, all_violations=True, subsume=False)
    reduced = explore(SMALL, semantics=semantics, all_violations=True)
    assert verdicts(reduced) == verdicts(plain)
    assert reduced.stats.states < plain.stats.states
    assert reduced.stats.transitions < plain.stats.transitions


BUDGETED_BOUNDS = {
    name: bounds for name, bounds in CATCHING_BOUNDS.items()
    if any(left for _, left in bounds.budgets())
}
"""The variants whose catching bounds give some budget (the others have nothing to subsume:
every node's budgets are all 0)."""


def test_the_other_variants_bounds_hold_nothing_to_subsume() -> None:
    for name in VARIANTS.keys() - BUDGETED_BOUNDS.keys():
        bounds = CATCHING_BOUNDS[name]
        assert explore(attrs.evolve(bounds, max_depth=2), variant=name).stats.states == (
            explore(attrs.evolve(bounds, max_depth=2), variant=name, subsume=False).stats.states
        )


@pytest.mark.parametrize("variant", sorted(BUDGETED_BOUNDS))
def test_subsumption_keeps_every_verdict_of_each_variant(variant: str) -> None:
    bounds = BUDGETED_BOUNDS[variant]
    plain = explore(bounds, variant=variant, all_violations=True, subsume=False)
    reduced = explore(bounds, variant=variant, all_violations=True)
    assert plain.violations  # the variant is caught...
    assert verdicts(reduced) == verdicts(plain)  # ...the same way, at the same lengths
    assert reduced.stats.refused == 0  # a variant may not refuse: every call is run


@pytest.mark.parametrize("semantics", ["intended", "seed"])
def test_refusals_keep_every_state_and_verdict(
    semantics: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusing = explore(SMALL, semantics=semantics, all_violations=True)
    for name, spec in operations.OP_SPECS.items():
        monkeypatch.setitem(operations.OP_SPECS, name, attrs.evolve(spec, unmapped_result=None))
    running = explore(SMALL, semantics=semantics, all_violations=True)
    assert verdicts(refusing) == verdicts(running)
    assert refusing.stats.per_depth == running.stats.per_depth
    assert running.stats.refused == 0 < refusing.stats.refused
    assert refusing.stats.transitions + refusing.stats.refused == running.stats.transitions


def test_workers_find_what_the_serial_search_finds() -> None:
    serial = explore(SMALL)
    parallel = explore(SMALL, workers=2)
    assert verdicts(parallel) == verdicts(serial)
    assert (parallel.stats.per_depth, parallel.stats.transitions, parallel.stats.refused) == (
        serial.stats.per_depth, serial.stats.transitions, serial.stats.refused
    )
