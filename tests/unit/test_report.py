"""statemeta report: what the page shows, read from each kind of input, and what it refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from statemeta.cli import main
from statemeta.errors import ReportInputError
from statemeta.harness.linearizability import History
from statemeta.harness.linearizability.checker import SequentialSpec
from statemeta.harness.linearizability.history import Operation
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import read_trace
from statemeta.lifecycle import LIFECYCLE_ROWS
from statemeta.roles import ROLE_ROWS
from statemeta.tools.report import default_output
from statemeta.tools.report_html import render
from statemeta.tools.report_model import longest_linearizable_prefix, read_report
from tests.unit.report_support import CONCURRENT_TRACE, TRACES, failing_check, passing_explore


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("report")
    return {"check": failing_check(directory), "explore": passing_explore(directory)}


def test_a_failing_checks_heatmaps_count_what_its_json_counts(inputs: dict[str, Path]) -> None:
    doc = json.loads(inputs["check"].read_text())
    report = read_report(inputs["check"])
    assert not report.passed and report.kind == "check"
    assert report.lifecycle is not None and report.roles is not None
    classes, missed = doc["coverage"]["classes"], doc["coverage"]["missed"]
    assert [h.label for h in report.lifecycle.hits] == [r.label for r in LIFECYCLE_ROWS]
    assert [h.label for h in report.roles.hits] == [r.label for r in ROLE_ROWS]
    for family, chart in (("row", report.lifecycle), ("role", report.roles)):
        for hit in chart.hits:
            assert hit.times == classes.get(f"{family}:{hit.label}", 0)
            assert hit.why == missed.get(f"{family}:{hit.label}")
    assert {f for f, _, _ in report.families} == set(doc["coverage"]["families"])
    page = render(report)
    for name in ("summary", "lifecycle", "roles", "coverage", "counterexample-1"):
        assert f'data-section="{name}"' in page
    assert page.count('class="cell"') == len(LIFECYCLE_ROWS) + len(ROLE_ROWS)


def test_the_counterexample_shows_the_references_state_after_each_step(
    inputs: dict[str, Path],
) -> None:
    """Replayed on the reference: each step's state, what it changed, both views at the end."""
    doc = json.loads(inputs["check"].read_text())
    trace = read_trace(Path(doc["failure"]["trace"]))
    (example,) = read_report(inputs["check"]).counterexamples
    assert [s.op for s in example.steps] == [repr(op) for op in trace.ops]
    adapter = ReferenceAdapter(check_invariants=False)
    adapter.start(trace.level)
    for step, op in zip(example.steps, trace.ops, strict=True):
        adapter.call(op)
        assert step.state == adapter.view()
    assert "paused_count: 0 -> 1" in example.steps[1].changed
    assert example.differences == ("paused_count: reference 1, implementation 2",)
    page = render(read_report(inputs["check"]))
    assert re.search(r"<tr class=diff><td class=mono>paused_count</td>"
                     r"<td class=mono>1</td><td class=mono>2</td></tr>", page)


def test_a_passing_explores_heatmap_and_depths(inputs: dict[str, Path]) -> None:
    doc = json.loads(inputs["explore"].read_text())
    report = read_report(inputs["explore"])
    assert report.passed and report.kind == "explore" and not report.counterexamples
    assert report.depths == tuple(doc["states_per_depth"])
    assert report.lifecycle is not None
    taken = {t["row"]: t["times"] for t in doc["lifecycle_rows"]["taken"]}
    why = {m["row"]: m["reason"] for m in doc["lifecycle_rows"]["not_reached"]}
    for hit in report.lifecycle.hits:
        assert (hit.times, hit.why) == (taken.get(hit.label, 0), why.get(hit.label))
    assert 'data-section="depths"' in render(report)


def test_a_concurrent_failure_draws_the_linearization_that_failed() -> None:
    report = read_report(CONCURRENT_TRACE)
    drawn = report.concurrent
    assert drawn is not None and not report.passed and not drawn.linearizable
    assert [c.index for c in drawn.order] == [0, 1, 2, 3, 4, 5]
    (blocked,) = [c for c in drawn.calls if c.blocked]
    assert blocked.index == 6 and blocked.order is None
    assert blocked.blocked == 'the reference returns {"ok":null} here'
    assert drawn.clients == (0, 1, 2)
    assert 'data-section="lanes"' in render(report)


def test_a_linearizable_history_draws_its_witness(tmp_path: Path) -> None:
    doc = json.loads(CONCURRENT_TRACE.read_text())
    history = doc["history"]
    history["operations"] = history["operations"][:-1]  # without the release that fails
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history))
    report = read_report(path)
    assert report.passed and report.concurrent is not None
    assert sorted(c.index for c in report.concurrent.order) == list(range(6))
    assert not [c for c in report.concurrent.calls if c.blocked]


def _register() -> SequentialSpec[int, tuple[str, int], int]:
    """A register: ("write", v) returns 0, ("read", 0) returns the value."""
    return SequentialSpec(
        0, lambda state, op: (op[1], 0) if op[0] == "write" else (state, state))


def test_the_longest_prefix_takes_calls_in_real_time_order_and_pending_ones_freely() -> None:
    calls = (
        Operation(0, 0, 1, ("write", 1), 0),
        Operation(1, 2, 3, ("read", 0), 2),  # no order gives 2
        Operation(2, 0, None, ("write", 2), None),  # pending: may take effect, or not
    )
    assert longest_linearizable_prefix(_register(), History(calls[:2])) == [0]
    assert longest_linearizable_prefix(_register(), History(calls)) == [0, 2, 1]


def test_the_page_is_self_contained_and_escapes_what_it_shows(tmp_path: Path) -> None:
    doc = json.loads((TRACES / "keep-going-seed.json").read_text())
    doc["sut"] = "<script>alert(1)</script>"
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    page = render(read_report(path))
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert not re.search(r"<link|<img|<iframe|\bsrc=|url\((?!#)|@import", page)
    assert set(re.findall(r"https?://[^\s\"']+", page)) == {"http://www.w3.org/2000/svg"}
    assert "not compared (masked by --keep-going): start view.tasks.prev_status" in page


def test_a_keep_going_catalogue_is_drawn_with_each_trace(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    doc = json.loads(inputs["check"].read_text())
    doc["catalogue"] = [{"op": "handle", "at": "view.tasks.saved", "kind": "view",
                         "reference": "uninit", "sut": "pause", "steps": 2,
                         "trace": str(TRACES / "keep-going-seed.json")}]
    path = tmp_path / "kg.json"
    path.write_text(json.dumps(doc))
    report = read_report(path)
    assert len(report.catalogue) == 1 and len(report.counterexamples) == 2
    assert report.counterexamples[1].title == "divergence 1 (keep-going-seed.json)"
    assert 'data-section="catalogue"' in render(report)


def test_report_writes_the_page_beside_its_input(
    inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "explore.json"
    source.write_text(inputs["explore"].read_text())
    assert main(["report", str(source)]) == 0
    assert (tmp_path / "explore.html").read_text().startswith("<!DOCTYPE html>")
    assert capsys.readouterr().out == f"report written to {tmp_path / 'explore.html'}\n"
    assert default_output("-") == Path("statemeta-report.html")


@pytest.mark.parametrize(("text", "problem"), [
    ("not json", "cannot be read as JSON"),
    ("[1]", "expected a JSON object"),
    ('{"a": 1}', "is none of what a report reads"),
    ('{"format": 1, "level": 9}', "not a valid input"),
])
def test_report_refuses_what_it_cannot_draw_in_one_line(
    text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.json"
    source.write_text(text)
    with pytest.raises(ReportInputError, match=problem):
        read_report(source)
    assert main(["report", str(source), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"statemeta report: error: {source}: ") and err.count("\n") == 1
    assert not (tmp_path / "out.html").exists()


def test_report_refuses_to_overwrite_its_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.html"
    source.write_text("{}")
    assert main(["report", str(source)]) == 2
    assert "would overwrite its input" in capsys.readouterr().err
    assert source.read_text() == "{}"
