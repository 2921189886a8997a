"""Traces: the JSON format, the table, recording a run and replaying through the machine."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from statemeta.errors import MisuseError, SutAborted, SutError
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import (
    Failure,
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


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t.update(format=2),
        lambda t: t.pop("steps"),
        lambda t: t["steps"][0].update(op="no_such_op"),
        lambda t: t["steps"][0].update(args={"task": "s9"}),
        lambda t: t["failure"].update(kind="bad luck"),
        lambda t: t.update(level=4),
    ],
    ids=["format", "no steps", "unknown op", "bad argument", "unknown failure kind", "level"],
)
def test_a_malformed_trace_is_refused_naming_the_file(tmp_path: Path, mutate: object) -> None:
    obj = _trace().to_json()
    mutate(obj)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(MisuseError, match=r"bad\.json"):
        read_trace(path)


def test_an_unreadable_trace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MisuseError, match="cannot read trace"):
        read_trace(tmp_path / "missing.json")
    (tmp_path / "garbage.json").write_text("{")
    with pytest.raises(MisuseError, match="cannot read trace"):
        read_trace(tmp_path / "garbage.json")


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
    with pytest.raises(MisuseError, match="no semantics 'tdengine'"):
        Trace.from_json({**old, "semantics": "tdengine"}, where="t.json")
