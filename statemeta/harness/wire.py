"""JSON at the harness's edges (a response line, a trace file): read within bounds, shapes checked.

Both edges hold JSON that statemeta did not write itself, so each value is decoded with its
nesting bounded (a deeply nested document is a ValueError here, never a RecursionError later,
in the comparison of views or in writing the trace) and each shape is checked exactly: an id or
a level is an int, and ``true`` is not the int 1 (Python's ``bool`` is an ``int``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "is_int", "is_op_result", "loads_bounded"]

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects in a response line (a level-3 view needs 5)."""


def loads_bounded(data: bytes | str, max_depth: int) -> Any:
    """The JSON value of ``data``; ValueError if it is not JSON or nests arrays and objects
    deeper than ``max_depth``."""
    try:
        value = json.loads(data)
    except RecursionError:  # deeper than the interpreter's recursion limit: surely too deep
        value = None
        too_deep = True
    else:
        too_deep = _deeper_than(value, max_depth)
    if too_deep:
        raise ValueError(f"JSON nested deeper than {max_depth} arrays and objects")
    return value


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
    """``{"ok": value}`` or ``{"error": "ClassName"}``, either with optional ``"heartbeats"``."""
    if not isinstance(result, dict) or set(result) - {"ok", "error", "heartbeats"}:
        return False
    if ("ok" in result) == ("error" in result):
        return False
    if "error" in result and not isinstance(result["error"], str):
        return False
    heartbeats = result.get("heartbeats", [])
    return isinstance(heartbeats, list) and all(isinstance(h, str) for h in heartbeats)
