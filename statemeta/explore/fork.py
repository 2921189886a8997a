"""Forking a running reference: independent copies of a meta (or of the adapter holding it).

The explorer visits a state once and then tries every operation from it, each on its own
copy; replaying the path from the root instead would cost O(depth) per transition.
``copy.deepcopy`` cannot do it: it shares functions, so the timer callbacks (closures over the
meta and its entries) of a copy would still act on the original. A fork is a deep copy that
clones closures with fresh cells, shares what cannot change (frozen attrs records such as
``StreamTask``, enums, classes, module-level functions, strings, bytes, numbers) and copies the
rest field by field: dicts, lists, sets, ``__dict__`` and ``__slots__`` objects.

A state is forked about thirty times (once per operation that changes it), so the walk over
its object graph is done once: ``ForkPlan(root)`` records, for every object to copy, how to
make an empty one and which of its fields are shared values (kept in a template) and which
name other copies; ``make()`` then builds a copy from the plan alone, without the type
dispatch and the identity memo of a walk. A plan describes its root as it was when planned:
the explorer never changes a state it forks.
"""

from __future__ import annotations

import enum
import functools
import itertools
import types
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar, cast

import attrs

T = TypeVar("T")
Copies = list[Any]
"""The objects of one copy, by their place in the plan."""
_Fill = Callable[[Copies], None]

_SHARED: set[type] = {
    int, float, bool, str, bytes, type(None), range, types.BuiltinFunctionType, type
}
"""Types whose instances are shared, never copied: immutable builtins, and (added as they are
met) enums and frozen attrs classes."""


_COPIED: set[type] = set()
"""Types met and found not to be shared."""


class _Ref(int):
    """A field that names another copy: its place in the plan."""

    __slots__ = ()


def fork(root: T, *, share: Iterable[object] = ()) -> T:
    """An independent deep copy of ``root``; the objects in ``share`` are not copied (e.g. a
    coverage counter all forks feed)."""
    return ForkPlan(root, share=share).make()


class ForkPlan(Generic[T]):
    """How to copy the object graph of ``root`` (see the module docstring)."""

    def __init__(self, root: T, *, share: Iterable[object] = ()) -> None:
        self._known: dict[int, Any] = {id(obj): obj for obj in share}
        """Object id -> its _Ref, or the object itself when it is shared."""
        self._kept: list[Any] = []  # keeps the planned objects alive: their ids stay theirs
        self._shells: list[Callable[[], Any]] = []
        self._immutables: list[tuple[int, Callable[[Copies], Any]]] = []
        self._fills: list[_Fill] = []
        self._root = self._plan(root)

    def make(self) -> T:
        """A new copy."""
        copies = [shell() for shell in self._shells]
        for place, build in self._immutables:
            copies[place] = build(copies)
        for fill in self._fills:
            fill(copies)
        root = self._root
        return cast(T, copies[root] if type(root) is _Ref else root)

    # -- planning ---------------------------------------------------------------------------

    def _plan(self, obj: Any) -> Any:
        """``obj`` itself when shared, else the _Ref of its copy (planned now if new)."""
        cls = type(obj)
        if cls in _SHARED:
            return obj
        known = self._known.get(id(obj), _UNKNOWN)
        if known is not _UNKNOWN:
            return known
        if cls not in _COPIED:
            if issubclass(cls, enum.Enum) or (attrs.has(cls) and _is_frozen(cls)):
                _SHARED.add(cls)
                return obj
            _COPIED.add(cls)
        self._kept.append(obj)
        if cls is tuple or cls is frozenset or cls is types.MethodType:
            return self._plan_immutable(obj)
        if cls is types.FunctionType and obj.__closure__ is None:
            return obj
        if cls is itertools.count:
            reduced: Any = obj.__reduce__()  # (count, (next value[, step]))
            return self._new(obj, functools.partial(itertools.count, *reduced[1]))
        if cls is types.FunctionType:
            return self._plan_closure(obj)
        if cls is list:
            place = self._new(obj, list)
            self._fills.append(_fill_list(place, [self._plan(x) for x in obj]))
            return place
        if cls is set:
            place = self._new(obj, set)
            self._fills.append(_fill_set(place, [self._plan(x) for x in obj]))
            return place
        if issubclass(cls, dict):
            place = self._new(obj, dict if cls is dict else functools.partial(dict.__new__, cls))
            items = [(self._plan(k), self._plan(v)) for k, v in obj.items()]
            self._fills.append(_fill_dict(place, items))
            if cls is not dict and hasattr(obj, "__dict__"):
                self._fills.append(_fill_attributes(place, self._attributes(obj.__dict__)))
            return place
        if issubclass(cls, tuple):  # a named tuple
            return self._plan_immutable(obj)
        place = self._new(obj, functools.partial(object.__new__, cls))
        slot_names, has_dict = _layout(cls)
        slots = []
        for name in slot_names:
            try:
                value = object.__getattribute__(obj, name)
            except AttributeError:  # an unset slot
                continue
            slots.append((name, self._plan(value)))
        if slots:
            self._fills.append(_fill_slots(place, slots))
        if has_dict:
            self._fills.append(_fill_attributes(place, self._attributes(obj.__dict__)))
        return place

    def _new(self, obj: Any, shell: Callable[[], Any]) -> _Ref:
        place = _Ref(len(self._shells))
        self._shells.append(shell)
        self._known[id(obj)] = place
        return place

    def _attributes(self, state: dict[str, Any]) -> dict[str, Any]:
        return {name: self._plan(value) for name, value in state.items()}

    def _plan_immutable(self, obj: Any) -> Any:
        """A tuple, frozenset or bound method: shared when it holds only shared values, else
        built from the copies of what it holds (after every empty copy exists)."""
        cls = type(obj)
        if cls is types.MethodType:
            parts = [self._plan(obj.__func__), self._plan(obj.__self__)]
        else:
            parts = [self._plan(x) for x in obj]
        if all(type(p) is not _Ref for p in parts):
            return obj
        place = _Ref(len(self._shells))
        self._shells.append(_nothing)
        self._known[id(obj)] = place
        self._immutables.append((place, _builder(cls, parts)))
        return place

    def _plan_closure(self, fn: types.FunctionType) -> _Ref:
        """A closure gets new cells, filled with the copies of what it captured."""
        closure = fn.__closure__
        assert closure is not None
        code, globals_, name, defaults = fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__
        kwdefaults, attributes = fn.__kwdefaults__, dict(fn.__dict__)

        def shell() -> types.FunctionType:
            cells = tuple(types.CellType() for _ in closure)
            new = types.FunctionType(code, globals_, name, defaults, cells)
            new.__kwdefaults__ = kwdefaults
            new.__dict__.update(attributes)
            return new

        place = self._new(fn, shell)
        contents = []
        for index, cell in enumerate(closure):
            try:
                contents.append((index, self._plan(cell.cell_contents)))
            except ValueError:  # a cell not filled yet (a name assigned after the closure)
                continue
        self._fills.append(_fill_cells(place, contents))
        return place


_UNKNOWN = object()


def _nothing() -> None:
    return None


def _value(copies: Copies, planned: Any) -> Any:
    return copies[planned] if type(planned) is _Ref else planned


def _builder(cls: type, parts: list[Any]) -> Callable[[Copies], Any]:
    if cls is types.MethodType:
        return lambda copies: types.MethodType(_value(copies, parts[0]), _value(copies, parts[1]))
    if cls is tuple or cls is frozenset:
        return lambda copies: cls([_value(copies, p) for p in parts])
    return lambda copies: cls(*[_value(copies, p) for p in parts])  # a named tuple


def _template(planned: list[tuple[Any, Any]]) -> tuple[dict[Any, Any], list[tuple[Any, int]]]:
    """Every key in order with its shared value (None where a copy goes), and the (key, place)
    pairs naming copies."""
    template = {k: None if type(v) is _Ref else v for k, v in planned}
    return template, [(k, int(v)) for k, v in planned if type(v) is _Ref]


def _fill_list(place: int, items: list[Any]) -> _Fill:
    if all(type(x) is not _Ref for x in items):
        return lambda copies: copies[place].extend(items)
    return lambda copies: copies[place].extend([_value(copies, x) for x in items])


def _fill_set(place: int, items: list[Any]) -> _Fill:
    return lambda copies: copies[place].update([_value(copies, x) for x in items])


def _fill_dict(place: int, items: list[tuple[Any, Any]]) -> _Fill:
    if any(type(k) is _Ref for k, _v in items):  # keys that are copies: rare
        return lambda copies: copies[place].update(
            [(_value(copies, k), _value(copies, v)) for k, v in items]
        )
    template, refs = _template(items)

    def fill(copies: Copies) -> None:
        new = copies[place]
        new.update(template)
        for key, ref in refs:
            new[key] = copies[ref]

    return fill


def _fill_attributes(place: int, attributes: dict[str, Any]) -> _Fill:
    template, refs = _template(list(attributes.items()))
    set_attribute = object.__setattr__

    def fill(copies: Copies) -> None:
        state = template.copy()
        for name, ref in refs:
            state[name] = copies[ref]
        set_attribute(copies[place], "__dict__", state)

    return fill


def _fill_slots(place: int, slots: list[tuple[str, Any]]) -> _Fill:
    set_slot = object.__setattr__

    def fill(copies: Copies) -> None:
        new = copies[place]
        for name, planned in slots:
            set_slot(new, name, copies[planned] if type(planned) is _Ref else planned)

    return fill


def _fill_cells(place: int, contents: list[tuple[int, Any]]) -> _Fill:
    def fill(copies: Copies) -> None:
        cells = copies[place].__closure__
        for index, planned in contents:
            cells[index].cell_contents = _value(copies, planned)

    return fill


def _layout(cls: type) -> tuple[tuple[str, ...], bool]:
    """The slots of ``cls`` (its whole MRO's), and whether its instances have a ``__dict__``."""
    known = _LAYOUTS.get(cls)
    if known is None:
        names: list[str] = []
        for klass in cls.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            names.extend([slots] if isinstance(slots, str) else slots)
        slots_only = tuple(n for n in names if n not in ("__dict__", "__weakref__"))
        known = _LAYOUTS[cls] = (slots_only, "__dict__" in dir(cls))
    return known


_LAYOUTS: dict[type, tuple[tuple[str, ...], bool]] = {}


@attrs.frozen
class _Frozen:
    """attrs gives every frozen class the same ``__setattr__``: this one's tells them apart."""


def _is_frozen(cls: type) -> bool:
    return getattr(cls, "__setattr__", None) is _Frozen.__setattr__
