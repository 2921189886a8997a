"""Goals, verdicts and the one table of ``python -m benchmarks``.

A row's goal is machine-readable: ``""`` (no goal: the figure is information) or
``OP NUMBER`` followed by ``x`` (a bound on the ratio to the baseline: ``<= 1.5x``), by the
row's unit (a bound on the value: ``>= 1,000 steps/s``) or by nothing (the value, in the row's
unit: ``>= 20000``). Any other goal is reported as unreadable, never guessed.
"""

from __future__ import annotations

import enum
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs

ROW_KEYS = ("name", "value", "unit", "baseline", "baseline_value", "ratio", "goal")
"""The keys of every row a benchmark module's ``run(quick)`` returns."""

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}

_GOAL = re.compile(r"(?P<op><=|>=|<|>)\s*(?P<bound>\d[\d,]*(?:\.\d+)?)(?P<rest>.*)")


class Verdict(enum.StrEnum):
    MET = "met"
    NOT_MET = "not met"
    INFO = "info"  # no goal
    UNREADABLE = "?"  # a goal outside the grammar above, or nothing to compare
    ERROR = "error"  # the module raised: no figures


@attrs.frozen
class Goal:
    op: str
    bound: float
    on_ratio: bool


def parse_goal(goal: str, unit: str) -> Goal | None:
    """The goal's comparison, or None when it is not of the grammar in the module docstring."""
    match = _GOAL.fullmatch(goal.strip())
    if match is None:
        return None
    rest = match["rest"].strip()
    if rest not in ("x", "", unit):
        return None
    return Goal(match["op"], float(match["bound"].replace(",", "")), on_ratio=rest == "x")


def verdict(row: dict[str, Any]) -> Verdict:
    if not row["goal"].strip():
        return Verdict.INFO
    goal = parse_goal(row["goal"], row["unit"])
    measured = None if goal is None else row["ratio" if goal.on_ratio else "value"]
    if goal is None or measured is None:
        return Verdict.UNREADABLE
    return Verdict.MET if COMPARISONS[goal.op](measured, goal.bound) else Verdict.NOT_MET


@attrs.frozen
class ModuleResult:
    """One benchmark module's run: its rows, or the error that stopped it."""

    name: str
    seconds: float
    rows: list[dict[str, Any]]
    error: str | None = None


def number(value: float | None) -> str:
    """Three significant digits, whole from 100 on, thousands grouped: 0.493, 35.2, 3,240."""
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


HEADER = ("module", "measure", "value", "baseline", "ratio", "goal", "verdict")


def table_lines(results: Sequence[ModuleResult]) -> list[str]:
    """One line per row (one per failed module), columns as wide as their widest cell."""
    cells: list[tuple[str, ...]] = [HEADER]
    for result in results:
        if result.error is not None:
            cells.append((result.name, f"error: {result.error}", "", "", "", "", Verdict.ERROR))
        for row in result.rows:
            baseline = row["baseline"] or "-"
            if row["baseline_value"] is not None:
                baseline = f"{number(row['baseline_value'])} ({baseline})"
            ratio = "-" if row["ratio"] is None else f"{number(row['ratio'])}x"
            cells.append(
                (
                    result.name,
                    row["name"],
                    f"{number(row['value'])} {row['unit']}",
                    baseline,
                    ratio,
                    row["goal"] or "-",
                    verdict(row),
                )
            )
    widths = [max(len(line[i]) for line in cells) for i in range(len(HEADER))]
    right = {HEADER.index("ratio")}
    return [
        "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in cells
    ]


def print_module(name: str, rows: list[dict[str, Any]]) -> None:
    """A module run alone (``python -m benchmarks.bench_NAME``): its rows as the one table."""
    print("\n".join(table_lines([ModuleResult(name, 0.0, rows)])))
