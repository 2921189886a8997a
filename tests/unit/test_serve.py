"""python -m statemeta.serve: the reference behind the protocol, its error codes, the doc."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import statemeta.harness.serve as harness_serve
import statemeta.serve as entry
from statemeta.harness.operations import TASK_POOL, Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.serve import ERROR_CODES, PROTOCOL_DOC, Server, refresh_protocol_doc
from statemeta.harness.subprocess_adapter import SubprocessAdapter, pool_json
from statemeta.harness.variants import VARIANTS

SESSION = (
    Op.of("register", task="s1"),
    Op.of("register", task="f1"),
    Op.of("register", task="h1"),
    Op.of("handle_event", task="s1", event="pause"),
    Op.of("update_stage_role", stage=1, is_leader=True),
    Op.of("advance_clock", ms=5_000),
    Op.of("fail_next", op="commit"),
    Op.of("unregister", task="h1"),
    Op.of("crash_reopen"),
    Op.of("stop_all"),
)


def _request(request_id: int, op: str, **args: object) -> str:
    return json.dumps({"id": request_id, "op": op, "args": args})


def _started(level: int) -> Server:
    server = Server(ReferenceAdapter(check_invariants=False))
    assert server.respond(_request(1, "start", level=level, pool=pool_json())) == {
        "id": 1,
        "result": None,
    }
    return server


def test_the_committed_protocol_doc_is_current() -> None:
    assert not refresh_protocol_doc(PROTOCOL_DOC, write=False), (
        "run: python -m statemeta.serve --write-doc"
    )


def test_the_served_reference_answers_as_the_reference_does() -> None:
    reference = ReferenceAdapter()
    reference.start(3)
    with SubprocessAdapter(f"{sys.executable} -m statemeta.serve") as served:
        assert served.hello() == {
            "protocol": 2,
            "name": "statemeta-reference",
            "levels": [1, 2, 3],
            "semantics": "intended",
        }
        served.start(3)
        for op in SESSION:
            assert served.call(op) == reference.call(op), op
            assert served.view() == reference.view(), op
    reference.stop()


def test_a_variant_is_served_by_name() -> None:
    name = sorted(VARIANTS)[0]
    with SubprocessAdapter(f"{sys.executable} -m statemeta.serve --variant {name}") as served:
        assert served.hello()["name"] == f"statemeta-reference[{name}]"


def test_an_unknown_variant_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "statemeta.serve", "--variant", "no_such_variant"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


def test_serve_answers_every_line_until_stdin_ends() -> None:
    lines = [_request(1, "hello", protocol=1), "", "   ", _request(2, "view")]
    out = io.StringIO()
    Server(ReferenceAdapter()).serve(lines, out)
    responses = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["id"] for r in responses] == [1, 2]
    assert responses[1]["error"]["code"] == "not_started"


REFUSALS: dict[str, tuple[int, str]] = {
    "not JSON": (0, "{"),
    "not an object": (0, "[1, 2]"),
    "no id": (0, json.dumps({"op": "view", "args": {}})),
    "args not an object": (2, json.dumps({"id": 5, "op": "view", "args": [1]})),
    "another protocol": (0, _request(3, "hello", protocol=3)),
    "level 4": (0, _request(4, "start", level=4)),
    "view before start": (0, _request(5, "view")),
    "operation before start": (0, _request(6, "register", task="s1")),
    "no such operation": (2, _request(7, "explode")),
    "an operation of another level": (2, _request(8, "handle", task="s1", event="pause")),
    "a level-3 operation at level 2": (2, _request(9, "crash_reopen")),
    "a slot not in the pool": (2, _request(10, "register", task="s9")),
    "a missing argument": (2, _request(11, "register")),
    "a value outside its domain": (2, _request(12, "advance_clock", ms=7)),
}
EXPECTED_CODE = {
    "not JSON": "bad_request",
    "not an object": "bad_request",
    "no id": "bad_request",
    "args not an object": "bad_request",
    "another protocol": "unsupported_protocol",
    "level 4": "unsupported_level",
    "view before start": "not_started",
    "operation before start": "not_started",
    "no such operation": "unknown_op",
    "an operation of another level": "unknown_op",
    "a level-3 operation at level 2": "unknown_op",
    "a slot not in the pool": "bad_args",
    "a missing argument": "bad_args",
    "a value outside its domain": "bad_args",
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_bad_request_is_refused_with_its_code(case: str) -> None:
    level, line = REFUSALS[case]
    server = _started(level) if level else Server(ReferenceAdapter())
    response = server.respond(line)
    assert set(response) == {"id", "error"}
    assert response["error"]["code"] == EXPECTED_CODE[case]
    assert response["error"]["message"]
    # the server goes on
    assert "error" not in server.respond(_request(99, "hello", protocol=1))


def test_an_unexpected_exception_is_answered_internal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = _started(2)

    def explode(op: Op) -> dict[str, object]:
        raise RuntimeError(f"bug while running {op!r}")

    monkeypatch.setattr(server.adapter, "call", explode)
    response = server.respond(_request(2, "commit"))
    assert response == {
        "id": 2,
        "error": {"code": "internal", "message": "RuntimeError: bug while running commit()"},
    }
    assert "Traceback" in capsys.readouterr().err


def test_every_error_code_is_exercised() -> None:
    """The reference never answers ``fault`` (no undefined behaviour in it): the TDengine
    server does (test_tdengine.py), and a fake implementation (test_hostile_answers.py)."""
    assert set(EXPECTED_CODE.values()) | {"internal", "fault"} == set(ERROR_CODES)


def test_stop_ends_the_instance() -> None:
    server = _started(1)
    assert server.respond(_request(2, "view"))["result"]["tasks"][0]["slot"] == TASK_POOL[0].name
    assert server.respond(_request(3, "stop")) == {"id": 3, "result": None}
    assert server.respond(_request(4, "view"))["error"]["code"] == "not_started"


def test_the_entry_module_runs_and_re_exports_the_harness_server() -> None:
    """``python -m statemeta.serve`` and ``from statemeta.serve import X`` stay public."""
    assert entry.__all__ == harness_serve.__all__
    assert all(getattr(entry, n) is getattr(harness_serve, n) for n in harness_serve.__all__)


def test_write_doc_without_the_document_refuses_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An installed wheel has no docs/: --write-doc says so and takes --doc FILE."""
    monkeypatch.setattr(harness_serve, "PROTOCOL_DOC", tmp_path / "docs" / "harness-protocol.md")
    with pytest.raises(SystemExit) as exited:
        harness_serve.main(["--write-doc"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--doc FILE" in err
    copy = tmp_path / "protocol.md"
    copy.write_text(PROTOCOL_DOC.read_text(encoding="utf-8"), encoding="utf-8")
    assert harness_serve.main(["--write-doc", "--doc", str(copy)]) == 0
    assert capsys.readouterr().out == f"up to date: {copy}\n"


def test_the_usage_line_fits_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        harness_serve.main(["--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert max(len(line) for line in usage.splitlines()) <= 100
