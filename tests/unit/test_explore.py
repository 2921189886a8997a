"""The explorer: forks, canonical states, the BFS and its counterexamples, the report, the CLI."""

from __future__ import annotations

import json
import os
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import NoReturn

import attrs
import pytest

from statemeta.cli import main
from statemeta.codec import encode_task, encode_task_key
from statemeta.errors import InvariantViolation
from statemeta.explore import search
from statemeta.explore.bounds import Bounds
from statemeta.explore.cli_explore import write_counterexample
from statemeta.explore.coverage import format_report, invariant_ids, report
from statemeta.explore.search import ForkableReference, explore
from statemeta.explore.state import StateAbstraction, symmetry_classes
from statemeta.harness.operations import TASK_POOL, Op, slot_of
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import read_trace, replay
from statemeta.lifecycle import LIFECYCLE_ROWS
from statemeta.meta.core import TASK_TABLE

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
    return _adapter_of(None, *ops)


def _adapter_of(variant: str | None, *ops: Op) -> ForkableReference:
    adapter = ForkableReference(variant)
    adapter.start(3)
    for op in ops:
        adapter.call(op)
    return adapter


def test_a_fork_is_independent_of_its_origin() -> None:
    origin = _adapter(Op.of("register", task="s2"), Op.of("start_task_timer", task="s2"))
    copy = origin.fork()
    copy.call(Op.of("advance_clock", ms=1_000))  # fires the copy's timers only
    copy.call(Op.of("register", task="s1"))
    copy.call(Op.of("crash_reopen"))
    view, copied = origin.view(), copy.view()
    assert [t["timer_active"] for t in view["tasks"]] == [1]
    assert view["ids"] == [[0x10, 2]]
    assert copied["ids"] == [[0x10, 1], [0x10, 2]]
    assert origin.call(Op.of("crash_reopen"))["ok"]["loaded"] == [[0x10, 2]]


def test_forks_are_independent_of_each_other() -> None:
    origin = _adapter(Op.of("register", task="s2"), Op.of("start_task_timer", task="s2"))
    first, second = origin.fork(), origin.fork()
    first.call(Op.of("advance_clock", ms=1_000))
    first.call(Op.of("unregister", task="s2"))
    assert first.view()["ids"] == []
    for copy in (second, origin):
        assert [t["timer_active"] for t in copy.view()["tasks"]] == [1]
    second.call(Op.of("advance_clock", ms=1_000))  # the second copy's own timers fire
    assert [t["timer_active"] for t in second.view()["tasks"]] == [0]
    assert [t["timer_active"] for t in origin.view()["tasks"]] == [1]
    assert origin.fork().view() == origin.view()


def test_only_plain_stream_tasks_are_interchangeable() -> None:
    assert symmetry_classes(TASK_POOL) == (("s1", "s3"), ("s2",), ("f1",), ("h1",), ("t1",))


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
        changed = base.fork()
        changed.call(op)
        assert abstraction.key(changed) != abstraction.key(base), op
    assert abstraction.key(base.fork()) == abstraction.key(base)


def test_the_key_holds_what_the_state_invariants_read() -> None:
    """A record stored under another task's key is not the same state as the task's own
    record (store-mirror tells them apart), though symmetric records are named without ids."""
    abstraction = StateAbstraction(TASK_POOL, symmetry=True)
    own, foreign = _adapter(), _adapter()
    s1, s3 = slot_of("s1"), slot_of("s3")
    for adapter, record in ((own, s1.record), (foreign, s3.record)):
        store = adapter.store.inner
        store.begin()
        store.table(TASK_TABLE, 16).upsert(encode_task_key(s1.id.stream_id, s1.id.task_id),
                                          encode_task(record))
        store.commit()
    assert abstraction.key(own) != abstraction.key(foreign)
    only_in_map, in_neither = _adapter(Op.of("register", task="s1")), _adapter(
        Op.of("register", task="s1")
    )
    only_in_map.meta.state.ids.clear()  # list-map broken
    in_neither.meta.state.ids.clear()
    in_neither.meta.state.entries.clear()
    assert abstraction.key(only_in_map) != abstraction.key(in_neither)


def test_twins_are_symmetric_slots_in_the_same_state() -> None:
    abstraction = StateAbstraction(TASK_POOL, symmetry=True)
    assert abstraction.key_and_twins(_adapter())[1] == {"s3"}
    assert abstraction.key_and_twins(_adapter(Op.of("register", task="s1")))[1] == set()
    plain = StateAbstraction(TASK_POOL, symmetry=False)
    assert plain.key_and_twins(_adapter())[1] == set()


def test_deferred_adapters_leave_the_state_invariants_to_the_search() -> None:
    broken = ForkableReference("stream_count_counts_fill_history")
    broken.deferred_state_checks = True
    broken.start(3)
    broken.call(Op.of("register", task="h1"))  # stream-count broken: not raised here
    with pytest.raises(search._Failure, match="stream-count"):
        search._check_state([broken])
    with pytest.raises(InvariantViolation, match="stream-count"):
        _adapter_of("stream_count_counts_fill_history").call(Op.of("register", task="h1"))


def test_deferred_adapters_still_check_every_transition() -> None:
    adapter = ForkableReference()
    adapter.deferred_state_checks = True
    adapter.start(3)
    adapter.call(Op.of("crash_reopen"))  # the reopened meta defers too
    assert not adapter.meta.check_state
    adapter.call(Op.of("register", task="s1"))
    adapter.call(Op.of("handle_event", task="s1", event="init"))
    adapter.call(Op.of("complete_event", task="s1", event="init"))
    rows = adapter.coverage.lifecycle_rows
    assert sum(rows.values()) == 1  # the trace of the transition was taken and checked
    assert adapter.meta.take_trace().status_changes == ()


def test_parallel_workers_find_what_the_serial_search_finds() -> None:
    bounds = attrs.evolve(Bounds(), max_depth=3)  # level 3 expands 145 states: in parallel
    serial = explore(bounds, keep_paths=True)
    parallel = explore(bounds, keep_paths=True, workers=2)
    assert parallel.complete and parallel.workers == 2
    one, two = report(serial), report(parallel)
    for field in ("states", "transitions", "mirrored_transitions", "states_per_depth",
                  "lifecycle_rows", "role_rows"):
        assert one[field] == two[field], field
    assert sorted(map(repr, serial.leaves)) == sorted(map(repr, parallel.leaves))
    assert serial.statuses == parallel.statuses


def test_the_time_the_operations_take_is_measured_and_reported() -> None:
    result = explore(SMALL)
    stats = result.stats
    assert 0 < stats.step_seconds < stats.seconds
    doc = report(result)
    assert doc["step_seconds"] == round(stats.step_seconds, 3)
    assert f"running the operations on the reference: {stats.step_seconds:.1f} s" in (
        format_report(doc)
    )


def test_parallel_workers_find_the_serial_counterexample(monkeypatch: pytest.MonkeyPatch) -> None:
    serial = explore(SMALL, variant="register_without_commit")
    monkeypatch.setattr(search, "PARALLEL_MIN_STATES", 1)
    parallel = explore(SMALL, variant="register_without_commit", workers=2)
    assert serial.counterexample is not None and parallel.counterexample is not None
    assert parallel.counterexample.ops == serial.counterexample.ops
    assert parallel.counterexample.detail == serial.counterexample.detail
    assert parallel.stats == serial.stats
    assert parallel.coverage == serial.coverage


def test_a_worker_that_dies_stops_the_search_instead_of_hanging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = os.getpid()

    def die(*_args: object, **_kwargs: object) -> NoReturn:
        if os.getpid() != parent:
            os._exit(3)
        raise AssertionError("every level of at least one state is expanded by the workers")

    monkeypatch.setattr(search, "PARALLEL_MIN_STATES", 1)
    monkeypatch.setattr(search, "_expand", die)
    with pytest.raises(BrokenProcessPool):
        explore(SMALL, workers=2)


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
            "--workers",
            "1",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["complete"] and doc["states"] == sum(doc["states_per_depth"])
    assert doc["bounds"]["slots"] == ["s1"]


def test_verify_explores_the_default_bounds_completely(capsys: pytest.CaptureFixture[str]) -> None:
    """The main job, at its default size, in this process (the parallel search has its tests):
    the wide search leaves the rows of an interrupted checkpoint to the deep one, and the two
    together take every row of both tables."""
    code = main(["verify", "--json", "--workers", "1"])
    summary = json.loads(capsys.readouterr().out)
    doc, deep = summary["explore"], summary["deep"]
    assert code == 0 and summary["ok"]
    assert summary["semantics"] == doc["semantics"] == deep["semantics"] == "intended"
    assert doc["violations"] == deep["violations"] == [] and not doc["all_violations"]
    assert doc["complete"] and doc["depth"] == Bounds().max_depth
    assert deep["complete"] and deep["depth"] == Bounds().max_depth + 1
    assert doc["bounds"]["slots"] == ["s1", "s3", "f1", "h1"]
    assert deep["bounds"]["slots"] == ["f1", "h1"]
    assert not doc["role_rows"]["not_reached"]
    assert all(m["reason"] for m in doc["lifecycle_rows"]["not_reached"])
    for table in ("lifecycle_rows", "role_rows"):
        assert summary[table]["not_reached"] == []
        assert len(summary[table]["taken"]) == summary[table]["total"]
    assert summary["campaign"]["failure"] is None and summary["campaign"]["steps_run"] > 0


def test_verify_without_the_deep_search_reports_the_wide_one_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--stream-tasks", "1", "--no-fill-history", "--max-depth", "2", "--workers", "1",
            "--examples", "1", "--steps", "1", "--json"]
    assert main(["verify", *args, "--no-deep"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["deep"] is None
    assert {t: alone[t] for t in ("lifecycle_rows", "role_rows")} == {
        t: alone["explore"][t] for t in ("lifecycle_rows", "role_rows")}
    assert main(["verify", *args]) == 0
    both = json.loads(capsys.readouterr().out)
    assert both["deep"]["bounds"]["slots"] == ["f1", "h1"] and both["deep"]["depth"] == 3
    taken = {r["row"] for r in both["lifecycle_rows"]["taken"]}
    assert taken == ({r["row"] for r in both["explore"]["lifecycle_rows"]["taken"]}
                     | {r["row"] for r in both["deep"]["lifecycle_rows"]["taken"]})
    assert taken > {r["row"] for r in alone["lifecycle_rows"]["taken"]}


def test_the_deep_bounds_are_the_pair_alone_with_the_same_budgets_one_operation_deeper() -> None:
    wide = Bounds(stream_tasks=1, trigger_timer=True, no_downstream=True, fill_history=False,
                  role_changes=3, faults=0, max_depth=6)
    deep = wide.deep()
    assert [s.name for s in deep.slots] == ["f1", "h1"]
    assert deep.budgets() == wide.budgets() and deep.max_depth == 7


# -- budget subsumption ---------------------------------------------------------------------


def test_a_node_is_subsumed_only_by_one_with_at_least_each_budget_left() -> None:
    explored = {7: [(("faults", 1), ("reopens", 0))]}
    assert search._covers(explored, 7, (("faults", 1), ("reopens", 0)))
    assert search._covers(explored, 7, (("faults", 0), ("reopens", 0)))
    assert not search._covers(explored, 7, (("faults", 0), ("reopens", 1)))
    assert not search._covers(explored, 7, (("faults", 2), ("reopens", 0)))
    assert not search._covers(explored, 8, (("faults", 0), ("reopens", 0)))


def test_the_nodes_kept_at_depth_one_are_the_maximal_ones_of_each_state() -> None:
    """From the empty meta each call leads to a node: a state and the budgets left. The
    reduced search keeps, for each state other than the empty meta's, the nodes no other node
    in it has at least each budget of (the empty meta's own state, with every budget left,
    subsumes any node back in it: the clock advanced with nothing armed, a start of nothing)."""
    bounds = attrs.evolve(Bounds(), max_depth=1)
    abstraction = StateAbstraction(bounds.slots, symmetry=True)
    root = ForkableReference()
    root.start(bounds.level)
    full = dict(bounds.budgets())
    nodes: dict[object, set[tuple[int, ...]]] = {abstraction.key(root): {tuple(full.values())}}
    for op in bounds.alphabet():
        if root.precondition_broken(op) is None:
            after = root.fork()
            after.call(op)
            left = {**full, **({} if op.spec.budget is None
                               else {op.spec.budget: full[op.spec.budget] - 1})}
            if all(n >= 0 for n in left.values()):
                nodes.setdefault(abstraction.key(after), set()).add(tuple(left.values()))

    def maximal(lefts: set[tuple[int, ...]]) -> int:
        return sum(
            not any(o != mine and all(a <= b for a, b in zip(mine, o, strict=True))
                    for o in lefts)
            for mine in lefts
        )

    kept = sum(maximal(lefts) for lefts in nodes.values()) - 1  # less the empty meta
    plain = sum(len(lefts) for lefts in nodes.values()) - 1
    reduced = explore(bounds)
    assert kept < plain == explore(bounds, subsume=False).stats.per_depth[1]
    assert reduced.stats.per_depth == [1, kept]


def test_progress_in_a_log_is_plain_lines_ending_at_the_summary_depth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """stderr is not a terminal here (captured): no ``\\r``; the last line's depth is the
    depth the summary reports."""
    small = ["--stream-tasks", "1", "--no-fill-history", "--max-depth", "2", "--reopens", "0",
             "--faults", "0", "--workers", "1"]
    assert main(["explore", *small]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert main(["explore", *small, "--json"]) == 0
    depth = json.loads(capsys.readouterr().out)["depth"]
    lines = [line for line in err.splitlines() if line.startswith("depth ")]
    assert lines and lines[-1].startswith(f"depth {depth}: ")
