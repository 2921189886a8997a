"""Protocol 2's per-operation result declarations (``results``) and set-valued keys (``sets``).

The must-shows: an implementation that withholds a result it declares not given, and sends the
start round's sets in another order than the reference, conforms at levels 2 and 3, and the
report names what was not compared; without the declaration the same answers diverge; a
declaration that names no operation, no form or a key that is no set is refused.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from statemeta.cli import main
from statemeta.errors import MisuseError
from statemeta.harness.observation import Observation
from statemeta.harness.operations import Op

SERVE = f"{sys.executable} -m statemeta.serve"
WITHHOLDS = (
    f"{SERVE} --results report_launch=outcome,resume=outcome,load_all=outcome,start_all=none"
    " --sets start_round.ready,start_round.failed"
)
RUN = ["--examples", "20", "--steps", "20", "--seed", "0"]


@pytest.mark.parametrize("level", [2, 3])
def test_withheld_results_and_sorted_sets_conform_and_the_report_says_so(
    capsys: pytest.CaptureFixture[str], level: int
) -> None:
    code = main(["check", "--sut", WITHHOLDS, "--level", str(level), *RUN, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    report = json.loads(captured.out)
    assert report["results"] == {
        "resume": "outcome", "load_all": "outcome", "start_all": "none",
        "report_launch": "outcome",
    }  # fmt: skip
    assert report["sets"] == ["start_round.failed", "start_round.ready"]
    assert "results not compared in full (the implementation does not give them): resume " \
        "(its outcome only)" in captured.err
    assert "start_all (only its heartbeats)" in captured.err
    assert "compared as sets (their order is not compared): start_round.failed" in captured.err


_UNDECLARED = '''
import sys
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.serve import Server

class Undeclared(Server):
    """The server of WITHHOLDS whose hello does not declare what it withholds."""

    def _answer(self, op, args):
        answer = super()._answer(op, args)
        if op == "hello":
            answer = {k: v for k, v in answer.items() if k not in ("results", "sets")}
        return answer

declares = {"results": {"report_launch": "outcome"}} if sys.argv[1] == "results" else {
    "sets": ["start_round.ready", "start_round.failed"]}
Undeclared(ReferenceAdapter(check_invariants=False), declares).serve(sys.stdin, sys.stdout)
'''


@pytest.mark.parametrize(("declared", "at"), [("results", "result"), ("sets", "view.start_round")])
def test_the_same_answers_without_their_declaration_diverge(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, declared: str, at: str
) -> None:
    script = tmp_path / "undeclared.py"
    script.write_text(_UNDECLARED, encoding="utf-8")
    sut = f"{sys.executable} {script} {declared}"
    trace = tmp_path / "t.json"
    code = main(["check", "--sut", sut, "--level", "2", *RUN, "--trace-out", str(trace)])
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err
    failure = json.loads(trace.read_text(encoding="utf-8"))["failure"]
    assert failure["at"].startswith(at), failure


def test_each_form_keeps_what_it_says() -> None:
    seen = Observation.of_hello(
        {"protocol": 2, "results": {"start_all": "none", "load_all": "outcome",
                                     "commit": "full"}}, 3,
    )
    start_all, load_all, commit = Op.of("start_all"), Op.of("load_all"), Op.of("commit")
    beats = {"ok": [[[16, 1], "started"]], "heartbeats": ["00"]}
    assert seen.result_of(start_all, beats) == {"heartbeats": ["00"]}
    assert seen.result_of(start_all, {"error": "StoreFault"}) == {}
    assert seen.result_of(load_all, {"ok": {"loaded": []}}) == {"ok": None}
    assert seen.result_of(load_all, {"error": "StoreFault"}) == {"error": "StoreFault"}
    assert seen.result_of(commit, {"ok": None}) == {"ok": None}
    assert seen.results == (("load_all", "outcome"), ("start_all", "none"))
    assert seen.results_not_given == {"load_all": "outcome", "start_all": "none"}
    assert not seen.full
    level_2 = Observation.of_hello({"protocol": 2, "results": {"close_reopen": "none"}}, 2)
    assert level_2.results_not_given == {}  # close_reopen is a level-3 operation


def test_the_sets_are_sorted_on_both_sides_and_nothing_else_is() -> None:
    seen = Observation.of_hello({"protocol": 2, "sets": ["start_round.failed"]}, 2)
    view = {"level": 2, "ids": [[16, 256], [16, 1]], "tasks": [],
            "start_round": {"ready": [[16, 256], [16, 1]], "failed": [[16, 256], [16, 1]]}}
    projected = seen.view_of(view)
    assert projected["start_round"] == {"ready": [[16, 256], [16, 1]],
                                        "failed": [[16, 1], [16, 256]]}
    assert projected["ids"] == view["ids"]
    assert seen.view_of(projected) == projected


@pytest.mark.parametrize(
    ("hello", "message"),
    [
        ({"results": {"nope": "outcome"}}, "no operation 'nope'"),
        ({"results": {"register": "bool"}}, "results['register'] 'bool'"),
        ({"results": ["register"]}, "an object of operation -> form"),
        ({"sets": ["ids"]}, "only these keys are sets"),
        ({"sets": "start_round.ready"}, "a list of view keys"),
    ],
)
def test_a_wrong_declaration_is_refused(hello: dict[str, object], message: str) -> None:
    with pytest.raises(MisuseError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Observation.of_hello({"protocol": 2, **hello}, 2)


def test_protocol_1_and_no_declaration_compare_every_result_in_full() -> None:
    for hello in ({"protocol": 1, "results": {"register": "none"}}, {"protocol": 2}):
        seen = Observation.of_hello(hello, 3)
        assert seen.full and seen.results == () and seen.sets == frozenset()
