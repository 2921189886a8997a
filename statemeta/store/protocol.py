"""The store protocol: what the meta needs from a transactional, ordered KV store.

It is the shape of tdb as streamMeta.c uses it: named tables with a fixed key length (or
none), one write transaction open at a time that reads its own uncommitted writes, upsert,
delete (a missing key is an error), get, and a cursor in memcmp key order. ``commit`` makes
everything written since ``begin`` durable; ``abort`` and ``close`` throw it away.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from statemeta.errors import DecodeError


class Table(Protocol):
    """One named table (tdb's TTB; an LMDB sub-database)."""

    @property
    def name(self) -> str: ...

    @property
    def key_len(self) -> int | None:
        """Every key has exactly this many bytes; None means any length."""
        ...

    def get(self, key: bytes) -> bytes | None:
        """The value under ``key`` as the open transaction sees it, or None."""
        ...

    def upsert(self, key: bytes, value: bytes) -> None:
        """Insert or replace, inside the open write transaction."""
        ...

    def delete(self, key: bytes) -> None:
        """Delete inside the open write transaction; raises MissingKeyError if absent."""
        ...

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) in memcmp key order, as the open transaction sees it."""
        ...


class Store(Protocol):
    """A file-backed transactional store holding named tables."""

    @property
    def path(self) -> str: ...

    def table(self, name: str, key_len: int | None) -> Table:
        """Open (creating if needed) the table ``name``."""
        ...

    @property
    def in_transaction(self) -> bool: ...

    def begin(self) -> None:
        """Open the write transaction; TransactionError if one is open already."""
        ...

    def commit(self) -> None:
        """Make the open transaction durable and close it."""
        ...

    def abort(self) -> None:
        """Throw the open transaction away (no-op when none is open)."""
        ...

    def close(self) -> None:
        """Abort any open transaction and release the files; idempotent."""
        ...


class DamagedValue(bytes):
    """A committed value whose checksum does not match (or whose record is missing while its
    checksum is there): the bytes as stored, and why. A backend that keeps checksums returns it
    in place of the value, so that a reader reports the record as it reports one that does not
    decode (``check_value``)."""

    reason: str

    def __new__(cls, value: bytes, reason: str) -> DamagedValue:
        damaged = super().__new__(cls, value)
        damaged.reason = reason
        return damaged


def check_value(value: bytes) -> None:
    """Raises DecodeError for a value its backend found damaged (a checksum mismatch)."""
    if isinstance(value, DamagedValue):
        raise DecodeError(value.reason, field="checksum")
