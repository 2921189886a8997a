#!/usr/bin/env python3
"""A level-1 implementation of the harness protocol (docs/harness-protocol.md), protocol 2:
TDengine's task state machine (streamTaskSm.c) as it is at the seed commit, observed the way a
wrapper around that C library can observe it.

    statemeta check --sut "python examples/seed-lifecycle-py/serve.py" --level 1 --semantics seed

Written from spec/lifecycle.toml and the seed column of spec/divergences.md, with no import of
statemeta: `TaskSm` is shaped like the C struct (a status, `prev` {status, event}, the active
two-phase transition, the list of waiting events) and keeps nothing else. It has no saved
stack: its restore swaps the status with `prev` (L2). Its calls return the C library's codes
(0, or INVALID_STATETRANS), so it declares `outcomes: ok_rejected`; it declares the view keys a
wrapper can read from the struct (status, active, waiting, prev_status, prev_event).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

PROTOCOL = 2
OK, INVALID_STATETRANS = 0, 0x80004103
OBSERVED = ["status", "active", "waiting", "prev_status", "prev_event"]

# doInitStateTransferTable: (status, event) -> (next status, two-phase, attached-to status).
# A two-phase row only starts (autoInvokeEndFn = false); an attached row waits for its status.
_ROWS: dict[tuple[str, str], tuple[str, bool, str | None]] = {
    ("uninit", "init"): ("ready", True, None),
    ("uninit", "init_scanhist"): ("scan_history", True, None),
    ("scan_history", "scanhist_done"): ("ready", False, None),
    ("ready", "gen_checkpoint"): ("ck", False, None),
    ("ck", "checkpoint_done"): ("ready", False, None),
    ("ck", "halt"): ("halt", False, "ready"),
    ("ck", "pause"): ("pause", False, "ready"),
    ("halt", "pause"): ("pause", False, "ready"),
    ("stop", "pause"): ("stop", False, None),
    ("dropping", "pause"): ("dropping", False, None),
}
for _status in ("ready", "halt", "pause"):
    _ROWS[_status, "halt"] = ("halt", False, None)
for _status in ("ready", "scan_history", "uninit", "pause"):
    _ROWS[_status, "pause"] = ("pause", False, None)
_STATUSES = ("ready", "dropping", "uninit", "stop", "scan_history", "halt", "pause", "ck")
for _status in _STATUSES:
    _ROWS[_status, "stop"] = ("stop", False, None)
    _ROWS[_status, "dropping"] = ("dropping", False, None)
EVENTS = (
    "init", "init_scanhist", "scanhist_done", "stop", "gen_checkpoint", "checkpoint_done",
    "pause", "resume", "halt", "dropping",
)
TWO_PHASE = ("init", "init_scanhist")


class TaskSm:
    """One task's SStreamTaskSM at the seed: calloc'ed, so `prev` starts as {READY, 0} (L8)."""

    def __init__(self) -> None:
        self.status = "uninit"
        self.prev: tuple[str, str | None] = ("ready", None)
        self.active: str | None = None
        self.waiting: list[tuple[str, str]] = []

    def _move(self, new: str, event: str | None) -> None:
        """Every transition overwrites prev, a repeated pause too (L1); the waiting list is
        left as it is, whatever the new status (L4)."""
        self.prev = (self.status, event)
        self.status = new

    def _fire_waiting(self) -> None:
        """doHandleWaitingEvent: element 0 fires, but the last element is removed (L3)."""
        while self.waiting and self.waiting[0][0] == self.status:
            _required, event = self.waiting[0]
            self.waiting.pop()
            self._move(_ROWS[self.status, event][0], event)

    def handle_event(self, event: str) -> int:
        row = _ROWS.get((self.status, event))
        if row is None:
            return INVALID_STATETRANS
        new, two_phase, attach = row
        if two_phase:
            self.active = event
            return OK
        self.active = None
        if attach is not None:
            self.waiting.append((attach, event))  # the C caller blocks here (see README.md)
            return OK
        self._move(new, event)
        self._fire_waiting()
        return OK

    def on_success(self, event: str) -> int:
        if self.active != event:
            return INVALID_STATETRANS
        self.active = None
        self._move(_ROWS[self.status, event][0], event)
        self._fire_waiting()
        return OK

    def restore_status(self) -> int:
        """streamTaskRestoreStatus swaps the status with prev's (L2)."""
        if self.status not in ("pause", "halt"):
            return INVALID_STATETRANS
        self._move(self.prev[0], None)
        self._fire_waiting()
        return OK

    def reset_status(self) -> None:
        """streamTaskResetStatus leaves prev as it was (L6)."""
        self.status, self.active, self.waiting = "uninit", None, []

    def set_status_ready(self) -> int:
        if self.status == "dropping":
            return INVALID_STATETRANS
        self._move("ready", None)
        self.active, self.waiting = None, []
        return OK


class ProtocolError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _code(code: int) -> str:
    """The wrapper's outcome: the C library says 0 or INVALID_STATETRANS, nothing finer."""
    return "ok" if code == OK else "rejected"


class Server:
    def __init__(self) -> None:
        self.slots: dict[str, TaskSm] | None = None

    def _task(self, args: dict[str, Any]) -> TaskSm:
        assert self.slots is not None
        task = self.slots.get(args.get("task"))  # type: ignore[arg-type]
        if task is None:
            raise ProtocolError("bad_args", f"no task slot {args.get('task')!r}")
        return task

    def _event(self, args: dict[str, Any], allowed: tuple[str, ...]) -> str:
        event = args.get("event")
        if event not in allowed:
            raise ProtocolError("bad_args", f"event {event!r} is not one of {allowed}")
        return str(event)

    def _operations(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {
            "handle": lambda a: _code(self._task(a).handle_event(self._event(a, EVENTS))),
            "complete": lambda a: _code(self._task(a).on_success(self._event(a, TWO_PHASE))),
            "restore": lambda a: _code(self._task(a).restore_status()),
            "reset": lambda a: self._task(a).reset_status(),
            "set_ready": lambda a: _code(self._task(a).set_status_ready()),
        }

    def view(self) -> dict[str, Any]:
        assert self.slots is not None
        return {
            "level": 1,
            "tasks": [
                {
                    "slot": slot,
                    "status": sm.status,
                    "active": sm.active,
                    "waiting": [list(w) for w in sm.waiting],
                    "prev_status": sm.prev[0],
                    "prev_event": sm.prev[1],
                }
                for slot, sm in self.slots.items()
            ],
        }

    def answer(self, op: str, args: dict[str, Any]) -> Any:
        if op == "hello":
            if args.get("protocol") != PROTOCOL:
                raise ProtocolError("unsupported_protocol", f"speaks protocol {PROTOCOL} only")
            return {
                "protocol": PROTOCOL,
                "name": "seed-lifecycle-py (examples/seed-lifecycle-py)",
                "levels": [1],
                "semantics": "seed",
                "observes": {"1": {"view": [], "tasks": OBSERVED}},
                "outcomes": "ok_rejected",
            }
        if op == "start":
            if args.get("level") != 1:
                raise ProtocolError("unsupported_level", f"level {args.get('level')!r}")
            self.slots = {task["slot"]: TaskSm() for task in args["pool"]}
            return None
        if op == "stop":
            self.slots = None
            return None
        if self.slots is None:
            raise ProtocolError("not_started", f"{op} before start")
        if op == "view":
            return self.view()
        operation = self._operations().get(op)
        if operation is None:
            raise ProtocolError("unknown_op", f"no operation {op!r} at level 1")
        return {"ok": operation(args)}

    def respond(self, line: str) -> dict[str, Any]:
        try:
            request = json.loads(line)
        except ValueError as error:
            return {"id": None, "error": {"code": "bad_request", "message": f"not JSON: {error}"}}
        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            return {"id": None, "error": {"code": "bad_request", "message": line[:200]}}
        request_id = request.get("id")
        try:
            return {"id": request_id, "result": self.answer(request["op"], request.get("args", {}))}
        except ProtocolError as error:
            return {"id": request_id, "error": {"code": error.code, "message": str(error)}}


def main() -> None:
    server = Server()
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(server.respond(line), separators=(",", ":")) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
