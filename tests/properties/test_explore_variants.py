"""Proof of teeth for the explorer: every broken variant fails an exhaustive search, with a
shortest counterexample whose trace replays against the variant.

Each variant is explored under the smallest bounds that contain its shortest counterexample
(found by hand, then confirmed by BFS): the whole table runs in CI in seconds. The default
bounds of ``statemeta verify`` catch the variants whose counterexample fits their depth;
docs/formal-checking.md lists which.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from statemeta.explore.bounds import Bounds
from statemeta.explore.cli_explore import write_counterexample
from statemeta.explore.search import explore
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import read_trace, replay
from statemeta.harness.variants import VARIANTS

_ONE_TASK = Bounds(
    stream_tasks=1, fill_history=False, role_changes=0, start_rounds=0, reopens=0, faults=0,
    clock_advances=0, max_depth=3,
)

CATCHING_BOUNDS: dict[str, Bounds] = {
    "acquire_dropping": _ONE_TASK,
    "delete_without_commit": attrs.evolve(_ONE_TASK, reopens=1),
    "dropping_kept_at_load": attrs.evolve(_ONE_TASK, reopens=1, max_depth=5),
    "memory_before_write": attrs.evolve(_ONE_TASK, faults=1, max_depth=2),
    "numeric_load_order": attrs.evolve(_ONE_TASK, stream_tasks=2),
    "paused_count_forgets_stop": _ONE_TASK,
    "paused_count_self_pause": _ONE_TASK,
    "register_without_commit": attrs.evolve(_ONE_TASK, reopens=1, max_depth=2),
    "release_below_zero": attrs.evolve(_ONE_TASK, max_depth=2),
    "second_heartbeat_chain": attrs.evolve(
        _ONE_TASK, role_changes=2, clock_advances=1, max_depth=4
    ),
    "start_round_by_count": attrs.evolve(_ONE_TASK, stream_tasks=2, start_rounds=1, max_depth=4),
    "stream_count_counts_fill_history": attrs.evolve(
        _ONE_TASK, stream_tasks=0, fill_history=True, max_depth=1
    ),
    # HALT is sent only to a stream task with a fill-history task (its precondition): f1
    "waiting_fired_early": attrs.evolve(
        _ONE_TASK, stream_tasks=0, fill_history=True, max_depth=5
    ),
    "waiting_fired_lifo": attrs.evolve(_ONE_TASK, max_depth=7),
}
"""Variant -> bounds whose depth is its shortest counterexample's length."""




def test_every_variant_has_catching_bounds() -> None:
    assert set(CATCHING_BOUNDS) == set(VARIANTS)


@pytest.mark.parametrize("name", sorted(CATCHING_BOUNDS))
def test_the_explorer_catches_the_variant(name: str, tmp_path: Path) -> None:
    bounds = CATCHING_BOUNDS[name]
    result = explore(bounds, variant=name)
    cex = result.counterexample
    assert cex is not None, f"variant {name} passed the bounds {bounds}"
    assert not result.complete
    # BFS: nothing shorter exists, and the bounds were chosen as tight as the shortest path.
    assert len(cex.steps) == bounds.max_depth == result.stats.depth + 1
    path = tmp_path / f"{name}.json"
    write_counterexample(result, path)
    trace = read_trace(path)
    assert trace.ops == cex.ops
    again = replay(
        trace.ops,
        level=trace.level,
        sut=ReferenceAdapter(name, check_invariants=False),
        sut_command=trace.sut,
    )
    assert again is not None, f"the counterexample of {name} does not fail when replayed"


CHEAP = sorted(name for name, bounds in CATCHING_BOUNDS.items() if bounds.max_depth <= 3)
"""The variants whose whole last level is cheap to finish (going on past the failures
explores it all: waiting_fired_lifo's depth 7 takes about a minute)."""


@pytest.mark.parametrize("name", CHEAP)
def test_every_violation_of_the_variant_is_shortest_and_replays(name: str, tmp_path: Path) -> None:
    bounds = CATCHING_BOUNDS[name]
    first = explore(bounds, variant=name)
    every = explore(bounds, variant=name, all_violations=True)
    assert every.complete and every.violations
    assert every.violations[0].counterexample == first.counterexample  # the default's, unchanged
    pairs = [(v.invariant, v.operation) for v in every.violations]
    assert len(set(pairs)) == len(pairs)
    for number, violation in enumerate(every.violations):
        cex = violation.counterexample
        assert len(cex.steps) == bounds.max_depth  # nothing shorter: the bounds are tight
        path = tmp_path / f"{number}.json"
        write_counterexample(every, path, cex)
        trace = read_trace(path)
        again = replay(
            trace.ops,
            level=trace.level,
            sut=ReferenceAdapter(name, check_invariants=False),
            sut_command=trace.sut,
        )
        # It fails again (the harness's durable model may see an uncommitted write sooner).
        assert again is not None and cex.ops[: len(again.ops)] == again.ops, name
