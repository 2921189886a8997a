"""The operation alphabet: one spec per op, finite domains, ops that round-trip through JSON."""

from __future__ import annotations

import contextlib

import pytest

from statemeta.codec import encode_task_key
from statemeta.errors import MisuseError
from statemeta.harness.operations import (
    DOMAINS,
    LEVELS,
    OP_SPECS,
    TASK_POOL,
    Op,
    ops_at,
    slot_of,
)
from statemeta.lifecycle import TaskEvent


def test_every_param_kind_has_a_finite_domain() -> None:
    for spec in OP_SPECS.values():
        assert spec.level in LEVELS
        for p in spec.params:
            assert p.domain == DOMAINS[p.kind] and p.domain


def test_event_domain_is_the_spec_enum() -> None:
    assert DOMAINS["event"] == tuple(e.name.lower() for e in TaskEvent)
    assert DOMAINS["two_phase_event"] == ("init", "init_scanhist")


def test_levels_partition_the_ops() -> None:
    level1 = {s.name for s in ops_at(1)}
    level2 = {s.name for s in ops_at(2)}
    level3 = {s.name for s in ops_at(3)}
    assert level1 == {"handle", "complete", "restore", "reset", "set_ready"}
    assert level2 < level3 and not level1 & level3
    assert level3 - level2 == {"close_reopen", "crash_reopen", "corrupt_record", "fail_next"}
    with pytest.raises(MisuseError):
        ops_at(4)


def test_pool_key_byte_order_differs_from_numeric_order() -> None:
    stream_a = sorted((s.id for s in TASK_POOL if s.id.stream_id == 0x10), key=lambda t: t.task_id)
    by_key = sorted(stream_a, key=lambda t: encode_task_key(t.stream_id, t.task_id))
    assert by_key != stream_a
    f1, h1 = slot_of("f1").record, slot_of("h1").record
    assert f1.h_task_id == h1.id and h1.stream_task_id == f1.id and h1.fill_history == 1
    assert any(s.record.trigger_param for s in TASK_POOL)


def test_op_round_trips_through_json_and_reads_like_a_call() -> None:
    op = Op.of("handle_event", task="s1", event="pause")
    assert repr(op) == "handle_event(event='pause', task='s1')"
    assert op.to_json() == {"op": "handle_event", "args": {"event": "pause", "task": "s1"}}
    assert Op.from_json(op.to_json()) == op
    assert op.arg("task") == "s1"
    assert hash(op) == hash(Op.of("handle_event", event="pause", task="s1"))


@pytest.mark.parametrize(
    "obj",
    [
        {"op": "no_such_op", "args": {}},
        {"op": "register", "args": {}},
        {"op": "register", "args": {"task": "s9"}},
        {"op": "register", "args": {"task": "s1", "extra": 1}},
        {"op": "advance_clock", "args": {"ms": True}},
        {"op": "commit", "args": {}, "id": 3},
        ["commit"],
    ],
)
def test_from_json_refuses_what_does_not_fit(obj: object) -> None:
    with pytest.raises(MisuseError):
        Op.from_json(obj)


def test_unknown_slot_is_a_misuse() -> None:
    with pytest.raises(MisuseError, match="s9"):
        slot_of("s9")


def test_reopens_marks_exactly_the_operations_that_open_the_meta_again() -> None:
    """The column is read off the reference, not listed: an operation reopens when the meta
    after it is another object than before (and then the durable model checks the store)."""
    from statemeta.harness.operations import REOPENS, Op, ops_at
    from statemeta.harness.reference import ReferenceAdapter

    for spec in ops_at(3):
        reference = ReferenceAdapter()
        reference.start(3)
        reference.call(Op.of("register", task="s1"))
        before = reference.meta
        args = {p.name: DOMAINS[p.kind][0] for p in spec.params}
        if "task" in args:
            args["task"] = "s1"
        with contextlib.suppress(MisuseError):  # a precondition: it did not run
            reference.call(Op.of(spec.name, **args))
        assert (reference.meta is not before) is (spec.name in REOPENS), spec.name
        reference.stop()
