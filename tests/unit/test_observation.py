"""Protocol 2's declared observations (statemeta.harness.observation), on the reference.

The must-shows: the reference declaring only ``status`` conforms at level 1 and the report
lists what was not compared; a lifecycle variant that changes status is still caught at level
1; a variant that changes only an unobserved key passes, and the report names the invariants
that could not run (the same variant is caught once its key is observed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs
import pytest
from test_invariants import broken, sample_view

from statemeta.cli import main
from statemeta.errors import MisuseError
from statemeta.harness.machine import Divergence, broken_invariants, compare_step
from statemeta.harness.normalize import meta_view_json
from statemeta.harness.observation import VIEW_KEYS, Observation, declared
from statemeta.harness.operations import LEVELS, OP_SPECS, Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.serve import Server
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import replay
from statemeta.invariants import VIEW_INVARIANTS

SERVE = f"{sys.executable} -m statemeta.serve"
RUN = ["--examples", "60", "--steps", "40", "--seed", "0"]


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_status_alone_conforms_at_level_1_and_the_report_lists_what_was_not_compared(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sut = f"{SERVE} --observe status"
    code, out, err = _check(capsys, "--sut", sut, "--level", "1", *RUN, "--json")
    assert code == 0, out + err
    report = json.loads(out)
    assert report["conformant"] is True
    assert report["protocol"] == 2
    assert report["observed"] == {"view": ["level", "tasks"], "tasks": ["slot", "status"]}
    assert report["unobserved"] == {
        "view": [],
        "tasks": ["saved", "active", "waiting", "prev_status", "prev_event"],
    }
    assert report["unchecked_invariants"] == {}  # level 1 has no view invariants
    assert "not compared (the implementation does not observe them): task key saved" in err


def test_waiting_fired_lifo_changes_status_where_only_status_is_observed() -> None:
    """The LIFO variant fires the waiting HALT before the PAUSE: the status differs, so a
    run that compares status alone tells it from the reference (a fixed trace: random runs
    reach two waiting events on f1 rarely, see the check test below)."""
    ops = [
        Op.of("handle", task="f1", event="init"),
        Op.of("complete", task="f1", event="init"),
        Op.of("handle", task="f1", event="gen_checkpoint"),
        Op.of("handle", task="f1", event="pause"),
        Op.of("handle", task="f1", event="halt"),
        Op.of("handle", task="f1", event="checkpoint_done"),
    ]
    for sut, fails in ((f"{SERVE} --variant waiting_fired_lifo --observe status", True),
                       (f"{SERVE} --observe status", False)):
        with SubprocessAdapter(sut) as adapter:
            found = replay(ops, level=1, sut=adapter, sut_command=sut)
        assert (found is not None) is fails, sut
        if found is not None:
            assert found.failure.kind == "view" and ".status:" in found.failure.detail
            assert len(found.steps) == len(ops)


@pytest.mark.parametrize(
    ("variant", "examples"), [("waiting_fired_early", 60), ("waiting_fired_lifo", 300)]
)
def test_a_lifecycle_variant_that_changes_status_is_caught_at_level_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, variant: str, examples: int
) -> None:
    trace = tmp_path / "t.json"
    sut = f"{SERVE} --variant {variant} --observe status"
    run = ["--examples", str(examples), "--steps", "40", "--seed", "0"]
    code, out, _ = _check(capsys, "--sut", sut, "--level", "1", *run, "--trace-out", str(trace))
    assert code == 1, out
    failure = json.loads(trace.read_text())["failure"]
    assert failure["kind"] == "view"
    assert ".status:" in failure["detail"]
    assert set(failure["sut_view"]["tasks"][0]) == {"slot", "status"}  # only what is compared
    assert main(["replay", str(trace), "--sut", sut]) == 1
    assert main(["replay", str(trace), "--sut", f"{SERVE} --observe status"]) == 0  # the fix
    assert "not compared (the implementation does not observe them)" in capsys.readouterr().out


def test_a_variant_changing_an_unobserved_key_passes_and_its_invariant_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    variant = "paused_count_self_pause"  # only paused_count differs
    sut = f"{SERVE} --variant {variant} --observe status"
    code, out, err = _check(capsys, "--sut", sut, "--level", "2", *RUN, "--json")
    assert code == 0, out + err
    report = json.loads(out)
    assert report["unchecked_invariants"]["paused-count"] == ["paused_count"]
    assert "paused_count" in report["unobserved"]["view"]
    assert "invariants not run on its view: list-map (reads ids, map_ids)" in err
    assert "paused-count (reads paused_count)" in err
    observed = f"{SERVE} --variant {variant} --observe status,paused_count"
    code, out, err = _check(capsys, "--sut", observed, "--level", "2", *RUN, "--json")
    assert code == 1, out + err
    assert json.loads(out)["failure"]["kind"] in {"invariant", "view"}
    assert "paused-count" not in json.loads(out)["unchecked_invariants"]


def test_outcomes_ok_rejected_compares_ok_and_rejected_only() -> None:
    op = Op.of("handle", task="s1", event="pause")
    view = {"level": 1, "tasks": [{"slot": "s1", "status": "pause"}]}
    coarse = Observation.of(1, [], ["status"], "ok_rejected")
    compare_step(op, {"ok": "pending"}, {"ok": "ok"}, view, view, observation=coarse)
    compare_step(op, {"ok": "applied"}, {"ok": "started"}, view, view, observation=coarse)
    with pytest.raises(Divergence, match="result"):
        compare_step(op, {"ok": "pending"}, {"ok": "rejected"}, view, view, observation=coarse)
    with pytest.raises(Divergence, match="result"):
        fine = attrs.evolve(coarse, outcomes="full")
        compare_step(op, {"ok": "pending"}, {"ok": "ok"}, view, view, observation=fine)
    served = ReferenceAdapter(observe=["status"], outcomes="ok_rejected")
    served.start(1)
    assert served.call(Op.of("handle", task="s1", event="init")) == {"ok": "ok"}
    assert served.call(Op.of("handle", task="s1", event="init")) == {"ok": "ok"}
    assert served.call(Op.of("restore", task="s1")) == {"ok": "rejected"}


def test_the_view_key_table_is_the_references_view() -> None:
    reference = ReferenceAdapter()
    for level in LEVELS:
        reference.start(level)
        if level > 1:
            reference.call(Op.of("register", task="s1"))
        view = reference.view()
        top, tasks = VIEW_KEYS[level]
        assert tuple(view) == top
        assert tuple(view["tasks"][0]) == tasks
        reference.stop()


def test_projections_are_idempotent_and_the_coarse_saved_is_the_top() -> None:
    reference = ReferenceAdapter()
    reference.start(1)
    for event in ("init",):
        reference.call(Op.of("handle", task="f1", event=event))
    reference.call(Op.of("complete", task="f1", event="init"))
    reference.call(Op.of("handle", task="f1", event="pause"))
    reference.call(Op.of("handle", task="f1", event="halt"))
    coarse = Observation.of(1, [], ["status", "saved:top"])
    once = coarse.view_of(reference.view())
    (f1,) = [t for t in once["tasks"] if t["slot"] == "f1"]  # HALT needs a fill-history task
    assert f1 == {"slot": "f1", "status": "halt", "saved": ["pause"]}
    assert coarse.view_of(once) == once
    meta = Observation.of(2, ["heartbeat.armed", "paused_count"], ["status"])
    reference.start(2)
    full = reference.view()
    projected = meta.view_of(full)
    assert projected["heartbeat"] == {"armed": full["heartbeat"]["armed"]}
    assert set(projected) == {"level", "tasks", "heartbeat", "paused_count"}
    assert meta.view_of(projected) == projected


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (["status", "no_such_key"], r"no view key \['no_such_key'\]"),
        (["active"], r"every declaration observes the tasks' 'status'"),
        ([], r"every declaration observes the tasks' 'status'"),
    ],
)
def test_a_wrong_declaration_is_refused(keys: list[str], message: str) -> None:
    with pytest.raises(MisuseError, match=message):
        declared(keys)


@pytest.mark.parametrize(
    ("hello", "message"),
    [
        ({"protocol": 2, "observes": []}, "an object of levels"),
        ({"protocol": 2, "observes": {"1": {"view": []}}}, r'\{"view": \[keys\]'),
        ({"protocol": 2, "observes": {"1": {"view": [], "tasks": ["x"]}}}, r"key\(s\) \['x'\]"),
        ({"protocol": 2, "outcomes": "some"}, "outcomes 'some'"),
    ],
)
def test_a_malformed_hello_declaration_is_refused(hello: dict[str, object], message: str) -> None:
    with pytest.raises(MisuseError, match=message):
        Observation.of_hello(hello, 1)


def test_protocol_1_and_an_undeclared_level_observe_everything() -> None:
    assert Observation.of_hello({"protocol": 1}, 2).full
    hello = {"protocol": 2, "observes": {"1": {"view": [], "tasks": ["status"]}}}
    assert not Observation.of_hello(hello, 1).full
    assert Observation.of_hello(hello, 3).full


def test_a_bad_declaration_over_the_protocol_could_not_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = tmp_path / "sut.py"
    script.write_text(
        "import json, sys\n"
        "line = json.loads(sys.stdin.readline())\n"
        'hello = {"protocol": 2, "name": "x", "levels": [1], '
        '"observes": {"1": {"view": [], "tasks": ["saved"]}}}\n'
        'print(json.dumps({"id": line["id"], "result": hello}), flush=True)\n'
    )
    code, out, err = _check(capsys, "--sut", f"{sys.executable} {script}", "--level", "1")
    assert code == 2, out + err
    assert "its declaration of what it observes" in err
    assert "observes the tasks' 'status'" in err


def test_the_server_speaks_protocol_1_unless_it_declares_observations() -> None:
    hello = '{"id": 1, "op": "hello", "args": {"protocol": 1}}'
    answer = Server(ReferenceAdapter(check_invariants=False)).respond(hello)
    assert answer["result"]["protocol"] == 1
    partial = ReferenceAdapter(check_invariants=False, observe=["status"])
    refused = Server(partial).respond(hello)
    assert refused["error"]["code"] == "unsupported_protocol"
    offered = Server(partial).respond(hello.replace('"protocol": 1', '"protocol": 2'))
    assert offered["result"]["observes"]["1"] == {
        "view": ["level", "tasks"],
        "tasks": ["slot", "status"],
    }


def test_outcome_ops_are_the_ops_whose_result_is_an_outcome() -> None:
    flagged = {name for name, spec in OP_SPECS.items() if spec.outcome}
    assert flagged == {name for name, spec in OP_SPECS.items() if "-> outcome" in spec.doc}


@pytest.mark.parametrize(
    "invariant_id", [i for i, *_ in VIEW_INVARIANTS if i != "fill-history"]
)
def test_an_invariant_break_lives_in_the_keys_it_declares(
    tmp_path: Path, invariant_id: str
) -> None:
    """Only the declared keys of a broken view, over a clean one, still break the invariant:
    the declaration names every key the break is in. (fill-history's break removes a task, so
    the two views show different tasks and cannot be merged key by key.)"""
    clean = sample_view(tmp_path)
    bad = broken(clean)[invariant_id]
    reads = next(r for i, _c, r in VIEW_INVARIANTS if i == invariant_id)
    view = [k for k in reads if not k.startswith("tasks.")]
    tasks = ["status", *(k.removeprefix("tasks.") for k in reads if k.startswith("tasks."))]
    observation = Observation.of(2, view, tasks)
    merged = observation.completed(meta_view_json(bad, 2, 0), meta_view_json(clean, 2, 0))
    assert merged is not None
    assert invariant_id in broken_invariants(merged)
