"""The public API refuses wrong types and ranges before anything changes (issue 32 item 2,
issue 34 finding 13): each finding as it was reported, then the table's own rules."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from statemeta import (
    RealClock,
    Role,
    RoleMachine,
    StreamMeta,
    StreamTask,
    TaskId,
    TaskLifecycle,
    VirtualClock,
    should_stop,
)
from statemeta.arguments import LIMITS, MAX_ADVANCE_MS, check_for, checked
from statemeta.errors import ArgumentTypeError, ArgumentValueError, InvalidRecordError


@pytest.fixture
def meta(tmp_path: Path) -> Iterator[StreamMeta]:
    meta = StreamMeta.open(tmp_path / "meta", 2)
    meta.register(StreamTask(stream_id=1, task_id=1), 5)
    yield meta
    meta.close()


def _calls(meta: StreamMeta) -> list[tuple[str, Callable[[], object], type[Exception], str]]:
    """(finding, the call, the error it must raise, the parameter it must name)."""
    task = StreamTask(stream_id=1, task_id=2)
    return [
        ("handle_event 'pause'", lambda: meta.handle_event(1, 1, "pause"),  # type: ignore[arg-type]
         ArgumentTypeError, "event"),
        ("handle_event None", lambda: meta.handle_event(1, 1, None),  # type: ignore[arg-type]
         ArgumentTypeError, "event"),
        ("handle_event 7", lambda: meta.handle_event(1, 1, 7),  # type: ignore[arg-type]
         ArgumentTypeError, "event"),
        ("update_stage_role stage 'x'",
         lambda: meta.update_stage_role(stage="x", is_leader=True),  # type: ignore[arg-type]
         ArgumentTypeError, "stage"),
        ("update_stage_role is_leader 1",
         lambda: meta.update_stage_role(3, 1),  # type: ignore[arg-type]
         ArgumentTypeError, "is_leader"),
        ("register a dict", lambda: meta.register({"stream_id": 1}, 1),  # type: ignore[arg-type]
         ArgumentTypeError, "task"),
        ("register ver '1'", lambda: meta.register(task, ver="1"),  # type: ignore[arg-type]
         ArgumentTypeError, "ver"),
        ("register ver -5", lambda: meta.register(task, ver=-5), ArgumentValueError, "ver"),
        ("release None", lambda: meta.release(None),  # type: ignore[arg-type]
         ArgumentTypeError, "handle"),
        ("begin_checkpoint nan", lambda: meta.begin_checkpoint(1, 1, math.nan, 1),  # type: ignore[arg-type]
         ArgumentTypeError, "checkpoint_id"),
        ("start_task_timer inf", lambda: meta.start_task_timer(1, 1, math.inf),  # type: ignore[arg-type]
         ArgumentTypeError, "delay_ms"),
        ("node id 2**31", lambda: meta.report_downstream_update(1, 1, 2**31),
         ArgumentValueError, "node_id"),
        ("task id 2**31", lambda: meta.acquire(1, 2**31), ArgumentValueError, "task_id"),
        ("stream id True", lambda: meta.status(True, 1), ArgumentTypeError, "stream_id"),
    ]


def test_each_finding_is_refused_naming_its_parameter_and_nothing_changes(
    meta: StreamMeta,
) -> None:
    for finding, call, error, parameter in _calls(meta):
        before = meta.view()
        with pytest.raises(error) as caught:
            call()
        assert caught.value.parameter == parameter, finding  # type: ignore[attr-defined]
        assert f"{parameter} = " in str(caught.value), finding
        assert "expected" in str(caught.value), finding
        assert meta.view() == before, finding
    meta.clock.advance(1_000)  # a heartbeat and a timer still work: nothing was left armed bad
    assert meta.stop_all() == (TaskId(1, 1),)


def test_open_refuses_a_str_vg_id_before_creating_anything(tmp_path: Path) -> None:
    with pytest.raises(ArgumentTypeError, match="vg_id = '2'"):
        StreamMeta.open(tmp_path / "m", vg_id="2")  # type: ignore[arg-type]
    assert not (tmp_path / "m").exists()


def test_the_machines_and_predicates_take_their_enums_only() -> None:
    lifecycle = TaskLifecycle()
    with pytest.raises(ArgumentTypeError, match=r"TaskEvent\.INIT, not its name"):
        lifecycle.handle("init")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="event = 1"):
        lifecycle.handle(1)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="status = 3"):
        should_stop(3)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="event = 'close'"):
        RoleMachine().apply("close")  # type: ignore[arg-type]
    assert lifecycle.status.name == "UNINIT"


def test_stream_task_refuses_a_bool_id_as_a_type_error() -> None:
    with pytest.raises(TypeError, match="task_id = True"):
        StreamTask(stream_id=1, task_id=True)
    with pytest.raises(InvalidRecordError, match=r"stream_id = 1\.5"):
        StreamTask(stream_id=1.5, task_id=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("ms", [2**31, math.nan, math.inf, -1, True])
def test_virtual_clock_advance_refuses_what_would_never_return(ms: Any) -> None:
    clock = VirtualClock()
    with pytest.raises((ArgumentTypeError, ArgumentValueError), match="ms = "):
        clock.advance(ms)
    assert clock.now == 0
    with pytest.raises(ArgumentTypeError, match="now = nan"):
        VirtualClock(now=math.nan)  # type: ignore[arg-type]


def test_advance_takes_its_maximum(meta: StreamMeta) -> None:
    clock = meta.clock
    assert isinstance(clock, VirtualClock)
    clock.advance(MAX_ADVANCE_MS)
    assert clock.now == MAX_ADVANCE_MS


def test_real_clock_refuses_a_delay_no_timer_can_hold() -> None:
    with pytest.raises(ArgumentTypeError, match="delay_ms = inf"):
        RealClock().call_later(math.inf, lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="callback = None"):
        RealClock().call_later(1, None)  # type: ignore[arg-type]


def test_an_int_parameter_without_a_row_is_refused_at_its_first_call() -> None:
    @checked
    def f(unlisted: int) -> int:
        return unlisted

    with pytest.raises(TypeError, match="'unlisted' has no row"):
        f(1)


def test_every_limit_admits_its_ends_only() -> None:
    for name, limit in LIMITS.items():
        check = check_for(name, int)
        check("f", name, limit.low)
        check("f", name, limit.high)
        for outside in (limit.low - 1, limit.high + 1):
            with pytest.raises(ArgumentValueError, match=f"{name} = {outside}"):
                check("f", name, outside)


def test_a_task_prints_in_a_few_hundred_characters_with_its_reserve_summarised() -> None:
    task = StreamTask(stream_id=1, task_id=1)
    assert "reserve=<256 bytes, all zero>" in repr(task)
    assert len(repr(task)) < 700  # 1,592 with the reserve as escapes
    marked = StreamTask(stream_id=1, task_id=1, reserve=b"\x01" * 3 + bytes(253))
    assert "reserve=<256 bytes, 3 non-zero>" in repr(marked)


def test_the_enums_print_by_name(meta: StreamMeta) -> None:
    assert str(meta.status(1, 1)) == "UNINIT"
    assert meta.update_stage_role(1, True) is Role.LEADER
    assert f"{meta.role}" == "LEADER"
    assert f"{meta.role:d}" == "2"  # the value is still there for formats that ask for it


def _public_members() -> Iterator[tuple[str, object]]:
    """Every public name of statemeta and every public method or property of its classes."""
    import enum
    import inspect

    import statemeta

    for name in statemeta.__all__:
        if name.startswith("__"):
            continue
        thing = getattr(statemeta, name)
        yield name, thing
        if inspect.isclass(thing) and not issubclass(thing, enum.Enum):
            for member, value in vars(thing).items():
                if not member.startswith("_") and (
                    isinstance(value, property) or callable(getattr(value, "__func__", value))
                ):
                    yield f"{name}.{member}", value


def test_every_public_name_says_what_it_means() -> None:
    undocumented = [name for name, thing in _public_members() if not (thing.__doc__ or "").strip()]
    assert undocumented == []
    # more than the C function's name: a docstring that is only "streamMetaX (MetaCore.x)."
    bare = [
        name for name, thing in _public_members()
        if len((thing.__doc__ or "").split()) < 4
    ]
    assert bare == []
