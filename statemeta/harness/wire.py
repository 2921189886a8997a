"""JSON at the harness's edges (a response line, a trace file): read within bounds, shapes checked.

Both edges hold JSON that statemeta did not write itself, so each value is decoded with its
nesting bounded (a deeply nested document is a ValueError here, never a RecursionError later,
in the comparison of views or in writing the trace) and each shape is checked exactly: an id or
a level is an int, and ``true`` is not the int 1 (Python's ``bool`` is an ``int``).

Only strict RFC 8259 JSON of Unicode text is read: ``NaN``, ``Infinity`` and numbers too large
for a finite float are not JSON, and a string holding a lone surrogate (``"\\ud800"``, legal
JSON syntax) is not text; both are ValueErrors here, so they never reach a trace file (which
they would make non-JSON) or a terminal (which cannot encode them).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "is_int", "is_op_result", "loads_bounded"]

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects in a response line (a level-3 view needs 5)."""
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_BYTES = re.compile(_SURROGATE.pattern.encode())
"""An escape of a UTF-16 surrogate: only a document holding one needs its strings checked."""


def loads_bounded(data: bytes | str, max_depth: int) -> Any:
    """The JSON value of ``data``; ValueError if it is not strict JSON of Unicode text (module
    docstring) or nests arrays and objects deeper than ``max_depth``."""
    try:
        value = json.loads(data, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:  # deeper than the interpreter's recursion limit: surely too deep
        value = None
        too_deep = True
    else:
        too_deep = _deeper_than(value, max_depth)
    if too_deep:
        raise ValueError(f"JSON nested deeper than {max_depth} arrays and objects")
    if isinstance(data, bytes):
        escaped = _SURROGATE_BYTES.search(data) is not None
    else:
        escaped = _SURROGATE.search(data) is not None
    if escaped and not _is_text(value):
        raise ValueError("a string holds a lone surrogate (not Unicode text)")
    return value


def _not_json(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is beyond a finite number")
    return number


def _is_text(value: object) -> bool:
    """Whether every string of ``value`` (keys too) encodes as UTF-8; iterative, as below."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


def _deeper_than(value: object, max_depth: int) -> bool:
    """Whether ``value`` nests deeper than ``max_depth``: one level at a time, no recursion (and
    plain loops: this runs on every response)."""
    level: list[Any] = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, (dict, list)):
                    below.append(child)
        level = below
    return False


def is_int(value: object) -> bool:
    """An int that is not a bool: what the protocol and the trace mean by an integer."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_op_result(result: object) -> bool:
    """``{"ok": value}``, ``{"error": "ClassName"}`` or ``{"blocked": true}`` (a call that waits
    in the code: statemeta.harness.blocking), each with optional ``"heartbeats"``."""
    if not isinstance(result, dict) or set(result) - {"ok", "error", "blocked", "heartbeats"}:
        return False
    if sum(key in result for key in ("ok", "error", "blocked")) != 1:
        return False
    if "blocked" in result and result["blocked"] is not True:
        return False
    if "error" in result and not isinstance(result["error"], str):
        return False
    heartbeats = result.get("heartbeats", [])
    return isinstance(heartbeats, list) and all(isinstance(h, str) for h in heartbeats)
