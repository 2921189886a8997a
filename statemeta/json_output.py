"""The JSON that statemeta prints (every ``--json``): always RFC 8259 JSON.

Python's ``json`` writes ``NaN``, ``Infinity`` and ``-Infinity`` for non-finite floats, which
no strict parser reads (a decoded heartbeat can hold such doubles). Decision (docs/cli.md): a
non-finite number is written as the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (the
spelling of protobuf's JSON mapping). A NaN's payload bits are not kept: the bytes decoded
hold them.

Readers that hold numbers as doubles (JavaScript, jq) round an integer past 2^53, and int64 ids
(a stream id is 64 random bits) are mostly past it. Decision (docs/cli.md): an int whose
absolute value exceeds ``MAX_SAFE_INTEGER`` (2^53 - 1, JavaScript's) is written as its decimal
string, ``"3416855849025404929"`` (protobuf's JSON mapping writes every int64 so); any other
int stays a number.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["MAX_SAFE_INTEGER", "json_text", "strict_json"]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer a double holds together with all smaller ones (Number.MAX_SAFE_INTEGER)."""


def strict_json(value: Any) -> Any:
    """``value`` (JSON data: dicts, lists, tuples, scalars) with each non-finite float named
    and each int past ``MAX_SAFE_INTEGER`` in decimal."""
    if type(value) is int and abs(value) > MAX_SAFE_INTEGER:
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(item) for item in value]
    return value


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as RFC 8259 JSON text; raises ValueError for what JSON cannot hold."""
    return json.dumps(strict_json(value), indent=indent, allow_nan=False)
