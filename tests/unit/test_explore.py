"""The explorer: forks, canonical states, the BFS and its counterexamples, the report, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statemeta.cli import main
from statemeta.explore.bounds import Bounds
from statemeta.explore.cli_explore import write_counterexample
from statemeta.explore.coverage import invariant_ids, report
from statemeta.explore.fork import fork
from statemeta.explore.search import ForkableReference, explore
from statemeta.explore.state import StateAbstraction, symmetry_classes
from statemeta.harness.operations import TASK_POOL, Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import read_trace, replay
from statemeta.lifecycle import LIFECYCLE_ROWS

SMALL = Bounds(
    stream_tasks=2,
    fill_history=False,
    role_changes=1,
    start_rounds=0,
    reopens=1,
    faults=0,
    clock_advances=0,
    max_depth=2,
)


def _adapter(*ops: Op) -> ForkableReference:
    adapter = ForkableReference()
    adapter.start(3)
    for op in ops:
        adapter.call(op)
    return adapter


def test_a_fork_is_independent_of_its_origin() -> None:
    origin = _adapter(Op.of("register", task="s2"), Op.of("start_task_timer", task="s2"))
    copy = fork(origin)
    copy.call(Op.of("advance_clock", ms=1_000))  # fires the copy's timers only
    copy.call(Op.of("register", task="s1"))
    copy.call(Op.of("crash_reopen"))
    view, copied = origin.view(), copy.view()
    assert [t["timer_active"] for t in view["tasks"]] == [1]
    assert view["ids"] == [[0x10, 2]]
    assert copied["ids"] == [[0x10, 1], [0x10, 2]]
    assert origin.call(Op.of("crash_reopen"))["ok"]["loaded"] == [[0x10, 2]]


def test_only_plain_stream_tasks_are_interchangeable() -> None:
    assert symmetry_classes(TASK_POOL) == (("s1", "s3"), ("s2",), ("f1",), ("h1",))


def test_symmetric_states_share_a_key_only_with_symmetry() -> None:
    one, other = _adapter(Op.of("register", task="s1")), _adapter(Op.of("register", task="s3"))
    reduced = StateAbstraction(TASK_POOL, symmetry=True)
    plain = StateAbstraction(TASK_POOL, symmetry=False)
    assert reduced.key(one) == reduced.key(other)
    assert plain.key(one) != plain.key(other)


def test_the_key_sees_timers_faults_and_uncommitted_writes() -> None:
    abstraction = StateAbstraction(TASK_POOL, symmetry=True)
    base = _adapter(Op.of("register", task="s1"))
    for op in (
        Op.of("start_task_timer", task="s1"),
        Op.of("fail_next", op="commit"),
        Op.of("save_task", task="s1"),
        Op.of("acquire", task="s1"),
    ):
        changed = fork(base)
        changed.call(op)
        assert abstraction.key(changed) != abstraction.key(base), op
    assert abstraction.key(fork(base)) == abstraction.key(base)


def test_the_alphabet_is_the_harness_ops_on_the_slots_in_play() -> None:
    ops = SMALL.alphabet()
    tasks = {op.arg("task") for op in ops if "task" in dict(op.args)}
    assert tasks == {"s1", "s3"}
    assert Op.of("crash_reopen") in ops
    assert Op.of("handle_event", task="s3", event="pause") in ops


def test_the_reference_passes_small_bounds_and_symmetry_shrinks_the_space() -> None:
    reduced = explore(SMALL)
    plain = explore(SMALL, symmetry=False)
    assert reduced.complete and plain.complete
    assert reduced.stats.depth == plain.stats.depth == SMALL.max_depth
    assert reduced.stats.states < plain.stats.states
    doc = report(reduced)
    taken = {r["row"] for r in doc["lifecycle_rows"]["taken"]}
    missed = doc["lifecycle_rows"]["not_reached"]
    assert len(taken) + len(missed) == len(LIFECYCLE_ROWS)
    assert "UNINIT -STOP-> STOP" in taken
    assert all(m["reason"] for m in missed)
    assert doc["invariants"] == list(invariant_ids()) and "reopen" in doc["invariants"]


def test_a_broken_variant_fails_with_a_shortest_counterexample(tmp_path: Path) -> None:
    # By hand: release alone finds no task (ReleaseError, a result), so two steps is shortest.
    result = explore(SMALL, variant="release_below_zero")
    cex = result.counterexample
    assert cex is not None and not result.complete
    assert cex.ops == (Op.of("register", task="s1"), Op.of("release", task="s1"))
    assert cex.kind == "invariant" and "refcount" in cex.detail
    path = tmp_path / "cex.json"
    write_counterexample(result, path)
    trace = read_trace(path)
    assert trace.ops == cex.ops
    again = replay(
        trace.ops,
        level=trace.level,
        sut=ReferenceAdapter("release_below_zero", check_invariants=False),
        sut_command=trace.sut,
    )
    assert again is not None and again.ops == cex.ops  # it fails again, at the same step


def test_a_variant_caught_only_by_comparison_fails_on_results() -> None:
    result = explore(SMALL, variant="register_without_commit")
    cex = result.counterexample
    assert cex is not None
    assert cex.kind == "result"
    assert cex.ops == (Op.of("register", task="s1"), Op.of("close_reopen"))


def test_explore_cli_prints_json_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "explore",
            "--stream-tasks",
            "1",
            "--no-fill-history",
            "--max-depth",
            "2",
            "--reopens",
            "0",
            "--faults",
            "0",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["complete"] and doc["states"] == sum(doc["states_per_depth"])
    assert doc["bounds"]["slots"] == ["s1"]


def test_verify_explores_the_default_bounds_completely(capsys: pytest.CaptureFixture[str]) -> None:
    """The main job, at its default size (about 20 s on the 2-core machine)."""
    code = main(["verify", "--json"])
    summary = json.loads(capsys.readouterr().out)
    doc = summary["explore"]
    assert code == 0 and summary["ok"]
    assert doc["complete"] and doc["depth"] == Bounds().max_depth
    assert doc["bounds"]["slots"] == ["s1", "s3", "f1", "h1"]
    assert not doc["role_rows"]["not_reached"]
    assert all(m["reason"] for m in doc["lifecycle_rows"]["not_reached"])
    assert summary["campaign"]["failure"] is None and summary["campaign"]["steps_run"] > 0
