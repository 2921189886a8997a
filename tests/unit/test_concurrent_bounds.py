"""``check --concurrent K`` is bounded and never deadlocks on full pipes (issue 34, finding 9):
K past MAX_CLIENTS is the one-line exit 2; the maximum K runs against the reference server;
requests written while an implementation is blocked writing its responses do not hang the
harness (each side's pipe full: before, both sides blocked for ever)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from statemeta.cli import main
from statemeta.errors import MisuseError
from statemeta.harness.concurrent_run import MAX_CLIENTS, OverProtocol, run_concurrent
from statemeta.harness.subprocess_adapter import SubprocessAdapter

SERVE = f"{sys.executable} -m statemeta.serve --concurrent"
PADDING = 4_000
"""Bytes of whitespace after each response of the blocking implementation: a few responses
fill the pipe to the harness."""
REQUESTS = 2_000
"""Requests sent before any response is read: more than the pipe to the implementation holds."""

# Answers each request in turn, one padded line each: it stops reading while its stdout is full.
_BLOCKING = """\
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "hello":
        result = {"protocol": 1, "name": "blocking", "levels": [2], "concurrent": True}
    elif request["op"] in ("start", "stop"):
        result = None
    else:
        result = {"ok": True}
    sys.stdout.write(json.dumps({"id": request["id"], "result": result}) + PADDING + "\\n")
    sys.stdout.flush()
"""

_SENDS_THEN_READS = """\
import sys
from statemeta.harness.operations import Op
from statemeta.harness.subprocess_adapter import SubprocessAdapter
with SubprocessAdapter(sys.argv[1], timeout=20) as sut:
    sut.start(2)
    ids = [sut.send(Op.of("latest_checkpoint_id"), client) for client in range({requests})]
    got = sorted(sut.receive()[0] for _ in ids)
    assert got == sorted(ids)
print("ok")
"""


def test_more_clients_than_the_maximum_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", "--sut", SERVE, "--concurrent", str(MAX_CLIENTS + 1)])
    assert exited.value.code == 2
    assert str(MAX_CLIENTS) in capsys.readouterr().err
    with pytest.raises(MisuseError, match="clients"):
        run_concurrent(OverProtocol(SubprocessAdapter(SERVE)), clients=MAX_CLIENTS + 1)


def test_the_maximum_number_of_clients_runs_against_the_reference() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "statemeta", "check", "--sut", SERVE, "--concurrent",
         str(MAX_CLIENTS), "--examples", "1", "--steps", "1", "--seed", "1"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "linearizable: 1 histories" in run.stdout


def test_requests_are_written_while_responses_are_read(tmp_path: Path) -> None:
    sut = tmp_path / "blocking.py"
    sut.write_text(_BLOCKING.replace("PADDING", repr(" " * PADDING)))
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SENDS_THEN_READS.format(requests=REQUESTS)),
         f"{sys.executable} {sut}"],
        capture_output=True, text=True, timeout=30,
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]

