"""Explorer throughput: distinct states per second at the default bounds, and what symmetry
reduction saves.

The rate is measured with 2 worker processes (``statemeta verify``'s default on the 2-core CI
machine) against 1 worker in the same run; the per-transition cost of the serial search is the
floor the rate is made of (docs/formal-checking.md, Throughput). The state count with symmetry
reduction is compared against the same search without it.
Goal (issue 7): >= 20,000 distinct states/s on the 2-core CI machine.

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
    rate, serial_rate = _median_rate(parallel), _median_rate(serial)
    per_transition = statistics.median(r.stats.seconds / r.stats.transitions for r in serial)
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
            "name": f"explore cost per transition run (depth {depth}, 1 worker)",
            "value": round(per_transition * 1e6, 1),
            "unit": "us",
            "baseline": "",
            "baseline_value": None,
            "ratio": None,
            "goal": "",
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
