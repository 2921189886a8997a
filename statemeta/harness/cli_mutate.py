"""``statemeta mutate``: mutation analysis of the reference (statemeta.harness.mutate).

Exit 0: every mutant killed, equivalent or an error; 1: some survived (listed with their
diffs); 2: a bad command line; 128 + N: ended by signal N (the workers ended with it).
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
from typing import TextIO

from statemeta.cli_args import MAX_SECONDS, MAX_WORKERS, int_in, positive_int, seconds, seed
from statemeta.harness.mutate import (
    DEFAULT_TIMEOUT,
    EXAMPLES,
    MODULES,
    STEPS,
    MutantResult,
    MutationReport,
    analyse,
    load_listed,
    select_mutants,
)
from statemeta.interrupts import exit_code, interruptible
from statemeta.json_output import json_text

__all__ = ["COMMANDS", "configure_mutate", "report_lines", "run_mutate_command"]

EXIT_ALL_KILLED = 0
EXIT_SURVIVORS = 1


def configure_mutate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--module", action="append", choices=sorted(MODULES), metavar="MODULE",
        help="mutate only this module (repeatable; default: all of "
             "statemeta.harness.mutate.MODULES)",
    )
    parser.add_argument("--sample", type=positive_int, metavar="N",
                        help="check a sample of N mutants drawn with --seed (default: all)")
    parser.add_argument("--seed", type=seed,
                        help="the sample's and the random phase's seed (default: random, "
                             "printed)")
    parser.add_argument("--workers", type=int_in(1, MAX_WORKERS), default=1, metavar="K",
                        help=f"worker processes, 1 to {MAX_WORKERS} (default: 1)")
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"per mutant, at most {MAX_SECONDS:g} (default: %(default)s)")
    parser.add_argument("--directed-only", action="store_true",
                        help="no random phase: what the directed corpus alone kills")
    parser.add_argument("--json", action="store_true",
                        help="print the report as one JSON document (progress on stderr)")


def run_mutate_command(args: argparse.Namespace) -> int:
    """``statemeta mutate``."""
    seed_value = args.seed if args.seed is not None else random.randrange(2**32)
    out = sys.stderr if args.json else sys.stdout
    mutants = select_mutants(args.module, sample=args.sample, seed=seed_value)
    print(
        f"mutating {len(mutants)} mutants of {len(args.module or MODULES)} modules, seed "
        f"{seed_value}, {args.workers} workers: the directed corpus"
        + ("" if args.directed_only else f", then {EXAMPLES} examples of up to {STEPS} steps"),
        file=out, flush=True,
    )

    def done(result: MutantResult, n: int, total: int) -> None:
        how = "" if result.phase is None else f" ({result.phase}, level {result.level})"
        print(f"  [{n}/{total}] {result.id}: {result.status}{how} {result.seconds:.1f} s",
              file=sys.stderr, flush=True)

    report: MutationReport | None = None
    with interruptible() as received:
        report = analyse(mutants, seed=seed_value, workers=args.workers, timeout=args.timeout,
                         random_phase=not args.directed_only, done=done)
    if received:
        name = signal.Signals(received[0]).name
        print(f"interrupted by {name}: the workers are ended", file=sys.stderr)
        return exit_code(received)
    assert report is not None
    if args.json:
        print(json_text({"seed": seed_value, **report.to_json()}))
    else:
        _print(report_lines(report), out)
    return EXIT_SURVIVORS if report.survivors() else EXIT_ALL_KILLED


def report_lines(report: MutationReport) -> list[str]:
    """The report as text: the counts and score of each module, then every survivor with its
    diff and every error."""
    lines = ["module                          mutants killed survived equivalent error score"]
    for module in [*report.modules, None]:
        counts = report.counts(module)
        score = report.score(module)
        lines.append(
            f"{module or 'all':<32}{counts['mutants']:>7}{counts['killed']:>7}"
            f"{counts['survived']:>9}{counts['equivalent']:>11}{counts['error']:>6} "
            + ("-" if score is None else f"{score:.1%}")
        )
    known = load_listed().open
    for result in report.survivors():
        needs = f" (open, needs: {known[result.id][0]})" if result.id in known else ""
        lines += ["", f"survived: {result.id}{needs}", result.diff]
    for result in report.results:
        if result.status == "error":
            lines += ["", f"error: {result.id}: {result.detail}", result.diff]
    lines.append(f"\n{len(report.results)} mutants in {report.seconds:.1f} s "
                 f"({len(report.results) / max(report.seconds, 1e-9):.2f} mutants/s)")
    return lines


def _print(lines: list[str], out: TextIO) -> None:
    print("\n".join(lines), file=out)


COMMANDS = {
    "mutate": (
        "mutation analysis of the reference: which mutants of it does check catch",
        configure_mutate,
        run_mutate_command,
    ),
}
"""The mutation analysis's entry of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
