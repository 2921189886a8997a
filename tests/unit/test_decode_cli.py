"""statemeta decode: the fields of a heartbeat, task value or key from hex or raw bytes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from statemeta.cli import main

VECTORS = Path(__file__).resolve().parents[2] / "spec" / "vectors"
HEARTBEATS = sorted(VECTORS.glob("heartbeat_*.json"))


def _vector(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((VECTORS / name).read_text())
    return doc


def _decode(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["decode", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_heartbeat_vector_is_there() -> None:
    assert [p.name for p in HEARTBEATS] == [
        "heartbeat_0.json",
        "heartbeat_1.json",
        "heartbeat_3.json",
    ]


@pytest.mark.parametrize("vector", HEARTBEATS, ids=lambda p: p.stem)
def test_decode_hb_prints_each_vector_fields(
    vector: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(vector.read_text())
    hex_file = tmp_path / "hb.hex"
    hex_file.write_text(
        " ".join(doc["hex"][i : i + 8] for i in range(0, len(doc["hex"]), 8)) + "\n"
    )
    code, out, _ = _decode(capsys, "hb", str(hex_file), "--json")
    assert code == 0
    assert json.loads(out) == doc["decoded"]
    code, out, _ = _decode(capsys, "hb", str(hex_file))
    assert code == 0
    assert f"vg_id = {doc['decoded']['vg_id']}" in out.splitlines()
    for i, entry in enumerate(doc["decoded"]["entries"]):
        assert f"entries[{i}].stream_id = {entry['stream_id']}" in out.splitlines()
        assert f"entries[{i}].checkpoint_trans_id = {entry['checkpoint_trans_id']}" in out
    raw_file = tmp_path / "hb.bin"
    raw_file.write_bytes(bytes.fromhex(doc["hex"]))
    assert (
        _decode(capsys, "hb", str(raw_file), "--json")[1]
        == json.dumps(doc["decoded"], indent=2) + "\n"
    )


def test_task_and_key_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for layout, name in (("task", "task_value_fill_history.json"), ("key", "task_key.json")):
        doc = _vector(name)
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(doc["hex"].encode())))
        code, out, _ = _decode(capsys, layout, "-", "--json")
        assert code == 0
        assert json.loads(out) == doc["decoded"]


@pytest.mark.parametrize(
    ("layout", "hex_text", "field", "offset"),
    [
        # numOfTasks = -1 in the one-entry heartbeat
        (
            "hb",
            _vector("heartbeat_1.json")["hex"][:16]
            + "ffffffff"
            + _vector("heartbeat_1.json")["hex"][24:],
            "entries",
            8,
        ),
        ("key", "0000000000000001" + "00000080" + "00000000", "task_id", 8),
    ],
)
def test_a_corrupt_input_names_the_field_and_offset(
    layout: str,
    hex_text: str,
    field: str,
    offset: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "bad.hex"
    path.write_text(hex_text)
    code, out, err = _decode(capsys, layout, str(path))
    assert (code, out) == (1, "")
    assert f"in field '{field}' at offset {offset}" in err


def test_odd_hex_and_a_missing_file_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "odd.hex"
    odd.write_text("abc")
    code, _, err = _decode(capsys, "key", str(odd))
    assert code == 1
    assert "in field 'input'" in err and "odd number of hex digits" in err
    code, _, err = _decode(capsys, "key", str(tmp_path / "missing"))
    assert code == 1
    assert "missing" in err
