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
from benchmarks._table import Goal, ModuleResult, Verdict, number, parse_goal, table_lines, verdict
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


def test_table_aligns_columns_and_names_errors() -> None:
    lines = table_lines(
        [
            ModuleResult("codec", 0.1, [_row(3.0, 1.5, "<= 3x"), _row(2.5, None, "")]),
            ModuleResult("store", 0.2, [], "OSError: disk full"),
        ]
    )
    assert lines[0].split() == [
        "module",
        "measure",
        "value",
        "baseline",
        "ratio",
        "goal",
        "verdict",
    ]
    assert lines[1].split("  ")[0] == "codec"
    assert "2 (the baseline)" in lines[1] and "1.5x" in lines[1] and lines[1].endswith("met")
    assert lines[2].endswith("info")
    assert lines[3].startswith("store") and "error: OSError: disk full" in lines[3]
    assert lines[3].endswith("error")
    column = lines[0].index("verdict")
    assert all(line[column - 2 : column] == "  " for line in lines)


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


@pytest.mark.usefixtures("fake_benchmarks")
def test_a_failing_module_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    assert bench_main.main(["--quick", "--json", str(out)]) == 1
    printed = capsys.readouterr()
    rows = [line.split("  ")[0] for line in printed.out.splitlines()[1 : len(BENCHMARKS) + 1]]
    assert rows == list(BENCHMARKS)
    assert "error: RuntimeError: struct baseline disagrees" in printed.out
    assert "second line" not in printed.out
    assert "error: ValueError: row 'figure without goal' has no ratio" in printed.out
    assert "error: ModuleNotFoundError" in printed.out
    met = len(BENCHMARKS) - 3  # all but codec, meta and explore
    assert sum(line.endswith("  met") for line in printed.out.splitlines()) == met
    assert "explore ..." in printed.err

    document = json.loads(out.read_text())
    assert document["quick"] is True
    assert set(document["machine"]) == {"python", "implementation", "platform", "cpu_count"}
    assert document["date"].endswith("+00:00") and document["seconds"] >= 0
    modules = {m["name"]: m for m in document["modules"]}
    assert [m["name"] for m in document["modules"]] == list(BENCHMARKS)
    assert modules["codec"]["error"].startswith("RuntimeError") and modules["codec"]["rows"] == []
    assert modules["store"]["error"] is None
    assert modules["store"]["rows"] == [{**_row(10.0, 0.5, "<= 1x"), "verdict": "met"}]
    assert all(m["seconds"] >= 0 for m in document["modules"])


@pytest.mark.usefixtures("fake_benchmarks")
def test_statemeta_bench_runs_only_the_named_modules_in_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert statemeta_main(["bench", "--quick", "--only", "store", "lifecycle"]) == 0
    out = capsys.readouterr().out
    assert [line.split("  ")[0] for line in out.splitlines()[1:3]] == ["lifecycle", "store"]
    assert "codec" not in out and "2 modules in" in out


@pytest.mark.parametrize("missing", ["benchmarks", "benchmarks.__main__"])
def test_statemeta_bench_without_a_source_checkout(
    missing: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "benchmarks.__main__")
    monkeypatch.setitem(sys.modules, missing, None)
    assert statemeta_main(["bench", "--quick"]) == 2
    assert capsys.readouterr().err.strip() == NOT_INSTALLED
