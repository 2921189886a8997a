"""Calls that block in the seed's C (statemeta.harness.blocking, docs/harness-protocol.md "Calls
that block"): an implementation that declares ``blocks`` answers ``{"blocked": true}`` where the
seed waits, and is compared with where the reference says the seed waits.

The must-shows: the reference served with ``--blocks`` (it answers blocked exactly where the
table says the seed waits) conforms; an implementation blocked where the seed does not wait
diverges at the result; the same blocked answers without the declaration diverge; a declaration
of an operation that never blocks is refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from statemeta.cli import main
from statemeta.errors import MisuseError
from statemeta.harness.blocking import BLOCKING, blocked_form
from statemeta.harness.observation import Observation
from statemeta.harness.operations import Op
from statemeta.harness.wire import is_op_result

SERVE = f"{sys.executable} -m statemeta.serve --semantics seed"
BLOCKS = "--blocks unregister,notify_close"
RUN = ["--semantics", "seed", "--examples", "10", "--steps", "15", "--seed", "3"]


def test_the_reference_answering_blocked_where_the_seed_waits_conforms(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "--sut", f"{SERVE} {BLOCKS}", "--level", "2", *RUN, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert json.loads(captured.out)["blocks"] == ["notify_close", "unregister"]
    assert "may answer blocked (compared with where the seed waits): notify_close, " \
        "unregister" in captured.err


_FAKE = '''
import sys
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.serve import Server

class Fake(Server):
    """The reference served with --blocks, broken as argv[1] says: "always" answers every
    unregister blocked (removed ones too), "undeclared" answers blocked where the seed waits
    but does not declare it."""

    def _answer(self, op, args):
        answer = super()._answer(op, args)
        if op == "hello" and sys.argv[1] == "undeclared":
            answer = {k: v for k, v in answer.items() if k != "blocks"}
        if op == "unregister" and sys.argv[1] == "always" and answer.get("ok") != "not_found":
            answer = {"blocked": True}
        return answer

Fake(ReferenceAdapter(check_invariants=False, semantics="seed"),
     {"blocks": ["unregister", "notify_close"]}).serve(sys.stdin, sys.stdout)
'''


@pytest.mark.parametrize("broken", ["always", "undeclared"])
def test_a_blocked_answer_where_the_seed_does_not_wait_or_undeclared_diverges(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, broken: str
) -> None:
    script = tmp_path / "fake.py"
    script.write_text(_FAKE, encoding="utf-8")
    trace = tmp_path / "t.json"
    code = main(["check", "--sut", f"{sys.executable} {script} {broken}", "--level", "2", *RUN,
                 "--trace-out", str(trace)])
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err
    written = json.loads(trace.read_text(encoding="utf-8"))
    assert written["failure"]["kind"] == "result", written["failure"]
    last = written["steps"][-1]
    assert last["op"] in BLOCKING and last["sut"] == {"blocked": True}, last


def test_a_declared_operation_is_compared_as_blocked_or_not() -> None:
    seen = Observation.of_hello(
        {"protocol": 2, "blocks": ["unregister"], "results": {"unregister": "outcome"}}, 2
    )
    unregister, release = Op.of("unregister", task="s1"), Op.of("release", task="s1")
    blocked = {"blocked": True}
    assert seen.result_of(unregister, {"ok": "deferred"}) == blocked  # the seed waits
    assert seen.result_of(unregister, blocked) == blocked
    assert seen.result_of(unregister, {"ok": "removed"}) == {"ok": None}  # it returns
    assert seen.result_of(release, blocked) == blocked  # undeclared: stays, and differs
    assert seen.result_of(release, blocked) != seen.result_of(release, {"ok": None})
    assert not seen.full
    assert blocked_form("notify_close", {"ok": 0}) is None
    assert blocked_form("notify_close", {"ok": 2, "heartbeats": ["00"]}) == {
        "blocked": True, "heartbeats": ["00"]}  # fmt: skip


@pytest.mark.parametrize(
    ("result", "valid"),
    [({"blocked": True}, True), ({"blocked": True, "heartbeats": ["00"]}, True),
     ({"blocked": False}, False), ({"blocked": True, "ok": None}, False),
     ({"blocked": 1}, False)],
)  # fmt: skip
def test_a_blocked_answer_is_an_operation_result(result: object, valid: bool) -> None:
    assert is_op_result(result) is valid


@pytest.mark.parametrize(
    ("blocks", "message"),
    [(["release"], "only these operations block in the seed"), ("unregister", "a list")],
)
def test_a_declaration_of_an_operation_that_does_not_block_is_refused(
    blocks: object, message: str
) -> None:
    with pytest.raises(MisuseError, match=message):
        Observation.of_hello({"protocol": 2, "blocks": blocks}, 2)
    assert set(BLOCKING) == {"unregister", "notify_close"}
