"""statemeta check / replay: exit codes, traces, and the issue's must-shows (kept small for CI).

- the served reference conforms at level 3;
- every broken variant, served through the protocol, is caught (exit 1) with a trace that
  replay fails on again;
- crashing, hanging and garbage-printing implementations are reported (exit 1) within the
  timeout, with a trace that replay reports again.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from statemeta.cli import main
from statemeta.harness.machine import Divergence, compare_step
from statemeta.harness.normalize import Json
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import read_trace
from statemeta.harness.variants import VARIANTS

SERVE = f"{sys.executable} -m statemeta.serve"
FEW = ["--examples", "10", "--steps", "20", "--seed", "0"]


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["check", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _replay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["replay", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("level", ["1", "2", "3"])
def test_the_served_reference_conforms(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, level: str
) -> None:
    out = tmp_path / "trace.json"
    code, text = _check(capsys, "--sut", SERVE, "--level", level, *FEW, "--trace-out", str(out))
    assert code == 0, text
    assert re.search(r"conformant: \d+ examples", text)
    assert "seed 0" in text
    assert not out.exists()


# A check at its defaults: the directed phase (the shortest path to every class of behaviour
# within the explorer's bounds) catches every variant before any random example runs, on any
# seed (tests/unit/test_directed.py shows it at every level).
VARIANT_RUN = ["--level", "3"]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_is_caught_and_its_trace_fails_again(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, variant: str
) -> None:
    out = tmp_path / "trace.json"
    command = f"{SERVE} --variant {variant}"
    code, text = _check(capsys, "--sut", command, *VARIANT_RUN, "--trace-out", str(out))
    assert code == 1, text
    assert f"trace written to {out}" in text
    counts = re.search(r"\((\d+) examples \((\d+) directed\)", text)
    assert counts is not None and counts[1] == counts[2], text  # caught by the directed phase
    trace = read_trace(out)
    assert trace.sut == command
    assert trace.failure.kind in {"result", "view", "invariant"}
    assert len(trace.steps) <= 10, text  # shrunk
    code, text = _replay(capsys, str(out), "--sut", command)
    assert code == 1, text
    assert "still fails" in text
    code, text = _replay(capsys, str(out), "--sut", SERVE)
    assert code == 0, text
    assert f"all {len(trace.steps)} steps" in text


BROKEN = {
    "crashes": 'if request["op"] == "register": sys.exit(1)',
    "hangs": 'if request["op"] == "register": time.sleep(60)',
    "prints garbage": 'if request["op"] == "register": print("garbage", flush=True); continue',
}


def _broken(tmp_path: Path, misbehaviour: str) -> str:
    """A level-2 implementation: the reference itself, until the misbehaviour strikes."""
    script = tmp_path / "broken.py"
    script.write_text(
        textwrap.dedent(
            """\
            import json, sys, time
            from statemeta.harness.serve import Server
            from statemeta.harness.reference import ReferenceAdapter
            server = Server(ReferenceAdapter(check_invariants=False))
            for line in sys.stdin:
                request = json.loads(line)
                {misbehaviour}
                print(json.dumps(server.respond(line)), flush=True)
            """
        ).format(misbehaviour=misbehaviour)
    )
    return f"{sys.executable} {script}"


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_implementation_is_reported_within_the_timeout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    command = _broken(tmp_path, BROKEN[name])
    out = tmp_path / "trace.json"
    began = time.monotonic()
    code, text = _check(capsys, "--sut", command, "--timeout", "0.5", *FEW, "--trace-out", str(out))
    assert time.monotonic() - began < 10
    assert code == 1, text
    trace = read_trace(out)
    assert trace.failure.kind == "sut"
    assert trace.steps[-1].op.name == "register"
    assert trace.steps[-1].sut is None
    code, text = _replay(capsys, str(out), "--sut", command, "--timeout", "0.5")
    assert code == 1, text
    assert "still fails" in text


def test_a_command_that_does_not_start_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _check(capsys, "--sut", "statemeta-no-such-implementation", *FEW)
    assert code == 2
    assert "could not run" in text and "cannot start" in text


def test_a_failed_handshake_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _check(capsys, "--sut", f"{sys.executable} -c 'print(1)'", *FEW)
    assert code == 2
    assert "could not run" in text


def test_an_unsupported_level_cannot_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    level_1_only = tmp_path / "level1.py"
    level_1_only.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        '    print(json.dumps({"id": r["id"], "result": {"protocol": 1, "name": "one", '
        '"levels": [1]}}), flush=True)\n'
    )
    code, text = _check(capsys, "--sut", f"{sys.executable} {level_1_only}", "--level", "2")
    assert code == 2
    assert "supports levels [1], not 2" in text


def test_an_unreadable_trace_cannot_be_replayed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": 99}))
    code, text = _replay(capsys, str(bad), "--sut", SERVE)
    assert code == 2
    assert "not a statemeta trace" in text


def test_check_needs_a_sut() -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", "--level", "1"])
    assert exited.value.code == 2


# -- the two semantics (spec/divergences.md) ----------------------------------------------------

SEED_SERVER = f"{SERVE} --semantics seed"


def test_the_served_seed_conforms_to_the_seed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "trace.json"
    code, text = _check(
        capsys, "--sut", SEED_SERVER, "--semantics", "seed", "--level", "3", *FEW,
        "--trace-out", str(out),
    )
    assert code == 0, text
    assert "declares seed semantics" in text and "against the seed semantics" in text
    # the seed's own violations are counted in the summary, not failures of the server
    assert re.search(r"invariant violations of the seed reference itself: .*paused-count \d+",
                     text), text


def test_the_served_seed_at_level_3_is_not_the_intended_semantics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Against the intended reference, a faithful seed fails at level 3 (its violations are
    its own only against the seed reference); the trace passes when replayed as the seed."""
    out = tmp_path / "trace.json"
    code, text = _check(
        capsys, "--sut", SEED_SERVER, "--semantics", "intended", "--level", "3", *FEW,
        "--trace-out", str(out),
    )
    assert code == 1, text
    assert "NOT conformant" in text and "invariant violations of" not in text
    code, text = _replay(capsys, str(out), "--sut", SEED_SERVER, "--semantics", "seed")
    assert code == 0, text


def _paused_twice(semantics: str) -> tuple[Op, dict[str, Json], dict[str, Json]]:
    adapter = ReferenceAdapter(check_invariants=False, semantics=semantics)
    adapter.start(3)
    adapter.call(Op.of("register", task="s1"))
    adapter.call(Op.of("handle_event", task="s1", event="pause"))
    op = Op.of("handle_event", task="s1", event="pause")
    result = adapter.call(op)
    view = adapter.view()
    adapter.stop()
    return op, result, view


def _broken_as_opened(semantics: str) -> Counter[str]:
    """The invariants the meta as opened breaks already (the seed's heartbeat chain)."""
    adapter = ReferenceAdapter(check_invariants=False, semantics=semantics)
    adapter.start(3)
    view = adapter.view()
    adapter.stop()
    broken: Counter[str] = Counter()
    op = Op.of("advance_clock", ms=100)
    compare_step(op, {"ok": None}, {"ok": None}, view, view, broken)
    return broken


def test_an_invariant_the_seed_reference_breaks_too_is_the_seeds() -> None:
    op, result, seed_view = _paused_twice("seed")
    _op, intended_result, intended_view = _paused_twice("intended")
    assert result == intended_result
    opened = _broken_as_opened("seed")
    assert "paused-count" not in opened
    seeds: Counter[str] = Counter()
    compare_step(op, result, result, seed_view, seed_view, seeds)
    assert seeds - opened == Counter({"paused-count": 1})
    with pytest.raises(Divergence, match="invariant 'paused-count' violated") as info:
        compare_step(op, result, result, intended_view, seed_view, seeds)
    assert info.value.kind == "invariant"
    assert seeds - opened == Counter({"paused-count": 1})


def test_the_served_seed_is_not_the_intended_semantics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Checked against the intended semantics, the seed diverges, and the trace names where:
    a switch of spec/divergences.toml that the view shows (prev, saved or waiting)."""
    out = tmp_path / "trace.json"
    code, text = _check(
        capsys, "--sut", SEED_SERVER, "--level", "1", *FEW, "--trace-out", str(out)
    )
    assert code == 1, text
    trace = read_trace(out)
    assert trace.semantics.value == "intended"
    assert trace.failure.kind == "view"
    assert re.search(r"\.(prev_status|prev_event|saved|waiting)", trace.failure.detail), text
    code, text = _replay(capsys, str(out), "--sut", SEED_SERVER)
    assert code == 1 and "still fails" in text
    code, text = _replay(capsys, str(out), "--sut", SEED_SERVER, "--semantics", "seed")
    assert code == 0 and "seed semantics" in text
