"""attrs field factories whose validators say what a C field can hold.

Records are checked when they are built, so every record can be encoded: the encoder never
fails on a record, and a decoded value that breaks a rule is reported as a ``DecodeError``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn, cast

import attrs

from statemeta.errors import InvalidRecordError, RecordTypeError


def _reject(
    inst: object,
    attribute: attrs.Attribute[Any],
    value: object,
    rule: str,
    error: type[InvalidRecordError] = RecordTypeError,
) -> NoReturn:
    """Refuse ``value``: a RecordTypeError (a TypeError) for a wrong type, or ``error``."""
    raise error(f"{type(inst).__name__}.{attribute.name} = {value!r}: {rule}")


@attrs.frozen
class IntRange:
    """Validator: an int (an IntEnum member counts, a bool does not) that fits a C integer of
    ``bits`` bits."""

    bits: int
    signed: bool = True

    def __call__(self, inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        low = -(1 << (self.bits - 1)) if self.signed else 0
        high = (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1
        kind = "int" if self.signed else "uint"
        rule = f"expected {kind}{self.bits} in [{low}, {high}]"
        if not isinstance(value, int) or isinstance(value, bool):
            _reject(inst, attribute, value, rule)
        if not low <= value <= high:
            _reject(inst, attribute, value, rule, InvalidRecordError)


def c_double(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Validator: an IEEE-754 double (an int is accepted as the float it equals)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        _reject(inst, attribute, value, "expected a float")


def c_string(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str):
        _reject(inst, attribute, value, "expected a str without NUL")
    if "\0" in value:
        _reject(inst, attribute, value, "expected a str without NUL", InvalidRecordError)
    try:
        value.encode()
    except UnicodeEncodeError:
        _reject(inst, attribute, value, "not encodable as UTF-8", InvalidRecordError)


def int_field(bits: int, *, signed: bool = True, default: int = 0) -> Any:
    """A C integer field of the given width (default 0)."""
    return attrs.field(default=default, validator=IntRange(bits, signed))


def required_int(bits: int) -> Any:
    """A signed C integer field without a default (the ids)."""
    return attrs.field(validator=IntRange(bits))


def double_field(default: float = 0.0) -> Any:
    """An IEEE-754 double field."""
    return attrs.field(default=default, validator=c_double)


def c_string_field(default: str = "") -> Any:
    """A NUL-terminated C string (CStr on the wire), held as UTF-8 text."""
    return attrs.field(default=default, validator=c_string)


def one_of(values: tuple[int, ...]) -> Any:
    """Validator: the value is one of ``values`` (a C enum or flag)."""

    def check(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value not in values:
            _reject(inst, attribute, value, f"expected one of {list(values)}", InvalidRecordError)

    return check


def instance_of(kind: type | tuple[type, ...]) -> Any:
    """Validator: the value is a ``kind`` (a nested record)."""

    def check(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, kind):
            _reject(inst, attribute, value, f"expected {kind}")

    return check


def to_tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    """Converter: a list, generator or any other iterable as the tuple a frozen record holds.

    Text and non-iterables pass through unchanged, for the field's validator to refuse by
    name. (Typed ``Iterable[Any]``: the attrs mypy plugin gives a generic converter's
    parameter an unbound type variable; the items are checked by the validator.)"""
    if isinstance(items, Iterable) and not isinstance(items, str | bytes):
        return tuple(items)
    return cast(tuple[Any, ...], items)


def tuple_of(kind: type, *, max_len: int | None = None) -> Any:
    """Validator: a tuple of ``kind`` records, at most ``max_len`` of them."""

    def check(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, tuple) or not all(isinstance(v, kind) for v in value):
            _reject(inst, attribute, value, f"expected an iterable of {kind.__name__}")
        if max_len is not None and len(value) > max_len:
            _reject(inst, attribute, value, f"at most {max_len} items", InvalidRecordError)

    return check


def int_tuple(bits: int) -> Any:
    """Validator: a tuple of signed C integers of ``bits`` bits."""
    item = IntRange(bits)

    def check(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, tuple):
            _reject(inst, attribute, value, "expected an iterable of int")
        for v in value:
            item(inst, attribute, v)

    return check
