"""The operation alphabet shared by the property suite, the conformance harness and the explorer.

Data first: the task pool (``TASK_POOL``), the finite argument domains (``DOMAINS``, built from
the spec enums) and one ``OpSpec`` per operation (``OP_SPECS``). Everything that drives a meta
(Hypothesis rules, the subprocess protocol, the BFS explorer, concurrent runs) enumerates these
tables; nothing else lists operations or keys a fact by an operation's name. A row holds every
fact about its operation: arguments and their domains, level, the handler on the reference,
precondition, the property suite's weight and draw rank, the explorer's budget, whether it
commits or reopens, concurrent runs' weight and whether it uses the calling client's handles.
Other modules read columns (``REOPENS``, ``generation.FREQUENCY``, ``bounds.BUDGETED`` and
``concurrent_run.CONTENDED`` are views derived from them).

Levels: 1 = a task lifecycle per pool slot, no meta; 2 = the meta in memory; 3 = the meta with
persistence (close/crash and reopen, injected store faults, damaged records). An adapter
started at level 2 accepts the level-2 operations; at level 3, those of levels 2 and 3
(``ops_at``).

Preconditions: an operation the seed asserts against (reference section 8.1) declares its
rule in its row (``OpSpec.precondition``); the harness, the property suite and the explorer
consult it and never send the operation while the rule is broken (the reference would raise
PreconditionError). A rule reads the task the operation names, and only a mapped one.

Results are JSON: ``{"ok": value}`` or ``{"error": "<statemeta.errors class name>"}``, plus
``"heartbeats": [hex payload, ...]`` when the operation handed heartbeats to the transport.
Ids in results and views are ``[stream_id, task_id]``; ops name pool slots, never raw ids.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeAlias

import attrs

from statemeta.codec import StreamTask, TableOutput, TaskId, encode_task, encode_task_key
from statemeta.errors import MisuseError
from statemeta.lifecycle import LIFECYCLE_ROWS, TaskEvent, TaskLifecycle
from statemeta.meta.preconditions import (
    LifecycleCall,
    complete_broken,
    halt_broken,
    start_one_broken,
)
from statemeta.store import FAULT_OPS

__all__ = [
    "DOMAINS",
    "LEVELS",
    "OP_SPECS",
    "REGISTER_VER",
    "REOPENS",
    "TASK_POOL",
    "TORN_BYTES",
    "TRIGGER_PARAM_MS",
    "JsonScalar",
    "Op",
    "OpSpec",
    "Param",
    "Precondition",
    "TaskFacts",
    "TaskSlot",
    "calls_of",
    "ops_at",
    "slot_of",
    "task_slot",
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
    id: TaskId = attrs.field(init=False, eq=False, repr=False)
    """The record's id, made once (every operation on a slot asks for it)."""

    @id.default
    def _record_id(self) -> TaskId:
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
_STREAM_T = 0x30

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
    TaskSlot(
        "t1",
        StreamTask(stream_id=_STREAM_T, task_id=1, output=TableOutput()),
        "a task with nothing downstream (table output): INIT completes at once",
    ),
)
_SLOTS: dict[str, TaskSlot] = {s.name: s for s in TASK_POOL}


@functools.lru_cache(maxsize=64)
def task_slot(op: Op) -> TaskSlot:
    """The pool slot an op's ``task`` argument names (cached)."""
    return slot_of(str(op.arg("task")))


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

    def __attrs_post_init__(self) -> None:
        if self.kind not in DOMAINS:
            raise MisuseError(
                f"argument {self.name}: unknown parameter kind {self.kind!r}; kinds are "
                f"{sorted(DOMAINS)}"
            )

    @property
    def domain(self) -> tuple[JsonScalar, ...]:
        return DOMAINS[self.kind]


class TaskFacts(Protocol):
    """What a precondition reads of the task an operation names: its mapped entry (levels 2
    and 3), or its pool slot's record and lifecycle (level 1)."""

    @property
    def task(self) -> StreamTask: ...

    @property
    def lifecycle(self) -> TaskLifecycle: ...

    @property
    def downstream_ready(self) -> bool: ...


@attrs.frozen
class Precondition:
    """What an operation requires of its task; the seed asserts it (reference section 8.1)."""

    doc: str
    broken: Callable[[TaskFacts, Op], str | None]
    """The rule ``op`` breaks on that task now (statemeta.meta.preconditions), or None."""


@functools.lru_cache(maxsize=256)
def _event_arg(op: Op) -> TaskEvent:
    """The event an op names (cached: the explorer asks for every op in every state)."""
    return TaskEvent[str(op.arg("event")).upper()]


def _halt_rule(event: Callable[[Op], TaskEvent | None],
               call: Callable[[Op], LifecycleCall]) -> Callable[[TaskFacts, Op], str | None]:
    def broken(facts: TaskFacts, op: Op) -> str | None:
        return halt_broken(facts.task, facts.lifecycle, event(op), call(op))
    return broken


_HALT_DOC = "no HALT reaches a task without a fill-history task (an attached one included)"
_HANDLE = Precondition(_HALT_DOC, _halt_rule(
    _event_arg, lambda op: lambda lc, hear: lc.handle(_event_arg(op), listener=hear)
))
_RESUME = Precondition(_HALT_DOC, _halt_rule(
    lambda op: None, lambda op: lambda lc, hear: lc.resume(listener=hear)
))
_CHECKPOINT = Precondition(_HALT_DOC, _halt_rule(
    lambda op: TaskEvent.GEN_CHECKPOINT,
    lambda op: lambda lc, hear: lc.handle(TaskEvent.GEN_CHECKPOINT, listener=hear),
))
_COMPLETE_HALT = _halt_rule(
    lambda op: None, lambda op: lambda lc, hear: lc.complete(_event_arg(op), listener=hear)
)
_COMPLETE = Precondition(
    "something is active in scan_history, halt or ck; " + _HALT_DOC,
    lambda facts, op: complete_broken(facts.lifecycle) or _COMPLETE_HALT(facts, op),
)
_START_ONE = Precondition(
    "the task is not downstream-ready (unless it stops, or is a fill-history task)",
    lambda facts, op: start_one_broken(facts.task, facts.lifecycle, facts.downstream_ready),
)


UnmappedResult = tuple[str, str | bool]
"""A call's result as ("ok", value) or ("error", class name)."""


@attrs.frozen
class OpSpec:
    """One operation: everything the harness, the property suite, concurrent runs and the
    explorer know of it. Every column is stated in every row (no defaults); a test checks
    each value (tests/unit/test_operation_table.py)."""

    name: str
    level: int
    doc: str
    params: tuple[Param, ...]
    """Sorted by name (``_params``)."""
    handler: str
    """The ``ReferenceAdapter`` method that runs it: ``adapter.<handler>(op)`` (the reference
    checks at import that each exists)."""
    precondition: Precondition | None
    """What the caller must ensure before sending it (a ``PreconditionError`` otherwise):
    generation, the explorer and shrinking never send it broken. None: nothing."""
    outcome: bool
    """Its ``ok`` value is an outcome (applied/started/pending/rejected): an implementation
    declaring ``outcomes: ok_rejected`` is compared on ok/rejected alone."""
    weight: int
    """How often the property suite draws it, relative to the other names of its level
    (``generation.FREQUENCY``): the weights favour what builds state."""
    draw_rank: int
    """Its place in the property suite's draw list, unique among the operations and the walks
    (generation.py's ``_WALKS``): Hypothesis shrinks a draw towards the first, so read-only
    queries come first."""
    budget: str | None
    """The explorer's budget each call spends (a ``Bounds`` field: the operations that would
    make the state space infinite or very large); None: not budgeted."""
    commits: bool
    """It may commit the meta's store transaction: its own durable write (register, a
    removal, load's removals, a deferred removal or a given-up launch when a timer fires, a
    reopen's load) or streamMetaCommit itself. save_task's pending writes become durable with
    it; a StoreFault from it has rolled them back. save_task writes and never commits."""
    reopens: bool
    """It ends the meta's process and opens the path again (``REOPENS``): the durable model
    checks the store there, and concurrent runs never call it."""
    concurrent_weight: int
    """How often a concurrent run calls it, relative to the others: the operations that change
    the list, the map and the references, and the ones that start heartbeats, race."""
    client_handles: bool
    """It takes or gives back a handle of the calling client (the linearizability spec keeps
    one set of handles per client and checks such calls per task)."""
    unmapped_result: UnmappedResult | None
    """Called on a task the meta does not map, in any state and either semantics, it returns
    this (``{"ok": False}`` as ``("ok", False)``) and changes nothing: the explorer does not
    run it there (a test checks the claim in every state within small bounds). None: its
    result or effect there depends on more (release: the handles held; start_one: a start
    round in progress; report_launch, register, corrupt_record)."""
    coverage: tuple[str, ...]
    """The families of classes of behaviour its steps can show beyond every operation's
    (table rows, and its outcome or result: statemeta.harness.coverage_model): a heartbeat
    sent, a load report, a start step, a round completed, a store fault hit (it writes), the
    references it met, a reopen, timers fired."""


def _params(**kinds: str) -> tuple[Param, ...]:
    """Argument name -> parameter kind (a key of DOMAINS), sorted by name."""
    return tuple(Param(name, kind) for name, kind in sorted(kinds.items()))


_TASK = _params(task="task")
_UNKNOWN_TASK: UnmappedResult = ("error", "UnknownTaskError")
_TASK_EVENT = _params(task="task", event="event")
_TASK_TWO_PHASE = _params(task="task", event="two_phase_event")

# The columns after the doc and the arguments: the handler on the reference, the precondition,
# outcome; generation weight and draw rank; the explorer's budget; commits, reopens;
# concurrent runs' weight, client handles; the result on an unmapped task; the coverage
# families its steps can show.
_SPECS: tuple[OpSpec, ...] = (
    # -- level 1: one lifecycle per pool slot --------------------------------------------------
    OpSpec("handle", 1, "streamTaskHandleEvent on the slot's lifecycle -> outcome "
           "(applied/started/pending/rejected)", _TASK_EVENT,
           handler="do_handle", precondition=_HANDLE, outcome=True,
           weight=3, draw_rank=80, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
    OpSpec("complete", 1, "the second phase of a started init / init_scanhist -> outcome",
           _TASK_TWO_PHASE,
           handler="do_complete", precondition=_COMPLETE, outcome=True,
           weight=1, draw_rank=40, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
    OpSpec("restore", 1, "streamTaskRestoreStatus (the lifecycle's resume) -> outcome", _TASK,
           handler="do_restore", precondition=_RESUME, outcome=True,
           weight=1, draw_rank=50, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
    OpSpec("reset", 1, "streamTaskResetStatus: back to uninit, nothing active/waiting/saved "
           "-> null", _TASK,
           handler="do_reset", precondition=None, outcome=False,
           weight=1, draw_rank=60, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
    OpSpec("set_ready", 1, "streamTaskSetStatusReady -> outcome (rejected while dropping)", _TASK,
           handler="do_set_ready", precondition=None, outcome=True,
           weight=1, draw_rank=70, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
    # -- level 2: the meta in memory -----------------------------------------------------------
    OpSpec("register", 2, "streamMetaRegisterTask(slot record, ver 1) -> bool (false: "
           "registered already); commits", _TASK,
           handler="do_register", precondition=None, outcome=False,
           weight=2, draw_rank=130, budget=None, commits=True, reopens=False,
           concurrent_weight=4, client_handles=False, unmapped_result=None,
           coverage=("fault",)),
    OpSpec("unregister", 2, "streamMetaUnregisterTask -> removed/deferred/not_found", _TASK,
           handler="do_unregister", precondition=None, outcome=False,
           weight=1, draw_rank=140, budget=None, commits=True, reopens=False,
           concurrent_weight=4, client_handles=False, unmapped_result=("ok", "not_found"),
           coverage=("fault", "round")),
    OpSpec("acquire", 2, "streamMetaAcquireTask -> bool (false: missing, stopping or dropping); "
           "the adapter keeps the handle", _TASK,
           handler="do_acquire", precondition=None, outcome=False,
           weight=1, draw_rank=150, budget=None, commits=False, reopens=False,
           concurrent_weight=4, client_handles=True, unmapped_result=("ok", False),
           coverage=("refs",)),
    OpSpec("release", 2, "streamMetaReleaseTask of the slot's latest outstanding handle (none "
           "outstanding: the last handle given back again, or a never-issued one) -> null",
           _TASK,
           handler="do_release", precondition=None, outcome=False,
           weight=1, draw_rank=160, budget=None, commits=False, reopens=False,
           concurrent_weight=4, client_handles=True, unmapped_result=None,
           coverage=("refs",)),
    OpSpec("handle_event", 2, "streamTaskHandleEvent on a mapped task -> outcome (init / "
           "init_scanhist of a task with nothing downstream: applied at once, as complete_event)",
           _TASK_EVENT,
           handler="do_handle_event", precondition=_HANDLE, outcome=True,
           weight=2, draw_rank=90, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=_UNKNOWN_TASK,
           coverage=("round",)),
    OpSpec("complete_event", 2, "the second phase of init / init_scanhist -> outcome "
           "(applied: downstream-ready, a ready result, its fill-history task launched)",
           _TASK_TWO_PHASE,
           handler="do_complete_event", precondition=_COMPLETE, outcome=True,
           weight=1, draw_rank=100, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=_UNKNOWN_TASK,
           coverage=("round",)),
    OpSpec("resume", 2, "streamTaskResume -> outcome", _TASK,
           handler="do_resume", precondition=_RESUME, outcome=True,
           weight=1, draw_rank=110, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=_UNKNOWN_TASK,
           coverage=()),
    OpSpec("begin_checkpoint", 2, "gen_checkpoint recording checkpoint id `checkpoint` "
           "(trans id 1) -> outcome", _params(task="task", checkpoint="checkpoint"),
           handler="do_begin_checkpoint", precondition=_CHECKPOINT, outcome=True,
           weight=1, draw_rank=120, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=_UNKNOWN_TASK,
           coverage=()),
    OpSpec("save_task", 2, "streamMetaSaveTask of the in-memory record with the current status "
           "byte and the checkpoint in progress (if any) -> null; durable at the next commit",
           _TASK,
           handler="do_save_task", precondition=None, outcome=False,
           weight=2, draw_rank=170, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=_UNKNOWN_TASK,
           coverage=("fault",)),
    OpSpec("commit", 2, "streamMetaCommit -> null", (),
           handler="do_commit", precondition=None, outcome=False,
           weight=2, draw_rank=180, budget=None, commits=True, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("fault",)),
    OpSpec("load_all", 2, "streamMetaLoadAllTasks -> {loaded, removed, duplicates, "
           "undecodable: [key hex], cleared}", (),
           handler="do_load_all", precondition=None, outcome=False,
           weight=1, draw_rank=190, budget=None, commits=True, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("fault", "load")),
    OpSpec("latest_checkpoint_id", 2, "streamMetaGetLatestCheckpointId -> int", (),
           handler="do_latest_checkpoint_id", precondition=None, outcome=False,
           weight=1, draw_rank=10, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
    OpSpec("start_all", 2, "streamMetaStartAllTasks -> [[id, started/ready/failed/skipped], ...] "
           "(ready: downstream-ready already, or at once with nothing downstream)", (),
           handler="do_start_all", precondition=None, outcome=False,
           weight=1, draw_rank=210, budget="start_rounds", commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("start", "round")),
    OpSpec("start_one", 2, "streamMetaStartOneTask -> started/ready/failed/skipped (not mapped: "
           "a failed result, then the error UnknownTaskError)", _TASK,
           handler="do_start_one", precondition=_START_ONE, outcome=False,
           weight=1, draw_rank=220, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("start", "round")),
    OpSpec("report_launch", 2, "streamMetaAddTaskLaunchResult -> bool (false: ignored)",
           _params(task="task", ready="bool"),
           handler="do_report_launch", precondition=None, outcome=False,
           weight=2, draw_rank=230, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("round",)),
    OpSpec("all_tasks_ready", 2, "streamMetaAllTasksReady -> bool", (),
           handler="do_all_tasks_ready", precondition=None, outcome=False,
           weight=1, draw_rank=20, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
    OpSpec("stop_all", 2, "streamMetaStopAllTasks -> [id, ...] stopped (the before-close "
           "heartbeat first, when armed)", (),
           handler="do_stop_all", precondition=None, outcome=False,
           weight=1, draw_rank=240, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("heartbeat",)),
    OpSpec("notify_close", 2, "streamMetaNotifyClose -> int (tasks with an active task timer)",
           (),
           handler="do_notify_close", precondition=None, outcome=False,
           weight=1, draw_rank=250, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
    OpSpec("clear", 2, "streamMetaClear: every task leaves memory (list, map, counters; an "
           "open round completes, the seed's stays open with its results emptied); role, "
           "stage, heartbeat and the open transaction stay -> null",
           (),
           handler="do_clear", precondition=None, outcome=False,
           weight=1, draw_rank=270, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("round",)),
    OpSpec("reset_start_info", 2, "streamMetaResetStartInfo: the open start round is dropped, "
           "uncompleted (no callback) -> null", (),
           handler="do_reset_start_info", precondition=None, outcome=False,
           weight=1, draw_rank=280, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("round",)),
    OpSpec("update_stage_role", 2, "streamMetaUpdateStageRole -> role (uninit/leader/follower)",
           _params(stage="stage", is_leader="bool"),
           handler="do_update_stage_role", precondition=None, outcome=False,
           weight=2, draw_rank=300, budget="role_changes", commits=False, reopens=False,
           concurrent_weight=2, client_handles=False, unmapped_result=None,
           coverage=("heartbeat",)),
    OpSpec("advance_clock", 2, "move the virtual clock `ms` forward, firing timers (heartbeat "
           "ticks, trigger and task timers) -> null", _params(ms="ms"),
           handler="do_advance_clock", precondition=None, outcome=False,
           weight=2, draw_rank=310, budget="clock_advances", commits=True, reopens=False,
           concurrent_weight=2, client_handles=False, unmapped_result=None,
           coverage=("fault", "heartbeat", "round", "timer")),
    OpSpec("start_task_timer", 2, "arm a task timer of 100 ms (timerActive + 1 until it fires) "
           "-> null", _TASK,
           handler="do_start_task_timer", precondition=None, outcome=False,
           weight=1, draw_rank=320, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=_UNKNOWN_TASK,
           coverage=()),
    OpSpec("report_downstream_update", 2, "queue node `node` for the next heartbeat -> null",
           _params(task="task", node="node"),
           handler="do_report_downstream_update", precondition=None, outcome=False,
           weight=1, draw_rank=330, budget=None, commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=_UNKNOWN_TASK,
           coverage=()),
    # -- level 3: persistence ------------------------------------------------------------------
    OpSpec("close_reopen", 3, "streamMetaClose, then open the same path and load_all -> the "
           "load report (role uninit, stage -1, a new clock from the same time)", (),
           handler="do_close_reopen", precondition=None, outcome=False,
           weight=2, draw_rank=340, budget="reopens", commits=True, reopens=True,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("load", "reopen")),
    OpSpec("crash_reopen", 3, "drop the process (no close: the open transaction is lost, "
           "timers die), then open the same path and load_all -> the load report", (),
           handler="do_crash_reopen", precondition=None, outcome=False,
           weight=2, draw_rank=350, budget="reopens", commits=True, reopens=True,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("load", "reopen")),
    OpSpec("corrupt_record", 3, "a crash leaves a torn write: the slot's record cut to its first "
           "12 bytes, which do not decode, committed under its key; then open the same path and "
           "load_all -> the load report (the record skipped, undecodable; the seed: "
           "DecodeError, M4)", _TASK,
           handler="do_corrupt_record", precondition=None, outcome=False,
           weight=1, draw_rank=370, budget="faults", commits=True, reopens=True,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=("load", "reopen")),
    OpSpec("fail_next", 3, "the next `op` call on the store (begin/put/delete/commit) fails "
           "with StoreFault, without effect (a failed commit aborts) -> null",
           _params(op="fault_op"),
           handler="do_fail_next", precondition=None, outcome=False,
           weight=2, draw_rank=360, budget="faults", commits=False, reopens=False,
           concurrent_weight=1, client_handles=False, unmapped_result=None,
           coverage=()),
)

OP_SPECS: dict[str, OpSpec] = {s.name: s for s in _SPECS}

REOPENS = frozenset(s.name for s in _SPECS if s.reopens)
"""The operations that end the meta's process and open its path again."""


def ops_at(level: int) -> tuple[OpSpec, ...]:
    """The operations an adapter started at ``level`` accepts."""
    if level not in LEVELS:
        raise MisuseError(f"no level {level}; levels are {LEVELS}")
    wanted = {1} if level == 1 else set(range(2, level + 1))
    return tuple(s for s in _SPECS if s.level in wanted)


def calls_of(spec: OpSpec, slots: tuple[str, ...] | None = None) -> tuple[Op, ...]:
    """Every call of ``spec``: each argument from its whole domain, a task argument from
    ``slots`` when given (the explorer's alphabet, the directed corpus's searches)."""
    domains = [slots if slots is not None and p.kind == "task" else p.domain
               for p in spec.params]
    return tuple(
        Op.of(spec.name, **{p.name: v for p, v in zip(spec.params, values, strict=True)})
        for values in itertools.product(*domains)
    )


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
