"""Byte-exact layouts of TDengine's task.db keys and values and of the stream heartbeat.

Encoders take trusted records (compiled construct); decoders parse untrusted bytes on the
checked path and raise only DecodeError, IncompatibleVersionError or KeyLengthError.
"""

from statemeta.codec.epset import EP_INFO_SIZE, EP_SET_SIZE, Ep, EpInfo, EpSet
from statemeta.codec.heartbeat import HbMsg, TaskStatusEntry, decode_hb, encode_hb, hb_size
from statemeta.codec.key import (
    NO_RELATED_TASK,
    STREAM_TASK_KEY_LEN,
    TaskId,
    decode_task_key,
    encode_task_key,
)
from statemeta.codec.output import (
    FetchOutput,
    FixedDispatch,
    Output,
    OutputType,
    Schema,
    SchemaWrapper,
    ShuffleDispatch,
    SmaOutput,
    TableOutput,
    UseDbRsp,
    VgroupInfo,
)
from statemeta.codec.task import (
    CHECKPOINT_ID_OFFSET,
    SSTREAM_TASK_INCOMPATIBLE_VER,
    SSTREAM_TASK_VER,
    UPSTREAM_COUNT_OFFSET,
    SchedStatus,
    StreamTask,
    TaskLevel,
    checkpoint_info_read_past_end,
    decode_checkpoint_info,
    decode_task,
    decode_task_id,
    decode_task_record,
    encode_task,
    latest_checkpoint_id,
    task_read_past_end,
)

__all__ = [
    "CHECKPOINT_ID_OFFSET",
    "EP_INFO_SIZE",
    "EP_SET_SIZE",
    "NO_RELATED_TASK",
    "SSTREAM_TASK_INCOMPATIBLE_VER",
    "SSTREAM_TASK_VER",
    "STREAM_TASK_KEY_LEN",
    "UPSTREAM_COUNT_OFFSET",
    "Ep",
    "EpInfo",
    "EpSet",
    "FetchOutput",
    "FixedDispatch",
    "HbMsg",
    "Output",
    "OutputType",
    "SchedStatus",
    "Schema",
    "SchemaWrapper",
    "ShuffleDispatch",
    "SmaOutput",
    "StreamTask",
    "TableOutput",
    "TaskId",
    "TaskLevel",
    "TaskStatusEntry",
    "UseDbRsp",
    "VgroupInfo",
    "checkpoint_info_read_past_end",
    "decode_checkpoint_info",
    "decode_hb",
    "decode_task",
    "decode_task_id",
    "decode_task_key",
    "decode_task_record",
    "encode_hb",
    "encode_task",
    "encode_task_key",
    "hb_size",
    "latest_checkpoint_id",
    "task_read_past_end",
]
