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
    code = main(["replay", str(trace), "--semantics", "seed"])
    assert code == 0, capsys.readouterr().out  # the seed's own behaviour, not a bug of its own


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
