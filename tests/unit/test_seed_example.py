"""The seed-lifecycle example (examples/seed-lifecycle-py): real code's observations, level 1.

It declares protocol 2 (status, active, waiting, prev; outcomes ok_rejected) and behaves as the
seed does (spec/divergences.md L1-L8): conformant against the seed semantics; against the
intended semantics it fails on a divergence of the seed, which the seed semantics passes.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from statemeta.cli import main
from statemeta.harness.catalogue import Mask
from statemeta.harness.check import KeepGoing, check_settings, run_check, unchecked_reference
from statemeta.harness.trace import read_trace, replay
from statemeta.semantics import Semantics, Switch
from tests.unit.test_keep_going import SHOWABLE, OneSwitch

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "seed-lifecycle-py" / "serve.py"
SUT = f"{sys.executable} {EXAMPLE}"
RUN = ["--level", "1", "--examples", "150", "--steps", "50", "--seed", "0"]


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", "--sut", SUT, *RUN, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_it_conforms_to_the_seed_semantics(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _check(capsys, "--semantics", "seed", "--json")
    assert code == 0, out + err
    report = json.loads(out)
    assert report["protocol"] == 2
    assert report["outcomes"] == "ok_rejected"
    assert report["unobserved"] == {"view": [], "tasks": ["saved"]}
    assert "not compared (the implementation does not observe them): task key saved" in err


def test_against_the_intended_semantics_it_fails_on_a_divergence_of_the_seed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "t.json"
    code, out, err = _check(capsys, "--semantics", "intended", "--trace-out", str(trace))
    assert code == 1, out + err
    # L8: the seed's prev starts as READY, the intended one as none
    assert "prev_status: reference null, implementation \"ready\"" in out
    code = main(["replay", str(trace), "--sut", SUT, "--semantics", "seed"])
    assert code == 0, capsys.readouterr().out  # the seed's own behaviour, not a bug of its own


def _observed() -> list[str]:
    """The task keys the example declares (its source's OBSERVED list)."""
    tree = ast.parse(EXAMPLE.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "OBSERVED":
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return value
    raise AssertionError("the example declares no OBSERVED list")


def _seed_side(switch: Switch) -> OneSwitch:
    """The reference taking the seed's side of ``switch`` alone, observed as the example is."""
    return OneSwitch(switch, observe=_observed(), outcomes="ok_rejected")


def test_keep_going_against_the_intended_semantics_lists_the_seed_divergences_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Every catalogue entry is a divergence of the table (the seed side of one switch alone
    fails there, and the example passes it under the seed semantics), and every divergence that
    the example's observations can show is in the catalogue (where it first shows)."""
    out = tmp_path / "t.json"
    code, stdout, err = _check(
        capsys, "--semantics", "intended", "--keep-going", "--trace-out", str(out), "--json"
    )
    assert code == 1, stdout + err
    catalogue = json.loads(stdout)["catalogue"]
    places = {Mask(e["op"], e["at"]) for e in catalogue}
    assert len(places) == len(catalogue) > 0
    intended = unchecked_reference(Semantics.INTENDED)
    for entry in catalogue:
        trace = read_trace(Path(entry["trace"]))
        replayed = ["replay", entry["trace"], "--sut", trace.sut, "--semantics", "seed"]
        assert main(replayed) == 0, entry
        explained = [
            switch
            for switch in SHOWABLE
            if (again := replay(trace.ops, level=1, sut=_seed_side(switch), sut_command="one",
                                reference=intended, masks=trace.masks)) is not None
            and again.mask == trace.mask
        ]
        assert explained, entry
    for switch in SHOWABLE:
        report = run_check(
            _seed_side(switch), level=1, hypothesis_settings=check_settings(150, 50),
            sut_label="one switch", seed_value=0,
            keep_going=KeepGoing(tmp_path / f"{switch.value}.json", 1),
        )
        assert report.catalogue is not None
        for first in report.catalogue.entries:  # none: these observations cannot show it
            assert first.mask in places, (switch, first.mask)
    capsys.readouterr()


def test_it_is_its_own_implementation() -> None:
    """Like a C library wrapped for the protocol, it imports nothing of statemeta."""
    tree = ast.parse(EXAMPLE.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
