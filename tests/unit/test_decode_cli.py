"""statemeta decode: the fields of a heartbeat, task value or key from hex or raw bytes."""

from __future__ import annotations

import io
import json
import math
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_json_output import strict_loads

from statemeta.cli import main
from statemeta.codec import HbMsg, TaskStatusEntry, encode_hb
from statemeta.json_output import json_text, strict_json
from statemeta.tools.decode import MAX_INPUT

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
    assert json.loads(out) == strict_json(doc["decoded"])
    code, out, _ = _decode(capsys, "hb", str(hex_file))
    assert code == 0
    assert f"vg_id = {doc['decoded']['vg_id']}" in out.splitlines()
    for i, entry in enumerate(doc["decoded"]["entries"]):
        assert f"entries[{i}].stream_id = 0x{entry['stream_id']:016x}" in out.splitlines()
        assert f"entries[{i}].task_id = 0x{entry['task_id']:08x}" in out.splitlines()
        assert f"entries[{i}].checkpoint_trans_id = {entry['checkpoint_trans_id']}" in out
    raw_file = tmp_path / "hb.bin"
    raw_file.write_bytes(bytes.fromhex(doc["hex"]))
    assert (
        _decode(capsys, "hb", str(raw_file), "--json")[1]
        == json_text(doc["decoded"]) + "\n"
    )


def test_task_and_key_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for layout, name in (("task", "task_value_fill_history.json"), ("key", "task_key.json")):
        doc = _vector(name)
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(doc["hex"].encode())))
        code, out, _ = _decode(capsys, layout, "-", "--json")
        assert code == 0
        assert json.loads(out) == strict_json(doc["decoded"])


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


def test_odd_hex_exits_1_and_a_missing_file_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "odd.hex"
    odd.write_text("abc")
    code, _, err = _decode(capsys, "key", str(odd))
    assert code == 1
    assert "in field 'input'" in err and "odd number of hex digits" in err
    with pytest.raises(SystemExit) as exited:
        main(["decode", "key", str(tmp_path / "missing")])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing' is not an existing file" in err


def test_options_go_before_or_after_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``decode hb --json FILE`` was refused ("unrecognized arguments") while ``decode hb FILE
    --json`` worked."""
    doc = _vector("heartbeat_1.json")
    path = tmp_path / "hb.hex"
    path.write_text(doc["hex"])
    for argv in (["hb", "--json", str(path)], ["--json", "hb", path], ["hb", path, "--json"]):
        code, out, err = _decode(capsys, *map(str, argv))
        assert (code, err) == (0, ""), argv
        assert json.loads(out) == strict_json(doc["decoded"]), argv


def test_json_output_is_rfc_8259_for_non_finite_doubles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = TaskStatusEntry(
        stream_id=1,
        task_id=2,
        input_q_used=math.nan,
        input_rate=math.inf,
        sink_quota=-math.inf,
        sink_data_size=-0.0,
    )
    path = tmp_path / "hb.bin"
    path.write_bytes(encode_hb(HbMsg(vg_id=2, entries=(entry,))))
    code, out, _ = _decode(capsys, "hb", str(path), "--json")
    assert code == 0
    (fields,) = strict_loads(out)["entries"]
    assert (fields["input_q_used"], fields["input_rate"], fields["sink_quota"]) == (
        "NaN",
        "Infinity",
        "-Infinity",
    )
    assert math.copysign(1.0, fields["sink_data_size"]) == -1.0
    code, out, _ = _decode(capsys, "hb", str(path))
    assert "entries[0].input_q_used = nan" in out.splitlines()


def test_input_past_the_limit_is_refused_without_reading_it_all() -> None:
    """``decode task /dev/zero`` read until memory ran out; here the child may map at most
    1 GiB, so an unbounded read fails with MemoryError instead of eating the machine."""
    limit = 1 << 30
    done = subprocess.run(
        [sys.executable, "-m", "statemeta", "decode", "task", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        f"statemeta decode task: cannot decode in field 'input': larger than {MAX_INPUT} bytes,"
        " the most decode reads"
    ]


def test_input_at_the_limit_is_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("statemeta.tools.decode.MAX_INPUT", 16)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"0000000000000001" * 2)))
    code, _, err = _decode(capsys, "key", "-")
    assert code == 1 and "larger than 16 bytes" in err
    key = _vector("task_key.json")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(bytes.fromhex(key["hex"]))))
    code, out, err = _decode(capsys, "key", "-", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == strict_json(key["decoded"])


def test_ids_print_as_inspect_prints_them_and_json_keeps_int64_exact(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream id in hex of its 64 bits, a task id of its 32 (a negative key shows its
    two's complement); in JSON an id past 2^53 is its decimal string, which a reader using
    doubles (jq, JavaScript) cannot round."""
    key = _vector("task_key_negative.json")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(key["hex"].encode())))
    code, out, _ = _decode(capsys, "key", "-")
    assert code == 0
    assert out.splitlines() == ["stream_id = 0xfffffffffffffffe", "task_id = 0xffffffff"]
    hb = _vector("heartbeat_1.json")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(hb["hex"].encode())))
    code, out, _ = _decode(capsys, "hb", "-", "--json")
    entry = json.loads(out)["entries"][0]
    assert entry["stream_id"] == str(hb["decoded"]["entries"][0]["stream_id"])
    assert entry["task_id"] == hb["decoded"]["entries"][0]["task_id"]
