"""docs/seed-defects.md's vnode callers column: a trace is a path of the vnode's callers once
each event sits between an acquire and a release, or it breaks a rule anyway."""

from __future__ import annotations

import pytest

from statemeta.errors import MisuseError
from statemeta.explore.reachability import parse_op, vnode_reachability
from statemeta.harness.operations import Op


def _ops(*texts: str) -> list[Op]:
    return [parse_op(t) for t in texts]


def test_a_pause_in_stop_is_no_path_of_the_vnode() -> None:
    """The acquire the pause handler makes first refuses a task in STOP."""
    found = vnode_reachability(
        _ops("register(task='s1')", "handle_event(event='stop', task='s1')",
             "handle_event(event='pause', task='s1')"),
        "paused-count", level=2, semantics="seed",
    )
    assert found.ops is None
    assert "acquired-not-stopping: acquire refuses s1, in STOP" in found.cell()


def test_a_pause_then_stop_all_is_one_once_bracketed() -> None:
    found = vnode_reachability(
        _ops("register(task='s1')", "handle_event(event='pause', task='s1')", "stop_all()"),
        "paused-count", level=2, semantics="seed",
    )
    assert found.ops == tuple(_ops(
        "register(task='s1')", "acquire(task='s1')", "handle_event(event='pause', task='s1')",
        "release(task='s1')", "stop_all()",
    ))
    assert found.cell().startswith("yes, with an acquire and a release")


def test_a_bracketed_trace_that_breaks_nothing_is_not_claimed() -> None:
    """In the intended semantics the same calls break no invariant: no "yes"."""
    found = vnode_reachability(
        _ops("register(task='s1')", "handle_event(event='pause', task='s1')", "stop_all()"),
        "paused-count", level=2, semantics="intended",
    )
    assert found.ops is None and "breaks no invariant" in found.why


def test_a_double_release_breaks_its_rule() -> None:
    found = vnode_reachability(
        _ops("register(task='s1')", "acquire(task='s1')", "release(task='s1')",
             "release(task='s1')"),
        "refcount", level=2, semantics="seed",
    )
    assert found.ops is None and "release-own-handle" in found.why


@pytest.mark.parametrize("text", ["register", "register(s1)", "nope(task='s1')",
                                  "register(task=s1)", "register(task='zz')", "1 +"])
def test_only_an_operation_parses(text: str) -> None:
    with pytest.raises(MisuseError):
        parse_op(text)
