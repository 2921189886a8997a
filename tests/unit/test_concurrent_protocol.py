"""Concurrent clients over the harness protocol: ``serve --concurrent``, ``check --concurrent``,
``replay --concurrent``, and the trace of a concurrent failure."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from statemeta.cli import main
from statemeta.errors import SutError
from statemeta.harness.concurrent_run import (
    DEFAULT_HISTORIES,
    OverProtocol,
    Run,
    check_run,
    failure_trace,
    hunt,
    recheck,
    run_concurrent,
)
from statemeta.harness.facade_target import FacadeAdapter
from statemeta.harness.linearizability import Outcome
from statemeta.harness.locking_variants import LOCKING_VARIANTS
from statemeta.harness.operations import Op
from statemeta.harness.serve import ConcurrentServer
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import Trace, read_trace, write_trace

SERVE = f"{sys.executable} -m statemeta.serve"
RUN = ["--concurrent", "3", "--steps", "20", "--seed", "0"]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_concurrent_server_answers_clients_in_any_order_and_control_in_turn() -> None:
    lines = [
        {"id": 1, "op": "hello", "args": {"protocol": 1}},
        {"id": 2, "op": "start", "args": {"level": 2}},
        {"id": 3, "client": 0, "op": "register", "args": {"task": "s1"}},
        {"id": 4, "client": 1, "op": "acquire", "args": {"task": "s1"}},
        {"id": 5, "op": "view", "args": {}},
    ]
    out = io.StringIO()
    ConcurrentServer(FacadeAdapter()).serve((json.dumps(line) for line in lines), out)
    responses = [json.loads(line) for line in out.getvalue().splitlines()]
    assert responses[0]["result"]["concurrent"] is True
    assert [r["id"] for r in responses[:2]] == [1, 2]
    assert {r["id"] for r in responses[2:4]} == {3, 4}
    assert responses[4]["id"] == 5 and responses[4]["result"]["ids"] == [[16, 1]]


def test_the_served_facade_passes_concurrent_histories() -> None:
    with SubprocessAdapter(f"{SERVE} --concurrent") as sut:
        found = hunt(lambda: OverProtocol(sut), histories=10, level=3, clients=3)
    assert not found.failed and found.runs == 10


CONTENDED_PAIRS = 50_000
"""How many overlapping calls of two clients the locking-variant test watches before it calls a
variant uncaught: about 250 histories' worth (some 200 pairs each), where every variant was
caught within 8,000 pairs (40 histories), idle or beside two CPU hogs; a machine loaded so that
the clients barely overlap makes the test run more histories, not fail."""


def _contended_pairs(run: Run) -> int:
    """Pairs of calls by two clients whose intervals overlap: the chances a race had."""
    done = [o for o in run.history.operations if o.returned is not None]
    return sum(
        1
        for i, a in enumerate(done)
        for b in done[i + 1 :]
        if a.client != b.client and a.invoked < b.returned and b.invoked < a.returned  # type: ignore[operator]
    )


@pytest.mark.parametrize("variant", sorted(LOCKING_VARIANTS))
def test_every_locking_variant_is_caught_over_the_protocol(variant: str) -> None:
    """The budget is measured concurrency, not a count of histories, so that load (which
    serialises the clients) cannot turn the test red: a race needs calls that overlap."""
    chances = 0
    with SubprocessAdapter(f"{SERVE} --concurrent --variant {variant}") as sut:
        for seed in range(10 * DEFAULT_HISTORIES):
            run = run_concurrent(OverProtocol(sut), level=2, seed=seed)
            if check_run(run).outcome is Outcome.NOT_LINEARIZABLE or run.violations:
                break
            chances += _contended_pairs(run)
            assert chances < CONTENDED_PAIRS, f"{variant}: not caught in {seed + 1} histories"
        else:
            pytest.fail(f"{variant}: not caught in {10 * DEFAULT_HISTORIES} histories")
    assert run.errors == ()  # caught by a check, not a crash


def test_send_needs_a_concurrent_implementation() -> None:
    with SubprocessAdapter(SERVE) as sut, pytest.raises(SutError, match="concurrent"):
        sut.send(Op.of("commit"), 0)


def test_check_and_replay_concurrent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "trace.json"
    sut = f"{SERVE} --concurrent --variant register_two_holds"
    code, text = _cli(capsys, "check", "--sut", sut, *RUN, "--trace-out", str(trace))
    assert code == 1, text
    assert "NOT linearizable" in text and "replay" in text
    recorded = read_trace(trace)
    assert recorded.failure.kind == "linearizability" and recorded.history is not None
    assert recorded.steps == ()
    code, text = _cli(capsys, "replay", str(trace), "--concurrent")
    assert code == 1 and "still fails" in text, text
    code, text = _cli(capsys, "check", "--sut", f"{SERVE} --concurrent", *RUN, "--examples", "3")
    assert code == 0 and "linearizable: 3 histories" in text, text


def test_check_concurrent_refuses_an_implementation_that_does_not_declare_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, text = _cli(capsys, "check", "--sut", SERVE, *RUN)
    assert code == 2 and "does not declare concurrent" in text


def test_a_linearizability_trace_round_trips_and_a_sequential_one_has_no_history(
    tmp_path: Path,
) -> None:
    with SubprocessAdapter(f"{SERVE} --concurrent --variant register_two_holds") as sut:
        found = hunt(lambda: OverProtocol(sut), level=2)
    assert found.run is not None
    trace = failure_trace(found.run, found.verdict, sut="x", seed=0)
    path = tmp_path / "t.json"
    write_trace(trace, path)
    again = read_trace(path)
    assert again == trace
    assert recheck(again).outcome is Outcome.NOT_LINEARIZABLE
    plain = Trace(2, "x", (), trace.failure)
    assert "history" not in plain.to_json()
    with pytest.raises(Exception, match="history"):
        Trace.from_json({**trace.to_json(), "history": {"format": "other"}})
