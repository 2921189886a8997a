"""The conformance harness: differential steps per second, in process and over the protocol.

Each level runs the reference against the reference through ``run_check`` (what ``statemeta
check`` runs): in process (a ReferenceAdapter as the implementation) and over the subprocess
protocol (``python -m statemeta.serve``). The baseline, measured in the same run, is a bare
Hypothesis stateful machine with trivial rules: the cost of Hypothesis itself per step.
Goals: >= 1,000 steps/s in process, >= 500 over the protocol.

One more row: TDengine's compiled C (``statemeta tdengine serve``, the tree of
``STATEMETA_TDENGINE_SRC`` or ../shared/tdengine/63494de7) at level 2, checked as seed with
``--keep-going`` and no directed phase (it diverges: its rate includes shrinking and naming
each divergence), against the same run of the reference served as seed, measured beside it.
Run: ``python -m benchmarks.bench_harness [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test, rule
from hypothesis.strategies import integers

from benchmarks._table import print_module
from statemeta.harness.adapter import Adapter
from statemeta.harness.check import KeepGoing, Progress, check_settings, run_check
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.tdengine.build import build

IN_PROCESS_GOAL = 1_000.0
SUBPROCESS_GOAL = 500.0


class _Trivial(RuleBasedStateMachine):
    """The baseline: two rules that add to a counter."""

    steps = 0

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    @rule(n=integers(0, 9))
    def add(self, n: int) -> None:
        type(self).steps += 1
        self.total += n

    @rule()
    def reset(self) -> None:
        type(self).steps += 1
        self.total = 0


def _bare_rate(examples: int, steps: int) -> float:
    _Trivial.steps = 0
    test = get_state_machine_test(
        _Trivial,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    began = time.perf_counter()
    test()
    return _Trivial.steps / (time.perf_counter() - began)


def _check_rate(sut: Adapter, level: int, examples: int, steps: int) -> float:
    progress = Progress(None)
    report = run_check(
        sut,
        level=level,
        hypothesis_settings=check_settings(examples, steps),
        sut_label="reference",
        seed_value=0,
        progress=progress,
    )
    assert report.trace is None, "the reference must conform to itself"
    return report.steps / report.seconds


def _keep_going_rate(sut: Adapter, level: int, examples: int, steps: int) -> float:
    """A ``check --semantics seed --keep-going --no-directed`` run's steps per second."""
    with tempfile.TemporaryDirectory(prefix="statemeta-bench-") as home:
        report = run_check(
            sut,
            level=level,
            hypothesis_settings=check_settings(examples, steps),
            sut_label="bench",
            seed_value=0,
            semantics="seed",
            keep_going=KeepGoing(Path(home) / "t.json"),
            directed=False,
        )
    return report.steps / report.seconds


def _tdengine_rows(examples: int, steps: int, repeats: int) -> list[dict[str, Any]]:
    """The compiled C at level 2 beside the reference served as seed, both in this run; no
    row (and a line on stderr) without a TDengine tree."""
    beside = Path(__file__).resolve().parents[2] / "shared/tdengine/63494de7"
    tree = Path(os.environ.get("STATEMETA_TDENGINE_SRC") or beside)
    if not tree.is_dir():
        print(f"bench harness: no TDengine tree at {tree} (set STATEMETA_TDENGINE_SRC): "
              "the compiled C's row is left out", file=sys.stderr)  # fmt: skip
        return []
    build(tree)  # once, before timing
    measures = {}
    for name, command in (
        ("c", f"{sys.executable} -m statemeta tdengine serve --src {tree}"),
        ("ref", f"{sys.executable} -m statemeta.serve --semantics seed"),
    ):
        with SubprocessAdapter(command) as served:
            served.hello()
            measures[name] = _median(partial(_keep_going_rate, served, 2, examples, steps),
                                     repeats)  # fmt: skip
    return [{
        "name": "TDengine's compiled C over the protocol, level 2 (seed, --keep-going)",
        "value": measures["c"],
        "unit": "steps/s",
        "baseline": "ref (seed) over the protocol, level 2, the same run",
        "baseline_value": measures["ref"],
        "ratio": measures["c"] / measures["ref"],
        "goal": "",
    }]  # fmt: skip


def _median(measure: Callable[[], float], repeats: int) -> float:
    return statistics.median(measure() for _ in range(repeats))


def _row(name: str, value: float, baseline: float, goal: str) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "unit": "steps/s",
        "baseline": "bare Hypothesis machine",
        "baseline_value": baseline,
        "ratio": value / baseline,
        "goal": goal,
    }


def run(quick: bool) -> list[dict[str, Any]]:
    """Measures every level both ways and the baseline, interleaved, in one run."""
    examples, steps, repeats = (10, 50, 1) if quick else (50, 50, 3)
    bare = _median(lambda: _bare_rate(examples, steps), repeats)
    rows = []
    in_process = ReferenceAdapter(check_invariants=False)
    with SubprocessAdapter(f"{sys.executable} -m statemeta.serve") as served:
        served.hello()
        for level in (1, 2, 3):
            local = _median(partial(_check_rate, in_process, level, examples, steps), repeats)
            remote = _median(partial(_check_rate, served, level, examples, steps), repeats)
            rows.append(
                _row(
                    f"ref vs ref in process, level {level}",
                    local,
                    bare,
                    f">= {IN_PROCESS_GOAL:,.0f} steps/s",
                )
            )
            rows.append(
                _row(
                    f"ref vs ref over the protocol, level {level}",
                    remote,
                    bare,
                    f">= {SUBPROCESS_GOAL:,.0f} steps/s",
                )
            )
    return rows + _tdengine_rows(examples, 20, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 examples, one repeat")
    args = parser.parse_args()
    print_module("harness", run(args.quick))


if __name__ == "__main__":
    main()
