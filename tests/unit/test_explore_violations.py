"""The explorer in either semantics, and every distinct violation it finds.

``--semantics`` (one option of statemeta.cli_args for check, replay, explore, verify and
campaign) reaches the explored reference; ``--all-violations`` (and ``--semantics seed``)
goes on past a failure and writes one replayable trace per (invariant, operation), each a
shortest one. The mechanism is shown with broken variants and with the seed's own defects.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from statemeta.cli import main
from statemeta.explore import search
from statemeta.explore.bounds import Bounds
from statemeta.explore.search import explore
from statemeta.harness.operations import Op
from statemeta.harness.trace import read_trace
from statemeta.semantics import Semantics

ONE_TASK = Bounds(
    stream_tasks=1, fill_history=False, role_changes=0, start_rounds=0, reopens=0, faults=0,
    clock_advances=0, max_depth=3,
)
BOUND_ARGS = [
    "--stream-tasks", "1", "--no-fill-history", "--role-changes", "0", "--start-rounds", "0",
    "--reopens", "0", "--faults", "0", "--clock-advances", "0", "--max-depth", "3",
    "--workers", "1",
]
"""ONE_TASK on the command line."""
FORGETS_STOP = "paused_count_forgets_stop"
"""A variant that breaks paused-count through four different operations (every way out of
PAUSE but resume), each first reached in three steps."""
FORGETS_STOP_VIOLATIONS = [
    ("paused-count", "unregister"),
    ("paused-count", "handle_event"),
    ("paused-count", "stop_all"),
    ("paused-count", "notify_close"),
]


def _pairs(result: search.Exploration) -> list[tuple[str, str]]:
    return [(v.invariant, v.operation) for v in result.violations]


def test_every_distinct_violation_is_collected_each_with_a_shortest_trace() -> None:
    first = explore(ONE_TASK, variant=FORGETS_STOP)
    every = explore(ONE_TASK, variant=FORGETS_STOP, all_violations=True)
    assert not first.all_violations and len(first.violations) == 1 and not first.complete
    assert every.all_violations and every.complete
    assert _pairs(every) == FORGETS_STOP_VIOLATIONS
    assert every.violations[0] == first.violations[0]  # the first one is still the shortest
    assert every.counterexample == first.counterexample
    for violation in every.violations:
        ops = violation.counterexample.ops
        assert len(ops) == 3 and ops[-1].name == violation.operation
        assert violation.invariant in violation.counterexample.detail
    # Going on past the failures explores every other state: the deepest level is finished.
    assert every.stats.depth == ONE_TASK.max_depth
    assert every.stats.states > first.stats.states


def test_a_violating_state_is_not_expanded() -> None:
    """Deeper bounds find the same pairs: no trace runs through an earlier violation (each
    would fail before its end), and none is longer than the shortest of its pair."""
    deeper = explore(attrs.evolve(ONE_TASK, max_depth=5), variant=FORGETS_STOP,
                     all_violations=True)
    assert _pairs(deeper) == FORGETS_STOP_VIOLATIONS
    assert [len(v.counterexample.steps) for v in deeper.violations] == [3, 3, 3, 3]


@pytest.mark.parametrize("where", ["state", "transition"])
def test_a_state_failing_a_planted_check_is_neither_kept_nor_expanded(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that fails wherever a task is registered, planted as a state invariant (the
    search checks it on each new state; the replay's adapters, which check everything inside
    each operation, after every step) or as a trace invariant (after every transition): the
    one violation is register's, and no state past it is ever found."""

    def planted(system: search.System, inherited: frozenset[str] = frozenset()) -> None:
        if system[0].view()["ids"]:
            raise search._Failure("invariant", "planted: a task is registered", "planted")

    step = search._step

    def step_then_check(system: search.System, op: Op, results: list[dict[str, Any]]) -> None:
        step(system, op, results)
        if where == "transition" or not system[0].deferred_state_checks:
            planted(system)

    if where == "state":
        monkeypatch.setattr(search, "_check_state", planted)
    monkeypatch.setattr(search, "_step", step_then_check)
    result = explore(ONE_TASK, all_violations=True)
    assert _pairs(result) == [("planted", "register")]
    assert result.violations[0].counterexample.ops == (Op.of("register", task="s1"),)
    assert result.complete
    # the states with no task: empty, loaded, closing (notify_close ran), loaded and closing
    assert result.stats.per_depth == [1, 2, 1, 0]


def test_violations_from_parallel_workers_are_the_serial_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bounds = attrs.evolve(ONE_TASK, reopens=1, max_depth=4)
    serial = explore(bounds, variant="delete_without_commit", all_violations=True)
    monkeypatch.setattr(search, "PARALLEL_MIN_STATES", 1)
    parallel = explore(bounds, variant="delete_without_commit", all_violations=True, workers=2)
    assert len(serial.violations) >= 2
    assert parallel.violations == serial.violations
    assert parallel.stats == serial.stats


def test_a_violation_is_named_as_its_replay_fails() -> None:
    """The search sees release_below_zero's results differ first (it checks the state
    invariants after the operation); the replay's own check names refcount, as the trace does."""
    result = explore(attrs.evolve(ONE_TASK, max_depth=2), variant="release_below_zero",
                     all_violations=True)
    assert _pairs(result) == [("refcount", "release")]
    assert result.violations[0].counterexample.kind == "invariant"


def test_the_explorer_explores_the_seed() -> None:
    """The seed's lifecycle (L1: PAUSE -> PAUSE overwrites prev, ...) gives other states."""
    bounds = attrs.evolve(ONE_TASK, max_depth=4)
    intended = explore(bounds)
    seed = explore(bounds, semantics="seed")
    assert intended.semantics is Semantics.INTENDED and seed.semantics is Semantics.SEED
    assert seed.stats.per_depth != intended.stats.per_depth


def _explore_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["explore", *BOUND_ARGS, "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_the_cli_lists_every_violation_and_each_trace_replays_against_the_served_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "violations"
    code, doc = _explore_json(
        capsys, "--variant", FORGETS_STOP, "--all-violations", "--trace-dir", str(out)
    )
    assert code == 1
    assert doc["semantics"] == "intended" and doc["all_violations"] and doc["complete"]
    assert doc["trace_dir"] == str(out)
    listed = doc["violations"]
    assert [(v["invariant"], v["operation"]) for v in listed] == FORGETS_STOP_VIOLATIONS
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(v["trace"]).name for v in listed)
    for entry in listed:
        assert entry["length"] == 3 and entry["invariant"] in entry["detail"]
        trace = read_trace(Path(entry["trace"]))
        assert trace.sut == f"{sys.executable} -m statemeta.serve --variant {FORGETS_STOP}"
        assert [repr(op) for op in trace.ops] == entry["ops"]
        # fails again, over the protocol
        assert main(["replay", entry["trace"], "--sut", trace.sut]) == 1, entry
        assert "still fails" in capsys.readouterr().out


def test_by_default_the_first_failure_stops_the_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "cex.json"
    code, doc = _explore_json(capsys, "--variant", FORGETS_STOP, "--trace", str(trace))
    assert code == 1 and not doc["all_violations"] and not doc["complete"]
    assert [v["trace"] for v in doc["violations"]] == [str(trace)] == [doc["trace"]]
    assert doc["counterexample"]["ops"] == doc["violations"][0]["ops"]


def test_the_intended_semantics_passes_with_every_violation_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "none"
    code, doc = _explore_json(capsys, "--all-violations", "--trace-dir", str(out))
    assert code == 0 and doc["violations"] == [] and doc["semantics"] == "intended"
    assert not out.exists()


def test_the_seed_is_explored_for_every_violation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--semantics seed`` names the seed and goes on past failures; its verdict is its
    violations (none while the seed profile has only lifecycle switches: not asserted)."""
    out = tmp_path / "seed"
    code, doc = _explore_json(capsys, "--semantics", "seed", "--trace-dir", str(out))
    assert doc["semantics"] == "seed" and doc["all_violations"] and doc["complete"]
    assert code == (1 if doc["violations"] else 0)
    for entry in doc["violations"]:
        trace = read_trace(Path(entry["trace"]))
        assert trace.semantics is Semantics.SEED
        assert trace.sut.endswith("-m statemeta.serve --semantics seed")


def test_a_seed_trace_replays_against_the_served_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each defect the explorer finds in the seed is a trace naming the served seed and the
    semantics: replayed against the seed, the seed server agrees with the seed reference (the
    violation is the seed's own, on both sides); against the intended semantics it fails."""
    out = tmp_path / "seed"
    code, doc = _explore_json(
        capsys, "--semantics", "seed", "--max-depth", "3", "--trace-dir", str(out)
    )
    assert code == 1 and doc["semantics"] == "seed" and doc["violations"]
    for entry in doc["violations"]:
        trace = read_trace(Path(entry["trace"]))
        assert trace.semantics is Semantics.SEED
        assert trace.sut.endswith("-m statemeta.serve --semantics seed")
        assert main(["replay", entry["trace"], "--sut", trace.sut]) == 0, capsys.readouterr().out
        passed = capsys.readouterr().out
        assert "seed semantics); invariant violations of the seed reference itself: " in passed
        assert f"{entry['invariant']} 1" in passed  # the defect reproduced, at its last step
        assert main(["replay", entry["trace"], "--sut", trace.sut, "--semantics", "intended"]) == 1
        assert "still fails" in capsys.readouterr().out


def test_verify_takes_the_semantics(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["verify", *BOUND_ARGS, "--semantics", "seed", "--examples", "2", "--steps",
                 "5", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert summary["semantics"] == "seed"
    assert summary["explore"]["semantics"] == "seed" and summary["explore"]["all_violations"]
    assert summary["campaign"]["semantics"] == "seed"
    assert code == (0 if summary["ok"] else 1)


@pytest.mark.parametrize("command", ["explore", "verify", "campaign"])
def test_an_unknown_semantics_is_refused(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--semantics", "tdengine"])
    assert exited.value.code == 2
    assert "argument --semantics: invalid choice: 'tdengine'" in capsys.readouterr().err


def test_a_trace_directory_must_be_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    for bad in (a_file, tmp_path / "no" / "dir"):
        with pytest.raises(SystemExit) as exited:
            main(["explore", "--trace-dir", str(bad)])
        assert exited.value.code == 2
        assert "argument --trace-dir" in capsys.readouterr().err


def test_the_seed_start_round_defect_is_found_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """M7: the seed records a result for an id outside the round (here a fill-history task
    registered after start_all) and counts it; the trace replays against the served seed."""
    out = tmp_path / "seed"
    code = main(["explore", "--stream-tasks", "0", "--role-changes", "0", "--reopens", "0",
                 "--faults", "0", "--clock-advances", "0", "--max-depth", "4",
                 "--semantics", "seed", "--json", "--trace-dir", str(out)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    found = {(v["invariant"], v["operation"]): v for v in doc["violations"]}
    entry = found["start-round", "report_launch"]
    trace = read_trace(Path(entry["trace"]))
    assert entry["length"] == 4 and "results for non-members" in entry["detail"]
    assert main(["replay", entry["trace"], "--sut", trace.sut]) == 0
    assert "start-round 1" in capsys.readouterr().out
    assert main(["replay", entry["trace"], "--sut", trace.sut, "--semantics", "intended"]) == 1
    intended = explore(
        Bounds(stream_tasks=0, role_changes=0, reopens=0, faults=0, clock_advances=0,
               max_depth=4),
        all_violations=True,
    )
    assert intended.violations == ()
