"""The five output kinds of a task (outputInfo, the tail of tEncodeStreamTask at the seed).

Each record carries its TASK_OUTPUT__* type as a class constant, so a task's output type is
derived from its output record and the two cannot disagree.
"""

from __future__ import annotations

import enum
from typing import ClassVar

import attrs
import construct as c

from statemeta.codec.epset import EP_SET, EpSet
from statemeta.codec.fields import c_string_field, instance_of, int_field, to_tuple, tuple_of
from statemeta.codec.primitives import (
    I8,
    I16,
    I32,
    I64,
    U32,
    CStr,
    FixedRun,
    I16v,
    I32v,
    Record,
    TupleOf,
)


class OutputType(enum.IntEnum):
    """TASK_OUTPUT__* (tstream.h)."""

    FIXED_DISPATCH = 1
    SHUFFLE_DISPATCH = 2
    TABLE = 3
    SMA = 4
    FETCH = 5

    @property
    def dispatches(self) -> bool:
        """Blocks go to downstream tasks: only then does INIT wait for their replies (two-phase);
        for the other types INIT completes at once (streamTaskCheckDownstream)."""
        return self in (OutputType.FIXED_DISPATCH, OutputType.SHUFFLE_DISPATCH)


@attrs.frozen
class FixedDispatch:
    """TASK_OUTPUT__FIXED_DISPATCH: every block goes to one downstream task."""

    output_type: ClassVar[OutputType] = OutputType.FIXED_DISPATCH
    task_id: int = int_field(32)
    node_id: int = int_field(32)
    ep_set: EpSet = attrs.field(factory=EpSet, validator=instance_of(EpSet))


@attrs.frozen
class VgroupInfo:
    """SVgroupInfo in a shuffle dispatcher; ``task_id`` is the numOfTable/taskId union."""

    vg_id: int = int_field(32)
    hash_begin: int = int_field(32, signed=False)
    hash_end: int = int_field(32, signed=False)
    ep_set: EpSet = attrs.field(factory=EpSet, validator=instance_of(EpSet))
    task_id: int = int_field(32)


@attrs.frozen
class UseDbRsp:
    """SUseDbRsp (tSerializeSUseDbRspImp): the database's vgroups and their hash ranges."""

    db: str = c_string_field()
    uid: int = int_field(64)
    vg_version: int = int_field(32)
    hash_prefix: int = int_field(16)
    hash_suffix: int = int_field(16)
    hash_method: int = int_field(8)
    vgroups: tuple[VgroupInfo, ...] = attrs.field(
        default=(), converter=to_tuple, validator=tuple_of(VgroupInfo)
    )
    err_code: int = int_field(32)
    state_ts: int = int_field(64)


@attrs.frozen
class ShuffleDispatch:
    """TASK_OUTPUT__SHUFFLE_DISPATCH: blocks go to the vgroup owning each child table."""

    output_type: ClassVar[OutputType] = OutputType.SHUFFLE_DISPATCH
    db_info: UseDbRsp = attrs.field(factory=UseDbRsp, validator=instance_of(UseDbRsp))
    stb_full_name: str = c_string_field()


@attrs.frozen
class Schema:
    """SSchema: one column."""

    type: int = int_field(8)
    flags: int = int_field(8)
    bytes: int = int_field(32)
    col_id: int = int_field(16)
    name: str = c_string_field()


@attrs.frozen
class SchemaWrapper:
    """SSchemaWrapper: a versioned list of columns."""

    version: int = int_field(32)
    columns: tuple[Schema, ...] = attrs.field(
        default=(), converter=to_tuple, validator=tuple_of(Schema)
    )


@attrs.frozen
class TableOutput:
    """TASK_OUTPUT__TABLE: the task writes into a super table."""

    output_type: ClassVar[OutputType] = OutputType.TABLE
    stb_uid: int = int_field(64)
    stb_full_name: str = c_string_field()
    schema: SchemaWrapper = attrs.field(factory=SchemaWrapper, validator=instance_of(SchemaWrapper))


@attrs.frozen
class SmaOutput:
    """TASK_OUTPUT__SMA: the task feeds a time-range SMA."""

    output_type: ClassVar[OutputType] = OutputType.SMA
    sma_id: int = int_field(64)


@attrs.frozen
class FetchOutput:
    """TASK_OUTPUT__FETCH: results are fetched by the client; one reserved byte."""

    output_type: ClassVar[OutputType] = OutputType.FETCH
    reserved: int = int_field(8)


Output = FixedDispatch | ShuffleDispatch | TableOutput | SmaOutput | FetchOutput
OUTPUT_RECORDS: tuple[type, ...] = (
    FixedDispatch,
    ShuffleDispatch,
    TableOutput,
    SmaOutput,
    FetchOutput,
)

VGROUP_INFO = Record(
    VgroupInfo,
    c.Struct(
        FixedRun("vg_id" / I32, "hash_begin" / U32, "hash_end" / U32),
        "ep_set" / EP_SET,
        FixedRun("task_id" / I32),
    ),
)

USE_DB_RSP = Record(
    UseDbRsp,
    c.Struct(
        "db" / CStr,
        FixedRun("uid" / I64, "vg_version" / I32),
        "vg_num" / c.Rebuild(I32, c.len_(c.this.vgroups)),
        FixedRun("hash_prefix" / I16, "hash_suffix" / I16, "hash_method" / I8),
        "vgroups" / TupleOf(c.Array(c.this.vg_num, VGROUP_INFO)),
        FixedRun("err_code" / I32, "state_ts" / I64),
    ),
)

SCHEMA = Record(
    Schema,
    c.Struct(FixedRun("type" / I8, "flags" / I8), "bytes" / I32v, "col_id" / I16v, "name" / CStr),
)

SCHEMA_WRAPPER = Record(
    SchemaWrapper,
    c.Struct(
        "n_cols" / c.Rebuild(I32v, c.len_(c.this.columns)),
        "version" / I32v,
        "columns" / TupleOf(c.Array(c.this.n_cols, SCHEMA)),
    ),
)

OUTPUT_LAYOUTS: dict[int, c.Construct] = {
    OutputType.FIXED_DISPATCH: Record(
        FixedDispatch, c.Struct(FixedRun("task_id" / I32, "node_id" / I32), "ep_set" / EP_SET)
    ),
    OutputType.SHUFFLE_DISPATCH: Record(
        ShuffleDispatch, c.Struct("db_info" / USE_DB_RSP, "stb_full_name" / CStr)
    ),
    OutputType.TABLE: Record(
        TableOutput,
        c.Struct(FixedRun("stb_uid" / I64), "stb_full_name" / CStr, "schema" / SCHEMA_WRAPPER),
    ),
    OutputType.SMA: Record(SmaOutput, c.Struct(FixedRun("sma_id" / I64))),
    OutputType.FETCH: Record(FetchOutput, c.Struct(FixedRun("reserved" / I8))),
}
