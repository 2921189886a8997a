"""The durable model (statemeta/harness/machine.py ``DurableModel``): what must be committed,
followed from the operations' results."""

from __future__ import annotations

from statemeta.harness.machine import DurableModel
from statemeta.harness.operations import TASK_POOL, Op

_SLOTS = {s.name: s for s in TASK_POOL}


def test_a_stream_task_and_its_fill_history_task_removed_in_one_step() -> None:
    """Both deferred removals ending at one timer (found by a 300-example check): the model
    removed the stream task first, then looked its record up to clear the link: KeyError."""
    stream, history = _SLOTS["f1"], _SLOTS["h1"]
    assert history.record.fill_history and history.record.stream_task_id == stream.id
    model = DurableModel(committed={stream.id: stream.record, history.id: history.record})
    before = {"tasks": [{"id": [s.id.stream_id, s.id.task_id]} for s in (stream, history)]}
    model.step(Op.of("advance_clock", ms=100), {"ok": None}, before, {"ids": [], "tasks": []})
    assert model.committed == {} and model.removed == {stream.id, history.id}


def test_a_torn_record_is_expected_undecodable_until_a_register_replaces_it() -> None:
    s1 = _SLOTS["s1"]
    model = DurableModel(committed={s1.id: s1.record})
    mapped = {"tasks": [{"id": [s1.id.stream_id, s1.id.task_id]}]}
    torn_report = {"loaded": [], "removed": [], "duplicates": [], "undecodable": ["00"],
                   "cleared": []}
    model.step(Op.of("corrupt_record", task="s1"), {"ok": torn_report}, mapped, {"ids": []})
    assert model.stored() == {s1.id: None}
    after = mapped | {"ids": [[s1.id.stream_id, s1.id.task_id]]}
    model.step(Op.of("register", task="s1"), {"ok": True}, {"tasks": []}, after)
    assert model.torn == set() and model.stored()[s1.id] is not None
