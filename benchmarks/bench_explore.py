"""Explorer throughput: distinct states per second at the default bounds, and what symmetry
reduction saves.

The rate is measured with 2 worker processes (``statemeta verify``'s default on the 2-core CI
machine) against 1 worker in the same run; the per-transition cost of the serial search is the
floor the rate is made of (docs/formal-checking.md, Throughput). The serial rate is also set
against the serial rate of the engine before issue 19's item 4 (full keys in the seen set),
recorded on this machine (``RECORDED_SERIAL``). Partial-order reduction is measured against
the same search without it (and without budget subsumption, which it turns off), in the same
run: transitions run, and the rate. The nodes explored with budget subsumption, and the state
count with symmetry reduction, are compared against the same search without each; the whole
search's seconds against the recorded engine's (the fair comparison once subsumption explores
fewer nodes for the same states).
Goal (issues 7 and 19): >= 20,000 distinct states/s on the 2-core CI machine. The ceiling row
shows why it is not met: it divides the states by the time the operations on the reference
take (``Stats.step_seconds``) shared between the workers, the rate of a search whose key,
copies and bookkeeping cost nothing, and it is below the goal.

    python -m benchmarks.bench_explore [--quick]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import attrs

from benchmarks._table import print_module
from statemeta.explore.bounds import Bounds
from statemeta.explore.search import Exploration, explore

GOAL_STATES_PER_S = 20_000
WORKERS = 2
RECORDED_SERIAL = 2_367.5
"""States/s of ``statemeta explore --workers 1 --json`` at the default bounds, commit f6fcd3a
(before the fingerprinted seen set), 2026-12-05 11:24 UTC, on the 2-core machine with a load
average of 0.25. Not recorded for ``--quick`` (depth 3): that row then has no baseline."""
RECORDED_SECONDS = 17_466 / RECORDED_SERIAL
"""The same search's seconds (17,466 states then: every node explored; budget subsumption now
explores fewer nodes for the same states, so the time to the same verdict is the fair
comparison)."""


def _bounds(quick: bool) -> Bounds:
    """The default bounds (depth 3 with --quick: a tenth of the states)."""
    return attrs.evolve(Bounds(), max_depth=3) if quick else Bounds()


def _median_rate(runs: list[Exploration]) -> float:
    return statistics.median(r.stats.states_per_second for r in runs)


def run(quick: bool) -> list[dict[str, Any]]:
    bounds = _bounds(quick)
    repeats = 1 if quick else 3
    parallel = [explore(bounds, workers=WORKERS) for _ in range(repeats)]
    serial = [explore(bounds) for _ in range(repeats)]
    plain = explore(bounds, symmetry=False)
    unsubsumed = explore(bounds, subsume=False)
    rate, serial_rate = _median_rate(parallel), _median_rate(serial)
    recorded = None if quick else RECORDED_SERIAL
    serial_seconds = statistics.median(r.stats.seconds for r in serial)
    per_transition = statistics.median(r.stats.seconds / r.stats.transitions for r in serial)
    per_step = statistics.median(r.stats.step_seconds / r.stats.transitions for r in serial)
    ceiling = statistics.median(
        r.stats.states * WORKERS / r.stats.step_seconds for r in parallel
    )  # the rate if the key, the copies and the search cost nothing
    states, plain_states = serial[0].stats.states, plain.stats.states
    depth = bounds.max_depth
    return [
        {
            "name": f"explore states/s (default bounds, depth {depth}, {WORKERS} workers)",
            "value": round(rate, 1),
            "unit": "states/s",
            "baseline": "1 worker",
            "baseline_value": round(serial_rate, 1),
            "ratio": round(rate / serial_rate, 2) if serial_rate else None,
            "goal": f">= {GOAL_STATES_PER_S} states/s",
        },
        {
            "name": f"explore states/s (depth {depth}, 1 worker)",
            "value": round(serial_rate, 1),
            "unit": "states/s",
            "baseline": "" if recorded is None else "f6fcd3a, recorded 2026-12-05",
            "baseline_value": recorded,
            "ratio": None if recorded is None else round(serial_rate / recorded, 2),
            "goal": "",
        },
        {
            "name": f"nodes explored with budget subsumption (depth {depth}, 1 worker)",
            "value": states,
            "unit": "nodes",
            "baseline": "without it",
            "baseline_value": unsubsumed.stats.states,
            "ratio": round(states / unsubsumed.stats.states, 3),
            "goal": "< 1x",  # the same states checked, fewer nodes explored
        },
        {
            "name": f"seconds for the whole search (depth {depth}, 1 worker)",
            "value": round(serial_seconds, 2),
            "unit": "s",
            "baseline": "" if recorded is None else "f6fcd3a, recorded 2026-12-05",
            "baseline_value": None if recorded is None else round(RECORDED_SECONDS, 2),
            "ratio": None if recorded is None else round(serial_seconds / RECORDED_SECONDS, 2),
            "goal": "",
        },
        {
            "name": f"explore cost per transition run (depth {depth}, 1 worker)",
            "value": round(per_transition * 1e6, 1),
            "unit": "us",
            "baseline": "the operation on the reference alone",
            "baseline_value": round(per_step * 1e6, 1),
            "ratio": round(per_transition / per_step, 2),
            "goal": "",
        },
        {
            "name": f"states/s ceiling: the operations alone, {WORKERS} workers in parallel "
            f"(depth {depth})",
            "value": round(ceiling, 1),
            "unit": "states/s",
            "baseline": f"measured, {WORKERS} workers",
            "baseline_value": round(rate, 1),
            "ratio": round(ceiling / rate, 2),
            "goal": "",  # the most any search engine over this reference could reach here
        },
        {
            "name": f"distinct states (default bounds, depth {depth}, symmetry)",
            "value": states,
            "unit": "states",
            "baseline": "no symmetry reduction",
            "baseline_value": plain_states,
            "ratio": round(states / plain_states, 3),
            "goal": "< 1x",  # fewer states than without the reduction
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="depth 3, one run")
    args = parser.parse_args()
    print_module("explore", run(args.quick))


if __name__ == "__main__":
    main()
