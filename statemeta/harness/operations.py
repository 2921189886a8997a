"""The operation alphabet shared by the property suite, the conformance harness and the explorer.

Data first: the task pool (``TASK_POOL``), the finite argument domains (``DOMAINS``, built from
the spec enums) and one ``OpSpec`` per operation (``OP_SPECS``). Everything that drives a meta
(Hypothesis rules, the subprocess protocol, the BFS explorer) enumerates these tables; nothing
else lists operations.

Levels: 1 = a task lifecycle per pool slot, no meta; 2 = the meta in memory; 3 = the meta with
persistence (close/crash and reopen, injected store faults, damaged records). An adapter
started at level 2 accepts the level-2 operations; at level 3, those of levels 2 and 3
(``ops_at``).

Results are JSON: ``{"ok": value}`` or ``{"error": "<statemeta.errors class name>"}``, plus
``"heartbeats": [hex payload, ...]`` when the operation handed heartbeats to the transport.
Ids in results and views are ``[stream_id, task_id]``; ops name pool slots, never raw ids.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs

from statemeta.codec import StreamTask, TaskId, encode_task, encode_task_key
from statemeta.errors import MisuseError
from statemeta.lifecycle import LIFECYCLE_ROWS, TaskEvent
from statemeta.store import FAULT_OPS

__all__ = [
    "DOMAINS",
    "LEVELS",
    "OP_SPECS",
    "REGISTER_VER",
    "TASK_POOL",
    "TORN_BYTES",
    "TRIGGER_PARAM_MS",
    "JsonScalar",
    "Op",
    "OpSpec",
    "Param",
    "TaskSlot",
    "ops_at",
    "slot_of",
]

JsonScalar: TypeAlias = str | int | bool | None

LEVELS: tuple[int, ...] = (1, 2, 3)

TRIGGER_PARAM_MS = 300
"""The trigger period of the pool's trigger-timer task (fires between two 1 s advances)."""
REGISTER_VER = 1
"""The version every register passes (a fill-history task is registered at 1 anyway)."""
TORN_BYTES = 12
"""What corrupt_record leaves of a record: its length header and version, the rest lost."""


@attrs.frozen
class TaskSlot:
    """One task of the pool: its name in ops and the record register stores for it."""

    name: str
    record: StreamTask
    doc: str

    @property
    def id(self) -> TaskId:
        return self.record.id

    @property
    def torn_record(self) -> tuple[bytes, bytes]:
        """The key and the value corrupt_record commits: the record torn after TORN_BYTES."""
        return _torn(self.record)


@functools.cache
def _torn(record: StreamTask) -> tuple[bytes, bytes]:
    """Cached: the explorer tears the same few records at every level."""
    key = encode_task_key(record.stream_id, record.task_id)
    return key, encode_task(record)[:TORN_BYTES]


_STREAM_A = 0x10
_STREAM_H = 0x20

TASK_POOL: tuple[TaskSlot, ...] = (
    TaskSlot("s1", StreamTask(stream_id=_STREAM_A, task_id=1), "a plain source task"),
    TaskSlot(
        "s2",
        StreamTask(stream_id=_STREAM_A, task_id=2, trigger_param=TRIGGER_PARAM_MS),
        "a stream task with a trigger timer (holds one more reference)",
    ),
    TaskSlot(
        "s3",
        StreamTask(stream_id=_STREAM_A, task_id=256),
        "task id 256: its little-endian key sorts before s1 and s2 (byte order != numeric)",
    ),
    TaskSlot(
        "f1",
        StreamTask(stream_id=_STREAM_H, task_id=1, h_task_id=TaskId(_STREAM_H, 2)),
        "a stream task whose fill-history task is h1",
    ),
    TaskSlot(
        "h1",
        StreamTask(
            stream_id=_STREAM_H, task_id=2, fill_history=1, stream_task_id=TaskId(_STREAM_H, 1)
        ),
        "the fill-history task of f1",
    ),
)
_SLOTS: dict[str, TaskSlot] = {s.name: s for s in TASK_POOL}


def slot_of(name: str) -> TaskSlot:
    """The pool slot named ``name`` (MisuseError if there is none)."""
    slot = _SLOTS.get(name)
    if slot is None:
        raise MisuseError(f"no task slot {name!r}; the pool has {sorted(_SLOTS)}")
    return slot


def _lower(names: Any) -> tuple[str, ...]:
    return tuple(n.name.lower() for n in names)


DOMAINS: Mapping[str, tuple[JsonScalar, ...]] = {
    "task": tuple(s.name for s in TASK_POOL),
    "event": _lower(TaskEvent),
    "two_phase_event": _lower(dict.fromkeys(r.event for r in LIFECYCLE_ROWS if r.two_phase)),
    "bool": (False, True),
    "stage": (1, 2),
    "checkpoint": (1, 2),
    "node": (1, 2),
    "ms": (100, 1_000, 5_000),
    "fault_op": tuple(FAULT_OPS),
}
"""Each parameter kind's finite domain (Hypothesis samples it; the explorer enumerates it)."""


@attrs.frozen
class Param:
    name: str
    kind: str
    """A key of DOMAINS."""

    @property
    def domain(self) -> tuple[JsonScalar, ...]:
        return DOMAINS[self.kind]


@attrs.frozen
class OpSpec:
    """One operation: its level, its parameters and what it does and returns."""

    name: str
    level: int
    params: tuple[Param, ...]
    doc: str


def _spec(name: str, level: int, doc: str, **params: str) -> OpSpec:
    for kind in params.values():
        if kind not in DOMAINS:
            raise MisuseError(f"op {name}: unknown parameter kind {kind!r}")
    return OpSpec(name, level, tuple(Param(p, k) for p, k in sorted(params.items())), doc)


_SPECS: tuple[OpSpec, ...] = (
    # -- level 1: one lifecycle per pool slot --------------------------------------------------
    _spec("handle", 1, "streamTaskHandleEvent on the slot's lifecycle -> outcome "
          "(applied/started/pending/rejected)", task="task", event="event"),
    _spec("complete", 1, "the second phase of a started init / init_scanhist -> outcome",
          task="task", event="two_phase_event"),
    _spec("restore", 1, "streamTaskRestoreStatus (the lifecycle's resume) -> outcome",
          task="task"),
    _spec("reset", 1, "streamTaskResetStatus: back to uninit, nothing active/waiting/saved "
          "-> null", task="task"),
    _spec("set_ready", 1, "streamTaskSetStatusReady -> outcome (rejected while dropping)",
          task="task"),
    # -- level 2: the meta in memory -----------------------------------------------------------
    _spec("register", 2, "streamMetaRegisterTask(slot record, ver 1) -> bool (false: "
          "registered already); commits", task="task"),
    _spec("unregister", 2, "streamMetaUnregisterTask -> removed/deferred/not_found", task="task"),
    _spec("acquire", 2, "streamMetaAcquireTask -> bool (false: missing, stopping or dropping); "
          "the adapter keeps the handle", task="task"),
    _spec("release", 2, "streamMetaReleaseTask of the slot's latest outstanding handle (none "
          "outstanding: the last handle given back again, or a never-issued one) -> null",
          task="task"),
    _spec("handle_event", 2, "streamTaskHandleEvent on a mapped task -> outcome",
          task="task", event="event"),
    _spec("complete_event", 2, "the second phase of init / init_scanhist -> outcome "
          "(applied: downstream-ready)", task="task", event="two_phase_event"),
    _spec("resume", 2, "streamTaskResume -> outcome", task="task"),
    _spec("begin_checkpoint", 2, "gen_checkpoint recording checkpoint id `checkpoint` "
          "(trans id 1) -> outcome", task="task", checkpoint="checkpoint"),
    _spec("save_task", 2, "streamMetaSaveTask of the in-memory record with the current status "
          "byte and the checkpoint in progress (if any) -> null; durable at the next commit",
          task="task"),
    _spec("commit", 2, "streamMetaCommit -> null"),
    _spec("load_all", 2, "streamMetaLoadAllTasks -> {loaded, removed, duplicates, "
          "undecodable: [key hex], cleared}"),
    _spec("latest_checkpoint_id", 2, "streamMetaGetLatestCheckpointId -> int"),
    _spec("start_all", 2, "streamMetaStartAllTasks -> [[id, started/ready/failed/skipped], ...]"),
    _spec("start_one", 2, "streamMetaStartOneTask -> started/ready/failed/skipped", task="task"),
    _spec("report_launch", 2, "streamMetaAddTaskLaunchResult -> bool (false: ignored)",
          task="task", ready="bool"),
    _spec("all_tasks_ready", 2, "streamMetaAllTasksReady -> bool"),
    _spec("stop_all", 2, "streamMetaStopAllTasks -> [id, ...] stopped (the before-close "
          "heartbeat first, when armed)"),
    _spec("notify_close", 2, "streamMetaNotifyClose -> int (tasks with an active task timer)"),
    _spec("clear", 2, "streamMetaClear: every task leaves memory (list, map, counters, the "
          "open round's results); role, stage, heartbeat and the open transaction stay -> null"),
    _spec("reset_start_info", 2, "streamMetaResetStartInfo: the open start round is dropped, "
          "uncompleted (no callback) -> null"),
    _spec("update_stage_role", 2, "streamMetaUpdateStageRole -> role (uninit/leader/follower)",
          stage="stage", is_leader="bool"),
    _spec("advance_clock", 2, "move the virtual clock `ms` forward, firing timers (heartbeat "
          "ticks, trigger and task timers) -> null", ms="ms"),
    _spec("start_task_timer", 2, "arm a task timer of 100 ms (timerActive + 1 until it fires) "
          "-> null", task="task"),
    _spec("report_downstream_update", 2, "queue node `node` for the next heartbeat -> null",
          task="task", node="node"),
    # -- level 3: persistence ------------------------------------------------------------------
    _spec("close_reopen", 3, "streamMetaClose, then open the same path and load_all -> the "
          "load report (role uninit, stage -1, a new clock from the same time)"),
    _spec("crash_reopen", 3, "drop the process (no close: the open transaction is lost, "
          "timers die), then open the same path and load_all -> the load report"),
    _spec("corrupt_record", 3, "a crash leaves a torn write: the slot's record cut to its first "
          "12 bytes, which do not decode, committed under its key; then open the same path and "
          "load_all -> the load report (the record skipped, undecodable; the seed: "
          "DecodeError, M4)", task="task"),
    _spec("fail_next", 3, "the next `op` call on the store (begin/put/delete/commit) fails "
          "with StoreFault, without effect (a failed commit aborts) -> null", op="fault_op"),
)

OP_SPECS: dict[str, OpSpec] = {s.name: s for s in _SPECS}


def ops_at(level: int) -> tuple[OpSpec, ...]:
    """The operations an adapter started at ``level`` accepts."""
    if level not in LEVELS:
        raise MisuseError(f"no level {level}; levels are {LEVELS}")
    wanted = {1} if level == 1 else set(range(2, level + 1))
    return tuple(s for s in _SPECS if s.level in wanted)


@attrs.frozen(repr=False, cache_hash=True)
class Op:
    """One call of an operation with its arguments (sorted by name): hashable, JSON-able."""

    name: str
    args: tuple[tuple[str, JsonScalar], ...] = ()

    @classmethod
    def of(cls, name: str, **args: JsonScalar) -> Op:
        """The op ``name(**args)``, checked against OP_SPECS (MisuseError if it does not fit)."""
        spec = OP_SPECS.get(name)
        if spec is None:
            raise MisuseError(f"unknown operation {name!r}")
        expected = [p.name for p in spec.params]
        if sorted(args) != expected:
            raise MisuseError(f"{name} takes {expected}, got {sorted(args)}")
        for p in spec.params:
            value = args[p.name]
            if not any(value == v and type(value) is type(v) for v in p.domain):
                raise MisuseError(
                    f"{name}: argument {p.name}={value!r} is not in {p.kind} {p.domain}"
                )
        return cls(name, tuple(sorted(args.items())))

    @classmethod
    def from_json(cls, obj: object) -> Op:
        """Parse ``{"op": name, "args": {...}}`` (MisuseError for anything else)."""
        if not isinstance(obj, dict) or set(obj) - {"op", "args"} or "op" not in obj:
            raise MisuseError(f"an operation is {{'op': name, 'args': {{...}}}}, got {obj!r}")
        name, args = obj["op"], obj.get("args", {})
        if not isinstance(name, str) or not isinstance(args, dict):
            raise MisuseError(f"bad operation {obj!r}")
        return cls.of(name, **args)

    @property
    def spec(self) -> OpSpec:
        return OP_SPECS[self.name]

    def arg(self, name: str) -> JsonScalar:
        for key, value in self.args:
            if key == name:
                return value
        raise MisuseError(f"{self!r} has no argument {name!r}")

    def to_json(self) -> dict[str, Any]:
        return {"op": self.name, "args": dict(self.args)}

    def __repr__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.args)})"
