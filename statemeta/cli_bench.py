"""``statemeta bench``: ``python -m benchmarks`` under the ``statemeta`` command.

The benchmarks live in the source checkout's benchmarks/, which the wheel does not carry: they
measure a checkout (or an editable install of one) against baselines run alongside. Installed
from a wheel, the command says so instead of failing with an import error.
"""

from __future__ import annotations

import argparse
import sys

from statemeta.cli_args import int_in, output_file

__all__ = ["BENCHMARKS", "COMMANDS", "configure_bench", "run_bench"]

BENCHMARKS = (
    "lifecycle", "codec", "store", "meta", "harness", "memory", "explore", "linearizability",
    "coverage", "mutate",
)
"""The benchmark modules (benchmarks/bench_<name>.py), in the order they run."""

REPEATS = 3
"""Runs of each module by default: the fewest that give a spread and a majority."""
MAX_REPEATS = 100

NOT_INSTALLED = (
    "statemeta bench: the benchmarks are not installed (benchmarks/ is not in the wheel);"
    " run them from a source checkout: pip install -e . && python -m benchmarks --quick"
)


def configure_bench(parser: argparse.ArgumentParser) -> None:
    """The options of both ``statemeta bench`` and ``python -m benchmarks``."""
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few repeats inside each module"
    )
    parser.add_argument(
        "--repeats",
        type=int_in(1, MAX_REPEATS),
        default=REPEATS,
        metavar="N",
        help=f"run each module N times, 1 to {MAX_REPEATS} (default {REPEATS}): the table "
        "shows the median, the spread and in how many runs each goal was met",
    )
    parser.add_argument(
        "--json",
        type=output_file,
        metavar="FILE",
        help="also write the table as JSON, with the machine",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=BENCHMARKS,
        metavar="NAME",
        help=f"run only these, in the order {', '.join(BENCHMARKS)}",
    )


def run_bench(args: argparse.Namespace) -> int:
    try:
        from benchmarks.__main__ import run_command
    except ModuleNotFoundError as e:
        if e.name not in ("benchmarks", "benchmarks.__main__"):
            raise
        print(NOT_INSTALLED, file=sys.stderr)
        return 2
    return run_command(args)


COMMANDS = {
    "bench": (
        "run every benchmark against its baseline (source checkout only)",
        configure_bench,
        run_bench,
    ),
}
"""The benchmarks' entry of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
