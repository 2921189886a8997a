"""statemeta campaign: counts what it ran, reaches the tables' rows, reports a failure."""

from __future__ import annotations

import json

import pytest

from statemeta.cli import main
from statemeta.errors import InvariantViolation
from statemeta.harness import campaign
from statemeta.harness.campaign import run_campaign
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.lifecycle import LIFECYCLE_ROWS
from statemeta.roles import ROLE_ROWS


@pytest.mark.parametrize("seed_value", [0, 7, 2**40])
def test_a_campaign_reaches_every_class_within_the_bounds_whatever_its_seed(
    seed_value: int,
) -> None:
    """The directed corpus runs first: every class (every table row among them) reachable
    within the explorer's bounds is reached on any seed, however short the random part."""
    report = run_campaign(2, 5, seed_value=seed_value)
    assert report.failure is None
    assert report.directed > 0 and report.examples >= report.directed + 2
    doc = report.to_json()
    coverage = doc["coverage"]
    assert coverage["reached_reachable"] == coverage["reachable"] > 0
    for table, rows in (("lifecycle_rows", LIFECYCLE_ROWS), ("role_rows", ROLE_ROWS)):
        reported = doc[table]
        assert reported["total"] == len(rows)
        assert len(reported["taken"]) + len(reported["not_reached"]) == len(rows)
        assert all(t["times"] > 0 for t in reported["taken"])
        for missed in reported["not_reached"]:
            assert missed["reason"].startswith("not reachable within the bounds"), missed


def test_the_campaign_and_the_explorer_report_rows_in_one_shape() -> None:
    from statemeta.explore.bounds import Bounds
    from statemeta.explore.coverage import report as explore_report
    from statemeta.explore.search import explore

    explored = explore_report(explore(Bounds(max_depth=2)))
    campaign_doc = run_campaign(1, 5, seed_value=0).to_json()
    for table in ("lifecycle_rows", "role_rows"):
        for doc in (explored, campaign_doc):
            assert set(doc[table]) == {"total", "taken", "not_reached"}
            assert all(set(t) == {"row", "times"} for t in doc[table]["taken"])
            assert all(set(m) == {"row", "reason"} for m in doc[table]["not_reached"])


def test_the_same_seed_runs_the_same_campaign() -> None:
    first, second = run_campaign(5, 20, seed_value=3), run_campaign(5, 20, seed_value=3)
    assert (first.examples, first.steps) == (second.examples, second.steps)
    assert first.coverage == second.coverage


class _BrokenAfter(ReferenceAdapter):
    """A reference whose check fails on its 40th operation of an example."""

    def call(self, op: Op) -> dict[str, object]:
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == 40:
            raise InvariantViolation("paused-count", "planted by the test")
        return super().call(op)


def test_a_failing_step_is_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(campaign, "ReferenceAdapter", _BrokenAfter)
    report = run_campaign(50, 50, seed_value=0)
    assert report.failure is not None
    assert report.failure.startswith("InvariantViolation at operation 40 of the failing example:")
    assert "planted by the test" in report.failure


def test_the_command_prints_json_and_exits_by_the_verdict(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["campaign", "--examples", "3", "--steps", "10", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["failure"] is None and doc["steps_run"] > 0 and doc["steps_per_second"] > 0
    monkeypatch.setattr(campaign, "ReferenceAdapter", _BrokenAfter)
    assert main(["campaign", "--examples", "50", "--steps", "50", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: InvariantViolation at operation 40 of the failing example" in out


def test_the_lmdb_backend_runs() -> None:
    report = run_campaign(3, 10, seed_value=0, backend="lmdb")
    assert report.failure is None and report.steps > 0


def test_the_campaign_runs_the_reference_in_the_semantics_asked_for(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []

    class Recorded(ReferenceAdapter):
        def start(self, level: int) -> None:
            made.append(self.semantics.value)
            super().start(level)

    monkeypatch.setattr(campaign, "ReferenceAdapter", Recorded)
    report = run_campaign(3, 10, seed_value=0, semantics="seed")
    assert made and set(made) == {"seed"}
    assert report.to_json()["semantics"] == "seed"
    code = main(["campaign", "--examples", "3", "--steps", "10", "--semantics", "seed", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["semantics"] == "seed" and code == (0 if doc["failure"] is None else 1)
    made.clear()
    assert main(["campaign", "--examples", "2", "--steps", "5", "--quiet"]) == 0
    assert set(made) == {"intended"}
    assert "property campaign (intended semantics)" in capsys.readouterr().out


@pytest.mark.parametrize("minutes", ["0", "-1", "nan", "inf", "abc"])
def test_minutes_must_be_a_positive_number(
    minutes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["campaign", "--minutes", minutes])
    assert exited.value.code == 2
    assert f"{minutes!r} is not a number of minutes in (0, 1440]" in capsys.readouterr().err


def test_a_campaign_with_minutes_runs_to_its_examples_when_they_end_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["campaign", "--examples", "3", "--steps", "10", "--minutes", "5",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["examples"] >= 3
