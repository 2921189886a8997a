"""The heartbeat a leader sends to the mnode: SStreamHbMsg (tEncodeStreamHbMsg at the seed).

One tStartEncode block: I32 vgId, I32 numOfTasks, that many 97-byte STaskStatusEntry, then
I32 numOfVgs and that many I32 update-node vgIds: 16 + 97 n + 4 m bytes.
"""

from __future__ import annotations

import attrs
import construct as c

from statemeta.codec.fields import (
    double_field,
    int_field,
    int_tuple,
    required_int,
    to_tuple,
    tuple_of,
)
from statemeta.codec.primitives import (
    I8,
    I32,
    I64,
    Block,
    Counted,
    Double,
    FixedRun,
    Record,
    compiled_builder,
    parse_checked,
)


@attrs.frozen
class TaskStatusEntry:
    """STaskStatusEntry: the serialised fields of one task's status in a heartbeat."""

    stream_id: int = required_int(64)
    task_id: int = required_int(32)
    status: int = int_field(32)
    stage: int = int_field(64)
    node_id: int = int_field(32)
    input_q_used: float = double_field()
    input_rate: float = double_field()
    sink_quota: float = double_field()
    sink_data_size: float = double_field()
    processed_ver: int = int_field(64)
    ver_start: int = int_field(64)
    ver_end: int = int_field(64)
    active_checkpoint_id: int = int_field(64)
    checkpoint_failed: int = int_field(8)
    checkpoint_trans_id: int = int_field(32)


@attrs.frozen
class HbMsg:
    """SStreamHbMsg: a vnode's task statuses and the nodes whose epsets changed."""

    vg_id: int = int_field(32)
    entries: tuple[TaskStatusEntry, ...] = attrs.field(
        default=(), converter=to_tuple, validator=tuple_of(TaskStatusEntry)
    )
    update_nodes: tuple[int, ...] = attrs.field(
        default=(), converter=to_tuple, validator=int_tuple(32)
    )


TASK_STATUS_ENTRY = Record(
    TaskStatusEntry,
    c.Struct(
        FixedRun(
            "stream_id" / I64,
            "task_id" / I32,
            "status" / I32,
            "stage" / I64,
            "node_id" / I32,
            "input_q_used" / Double,
            "input_rate" / Double,
            "sink_quota" / Double,
            "sink_data_size" / Double,
            "processed_ver" / I64,
            "ver_start" / I64,
            "ver_end" / I64,
            "active_checkpoint_id" / I64,
            "checkpoint_failed" / I8,
            "checkpoint_trans_id" / I32,
        )
    ),
)
TASK_STATUS_ENTRY_SIZE: int = TASK_STATUS_ENTRY.sizeof()

HB_MSG = Block(
    Record(
        HbMsg,
        c.Struct(
            FixedRun("vg_id" / I32),
            "entries" / Counted(TASK_STATUS_ENTRY),
            "update_nodes" / Counted(I32),
        ),
    )
)


def hb_size(num_of_tasks: int, num_of_update_nodes: int) -> int:
    """Encoded length of a heartbeat, header included."""
    return 16 + TASK_STATUS_ENTRY_SIZE * num_of_tasks + 4 * num_of_update_nodes


def encode_hb(msg: HbMsg) -> bytes:
    """The encoded heartbeat (compiled fast path)."""
    data: bytes = compiled_builder(HB_MSG).build(msg)
    return data


def decode_hb(b: bytes) -> HbMsg:
    """Decode a heartbeat (checked path); raises DecodeError."""
    msg: HbMsg = parse_checked(HB_MSG, b)
    return msg
