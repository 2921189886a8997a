"""Differences a person can read: paths, first differing list elements, heartbeats by field."""

from __future__ import annotations

from typing import Any

import attrs

from statemeta.codec import HbMsg, TaskStatusEntry, decode_hb, encode_hb
from statemeta.harness.differences import differences, first_difference
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import format_trace, replay


def test_each_path_is_named() -> None:
    reference = {"a": 1, "tasks": [{"status": "pause"}, {"status": "ready"}], "only_ref": 1}
    sut = {"a": 1, "tasks": [{"status": "pause"}, {"status": "stop"}], "only_sut": 2}
    assert list(differences(reference, sut)) == [
        "only_ref: only the reference has it (1)",
        "only_sut: only the implementation has it (2)",
        'tasks[1].status: reference "ready", implementation "stop"',
    ]
    assert list(differences(reference, reference)) == []
    assert first_difference(reference, reference) is None


def test_lists_of_different_lengths_show_the_first_differing_element() -> None:
    report = {"loaded": [[16, 1], [16, 2], [16, 256]]}
    assert list(differences(report, {"loaded": [[16, 1], [16, 256]]})) == [
        "loaded[1][1]: reference 2, implementation 256"
    ]
    assert list(differences(report, {"loaded": [[16, 1], [16, 2]]})) == [
        "loaded: 3 elements in the reference, 2 in the implementation; only the reference has"
        " [2] = [16,256]"
    ]


ENTRY = TaskStatusEntry(stream_id=16, task_id=1, status=7, active_checkpoint_id=2)
MSG = HbMsg(vg_id=7, entries=(ENTRY, attrs.evolve(ENTRY, task_id=2)), update_nodes=(1,))


def test_heartbeats_are_compared_field_by_field() -> None:
    failed = attrs.evolve(ENTRY, task_id=2, checkpoint_failed=1)
    changed = attrs.evolve(MSG, entries=(ENTRY, failed))
    reference = {"ok": None, "heartbeats": [encode_hb(MSG).hex()]}
    sut = {"ok": None, "heartbeats": [encode_hb(changed).hex()]}
    assert list(differences(reference, sut, "result")) == [
        "result.heartbeats[0].entries[1].checkpoint_failed: reference 0, implementation 1"
    ]


def test_an_undecodable_heartbeat_is_shown_as_it_is() -> None:
    reference = {"heartbeats": [encode_hb(MSG).hex()]}
    (line,) = differences(reference, {"heartbeats": ["00ff"]})
    assert line.startswith("heartbeats[0]: reference \"") and line.endswith('implementation "00ff"')


class _WrongCheckpointFlag(ReferenceAdapter):
    """The reference, but every heartbeat it sends reports its checkpoints as failed."""

    def call(self, op: Op) -> dict[str, Any]:
        result = super().call(op)
        if "heartbeats" in result:
            result["heartbeats"] = [_flag_failed(h) for h in result["heartbeats"]]
        return result


def _flag_failed(payload: str) -> str:
    msg = decode_hb(bytes.fromhex(payload))
    entries = tuple(attrs.evolve(e, checkpoint_failed=1) for e in msg.entries)
    return encode_hb(attrs.evolve(msg, entries=entries)).hex()


def test_a_heartbeat_divergence_is_reported_by_field() -> None:
    ops = [
        Op.of("register", task="s1"),
        Op.of("update_stage_role", stage=1, is_leader=True),
        Op.of("advance_clock", ms=5000),
    ]
    trace = replay(ops, level=2, sut=_WrongCheckpointFlag(), sut_command="wrong-flag")
    assert trace is not None and trace.failure.kind == "result"
    assert "at result.heartbeats[0].entries[0].checkpoint_failed: reference 0, implementation 1" \
        in trace.failure.detail
    assert "checkpoint_failed" in format_trace(trace)
