"""SEpSet and SStreamChildEpInfo, written out by hand from reference §3.4."""

from __future__ import annotations

import pytest

from statemeta.codec import Ep, EpInfo, EpSet
from statemeta.codec.epset import EP_INFO, EP_SET
from statemeta.codec.primitives import parse_checked
from statemeta.errors import DecodeError, InvalidRecordError

EMPTY_SLOT = "0000" + "8101" + "00" * 129  # U16 port 0, Binary(129) of zeros
AB_SLOT = "3412" + "8101" + "6162" + "00" * 126 + "34"  # fqdn "ab", port 0x1234: low byte last


def test_ep_set_is_667_bytes_with_five_slots_and_the_port_low_byte() -> None:
    ep_set = EpSet(in_use=1, eps=(Ep("ab", 0x1234),))
    expected = "01" + "01" + AB_SLOT + EMPTY_SLOT * 4
    assert EP_SET.build(ep_set).hex() == expected
    assert len(bytes.fromhex(expected)) == 667
    assert parse_checked(EP_SET, bytes.fromhex(expected)) == ep_set


def test_ep_info_is_687_bytes() -> None:
    info = EpInfo(task_id=1, node_id=2, child_id=-3, ep_set=EpSet(), stage=-1)
    expected = "01000000" + "02000000" + "fdffffff" + "0000" + EMPTY_SLOT * 5 + "ff" * 8
    assert EP_INFO.build(info).hex() == expected
    assert len(bytes.fromhex(expected)) == 687


@pytest.mark.parametrize(
    ("hex_", "reason"),
    [
        ("0006" + EMPTY_SLOT * 5, "numOfEps 6"),
        ("00ff" + EMPTY_SLOT * 5, "numOfEps -1"),
        ("0000" + AB_SLOT + EMPTY_SLOT * 4, "past numOfEps 0 is not zero"),
        ("0001" + AB_SLOT[:-2] + "35" + EMPTY_SLOT * 4, "not the port's low byte"),
        ("0001" + "3412" + "8101" + "61" * 128 + "34" + EMPTY_SLOT * 4, "NUL-terminated"),
        ("0001" + "3412" + "8101" + "6100ff" + "00" * 125 + "34" + EMPTY_SLOT * 4, "padding"),
        ("0001" + "3412" + "8001" + "00" * 128 + EMPTY_SLOT * 4 + "00", "128"),
    ],
)
def test_non_canonical_ep_sets_are_rejected(hex_: str, reason: str) -> None:
    with pytest.raises(DecodeError, match=reason):
        parse_checked(EP_SET, bytes.fromhex(hex_))


def test_records_refuse_what_the_layout_cannot_hold() -> None:
    with pytest.raises(InvalidRecordError):
        Ep("x" * 128, 1)
    with pytest.raises(InvalidRecordError):
        Ep("a\0b", 1)
    with pytest.raises(InvalidRecordError):
        EpSet(eps=(Ep(),) * 6)
    with pytest.raises(InvalidRecordError):
        Ep("a", 65536)
