"""Partial-order reduction loses no verdict: with sleep sets the explorer finds the same
states at the same depths, takes the same lifecycle and role rows, sees the same statuses and
reports the same violations (invariant, operation, length) as without them, for the
reference in both semantics and for every broken variant, while running fewer transitions.
(The reduced search does not subsume nodes by their budgets: it is compared with the plain
search without that either.)"""

from __future__ import annotations

import attrs
import pytest

from statemeta.explore.bounds import Bounds
from statemeta.explore.search import Exploration, explore
from statemeta.explore.state import related_slots
from statemeta.harness.variants import VARIANTS
from tests.properties.test_explore_variants import CATCHING_BOUNDS
from tests.properties.test_search_reductions import verdicts


def _verdicts(result: Exploration) -> tuple[object, ...]:
    return (result.stats.states, result.stats.per_depth, *verdicts(result))


@pytest.mark.parametrize("semantics", ["intended", "seed"])
def test_the_reference_keeps_every_verdict(semantics: str) -> None:
    bounds = attrs.evolve(Bounds(), max_depth=3)
    plain = explore(bounds, semantics=semantics, all_violations=True, subsume=False)
    reduced = explore(bounds, semantics=semantics, all_violations=True, partial_order=True)
    assert _verdicts(reduced) == _verdicts(plain)
    assert reduced.partial_order and reduced.stats.slept > 0
    assert reduced.stats.transitions + reduced.stats.slept == plain.stats.transitions
    assert plain.stats.slept == 0


WIDENED: dict[str, Bounds] = {
    name: attrs.evolve(bounds, stream_tasks=2, max_depth=max(bounds.max_depth, 3))
    for name, bounds in CATCHING_BOUNDS.items()
    if bounds.max_depth <= 4
}
"""Each variant whose counterexample is at most 4 long, with two plain stream tasks (which the
reduction can reorder) beside its catching bounds' tasks, at depth 3 at least."""


def test_the_other_variants_bounds_hold_nothing_to_reorder() -> None:
    """The deeper variants' catching bounds hold one task or the related pair f1, h1: the
    reduction never applies there (the variants test's search is the plain one)."""
    for name in VARIANTS.keys() - WIDENED.keys():
        related = related_slots(CATCHING_BOUNDS[name].slots)
        assert all(others == related.keys() - {slot} for slot, others in related.items()), name


@pytest.mark.parametrize("variant", sorted(WIDENED))
def test_every_variant_keeps_every_verdict(variant: str) -> None:
    bounds = WIDENED[variant]
    plain = explore(bounds, variant=variant, all_violations=True, subsume=False)
    reduced = explore(bounds, variant=variant, all_violations=True, partial_order=True)
    assert plain.violations  # the variant is caught...
    assert _verdicts(reduced) == _verdicts(plain)  # ...the same way, at the same lengths
    assert reduced.stats.slept > 0


def test_workers_find_what_the_serial_reduced_search_finds() -> None:
    bounds = attrs.evolve(Bounds(), max_depth=3)
    serial = explore(bounds, partial_order=True)
    parallel = explore(bounds, partial_order=True, workers=2)
    assert _verdicts(parallel) == _verdicts(serial)
    assert (parallel.stats.transitions, parallel.stats.slept) == (
        serial.stats.transitions, serial.stats.slept
    )
