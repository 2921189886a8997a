"""Running the machine (statemeta/harness/machine.py ``run_machine``): a long search is a
series of Hypothesis runs, so what Hypothesis keeps per example is one run's, not the search's."""

from __future__ import annotations

import gc

import pytest
from hypothesis.internal.conjecture.data import ConjectureResult

from statemeta.harness import machine as machine_module
from statemeta.harness.campaign import run_campaign
from statemeta.harness.check import Progress, check_settings
from statemeta.harness.machine import BATCH_EXAMPLES_MIN, batch_seed, build_machine, run_machine
from statemeta.harness.minimize import without_shrinking
from statemeta.harness.reference import ReferenceAdapter

STEPS = 10


def _runs_of(examples: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hypothesis runs of ``examples`` examples of ``STEPS`` rule calls."""
    monkeypatch.setattr(machine_module, "BATCH_CALLS", examples * STEPS)


def test_a_long_search_keeps_no_more_examples_than_one_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hypothesis's engine keeps each example's result for the whole of its run (one
    Hypothesis run of 100,000 examples grew to gigabytes): the results alive at any example
    of a 3-run search are at most one run's."""
    _runs_of(BATCH_EXAMPLES_MIN, monkeypatch)
    alive: list[int] = []

    class Counting(ReferenceAdapter):
        def start(self, level: int) -> None:
            gc.collect()
            alive.append(sum(isinstance(o, ConjectureResult) for o in gc.get_objects()))
            super().start(level)

    search = without_shrinking(check_settings(3 * BATCH_EXAMPLES_MIN, STEPS))
    run_machine(build_machine(3, reference=Counting), search, seed_value=0)
    assert len(alive) >= 3 * BATCH_EXAMPLES_MIN
    assert max(alive) <= BATCH_EXAMPLES_MIN + 5  # the run's results, and a few of Hypothesis's


def test_a_search_runs_its_examples_in_runs_of_the_batch_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _runs_of(BATCH_EXAMPLES_MIN, monkeypatch)
    seeds: list[object] = []
    real = machine_module.seed

    def recording_seed(value: int):  # type: ignore[no-untyped-def]
        seeds.append(value)
        return real(value)

    monkeypatch.setattr(machine_module, "seed", recording_seed)
    report = run_campaign(2 * BATCH_EXAMPLES_MIN + 1, STEPS, seed_value=7)
    assert report.failure is None and report.examples >= 2 * BATCH_EXAMPLES_MIN + 1
    assert seeds == [7, batch_seed(7, 1), batch_seed(7, 2)]
    assert len(set(seeds)) == 3


def test_a_search_of_several_runs_is_reproducible(monkeypatch: pytest.MonkeyPatch) -> None:
    _runs_of(BATCH_EXAMPLES_MIN, monkeypatch)
    first, second = (run_campaign(2 * BATCH_EXAMPLES_MIN, STEPS, seed_value=3) for _ in "ab")
    assert (first.examples, first.steps) == (second.examples, second.steps)
    assert first.coverage == second.coverage


def test_no_run_starts_after_the_deadline() -> None:
    progress = Progress(None)
    report = run_campaign(
        BATCH_EXAMPLES_MIN, STEPS, seed_value=0, progress=progress, seconds=-1.0
    )
    # the directed corpus always runs first; no random run starts after the deadline
    assert report.failure is None and report.examples == report.directed > 0
