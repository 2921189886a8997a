"""Calls that block in the seed's C: which, when, and how the reference's result says so.

TDengine's stream meta waits inside some calls for something only a later call gives: a sleep
loop until a task's timer has ended. Real code under the harness cannot return from such a
call, so protocol 2 lets an implementation answer it ``{"blocked": true}`` (for the operations
its ``hello`` lists in ``blocks``) and finish it at a later step (docs/harness-protocol.md,
"Calls that block").

The reference never blocks: it runs each call to its end at once, and where the seed waits
with an observable middle its state says so (unregister's ``deferred``: the task DROPPING and
still mapped until its timer's end removes it). ``BLOCKING`` says, per operation, from the
reference's result, whether the seed waits there; for an operation the implementation declares,
both sides' results are compared as blocked or not (``blocked_form``). An operation not in the
table never blocks in the seed's reachable behaviour as the reference models it (a release or
clear that frees a task whose timer runs follows a release below zero, M8, whose freed task the
reference does not model): an implementation blocked there diverges at its result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from statemeta.harness.normalize import Json
from statemeta.harness.wire import is_int

__all__ = ["BLOCKED", "BLOCKING", "Blocking", "blocked_form"]

BLOCKED = "blocked"
"""The key of a blocked answer: ``{"blocked": true}``."""


@attrs.frozen
class Blocking:
    """One operation that can block in the seed: where it waits, and when."""

    waits_in: str
    """Where the C waits, and for what."""
    waits: Callable[[dict[str, Json]], bool]
    """Whether the seed waits, from the reference's result of the call."""
    when: str
    """``waits`` in words (for the protocol document)."""


def _deferred(result: dict[str, Json]) -> bool:
    return result.get("ok") == "deferred"


def _tasks_in_timer(result: dict[str, Json]) -> bool:
    count = result.get("ok")
    return is_int(count) and isinstance(count, int) and count > 0


BLOCKING: Mapping[str, Blocking] = {
    "unregister": Blocking(
        "streamMetaUnregisterTask, after setting the task DROPPING: a 10 ms sleep loop while "
        "the task's timerActive is not 0",
        _deferred,
        "the reference's result is `deferred` (a task timer is active)",
    ),
    "notify_close": Blocking(
        "streamMetaNotifyClose, after stopping every task: a 100 ms sleep loop while a task is "
        "in its timer (streamMetaTaskInTimer)",
        _tasks_in_timer,
        "the reference's result, the tasks with an active task timer, is above 0",
    ),
}
"""The operations that block in the seed's C, with the reference's sign of it."""


def blocked_form(op_name: str, result: dict[str, Json]) -> dict[str, Json] | None:
    """``result`` as the comparison of a declared blocking operation sees it: ``{"blocked":
    true}`` (and its heartbeats) when it is a blocked answer or a reference result where the
    seed waits; None when it is neither (it is compared as declared otherwise)."""
    blocking = BLOCKING.get(op_name)
    if result.get(BLOCKED) is not True and (blocking is None or not blocking.waits(result)):
        return None
    return {BLOCKED: True, **{k: v for k, v in result.items() if k == "heartbeats"}}
