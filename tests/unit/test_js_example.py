"""The independent JavaScript implementation (examples/js-lifecycle) passes at level 1.

Node.js is part of the project's environment: without `node` this test fails, it never skips.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from statemeta.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "js-lifecycle" / "serve.js"


def _node() -> str:
    node = shutil.which("node")
    assert node is not None, "node (Node.js >= 20) must be on PATH: the JS example needs it"
    return node


def test_the_js_example_conforms_at_level_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "check",
            "--sut",
            f"{_node()} {EXAMPLE}",
            "--level",
            "1",
            "--examples",
            "50",
            "--steps",
            "40",
            "--seed",
            "0",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "checking js-lifecycle" in out
    assert re.search(r"conformant: \d+ examples", out)


def test_the_js_example_refuses_level_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--sut", f"{_node()} {EXAMPLE}", "--level", "2"])
    assert code == 2
    assert "supports levels [1], not 2" in capsys.readouterr().err
