"""Codec records take any iterable where they hold a tuple (issue 20, item 8)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import pytest

import statemeta.codec
from statemeta.codec import (
    Ep,
    EpInfo,
    EpSet,
    HbMsg,
    Schema,
    SchemaWrapper,
    StreamTask,
    TaskStatusEntry,
    UseDbRsp,
    VgroupInfo,
    decode_hb,
    decode_task,
    encode_hb,
    encode_task,
)
from statemeta.codec.fields import to_tuple
from statemeta.errors import InvalidRecordError

_ENTRY = TaskStatusEntry(stream_id=0x51, task_id=7, input_rate=2.5)
_EP_SET = EpSet(in_use=0, eps=(Ep("dnode-1.local", 6030),))

TUPLE_FIELDS: list[tuple[type, str, tuple[Any, ...], dict[str, Any]]] = [
    (HbMsg, "entries", (_ENTRY, attrs.evolve(_ENTRY, task_id=8)), {}),
    (HbMsg, "update_nodes", (3, -4), {}),
    (EpSet, "eps", (Ep("a.local", 1), Ep("b.local", 2)), {}),
    (UseDbRsp, "vgroups", (VgroupInfo(vg_id=2), VgroupInfo(vg_id=3)), {}),
    (SchemaWrapper, "columns", (Schema(name="ts"), Schema(name="v", col_id=2)), {}),
    (
        StreamTask,
        "upstream",
        (EpInfo(task_id=1, ep_set=_EP_SET), EpInfo(task_id=2, child_id=1)),
        {"stream_id": 0x51, "task_id": 9},
    ),
]
"""Every tuple field of a codec record: (record, field, items, the record's other arguments)."""

FORMS: dict[str, Callable[[tuple[Any, ...]], Iterable[Any]]] = {
    "list": list,
    "generator": lambda items: (item for item in items),
    "dict keys": lambda items: dict.fromkeys(items).keys(),
    "map": lambda items: map(lambda item: item, items),
}


def _codec_records() -> list[type]:
    return [
        value
        for _, value in inspect.getmembers(statemeta.codec, inspect.isclass)
        if attrs.has(value)
    ]


def test_every_tuple_field_of_a_codec_record_is_listed_and_converts() -> None:
    tuple_fields = {
        (record, a.name)
        for record in _codec_records()
        for a in attrs.fields(record)
        if str(a.type).startswith("tuple[") and a.init
    }
    assert tuple_fields == {(record, name) for record, name, _, _ in TUPLE_FIELDS}
    for record, name in tuple_fields:
        assert attrs.fields_dict(record)[name].converter is to_tuple, (record, name)


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize(
    ("record", "name", "items", "others"),
    TUPLE_FIELDS,
    ids=[f"{r.__name__}.{n}" for r, n, _, _ in TUPLE_FIELDS],
)
def test_any_iterable_makes_the_same_record_as_a_tuple(
    record: type, name: str, items: tuple[Any, ...], others: dict[str, Any], form: str
) -> None:
    from_tuple = record(**others, **{name: items})
    from_form = record(**others, **{name: FORMS[form](items)})
    assert from_form == from_tuple
    assert hash(from_form) == hash(from_tuple)
    assert type(getattr(from_form, name)) is tuple
    assert attrs.evolve(from_tuple, **{name: list(items)}) == from_tuple


def test_records_built_from_lists_encode_and_decode_as_from_tuples() -> None:
    message = HbMsg(vg_id=2, entries=[_ENTRY], update_nodes=[5])
    assert decode_hb(encode_hb(message)) == message
    task = StreamTask(stream_id=0x51, task_id=9, upstream=[EpInfo(task_id=1, ep_set=_EP_SET)])
    assert decode_task(encode_task(task)) == task


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: HbMsg(entries=5), "HbMsg.entries = 5"),
        (lambda: HbMsg(entries=[_ENTRY, "x"]), "HbMsg.entries"),
        (lambda: HbMsg(update_nodes="12"), "HbMsg.update_nodes = '12'"),
        (lambda: HbMsg(update_nodes=b"\x01"), "HbMsg.update_nodes = b'\\x01'"),
        (lambda: HbMsg(update_nodes=[2**40]), "HbMsg.update_nodes"),
        (lambda: EpSet(eps=[Ep()] * 6), "EpSet.eps"),
    ],
)
def test_what_is_not_an_iterable_of_the_items_is_refused_by_name(
    make: Callable[[], object], field: str
) -> None:
    with pytest.raises(InvalidRecordError, match="^" + re.escape(field)):
        make()
