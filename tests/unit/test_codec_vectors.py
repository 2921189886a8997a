"""spec/vectors/ are current and every committed vector decodes to its fields and back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from statemeta.codec import (
    decode_checkpoint_info,
    decode_hb,
    decode_task,
    decode_task_id,
    decode_task_key,
    encode_hb,
    encode_task,
    encode_task_key,
)
from statemeta.codec.vectors import DEFAULT_DIR, render, to_jsonable, vectors

COMMITTED = sorted(DEFAULT_DIR.glob("*.json"))


def test_committed_vectors_are_what_the_generator_writes() -> None:
    generated = vectors()
    assert {p.stem for p in COMMITTED} == set(generated)
    for path in COMMITTED:
        assert path.read_text() == render(generated[path.stem]), f"regenerate {path.name}"


def _decoded_and_reencoded(layout: str, data: bytes) -> tuple[Any, bytes | None]:
    if layout == "task_key":
        stream_id, task_id = decode_task_key(data)
        fields = {"stream_id": stream_id, "task_id": task_id}
        return fields, encode_task_key(stream_id, task_id)
    if layout == "task_value":
        task = decode_task(data)
        return to_jsonable(task), encode_task(task)
    if layout == "heartbeat":
        msg = decode_hb(data)
        return to_jsonable(msg), encode_hb(msg)
    if layout == "checkpoint_info":
        ver, checkpoint_id, checkpoint_ver = decode_checkpoint_info(data)
        return {
            "msg_ver": ver,
            "checkpoint_id": checkpoint_id,
            "checkpoint_ver": checkpoint_ver,
        }, None
    assert layout == "task_id"
    task_id = decode_task_id(data)
    return {"stream_id": task_id.stream_id, "task_id": task_id.task_id}, None


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_vector_decodes_to_its_fields_and_re_encodes_to_its_bytes(path: Path) -> None:
    vector = json.loads(path.read_text())
    data = bytes.fromhex(vector["hex"])
    fields, reencoded = _decoded_and_reencoded(vector["layout"], data)
    assert fields == vector["decoded"]
    if reencoded is not None:
        assert reencoded == data
