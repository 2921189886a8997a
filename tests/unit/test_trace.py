"""Traces: the JSON format, the table, recording a run and replaying through the machine."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from statemeta.errors import SutAborted, SutError, TraceFormatError
from statemeta.explore import search
from statemeta.harness import failure, machine
from statemeta.harness.catalogue import Mask
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import (
    MAX_TRACE_DEPTH,
    Failure,
    JsonObject,
    RecordingAdapter,
    Trace,
    TraceStep,
    format_trace,
    read_trace,
    replay,
    write_trace,
)
from statemeta.semantics import Semantics

PAUSED_TWICE = (
    Op.of("register", task="s1"),
    Op.of("handle_event", task="s1", event="pause"),
    Op.of("handle_event", task="s1", event="pause"),
)


def _trace() -> Trace:
    return Trace(
        level=2,
        sut="impl --serve",
        steps=(
            TraceStep(Op.of("register", task="s1"), {"ok": True}, {"ok": True}),
            TraceStep(
                Op.of("commit"), {"ok": None, "heartbeats": ["00ff"]}, {"error": "StoreFault"}
            ),
        ),
        failure=Failure(
            "result",
            "commit(): reference {'ok': None}, sut {'error': 'StoreFault'}",
            {"paused_count": 0, "ids": [[16, 1]], "role": "uninit"},
            {"paused_count": 1, "ids": [[16, 1], [16, 2]], "role": "uninit"},
        ),
        seed=7,
    )


def test_a_trace_survives_the_json_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    write_trace(_trace(), path)
    assert read_trace(path) == _trace()
    stored = json.loads(path.read_text())
    assert stored["format"] == 1
    assert stored["steps"][0] == {
        "op": "register",
        "args": {"task": "s1"},
        "reference": {"ok": True},
        "sut": {"ok": True},
    }


OLD_TRACES = sorted((Path(__file__).parent / "traces").glob("*.json"))
"""Traces written before the harness and the explorer shared one Step and one Failure type
(statemeta.harness.failure): by ``check --keep-going`` (masks, ``at``) and by ``explore``."""


@pytest.mark.parametrize("old", OLD_TRACES, ids=lambda p: p.stem)
def test_an_old_trace_reads_and_writes_back_byte_for_byte(old: Path, tmp_path: Path) -> None:
    path = tmp_path / old.name
    write_trace(read_trace(old), path)
    assert path.read_bytes() == old.read_bytes()


def test_the_harness_and_the_explorer_share_one_step_and_one_failure_type() -> None:
    assert machine.Step is TraceStep is search.Step is failure.Step
    assert Failure is failure.Failure
    assert attrs.fields(search.Counterexample).failure.type in (failure.Failure, "Failure")
    assert isinstance(machine.Divergence("result", "d", "result").failure, failure.Failure)


def test_a_keep_going_trace_keeps_its_masks_and_place(tmp_path: Path) -> None:
    masks = frozenset({Mask("start", "view.tasks.prev_status"), Mask("commit", "result")})
    trace = attrs.evolve(_trace(), masks=masks, failure=attrs.evolve(_trace().failure, at="result"))
    path = tmp_path / "trace.json"
    write_trace(trace, path)
    assert read_trace(path) == trace and trace.mask == Mask("commit", "result")
    assert "masks" not in _trace().to_json()  # a stopping run's trace is as it was
    assert "not compared (masked by --keep-going): commit result, start view.tasks.prev_status" \
        in format_trace(trace)


def _nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


# Each mutation of a good trace file, and the field the error must name.
MALFORMED: dict[str, tuple[Callable[[JsonObject], object], str]] = {
    "format": (lambda t: t.update(format=2), "format"),
    "format true": (lambda t: t.update(format=True), "format"),
    "format 1.0": (lambda t: t.update(format=1.0), "format"),
    "no steps": (lambda t: t.pop("steps"), "steps"),
    "steps not a list": (lambda t: t.update(steps={"op": "commit"}), "steps"),
    "step not an object": (lambda t: t["steps"].append("commit"), "steps[2]"),
    "unknown op": (lambda t: t["steps"][0].update(op="no_such_op"), "steps[0]"),
    "bad argument": (lambda t: t["steps"][0].update(args={"task": "s9"}), "steps[0]"),
    "args not an object": (lambda t: t["steps"][0].update(args=["s1"]), "steps[0].args"),
    "result not a result": (lambda t: t["steps"][0].update(sut=5), "steps[0].sut"),
    "unknown step field": (lambda t: t["steps"][1].update(note="x"), "steps[1].note"),
    "unknown failure kind": (lambda t: t["failure"].update(kind="bad luck"), "failure.kind"),
    "detail not a string": (lambda t: t["failure"].update(detail=None), "failure.detail"),
    "view not an object": (lambda t: t["failure"].update(sut_view=[1]), "failure.sut_view"),
    "no failure": (lambda t: t.pop("failure"), "failure"),
    "level": (lambda t: t.update(level=4), "level"),
    "level true": (lambda t: t.update(level=True), "level"),
    "level 2.0": (lambda t: t.update(level=2.0), "level"),
    "sut empty": (lambda t: t.update(sut=""), "sut"),
    "sut blank": (lambda t: t.update(sut="  "), "sut"),
    "sut a number": (lambda t: t.update(sut=5), "sut"),
    "no sut": (lambda t: t.pop("sut"), "sut"),
    "seed abc": (lambda t: t.update(seed="abc"), "seed"),
    "seed true": (lambda t: t.update(seed=True), "seed"),
    "seed 1.5": (lambda t: t.update(seed=1.5), "seed"),
    "unknown field": (lambda t: t.update(sedd=7), "sedd"),
    "at not a string": (lambda t: t["failure"].update(at=5), "failure.at"),
    "masks not a list": (lambda t: t.update(masks={"op": "commit"}), "masks"),
    "mask not an object": (lambda t: t.update(masks=["commit"]), "masks[0]"),
    "mask without at": (lambda t: t.update(masks=[{"op": "commit"}]), "masks[0].at"),
    "mask of no op": (lambda t: t.update(masks=[{"op": "no_op", "at": "result"}]), "masks[0].op"),
    "mask field": (lambda t: t.update(masks=[{"op": "commit", "at": "result", "x": 1}]),
                   "masks[0].x"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_trace_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, name: str
) -> None:
    mutate, field = MALFORMED[name]
    obj = _trace().to_json()
    mutate(obj)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(TraceFormatError, match=r"bad\.json") as raised:
        read_trace(path)
    assert raised.value.field == field
    assert f"field {field!r}" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_trace_nested_too_deep_is_refused_never_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    obj = _trace().to_json()
    path.write_text(json.dumps(obj)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(TraceFormatError, match=r"deep\.json: is not JSON .*nested deeper"):
        read_trace(path)
    obj["failure"]["sut_view"] = {"deep": _nested(MAX_TRACE_DEPTH - 3)}  # a depth a run can write
    path.write_text(json.dumps(obj))
    assert read_trace(path).failure.sut_view == obj["failure"]["sut_view"]
    obj["failure"]["sut_view"] = {"deep": _nested(MAX_TRACE_DEPTH - 2)}
    path.write_text(json.dumps(obj))
    with pytest.raises(TraceFormatError, match=f"nested deeper than {MAX_TRACE_DEPTH}"):
        read_trace(path)


def test_an_unreadable_trace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"missing\.json: cannot be read"):
        read_trace(tmp_path / "missing.json")
    (tmp_path / "garbage.json").write_text("{")
    with pytest.raises(TraceFormatError, match=r"garbage\.json: is not JSON"):
        read_trace(tmp_path / "garbage.json")
    (tmp_path / "latin1.json").write_bytes(b'{"sut": "\xe9"}')
    with pytest.raises(TraceFormatError, match=r"latin1\.json: cannot be read"):
        read_trace(tmp_path / "latin1.json")


def test_the_table_shows_every_step_the_failure_and_where_the_views_differ() -> None:
    text = format_trace(_trace())
    lines = text.splitlines()
    assert lines[0].split() == ["#", "operation", "reference", "implementation"]
    assert lines[1].split() == ["1", "register(task='s1')", "true", "true"]
    assert "null (+1 heartbeats)" in lines[2] and lines[2].endswith("error StoreFault")
    assert "failed at step 2 (result:" in text
    assert "paused_count: reference 0, implementation 1" in text
    assert "ids: 1 elements in the reference, 2 in the implementation; only the implementation" \
        " has [1] = [16,2]" in text
    assert "role" not in text.split("differ at:")[1]


class _Failing(ReferenceAdapter):
    """Fails the protocol on its n-th call, as a SubprocessAdapter does."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.calls = 0

    def call(self, op: Op) -> dict[str, object]:
        self.calls += 1
        if self.calls == self.fail_at:
            raise SutError("impl", repr(op), "no response within 1 s")
        return super().call(op)


def test_the_recording_adapter_records_since_start_and_aborts_on_sut_error() -> None:
    recording = RecordingAdapter(_Failing(fail_at=3))
    recording.start(2)
    recording.call(PAUSED_TWICE[0])
    recording.start(2)
    recording.call(PAUSED_TWICE[0])
    assert recording.ops == [PAUSED_TWICE[0]]
    with pytest.raises(SutAborted) as aborted:
        recording.call(PAUSED_TWICE[1])
    assert not isinstance(aborted.value, Exception)  # Hypothesis must not shrink it
    assert recording.aborted is aborted.value.error
    assert recording.ops == list(PAUSED_TWICE[:2])


def test_replay_passes_when_both_sides_agree() -> None:
    assert replay(PAUSED_TWICE, level=2, sut=ReferenceAdapter(), sut_command="ref") is None


def test_replay_checks_an_in_process_variant_against_the_durable_model() -> None:
    """The failure a run found on a variant's store must be found again by replay (and so by
    minimize), through the wrapper replay puts around the implementation."""
    sut = ReferenceAdapter("register_without_commit", check_invariants=False)
    trace = replay([Op.of("register", task="s1")], level=3, sut=sut, sut_command="variant")
    assert trace is not None
    assert trace.failure.kind == "durable"
    assert "expected but not committed ['0x10-0x1']" in trace.failure.detail


def test_replay_stops_at_the_first_divergence() -> None:
    sut = ReferenceAdapter("paused_count_self_pause", check_invariants=False)
    trace = replay((*PAUSED_TWICE, Op.of("commit")), level=2, sut=sut, sut_command="variant")
    assert trace is not None
    assert trace.ops == PAUSED_TWICE
    assert trace.failure.kind == "invariant"
    assert "paused-count" in trace.failure.detail
    assert trace.failure.reference_view is not None and trace.failure.sut_view is not None
    assert trace.failure.reference_view["paused_count"] == 1
    assert trace.failure.sut_view["paused_count"] == 2
    assert trace.steps[-1].reference == trace.steps[-1].sut == {"ok": "applied"}


def test_replay_reports_a_broken_implementation_with_the_op_it_failed_on() -> None:
    trace = replay(PAUSED_TWICE, level=2, sut=_Failing(fail_at=2), sut_command="impl")
    assert trace is not None
    assert trace.failure.kind == "sut"
    assert "no response within 1 s" in trace.failure.detail
    assert trace.ops == PAUSED_TWICE[:2]
    assert trace.steps[0].sut == {"ok": True}
    assert trace.steps[-1] == TraceStep(PAUSED_TWICE[1], None, None)


def test_replay_over_the_protocol(tmp_path: Path) -> None:
    command = f"{sys.executable} -m statemeta.serve --variant paused_count_self_pause"
    with SubprocessAdapter(command) as sut:
        trace = replay(PAUSED_TWICE, level=2, sut=sut, sut_command=command)
    assert trace is not None and trace.ops == PAUSED_TWICE


def test_a_trace_names_its_semantics(tmp_path: Path) -> None:
    trace = replay(
        [Op.of("handle", task="s1", event="init")],
        level=1,
        sut=ReferenceAdapter(semantics="seed"),
        sut_command="seed",
    )
    assert trace is not None and trace.semantics is Semantics.INTENDED
    assert "intended semantics" in format_trace(trace)
    again = Trace.from_json(trace.to_json())
    assert again == trace
    old = trace.to_json()
    del old["semantics"]  # a trace written before the semantics existed
    assert Trace.from_json(old).semantics is Semantics.INTENDED
    with pytest.raises(TraceFormatError, match="field 'semantics': expected one of"):
        Trace.from_json({**old, "semantics": "tdengine"}, where="t.json")
