"""The task id and the 16-byte task.db key (streamMetaSaveTask at the seed).

The key is a raw C array ``int64[2]`` in host (little-endian) order: streamId, then the int32
taskId sign-extended to int64. It is not an encoder stream, so it has no header.
"""

from __future__ import annotations

import attrs
import construct as c

from statemeta.codec.fields import required_int
from statemeta.codec.primitives import (
    I32,
    I64,
    FixedRun,
    Record,
    compiled_builder,
    parse_checked,
)
from statemeta.errors import DecodeError, KeyLengthError

STREAM_TASK_KEY_LEN = 16
TASK_TABLE = "task.db"


@attrs.frozen(cache_hash=True)
class TaskId:
    """STaskId: a task's identity, the meta's map key; str() is TDengine's idStr."""

    stream_id: int = required_int(64)
    task_id: int = required_int(32)

    def __str__(self) -> str:
        return f"0x{self.stream_id & (2**64 - 1):x}-0x{self.task_id & (2**32 - 1):x}"


NO_RELATED_TASK = TaskId(0, 0)
"""hTaskInfo.id when a stream task has no fill-history task (HAS_RELATED_FILLHISTORY_TASK)."""

TASK_ID = Record(TaskId, c.Struct(FixedRun("stream_id" / I64, "task_id" / I32)))
"""A task id inside encoder streams: I64 streamId, I32 taskId (narrowed from int64)."""

TASK_KEY = c.Struct("stream_id" / I64, "task_id" / I64)


def encode_task_key(stream_id: int, task_id: int) -> bytes:
    """The task.db key of a task (raises InvalidRecordError for ids out of range)."""
    task = TaskId(stream_id, task_id)
    key: bytes = compiled_builder(TASK_KEY).build(
        {"stream_id": task.stream_id, "task_id": task.task_id}
    )
    return key


def decode_task_key(b: bytes) -> tuple[int, int]:
    """(stream_id, task_id) of a task.db key.

    Raises KeyLengthError for a key that is not 16 bytes, DecodeError for a taskId half that
    is not an int32 sign-extended (TDengine never writes one).
    """
    if len(b) != STREAM_TASK_KEY_LEN:
        raise KeyLengthError(TASK_TABLE, STREAM_TASK_KEY_LEN, len(b))
    key = parse_checked(TASK_KEY, b)
    if not -(2**31) <= key.task_id < 2**31:
        raise DecodeError(
            f"taskId {key.task_id} of key {bytes(b).hex()} is not a sign-extended int32",
            field="task_id",
            offset=8,
        )
    return key.stream_id, key.task_id
