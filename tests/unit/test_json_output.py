"""Every ``--json`` prints RFC 8259 JSON: non-finite numbers are named, never NaN/Infinity."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from statemeta.cli import main
from statemeta.json_output import MAX_SAFE_INTEGER, json_text, strict_json


def strict_loads(text: str) -> Any:
    """RFC 8259 JSON only: Python's json reads NaN and Infinity unless told not to."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_are_named_at_any_depth() -> None:
    doc = {"a": [1.5, math.nan, (math.inf, {"b": -math.inf})], "c": -0.0, "d": None, "e": "NaN"}
    assert strict_json(doc) == {
        "a": [1.5, "NaN", ["Infinity", {"b": "-Infinity"}]],
        "c": -0.0,
        "d": None,
        "e": "NaN",
    }
    assert strict_loads(json_text(doc)) == strict_json(doc)
    assert json_text([1, 2], indent=None) == "[1, 2]"


def test_what_json_cannot_hold_is_an_error_not_invalid_text() -> None:
    with pytest.raises(TypeError):
        json_text({"a": object()})


@pytest.mark.parametrize(
    "argv",
    [
        ["spec", "--json"],
        ["explore", "--max-depth", "1", "--json"],
        ["campaign", "--examples", "1", "--steps", "2", "--json"],
    ],
)
def test_every_json_command_prints_strict_json(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 0
    assert isinstance(strict_loads(capsys.readouterr().out), dict)


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
        (-MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER),
        (MAX_SAFE_INTEGER + 1, str(MAX_SAFE_INTEGER + 1)),
        (-(2**63), str(-(2**63))),
        (2**64 - 1, str(2**64 - 1)),
        (True, True),
        (1.0e300, 1.0e300),
    ],
)
def test_an_int_past_2_53_is_its_decimal_string(value: object, written: object) -> None:
    """A reader holding numbers as doubles rounds past 2^53: such an int (an int64 id) is
    written as a string; a bool or a float stays what it is."""
    assert strict_json({"id": [value]}) == {"id": [written]}
    assert json.loads(json_text(value)) == written
