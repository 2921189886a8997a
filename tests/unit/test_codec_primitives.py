"""The encoder primitives, byte for byte (tencode.h at the seed) and their strict decoders."""

from __future__ import annotations

import construct as c
import pytest

from statemeta.codec.primitives import (
    I32,
    Block,
    CStr,
    CStrWithLen,
    I32v,
    U16v,
    U32v,
    U64v,
    parse_checked,
)
from statemeta.errors import DecodeError


@pytest.mark.parametrize(
    ("layout", "value", "hex_"),
    [
        (U32v, 0, "00"),
        (U32v, 127, "7f"),
        (U32v, 128, "8001"),
        (U32v, 129, "8101"),
        (U32v, 256, "8002"),
        (U32v, 2**32 - 1, "ffffffff0f"),
        (U64v, 2**64 - 1, "ffffffffffffffffff01"),
        (I32v, 0, "00"),
        (I32v, -1, "01"),
        (I32v, 1, "02"),
        (I32v, -2, "03"),
        (I32v, 2**31 - 1, "feffffff0f"),
        (I32v, -(2**31), "ffffffff0f"),
    ],
)
def test_varints_are_leb128_and_zigzag(layout: c.Construct, value: int, hex_: str) -> None:
    assert layout.build(value).hex() == hex_
    assert parse_checked(layout, bytes.fromhex(hex_)) == value


@pytest.mark.parametrize(
    ("layout", "hex_", "reason"),
    [
        (U32v, "8000", "overlong"),
        (U32v, "ffffffff1f", "overflows 32 bits"),
        (U32v, "8080808080", "longer than 5 bytes"),
        (U16v, "ffff07", "overflows 16 bits"),
        (U32v, "80", "stream read less"),
    ],
)
def test_varint_decoder_rejects_overlong_and_overflowing(
    layout: c.Construct, hex_: str, reason: str
) -> None:
    with pytest.raises(DecodeError, match=reason):
        parse_checked(layout, bytes.fromhex(hex_))


def test_cstr_counts_the_trailing_nul() -> None:
    assert CStr.build("ab").hex() == "03616200"
    assert CStr.build("").hex() == "0100"


@pytest.mark.parametrize(
    ("hex_", "reason"),
    [
        ("00", "not NUL-terminated"),
        ("026162", "not NUL-terminated"),
        ("03610000", "NUL inside"),
        ("02ff00", "not UTF-8"),
        ("05610000", "stream read less"),
    ],
)
def test_cstr_decoder_rejects_what_cannot_round_trip(hex_: str, reason: str) -> None:
    with pytest.raises(DecodeError, match=reason):
        parse_checked(CStr, bytes.fromhex(hex_))


def test_cstr_with_len_writes_exactly_n_plus_one_bytes() -> None:
    layout = CStrWithLen(3)
    assert layout.build(b"ab\0\0").hex() == "0461620000"
    assert layout.sizeof() == 5
    with pytest.raises(DecodeError, match="expected a 4-byte binary, got 3"):
        parse_checked(layout, bytes.fromhex("03616200"))


BLOCK = Block(c.Struct("a" / I32))


def test_block_header_counts_the_body_only() -> None:
    assert BLOCK.build({"a": 1}).hex() == "04000000" + "01000000"


def test_block_decoder_skips_what_it_did_not_read() -> None:
    data = bytes.fromhex("08000000" + "01000000" + "deadbeef")
    assert parse_checked(BLOCK, data).a == 1


@pytest.mark.parametrize("header", ["09000000", "ffffffff", "00000080"])
def test_block_length_past_the_end_or_negative_is_rejected(header: str) -> None:
    with pytest.raises(DecodeError, match="block length") as e:
        parse_checked(BLOCK, bytes.fromhex(header + "01000000deadbeef"))
    assert e.value.offset == 0


def test_errors_name_the_field_and_the_absolute_offset() -> None:
    layout = Block(c.Struct("a" / I32, "b" / c.Struct("c" / I32)))
    with pytest.raises(DecodeError) as e:
        parse_checked(layout, bytes.fromhex("06000000" + "01000000" + "0200"))
    assert (e.value.field, e.value.offset) == ("b.c", 8)


def test_trailing_bytes_after_the_value_are_rejected() -> None:
    with pytest.raises(DecodeError, match="1 trailing bytes") as e:
        parse_checked(BLOCK, bytes.fromhex("04000000" + "01000000" + "00"))
    assert e.value.offset == 8
