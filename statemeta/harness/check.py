"""``run_check``: the one way a conformance run happens (``statemeta check``, the pytest plugin
and the benchmarks call it), with its settings and progress.

It runs in two phases. The directed phase runs the shipped corpus of its level and semantics
(statemeta.harness.directed: a shortest path to every class of behaviour reachable within the
explorer's bounds), every check after every step, and keeps the divergence met at the fewest
steps: the same on every seed. Then the random phase: the differential machine of
statemeta.harness.machine drives the reference and the implementation side by side under
Hypothesis, which searches for a divergence. A divergence's trace is shrunk by deleting
operations (statemeta.harness.minimize says why not by Hypothesis). The reference counts the
classes both phases reach; the report lists those reached and missed. An implementation that
breaks the protocol stops the run at once (no shrinking: each replay of a hung one would cost a
timeout) with the steps so far. With a ``KeepGoing`` a divergence is shrunk, written to its
own trace and masked, and the search goes on over the examples left
(statemeta.harness.catalogue); the run ends with the catalogue.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import attrs
from hypothesis import HealthCheck, Verbosity, settings
from hypothesis.errors import FlakyFailure

from statemeta.errors import SutAborted
from statemeta.harness.adapter import Adapter
from statemeta.harness.callers import Callers
from statemeta.harness.catalogue import NO_MASKS, Catalogue, Entry, Mask, numbered_path
from statemeta.harness.directed import (
    CoverageReport,
    counting_reference,
    load_corpus,
    obeying,
    run_directed,
)
from statemeta.harness.explain import explained_by
from statemeta.harness.machine import Divergence, Step, build_machine, run_machine
from statemeta.harness.minimize import minimize, without_shrinking
from statemeta.harness.observation import Observation
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import (
    RecordingAdapter,
    Trace,
    divergence_trace,
    sut_error_trace,
    write_trace,
)
from statemeta.invariants import VIEW_INVARIANTS
from statemeta.semantics import Semantics

__all__ = [
    "CheckReport",
    "KeepGoing",
    "Progress",
    "check_settings",
    "run_check",
    "unchecked_reference",
]


@attrs.frozen
class CheckReport:
    """What a conformance run found: ``trace`` is None when the implementation conforms."""

    trace: Trace | None
    examples: int
    steps: int
    seconds: float
    seed_violations: dict[str, int] = attrs.field(factory=dict)
    """Steps at which the reference itself broke each view invariant (the seed's own)."""
    observation: Observation | None = None
    """What the implementation declared it observes at the run's level (what was compared)."""
    catalogue: Catalogue | None = None
    """``--keep-going``: every distinct divergence (``trace`` is then a broken protocol's)."""
    coverage: CoverageReport | None = None
    """The classes of behaviour the run reached (None: not counted)."""
    directed: int = 0
    """Paths of the directed corpus run (they count among ``examples``)."""

    def observation_json(self) -> dict[str, Any]:
        """What was compared and what was not (``statemeta check --json``)."""
        assert self.observation is not None
        return {
            "observed": self.observation.to_json(),
            "unobserved": self.observation.unobserved,
            "outcomes": self.observation.outcomes,
            "results": self.observation.results_not_given,
            "sets": sorted(self.observation.sets),
            "blocks": sorted(self.observation.blocks),
            "unchecked_invariants": self.observation.unchecked(VIEW_INVARIANTS),
        }


@attrs.frozen
class KeepGoing:
    """``--keep-going``: each divergence's trace goes to ``trace_out`` numbered; the search
    stops after ``max_divergences`` of them (None: when the examples run out)."""

    trace_out: Path
    max_divergences: int | None = None


class Progress:
    """Counts examples and steps; on long runs prints a line every ``interval`` seconds."""

    def __init__(self, out: TextIO | None, *, interval: float = 2.0) -> None:
        self.out = out
        self.interval = interval
        self.examples = 0
        self.steps = 0
        self.example_steps = 0
        """Steps of the example running (the one running included)."""
        self.began = time.monotonic()
        self._next = self.began + interval

    def example(self) -> None:
        self.examples += 1
        self.example_steps = 0
        self._tick()

    def step(self) -> None:
        self.steps += 1
        self.example_steps += 1
        self._tick()

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.began

    def _tick(self) -> None:
        now = time.monotonic()
        if self.out is not None and now >= self._next:
            self._next = now + self.interval
            rate = self.steps / max(now - self.began, 1e-9)
            print(
                f"  ... {self.examples} examples, {self.steps} steps ({rate:.0f} steps/s)",
                file=self.out,
                flush=True,
            )


class _CountingAdapter(RecordingAdapter):
    """The run's view of the implementation: records, aborts on SutError, counts progress."""

    def __init__(self, inner: Adapter, progress: Progress) -> None:
        super().__init__(inner)
        self.progress = progress

    def start(self, level: int) -> None:
        self.progress.example()
        super().start(level)

    def call(self, op: Op) -> dict[str, Any]:
        self.progress.step()
        return super().call(op)


def run_check(
    sut: Adapter,
    *,
    level: int,
    hypothesis_settings: settings,
    sut_label: str,
    seed_value: int | None = None,
    progress: Progress | None = None,
    semantics: Semantics | str = Semantics.INTENDED,
    keep_going: KeepGoing | None = None,
    directed: bool = True,
    callers: Callers | str = Callers.DIRECT,
) -> CheckReport:
    """Runs the directed phase (unless not ``directed``), then the differential machine, at
    ``level`` against ``sut`` (started, not closed here), with the reference in
    ``semantics``; with ``keep_going``, on past each divergence. With ``callers`` vnode the
    directed phase runs the corpus paths that keep the vnode's call discipline and the
    machine generates only such calls (statemeta.harness.callers)."""
    progress = progress or Progress(None)
    counting = _CountingAdapter(sut, progress)
    semantics = Semantics.of(semantics)
    reached: Counter[str] = Counter()
    callers = Callers.of(callers)
    reference = counting_reference(unchecked_reference(semantics, callers), reached)
    corpus = obeying(load_corpus(level, semantics), callers)
    seeds: Counter[str] = Counter()
    runs = [0]
    """Directed paths run so far (they are not among the random phase's examples)."""

    def random_left() -> int:
        return hypothesis_settings.max_examples - (progress.examples - runs[0])

    def shrunk(found: Divergence, masks: frozenset[Mask]) -> Trace:
        trace = divergence_trace(found, level=level, sut=sut_label, seed=seed_value,
                                 semantics=semantics, masks=masks)
        return minimize(trace, sut=sut, reference=reference, same_place=bool(keep_going))

    def run_corpus(masks: frozenset[Mask]) -> tuple[Trace | None, Divergence | None]:
        """The directed phase: the shrunk trace of the divergence met soonest, if any."""
        done: list[Step] = []
        before = progress.examples
        try:
            result = run_directed(corpus, sut=counting, reference=reference, masks=masks,
                                  seed_violations=seeds, done=done)
        except SutAborted as aborted:
            return sut_error_trace(aborted.error, done, counting.ops, level=level,
                                   sut=sut_label, seed=seed_value, semantics=semantics), None
        finally:
            runs[0] += progress.examples - before
        found = result.divergence
        return (None, None) if found is None else (shrunk(found, masks), found)

    def search(masks: frozenset[Mask], run: int) -> tuple[Trace | None, Divergence | None]:
        """The directed phase, then one search over the examples left: the shrunk trace of
        what they found, if any."""
        if directed:
            trace, met = run_corpus(masks)
            if trace is not None:
                return trace, met
        machine = build_machine(
            level,
            sut=counting,
            reference=reference,
            name=f"Conformance{level}",
            max_ops=hypothesis_settings.stateful_step_count,  # --steps: operations per example
            masks=masks,
        )
        left = random_left()
        if left <= 0:
            return None, None
        run_seed = None if seed_value is None else seed_value + run
        try:
            run_machine(machine, without_shrinking(settings(hypothesis_settings,
                        max_examples=left)), seed_value=run_seed)
        except SutAborted as aborted:
            done = machine.last_steps  # type: ignore[attr-defined]
            return sut_error_trace(aborted.error, done, counting.ops, level=level,
                                   sut=sut_label, seed=seed_value, semantics=semantics), None
        except Divergence as divergence:
            found = [divergence]
        except FlakyFailure as flaky:
            found = [e for e in flaky.exceptions if isinstance(e, Divergence)]
            if not found:
                raise
        else:
            return None, None
        finally:
            seeds.update(machine.seed_violations)  # type: ignore[attr-defined]
        return shrunk(found[0], masks), found[0]

    trace, first = search(NO_MASKS, 0)
    catalogue = None if keep_going is None else Catalogue()
    while keep_going is not None and catalogue is not None and first is not None and trace:
        if first.mask in catalogue.masks:
            break  # an in-process implementation's own check, which no mask skips: it stops
        path = numbered_path(keep_going.trace_out, len(catalogue.entries) + 1)
        write_trace(trace, path)
        catalogue.entries.append(Entry(first.mask, trace.failure.kind, first.reference,
                                       first.sut, path, len(trace.steps),
                                       explained_by(trace, sut)))
        full = len(catalogue.entries) == keep_going.max_divergences
        if full:
            trace = None
        else:
            trace, first = search(catalogue.masks, len(catalogue.entries))
    observation = Observation.of_hello(sut.hello(), level)
    return CheckReport(trace, progress.examples, progress.steps, progress.seconds,
                       dict(sorted(seeds.items())), observation, catalogue,
                       CoverageReport(reached, corpus), runs[0] if directed else 0)


def unchecked_reference(
    semantics: Semantics, callers: Callers = Callers.DIRECT
) -> Callable[[], ReferenceAdapter]:
    """Makes the reference without its own check mode: the property suite vouches for it, and
    the machine checks the invariants on the implementation's view (3x faster at levels 2-3)."""
    return functools.partial(ReferenceAdapter, check_invariants=False, semantics=semantics,
                             callers=callers)


def check_settings(examples: int, steps: int) -> settings:
    """Hypothesis settings of a command-line run: bounded, quiet, no example database."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
    )
