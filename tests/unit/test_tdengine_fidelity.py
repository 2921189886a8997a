"""The seed profile bug for bug with TDengine's compiled code (issue 30 item 1): for each
switch of spec/divergences.toml that the compiled C can show, a short trace that the C runs
conformant with the seed reference, and that fails against the seed with that one switch
flipped, at the place the switch decides. The C is built and served as in test_tdengine.py
(its fixtures and helpers)."""

from __future__ import annotations

import functools
from pathlib import Path

import attrs
import pytest
from test_tdengine import _sut, driver, tree

from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import replay
from statemeta.semantics import Switch

__all__ = ["driver", "tree"]  # the fixtures, imported for pytest


@attrs.frozen
class ShownByC:
    """A trace and where it fails against the seed with the switch flipped."""

    ops: tuple[Op, ...]
    fails_at: str
    """A part of the failure's detail without the switch (the key or invariant it decides)."""
    level: int = 2


SHOWN_BY_C: dict[Switch, ShownByC] = {
    # M12: the C arms every meta's heartbeat timer at open (a vnode is UNINIT), and a follower's
    # stays armed until its next tick (200 ms later), which ends it.
    Switch.HEARTBEAT_ENDS_AT_TICK: ShownByC(
        (Op.of("update_stage_role", stage=1, is_leader=True),
         Op.of("update_stage_role", stage=2, is_leader=False),
         Op.of("advance_clock", ms=1000)),
        "heartbeat",
    ),
    # M16: the wait for the heartbeat chain is commented out in streamMetaNotifyClose: a
    # leader's chain goes on after it, 5 s later sending a heartbeat of its stopped task.
    Switch.HEARTBEAT_AFTER_NOTIFY_CLOSE: ShownByC(
        (Op.of("update_stage_role", stage=1, is_leader=True), Op.of("register", task="s1"),
         Op.of("notify_close"), Op.of("advance_clock", ms=5000)),
        "heartbeat",
    ),
    # M13: the C's record keeps the status byte it was made with (streamMetaSaveTask encodes
    # the task as it is): a paused task is saved READY, the checkpoint id unchanged.
    Switch.SAVE_TASK_KEEPS_RECORD: ShownByC(
        (Op.of("register", task="s1"), Op.of("handle_event", task="s1", event="pause"),
         Op.of("save_task", task="s1")),
        "persisted_status",
    ),
    # M15: tdb's transaction is open from open on: the planned begin fault fires at the tail of
    # register's commit (t1 durable: the crash brings it back) and leaves the handle stale, so
    # the next register's commit fails too.
    Switch.TRANSACTION_KEPT_OPEN: ShownByC(
        (Op.of("fail_next", op="begin"), Op.of("register", task="t1"),
         Op.of("register", task="s1"), Op.of("crash_reopen")),
        "register(task='s1')", level=3,
    ),
    # M14: INIT_SCANHIST given to a stream task with nothing downstream: the C completes INIT
    # (the task's kind), which is refused, and leaves INIT_SCANHIST in progress.
    Switch.READY_STEP_BY_KIND: ShownByC(
        (Op.of("register", task="t1"), Op.of("handle_event", task="t1", event="init_scanhist")),
        "active",
    ),
}  # fmt: skip


@pytest.mark.parametrize("switch", list(SHOWN_BY_C), ids=lambda s: s.value)
def test_the_compiled_c_shows_the_seed_side_of(switch: Switch, tree: Path, driver: Path) -> None:
    shown = SHOWN_BY_C[switch]
    seed = functools.partial(ReferenceAdapter, semantics="seed")
    flipped = functools.partial(ReferenceAdapter, semantics="seed", flipped=frozenset({switch}))
    with SubprocessAdapter(_sut(tree)) as adapter:
        conformant = replay(shown.ops, level=shown.level, sut=adapter, sut_command=_sut(tree),
                            reference=seed)
        without = replay(shown.ops, level=shown.level, sut=adapter, sut_command=_sut(tree),
                         reference=flipped)
    assert conformant is None, conformant.failure if conformant else None
    assert without is not None, f"the C conforms with {switch.value} flipped too"
    assert shown.fails_at in without.failure.detail, without.failure


ADAPTER_CALLS: dict[str, tuple[Op, ...]] = {
    # the vnode pauses by streamTaskPause, which counts the pause (the driver once called the
    # state machine's event alone, which counts nothing)
    "pause_counted": (Op.of("register", task="s1"), Op.of("handle_event", task="s1",
                                                           event="pause")),
    # the checkpoint id is recorded once GEN_CHECKPOINT is taken, not before (UNINIT refuses it)
    "checkpoint_refused": (Op.of("register", task="s1"),
                           Op.of("begin_checkpoint", task="s1", checkpoint=2)),
    # the downstream re-check's timer holds no reference of the task (streamStart.c)
    "task_timer": (Op.of("register", task="s1"), Op.of("start_task_timer", task="s1"),
                   Op.of("advance_clock", ms=1000)),
    # addIntoNodeUpdateList's queue, sent by the leader's next heartbeat
    "downstream_update": (Op.of("register", task="s1"),
                          Op.of("report_downstream_update", task="s1", node=2),
                          Op.of("update_stage_role", stage=1, is_leader=True),
                          Op.of("advance_clock", ms=5000)),
    # start_one of a task the meta does not map: TASK_IVLD_STATUS, the unknown task's error
    "start_one_unmapped": (Op.of("start_one", task="s1"),),
    # the vnode sets the restart sentinel (taskStarting) before it starts every task, so the
    # C records the launch results of the round start_all opens (t1's completes inside it)
    "start_round": (Op.of("register", task="t1"), Op.of("register", task="s1"),
                    Op.of("start_all"), Op.of("report_launch", task="s1", ready=False)),
    # a task with nothing downstream gets no check response (the harness's complete_event)
    "no_downstream": (Op.of("register", task="t1"),
                      Op.of("complete_event", task="t1", event="init")),
}  # fmt: skip
"""Traces on which the adapter once observed the C wrongly (docs/tdengine.md): each now
conforms with the seed reference (each failed before its fix, in the keep-going catalogue)."""


@pytest.mark.parametrize("name", list(ADAPTER_CALLS))
def test_the_adapter_calls_the_c_as_the_vnode_does(name: str, tree: Path, driver: Path) -> None:
    seed = functools.partial(ReferenceAdapter, semantics="seed")
    with SubprocessAdapter(_sut(tree)) as adapter:
        found = replay(ADAPTER_CALLS[name], level=2, sut=adapter, sut_command=_sut(tree),
                       reference=seed)
    assert found is None, found.failure
