"""The linearizability checker on long histories: 1,000 operations from 4 clients.

The spec is a map of 5 registers (write or read one key; the key is the partition), each
history a real sequential execution with overlapping intervals around it: operation i takes
effect at time 10 i, is called by client i mod 4, and is invoked and returns up to 30 before
and after that (never overlapping its client's previous call), so each call overlaps up to
6 others. The figure is the median time of ``check`` with memoisation and partitions; the
baseline is the same histories checked with neither, in the same run (a run that exhausts
the default budget counts the time it took: the baseline is then a lower bound). The same
again with the last read returning a value never written: refuting it, and shrinking the
counterexample.
Then the stream-meta reference as the spec (statemeta.harness.linearizability.reference), on
histories of 1,000 calls from 4 clients recorded from the thread-safe facade (one round of 250
calls each, at level 2): the median time of ``check``, beside the same histories checked with
neither memoisation nor partitions under a budget of ``BASELINE_BUDGET`` steps (the baseline
forks and keys the reference at every step: without a cap it may not end); and the same with
the last completed call's result replaced by one no operation gives, refuted (no goal: a
refutation must rule out every order of the whole history, at the cost of a fork and a key per
step; shrinking it costs many such checks more).
Goal: under 1 s.
Run: ``python -m benchmarks.bench_linearizability [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
from typing import Any

import attrs

from benchmarks._table import print_module
from statemeta.harness.concurrent_run import InProcess, run_concurrent
from statemeta.harness.facade_target import FacadeAdapter
from statemeta.harness.linearizability import (
    History,
    Operation,
    Outcome,
    SequentialSpec,
    check,
)
from statemeta.harness.linearizability.reference import reference_spec

KEYS = 5
VALUES = 2
"""Values written: 0 and 1 (few, so that reads are ambiguous)."""
CLIENTS = 4
OPERATIONS = 1_000
GAP = 10
CHECK_GOAL_S = 1.0
BASELINE_BUDGET = 50_000
"""Spec steps the reference baseline may spend (about 3 s of forking and keying)."""

Op = tuple[str, int, int]
State = tuple[int, ...]


def _step(state: State, op: Op) -> tuple[State, int | None]:
    name, key, value = op
    if name == "write":
        return (*state[:key], value, *state[key + 1 :]), None
    return state, state[key]


REGISTERS: SequentialSpec[State, Op, int | None] = SequentialSpec(
    (0,) * KEYS, _step, partition=lambda op: op[1]
)


def executed_history(seed: int, operations: int = OPERATIONS) -> History[Op, int | None]:
    rng = random.Random(seed)
    state = REGISTERS.initial
    free = [0] * CLIENTS  # the earliest time each client may call again
    recorded = []
    for i in range(operations):
        op: Op = (rng.choice(["write", "read"]), rng.randrange(KEYS), rng.randrange(VALUES))
        state, result = REGISTERS.step(state, op)
        client, point = i % CLIENTS, GAP * (i + 1)
        invoked = max(free[client], point - rng.randrange(4 * GAP))
        returned = point + rng.randrange(4 * GAP - 1)
        free[client] = returned + 1
        recorded.append(Operation(client, invoked, returned, op, result))
    return History(tuple(recorded))


def with_impossible_read(history: History[Op, int | None]) -> History[Op, int | None]:
    """The history with its last read returning a value never written: not linearizable."""
    index = max(i for i, op in enumerate(history.operations) if op.op[0] == "read")
    operations = list(history.operations)
    operations[index] = attrs.evolve(operations[index], result=VALUES)
    return History(tuple(operations))


def _median_s(
    histories: list[History[Op, int | None]], expected: Outcome, **options: bool
) -> float:
    """The median time of ``check``; a run that exhausts its budget (UNKNOWN) counts its time."""
    samples = []
    for history in histories:
        gc.collect()
        began = time.perf_counter()
        verdict = check(REGISTERS, history, **options)
        samples.append(time.perf_counter() - began)
        assert verdict.outcome in (expected, Outcome.UNKNOWN), verdict.outcome
    return statistics.median(samples)


def _reference_median_s(
    histories: list[Any], expected: Outcome, **options: Any
) -> tuple[float, int]:
    """The median time of checking against the reference, and how many ran out of budget."""
    samples, unknown = [], 0
    for history in histories:
        spec = reference_spec(2)
        gc.collect()
        began = time.perf_counter()
        verdict = check(spec, history, **options)
        samples.append(time.perf_counter() - began)
        assert verdict.outcome in (expected, Outcome.UNKNOWN), verdict.outcome
        unknown += verdict.outcome is Outcome.UNKNOWN
    return statistics.median(samples), unknown


def _row(name: str, value: float, baseline: str, baseline_value: float | None,
         goal: str) -> dict[str, Any]:
    ratio = value / baseline_value if baseline_value else None
    return {"name": name, "value": value, "unit": "s", "baseline": baseline,
            "baseline_value": baseline_value, "ratio": ratio, "goal": goal}


def run(quick: bool) -> list[dict[str, Any]]:
    """Checks the same histories with memoisation and partitions, with memoisation only, and
    with neither; then the same with one impossible read. Returns the rows."""
    histories = [executed_history(seed) for seed in range(3 if quick else 15)]
    failing = [with_impossible_read(history) for history in histories]
    ok, wrong = Outcome.LINEARIZABLE, Outcome.NOT_LINEARIZABLE
    title = f"check {OPERATIONS:,} ops, {CLIENTS} clients, {KEYS} keys"
    neither = "neither (exhausted budget counts)"
    bare = _median_s(histories, ok, memoise=False, partition=False)
    bare_failing = _median_s(failing, wrong, memoise=False, partition=False, shrink=False)
    goal = f"< {CHECK_GOAL_S:.0f} s"
    return [
        _row(f"{title} (memo + partitions)", _median_s(histories, ok), neither, bare, goal),
        _row(f"{title} (memo, one partition)", _median_s(histories, ok, partition=False),
             neither, bare, ""),
        _row(f"{title}, one impossible read (memo + partitions, shrink)", _median_s(failing, wrong),
             neither + ", no shrink", bare_failing, goal),
        *_reference_rows(3 if quick else 7),
    ]


def _reference_rows(count: int) -> list[dict[str, Any]]:
    recorded = [
        run_concurrent(InProcess(FacadeAdapter()), clients=CLIENTS,
                       ops=OPERATIONS // CLIENTS, rounds=1, seed=seed).history
        for seed in range(count)
    ]
    failing = [with_impossible_result(history) for history in recorded]
    ok, wrong = Outcome.LINEARIZABLE, Outcome.NOT_LINEARIZABLE
    title = f"reference spec: {OPERATIONS:,} facade calls, {CLIENTS} clients, level 2"
    goal = f"< {CHECK_GOAL_S:.0f} s"
    rows = []
    for name, histories, expected, target in (
        ("(memo + partitions)", recorded, ok, goal),
        ("one impossible result, refuted (memo + partitions, no shrink)", failing, wrong, ""),
    ):
        fast, _ = _reference_median_s(histories, expected, shrink=False)
        bare, unknown = _reference_median_s(histories, expected, memoise=False,
                                            partition=False, shrink=False,
                                            budget=BASELINE_BUDGET)
        capped = f"neither, no shrink, capped at {BASELINE_BUDGET:,} steps ({unknown}/" \
                 f"{len(histories)} hit the cap)"
        rows.append(_row(f"{title}, {name}", fast, capped, bare, target))
    return rows


def with_impossible_result(history: History[Any, Any]) -> History[Any, Any]:
    """The history with its last completed call answering an error no operation raises."""
    index = max(i for i, op in enumerate(history.operations) if not op.pending)
    operations = list(history.operations)
    operations[index] = attrs.evolve(operations[index], result={"error": "Impossible"})
    return History(tuple(operations))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 histories instead of 15")
    args = parser.parse_args()
    print_module("linearizability", run(args.quick))


if __name__ == "__main__":
    main()
