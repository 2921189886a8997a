"""Forking a running reference: an independent copy of a meta (or of the adapter holding it).

The explorer visits a state once and then tries every operation from it, each on its own
copy; replaying the path from the root instead would cost O(depth) per transition.
``copy.deepcopy`` cannot do it: it shares functions, so the timer callbacks (closures over the
meta and its entries) of a copy would still act on the original. ``fork`` is a deep copy that
clones closures with fresh cells, shares what cannot change (frozen attrs records such as
``StreamTask``, enums, classes, module-level functions, strings, bytes, numbers) and copies the
rest field by field: dicts, lists, sets, ``__dict__`` and ``__slots__`` objects.
"""

from __future__ import annotations

import enum
import itertools
import types
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import attrs

T = TypeVar("T")
Memo = dict[int, Any]
_Copier = Callable[[Any, Memo], Any]

_ATOMIC_TYPES: frozenset[type] = frozenset(
    {int, float, bool, str, bytes, type(None), range, types.BuiltinFunctionType, type}
)


def fork(root: T, *, share: Iterable[object] = ()) -> T:
    """An independent deep copy of ``root`` (see the module docstring for what is shared);
    the objects in ``share`` are not copied either (e.g. a coverage counter all forks feed)."""
    return cast(T, _copy(root, {id(obj): obj for obj in share}))


def _copy(obj: Any, memo: Memo) -> Any:
    cls = type(obj)
    if cls in _ATOMIC_TYPES:
        return obj
    known = memo.get(id(obj))
    if known is not None:
        return known
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _COPIERS[cls] = _copier_for(cls)
    return copier(obj, memo)


def _atomic(obj: Any, _memo: Memo) -> Any:
    return obj


def _copy_list(obj: list[Any], memo: Memo) -> list[Any]:
    new: list[Any] = []
    memo[id(obj)] = new
    new.extend([_copy(x, memo) for x in obj])
    return new


def _copy_tuple(obj: tuple[Any, ...], memo: Memo) -> tuple[Any, ...]:
    items = [_copy(x, memo) for x in obj]
    if all(a is b for a, b in zip(items, obj, strict=True)):
        return obj
    return type(obj)(items) if type(obj) is tuple else type(obj)(*items)


def _copy_dict(obj: dict[Any, Any], memo: Memo) -> dict[Any, Any]:
    new: dict[Any, Any] = type(obj).__new__(type(obj))
    memo[id(obj)] = new
    for key, value in obj.items():
        new[_copy(key, memo)] = _copy(value, memo)
    if hasattr(obj, "__dict__"):
        new.__dict__.update(_copy(obj.__dict__, memo))
    return new


def _copy_set(obj: set[Any], memo: Memo) -> set[Any]:
    new: set[Any] = set()
    memo[id(obj)] = new
    new.update(_copy(x, memo) for x in obj)
    return new


def _copy_frozenset(obj: frozenset[Any], memo: Memo) -> frozenset[Any]:
    items = [_copy(x, memo) for x in obj]
    if all(a is b for a, b in zip(items, obj, strict=True)):
        return obj
    return frozenset(items)


def _copy_function(fn: types.FunctionType, memo: Memo) -> types.FunctionType:
    """A closure gets new cells holding copies of what it captured; other functions are shared."""
    if fn.__closure__ is None:
        return fn
    cells = tuple(types.CellType() for _ in fn.__closure__)
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    memo[id(fn)] = new
    for old, cell in zip(fn.__closure__, cells, strict=True):
        try:
            contents = old.cell_contents
        except ValueError:  # a cell not filled yet (a name assigned after the closure)
            continue
        cell.cell_contents = _copy(contents, memo)
    return new


def _copy_method(method: types.MethodType, memo: Memo) -> types.MethodType:
    return types.MethodType(_copy(method.__func__, memo), _copy(method.__self__, memo))


def _copy_count(counter: itertools.count[int], _memo: Memo) -> itertools.count[int]:
    reduced: Any = counter.__reduce__()  # (count, (next value[, step]))
    return itertools.count(*reduced[1])


def _slot_names(cls: type) -> tuple[str, ...]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return tuple(n for n in names if n not in ("__dict__", "__weakref__"))


def _copier_for(cls: type) -> _Copier:
    """How to copy instances of ``cls``: decided once per class."""
    if issubclass(cls, enum.Enum) or (attrs.has(cls) and _is_frozen(cls)):
        return _atomic
    if issubclass(cls, dict):
        return _copy_dict
    if issubclass(cls, tuple):
        return _copy_tuple
    slots = _slot_names(cls)
    has_dict = hasattr(cls, "__dict__") and "__dict__" in dir(cls)

    def copy_object(obj: Any, memo: Memo) -> Any:
        new = object.__new__(cls)
        memo[id(obj)] = new
        for name in slots:
            try:
                value = object.__getattribute__(obj, name)
            except AttributeError:  # an unset slot
                continue
            object.__setattr__(new, name, _copy(value, memo))
        if has_dict:
            state = obj.__dict__
            target = new.__dict__
            for name, value in state.items():
                target[name] = _copy(value, memo)
        return new

    return copy_object


@attrs.frozen
class _Frozen:
    """attrs gives every frozen class the same ``__setattr__``: this one's tells them apart."""


def _is_frozen(cls: type) -> bool:
    return getattr(cls, "__setattr__", None) is _Frozen.__setattr__


_COPIERS: dict[type, _Copier] = {
    list: _copy_list,
    tuple: _copy_tuple,
    dict: _copy_dict,
    set: _copy_set,
    frozenset: _copy_frozenset,
    types.FunctionType: _copy_function,
    types.MethodType: _copy_method,
    itertools.count: _copy_count,
}
