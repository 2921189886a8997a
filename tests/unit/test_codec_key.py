"""The 16-byte task.db key and the task id, checked against reference §3.2 by hand."""

from __future__ import annotations

import pytest

from statemeta.codec import TaskId, decode_task_key, encode_task_key
from statemeta.errors import DecodeError, InvalidRecordError, KeyLengthError


def test_key_is_stream_id_then_task_id_widened_little_endian() -> None:
    key = encode_task_key(0x0102030405060708, 0x0A0B0C0D)
    assert key.hex() == "0807060504030201" + "0d0c0b0a00000000"
    assert decode_task_key(key) == (0x0102030405060708, 0x0A0B0C0D)


def test_negative_ids_are_twos_complement_and_sign_extended() -> None:
    key = encode_task_key(-1, -2)
    assert key.hex() == "ffffffffffffffff" + "feffffffffffffff"
    assert decode_task_key(key) == (-1, -2)


@pytest.mark.parametrize("length", [0, 15, 17, 24])
def test_a_key_of_the_wrong_length_is_refused(length: int) -> None:
    with pytest.raises(KeyLengthError) as e:
        decode_task_key(bytes(length))
    assert (e.value.table, e.value.expected, e.value.got) == ("task.db", 16, length)


def test_a_task_id_half_that_is_not_a_sign_extended_int32_is_corrupt() -> None:
    with pytest.raises(DecodeError) as e:
        decode_task_key(bytes(8) + (2**31).to_bytes(8, "little"))
    assert (e.value.field, e.value.offset) == ("task_id", 8)


@pytest.mark.parametrize(("stream_id", "task_id"), [(2**63, 0), (0, 2**31), (0, -(2**31) - 1)])
def test_ids_out_of_range_are_refused(stream_id: int, task_id: int) -> None:
    with pytest.raises(InvalidRecordError):
        encode_task_key(stream_id, task_id)


def test_task_id_str_is_tdengines_id_str() -> None:
    assert str(TaskId(0x1A, 0x2B)) == "0x1a-0x2b"
    assert str(TaskId(-1, -1)) == "0xffffffffffffffff-0xffffffff"


def test_task_id_is_a_hashable_value() -> None:
    assert {TaskId(1, 2): "x"}[TaskId(1, 2)] == "x"
    with pytest.raises(AttributeError):
        TaskId(1, 2).task_id = 3  # type: ignore[misc]
