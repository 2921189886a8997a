"""Coverage-directed checking: classes of behaviour reached against operations run.

What ``statemeta check --sut "python -m statemeta.serve" --level 3`` runs, over the protocol:
the directed phase alone (the shipped corpus: a shortest path to every class reachable within
the explorer's bounds), against the random phase alone (``--no-directed``) given the same
number of operations and ten times as many. The baseline of each class count is the random
phase with the same operations, measured in the same run. Goals: the directed phase reaches
every class of the corpus in under 30 s, and more classes than the random phase with the same
operations. Measured once (not a goal, docs/coverage.md): steering the random phase toward new
classes with ``hypothesis.target`` reached no more classes than plain random examples.
Run: ``python -m benchmarks.bench_coverage [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import Any

from benchmarks._table import print_module
from statemeta.harness.check import check_settings, run_check, unchecked_reference
from statemeta.harness.directed import counting_reference, load_corpus, run_directed
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.semantics import Semantics

LEVEL = 3
STEPS = 50
"""Operations per random example (check's default)."""
DIRECTED_GOAL_S = 30.0


def _random_classes(sut: SubprocessAdapter, operations: int, seed: int) -> tuple[int, int]:
    """Random examples only, about ``operations`` operations: (classes of the corpus reached,
    operations run)."""
    report = run_check(
        sut,
        level=LEVEL,
        hypothesis_settings=check_settings(max(1, operations // STEPS), STEPS),
        sut_label="reference",
        seed_value=seed,
        directed=False,
    )
    assert report.trace is None and report.coverage is not None
    return int(report.coverage.to_json()["reached_reachable"]), report.steps


def run(quick: bool) -> list[dict[str, Any]]:
    corpus = load_corpus(LEVEL, Semantics.INTENDED)
    with SubprocessAdapter(f"{sys.executable} -m statemeta.serve") as served:
        served.hello()
        reached: Counter[str] = Counter()
        reference = counting_reference(unchecked_reference(Semantics.INTENDED), reached)
        began = time.perf_counter()
        result = run_directed(corpus, sut=served, reference=reference)
        seconds = time.perf_counter() - began
        assert result.divergence is None, "the reference must conform to itself"
        directed_ops = sum(len(path) for path in corpus.runs())
        directed_classes = len(set(corpus.paths) & set(reached))
        same, same_ops = _random_classes(served, directed_ops, seed=1)
        tenfold, tenfold_ops = (0, 0) if quick else _random_classes(
            served, 10 * directed_ops, seed=1)
    rows = [
        {
            "name": f"directed phase, level {LEVEL}, over the protocol ({result.runs} paths, "
                    f"{directed_ops} operations)",
            "value": seconds, "unit": "s",
            "baseline": "", "baseline_value": None, "ratio": None,
            "goal": f"<= {DIRECTED_GOAL_S:.0f} s",
        },
        {
            "name": f"classes reached by the directed phase (of {len(corpus.paths)})",
            "value": directed_classes, "unit": "classes",
            "baseline": f"random only, {same_ops} operations", "baseline_value": same,
            "ratio": directed_classes / same if same else None,
            "goal": ">= 1.5x",
        },
    ]
    if not quick:
        rows.append({
            "name": f"classes reached by random only, {tenfold_ops} operations",
            "value": tenfold, "unit": "classes",
            "baseline": "the directed phase", "baseline_value": directed_classes,
            "ratio": tenfold / directed_classes, "goal": "",
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no tenfold random run")
    args = parser.parse_args()
    print_module("coverage", run(args.quick))


if __name__ == "__main__":
    main()
