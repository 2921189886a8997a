"""Endpoints: SEp, SEpSet (tEncodeSEpSet, tmsg.c at the seed) and upstream SStreamChildEpInfo.

An SEpSet is always 667 bytes: I8 inUse, I8 numOfEps, then TSDB_MAX_REPLICA = 5 endpoints of
U16 port + CStrWithLen(fqdn, 128). That binary is 129 bytes because SEp is
``{char fqdn[128]; uint16_t port}``: its last byte is the low byte of ``port``.

Only canonical bytes decode: numOfEps in 0..5, the fqdn NUL-terminated with zero padding, the
129th byte equal to the port's low byte, and the unused endpoint slots all zero.
"""

from __future__ import annotations

from typing import Any

import attrs
import construct as c

from statemeta.codec.fields import c_string, instance_of, int_field, to_tuple, tuple_of
from statemeta.codec.primitives import (
    I8,
    I32,
    I64,
    U16,
    Adapter,
    CStrWithLen,
    FixedRun,
    LayoutError,
    Record,
)
from statemeta.errors import InvalidRecordError

TSDB_MAX_REPLICA = 5
TSDB_FQDN_LEN = 128


def _fqdn_fits(inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if isinstance(value, str) and len(value.encode()) >= TSDB_FQDN_LEN:
        raise InvalidRecordError(
            f"Ep.fqdn = {value!r}: at most {TSDB_FQDN_LEN - 1} UTF-8 bytes (the NUL is the last)"
        )


@attrs.frozen
class Ep:
    """SEp: one endpoint."""

    fqdn: str = attrs.field(default="", validator=[c_string, _fqdn_fits])
    port: int = int_field(16, signed=False)


EMPTY_EP = Ep()


@attrs.frozen
class EpSet:
    """SEpSet: up to 5 endpoints and the index of the one in use."""

    in_use: int = int_field(8)
    eps: tuple[Ep, ...] = attrs.field(
        default=(), converter=to_tuple, validator=tuple_of(Ep, max_len=TSDB_MAX_REPLICA)
    )


class _Fqdn(Adapter):
    """The 129-byte fqdn binary: fqdn[128] (NUL-padded) then the port's low byte."""

    def _decode(self, obj: bytes, context: Any, path: str) -> str:
        if obj[TSDB_FQDN_LEN] != context.port & 0xFF:
            raise LayoutError(
                f"fqdn byte 128 is {obj[TSDB_FQDN_LEN]}, not the port's low byte", path=path
            )
        text, nul, padding = obj[:TSDB_FQDN_LEN].partition(b"\0")
        if not nul or padding.strip(b"\0"):
            raise LayoutError("fqdn is not NUL-terminated with zero padding", path=path)
        try:
            return text.decode()
        except UnicodeDecodeError as e:
            raise LayoutError(f"fqdn is not UTF-8: {e}", path=path) from e

    def _encode(self, obj: str, context: Any, path: str) -> bytes:
        return obj.encode().ljust(TSDB_FQDN_LEN, b"\0") + bytes([context.port & 0xFF])


EP = Record(Ep, c.Struct(FixedRun("port" / U16, "fqdn" / _Fqdn(CStrWithLen(TSDB_FQDN_LEN)))))


class _EpSet(Adapter):
    """numOfEps used endpoints, then zero slots up to TSDB_MAX_REPLICA."""

    reads_context = False

    def _decode(self, obj: Any, context: Any, path: str) -> EpSet:
        n = obj.num_of_eps
        if not 0 <= n <= TSDB_MAX_REPLICA:
            raise LayoutError(f"numOfEps {n} is not in 0..{TSDB_MAX_REPLICA}", path=path)
        if any(ep != EMPTY_EP for ep in obj.slots[n:]):
            raise LayoutError(f"an endpoint slot past numOfEps {n} is not zero", path=path)
        return EpSet(in_use=obj.in_use, eps=tuple(obj.slots[:n]))

    def _encode(self, obj: EpSet, context: Any, path: str) -> dict[str, Any]:
        padding = (EMPTY_EP,) * (TSDB_MAX_REPLICA - len(obj.eps))
        return {"in_use": obj.in_use, "num_of_eps": len(obj.eps), "slots": obj.eps + padding}


EP_SET = _EpSet(
    c.Struct("in_use" / I8, "num_of_eps" / I8, "slots" / c.Array(TSDB_MAX_REPLICA, EP))
)
EP_SET_SIZE: int = EP_SET.sizeof()


@attrs.frozen
class EpInfo:
    """SStreamChildEpInfo: one upstream task of a task."""

    task_id: int = int_field(32)
    node_id: int = int_field(32)
    child_id: int = int_field(32)
    ep_set: EpSet = attrs.field(factory=EpSet, validator=instance_of(EpSet))
    stage: int = int_field(64)


EP_INFO = Record(
    EpInfo,
    c.Struct(
        FixedRun("task_id" / I32, "node_id" / I32, "child_id" / I32),
        "ep_set" / EP_SET,
        FixedRun("stage" / I64),
    ),
)
EP_INFO_SIZE: int = EP_INFO.sizeof()
