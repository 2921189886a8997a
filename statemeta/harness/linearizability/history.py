"""Concurrent histories: what each client called, when, and what it saw.

An operation is an interval ``[invoked, returned]`` on a client's lane with the op and its
observed result. A *pending* operation has no response (``returned is None``): the client gave
up waiting (a timeout, a crash), so the operation may or may not have taken effect, and its
result is unknown. A client is sequential: its operations are disjoint in time, each invoked
strictly after the previous one returned, and only its last one may be pending.

Times are numbers on one clock (any unit); equal times count as overlapping, never as ordered.
The op and result types are the sequential specification's; the JSON form encodes them with
the functions the caller passes (JSON values by default).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar, cast

import attrs

from statemeta.errors import MisuseError

__all__ = ["HISTORY_FORMAT", "History", "Operation"]

OpT = TypeVar("OpT")
ResultT = TypeVar("ResultT")

HISTORY_FORMAT = "statemeta-history/1"
"""The ``format`` of a history's JSON document; a reader refuses any other."""


def _same(value: Any) -> Any:
    return value


@attrs.frozen
class Operation(Generic[OpT, ResultT]):
    """One call by one client: invoked, returned (None: pending), the op and its result."""

    client: int
    invoked: float
    returned: float | None
    op: OpT
    result: ResultT | None = None
    """The observed result; always None for a pending operation (nothing was observed)."""

    def __attrs_post_init__(self) -> None:
        if self.returned is not None and self.returned < self.invoked:
            raise MisuseError(
                f"operation {self.op!r} of client {self.client} returned at {self.returned}, "
                f"before it was invoked at {self.invoked}"
            )
        if self.returned is None and self.result is not None:
            raise MisuseError(
                f"operation {self.op!r} of client {self.client} is pending (no response) "
                f"but has a result {self.result!r}"
            )

    @property
    def pending(self) -> bool:
        return self.returned is None


@attrs.frozen
class History(Generic[OpT, ResultT]):
    """The operations of a concurrent run; an operation's index is its name in verdicts."""

    operations: tuple[Operation[OpT, ResultT], ...]

    def __attrs_post_init__(self) -> None:
        lanes: dict[int, list[int]] = {}
        for index, operation in enumerate(self.operations):
            lanes.setdefault(operation.client, []).append(index)
        for client, lane in lanes.items():
            lane.sort(key=lambda index: self.operations[index].invoked)
            for before, index in itertools.pairwise(lane):
                earlier, later = self.operations[before], self.operations[index]
                if earlier.returned is None or later.invoked <= earlier.returned:
                    raise MisuseError(
                        f"operations[{index}] of client {client} is invoked at "
                        f"{later.invoked}, before operations[{before}] of the same client "
                        f"returned (at {earlier.returned}): a client calls one at a time"
                    )

    @property
    def clients(self) -> tuple[int, ...]:
        return tuple(sorted({operation.client for operation in self.operations}))

    def select(self, indices: Sequence[int], until: float | None = None) -> History[OpT, ResultT]:
        """The sub-history of the operations at ``indices``, as seen at time ``until``.

        Operations invoked after ``until`` are left out; one returning after it is pending (its
        response had not been seen); the others keep their times and results.
        """
        chosen = (
            self.operations[index]
            for index in sorted(indices)
            if until is None or self.operations[index].invoked <= until
        )
        return History(
            tuple(
                attrs.evolve(op, returned=None, result=None)
                if until is not None and op.returned is not None and op.returned > until
                else op
                for op in chosen
            )
        )

    def to_json(
        self,
        encode_op: Callable[[OpT], Any] = _same,
        encode_result: Callable[[ResultT], Any] = _same,
    ) -> dict[str, Any]:
        operations = []
        for operation in self.operations:
            entry: dict[str, Any] = {
                "client": operation.client,
                "invoked": operation.invoked,
                "returned": operation.returned,
                "op": encode_op(operation.op),
            }
            if not operation.pending:
                entry["result"] = encode_result(cast(ResultT, operation.result))
            operations.append(entry)
        return {"format": HISTORY_FORMAT, "operations": operations}

    @classmethod
    def from_json(
        cls,
        obj: object,
        decode_op: Callable[[Any], OpT] = _same,
        decode_result: Callable[[Any], ResultT] = _same,
        *,
        where: str = "history",
    ) -> History[OpT, ResultT]:
        """Parses ``to_json``'s form; MisuseError naming ``where`` and the operation if malformed.

        The decoders may raise MisuseError, ValueError, TypeError or KeyError for a bad op or
        result; the error is re-raised as MisuseError with the place.
        """
        if not isinstance(obj, dict) or obj.get("format") != HISTORY_FORMAT:
            raise MisuseError(f"{where}: not a history of format {HISTORY_FORMAT!r}")
        if set(obj) != {"format", "operations"} or not isinstance(obj["operations"], list):
            raise MisuseError(f"{where}: a history is {{'format', 'operations': [...]}}")
        operations = []
        for index, entry in enumerate(obj["operations"]):
            here = f"{where}: operations[{index}]"
            operations.append(_operation(entry, decode_op, decode_result, here))
        try:
            return cls(tuple(operations))
        except MisuseError as error:
            raise MisuseError(f"{where}: {error}") from error


_REQUIRED = {"client", "invoked", "returned", "op"}


def _operation(
    entry: object,
    decode_op: Callable[[Any], OpT],
    decode_result: Callable[[Any], ResultT],
    where: str,
) -> Operation[OpT, ResultT]:
    if not isinstance(entry, dict) or not _REQUIRED <= set(entry) <= _REQUIRED | {"result"}:
        raise MisuseError(
            f"{where}: expected an object with {sorted(_REQUIRED)} and, unless pending, "
            f"'result'; got {entry!r}"
        )
    client = entry["client"]
    if not isinstance(client, int) or isinstance(client, bool) or client < 0:
        raise MisuseError(f"{where}.client: expected an integer >= 0, got {client!r}")
    invoked = _time(entry["invoked"], f"{where}.invoked")
    returned = None if entry["returned"] is None else _time(entry["returned"], f"{where}.returned")
    if returned is None and "result" in entry:
        raise MisuseError(f"{where}: a pending operation (returned null) has no 'result'")
    if returned is not None and "result" not in entry:
        raise MisuseError(f"{where}: a completed operation needs its 'result'")
    try:
        op = decode_op(entry["op"])
        result = decode_result(entry["result"]) if returned is not None else None
        return Operation(client, invoked, returned, op, result)
    except (MisuseError, ValueError, TypeError, KeyError) as error:
        raise MisuseError(f"{where}: {error}") from error


def _time(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MisuseError(f"{where}: expected a finite number, got {value!r}")
    return value
