"""``python -m benchmarks [--quick] [--repeats N] [--json FILE] [--only NAME ...]``: one table.

Runs each module's ``run(quick)`` ``--repeats`` times in BENCHMARKS order
(statemeta/cli_bench.py), every figure against a baseline measured in the same run, and prints
one table with each goal, the runs' spread and a verdict with its confidence. A module that
raises becomes an error row, the others still run, and the exit code is 1. Not a test: figures
depend on the machine, which the JSON records.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks._table import (
    ROW_KEYS,
    ModuleResult,
    Verdict,
    combine,
    confidence,
    table_lines,
    verdict,
)
from statemeta.cli_args import Parser
from statemeta.cli_bench import BENCHMARKS, configure_bench
from statemeta.json_output import json_text

RunFunction = Callable[[bool], list[dict[str, Any]]]
"""A benchmark module's ``run(quick)``."""

LEGEND = (
    "value and baseline: medians of the runs; spread: half their range / the median;\n"
    f"verdict k/n: met in k of n runs ({Verdict.MET}: all, {Verdict.NOT_MET}: none, "
    f"{Verdict.UNSURE}: some);\n{Verdict.INFO}: no goal; "
    f"{Verdict.UNREADABLE}: goal not machine-readable (benchmarks/_table.py)"
)


def run_module(name: str, quick: bool, repeats: int) -> ModuleResult:
    """The module's rows over ``repeats`` runs, or its error: one module's failure must not
    hide the others' figures."""
    began = time.perf_counter()
    runs = []
    try:
        run: RunFunction = importlib.import_module(f"benchmarks.bench_{name}").run
        for _ in range(repeats):
            rows = run(quick)
            for row in rows:
                missing = [key for key in ROW_KEYS if key not in row]
                if missing:
                    raise ValueError(f"row {row.get('name')!r} has no {', '.join(missing)}")
            runs.append(rows)
    except Exception as e:
        first_line = next(iter(str(e).splitlines()), "")
        return ModuleResult(
            name, time.perf_counter() - began, [], f"{type(e).__name__}: {first_line}"
        )
    return ModuleResult(name, time.perf_counter() - began, combine(runs))


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }


def report(
    results: Sequence[ModuleResult], quick: bool, repeats: int, seconds: float
) -> dict[str, Any]:
    """The JSON document: the table's content with the machine and the timings."""
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "quick": quick,
        "repeats": repeats,
        "seconds": round(seconds, 2),
        "modules": [
            {
                "name": result.name,
                "seconds": round(result.seconds, 2),
                "error": result.error,
                "rows": [
                    {**row, "verdict": str(verdict(row)), "confidence": confidence(row)}
                    for row in result.rows
                ],
            }
            for result in results
        ],
    }


def run_command(args: argparse.Namespace) -> int:
    names = [name for name in BENCHMARKS if not args.only or name in args.only]
    began = time.perf_counter()
    results = []
    for name in names:
        print(f"{name} ...", end=" ", file=sys.stderr, flush=True)
        results.append(run_module(name, args.quick, args.repeats))
        print(f"{results[-1].seconds:.1f} s", file=sys.stderr)
    seconds = time.perf_counter() - began
    print("\n".join(table_lines(results)))
    print(f"\n{LEGEND}")
    modules = f"{len(results)} module{'' if len(results) == 1 else 's'}"
    quick = " --quick" if args.quick else ""
    print(f"{modules}, {args.repeats} runs each, in {seconds:.1f} s{quick}")
    if args.json:
        text = json_text(report(results, args.quick, args.repeats, seconds))
        args.json.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 1 if any(result.error is not None for result in results) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = Parser(
        prog="python -m benchmarks", description=(__doc__ or "").splitlines()[0]
    )
    configure_bench(parser)
    return run_command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
