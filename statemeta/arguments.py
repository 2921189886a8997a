"""The public API's arguments: one table of ranges, and checks derived from the annotations.

A value that a C field cannot hold, or that breaks the meta later (a NaN checkpoint id makes
every heartbeat raise; an infinite delay a task that can never be unregistered), is refused at
the public boundary, before anything changes: ``checked_api`` wraps every public method of a
class so that each argument is checked against its parameter's annotation, and each int
against its row of ``LIMITS`` (by parameter name). An int parameter without a row is refused
when its function is first called, so a new method cannot slip past the table.

The checks, from the annotation:

- ``int``: an int (an IntEnum member counts as its value), not a bool, within the
  parameter's row of LIMITS;
- ``bool``: True or False only; ``float``: an int or a finite float;
- an enum: one of its members only. Neither its name (``"pause"``) nor its value (``7``) is
  accepted: the names are the harness protocol's spelling (docs/harness-protocol.md), the Python
  API takes the enum, so a typo is an error, never a REJECTED outcome;
- a class (a record, ``TaskHandle``): an instance; ``os.PathLike``: a str or a path;
  a ``Callable``: something callable; ``X | None``: None or an X;
- a Protocol (``Store``, ``Clock``): a value with each of its public members;
- anything else (``Any``, a type variable): not checked.

The core (statemeta.meta.core), which the explorer and the harness drive through the edge, is
not wrapped: the edge checks once and the core trusts it.
"""

from __future__ import annotations

import enum
import functools
import inspect
import math
import os
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from statemeta.errors import ArgumentTypeError, ArgumentValueError, MisuseError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_TIMER_MS = INT32_MAX
"""The longest timer delay: taosTmrReset takes int32 milliseconds (about 24.8 days)."""
MAX_ADVANCE_MS = 3_600_000
"""The longest single ``advance``: it fires every timer due in the interval, and the heartbeat
chain alone fires every 200 ms, so one call stays near a second (18,000 heartbeats); advance in
steps to go further."""


@attrs.frozen
class Limit:
    """The range of one int parameter (both ends included) and what it is."""

    low: int
    high: int
    what: str

    @property
    def expected(self) -> str:
        return f"{self.what}, an int in [{self.low}, {self.high}]"


LIMITS: dict[str, Limit] = {
    "stream_id": Limit(INT64_MIN, INT64_MAX, "a stream id (int64)"),
    "task_id": Limit(INT32_MIN, INT32_MAX, "a task id (int32)"),
    "vg_id": Limit(INT32_MIN, INT32_MAX, "a vgroup id (int32; -2 for the snode)"),
    "node_id": Limit(INT32_MIN, INT32_MAX, "a node id (int32)"),
    "stage": Limit(INT64_MIN, INT64_MAX, "a stage (int64)"),
    "ver": Limit(0, INT64_MAX, "a version (int64, >= 0)"),
    "checkpoint_id": Limit(0, INT64_MAX, "a checkpoint id (int64, >= 0)"),
    "trans_id": Limit(INT32_MIN, INT32_MAX, "a transaction id (int32)"),
    "delay_ms": Limit(0, MAX_TIMER_MS, "a timer delay in ms"),
    "ms": Limit(0, MAX_ADVANCE_MS, "a time step in ms (one hour at most per call)"),
    "task_level": Limit(1, 4, "a task level (TaskLevel)"),
    "now": Limit(0, INT64_MAX // 2, "a time in ms (>= 0)"),
}
"""Every int parameter of the public API, by name: the one place its range is written."""

Check = Callable[[str, str, object], None]
"""A check of one argument: (function, parameter, value); raises or returns None."""
F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)
E = TypeVar("E", bound=enum.Enum)


def member_of(cls: type[E], value: E | str, what: str) -> E:
    """``value`` as a member of ``cls``, given as itself or as its value; a MisuseError that
    lists the values otherwise (``what``: the noun the message uses, e.g. "semantics")."""
    if isinstance(value, cls):
        return value
    try:
        return cls(value)
    except ValueError:
        known = ", ".join(repr(m.value) for m in cls)
        raise MisuseError(f"no {what} {value!r}; {what} are {known}") from None


def _int_check(limit: Limit) -> Check:
    def check(function: str, name: str, value: object) -> None:
        if type(value) is not int and (not isinstance(value, int) or isinstance(value, bool)):
            raise ArgumentTypeError(function, name, value, limit.expected)
        if not limit.low <= value <= limit.high:
            raise ArgumentValueError(function, name, value, limit.expected)

    return check


def _bool_check(function: str, name: str, value: object) -> None:
    if type(value) is not bool:
        raise ArgumentTypeError(function, name, value, "a bool (True or False)")


def _float_check(function: str, name: str, value: object) -> None:
    if type(value) not in (int, float):
        raise ArgumentTypeError(function, name, value, "a finite float")
    if not math.isfinite(value):  # type: ignore[arg-type]  # int or float, checked above
        raise ArgumentValueError(function, name, value, "a finite float")


def _enum_check(kind: type[enum.Enum]) -> Check:
    example = next(iter(kind))
    expected = f"a {kind.__name__} member (e.g. {kind.__name__}.{example.name})"

    def check(function: str, name: str, value: object) -> None:
        if not isinstance(value, kind):
            if isinstance(value, str) and value.upper() in kind.__members__:
                hint = f"a {kind.__name__} member ({kind.__name__}.{value.upper()}, not its name)"
                raise ArgumentTypeError(function, name, value, hint)
            raise ArgumentTypeError(function, name, value, expected)

    return check


def _instance_check(kinds: tuple[type, ...], expected: str) -> Check:
    def check(function: str, name: str, value: object) -> None:
        if not isinstance(value, kinds):
            raise ArgumentTypeError(function, name, value, expected)

    return check


def _callable_check(function: str, name: str, value: object) -> None:
    if not callable(value):
        raise ArgumentTypeError(function, name, value, "a callable")


def _no_check(function: str, name: str, value: object) -> None:
    """Protocols and ``Any``: what they accept is not a type to test."""


def _checkable_class(kind: object) -> type | None:
    """The class an annotation member names, if an isinstance test can say it (no Protocol)."""
    origin = typing.get_origin(kind) or kind
    if origin is os.PathLike:
        return os.PathLike
    if not isinstance(origin, type) or getattr(origin, "_is_protocol", False):
        return None
    return origin


def _union_check(members: tuple[object, ...]) -> Check:
    classes = [_checkable_class(m) for m in members]
    if any(c is None for c in classes) or any(c in (int, bool, float) for c in classes):
        return _no_check  # a protocol member, or a number member that has its own checks
    names = " or ".join("None" if c is type(None) else c.__name__ for c in classes if c)
    return _instance_check(tuple(c for c in classes if c), names)


def check_for(name: str, annotation: object) -> Check:
    """The check of parameter ``name`` annotated ``annotation`` (the rules of the docstring)."""
    if annotation is int:
        limit = LIMITS.get(name)
        if limit is None:
            raise TypeError(f"int parameter {name!r} has no row in statemeta.arguments.LIMITS")
        return _int_check(limit)
    if annotation is bool:
        return _bool_check
    if annotation is float:
        return _float_check
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_check(annotation)
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        return _union_check(typing.get_args(annotation))
    if origin is typing.get_origin(Callable[[], None]):
        return _callable_check
    if getattr(annotation, "_is_protocol", False):
        return _protocol_check(typing.cast(type, annotation))
    kind = _checkable_class(annotation)
    if kind is None or kind is type:
        return _no_check
    return _instance_check((kind,), f"a {kind.__name__}")


def _protocol_check(protocol: type) -> Check:
    """A Protocol (``Store``, ``Clock``): the value has each of its public members."""
    members = sorted(
        {n for k in protocol.__mro__[:-1] if k is not typing.Protocol
         and k is not typing.Generic for n in vars(k) if not n.startswith("_")}
    )
    expected = f"a {protocol.__name__} (with {', '.join(members)})"

    def check(function: str, name: str, value: object) -> None:
        if not all(hasattr(value, m) for m in members):
            raise ArgumentTypeError(function, name, value, expected)

    return check


@attrs.frozen
class _Param:
    index: int | None
    """Its position (None: keyword-only)."""
    name: str
    check: Check


def _plan(fn: Callable[..., Any]) -> tuple[_Param, ...]:
    hints = typing.get_type_hints(fn)
    params = []
    for index, p in enumerate(inspect.signature(fn).parameters.values()):
        if p.name not in hints or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        check = check_for(p.name, hints[p.name])
        if check is not _no_check:
            position = None if p.kind is p.KEYWORD_ONLY else index
            params.append(_Param(position, p.name, check))
    return tuple(params)


def checked(fn: F) -> F:
    """``fn`` with each argument checked against its annotation before ``fn`` runs."""
    where = fn.__qualname__
    plan: list[tuple[_Param, ...]] = []  # built at the first call: the annotations name
    # classes defined after the decorator ran

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not plan:
            plan.append(_plan(fn))
        count = len(args)
        for p in plan[0]:
            if p.index is not None and p.index < count:
                p.check(where, p.name, args[p.index])
            elif p.name in kwargs:
                p.check(where, p.name, kwargs[p.name])
        return fn(*args, **kwargs)

    return typing.cast(F, wrapper)


def checked_api(cls: C) -> C:
    """``cls`` with every public method (class methods and static methods too) ``checked``."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not _takes_arguments(member):
            continue
        if isinstance(member, classmethod | staticmethod):
            setattr(cls, name, type(member)(checked(member.__func__)))
        else:
            setattr(cls, name, checked(member))
    return cls


def _takes_arguments(member: object) -> bool:
    """A method with a parameter besides self or cls (the others need no wrapper's cost)."""
    fn = getattr(member, "__func__", member)
    if not inspect.isfunction(fn):
        return False
    first = 0 if isinstance(member, staticmethod) else 1
    return len(inspect.signature(fn).parameters) > first


def validator(name: str) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """An attrs validator checking a field as the int parameter ``name`` of LIMITS."""
    check = _int_check(LIMITS[name])

    def validate(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        check(type(inst).__name__, attribute.name, value)

    return validate
