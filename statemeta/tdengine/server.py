"""``statemeta tdengine serve``: TDengine's compiled code behind protocol 2, at levels 1-3.

It declares ``semantics: seed`` and observes only what the C keeps: at level 1, per task, the
state machine's ``status``, active transition, waiting list and ``prev`` (no saved stack: the
C swaps the status with ``prev``), outcomes as ok/rejected (the C returns 0 or an error code).
At level 2 it declares the results the C does not return (``RESULTS``: a call that returns a
code or nothing gives its outcome only), the start round's sets (``sets``) and the calls that
wait in the C for a task's timer (``BLOCKS``: answered blocked; the driver lets a waiting call
go on before it answers the next one). A fault of the
compiled code during a call (CompiledCodeFault) is answered as the protocol's ``fault``, naming
the finding and the operation; the instance is gone after it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from statemeta.errors import CompiledCodeFault
from statemeta.harness.adapter import PROTOCOL_VERSION
from statemeta.harness.serve import ProtocolError
from statemeta.store import FAULT_OPS
from statemeta.tdengine.driver import Driver
from statemeta.tdengine.sources import SEED_COMMIT

__all__ = ["LEVEL1_OBSERVED", "TDengineServer", "serve"]

LEVEL1_OBSERVED = ["status", "active", "waiting", "prev_status", "prev_event"]

STATUSES = ("ready", "dropping", "uninit", "stop", "scan_history", "halt", "pause", "ck")
"""ETaskStatus, by value."""

EVENTS = (
    None,
    "init",
    "init_scanhist",
    "scanhist_done",
    "stop",
    "gen_checkpoint",
    "checkpoint_done",
    "pause",
    "resume",
    "halt",
    "dropping",
)
"""EStreamTaskEvent, by value (0: no event)."""

LEVEL2_OBSERVED = {
    "view": ["vg_id", "stage", "role", "ids", "map_ids", "num_tasks", "stream_count",
             "paused_count", "tasks", "start_round.ready", "start_round.failed",
             "heartbeat.armed", "closing"],
    "tasks": ["id", "status", "active", "waiting", "refcount", "downstream_ready",
              "timer_active", "next_process_ver", "checkpointing_id", "failed_checkpoint_id",
              "fill_history", "trigger_param", "h_task_id", "stream_task_id",
              "persisted_status", "checkpoint_id", "checkpoint_ver"],
}  # fmt: skip
"""What the C keeps at level 2 (the driver's view2)."""

RESULTS = {
    **{
        op: "outcome"
        for op in ("unregister", "resume", "load_all", "start_all", "start_one",
                   "report_launch", "stop_all", "notify_close", "close_reopen",
                   "crash_reopen", "corrupt_record")
    },
    "complete_event": "none",
}
"""The level-2 operations whose C call returns a code (or nothing) where the reference returns
a value (removed/deferred, an outcome, a load report, the round's steps, a bool, the ids
stopped, a count; the reopens answer streamMetaLoadAllTasks's code, not the load report): only
their outcome is given. complete_event is the downstream check's
answer, streamProcessCheckRsp, which returns success whatever the second phase did: nothing
of it is given (its effects show in the view)."""

BLOCKS = ["unregister", "notify_close"]
"""The calls that wait in a sleep loop of the C for a task's timer (statemeta.harness.blocking):
answered ``{"blocked": true}``. Any other call that waits but an event's (an attached event's
wait is its ``pending``: below) is answered blocked too, undeclared: a divergence to see."""

_EVENT_OPS = frozenset({"handle_event", "complete_event", "begin_checkpoint"})
"""The level-2 calls whose wait is an attached event's (answered ``ok``, as at level 1)."""

_STORE_CODES = frozenset(
    {"register", "save_task", "commit", "load_all", "close_reopen", "crash_reopen",
     "corrupt_record"}
)  # fmt: skip
"""The calls whose negative code is the store's failure (a tdb call that failed: a planned
fault): answered as the reference's ``StoreFault``, which its store raises there."""

SETS = ["start_round.ready", "start_round.failed"]
"""The keys that are hash sets in the C (listed in the task list's order, not the join order)."""

_NOT_MAPPED = str(-(2**31))
"""The driver's answer for a slot whose task the meta does not map."""

_LEVEL1_OPS = {
    "handle": True,
    "complete": True,
    "restore": False,
    "reset": False,
    "set_ready": False,
}
"""The level-1 operations -> whether they take an event."""


def _outcome(code: str) -> str:
    return "ok" if code == "0" else "rejected"


class TDengineServer:
    """One implementation behind the protocol: the driver, started afresh for each instance."""

    def __init__(self, executable: Path) -> None:
        self.executable = executable
        self.driver: Driver | None = None
        self.slots: list[str] = []
        self.setup: list[str] = []
        """The lines that set the driver up (open the meta, the slots' records): a crash's
        fresh child gets them again."""
        self.level = 0

    def hello(self, protocol: object) -> dict[str, Any]:
        if protocol != PROTOCOL_VERSION:
            raise ProtocolError("unsupported_protocol", f"speaks protocol {PROTOCOL_VERSION}")
        return {
            "protocol": PROTOCOL_VERSION,
            "name": f"TDengine {SEED_COMMIT[:8]} stream code, compiled (statemeta tdengine)",
            "levels": [1, 2, 3],
            "semantics": "seed",
            "observes": {
                "1": {"view": [], "tasks": LEVEL1_OBSERVED},
                "2": LEVEL2_OBSERVED,
                "3": LEVEL2_OBSERVED,
            },
            "outcomes": "ok_rejected",
            "results": RESULTS,
            "sets": SETS,
            "blocks": BLOCKS,
        }

    def start(self, level: object, pool: object) -> None:
        if level not in (1, 2, 3):
            raise ProtocolError("unsupported_level", f"level {level!r}; levels are [1, 2, 3]")
        if not isinstance(pool, list):
            raise ProtocolError("bad_args", "start needs a pool (a list of slots)")
        self.stop()
        driver = self.driver = Driver(self.executable)
        self.setup = [f"meta {level} {driver.meta_dir}"]
        driver.ask(self.setup[0], "start")
        self.level = int(level)
        self.slots = []
        for index, slot in enumerate(pool):
            (sid, tid), (hsid, htid) = slot["id"], slot["h_task_id"]
            ssid, stid = slot["stream_task_id"]
            fill = int(bool(slot["fill_history"]))
            # level 1: every task waits for a downstream check, so init only starts
            dispatches = 1 if level == 1 else int(bool(slot["dispatches"]))
            self.setup.append(
                f"task {index} {sid} {tid} {fill} {hsid} {htid} {ssid} {stid} {dispatches} "
                f"{int(slot['trigger_param'])}"
            )
            driver.ask(self.setup[-1], "start")
            self.slots.append(str(slot["slot"]))

    def stop(self) -> None:
        if self.driver is not None:
            self.driver.close()
            self.driver = None

    def _driver(self, op: str) -> Driver:
        if self.driver is None:
            raise ProtocolError("not_started", f"{op} before start")
        return self.driver

    def view(self) -> dict[str, Any]:
        if self.level > 1:
            seen = json.loads(self._driver("view").ask("view2", "view"))
            return {"level": self.level, **seen, "map_ids": sorted(seen["map_ids"])}
        fields = self._driver("view").ask("view1", "view").split(" | ")[1:]
        tasks = []
        for entry in fields:
            index, status, active, prev_status, prev_event, count, *waiting = map(
                int, entry.split()
            )
            assert len(waiting) == 2 * count
            tasks.append(
                {
                    "slot": self.slots[index],
                    "status": STATUSES[status],
                    "active": EVENTS[active],
                    "waiting": [
                        [STATUSES[waiting[i]], EVENTS[waiting[i + 1]]]
                        for i in range(0, len(waiting), 2)
                    ],
                    "prev_status": STATUSES[prev_status],
                    "prev_event": EVENTS[prev_event],
                }
            )
        return {"level": 1, "tasks": tasks}

    def call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        driver = self._driver(op)
        if self.level > 1:
            return self._meta_call(driver, op, args)
        if op not in _LEVEL1_OPS:
            raise ProtocolError("unknown_op", f"no operation {op!r} at level 1")
        if args.get("task") not in self.slots:
            raise ProtocolError("bad_args", f"no task slot {args.get('task')!r}")
        line = f"sm {self.slots.index(str(args['task']))} {op}"
        if _LEVEL1_OPS[op]:
            if args.get("event") not in EVENTS[1:]:
                raise ProtocolError("bad_args", f"event {args.get('event')!r}")
            line += f" {args['event']}"
        described = f"{op}({', '.join(f'{k}={v}' for k, v in sorted(args.items()))})"
        answer = driver.ask(line, described)
        if op == "reset":
            return {"ok": None}
        return {"ok": "ok" if answer == "pending" else _outcome(answer)}

    def _meta_call(self, driver: Driver, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """A level-2 call: the C's own answer (a code, a bool, an id), nothing it does not
        return; the heartbeats it sent, as their bytes."""
        slot = self.slots.index(str(args["task"])) if "task" in args else -1
        arg = 0
        if "event" in args:
            arg = EVENTS.index(args["event"])
        elif op == "update_stage_role":
            arg = int(args["stage"]) * 2 + int(bool(args["is_leader"]))
        elif "ms" in args:
            arg = int(args["ms"])
        elif "ready" in args:
            arg = int(bool(args["ready"]))
        elif "checkpoint" in args:
            arg = int(args["checkpoint"])
        elif op == "fail_next":
            arg = FAULT_OPS.index(args["op"])
        elif "node" in args:
            arg = int(args["node"])
        described = f"{op}({', '.join(f'{k}={v}' for k, v in sorted(args.items()))})"
        if op in ("crash_reopen", "corrupt_record"):
            self._crash(driver, described)
        line = "mo -1 load_all 0" if op == "crash_reopen" else f"mo {slot} {op} {arg}"
        answer = driver.ask(line, described)
        result: dict[str, Any] = {"ok": _meta_result(op, answer)}
        if answer == "pending" and op not in _EVENT_OPS:
            result = {"blocked": True}
        elif answer == _NOT_MAPPED:
            result = {"error": "UnknownTaskError"}
        elif op in _STORE_CODES and answer.lstrip("-").isdigit() and int(answer) < 0:
            result = {"error": "StoreFault"}
        sent = driver.ask("sent", described).split()
        if sent:
            result["heartbeats"] = sent
        return result

    def _crash(self, driver: Driver, described: str) -> None:
        """A crash (level 3): a fresh child in the same directory, set up again, its meta
        opened on the last commit (a torn record is then committed by the driver's
        corrupt_record, which reopens and loads as crash_reopen's load_all does)."""
        driver.crash()
        for line in self.setup:
            driver.ask(line, described)

    def respond(self, line: str) -> dict[str, Any]:
        request_id: object = None
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                raise ProtocolError("bad_request", line[:200])
            request_id = request.get("id")
            op, args = request["op"], request.get("args") or {}
            return {"id": request_id, "result": self._answer(op, args)}
        except ProtocolError as error:
            return {"id": request_id, "error": {"code": error.code, "message": error.message}}
        except CompiledCodeFault as error:
            self.stop()
            message = f"TDengine's compiled code: {error}"
            return {"id": request_id, "error": {"code": "fault", "message": message}}
        except ValueError as error:
            return {"id": request_id, "error": {"code": "bad_request", "message": str(error)}}

    def _answer(self, op: str, args: dict[str, Any]) -> object:
        if op == "hello":
            return self.hello(args.get("protocol"))
        if op == "start":
            self.start(args.get("level"), args.get("pool"))
            return None
        if op == "stop":
            self.stop()
            return None
        if op == "view":
            return self.view()
        return self.call(op, args)


def _meta_result(op: str, answer: str) -> object:
    """The ``ok`` value of a level-2 answer: what the C's call returns."""
    if op in ("handle_event", "complete_event", "begin_checkpoint"):
        return "ok" if answer in ("pending", "0") else "rejected"
    if answer == "pending":
        return None  # a void call still waiting in the C (clear, for a task's timer): null
    if op in ("register", "acquire", "all_tasks_ready"):
        return answer == "1"
    if op == "update_stage_role":
        return ("uninit", "leader", "follower")[int(answer) - 1]
    if op in ("load_all", "start_all", "start_one", "stop_all", "latest_checkpoint_id",
              "close_reopen", "crash_reopen", "corrupt_record"):  # fmt: skip
        return int(answer)
    return None


def serve(executable: Path, lines: Iterable[str], out: TextIO) -> int:
    """Answers every non-blank request line; returns the exit code (0) at end of input."""
    server = TDengineServer(executable)
    try:
        for line in lines:
            if line.strip():
                out.write(json.dumps(server.respond(line), separators=(",", ":")) + "\n")
                out.flush()
    finally:
        server.stop()
    return 0
