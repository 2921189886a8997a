"""Codec throughput against a hand-written ``struct`` baseline measured in the same run.

Run: ``python -m benchmarks.bench_codec [--quick]``. Goal: the encode fast path (compiled
construct) within 3x of struct. Decoding is always the checked path (untrusted bytes): its
ratio is reported against a struct decoder that checks nothing.
"""

from __future__ import annotations

import argparse
import statistics
import struct
import timeit
from collections.abc import Callable
from typing import Any

from benchmarks._table import print_module
from statemeta.codec import (
    Ep,
    EpInfo,
    EpSet,
    FixedDispatch,
    HbMsg,
    StreamTask,
    TaskId,
    TaskStatusEntry,
    decode_hb,
    decode_task,
    encode_hb,
    encode_task,
)

_EP = struct.Struct("<H")
_HEAD = struct.Struct("<qqiibbhbbii")
_MID = struct.Struct("<qqbqiqiQQqq")
_ENTRY = struct.Struct("<qiiqiddddqqqqbi")


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_uvarint(b: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = b[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _pack_ep_set(s: EpSet) -> bytes:
    parts = [bytes((s.in_use & 0xFF, len(s.eps)))]
    for ep in s.eps + (Ep(),) * (5 - len(s.eps)):
        fqdn = ep.fqdn.encode().ljust(128, b"\0")
        parts.append(_EP.pack(ep.port) + b"\x81\x01" + fqdn + bytes((ep.port & 0xFF,)))
    return b"".join(parts)


def _unpack_ep_set(b: bytes, at: int) -> tuple[EpSet, int]:
    in_use, n = struct.unpack_from("<bb", b, at)
    at += 2
    eps = []
    for i in range(5):
        (port,) = _EP.unpack_from(b, at)
        fqdn = b[at + 4 : at + 132].split(b"\0", 1)[0].decode()
        at += 133
        if i < n:
            eps.append(Ep(fqdn, port))
    return EpSet(in_use, tuple(eps)), at


def struct_encode_task(t: StreamTask) -> bytes:
    """A hand-written encoder of a source task with a fixed dispatch (the benchmark's case)."""
    assert isinstance(t.output, FixedDispatch)
    qmsg = t.qmsg.encode() + b"\0"
    parts = [
        _HEAD.pack(
            2,
            t.stream_id,
            t.task_id,
            t.total_level,
            t.task_level,
            t.output_type,
            t.msg_type,
            t.task_status,
            t.sched_status,
            t.self_child_id,
            t.node_id,
        ),
        _pack_ep_set(t.ep_set),
        _pack_ep_set(t.mnode_ep_set),
        _MID.pack(
            t.checkpoint_id,
            t.checkpoint_ver,
            t.fill_history,
            t.h_task_id.stream_id,
            t.h_task_id.task_id,
            t.stream_task_id.stream_id,
            t.stream_task_id.task_id,
            t.min_ver,
            t.max_ver,
            t.window_skey,
            t.window_ekey,
        ),
        struct.pack("<i", len(t.upstream)),
    ]
    for u in t.upstream:
        parts += [
            struct.pack("<iii", u.task_id, u.node_id, u.child_id),
            _pack_ep_set(u.ep_set),
            struct.pack("<q", u.stage),
        ]
    parts += [
        _uvarint(len(qmsg)),
        qmsg,
        struct.pack("<ii", t.output.task_id, t.output.node_id),
        _pack_ep_set(t.output.ep_set),
        struct.pack("<q", t.trigger_param),
        b"\x80\x02",
        t.reserve,
    ]
    body = b"".join(parts)
    return struct.pack("<i", len(body)) + body


def struct_decode_task(b: bytes) -> StreamTask:
    """The inverse of struct_encode_task, without any check."""
    head = _HEAD.unpack_from(b, 4)
    ep_set, at = _unpack_ep_set(b, 4 + _HEAD.size)
    mnode, at = _unpack_ep_set(b, at)
    mid = _MID.unpack_from(b, at)
    at += _MID.size
    (n,) = struct.unpack_from("<i", b, at)
    at += 4
    upstream = []
    for _ in range(n):
        task_id, node_id, child_id = struct.unpack_from("<iii", b, at)
        u_set, at = _unpack_ep_set(b, at + 12)
        (stage,) = struct.unpack_from("<q", b, at)
        at += 8
        upstream.append(EpInfo(task_id, node_id, child_id, u_set, stage))
    length, at = _read_uvarint(b, at)
    qmsg = b[at : at + length - 1].decode()
    at += length
    d_task, d_node = struct.unpack_from("<ii", b, at)
    d_set, at = _unpack_ep_set(b, at + 8)
    (trigger,) = struct.unpack_from("<q", b, at)
    return StreamTask(
        stream_id=head[1],
        task_id=head[2],
        total_level=head[3],
        task_level=head[4],
        msg_type=head[6],
        task_status=head[7],
        sched_status=head[8],
        self_child_id=head[9],
        node_id=head[10],
        ep_set=ep_set,
        mnode_ep_set=mnode,
        checkpoint_id=mid[0],
        checkpoint_ver=mid[1],
        fill_history=mid[2],
        h_task_id=TaskId(mid[3], mid[4]),
        stream_task_id=TaskId(mid[5], mid[6]),
        min_ver=mid[7],
        max_ver=mid[8],
        window_skey=mid[9],
        window_ekey=mid[10],
        upstream=tuple(upstream),
        qmsg=qmsg,
        output=FixedDispatch(d_task, d_node, d_set),
        trigger_param=trigger,
        reserve=b[at + 10 : at + 266],
    )


def struct_encode_hb(m: HbMsg) -> bytes:
    """A hand-written heartbeat encoder."""
    parts = [struct.pack("<ii", m.vg_id, len(m.entries))]
    parts += [
        _ENTRY.pack(
            e.stream_id,
            e.task_id,
            e.status,
            e.stage,
            e.node_id,
            e.input_q_used,
            e.input_rate,
            e.sink_quota,
            e.sink_data_size,
            e.processed_ver,
            e.ver_start,
            e.ver_end,
            e.active_checkpoint_id,
            e.checkpoint_failed,
            e.checkpoint_trans_id,
        )
        for e in m.entries
    ]
    parts.append(struct.pack(f"<i{len(m.update_nodes)}i", len(m.update_nodes), *m.update_nodes))
    body = b"".join(parts)
    return struct.pack("<i", len(body)) + body


def struct_decode_hb(b: bytes) -> HbMsg:
    """The inverse of struct_encode_hb, without any check."""
    vg_id, n = struct.unpack_from("<ii", b, 4)
    entries = tuple(TaskStatusEntry(*_ENTRY.unpack_from(b, 12 + 97 * i)) for i in range(n))
    (m,) = struct.unpack_from("<i", b, 12 + 97 * n)
    return HbMsg(vg_id, entries, struct.unpack_from(f"<{m}i", b, 16 + 97 * n))


def _sample_task() -> StreamTask:
    vnode = EpSet(1, (Ep("dnode-1.local", 6030), Ep("dnode-2.local", 6030)))
    return StreamTask(
        stream_id=0x2F6B1C4A99E00001,
        task_id=0x12345678,
        node_id=2,
        ep_set=vnode,
        mnode_ep_set=EpSet(0, (Ep("mnode-1.local", 6030),)),
        checkpoint_id=9,
        checkpoint_ver=1024,
        upstream=(EpInfo(1, 2, 0, vnode, 3), EpInfo(2, 3, 1, vnode, 3)),
        qmsg='{"plan":"' + "x" * 2000 + '"}',
        output=FixedDispatch(0x3001, 4, vnode),
        trigger_param=5000,
    )


def _sample_hb() -> HbMsg:
    entries = tuple(
        TaskStatusEntry(
            stream_id=7,
            task_id=i,
            status=i % 8,
            stage=3,
            node_id=2,
            input_q_used=0.5 * i,
            processed_ver=100 + i,
        )
        for i in range(100)
    )
    return HbMsg(vg_id=2, entries=entries, update_nodes=(3, 4))


def _median_us(fn: Callable[[], Any], quick: bool) -> float:
    number = 20 if quick else 200
    runs = timeit.repeat(fn, number=number, repeat=3 if quick else 7)
    return statistics.median(runs) / number * 1e6


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows of the benchmark; ratio = construct time / struct time (lower is better)."""
    task, hb = _sample_task(), _sample_hb()
    value, hb_bytes = encode_task(task), encode_hb(hb)
    assert struct_encode_task(task) == value and struct_decode_task(value) == task
    assert struct_encode_hb(hb) == hb_bytes and struct_decode_hb(hb_bytes) == hb
    cases = [
        (
            "task value encode (compiled)",
            lambda: encode_task(task),
            lambda: struct_encode_task(task),
            "<= 3x",
        ),
        (
            "task value decode (checked)",
            lambda: decode_task(value),
            lambda: struct_decode_task(value),
            "",
        ),
        (
            "100-entry heartbeat encode (compiled)",
            lambda: encode_hb(hb),
            lambda: struct_encode_hb(hb),
            "<= 3x",
        ),
        (
            "100-entry heartbeat decode (checked)",
            lambda: decode_hb(hb_bytes),
            lambda: struct_decode_hb(hb_bytes),
            "",
        ),
    ]
    rows = []
    for name, ours, baseline, goal in cases:
        value_us, base_us = _median_us(ours, quick), _median_us(baseline, quick)
        rows.append(
            {
                "name": name,
                "value": round(value_us, 1),
                "unit": "us/op",
                "baseline": "hand-written struct",
                "baseline_value": round(base_us, 1),
                "ratio": round(value_us / base_us, 2),
                "goal": goal,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a few seconds, fewer repeats")
    args = parser.parse_args()
    print_module("codec", run(args.quick))


if __name__ == "__main__":
    main()
