from __future__ import annotations

from pathlib import Path

import pytest
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
FIRST = PERIOD - META_HB_CHECK_INTERVAL
"""An election ticks once at once: its first heartbeat comes 24 ticks (4.8 s) later."""
SEMANTICS = pytest.mark.parametrize("semantics", ["intended", "seed"])

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


def leader_meta(
    tmp_path: Path, clock: VirtualClock, transport: Transport, semantics: str = "intended"
) -> StreamMeta:
    meta = open_meta(tmp_path, clock=clock, transport=transport, semantics=semantics)
    meta.update_stage_role(3, True)
    return meta


def sent_at(clock: VirtualClock, transport: Transport, until_ms: int) -> list[int]:
    """The times (ms) of the heartbeats sent from now until ``until_ms``, tick by tick."""
    times: list[int] = []
    while clock.now_ms() < until_ms:
        before = len(transport.sent)
        clock.advance(META_HB_CHECK_INTERVAL // 2)
        times += [clock.now_ms()] * (len(transport.sent) - before)
    return times


@SEMANTICS
def test_first_heartbeat_comes_4800_ms_after_the_election(tmp_path: Path, semantics: str) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = open_meta(tmp_path, clock=clock, transport=transport, semantics=semantics)
    meta.register(task(1), 5)
    clock.advance(1000)
    meta.update_stage_role(3, True)
    assert sent_at(clock, transport, 11_000) == [5800, 10_800]


@SEMANTICS
def test_ticks_carry_over_a_follower_period(tmp_path: Path, semantics: str) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = open_meta(tmp_path, clock=clock, transport=transport, semantics=semantics)
    meta.register(task(1), 5)
    clock.advance(1000)
    meta.update_stage_role(3, True)  # tick 1 at 1000 ms, then 2..16 at 1200..4000 ms
    clock.advance(3000)
    assert meta.view().heartbeat.tick_counter == 16
    meta.update_stage_role(4, False)
    clock.advance(1000)
    assert meta.view().heartbeat.tick_counter == 16  # no tick as follower, none forgotten
    meta.update_stage_role(5, True)  # tick 17 at 5000 ms: 8 more ticks to 25
    assert sent_at(clock, transport, 12_000) == [6600, 11_600]


@SEMANTICS
def test_leader_to_leader_ticks_at_once_and_can_send(tmp_path: Path, semantics: str) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = leader_meta(tmp_path, clock, transport, semantics)  # tick 1 at 0 ms
    meta.register(task(1), 5)
    clock.advance(4700)  # ticks 2..24 at 200..4600 ms
    assert transport.sent == []
    meta.update_stage_role(3, True)  # tick 25
    assert len(transport.sent) == 1
    assert meta.view().heartbeat.tick_counter == 0
    assert clock.pending == 1  # the chain re-armed, not doubled
    assert sent_at(clock, transport, 9800) == [9700]  # 25 ticks after a send


def test_snode_chain_first_ticks_200_ms_after_open(tmp_path: Path) -> None:
    clock, transport = VirtualClock(), Transport()
    meta = open_meta(tmp_path, vg_id=-2, clock=clock, transport=transport)
    meta.register(task(1), 5)
    assert sent_at(clock, transport, PERIOD + 100) == [PERIOD]


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
    clock.advance(FIRST - 1)
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
    clock.advance(FIRST)
    assert len(transport.sent) == 1
    meta.update_stage_role(4, False)
    assert clock.pending == 0  # the follower's chain stopped
    clock.advance(3 * PERIOD)
    assert len(transport.sent) == 1
    meta.update_stage_role(5, True)
    meta.update_stage_role(5, True)  # a second election re-arms the one chain
    assert clock.pending == 1
    clock.advance(FIRST - META_HB_CHECK_INTERVAL)
    assert len(transport.sent) == 2
    meta.update_stage_role(6, False)  # a flip between two ticks leaves one chain too
    meta.update_stage_role(7, True)
    clock.advance(FIRST)
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
    assert [decode_hb(p).vg_id for p in transport.sent] == [-2]  # no tick at open: 5 s


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
