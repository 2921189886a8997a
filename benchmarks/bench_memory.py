"""Memory over long runs: RSS growth per 10,000 operations of ``campaign`` and ``check``.

Each figure is measured in a fresh process (``--worker``), so that one run's freed memory
cannot hide the next one's growth: it runs the campaign (level 3, the checked reference) or a
level-3 check of the reference served over the protocol (``python -m statemeta.serve``),
reads its RSS (and the served child's) at the start of every example, drops the samples of
the warm-up (``WARMUP_EXAMPLES``), and reports the least-squares slope of RSS over
operations, per 10,000. The baseline, measured in the same run the same way (over fewer
examples: its growth is large), is the search as one Hypothesis run (what statemeta did
before ``run_machine`` split it: Hypothesis keeps every example of a run). Goal: under 1 MB
per 10,000 operations. ``--quick`` runs examples of 5 steps in Hypothesis runs of 100 rule
calls (``BATCH_EXAMPLES_MIN`` examples) instead of 200 steps in runs of ``BATCH_CALLS``
(10,000): the warm-up and many runs, 55.9 s in the run docs/property-suite.md shows, 252 s for one
run at a load average of about 7 (2026-12-07).
Run: ``python -m benchmarks.bench_memory [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

from benchmarks._table import print_module
from statemeta.harness import machine
from statemeta.harness.campaign import run_campaign
from statemeta.harness.check import Progress, check_settings, run_check
from statemeta.harness.subprocess_adapter import SubprocessAdapter

GOAL_MB = 1.0
PER_OPS = 10_000
UNIT = "MB/10k ops"
WARMUP_EXAMPLES = 1_100
"""Examples before the first sample kept: Hypothesis's strategy cache (1,024 entries, a few
new ones per example of a machine with an ``initialize`` rule) is full by then."""
ONE_RUN = 10**12
"""``BATCH_CALLS`` for the baseline: the whole search in one Hypothesis run."""


def _rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class _Sampling(Progress):
    """Progress that samples (operations, RSS, the child's RSS) as each example starts."""

    def __init__(self, child: SubprocessAdapter | None) -> None:
        super().__init__(None)
        self.child = child
        self.samples: list[tuple[int, float, float | None]] = []

    def example(self) -> None:
        super().example()
        pid = None if self.child is None else self.child.pid
        self.samples.append((self.steps, _rss_mb(), None if pid is None else _rss_mb(pid)))


def _worker(kind: str, examples: int, steps: int, batch_calls: int) -> dict[str, Any]:
    """One measured run in this process: its samples."""
    machine.BATCH_CALLS = batch_calls
    if kind == "campaign":
        sampling = _Sampling(None)
        report = run_campaign(examples, steps, seed_value=0, progress=sampling)
        assert report.failure is None, report.failure
    else:
        with SubprocessAdapter(f"{sys.executable} -m statemeta.serve") as served:
            served.hello()
            sampling = _Sampling(served)
            checked = run_check(
                served, level=3, hypothesis_settings=check_settings(examples, steps),
                sut_label="reference", seed_value=0, progress=sampling,
            )
            assert checked.trace is None, "the reference must conform to itself"
    return {"samples": sampling.samples}


def _measure(kind: str, examples: int, steps: int, batch_calls: int) -> list[list[Any]]:
    """The samples of one run in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_memory", "--worker", kind,
         str(examples), str(steps), str(batch_calls)],
        check=True, capture_output=True, text=True,
    ).stdout
    samples: list[list[Any]] = json.loads(out)["samples"]
    return samples


def _growth(samples: list[list[Any]], column: int) -> float:
    """MB per PER_OPS operations: the slope of RSS over operations after the warm-up."""
    kept = [(s[0], s[column]) for s in samples[WARMUP_EXAMPLES:]]
    if len(kept) < 3:
        raise RuntimeError(f"{len(kept)} samples after the warm-up: run more examples")
    ops, rss = zip(*kept, strict=True)
    return float(statistics.linear_regression(ops, rss).slope) * PER_OPS


def _row(name: str, value: float, baseline: float) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "unit": UNIT,
        "baseline": "one Hypothesis run",
        "baseline_value": baseline,
        "ratio": value / baseline if baseline else None,
        "goal": f"< {GOAL_MB:g} {UNIT}",
    }


def run(quick: bool) -> list[dict[str, Any]]:
    """Campaign and check, each in runs and as one run, after the warm-up."""
    if quick:  # (examples, the baseline's examples, steps)
        sizes, batch_calls = {"campaign": (1_600, 1_250, 5), "check": (1_900, 1_250, 5)}, 100
    else:
        sizes = {"campaign": (2_000, 1_400, 200), "check": (1_600, 1_400, 200)}
        batch_calls = machine.BATCH_CALLS
    rows = []
    for kind, (examples, baseline_examples, steps) in sizes.items():
        batched = _measure(kind, examples, steps, batch_calls)
        one_run = _measure(kind, baseline_examples, steps, ONE_RUN)
        if kind == "campaign":
            rows.append(_row(f"campaign, level 3, {steps} steps", _growth(batched, 1),
                             _growth(one_run, 1)))
            continue
        for column, process in ((1, "statemeta process"), (2, "served child")):
            rows.append(_row(f"check of the served reference, level 3, {process}",
                             _growth(batched, column), _growth(one_run, column)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small runs (minutes, loaded)")
    parser.add_argument("--worker", nargs=4, metavar=("KIND", "EXAMPLES", "STEPS", "CALLS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, examples, steps, calls = args.worker
        print(json.dumps(_worker(kind, int(examples), int(steps), int(calls))))
        return
    print_module("memory", run(args.quick))


if __name__ == "__main__":
    main()
