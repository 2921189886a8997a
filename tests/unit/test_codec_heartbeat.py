"""SStreamHbMsg, written out by hand from reference §3.7."""

from __future__ import annotations

import pytest

from statemeta.codec import HbMsg, TaskStatusEntry, decode_hb, encode_hb, hb_size
from statemeta.errors import DecodeError

ENTRY = TaskStatusEntry(
    stream_id=1,
    task_id=2,
    status=3,
    stage=4,
    node_id=5,
    input_q_used=1.0,
    input_rate=0.5,
    sink_quota=2.0,
    sink_data_size=-1.0,
    processed_ver=6,
    ver_start=7,
    ver_end=8,
    active_checkpoint_id=9,
    checkpoint_failed=1,
    checkpoint_trans_id=10,
)
ENTRY_HEX = (
    "0100000000000000"  # 0 streamId
    "02000000"  # 8 taskId (I32)
    "03000000"  # 12 status
    "0400000000000000"  # 16 stage
    "05000000"  # 24 nodeId
    "000000000000f03f"  # 28 inputQUsed 1.0
    "000000000000e03f"  # 36 inputRate 0.5
    "0000000000000040"  # 44 sinkQuota 2.0
    "000000000000f0bf"  # 52 sinkDataSize -1.0
    "0600000000000000"  # 60 processedVer
    "0700000000000000"  # 68 verStart
    "0800000000000000"  # 76 verEnd
    "0900000000000000"  # 84 activeCheckpointId
    "01"  # 92 checkpointFailed
    "0a000000"  # 93 chkpointTransId
)


def test_one_entry_heartbeat_byte_for_byte() -> None:
    msg = HbMsg(vg_id=7, entries=(ENTRY,), update_nodes=(11,))
    expected = "71000000" + "07000000" + "01000000" + ENTRY_HEX + "01000000" + "0b000000"
    assert len(ENTRY_HEX) // 2 == 97
    assert encode_hb(msg).hex() == expected
    assert decode_hb(bytes.fromhex(expected)) == msg


def test_empty_heartbeat_is_16_bytes() -> None:
    assert encode_hb(HbMsg(vg_id=-2)).hex() == "0c000000" + "feffffff" + "00000000" * 2
    assert hb_size(0, 0) == 16 and hb_size(3, 2) == 16 + 3 * 97 + 8


@pytest.mark.parametrize(
    ("patch_at", "patch", "reason"),
    [
        (8, "ffffffff", "count -1"),
        (8, "02000000", "count 2 does not fit"),
        (0, "ffff0000", "block length"),
    ],
)
def test_corrupt_heartbeats_raise_decode_error(patch_at: int, patch: str, reason: str) -> None:
    data = bytearray(encode_hb(HbMsg(vg_id=7, entries=(ENTRY,))))
    data[patch_at : patch_at + 4] = bytes.fromhex(patch)
    with pytest.raises(DecodeError, match=reason):
        decode_hb(bytes(data))
