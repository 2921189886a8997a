"""statemeta check and replay on hostile input: a clear line and an exit code, never a traceback.

- a trace file with a bad field: replay exits 2 with one line naming the file and the field;
- a trace is untrusted: replay without --sut runs nothing of it, it prints the command the trace
  records and the line that would run it (exit 2);
- an implementation answering JSON nested too deep, or flooding its stderr, fails the run
  (exit 1) with a trace that holds a bounded report.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from test_cli_check import _broken

from statemeta.cli import main
from statemeta.harness.operations import Op
from statemeta.harness.subprocess_adapter import STDERR_TAIL_BYTES
from statemeta.harness.trace import Failure, Trace, TraceStep, read_trace, write_trace
from statemeta.harness.wire import MAX_JSON_DEPTH

SERVE = f"{sys.executable} -m statemeta.serve"


def _good_trace() -> dict[str, object]:
    step = TraceStep(Op.of("register", task="s1"), {"ok": True}, {"ok": False})
    return Trace(2, SERVE, (step,), Failure("result", "differ"), seed=7).to_json()


BAD_FIELDS = {
    "sut empty": ("sut", ""),
    "sut a number": ("sut", 5),
    "seed abc": ("seed", "abc"),
    "level true": ("level", True),
}


@pytest.mark.parametrize("name", list(BAD_FIELDS))
def test_replay_of_a_trace_with_a_bad_field_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    field, value = BAD_FIELDS[name]
    trace = _good_trace()
    trace[field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(trace))
    assert main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(
        f"statemeta replay: could not run: trace {path}, field {field!r}: expected "
    )


def test_replay_without_sut_runs_nothing_the_trace_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    planted = f"{sys.executable} -c \"open('{marker}', 'w')\""
    trace = _good_trace()
    trace["sut"] = planted
    path = tmp_path / "bug report.json"
    path.write_text(json.dumps(trace))
    assert main(["replay", str(path), "--semantics", "seed"]) == 2
    assert not marker.exists()
    captured = capsys.readouterr()
    assert captured.out == ""
    said, line = captured.err.splitlines()
    assert said.startswith("not run: replay runs only a command given with --sut")
    assert said.endswith(f"records the command: {planted}")
    assert line == f"if you trust it, run: statemeta replay {shlex.quote(str(path))} --sut " + (
        f"{shlex.quote(planted)} --semantics seed"
    )
    trace["sut"] = "me\x1b]0;title\x07"  # nor can it drive the terminal
    path.write_text(json.dumps(trace))
    assert main(["replay", str(path)]) == 2
    assert "\x1b" not in capsys.readouterr().err


def test_replay_of_a_deeply_nested_trace_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"format": 1, "level": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["replay", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"statemeta replay: could not run: trace {path}: is not JSON within bounds"
    )


def _check_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> Trace:
    out = tmp_path / "trace.json"
    run = ["check", "--sut", command, "--level", "1", "--examples", "5", "--steps", "5"]
    code = main([*run, "--seed", "0", "--timeout", "30", "--trace-out", str(out)])
    text = capsys.readouterr().out
    assert code == 1, text
    assert f"trace written to {out}" in text
    return read_trace(out)


def test_a_deeply_nested_response_fails_the_run_with_a_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    misbehaviour = (
        'if request["op"] == "view": '
        f"print('{{\"id\": %d, \"result\": {deep}}}' % request['id'], flush=True); continue"
    )
    trace = _check_fails(capsys, tmp_path, _broken(tmp_path, misbehaviour))
    assert trace.failure.kind == "sut"
    assert "on request view" in trace.failure.detail
    assert f"nested deeper than {MAX_JSON_DEPTH}" in trace.failure.detail


def test_a_stderr_flood_fails_the_run_with_a_bounded_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    flood = 16 * 1024 * 1024
    misbehaviour = (
        'if request["op"] == "view": '
        f'sys.stderr.write("e" * {flood} + "\\n" + "dying\\n"); sys.stderr.flush(); sys.exit(9)'
    )
    trace = _check_fails(capsys, tmp_path, _broken(tmp_path, misbehaviour))
    assert "exited with status 9" in trace.failure.detail
    assert trace.failure.detail.endswith("\ndying")
    written = flood + len("\ndying\n")
    note = f"[{written - STDERR_TAIL_BYTES} bytes of stderr before these not shown]"
    assert note in trace.failure.detail
    assert (tmp_path / "trace.json").stat().st_size < STDERR_TAIL_BYTES + 10_000


def test_a_written_trace_can_be_read_back(tmp_path: Path) -> None:
    """The good trace the bad ones above are made from is one replay accepts."""
    path = tmp_path / "good.json"
    path.write_text(json.dumps(_good_trace()))
    write_trace(read_trace(path), tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == _good_trace()
