"""Random and mutated bytes fed to every decoder: only the documented errors come out.

Bytes that do decode re-encode to canonical bytes that round-trip (not always to the same
bytes: a block's unread tail is skipped, as tEndDecode does).

The CI run is bounded; a local campaign sets STATEMETA_CODEC_FUZZ_EXAMPLES (e.g. 100000).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from statemeta.codec import (
    decode_checkpoint_info,
    decode_hb,
    decode_task,
    decode_task_id,
    decode_task_key,
    encode_hb,
    encode_task,
)
from statemeta.errors import DecodeError, IncompatibleVersionError, KeyLengthError
from tests.properties.codec_strategies import hb_msgs, stream_tasks

VECTORS = Path(__file__).resolve().parents[2] / "spec" / "vectors"
SEEDS = [bytes.fromhex(json.loads(p.read_text())["hex"]) for p in sorted(VECTORS.glob("*.json"))]
DOCUMENTED = (DecodeError, IncompatibleVersionError, KeyLengthError)
DECODERS: list[Callable[[bytes], Any]] = [
    decode_task_key,
    decode_task,
    decode_checkpoint_info,
    decode_task_id,
    decode_hb,
]
HUGE = [b"\xff\xff\xff\xff", b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\xff\xff\xff\x0f"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid encoding (committed vector or generated record) with a few mutations."""
    seed = draw(
        st.one_of(
            st.sampled_from(SEEDS),
            stream_tasks.map(encode_task),
            hb_msgs.map(encode_hb),
        )
    )
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "huge", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "huge":
            data[at : at + 4] = draw(st.sampled_from(HUGE))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            del data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


@settings(max_examples=int(os.environ.get("STATEMETA_CODEC_FUZZ_EXAMPLES", "300")))
@given(st.one_of(st.binary(max_size=64), mutated()))
def test_decoders_raise_only_documented_errors(data: bytes) -> None:
    for decode in DECODERS:
        try:
            decoded = decode(data)
        except DOCUMENTED as e:
            assert str(e)
        else:
            if decode is decode_task:
                canonical = encode_task(decoded)
                assert encode_task(decode_task(canonical)) == canonical
            if decode is decode_hb:
                canonical = encode_hb(decoded)  # bytes, not records: a mutated double may be NaN
                assert encode_hb(decode_hb(canonical)) == canonical
