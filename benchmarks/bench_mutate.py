"""Mutation analysis: mutants checked per second, the directed phase alone against both phases.

What ``statemeta mutate --sample N --seed 1`` runs, on one worker, over a fixed sample of the
mutants of the start round and the launch: once with the directed phase alone
(``--directed-only``), once with the random phase for the mutants it leaves (the command's
default). The baseline of the directed-only rate is the rate of both phases in the same run:
the ratio says what the random phase costs, which is spent only on the mutants the directed
corpus does not kill (the survivors and the equivalent mutants), so it measures how much the
directed-first order saves (measured in the first sitting, docs/mutation.md: median 2.0 s for a
mutant the directed phase kills, 50 s for a survivor, on a shared machine).
Run: ``python -m benchmarks.bench_mutate [--quick]``.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks._table import print_module
from statemeta.harness.mutate import analyse, select_mutants

MODULES = ("statemeta.meta.start_round", "statemeta.meta.launch")
SEED = 1


def run(quick: bool) -> list[dict[str, Any]]:
    mutants = select_mutants(MODULES, sample=2 if quick else 6, seed=SEED)
    directed = analyse(mutants, seed=SEED, workers=1, random_phase=False)
    both = analyse(mutants, seed=SEED, workers=1)
    directed_rate = len(mutants) / directed.seconds
    both_rate = len(mutants) / both.seconds
    left = sum(r.status != "killed" for r in directed.results)
    return [
        {
            "name": f"mutants/s, directed phase only ({len(mutants)} mutants, "
                    f"{len(mutants) - left} killed)",
            "value": directed_rate, "unit": "mutants/s",
            "baseline": f"directed + random ({left} mutants to the random phase)",
            "baseline_value": both_rate,
            "ratio": directed_rate / both_rate, "goal": "",
        },
        {
            "name": "score, directed + random",
            "value": both.score() or 0.0, "unit": "share",
            "baseline": "directed only", "baseline_value": directed.score() or 0.0,
            "ratio": None, "goal": "",
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two mutants")
    args = parser.parse_args()
    print_module("mutate", run(args.quick))


if __name__ == "__main__":
    main()
