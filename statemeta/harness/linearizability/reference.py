"""The stream-meta reference as a sequential specification, for checking concurrent histories.

A history's operations are ``Call``s: a client and one operation of the operation table
(statemeta.harness.operations); results are the harness's JSON results (``{"ok": ...}`` or
``{"error": ...}``, with ``"heartbeats"``), compared with ``==``. A state is a reference
adapter at levels 2 or 3 plus each client's handles: acquire and release act on the calling
client's own handles (a client releases what it acquired), which is what a thread using the
meta does. ``step`` forks the adapter (statemeta.harness.reference: a copy of plain data) and
applies one operation; ``key`` is the explorer's state key (statemeta.explore.state) plus what
each client's handles name, so two states with one key behave alike from then on.

Partitions: acquire and release touch one task's entry (its status, refcount, acquires, its
detached twin) and the caller's handles of that task, so they are partitioned by task; every
other operation touches the task list order, the counters, the store, the heartbeat, the start
round or the clock, and is shared (docs/linearizability.md argues it).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import attrs

from statemeta.errors import MisuseError, UndefinedBehaviour
from statemeta.explore.state import StateAbstraction, handle_ref
from statemeta.harness.failure import UNDEFINED
from statemeta.harness.linearizability.checker import SequentialSpec
from statemeta.harness.linearizability.history import History, Operation
from statemeta.harness.normalize import Json
from statemeta.harness.operations import TASK_POOL, Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.meta import TaskHandle
from statemeta.semantics import Semantics

__all__ = ["CONCURRENT_LEVELS", "Call", "RefState", "history_from_json", "reference_spec"]

CONCURRENT_LEVELS = (2, 3)
"""Levels with a meta that threads share (level 1 has one lifecycle per slot, nothing shared)."""


@attrs.frozen(cache_hash=True)
class Call:
    """One operation as a client called it."""

    client: int
    op: Op

    def to_json(self) -> dict[str, Any]:
        return {"client": self.client, **self.op.to_json()}

    @classmethod
    def from_json(cls, obj: object) -> Call:
        client = obj.get("client") if isinstance(obj, dict) else None
        if not isinstance(obj, dict) or isinstance(client, bool) or not isinstance(client, int):
            raise MisuseError(
                f"a call is {{'client': int, 'op': name, 'args': {{...}}}}, got {obj!r}"
            )
        rest = {k: v for k, v in obj.items() if k != "client"}
        return cls(obj["client"], Op.from_json(rest))

    def __repr__(self) -> str:
        return repr(self.op)


ClientHandles = tuple[Mapping[str, tuple[TaskHandle, ...]], Mapping[str, TaskHandle]]
"""A client's outstanding handles per slot (release gives back the last) and, per slot, the
handle it last gave back (what a release with none outstanding releases again)."""

_NONE: ClientHandles = ({}, {})


def undefined(operation: Operation[Call, Json]) -> bool:
    """Whether the recorded call hit the seed's undefined behaviour."""
    return isinstance(operation.result, dict) and UNDEFINED in operation.result


@attrs.frozen(eq=False)
class RefState:
    """The reference after some operations; never mutated (``step`` forks)."""

    adapter: ReferenceAdapter
    handles: Mapping[int, ClientHandles]
    gone: str | None = None
    """The seed's undefined behaviour that ended its process in this order of the calls: every
    call after it answers that, which no call that returned matches."""


def history_from_json(obj: object, *, where: str = "history") -> History[Call, Json]:
    """A history of calls of the operation table, as ``History.to_json(Call.to_json)`` wrote it
    (each call naming the client of its operation)."""
    history: History[Call, Json] = History.from_json(obj, Call.from_json, where=where)
    for index, operation in enumerate(history.operations):
        if operation.op.client != operation.client:
            raise MisuseError(
                f"{where}: operations[{index}]: the call names client {operation.op.client}, "
                f"the operation client {operation.client}"
            )
    return history


def reference_spec(
    level: int = 2, semantics: Semantics | str = Semantics.INTENDED
) -> SequentialSpec[RefState, Call, Json]:
    """The reference at ``level`` (2 or 3), started empty, in ``semantics``."""
    if level not in CONCURRENT_LEVELS:
        raise MisuseError(
            f"concurrent histories are checked at levels {CONCURRENT_LEVELS}, not {level}"
        )
    adapter = ReferenceAdapter(check_invariants=False, semantics=semantics)
    adapter.start(level)
    abstraction = StateAbstraction(TASK_POOL, symmetry=False)

    def step(state: RefState, call: Call) -> tuple[RefState, Json]:
        if state.gone is not None:
            return state, {UNDEFINED: state.gone}
        try:
            return _step(state, call)
        except UndefinedBehaviour as behaviour:
            gone = str(behaviour)
            return RefState(state.adapter, state.handles, gone), {UNDEFINED: gone}

    def _step(state: RefState, call: Call) -> tuple[RefState, Json]:
        new = state.adapter.fork()
        if not call.op.spec.client_handles:
            return RefState(new, state.handles), new.call(call.op)
        held, given_back = state.handles.get(call.client, _NONE)
        new.use_handles(held, given_back)
        result = new.call(call.op)
        mine = ({k: tuple(v) for k, v in new.handles.items() if v}, dict(new.given_back))
        new.use_handles({}, {})
        handles = {c: h for c, h in state.handles.items() if c != call.client}
        if mine[0] or mine[1]:
            handles[call.client] = mine
        return RefState(new, handles), result

    def key(state: RefState) -> Hashable:
        if state.gone is not None:
            return ("gone", state.gone)
        meta = state.adapter.meta.state
        ranks = {incarnation: rank for rank, incarnation in enumerate(sorted(meta.detached))}
        clients = tuple(
            (
                client,
                tuple(
                    (slot, tuple(handle_ref(meta.entries, ranks, h) for h in handles))
                    for slot, handles in sorted(held.items())
                ),
                tuple(
                    (slot, handle_ref(meta.entries, ranks, h))
                    for slot, h in sorted(given_back.items())
                ),
            )
            for client, (held, given_back) in sorted(state.handles.items())
        )
        return abstraction.key(state.adapter, clients)

    def partition(call: Call) -> Hashable | None:
        return call.op.arg("task") if call.op.spec.client_handles else None

    return SequentialSpec(RefState(adapter, {}), step, key, partition)
