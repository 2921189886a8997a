"""The test vectors of spec/vectors/: hex bytes and decoded fields, one JSON file per vector.

Regenerate with ``python -m statemeta.codec.vectors [DIR]``; a test checks that the committed
files equal what this module generates. The JSON format is described in spec/layouts.md.
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Any

import attrs

from statemeta.codec.epset import Ep, EpInfo, EpSet
from statemeta.codec.heartbeat import HbMsg, TaskStatusEntry, encode_hb
from statemeta.codec.key import TaskId, encode_task_key
from statemeta.codec.output import (
    FetchOutput,
    FixedDispatch,
    Schema,
    SchemaWrapper,
    ShuffleDispatch,
    SmaOutput,
    TableOutput,
    UseDbRsp,
    VgroupInfo,
)
from statemeta.codec.task import SchedStatus, StreamTask, TaskLevel, encode_task

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "spec" / "vectors"


def to_jsonable(value: Any) -> Any:
    """A record as JSON data: fields by name (plus a derived output_type), bytes as hex."""
    if attrs.has(type(value)):
        fields = {a.name: to_jsonable(getattr(value, a.name)) for a in attrs.fields(type(value))}
        if hasattr(value, "output_type"):
            fields["output_type"] = int(value.output_type)
        return fields
    if isinstance(value, tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, enum.IntEnum):
        return int(value)
    return value


_MNODE = EpSet(in_use=0, eps=(Ep("mnode-1.local", 6030), Ep("mnode-2.local", 6030)))
_VNODE = EpSet(in_use=1, eps=(Ep("dnode-1.local", 6030), Ep("dnode-2.local", 7100)))
_UPSTREAM = (
    EpInfo(task_id=0x1_0001, node_id=2, child_id=0, ep_set=_VNODE, stage=-1),
    EpInfo(task_id=0x1_0002, node_id=3, child_id=1, ep_set=_VNODE, stage=7),
)


def _task(**fields: Any) -> StreamTask:
    base: dict[str, Any] = {
        "stream_id": 0x2F6B_1C4A_99E0_0001,
        "task_id": 0x1234_5678,
        "total_level": 2,
        "msg_type": 0x0A03,
        "sched_status": SchedStatus.INACTIVE,
        "node_id": 2,
        "ep_set": _VNODE,
        "mnode_ep_set": _MNODE,
        "checkpoint_id": 9,
        "checkpoint_ver": 1024,
        "min_ver": 0,
        "max_ver": 2**63 - 1,
        "window_skey": -(2**63),
        "window_ekey": 2**63 - 1,
    }
    return StreamTask(**(base | fields))


def task_values() -> dict[str, StreamTask]:
    """One task value per output type (and a fill-history task)."""
    vgroups = (
        VgroupInfo(vg_id=2, hash_begin=0, hash_end=0x7FFF_FFFF, ep_set=_VNODE, task_id=0x2001),
        VgroupInfo(vg_id=3, hash_begin=0x8000_0000, hash_end=0xFFFF_FFFF, task_id=0x2002),
    )
    schema = SchemaWrapper(
        version=3,
        columns=(
            Schema(type=9, flags=1, bytes=8, col_id=1, name="ts"),
            Schema(type=4, flags=0, bytes=4, col_id=-2, name="current"),
        ),
    )
    return {
        "task_value_fixed_dispatch": _task(
            task_level=TaskLevel.SOURCE,
            qmsg='{"plan":"source"}',
            output=FixedDispatch(task_id=0x3001, node_id=4, ep_set=_VNODE),
            h_task_id=TaskId(0x2F6B_1C4A_99E0_0001, 0x1234_5679),
            trigger_param=5000,
        ),
        "task_value_shuffle_dispatch": _task(
            task_level=TaskLevel.AGG,
            self_child_id=1,
            upstream=_UPSTREAM,
            qmsg='{"plan":"agg"}',
            output=ShuffleDispatch(
                db_info=UseDbRsp(
                    db="1.power",
                    uid=-77,
                    vg_version=5,
                    hash_prefix=0,
                    hash_suffix=0,
                    hash_method=0,
                    vgroups=vgroups,
                    err_code=0,
                    state_ts=1_705_000_000_000,
                ),
                stb_full_name="1.power.meters_out",
            ),
        ),
        "task_value_table": _task(
            task_level=TaskLevel.SINK,
            upstream=_UPSTREAM[:1],
            output=TableOutput(stb_uid=123456789, stb_full_name="1.power.out", schema=schema),
        ),
        "task_value_sma": _task(
            task_level=TaskLevel.SMA, qmsg="", output=SmaOutput(sma_id=-5), total_level=1
        ),
        "task_value_fetch": _task(task_level=TaskLevel.SINK, output=FetchOutput()),
        "task_value_fill_history": _task(
            fill_history=1,
            task_id=0x1234_5679,
            task_status=4,
            stream_task_id=TaskId(0x2F6B_1C4A_99E0_0001, 0x1234_5678),
            qmsg="{}",
            output=FixedDispatch(task_id=0x3001, node_id=4, ep_set=_VNODE),
            reserve=bytes(range(256)),
        ),
    }


def _entry(i: int) -> TaskStatusEntry:
    return TaskStatusEntry(
        stream_id=0x2F6B_1C4A_99E0_0001,
        task_id=0x1234_5678 + i,
        status=i % 8,
        stage=3,
        node_id=2,
        input_q_used=1.5 * i,
        input_rate=2.5,
        sink_quota=0.0 if i != 2 else 1024.0,
        sink_data_size=-0.25,
        processed_ver=100 + i,
        ver_start=-1,
        ver_end=2**63 - 1,
        active_checkpoint_id=9 if i == 1 else 0,
        checkpoint_failed=1 if i == 1 else 0,
        checkpoint_trans_id=77 if i == 1 else 0,
    )


def heartbeats() -> dict[str, HbMsg]:
    """Heartbeats with 0, 1 and 3 entries."""
    return {
        "heartbeat_0": HbMsg(vg_id=2),
        "heartbeat_1": HbMsg(vg_id=2, entries=(_entry(0),), update_nodes=(5,)),
        "heartbeat_3": HbMsg(
            vg_id=-2, entries=tuple(_entry(i) for i in range(3)), update_nodes=(3, 4)
        ),
    }


def vectors() -> dict[str, dict[str, Any]]:
    """Every vector by file stem: {layout, description, hex, decoded}."""
    out: dict[str, dict[str, Any]] = {}
    for name, (stream_id, task_id) in {
        "task_key": (0x2F6B_1C4A_99E0_0001, 0x1234_5678),
        "task_key_negative": (-2, -1),
        "task_key_extremes": (2**63 - 1, -(2**31)),
    }.items():
        out[name] = {
            "layout": "task_key",
            "description": "16-byte task.db key: I64 streamId, I64 sign-extended taskId",
            "hex": encode_task_key(stream_id, task_id).hex(),
            "decoded": {"stream_id": stream_id, "task_id": task_id},
        }
    values = task_values()
    for name, task in values.items():
        out[name] = {
            "layout": "task_value",
            "description": f"task value v2, output type {int(task.output_type)}",
            "hex": encode_task(task).hex(),
            "decoded": to_jsonable(task),
        }
    sample = values["task_value_fixed_dispatch"]
    value = encode_task(sample)
    ver3 = value[:4] + (3).to_bytes(8, "little") + value[12:]
    for name, data, ver in (("checkpoint_info", value, 2), ("checkpoint_info_ver3", ver3, 3)):
        out[name] = {
            "layout": "checkpoint_info",
            "description": "prefix decoder: msgVer (any), checkpointId at 1376, checkpointVer",
            "hex": data.hex(),
            "decoded": {
                "msg_ver": ver,
                "checkpoint_id": sample.checkpoint_id,
                "checkpoint_ver": sample.checkpoint_ver,
            },
        }
    out["task_id"] = {
        "layout": "task_id",
        "description": "prefix decoder: ver (must be 2), streamId, taskId",
        "hex": value.hex(),
        "decoded": {"stream_id": sample.stream_id, "task_id": sample.task_id},
    }
    for name, msg in heartbeats().items():
        out[name] = {
            "layout": "heartbeat",
            "description": f"SStreamHbMsg with {len(msg.entries)} entries",
            "hex": encode_hb(msg).hex(),
            "decoded": to_jsonable(msg),
        }
    return out


def render(vector: dict[str, Any]) -> str:
    """The committed text of one vector file."""
    return json.dumps(vector, indent=2) + "\n"


def main(argv: list[str]) -> int:
    """Write every vector into DIR (default: the repository's spec/vectors)."""
    directory = Path(argv[0]) if argv else DEFAULT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for name, vector in vectors().items():
        (directory / f"{name}.json").write_text(render(vector))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
