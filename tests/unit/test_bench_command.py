"""``python -m benchmarks`` / ``statemeta bench``: goals, verdicts, table, JSON, failing modules.

Fake benchmark modules stand in sys.modules for the real ones: no test runs a benchmark.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from benchmarks import __main__ as bench_main
from benchmarks._table import (
    WIDTH,
    Goal,
    ModuleResult,
    Verdict,
    combine,
    confidence,
    number,
    parse_goal,
    spread,
    table_lines,
    verdict,
)
from statemeta.cli import main as statemeta_main
from statemeta.cli_bench import BENCHMARKS, NOT_INSTALLED


def _row(
    value: float | None, ratio: float | None, goal: str, unit: str = "ops/s"
) -> dict[str, Any]:
    return {
        "name": f"figure {goal or 'without goal'}",
        "value": value,
        "unit": unit,
        "baseline": "the baseline",
        "baseline_value": 2.0,
        "ratio": ratio,
        "goal": goal,
    }


@pytest.mark.parametrize(
    ("goal", "unit", "parsed"),
    [
        ("<= 1.5x", "us", Goal("<=", 1.5, on_ratio=True)),
        (">= 0.8x", "tasks/s", Goal(">=", 0.8, on_ratio=True)),
        ("< 1x", "us/op (scan)", Goal("<", 1.0, on_ratio=True)),
        (">= 1,000 steps/s", "steps/s", Goal(">=", 1000.0, on_ratio=False)),
        ("<= 20 us", "us", Goal("<=", 20.0, on_ratio=False)),
        (">= 20000", "states/s", Goal(">=", 20000.0, on_ratio=False)),
        ("< 1 (fewer states)", "states", None),  # neither x nor the row's unit
        ("<= 20 ms", "us", None),  # another unit than the row's
        ("ratio <= 1.5", "us", None),
        ("report", "us", None),
        ("<= 3x struct", "us", None),
    ],
)
def test_parse_goal(goal: str, unit: str, parsed: Goal | None) -> None:
    assert parse_goal(goal, unit) == parsed


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (_row(1.0, 1.5, "<= 1.5x"), Verdict.MET),
        (_row(1.0, 1.51, "<= 1.5x"), Verdict.NOT_MET),
        (_row(1.0, 1.0, "< 1x"), Verdict.NOT_MET),
        (_row(999.0, 0.1, ">= 1,000 ops/s"), Verdict.NOT_MET),
        (_row(1000.0, 0.1, ">= 1,000 ops/s"), Verdict.MET),
        (_row(5.0, 9.0, "> 4"), Verdict.MET),
        (_row(5.0, 9.0, ""), Verdict.INFO),
        (_row(5.0, None, "<= 2x"), Verdict.UNREADABLE),
        (_row(5.0, 1.0, "fast enough"), Verdict.UNREADABLE),
    ],
)
def test_verdict(row: dict[str, Any], expected: Verdict) -> None:
    assert verdict(row) is expected


def test_number_keeps_three_significant_digits() -> None:
    assert [number(v) for v in (None, 0.0004, 0.4931, 35.24, 99.96, 208.6, 3240, 1832.1)] == [
        "-",
        "0.0004",
        "0.493",
        "35.2",
        "100",
        "209",
        "3,240",
        "1,832",
    ]


def _runs(name: str, goal: str, *pairs: tuple[float, float]) -> list[list[dict[str, Any]]]:
    """One module's runs, each giving the measure ``name`` with a (value, ratio) pair."""
    return [[{**_row(value, ratio, goal), "name": name}] for value, ratio in pairs]


def test_a_measure_over_runs_is_their_median_with_every_run_kept() -> None:
    (row,) = combine(_runs("m", "<= 1x", (10.0, 0.9), (14.0, 1.2), (12.0, 0.8)))
    assert (row["value"], row["ratio"], row["baseline_value"]) == (12.0, 0.9, 2.0)
    assert row["values"] == [10.0, 14.0, 12.0] and row["ratios"] == [0.9, 1.2, 0.8]
    assert spread(row) == "±17%"  # (14 - 10) / 2 / 12


def test_two_measures_of_one_name_stay_two_rows() -> None:
    """lifecycle's ``handle (applied row)`` against two baselines: one goal each, never mixed."""
    run = [{**_row(8.0, 1.0, "<= 1.5x"), "name": "handle"},
           {**_row(8.0, 10.0, ""), "name": "handle", "baseline": "dict lookup"}]
    first, second = combine([run, run, run])
    assert (verdict(first), confidence(first)) == (Verdict.MET, "3/3")
    assert verdict(second) is Verdict.INFO and second["baseline"] == "dict lookup"


@pytest.mark.parametrize(
    ("pairs", "expected", "stated"),
    [
        (((1.0, 0.9), (1.0, 0.8), (1.0, 1.0)), Verdict.MET, "3/3"),
        (((1.0, 1.1), (1.0, 1.2), (1.0, 1.3)), Verdict.NOT_MET, "0/3"),
        (((1.0, 0.9), (1.0, 1.2), (1.0, 0.8)), Verdict.UNSURE, "2/3"),  # median met: unsure
        (((1.0, 1.1), (1.0, 0.9)), Verdict.UNSURE, "1/2"),
        (((1.0, 0.9),), Verdict.MET, "1/1"),
    ],
)
def test_a_verdict_is_sure_only_when_every_run_agrees(
    pairs: tuple[tuple[float, float], ...], expected: Verdict, stated: str
) -> None:
    (row,) = combine(_runs("m", "<= 1x", *pairs))
    assert verdict(row) is expected and confidence(row) == stated


def test_a_row_without_a_goal_states_no_confidence() -> None:
    (row,) = combine(_runs("m", "", (1.0, 0.5), (2.0, 0.6)))
    assert verdict(row) is Verdict.INFO and confidence(row) == ""
    (single,) = combine(_runs("m", "<= 1x", (1.0, 0.5)))
    assert spread(single) == "-"


LONG_ROWS = [
    {
        "name": "check of the served reference, level 3, statemeta process",
        "value": 0.327, "unit": "MB/10k ops", "baseline": "one Hypothesis run",
        "baseline_value": 14.0, "ratio": 0.0233, "goal": "< 1 MB/10k ops",
    },
    {
        "name": "check 1,000 ops, 4 clients, 5 keys, one impossible read (memo + partitions, "
        "shrink)",
        "value": 0.00222, "unit": "s", "baseline": "neither (exhausted budget counts)",
        "baseline_value": 0.00348, "ratio": 0.638, "goal": "< 1 s",
    },
    {
        "name": "explore states/s (default bounds, depth 3, 2 workers)", "value": 1549.0,
        "unit": "states/s", "baseline": "1 worker", "baseline_value": 1812.0, "ratio": 0.85,
        "goal": ">= 20000 states/s",
    },
]
"""The widest rows the benchmarks print: long names, units, baselines and goals."""


def test_the_table_fits_a_terminal_two_lines_per_measure_and_names_errors() -> None:
    lines = table_lines(
        [
            ModuleResult("linearizability", 1.0, combine([LONG_ROWS, LONG_ROWS, LONG_ROWS])),
            ModuleResult("store", 0.2, [], "OSError: disk full " + "and more " * 12),
        ]
    )
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    assert lines[0] == "module: measure vs baseline"
    assert lines[1].split() == ["value", "spread", "baseline", "ratio", "goal", "verdict"]
    titles = [line for line in lines[2:] if not line.startswith(" ")]
    assert titles[0] == (
        "linearizability: check of the served reference, level 3, statemeta process vs"
    )
    assert lines[3] == "    one Hypothesis run"  # the wrapped rest of the title, indented
    figures = [line for line in lines[2:] if line.startswith("  ") and "/3" in line]
    assert len(figures) == 3 and figures[0].split()[:2] == ["0.327", "MB/10k"]
    assert figures[0].endswith("met 3/3") and figures[2].endswith("not met 0/3")
    column = lines[1].index("verdict")
    assert all(line[column - 2 : column] == "  " for line in figures)
    assert any(line.startswith("store: error: OSError: disk full and") for line in lines)


def _fake(rows: list[dict[str, Any]] | Exception) -> types.ModuleType:
    module = types.ModuleType("fake_bench")

    def run(quick: bool) -> list[dict[str, Any]]:
        assert quick
        if isinstance(rows, Exception):
            raise rows
        return rows

    module.run = run  # type: ignore[attr-defined]
    return module


@pytest.fixture
def fake_benchmarks(monkeypatch: pytest.MonkeyPatch) -> None:
    """codec raises, meta returns a row without a ratio key, explore cannot be imported."""
    fakes: dict[str, types.ModuleType | None] = {
        name: _fake([_row(10.0, 0.5, "<= 1x")]) for name in BENCHMARKS
    }
    fakes["codec"] = _fake(RuntimeError("struct baseline disagrees\nsecond line"))
    fakes["meta"] = _fake([{k: v for k, v in _row(1.0, 1.0, "").items() if k != "ratio"}])
    fakes["explore"] = None
    for name, module in fakes.items():
        monkeypatch.setitem(sys.modules, f"benchmarks.bench_{name}", module)


def _modules(out: str) -> list[str]:
    """The module of each title line of the printed table, in order, once each."""
    table = out.split("\n\n")[0].splitlines()[2:]
    names = [line.split(":")[0] for line in table if not line.startswith(" ")]
    return list(dict.fromkeys(names))


@pytest.mark.usefixtures("fake_benchmarks")
def test_a_failing_module_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    assert bench_main.main(["--quick", "--repeats", "2", "--json", str(out)]) == 1
    printed = capsys.readouterr()
    assert _modules(printed.out) == list(BENCHMARKS)
    assert "codec: error: RuntimeError: struct baseline disagrees" in printed.out
    assert "second line" not in printed.out
    assert "meta: error: ValueError: row 'figure without goal' has no ratio" in printed.out
    assert "explore: error: ModuleNotFoundError" in printed.out
    met = len(BENCHMARKS) - 3  # all but codec, meta and explore
    assert sum(line.endswith("  met 2/2") for line in printed.out.splitlines()) == met
    assert "2 runs each" in printed.out
    table = [line for line in printed.out.splitlines() if not line.startswith("wrote ")]
    assert max(len(line) for line in table) <= WIDTH  # the legend too; a path is as long as it is
    assert f"wrote {out}" in printed.out
    assert "explore ..." in printed.err

    document = json.loads(out.read_text())
    assert document["quick"] is True and document["repeats"] == 2
    assert set(document["machine"]) == {"python", "implementation", "platform", "cpu_count"}
    assert document["date"].endswith("+00:00") and document["seconds"] >= 0
    modules = {m["name"]: m for m in document["modules"]}
    assert [m["name"] for m in document["modules"]] == list(BENCHMARKS)
    assert modules["codec"]["error"].startswith("RuntimeError") and modules["codec"]["rows"] == []
    assert modules["store"]["error"] is None
    assert modules["store"]["rows"] == [
        {
            **_row(10.0, 0.5, "<= 1x"), "values": [10.0, 10.0], "ratios": [0.5, 0.5],
            "verdicts": ["met", "met"], "verdict": "met", "confidence": "2/2",
        }
    ]
    assert all(m["seconds"] >= 0 for m in document["modules"])


def test_every_module_runs_as_many_times_as_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ratios = iter([0.5, 1.5, 0.7, 0.9])  # the runs disagree on the goal <= 1x
    module = types.ModuleType("fake_bench")
    module.run = lambda quick: [_row(10.0, next(ratios), "<= 1x")]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benchmarks.bench_store", module)
    assert bench_main.main(["--only", "store", "--repeats", "4"]) == 0
    out = capsys.readouterr().out
    assert next(ratios, None) is None
    (figures,) = [line for line in out.splitlines() if line.endswith("/4")]
    assert figures.endswith("unsure 3/4") and "0.8x" in figures


@pytest.mark.usefixtures("fake_benchmarks")
def test_statemeta_bench_runs_only_the_named_modules_in_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert statemeta_main(["bench", "--quick", "--only", "store", "lifecycle"]) == 0
    out = capsys.readouterr().out
    assert _modules(out) == ["lifecycle", "store"]
    assert "codec" not in out and "2 modules, 3 runs each, in" in out


@pytest.mark.parametrize("missing", ["benchmarks", "benchmarks.__main__"])
def test_statemeta_bench_without_a_source_checkout(
    missing: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "benchmarks.__main__")
    monkeypatch.setitem(sys.modules, missing, None)
    assert statemeta_main(["bench", "--quick"]) == 2
    assert capsys.readouterr().err.strip() == NOT_INSTALLED
