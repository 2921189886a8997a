"""What a cluster's worker sends back: tagged JSON naming only records and enums of a table.

A worker that joined the scheduler is trusted with nothing, so its result must be data that
cannot run code when read (pickle can: ``pickle.loads`` calls whatever the bytes name). The
format is strict RFC 8259 JSON; a container or a record is a one-key object whose key says
what it is, so a tuple comes back a tuple and a record comes back its class:

=====  ===========================================  ======================================
tag    value                                        decoded as
=====  ===========================================  ======================================
``t``  a list of items                              tuple
``l``  a list of items                              list
``f``  a list of items                              frozenset
``s``  a list of items                              set
``d``  a list of [key, value] pairs                 dict
``c``  a list of [key, count] pairs                 collections.Counter
``e``  [class name, the member's value]             an enum member of the table
``r``  [class name, {field: value}]                 an attrs record of the table, built by
                                                    its own ``__init__`` (its validators run)
=====  ===========================================  ======================================

None, booleans, whole numbers, finite floats and strings are themselves. Decoding refuses
anything else (another tag, a class outside the table, a record's fields not exactly its
own, a field declared int, str, bool or float holding another kind) with ``ValueError``.
"""

from __future__ import annotations

import collections
import enum
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

__all__ = ["Kinds", "decode", "encode", "kinds"]

Kinds = Mapping[str, type]
"""The classes a decoder may build, by name."""

_PLAIN = (bool, int, float, str)


def kinds(classes: Iterable[type]) -> Kinds:
    """The table of classes that may travel, by name; each resolved once (its declared field
    types checked at decode)."""
    table: dict[str, type] = {}
    for cls in classes:
        if attrs.has(cls):
            attrs.resolve_types(cls)
        table[cls.__name__] = cls
    return table


def encode(value: Any) -> bytes:
    """``value`` in the tagged format (TypeError for a value it has no tag for)."""
    return json.dumps(_tagged(value), allow_nan=False, separators=(",", ":")).encode()


def _tagged(value: Any) -> Any:
    if isinstance(value, enum.Enum):  # before the plain values: an IntEnum is an int
        return {"e": [type(value).__name__, value.value]}
    if value is None or isinstance(value, _PLAIN):
        return value
    if attrs.has(type(value)):
        fields = {f.alias: _tagged(getattr(value, f.name)) for f in attrs.fields(type(value))}
        return {"r": [type(value).__name__, fields]}
    tag = _CONTAINERS.get(type(value))
    if tag is None:
        raise TypeError(f"a cluster result cannot hold a {type(value).__name__}")
    if isinstance(value, dict):
        return {tag: [[_tagged(k), _tagged(v)] for k, v in value.items()]}
    return {tag: [_tagged(item) for item in value]}


_CONTAINERS: dict[type, str] = {
    tuple: "t", list: "l", frozenset: "f", set: "s", collections.Counter: "c", dict: "d",
}


def decode(blob: bytes, table: Kinds) -> Any:
    """The value ``blob`` encodes, built only of plain values, containers and ``table``'s
    classes; ValueError (saying what and where) for anything else."""
    try:
        document = json.loads(blob, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"not JSON within bounds ({error})") from error
    try:
        return _value(document, table, "result")
    except RecursionError as error:
        raise ValueError("nested too deep") from error
    except TypeError as error:  # an unhashable set item or dict key
        raise ValueError(f"not a value: {error}") from error


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _value(node: Any, table: Kinds, where: str) -> Any:
    if node is None or isinstance(node, _PLAIN):
        return node
    if not (isinstance(node, dict) and len(node) == 1):
        raise ValueError(f"{where}: expected a value or a one-key tagged object, got {node!r:.80}")
    ((tag, body),) = node.items()
    build = _BUILDERS.get(tag)
    if build is None or not isinstance(body, list):
        raise ValueError(f"{where}: unknown tag {tag!r:.40}, or its body is not a list")
    return build(body, table, f"{where}.{tag}")


def _items(body: list[Any], table: Kinds, where: str) -> list[Any]:
    return [_value(item, table, f"{where}[{i}]") for i, item in enumerate(body)]


def _pairs(body: list[Any], table: Kinds, where: str) -> list[tuple[Any, Any]]:
    if not all(isinstance(pair, list) and len(pair) == 2 for pair in body):
        raise ValueError(f"{where}: expected [key, value] pairs")
    return [
        (_value(k, table, f"{where}[{i}]"), _value(v, table, f"{where}[{i}]"))
        for i, (k, v) in enumerate(body)
    ]


def _named(body: list[Any], table: Kinds, where: str, test: Callable[[type], bool]) -> type:
    if len(body) != 2 or not isinstance(body[0], str):
        raise ValueError(f"{where}: expected [class name, value]")
    cls = table.get(body[0])
    if cls is None or not test(cls):
        raise ValueError(f"{where}: {body[0]!r:.40} is not a class a result may hold")
    return cls


def _member(body: list[Any], table: Kinds, where: str) -> enum.Enum:
    cls = _named(body, table, where, lambda c: issubclass(c, enum.Enum))
    try:
        member: enum.Enum = cls(body[1])
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from error
    return member


def _record(body: list[Any], table: Kinds, where: str) -> Any:
    cls = _named(body, table, where, attrs.has)
    given = body[1]
    fields = {f.alias: f for f in attrs.fields(cls)}
    if not isinstance(given, dict) or set(given) != set(fields):
        raise ValueError(f"{where}: a {cls.__name__} needs exactly the fields {sorted(fields)}")
    values = {name: _value(v, table, f"{where}.{name}") for name, v in given.items()}
    for name, value in values.items():
        declared = fields[name].type
        if declared in _PLAIN and type(value) is not declared and not (
            declared is float and type(value) is int
        ):
            raise ValueError(f"{where}.{name}: expected {declared.__name__}, got {value!r:.40}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: not a {cls.__name__}: {error}") from error


_BUILDERS: dict[str, Callable[[list[Any], Kinds, str], Any]] = {
    "t": lambda body, table, where: tuple(_items(body, table, where)),
    "l": _items,
    "f": lambda body, table, where: frozenset(_items(body, table, where)),
    "s": lambda body, table, where: set(_items(body, table, where)),
    "d": lambda body, table, where: dict(_pairs(body, table, where)),
    "c": lambda body, table, where: collections.Counter(dict(_pairs(body, table, where))),
    "e": _member,
    "r": _record,
}
