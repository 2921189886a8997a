"""Round-trip and size properties of every codec layout."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from statemeta.codec import (
    CHECKPOINT_ID_OFFSET,
    EP_INFO_SIZE,
    EP_SET_SIZE,
    UPSTREAM_COUNT_OFFSET,
    EpInfo,
    EpSet,
    HbMsg,
    StreamTask,
    decode_checkpoint_info,
    decode_hb,
    decode_task,
    decode_task_id,
    decode_task_key,
    encode_hb,
    encode_task,
    encode_task_key,
    hb_size,
)
from statemeta.codec.epset import EP_INFO, EP_SET
from statemeta.codec.primitives import CStr, Leb128, parse_checked
from tests.properties.codec_strategies import (
    c_strings,
    ep_infos,
    ep_sets,
    hb_msgs,
    i32,
    i64,
    ints,
    stream_tasks,
)


@given(i64, i32)
def test_task_key_round_trips_and_is_16_bytes(stream_id: int, task_id: int) -> None:
    key = encode_task_key(stream_id, task_id)
    assert len(key) == 16
    assert key == struct.pack("<qq", stream_id, task_id)
    assert decode_task_key(key) == (stream_id, task_id)


@given(ep_sets)
def test_ep_set_round_trips_in_667_bytes(ep_set: EpSet) -> None:
    data = EP_SET.build(ep_set)
    assert len(data) == EP_SET_SIZE == 667
    assert parse_checked(EP_SET, data) == ep_set


@given(ep_infos)
def test_ep_info_round_trips_in_687_bytes(info: EpInfo) -> None:
    data = EP_INFO.build(info)
    assert len(data) == EP_INFO_SIZE == 687
    assert parse_checked(EP_INFO, data) == info


@given(stream_tasks)
def test_task_value_round_trips(task: StreamTask) -> None:
    value = encode_task(task)
    assert decode_task(value) == task
    assert int.from_bytes(value[:4], "little", signed=True) == len(value) - 4


@given(stream_tasks)
def test_task_value_prefix_offsets_match_the_reference(task: StreamTask) -> None:
    value = encode_task(task)
    assert CHECKPOINT_ID_OFFSET == 1376 and UPSTREAM_COUNT_OFFSET == 1449
    assert struct.unpack_from("<qq", value, 1376) == (task.checkpoint_id, task.checkpoint_ver)
    assert struct.unpack_from("<i", value, 1449) == (len(task.upstream),)
    assert decode_checkpoint_info(value) == (2, task.checkpoint_id, task.checkpoint_ver)
    assert decode_task_id(value) == task.id


@given(hb_msgs)
def test_heartbeat_round_trips_in_16_97n_4m_bytes(msg: HbMsg) -> None:
    data = encode_hb(msg)
    assert len(data) == hb_size(len(msg.entries), len(msg.update_nodes))
    assert len(data) == 16 + 97 * len(msg.entries) + 4 * len(msg.update_nodes)
    assert decode_hb(data) == msg


@given(
    st.sampled_from(
        [(16, False), (32, False), (64, False), (16, True), (32, True), (64, True)]
    ).flatmap(lambda w: st.tuples(st.just(w), ints(w[0], signed=w[1])))
)
def test_varints_round_trip_minimally(case: tuple[tuple[int, bool], int]) -> None:
    (bits, signed), value = case
    layout = Leb128(bits, signed=signed)
    data = layout.build(value)
    assert len(data) <= (bits + 6) // 7
    assert data[-1] != 0 or len(data) == 1
    assert parse_checked(layout, data) == value


@given(c_strings)
def test_c_strings_round_trip_with_the_nul_counted(text: str) -> None:
    data = CStr.build(text)
    assert data.endswith(b"\0")
    assert parse_checked(CStr, data) == text
