"""The task value at version 2: hand-checked against reference §3.4-3.5, and its errors."""

from __future__ import annotations

import struct

import pytest

from statemeta.codec import (
    NO_RELATED_TASK,
    FetchOutput,
    FixedDispatch,
    OutputType,
    StreamTask,
    TaskId,
    TaskLevel,
    decode_checkpoint_info,
    decode_task,
    decode_task_id,
    encode_task,
)
from statemeta.errors import DecodeError, IncompatibleVersionError, InvalidRecordError

EMPTY_EP_SET = "00" + "00" + ("0000" + "8101" + "00" * 129) * 5


def le(value: int, size: int) -> str:
    return value.to_bytes(size, "little", signed=True).hex()


def test_a_fetch_sink_task_byte_for_byte() -> None:
    task = StreamTask(
        stream_id=0x11,
        task_id=0x22,
        total_level=3,
        task_level=TaskLevel.SINK,
        output=FetchOutput(reserved=7),
        checkpoint_id=0x33,
        checkpoint_ver=0x44,
        fill_history=1,
        stream_task_id=TaskId(0x11, 0x21),
        trigger_param=-1,
    )
    body = (
        le(2, 8)  # ver
        + le(0x11, 8)  # streamId
        + le(0x22, 4)  # taskId
        + le(3, 4)  # totalLevel
        + "03"  # taskLevel SINK
        + "05"  # output type FETCH
        + "0000"  # msgType
        + "00"  # taskStatus
        + "01"  # schedStatus INACTIVE
        + le(0, 4)
        + le(0, 4)  # selfChildId, nodeId
        + EMPTY_EP_SET
        + EMPTY_EP_SET  # epSet, mnodeEpset
        + le(0x33, 8)
        + le(0x44, 8)  # checkpointId, checkpointVer
        + "01"  # fillHistory
        + le(0, 8)
        + le(0, 4)  # hTaskInfo.id
        + le(0x11, 8)
        + le(0x21, 4)  # streamTaskId
        + le(0, 8) * 4  # minVer, maxVer, skey, ekey
        + le(0, 4)  # upstream count; a sink has no qmsg
        + "07"  # FETCH: I8 reserved
        + le(-1, 8)  # triggerParam
        + "8002"
        + "00" * 256  # CStrWithLen(reserve, 255)
    )
    expected = le(len(body) // 2, 4) + body
    assert encode_task(task).hex() == expected
    assert len(expected) // 2 == 1449 + 4 + 1 + 8 + 258
    assert decode_task(bytes.fromhex(expected)) == task


def test_non_sink_tasks_carry_the_exec_message_after_upstream() -> None:
    value = encode_task(StreamTask(stream_id=1, task_id=2, qmsg="plan"))
    assert value[1453:1459] == b"\x05plan\x00"


def test_a_sink_task_has_no_exec_message() -> None:
    with pytest.raises(InvalidRecordError, match="sink"):
        StreamTask(stream_id=1, task_id=2, task_level=TaskLevel.SINK, qmsg="plan")


def test_defaults_make_a_source_task_with_a_fixed_dispatch() -> None:
    task = StreamTask(stream_id=1, task_id=2)
    assert task.task_level == TaskLevel.SOURCE
    assert task.output_type == OutputType.FIXED_DISPATCH == task.output.output_type
    assert isinstance(task.output, FixedDispatch)
    assert task.h_task_id == NO_RELATED_TASK == TaskId(0, 0)
    assert task.id == TaskId(1, 2)
    assert decode_task(encode_task(task)) == task


def _with_version(value: bytes, ver: int) -> bytes:
    return value[:4] + struct.pack("<q", ver) + value[12:]


@pytest.mark.parametrize("ver", [1, 3, -1])
def test_a_version_other_than_2_is_incompatible(ver: int) -> None:
    value = _with_version(encode_task(StreamTask(stream_id=1, task_id=2)), ver)
    with pytest.raises(IncompatibleVersionError) as e:
        decode_task(value)
    assert e.value.version == ver
    with pytest.raises(IncompatibleVersionError):
        decode_task_id(value)
    assert decode_checkpoint_info(value) == (ver, 0, 0)


def test_prefix_decoders_read_offsets_1376_and_1384() -> None:
    task = StreamTask(stream_id=5, task_id=6, checkpoint_id=-7, checkpoint_ver=2**63 - 1)
    value = encode_task(task)
    assert value[1376:1392].hex() == le(-7, 8) + le(2**63 - 1, 8)
    assert decode_checkpoint_info(value) == (2, -7, 2**63 - 1)
    assert decode_task_id(value) == TaskId(5, 6)


def _rebody(value: bytes, body: bytes) -> bytes:
    return struct.pack("<i", len(body)) + body


def test_truncated_body_names_the_field_and_offset() -> None:
    value = encode_task(StreamTask(stream_id=1, task_id=2))
    cut = _rebody(value, value[4:1380])
    with pytest.raises(DecodeError) as e:
        decode_task(cut)
    assert (e.value.field, e.value.offset) == ("checkpoint_id", 1376)


def test_unread_bytes_inside_the_block_are_skipped_but_trailing_bytes_are_not() -> None:
    task = StreamTask(stream_id=1, task_id=2)
    value = encode_task(task)
    assert decode_task(_rebody(value, value[4:] + b"later")) == task
    with pytest.raises(DecodeError, match="trailing") as e:
        decode_task(value + b"\0")
    assert e.value.offset == len(value)


@pytest.mark.parametrize(
    ("offset", "patch", "field"),
    [
        (29, b"\x09", "output"),  # output type 9
        (28, b"\x07", ""),  # task level 7
        (1392, b"\x02", ""),  # fillHistory 2
        (1449, struct.pack("<i", -1), "upstream"),
        (1449, struct.pack("<i", 2**31 - 1), "upstream"),
        (1453, b"\xff\xff\xff\xff\x0f", "qmsg"),  # qmsg length 2**32 - 1
    ],
)
def test_corrupt_fields_raise_decode_error(offset: int, patch: bytes, field: str) -> None:
    value = bytearray(encode_task(StreamTask(stream_id=1, task_id=2, qmsg="x")))
    value[offset : offset + len(patch)] = patch
    with pytest.raises(DecodeError) as e:
        decode_task(bytes(value))
    assert e.value.field == field


def test_prefix_decoders_reject_a_block_too_short_or_past_the_end() -> None:
    value = encode_task(StreamTask(stream_id=1, task_id=2))
    with pytest.raises(DecodeError, match="block length"):
        decode_checkpoint_info(value[:-1])
    with pytest.raises(DecodeError, match="checkpoint_id"):
        decode_checkpoint_info(_rebody(value, value[4:1380]))
