"""Explorer throughput: distinct states per second, and what symmetry reduction saves.

The baseline is the same search without symmetry reduction (run in the same process): the
ratio of state counts shows what canonicalisation removes, the ratio of rates what it costs.
Goal (issue 7): >= 20,000 distinct states/s on the 2-core CI machine.

    python -m benchmarks.bench_explore [--quick]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from statemeta.explore.bounds import Bounds
from statemeta.explore.search import explore

GOAL_STATES_PER_S = 20_000


def _bounds(quick: bool) -> Bounds:
    return Bounds(
        stream_tasks=2,
        fill_history=False,
        trigger_timer=True,
        role_changes=1,
        start_rounds=1,
        reopens=1,
        faults=1,
        clock_advances=1,
        max_depth=2 if quick else 3,
    )


def run(quick: bool) -> list[dict[str, Any]]:
    bounds = _bounds(quick)
    repeats = 1 if quick else 3
    reduced = [explore(bounds) for _ in range(repeats)]
    plain = [explore(bounds, symmetry=False) for _ in range(repeats)]
    rate = statistics.median(r.stats.states_per_second for r in reduced)
    plain_rate = statistics.median(r.stats.states_per_second for r in plain)
    states, plain_states = reduced[0].stats.states, plain[0].stats.states
    transitions = statistics.median(
        r.stats.transitions / r.stats.seconds for r in reduced if r.stats.seconds
    )
    return [
        {
            "name": f"explore states/s (depth {bounds.max_depth}, symmetry)",
            "value": round(rate, 1),
            "unit": "states/s",
            "baseline": "no symmetry reduction",
            "baseline_value": round(plain_rate, 1),
            "ratio": round(rate / plain_rate, 2) if plain_rate else None,
            "goal": f">= {GOAL_STATES_PER_S}",
        },
        {
            "name": f"explore transitions/s (depth {bounds.max_depth}, symmetry)",
            "value": round(transitions, 1),
            "unit": "transitions/s",
            "baseline": "",
            "baseline_value": None,
            "ratio": None,
            "goal": "",
        },
        {
            "name": f"distinct states (depth {bounds.max_depth}, symmetry)",
            "value": states,
            "unit": "states",
            "baseline": "no symmetry reduction",
            "baseline_value": plain_states,
            "ratio": round(states / plain_states, 3),
            "goal": "< 1 (fewer states)",
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller search, one run")
    args = parser.parse_args()
    for row in run(args.quick):
        print(
            f"{row['name']:<48} {row['value']:>10} {row['unit']:<14} "
            f"baseline {row['baseline_value']} ({row['baseline'] or '-'}), "
            f"ratio {row['ratio']}, goal {row['goal'] or '-'}"
        )


if __name__ == "__main__":
    main()
