"""A checksum per stored record, kept beside the byte-exact TDengine value.

The value's layout stays TDengine's, so the checksum cannot live in it: each table ``T`` has a
companion table ``T#crc32`` with the same keys, whose value is the CRC-32 of the key and the
value (4 bytes, little-endian). LMDB checks nothing of what it stores: a flipped bit inside a
value, or in a key, is read back as data. A row whose checksum does not match, a row without
one, and a checksum without its row (a record gone) come back as ``DamagedValue``, which load
and ``inspect`` report as records that do not decode (spec/store.md, Damaged files).
"""

from __future__ import annotations

import struct
import zlib

from statemeta.store.protocol import DamagedValue

SUMS_SUFFIX = "#crc32"
SUM = struct.Struct("<I")
Rows = list[tuple[bytes, bytes]]


def sums_table(name: str) -> str:
    """The companion table holding the checksums of table ``name``."""
    return name + SUMS_SUFFIX


def record_sum(key: bytes, value: bytes) -> bytes:
    return SUM.pack(zlib.crc32(value, zlib.crc32(key)))


def checked_value(key: bytes, value: bytes, stored_sum: bytes | None) -> bytes:
    """``value``, or a DamagedValue saying why its checksum does not vouch for it."""
    if stored_sum is None:
        return DamagedValue(value, f"the record {key.hex()} has no checksum")
    if stored_sum != record_sum(key, value):
        return DamagedValue(
            value, f"checksum mismatch: the stored value (or key) of {key.hex()} changed "
            "after it was written"
        )
    return value


def checked_rows(rows: Rows, sums: dict[bytes, bytes]) -> Rows:
    """Every row checked, and a DamagedValue row for each checksum whose row is gone, in key
    order."""
    out = [(key, checked_value(key, value, sums.get(key))) for key, value in rows]
    present = {key for key, _value in rows}
    gone: Rows = [
        (key, DamagedValue(b"", f"the record {key.hex()} is missing; its checksum is there"))
        for key in sums
        if key not in present
    ]
    return sorted(out + gone) if gone else out
