"""An implementation's answer never raises in the harness: a view that is not a view of its
level, a lone surrogate, NaN or Infinity are protocol failures reported like a divergence
(exit 1, a verdict, a trace written in strict RFC 8259 JSON that replay reads back), or, in the
handshake, the one line of a run that could not start (exit 2)."""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_cli_check import _broken

from statemeta.cli import main
from statemeta.harness.machine import Divergence, compare_step, compare_views
from statemeta.harness.observation import Observation
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import read_trace
from statemeta.harness.wire import MAX_JSON_DEPTH, loads_bounded


def _answer(op: str, result: str) -> str:
    """The misbehaviour: ``op`` answered with the raw JSON text ``result``."""
    return (
        f'if request["op"] == "{op}": '
        f"print('{{\"id\": %d, \"result\": {result}}}' % request['id'], flush=True); continue"
    )


HOSTILE = {
    "view {}": (_answer("view", "{}"), "sut", "view key level: missing, not the started"),
    "view level 2 only": (_answer("view", '{"level": 2}'), "sut", "view key closing: missing"),
    "view an op result": (_answer("view", '{"ok": 1}'), "sut", "view key level: missing"),
    "error name a lone surrogate": (
        _answer("register", r'{"error": "\\ud800"}'), "sut", "lone surrogate"
    ),
    "ok NaN": (_answer("register", '{"ok": NaN}'), "sut", "NaN is not JSON"),
    "view Infinity": (_answer("view", '{"level": Infinity}'), "sut", "Infinity is not JSON"),
    "view 1e999": (_answer("view", '{"level": 1e999}'), "sut", "beyond a finite number"),
    "a fault": (
        'if request["op"] == "register": print(json.dumps(dict(id=request["id"], error=dict('
        'code="fault", message="AddressSanitizer: heap-use-after-free in f at x.c:9"))), '
        "flush=True); continue",
        "fault",
        "fault: AddressSanitizer: heap-use-after-free in f at x.c:9",
    ),
}


MALFORMED = {
    "a task that is not an object": ('r["result"]["tasks"][0] = 1', "view key tasks[0]: 1 is "
                                     "not an object"),
    "a task key missing": ('del r["result"]["tasks"][0]["status"]',
                           "view key tasks[0].status: missing"),
    "an int that is a string": ('r["result"]["tasks"][0]["refcount"] = "x"',
                                'view key tasks[0].refcount: "x" is not an int'),
    "a bool that is an int": ('r["result"]["loaded"] = 0', "view key loaded: 0 is not a bool"),
    "an object that is a number": ('r["result"]["heartbeat"] = 7',
                                   "view key heartbeat: 7 is not an object"),
    "an object's field of another kind": ('r["result"]["start_round"]["ready"] = [[1]]',
                                          "view key start_round.ready: [[1]] is not a list of "
                                          "ids"),
    "a status that is no status": ('r["result"]["tasks"][0]["status"] = "gone"',
                                   'view key tasks[0].status: "gone" is not a status name'),
    "a waiting entry cut short": ('r["result"]["tasks"][0]["waiting"] = [["ready"]]',
                                  'view key tasks[0].waiting: [["ready"]] is not a list of '
                                  "[status, event]"),
    "the level missing": ('del r["result"]["level"]', "view key level: missing"),
}
"""A view mutation made once a task is mapped (Python on ``r``, the response), and the line the
failure says."""


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_view_the_harness_cannot_read_is_a_protocol_failure_naming_key_and_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    mutation, said = MALFORMED[name]
    misbehaviour = (
        'if request["op"] == "view" and server.level == 2 and server.adapter.view()["ids"]: '
        f"r = server.respond(line); {mutation}; print(json.dumps(r), flush=True); continue"
    )
    command = _broken(tmp_path, misbehaviour)
    out = tmp_path / "trace.json"
    run = ["check", "--sut", command, "--level", "2", "--examples", "3", "--steps", "3"]
    code = main([*run, "--seed", "0", "--timeout", "30", "--trace-out", str(out)])
    text = capsys.readouterr().out
    assert code == 1, text
    trace = read_trace(out)
    assert trace.failure.kind == "sut"
    assert f"answered a view the harness cannot read: {said}" in trace.failure.detail


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} in the trace")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_answer_is_a_verdict_with_a_strict_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    misbehaviour, kind, said = HOSTILE[name]
    command = _broken(tmp_path, misbehaviour)
    out = tmp_path / "trace.json"
    run = ["check", "--sut", command, "--level", "2", "--examples", "3", "--steps", "3"]
    code = main([*run, "--seed", "0", "--timeout", "30", "--trace-out", str(out)])
    text = capsys.readouterr().out
    assert code == 1, text
    assert f"trace written to {out}" in text
    written = out.read_text(encoding="utf-8")
    assert written.isascii()
    _strict(written)
    trace = read_trace(out)
    assert trace.failure.kind == kind
    assert said in trace.failure.detail
    assert main(["replay", str(out), "--sut", command, "--timeout", "30"]) == 1
    assert "still fails" in capsys.readouterr().out


def test_a_lone_surrogate_in_the_handshake_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    misbehaviour = (
        'if request["op"] == "hello": r = server.respond(line); r["result"]["name"] = "\\ud800";'
        " print(json.dumps(r), flush=True); continue"
    )
    command = _broken(tmp_path, misbehaviour)
    code = main(["check", "--sut", command, "--level", "2", "--examples", "1", "--timeout", "30"])
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("statemeta check: could not run: "), captured.err
    assert "lone surrogate" in lines[0]
    lines[0].encode("utf-8")  # printable: the surrogate is shown escaped


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (b"[NaN]", "NaN is not JSON"),
        (b'{"a": -Infinity}', "-Infinity is not JSON"),
        (b"[1e400]", "beyond a finite number"),
        (b'["\\ud800"]', "lone surrogate"),
        (b'{"\\uDFFF": 1}', "lone surrogate"),
        (b'["\\ud83d"]', "lone surrogate"),
    ],
)
def test_the_wire_reads_strict_json_of_unicode_text_only(line: bytes, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        loads_bounded(line, MAX_JSON_DEPTH)
    with pytest.raises(ValueError, match=said):
        loads_bounded(line.decode(), MAX_JSON_DEPTH)


def test_the_wire_reads_a_surrogate_pair_and_finite_numbers() -> None:
    assert loads_bounded(b'["\\ud83d\\ude00", 1.5e300, "\\\\ud800"]', MAX_JSON_DEPTH) == [
        "\U0001f600", 1.5e300, "\\ud800"
    ]


@pytest.mark.parametrize("tasks", [[1], [None], ["s1"], [[]]])
def test_tasks_that_are_not_objects_are_a_view_divergence_where_keys_are_declared(
    tasks: list[Any],
) -> None:
    """A declaration of some keys completes the implementation's tasks with the reference's:
    a task that is not an object is a divergence, not an AttributeError."""
    reference = ReferenceAdapter()
    reference.start(2)
    reference.call(Op.of("register", task="s1"))
    view = reference.view()
    with pytest.raises(Divergence, match=r"view\.tasks"):
        compare_views("op", "register", (view, {**view, "tasks": tasks}), None,
                      Observation.of(2, [], ["status"]))


def _registered_view(level: int) -> tuple[dict[str, Any], dict[str, Any]]:
    reference = ReferenceAdapter()
    reference.start(level)
    result = reference.call(Op.of("register", task="s1"))
    return result, reference.view()


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        ("task", "acquires", {}),
        ("task", "refcount", True),
        ("task", "trigger_held", []),
        ("task", "checkpointing_id", None),
        ("start_round", "completed", 1.5),
        ("heartbeat", "tick_counter", "1"),
    ],
)
def test_a_view_value_of_another_kind_is_a_malformed_view(
    where: str, key: str, value: object
) -> None:
    """The invariants do arithmetic on a view's numbers: one of another kind is a divergence,
    not a TypeError from inside an invariant."""
    _result, view = _registered_view(3)
    sut = json.loads(json.dumps(view))
    (sut["tasks"][0] if where == "task" else sut[where])[key] = value
    with pytest.raises(Divergence, match=f"malformed view .*{key}"):
        compare_views("op", "register", (view, sut), None, Observation.everything(3))


def test_no_mutation_of_a_view_raises_anything_but_a_divergence() -> None:
    """Seeded: 600 views, each the reference's with one value replaced by another JSON value,
    at levels 2 and 3, observed in full and as declared."""
    rnd = random.Random(34)
    values: list[Any] = [None, True, 0, -1, 2**70, 1.5, "x", [], {}, [[16, 1]], {"id": 1}]
    for level in (2, 3):
        result, view = _registered_view(level)
        for seen in (Observation.everything(level), Observation.of(level, [], ["status"])):
            for _ in range(150):
                sut = json.loads(json.dumps(view))
                node: Any = sut
                while True:
                    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
                    key = rnd.choice(keys)
                    below = node[key]
                    if not below or not isinstance(below, (dict, list)) or rnd.random() < 0.4:
                        node[key] = rnd.choice(values)
                        break
                    node = node[key]
                with contextlib.suppress(Divergence):
                    compare_step(Op.of("register", task="s1"), result, result, view, sut, None,
                                 seen)


@pytest.mark.parametrize("outcome", [{}, [], [["applied"]], {"applied": 1}])
def test_an_outcome_that_is_not_a_name_is_a_result_divergence(outcome: object) -> None:
    """Declared ``ok_rejected`` outcomes are collapsed by name: an unhashable one is compared
    as it is (a divergence), not a TypeError."""
    reference = ReferenceAdapter()
    reference.start(2)
    reference.call(Op.of("register", task="s1"))
    op = Op.of("handle_event", task="s1", event="pause")
    result = reference.call(op)
    view = reference.view()
    seen = Observation.of(2, [], ["status"], "ok_rejected")
    with pytest.raises(Divergence, match="result divergence"):
        compare_step(op, result, {"ok": outcome}, view, view, None, seen)
