"""Hypothesis strategies for the codec records (shared by every test that needs records)."""

from __future__ import annotations

from hypothesis import strategies as st

from statemeta.codec import (
    Ep,
    EpInfo,
    EpSet,
    FetchOutput,
    FixedDispatch,
    HbMsg,
    OutputType,
    Schema,
    SchemaWrapper,
    ShuffleDispatch,
    SmaOutput,
    StreamTask,
    TableOutput,
    TaskId,
    TaskLevel,
    TaskStatusEntry,
    UseDbRsp,
    VgroupInfo,
)
from statemeta.codec.epset import TSDB_FQDN_LEN, TSDB_MAX_REPLICA
from statemeta.codec.task import TASK_RESERVE_LEN


def ints(bits: int, *, signed: bool = True) -> st.SearchStrategy[int]:
    """Every value of a C integer, extremes included."""
    if signed:
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return st.integers(0, 2**bits - 1)


i8, i16, i32, i64 = ints(8), ints(16), ints(32), ints(64)
u32, u64 = ints(32, signed=False), ints(64, signed=False)
doubles = st.floats(allow_nan=False)
c_strings = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"))
fqdns = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=31),
    st.text(
        "abcdefghijklmnopqrstuvwxyz.-0123456789",
        min_size=TSDB_FQDN_LEN - 1,
        max_size=TSDB_FQDN_LEN - 1,
    ),
)

task_ids = st.builds(TaskId, stream_id=i64, task_id=i32)
eps = st.builds(Ep, fqdn=fqdns, port=ints(16, signed=False))
ep_sets = st.builds(EpSet, in_use=i8, eps=st.lists(eps, max_size=TSDB_MAX_REPLICA).map(tuple))
ep_infos = st.builds(EpInfo, task_id=i32, node_id=i32, child_id=i32, ep_set=ep_sets, stage=i64)

vgroup_infos = st.builds(
    VgroupInfo, vg_id=i32, hash_begin=u32, hash_end=u32, ep_set=ep_sets, task_id=i32
)
use_db_rsps = st.builds(
    UseDbRsp,
    db=c_strings,
    uid=i64,
    vg_version=i32,
    hash_prefix=i16,
    hash_suffix=i16,
    hash_method=i8,
    vgroups=st.lists(vgroup_infos, max_size=4).map(tuple),
    err_code=i32,
    state_ts=i64,
)
schemas = st.builds(Schema, type=i8, flags=i8, bytes=i32, col_id=i16, name=c_strings)
schema_wrappers = st.builds(
    SchemaWrapper, version=i32, columns=st.lists(schemas, max_size=5).map(tuple)
)
outputs_by_type = {
    OutputType.FIXED_DISPATCH: st.builds(FixedDispatch, task_id=i32, node_id=i32, ep_set=ep_sets),
    OutputType.SHUFFLE_DISPATCH: st.builds(
        ShuffleDispatch, db_info=use_db_rsps, stb_full_name=c_strings
    ),
    OutputType.TABLE: st.builds(
        TableOutput, stb_uid=i64, stb_full_name=c_strings, schema=schema_wrappers
    ),
    OutputType.SMA: st.builds(SmaOutput, sma_id=i64),
    OutputType.FETCH: st.builds(FetchOutput, reserved=i8),
}
outputs = st.one_of(*outputs_by_type.values())


def _stream_tasks(level: TaskLevel) -> st.SearchStrategy[StreamTask]:
    return st.builds(
        StreamTask,
        stream_id=i64,
        task_id=i32,
        total_level=i32,
        task_level=st.just(level),
        msg_type=i16,
        task_status=i8,
        sched_status=i8,
        self_child_id=i32,
        node_id=i32,
        ep_set=ep_sets,
        mnode_ep_set=ep_sets,
        checkpoint_id=i64,
        checkpoint_ver=i64,
        fill_history=st.sampled_from((0, 1)),
        h_task_id=task_ids,
        stream_task_id=task_ids,
        min_ver=u64,
        max_ver=u64,
        window_skey=i64,
        window_ekey=i64,
        upstream=st.lists(ep_infos, max_size=3).map(tuple),
        qmsg=st.just("") if level == TaskLevel.SINK else c_strings,
        output=outputs,
        trigger_param=i64,
        reserve=st.binary(min_size=TASK_RESERVE_LEN, max_size=TASK_RESERVE_LEN),
    )


stream_tasks = st.sampled_from(TaskLevel).flatmap(_stream_tasks)

task_status_entries = st.builds(
    TaskStatusEntry,
    stream_id=i64,
    task_id=i32,
    status=i32,
    stage=i64,
    node_id=i32,
    input_q_used=doubles,
    input_rate=doubles,
    sink_quota=doubles,
    sink_data_size=doubles,
    processed_ver=i64,
    ver_start=i64,
    ver_end=i64,
    active_checkpoint_id=i64,
    checkpoint_failed=i8,
    checkpoint_trans_id=i32,
)
hb_msgs = st.builds(
    HbMsg,
    vg_id=i32,
    entries=st.lists(task_status_entries, max_size=5).map(tuple),
    update_nodes=st.lists(i32, max_size=5).map(tuple),
)
