"""The JSON that statemeta prints (every ``--json``): always RFC 8259 JSON.

Python's ``json`` writes ``NaN``, ``Infinity`` and ``-Infinity`` for non-finite floats, which
no strict parser reads (a decoded heartbeat can hold such doubles). Decision (docs/cli.md): a
non-finite number is written as the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (the
spelling of protobuf's JSON mapping); every finite number stays a number. A NaN's payload bits
are not kept: the bytes decoded hold them.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["json_text", "strict_json"]


def strict_json(value: Any) -> Any:
    """``value`` (JSON data: dicts, lists, tuples, scalars) with each non-finite float named."""
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
