"""A property campaign: the property suite's level-3 machine over the reference, measured.

The same machine as tests/properties/test_meta_stateful.py (every invariant of the catalogue
after every operation and timer callback, the durable model after every step), run for a
given number of examples and steps outside pytest, after the directed corpus of level 3
(statemeta.harness.directed: every class of behaviour reachable within the explorer's bounds,
whatever the seed), counting what it did: the operations run, their rate, the rows of the
lifecycle and role tables and the classes of behaviour reached. It measures and gives a
verdict; a failure is reported unshrunk (the property test under the ``deep`` profile
shrinks it). ``statemeta campaign`` is the deep run of docs/property-suite.md; ``statemeta
verify`` runs a small one after its exploration.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import Any

import attrs

from statemeta.cli_args import add_semantics, minutes, positive_int, seed
from statemeta.harness.check import Progress, check_settings
from statemeta.harness.coverage_model import role_class, row_class, rows_json, rows_lines
from statemeta.harness.directed import CoverageReport, load_corpus, run_directed
from statemeta.harness.machine import build_machine, run_machine
from statemeta.harness.minimize import without_shrinking
from statemeta.harness.operations import Op
from statemeta.harness.reference import Backend, Coverage, ReferenceAdapter
from statemeta.json_output import json_text
from statemeta.semantics import Semantics

__all__ = ["COMMANDS", "CampaignReport", "run_campaign"]


@attrs.frozen
class CampaignReport:
    """What a campaign ran and reached; ``failure`` is None when every example passed."""

    examples: int
    steps: int
    """Operations run on the reference (every operation of a walk counts)."""
    seconds: float
    coverage: Coverage
    failure: str | None
    semantics: Semantics = Semantics.INTENDED
    """The reference's semantics: in the seed's, a failure is the seed breaking an invariant."""
    directed: int = 0
    """Paths of the directed corpus run (they count among ``examples``)."""

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0

    @property
    def classes(self) -> CoverageReport:
        assert self.coverage.classes is not None
        return CoverageReport(self.coverage.classes, load_corpus(3, self.semantics))

    def to_json(self) -> dict[str, Any]:
        classes = self.classes
        missed = classes.missed
        return {
            "semantics": self.semantics.value,
            "examples": self.examples,
            "directed": self.directed,
            "steps_run": self.steps,
            "seconds": round(self.seconds, 1),
            "steps_per_second": round(self.steps_per_second, 1),
            "failure": self.failure,
            **rows_json(self.coverage.lifecycle_rows, self.coverage.role_rows,
                        lambda r: missed[row_class(r)], lambda r: missed[role_class(r)]),
            "coverage": classes.to_json(),
        }


def run_campaign(
    examples: int,
    steps: int,
    *,
    seed_value: int = 0,
    backend: Backend = "memory",
    progress: Progress | None = None,
    semantics: Semantics | str = Semantics.INTENDED,
    seconds: float | None = None,
) -> CampaignReport:
    """Runs ``examples`` examples of up to ``steps`` rule calls each (a rule call is one
    operation or a walk of several), from ``seed_value``, over the reference in
    ``semantics``; stops at the first failure, and with ``seconds``, at the end of the first
    Hypothesis run (``run_machine``) ending after that long."""
    counted = progress or Progress(None)
    coverage = Coverage(classes=Counter())
    semantics = Semantics.of(semantics)

    class CampaignReference(ReferenceAdapter):
        """The reference, adding to the campaign's coverage and progress."""

        def __init__(self) -> None:
            super().__init__(backend=backend, semantics=semantics)
            self.coverage = coverage
            self.count_classes()

        def start(self, level: int) -> None:
            counted.example()
            super().start(level)

        def call(self, op: Op) -> dict[str, Any]:
            counted.step()
            return super().call(op)

    machine = build_machine(3, reference=CampaignReference, name="Campaign")
    search = without_shrinking(check_settings(examples, steps))  # seeded: no profile decides
    began = time.perf_counter()
    deadline = None if seconds is None else time.monotonic() + seconds
    failure = None
    directed = 0
    try:
        run_directed(load_corpus(3, semantics), sut=None, reference=CampaignReference)
        directed = counted.examples
        run_machine(machine, search, seed_value=seed_value, deadline=deadline)
    except Exception as error:  # a failing example: the campaign's verdict, unshrunk
        where = f"operation {counted.example_steps} of the failing example"
        failure = f"{type(error).__name__} at {where}: {error}"
    return CampaignReport(
        counted.examples, counted.steps, time.perf_counter() - began, coverage, failure,
        semantics, directed,
    )


def format_campaign(report: CampaignReport) -> str:
    """The report for people."""
    doc = report.to_json()
    lines = [
        f"property campaign ({report.semantics.value} semantics): {report.steps} steps in "
        f"{report.examples} examples ({report.directed} directed), "
        f"{report.seconds:.1f} s ({report.steps_per_second:.0f} steps/s)",
        *rows_lines(doc),
        *report.classes.lines(),
        "every invariant held at every step" if report.failure is None
        else f"FAILED: {report.failure}",
    ]
    return "\n".join(lines)


def configure_campaign(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--examples", type=positive_int, default=100, help="default: 100")
    parser.add_argument("--steps", type=positive_int, default=50,
                        help="rule calls per example, each an operation or a walk of up to "
                             "12 (default: 50)")
    parser.add_argument("--seed", type=seed, default=0, help="default: 0")
    parser.add_argument("--minutes", type=minutes, metavar="M",
                        help="stop after about M minutes even if examples remain "
                             "(at the end of a run of 10,000 rule calls)")
    parser.add_argument("--backend", choices=("memory", "lmdb"), default="memory",
                        help="the store (default: memory)")
    add_semantics(parser, default=Semantics.INTENDED.value)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")


def run_campaign_command(args: argparse.Namespace) -> int:
    progress = Progress(None if args.quiet or args.json else sys.stderr, interval=10.0)
    report = run_campaign(
        args.examples, args.steps, seed_value=args.seed, backend=args.backend,
        progress=progress, semantics=args.semantics,
        seconds=None if args.minutes is None else args.minutes * 60,
    )
    print(json_text(report.to_json()) if args.json else format_campaign(report))
    return 0 if report.failure is None else 1


COMMANDS = {
    "campaign": (
        "run the property suite's machine over the reference: steps/s and table rows reached",
        configure_campaign,
        run_campaign_command,
    ),
}
"""The campaign's entry of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
