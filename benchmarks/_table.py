"""Goals, verdicts and the one table of ``python -m benchmarks``.

A row's goal is machine-readable: ``""`` (no goal: the figure is information) or
``OP NUMBER`` followed by ``x`` (a bound on the ratio to the baseline: ``<= 1.5x``), by the
row's unit (a bound on the value: ``>= 1,000 steps/s``) or by nothing (the value, in the row's
unit: ``>= 20000``). Any other goal is reported as unreadable, never guessed.

Every module runs several times (``--repeats``): a row shows the median, the spread of the
runs, and a verdict that states its confidence, ``met 3/3`` when every run met the goal,
``not met 0/3`` when none did, ``unsure 2/3`` when the runs disagree (the machine's noise is
as large as the margin). The table fits an 80-column terminal: two lines per measure.
"""

from __future__ import annotations

import collections
import enum
import operator
import re
import statistics
import textwrap
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
    UNSURE = "unsure"  # met in some runs and not in others: the spread straddles the goal
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


def run_verdict(row: dict[str, Any]) -> Verdict:
    """One run's verdict: its figure against its goal."""
    if not row["goal"].strip():
        return Verdict.INFO
    goal = parse_goal(row["goal"], row["unit"])
    measured = None if goal is None else row["ratio" if goal.on_ratio else "value"]
    if goal is None or measured is None:
        return Verdict.UNREADABLE
    return Verdict.MET if COMPARISONS[goal.op](measured, goal.bound) else Verdict.NOT_MET


def _median(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if len(present) == len(values) and present else None


def combine(runs: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per measure over a module's runs, in the order the first run gave them: the
    n-th row of each name in every run (a baseline's description may change between runs).

    The row's ``value``, ``baseline_value`` and ``ratio`` are the medians of the runs that gave
    the measure; ``values``, ``ratios`` and ``verdicts`` keep every run's, which the spread and
    the verdict's confidence are read from: one run's figure says nothing of its noise.
    """
    samples: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for rows in runs:
        seen: collections.Counter[str] = collections.Counter()
        for row in rows:  # the n-th row of a name: two measures may share one (other baselines)
            samples.setdefault((row["name"], seen[row["name"]]), []).append(row)
            seen[row["name"]] += 1
    combined = []
    for rows in samples.values():
        combined.append(
            {
                **rows[0],
                "value": _median([row["value"] for row in rows]),
                "baseline_value": _median([row["baseline_value"] for row in rows]),
                "ratio": _median([row["ratio"] for row in rows]),
                "values": [row["value"] for row in rows],
                "ratios": [row["ratio"] for row in rows],
                "verdicts": [str(run_verdict(row)) for row in rows],
            }
        )
    return combined


def verdict(row: dict[str, Any]) -> Verdict:
    """A combined row's verdict: met or not met only if every run agrees, else unsure."""
    verdicts = {Verdict(v) for v in row.get("verdicts", [str(run_verdict(row))])}
    if len(verdicts) == 1:
        return verdicts.pop()
    return Verdict.UNSURE if verdicts == {Verdict.MET, Verdict.NOT_MET} else Verdict.UNREADABLE


def confidence(row: dict[str, Any]) -> str:
    """How many runs met the goal, of how many: ``3/3``; empty for a row without a goal."""
    verdicts = row.get("verdicts", [str(run_verdict(row))])
    if verdict(row) in (Verdict.INFO, Verdict.UNREADABLE):
        return ""
    return f"{verdicts.count(Verdict.MET)}/{len(verdicts)}"


def spread(row: dict[str, Any]) -> str:
    """Half the range of the runs' values, relative to their median: ``±4%``; ``-`` for one run."""
    values = [value for value in row.get("values", []) if value is not None]
    middle = row["value"]
    if len(values) < 2 or not middle:
        return "-"
    return f"±{(max(values) - min(values)) / 2 / abs(middle) * 100:.0f}%"


@attrs.frozen
class ModuleResult:
    """One benchmark module's runs: its combined rows, or the error that stopped it."""

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


WIDTH = 80
"""The table fits a terminal of this many columns: each measure takes two lines."""
FIGURES = ("value", "spread", "baseline", "ratio", "goal", "verdict")
"""The columns of a measure's second line, under the module and measure of its first."""
INDENT = "  "


def _figures(row: dict[str, Any]) -> tuple[str, ...]:
    ratio = "-" if row["ratio"] is None else f"{number(row['ratio'])}x"
    shown = verdict(row)
    return (
        f"{number(row['value'])} {row['unit']}",
        spread(row),
        number(row["baseline_value"]),
        ratio,
        row["goal"] or "-",
        f"{shown} {confidence(row)}".rstrip(),
    )


def _title(module: str, text: str) -> list[str]:
    return textwrap.wrap(
        f"{module}: {text}", WIDTH, subsequent_indent=INDENT * 2, break_on_hyphens=False
    )


def table_lines(results: Sequence[ModuleResult]) -> list[str]:
    """Two lines per measure: the module, the measure and its baseline (wrapped to WIDTH), then
    its figures in columns as wide as their widest cell; one line per failed module."""
    figures: list[tuple[str, ...]] = [FIGURES]
    for result in results:
        figures.extend(_figures(row) for row in result.rows)
    widths = [max(len(line[i]) for line in figures) for i in range(len(FIGURES))]
    right = {FIGURES.index("spread"), FIGURES.index("ratio")}

    def columns(cells: tuple[str, ...]) -> str:
        return INDENT + "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    lines = ["module: measure vs baseline", columns(FIGURES)]
    rows = iter(figures[1:])
    for result in results:
        if result.error is not None:
            lines.extend(_title(result.name, f"error: {result.error}"))
        for row in result.rows:
            lines.extend(_title(result.name, f"{row['name']} vs {row['baseline'] or 'none'}"))
            lines.append(columns(next(rows)))
    return lines


def print_module(name: str, rows: list[dict[str, Any]]) -> None:
    """A module run alone (``python -m benchmarks.bench_NAME``): its rows as the one table."""
    print("\n".join(table_lines([ModuleResult(name, 0.0, combine([rows]))])))
