"""The preconditions the seed asserts (reference section 8.1), as predicates over one task.

Each returns None when the call is allowed, else the rule it breaks (the PreconditionError
message). The meta raises with them before it changes anything; the operation table
(statemeta.harness.operations) declares them beside the operations they guard, so the harness,
the property suite and the explorer never send such a call. The third one, a second phase with
nothing active in SCAN_HISTORY / HALT / CK, is the lifecycle's own (``TaskLifecycle.complete``);
``complete_broken`` states it for the table.
"""

from __future__ import annotations

from collections.abc import Callable

from statemeta.codec import NO_RELATED_TASK, StreamTask
from statemeta.errors import PreconditionError
from statemeta.lifecycle import Listener, StatusChange, TaskEvent, TaskLifecycle, should_stop
from statemeta.tables import LIFECYCLE

__all__ = ["LifecycleCall", "complete_broken", "halt_broken", "start_one_broken"]

LifecycleCall = Callable[[TaskLifecycle, Listener], object]
"""One call on a lifecycle (handle, complete, resume), given the listener to pass it."""


class _HaltApplied(Exception):
    """Stops a probe at the first HALT row it applies."""


def _stop_at_halt(_lifecycle: TaskLifecycle, change: StatusChange) -> None:
    if change.event is TaskEvent.HALT:
        raise _HaltApplied


def halt_broken(
    task: StreamTask, lifecycle: TaskLifecycle, event: TaskEvent | None, call: LifecycleCall
) -> str | None:
    """HALT's action asserts a related fill-history task (streamTaskKeepCurrentVerInWal): is a
    HALT row applied by ``call`` (``event`` itself, or an attached HALT it fires from the
    waiting list) to a task with none? Found on a copy, only when a HALT is in play."""
    if task.h_task_id != NO_RELATED_TASK:
        return None
    if event is not TaskEvent.HALT and all(e is not TaskEvent.HALT for _s, e in lifecycle.waiting):
        return None
    probe = lifecycle.copy()
    probe.listener = None
    try:
        call(probe, _stop_at_halt)
    except _HaltApplied:
        return (
            f"HALT applied to task {task.id}, which has no fill-history task: the seed asserts "
            f"one (streamTaskKeepCurrentVerInWal)"
        )
    except PreconditionError as e:
        return str(e)
    return None


def complete_broken(lifecycle: TaskLifecycle) -> str | None:
    """A second phase with nothing active where the seed asserts one is active
    (streamTaskOnHandleEventSuccess)."""
    if lifecycle.active is None and lifecycle.status in LIFECYCLE.complete_needs_active:
        return f"a second phase with no transition active in {lifecycle.status.name}"
    return None


def start_one_broken(
    task: StreamTask, lifecycle: TaskLifecycle, downstream_ready: bool
) -> str | None:
    """streamMetaStartOneTask asserts the task it starts is not downstream-ready (checked once
    the acquire succeeded and the task is not a fill-history task)."""
    if downstream_ready and not task.fill_history and not should_stop(lifecycle.status):
        return f"start_one of task {task.id}, which is downstream-ready already"
    return None
