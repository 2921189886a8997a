from __future__ import annotations

from pathlib import Path

from meta_support import fill_history_pair, open_meta, task

from statemeta.codec import EpSet, TaskLevel, decode_hb
from statemeta.lifecycle import TaskEvent
from statemeta.meta import (
    META_HB_CHECK_INTERVAL,
    META_HB_SEND_IDLE_COUNTER,
    StreamMeta,
    VirtualClock,
)

PERIOD = META_HB_CHECK_INTERVAL * META_HB_SEND_IDLE_COUNTER  # 5 s

# Written from the reference's SStreamHbMsg table (section 3.7), not from the codec: vgId 7,
# two entries (0x10-0x1 READY, stage 3, processedVer 4; 0x10-0x3 CK, checkpoint 9, trans 33),
# update nodes 4, 5.
EXPECTED_HB_HEX = (
    "d6000000"
    "07000000"
    "02000000"
    "1000000000000000"
    "01000000"
    "00000000"
    "0300000000000000"
    "07000000"
    "0000000000000000"
    "0000000000000000"
    "0000000000000000"
    "0000000000000000"
    "0400000000000000"
    "0000000000000000"
    "0000000000000000"
    "0000000000000000"
    "00"
    "00000000"
    "1000000000000000"
    "03000000"
    "07000000"
    "0300000000000000"
    "07000000"
    "0000000000000000"
    "0000000000000000"
    "0000000000000000"
    "0000000000000000"
    "0000000000000000"
    "0000000000000000"
    "0000000000000000"
    "0900000000000000"
    "00"
    "21000000"
    "02000000"
    "04000000"
    "05000000"
)


class Transport:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def __call__(self, mnode_ep_set: EpSet, payload: bytes) -> None:
        self.sent.append(payload)


def leader_meta(tmp_path: Path, clock: VirtualClock, transport: Transport) -> StreamMeta:
    meta = open_meta(tmp_path, clock=clock, transport=transport)
    meta.update_stage_role(3, True)
    return meta


def test_heartbeat_bytes_for_a_fixed_scenario(tmp_path: Path) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = leader_meta(tmp_path, clock, transport)
    meta.register(task(1), 5)
    _, history = fill_history_pair(0x10)
    meta.register(task(3, task_level=TaskLevel.SINK), 5)
    meta.register(history, 5)  # 0x10-0x2: fill-history, not reported
    meta.start_one(0x10, 1)
    meta.complete_event(0x10, 1, TaskEvent.INIT)
    meta.start_one(0x10, 3)
    meta.complete_event(0x10, 3, TaskEvent.INIT)
    meta.begin_checkpoint(0x10, 3, 9, 33)
    for node in (4, 5, 4):
        meta.report_downstream_update(0x10, 1, node)
    meta.report_downstream_update(0x10, 3, 5)
    clock.advance(PERIOD - 1)
    assert transport.sent == []
    clock.advance(1)
    (payload,) = transport.sent
    assert payload.hex() == EXPECTED_HB_HEX
    clock.advance(PERIOD)
    assert decode_hb(transport.sent[1]).update_nodes == ()  # moved into the first message


def test_one_chain_across_leader_follower_leader(tmp_path: Path) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = leader_meta(tmp_path, clock, transport)
    meta.register(task(1), 5)
    clock.advance(PERIOD)
    assert len(transport.sent) == 1
    meta.update_stage_role(4, False)
    assert clock.pending == 0  # the follower's chain stopped
    clock.advance(3 * PERIOD)
    assert len(transport.sent) == 1
    meta.update_stage_role(5, True)
    meta.update_stage_role(5, True)  # a second election starts no second chain
    assert clock.pending == 1
    clock.advance(PERIOD)
    assert len(transport.sent) == 2
    meta.update_stage_role(6, False)  # a flip between two ticks leaves one chain too
    meta.update_stage_role(7, True)
    clock.advance(PERIOD)
    assert len(transport.sent) == 3
    assert clock.pending == 1
    assert meta.view().heartbeat.sent == 3


def test_follower_sends_nothing_and_no_tasks_no_message(tmp_path: Path) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = leader_meta(tmp_path, clock, transport)
    clock.advance(2 * PERIOD)
    assert transport.sent == []  # no task to report
    meta.register(task(1, fill_history=1), 5)
    clock.advance(PERIOD)
    assert transport.sent == []


def test_snode_meta_is_leader_from_open(tmp_path: Path) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = open_meta(tmp_path, vg_id=-2, clock=clock, transport=transport)
    meta.register(task(1), 5)
    clock.advance(PERIOD)
    assert [decode_hb(p).vg_id for p in transport.sent] == [-2]


def test_before_close_heartbeat_marks_checkpoints_failed_and_is_sent_at_once(
    tmp_path: Path,
) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = leader_meta(tmp_path, clock, transport)
    meta.register(task(1), 5)
    meta.register(task(2), 5)
    for i in (1, 2):
        meta.start_one(0x10, i)
        meta.complete_event(0x10, i, TaskEvent.INIT)
    meta.begin_checkpoint(0x10, 1, 12, 7)
    meta.update_stage_role(6, False)
    assert meta.view().heartbeat.send_before_close
    assert meta.stop_all() == (task(1).id, task(2).id)
    (payload,) = transport.sent
    first, second = decode_hb(payload).entries
    assert (first.active_checkpoint_id, first.checkpoint_failed, first.checkpoint_trans_id) == (
        12,
        1,
        7,
    )
    assert second.checkpoint_failed == 0
    assert not meta.view().heartbeat.send_before_close
    meta.stop_all()
    assert len(transport.sent) == 1
