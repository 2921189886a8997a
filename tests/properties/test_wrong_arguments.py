"""Every public method refuses a wrong argument, names it, and changes nothing (issue 32 item 2).

The methods are found by introspection (every public method of the API's classes with an
annotated parameter), so a new one is covered without an edit; the wrong values are drawn per
annotation: the wrong type for each parameter, and values just past each LIMITS row.
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemeta import (
    RealClock,
    RoleMachine,
    StreamMeta,
    StreamTask,
    TaskLifecycle,
    ThreadSafeStreamMeta,
    VirtualClock,
)
from statemeta.arguments import LIMITS
from statemeta.errors import ArgumentTypeError, ArgumentValueError
from statemeta.meta import Clock
from statemeta.store import MemoryStore, Store

CLASSES = (StreamMeta, ThreadSafeStreamMeta, TaskLifecycle, RoleMachine, VirtualClock, RealClock)
WRONG_TYPES = st.sampled_from(["pause", None, True, 1.5, math.nan, math.inf, b"1", {"id": 1}])


def _methods() -> list[tuple[type, str, str, Any]]:
    """(class, method, parameter, annotation) of every checked parameter of the API."""
    found = []
    for cls in CLASSES:
        for name, member in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("_") or name == "open":
                continue
            hints = typing.get_type_hints(member)
            for p in list(inspect.signature(member).parameters.values())[1:]:
                if p.name in hints and p.kind is p.POSITIONAL_OR_KEYWORD:
                    found.append((cls, name, p.name, hints[p.name]))
    return found


METHODS = _methods()


def _wrong(annotation: Any, parameter: str) -> st.SearchStrategy[Any]:
    """Values ``annotation`` refuses: another type, or (an int) just past its range."""
    wrong = WRONG_TYPES.filter(lambda v: not _admits(annotation, v))
    if annotation is int:
        limit = LIMITS[parameter]
        return wrong | st.sampled_from([limit.low - 1, limit.high + 1, 2**64])
    return wrong


def _admits(annotation: Any, value: Any) -> bool:
    if annotation is bool:
        return type(value) is bool
    args = typing.get_args(annotation)
    return (value is None and type(None) in args) or (callable(value) and bool(args))


@pytest.fixture
def subjects(tmp_path: Path) -> Iterator[dict[type, Any]]:
    meta = StreamMeta.open(tmp_path / "meta", 2)
    facade = ThreadSafeStreamMeta.open(tmp_path / "facade", 2, clock=VirtualClock())
    for m in (meta, facade):
        m.register(StreamTask(stream_id=1, task_id=1), 5)
    yield {
        StreamMeta: meta,
        ThreadSafeStreamMeta: facade,
        TaskLifecycle: TaskLifecycle(),
        RoleMachine: RoleMachine(),
        VirtualClock: VirtualClock(),
        RealClock: RealClock(),
    }
    meta.close()
    facade.close()


def _state(subject: Any) -> Any:
    if isinstance(subject, StreamMeta | ThreadSafeStreamMeta):
        return subject.view()
    if isinstance(subject, VirtualClock):
        return (subject.now, subject.pending)
    if isinstance(subject, RealClock):
        return None
    if isinstance(subject, TaskLifecycle):
        return (subject.status, subject.prev_status, subject.active, subject.waiting, subject.saved)
    return subject.role


def _good(annotation: Any, parameter: str) -> Any:
    """A valid value for every other parameter, so only the drawn one is wrong."""
    if annotation is int:
        return 1 if parameter in ("stream_id", "task_id") else max(0, LIMITS[parameter].low)
    if annotation is bool:
        return True
    if annotation is Clock:
        return VirtualClock()
    if annotation is Store:
        return MemoryStore()
    if isinstance(annotation, type) and issubclass(annotation, StreamTask):
        return StreamTask(stream_id=1, task_id=1)
    if callable(annotation) and isinstance(annotation, type) and hasattr(annotation, "__members__"):
        return next(iter(annotation))  # type: ignore[call-overload]
    return lambda *_: None


def test_the_api_has_methods_to_check() -> None:
    names = {f"{cls.__name__}.{name}" for cls, name, _, _ in METHODS}
    assert {"StreamMeta.register", "TaskLifecycle.handle", "VirtualClock.advance"} <= names


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_wrong_argument_is_refused_by_name_and_changes_nothing(
    subjects: dict[type, Any], data: st.DataObject
) -> None:
    cls, name, parameter, annotation = data.draw(st.sampled_from(METHODS), label="method")
    value = data.draw(_wrong(annotation, parameter), label="value")
    subject = subjects[cls]
    method: Callable[..., Any] = getattr(subject, name)
    hints = typing.get_type_hints(getattr(cls, name))
    arguments = {
        p.name: value if p.name == parameter else _good(hints[p.name], p.name)
        for p in list(inspect.signature(getattr(cls, name)).parameters.values())[1:]
        if (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty) or p.name == parameter
    }
    before = _state(subject)
    with pytest.raises((ArgumentTypeError, ArgumentValueError)) as caught:
        method(**arguments)
    assert caught.value.parameter == parameter
    assert f"{parameter} = {value!r}" in str(caught.value)
    assert _state(subject) == before
