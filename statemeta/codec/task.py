"""The task record and its task.db value at version 2 (tEncodeStreamTask at the seed).

The value is one tStartEncode block; its body is ``TASK_BODY`` field by field (spec/layouts.md
has the offset table). ``encode_task`` always writes ver = SSTREAM_TASK_VER (as
streamMetaSaveTask does); ``decode_task`` accepts exactly that version.

A sink task has no exec message on the wire; its record carries ``qmsg == ""`` and building a
sink record with another qmsg is refused, so that decode(encode(task)) == task.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

import attrs
import construct as c

from statemeta.codec.epset import EP_INFO, EP_SET, EpInfo, EpSet
from statemeta.codec.fields import (
    c_string,
    instance_of,
    int_field,
    one_of,
    required_int,
    to_tuple,
    tuple_of,
)
from statemeta.codec.key import NO_RELATED_TASK, TASK_ID, TaskId, decode_task_key
from statemeta.codec.output import OUTPUT_LAYOUTS, OUTPUT_RECORDS, FixedDispatch, Output
from statemeta.codec.primitives import (
    I8,
    I16,
    I32,
    I64,
    U64,
    Adapter,
    Block,
    Counted,
    CStr,
    CStrWithLen,
    FixedRun,
    Record,
    Reject,
    compiled_builder,
    parse_checked,
    read_past_end,
)
from statemeta.errors import DecodeError, IncompatibleVersionError, InvalidRecordError

SSTREAM_TASK_VER = 2
SSTREAM_TASK_INCOMPATIBLE_VER = 1
TASK_RESERVE_LEN = 256
"""CStrWithLen(reserve, 255) writes 255 + 1 bytes."""


class TaskLevel(enum.IntEnum):
    """TASK_LEVEL__* (tstream.h)."""

    SOURCE = 1
    AGG = 2
    SINK = 3
    SMA = 4


class SchedStatus(enum.IntEnum):
    """TASK_SCHED_STATUS__* (tstream.h)."""

    INACTIVE = 1
    WAITING = 2
    ACTIVE = 3
    DROPPING = 4


def _qmsg(task: StreamTask, attribute: attrs.Attribute[Any], value: object) -> None:
    c_string(task, attribute, value)
    if task.task_level == TaskLevel.SINK and value != "":
        raise InvalidRecordError(f"StreamTask.qmsg = {value!r}: a sink task has no exec message")


def _reserve_repr(value: bytes) -> str:
    """The 256 reserved bytes in a line: zero, or how many are set (not 1 KiB of escapes)."""
    used = sum(1 for b in value if b)
    return f"<{len(value)} bytes, {'all zero' if not used else f'{used} non-zero'}>"


def _reserve(task: StreamTask, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bytes) or len(value) != TASK_RESERVE_LEN:
        raise InvalidRecordError(f"StreamTask.reserve: expected {TASK_RESERVE_LEN} bytes")


@attrs.frozen
class StreamTask:
    """The persisted part of an SStreamTask; built from its two ids alone it is a source task."""

    stream_id: int = required_int(64)
    task_id: int = required_int(32)
    total_level: int = int_field(32, default=1)
    task_level: int = attrs.field(default=TaskLevel.SOURCE, validator=one_of(tuple(TaskLevel)))
    msg_type: int = int_field(16)
    task_status: int = int_field(8)
    """status.taskStatus, the persisted status byte (not the state machine's state)."""
    sched_status: int = int_field(8, default=SchedStatus.INACTIVE)
    self_child_id: int = int_field(32)
    node_id: int = int_field(32)
    ep_set: EpSet = attrs.field(factory=EpSet, validator=instance_of(EpSet))
    mnode_ep_set: EpSet = attrs.field(factory=EpSet, validator=instance_of(EpSet))
    checkpoint_id: int = int_field(64)
    checkpoint_ver: int = int_field(64)
    fill_history: int = attrs.field(default=0, validator=one_of((0, 1)))
    h_task_id: TaskId = attrs.field(default=NO_RELATED_TASK, validator=instance_of(TaskId))
    stream_task_id: TaskId = attrs.field(default=NO_RELATED_TASK, validator=instance_of(TaskId))
    min_ver: int = int_field(64, signed=False)
    max_ver: int = int_field(64, signed=False)
    window_skey: int = int_field(64)
    window_ekey: int = int_field(64)
    upstream: tuple[EpInfo, ...] = attrs.field(
        default=(), converter=to_tuple, validator=tuple_of(EpInfo)
    )
    qmsg: str = attrs.field(default="", validator=_qmsg)
    output: Output = attrs.field(factory=FixedDispatch, validator=instance_of(OUTPUT_RECORDS))
    trigger_param: int = int_field(64)
    reserve: bytes = attrs.field(
        default=bytes(TASK_RESERVE_LEN), validator=_reserve, repr=_reserve_repr
    )

    @property
    def id(self) -> TaskId:
        """The task's identity (the meta's map key)."""
        return TaskId(self.stream_id, self.task_id)

    @property
    def output_type(self) -> int:
        """outputInfo.type, derived from the output record."""
        return self.output.output_type

    @property
    def dispatches(self) -> bool:
        """The task has downstream tasks to check at INIT (FIXED or SHUFFLE dispatch)."""
        return self.output.output_type.dispatches


class TaskVersion(Adapter):
    """I64 ver: built as SSTREAM_TASK_VER; any other version read raises at once."""

    def __init__(self) -> None:
        super().__init__(I64)
        self.flagbuildnone = True

    def _decode(self, obj: int, context: Any, path: str) -> int:
        if obj != SSTREAM_TASK_VER:
            raise IncompatibleVersionError(obj, expected=str(SSTREAM_TASK_VER))
        return obj

    def _encode(self, obj: Any, context: Any, path: str) -> int:
        return SSTREAM_TASK_VER


TASK_BODY = c.Struct(
    FixedRun(
        "ver" / TaskVersion(),
        "stream_id" / I64,
        "task_id" / I32,
        "total_level" / I32,
        "task_level" / I8,
        "output_type" / I8,
        "msg_type" / I16,
        "task_status" / I8,
        "sched_status" / I8,
        "self_child_id" / I32,
        "node_id" / I32,
    ),
    "ep_set" / EP_SET,
    "mnode_ep_set" / EP_SET,
    FixedRun("checkpoint_id" / I64, "checkpoint_ver" / I64, "fill_history" / I8),
    "h_task_id" / TASK_ID,
    "stream_task_id" / TASK_ID,
    FixedRun("min_ver" / U64, "max_ver" / U64, "window_skey" / I64, "window_ekey" / I64),
    "upstream" / Counted(EP_INFO),
    "qmsg" / c.IfThenElse(c.this.task_level != TaskLevel.SINK.value, CStr, c.Computed("")),
    "output"
    / c.Switch(
        c.this.output_type,
        {int(kind): layout for kind, layout in OUTPUT_LAYOUTS.items()},
        default=Reject("unknown output type"),
    ),
    FixedRun("trigger_param" / I64, "reserve" / CStrWithLen(TASK_RESERVE_LEN - 1)),
)
TASK_VALUE = Block(Record(StreamTask, TASK_BODY))


def _span(struct: c.Struct, first: str, last: str) -> int:
    """Bytes taken by the fixed-size fields ``first`` .. ``last`` of a Struct (runs flattened)."""
    fields = [m for sc in struct.subcons for m in getattr(sc, "members", (sc,))]
    names = [sc.name for sc in fields]
    chosen = fields[names.index(first) : names.index(last) + 1]
    return sum(sc.sizeof() for sc in chosen)


CHECKPOINT_INFO = Block(
    c.Struct(
        "msg_ver" / I64,
        c.Padding(_span(TASK_BODY, "stream_id", "mnode_ep_set")),
        "checkpoint_id" / I64,
        "checkpoint_ver" / I64,
    )
)
"""tDecodeStreamTaskChkInfo: the version whatever it is, then checkpointId and checkpointVer."""

TASK_ID_PREFIX = Block(c.Struct("ver" / TaskVersion(), "stream_id" / I64, "task_id" / I32))
"""tDecodeStreamTaskId: the version (must be 2), then the task's id."""

CHECKPOINT_ID_OFFSET = 4 + I64.sizeof() + _span(TASK_BODY, "stream_id", "mnode_ep_set")
UPSTREAM_COUNT_OFFSET = 4 + _span(TASK_BODY, "ver", "window_ekey")


def encode_task(task: StreamTask) -> bytes:
    """The task.db value of a task, at version SSTREAM_TASK_VER (compiled fast path)."""
    value: bytes = compiled_builder(TASK_VALUE).build(task)
    return value


def decode_task(b: bytes) -> StreamTask:
    """Decode a task.db value (checked path).

    Raises IncompatibleVersionError for a version other than 2, DecodeError for anything else.
    """
    task: StreamTask = parse_checked(TASK_VALUE, b)
    return task


def decode_checkpoint_info(b: bytes) -> tuple[int, int, int]:
    """(msg_ver, checkpoint_id, checkpoint_ver) of a task value, for any msg_ver."""
    info = parse_checked(CHECKPOINT_INFO, b)
    return info.msg_ver, info.checkpoint_id, info.checkpoint_ver


def task_read_past_end(b: bytes) -> bool:
    """Whether the seed's tDecodeStreamTask, trusting the value's length header, reads past
    ``b`` (primitives.read_past_end: a torn record does)."""
    return read_past_end(TASK_VALUE, b)


def checkpoint_info_read_past_end(b: bytes) -> bool:
    """Whether the seed's tDecodeStreamTaskChkInfo reads past ``b`` (as task_read_past_end)."""
    return read_past_end(CHECKPOINT_INFO, b)


def decode_task_id(b: bytes) -> TaskId:
    """The id of a task value (the vnode snapshot writer's decoder); the version must be 2."""
    prefix = parse_checked(TASK_ID_PREFIX, b)
    return TaskId(prefix.stream_id, prefix.task_id)


def decode_task_record(key: bytes, value: bytes) -> StreamTask:
    """A task.db record: the value decoded, and checked to be the task its key names.

    Raises what decode_task_key and decode_task raise, and DecodeError when they disagree.
    """
    key_id = TaskId(*decode_task_key(key))
    task = decode_task(value)
    if key_id != task.id:
        raise DecodeError(f"the key names task {key_id}, the value {task.id}", field="key")
    return task


def latest_checkpoint_id(values: Iterable[bytes]) -> int:
    """streamMetaGetLatestCheckpointId: the largest checkpointId among the values' prefixes,
    any msgVer; values whose prefix does not decode are skipped; 0 when there is none."""
    latest = 0
    for value in values:
        try:
            latest = max(latest, decode_checkpoint_info(value)[1])
        except DecodeError:
            continue
    return latest
