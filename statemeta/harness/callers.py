"""Who calls the meta: every call the operation table allows (``direct``), or only the call
sequences TDengine's own callers make (``vnode``).

The model drives the meta's functions directly, in any order its preconditions allow. The
vnode does not: its request handlers (the tq code), streamStart.c and streamTask.c call them
in a few fixed patterns (acquire a task, send it an event, release it; INIT_SCANHIST only to a
fill-history task; ...). ``CALLER_RULES`` is that discipline as data: one row per rule, the
operations it governs, what it requires, and the seed lines it rests on (file:function at
63494de7). Under ``Callers.VNODE`` generation, the directed corpus and the explorer send only
the calls that break no rule (``caller_broken``); under ``Callers.DIRECT`` (the default) no
rule applies.

Each rule reads the state the explorer keys (the reference's handles, the meta's entries,
role and stage, the store's open transaction), never the path: a rule that needed the last
operation would make two paths to the same key disagree. A request handler runs its calls one
after another in one thread, so in a sequential run nothing comes between a handler's acquire
and its event: "the caller holds a handle and the task is one acquire accepts" is that
bracket, read from the state.

The environment is not a caller: the clock, injected store faults and crashes
(``ENVIRONMENT``) are never governed. Level 1 (a lifecycle alone, no meta) has no callers
either: the rules govern level-2 and level-3 operations only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import attrs

from statemeta.arguments import member_of
from statemeta.codec import StreamTask
from statemeta.errors import MisuseError
from statemeta.harness.operations import OP_SPECS, Op, task_slot
from statemeta.lifecycle import TaskStatus, should_stop
from statemeta.meta.core import TaskHandle
from statemeta.meta.entry import TaskEntry
from statemeta.meta.state import MetaState

__all__ = [
    "CALLER_RULES",
    "ENVIRONMENT",
    "SEED_COMMIT",
    "CallerRule",
    "CallerState",
    "Callers",
    "caller_broken",
    "rules_markdown",
]

SEED_COMMIT = "63494de7"
"""The TDengine commit the rules' seed lines are read at."""


class Callers(enum.Enum):
    """Which call sequences drive the meta (``--callers``)."""

    DIRECT = "direct"
    """Every call the operation table and its preconditions allow (the default)."""
    VNODE = "vnode"
    """Only the calls TDengine's callers make: every rule of ``CALLER_RULES`` kept."""

    @classmethod
    def of(cls, value: Callers | str) -> Callers:
        return member_of(cls, value, "callers")


class CallerState(Protocol):
    """What a rule reads: the reference's outstanding handles (by slot), its meta's state and
    whether the store's open transaction deletes a committed row."""

    @property
    def handles(self) -> Mapping[str, Sequence[TaskHandle]]: ...

    @property
    def meta_state(self) -> MetaState: ...

    def pending_delete(self) -> bool:
        """The open transaction deletes a committed row (an uncommitted removal)."""


Broken = Callable[[CallerState, Op], str | None]


@attrs.frozen
class CallerRule:
    """One rule of the vnode's call discipline."""

    id: str
    ops: tuple[str, ...]
    """The operations it governs (each a row of the operation table)."""
    rule: str
    """What the vnode's callers do, as a sentence (the docs' table)."""
    seed: tuple[str, ...]
    """The seed lines it rests on: ``file:function`` at SEED_COMMIT."""
    broken: Broken
    """Why ``op`` would break it in this state, or None."""


ENVIRONMENT = frozenset({"advance_clock", "fail_next", "corrupt_record", "crash_reopen"})
"""Operations no caller makes: time passing, an injected store fault, a crash."""

_EVENT_OPS = ("handle_event", "complete_event", "resume", "begin_checkpoint")
_READS = ("latest_checkpoint_id", "all_tasks_ready")


def _entry(state: CallerState, op: Op) -> TaskEntry | None:
    return state.meta_state.entries.get(task_slot(op).id)


def _event(op: Op) -> str | None:
    return str(op.arg("event")) if any(k == "event" for k, _ in op.args) else None


def _held(state: CallerState, op: Op) -> str | None:
    if op.name == "handle_event" and _event(op) == "stop":
        return None  # streamTaskStop: by a map lookup under the write lock (update request)
    entry = _entry(state, op)
    slot = task_slot(op).name
    if entry is None or not any(h.incarnation == entry.incarnation
                                for h in state.handles.get(slot, ())):
        return f"{op.name} on {slot}, whose caller holds no handle of it (acquire first)"
    return None


def _acquirable(state: CallerState, op: Op) -> str | None:
    """Where it matters: STOP, stop_all and notify_close wait for every release
    (release-before-next-request), so a handle outstanding on a stopping or dropping task is
    one its handler holds across an unregister an active timer deferred (DROPPING)."""
    if op.name == "handle_event" and _event(op) == "stop":
        return None
    entry = _entry(state, op)
    if entry is not None and should_stop(entry.lifecycle.status):
        return (f"{op.name} on {task_slot(op).name} in {entry.lifecycle.status.name}: the "
                "handler's acquire, just before, refuses a stopping or dropping task")
    return None


def _no_dropping(state: CallerState, op: Op) -> str | None:
    if _event(op) == "dropping":
        return "DROPPING is sent by streamMetaUnregisterTask alone (unregister)"
    return None


def _init_by_kind(state: CallerState, op: Op) -> str | None:
    event = _event(op)
    fill_history = task_slot(op).record.fill_history != 0
    if event == "init_scanhist" and not fill_history:
        return f"INIT_SCANHIST to {task_slot(op).name}, which is no fill-history task"
    if event == "init" and fill_history:
        return f"INIT to the fill-history task {task_slot(op).name} (it gets INIT_SCANHIST)"
    return None


def _release_held(state: CallerState, op: Op) -> str | None:
    slot = task_slot(op).name
    if not state.handles.get(slot):
        return f"release of {slot} with no handle outstanding (every release gives back its " \
               "handler's own acquire)"
    return None


_OTHER_REQUESTS = ("handle_event", "register", "start_all", "start_one", "stop_all",
                   "notify_close", "clear", "load_all", "reset_start_info", "update_stage_role",
                   "close_reopen")
"""What a request handler holding a task never calls: another request's operations."""


def _released(state: CallerState, op: Op) -> str | None:
    if op.name == "handle_event" and _event(op) != "stop":
        return None  # an event of the handler holding the task; STOP is the update request's
    held = sorted(slot for slot, handles in state.handles.items() if handles)
    if held:
        return f"{op.name} while a handle of {', '.join(held)} is outstanding (release first)"
    return None


def _commit_after_removal(state: CallerState, op: Op) -> str | None:
    if op.name in ("commit", "unregister", *_READS) or not state.pending_delete():
        return None
    return (f"{op.name} while a removal is uncommitted: the drop request commits right after "
            "its unregisters")


def _start_one_stream_task(state: CallerState, op: Op) -> str | None:
    record: StreamTask = task_slot(op).record
    if record.fill_history != 0:
        return f"start_one of the fill-history task {task_slot(op).name}"
    return None


_NOT_CHECKPOINTED = frozenset({TaskStatus.HALT, TaskStatus.PAUSE, TaskStatus.CK})


def _checkpoint_source(state: CallerState, op: Op) -> str | None:
    entry = _entry(state, op)
    if entry is None:
        return None
    if not entry.downstream_ready:
        return f"begin_checkpoint on {task_slot(op).name}, whose downstream is not ready"
    status = entry.lifecycle.status
    if status in _NOT_CHECKPOINTED:
        return f"begin_checkpoint on {task_slot(op).name} in {status.name}"
    return None


def _stage_forward(state: CallerState, op: Op) -> str | None:
    stage = op.arg("stage")
    assert isinstance(stage, int)
    if stage < state.meta_state.stage:
        return f"update_stage_role to stage {stage} after stage {state.meta_state.stage}"
    return None


CALLER_RULES: tuple[CallerRule, ...] = (
    CallerRule(
        "acquired-not-stopping", _EVENT_OPS,
        "The event follows its handler's acquire at once, and acquire refuses a task in STOP "
        "or DROPPING: no event but STOP reaches a stopping or dropping task (so a PAUSE is "
        "never counted in STOP)",
        ("streamMeta.c:streamMetaAcquireTaskNoLock", "tqCommon.c:tqStreamTaskProcessTaskPauseReq",
         "streamTask.c:streamTaskPause"),
        _acquirable,
    ),
    CallerRule(
        "event-under-handle", _EVENT_OPS,
        "An event reaches a task only from a handler that acquired it and releases it after "
        "(STOP excepted: the update request stops a task it looked up under the write lock)",
        ("tqCommon.c:tqStreamTaskProcessTaskPauseReq", "tqCommon.c:tqProcessTaskResumeImpl",
         "tqCommon.c:tqStreamTaskProcessCheckRsp", "tq.c:tqProcessTaskScanHistory",
         "tq.c:tqProcessTaskCheckPointSourceReq", "streamMeta.c:streamMetaStartOneTask",
         "tqCommon.c:tqStreamTaskProcessUpdateReq"),
        _held,
    ),
    CallerRule(
        "dropping-by-unregister", ("handle_event",),
        "DROPPING is sent by unregister alone, never by a caller",
        ("streamMeta.c:streamMetaUnregisterTask",),
        _no_dropping,
    ),
    CallerRule(
        "init-by-kind", ("handle_event", "complete_event"),
        "INIT_SCANHIST only to a fill-history task, INIT only to a stream task",
        ("streamStart.c:doProcessDownstreamReadyRsp", "streamStart.c:checkFillhistoryTaskStatus",
         "tqCommon.c:tqProcessTaskResumeImpl"),
        _init_by_kind,
    ),
    CallerRule(
        "release-own-handle", ("release",),
        "Every release gives back the handle its own handler acquired: never with none "
        "outstanding",
        ("tqCommon.c:tqStreamTaskProcessTaskPauseReq", "tqCommon.c:tqStreamTaskProcessRunReq",
         "tq.c:tqProcessTaskDropHTask"),
        _release_held,
    ),
    CallerRule(
        "release-before-next-request", _OTHER_REQUESTS,
        "A handler releases what it acquired before the vnode turns to another request: while "
        "a handle is outstanding the calls are the handler's own (events but STOP on the "
        "tasks held, "
        "acquire, release, unregister, save_task, commit, report_launch, a task timer, a "
        "downstream update, reads)",
        ("tqCommon.c:tqStreamTaskProcessTaskPauseReq", "tqCommon.c:tqStreamTaskProcessDropReq",
         "tq.c:tqProcessTaskScanHistory", "tqCommon.c:tqStreamTaskProcessCheckRsp"),
        _released,
    ),
    CallerRule(
        "commit-after-unregister",
        tuple(n for n, spec in OP_SPECS.items()
              if spec.level > 1 and n not in ("commit", "unregister", *_READS, *ENVIRONMENT)),
        "The drop request unregisters the fill-history task, then the stream task, then "
        "commits: while a removal is uncommitted the next call is an unregister or the commit",
        ("tqCommon.c:tqStreamTaskProcessDropReq",),
        _commit_after_removal,
    ),
    CallerRule(
        "start-one-stream-task", ("start_one",),
        "start_one is queued for a deployed stream task, never a fill-history task (the task "
        "may be dropped before the queued start runs)",
        ("tqCommon.c:tqStreamTaskProcessDeployReq", "tqCommon.c:tqStreamTaskProcessRunReq"),
        _start_one_stream_task,
    ),
    CallerRule(
        "checkpoint-source", ("begin_checkpoint",),
        "A checkpoint starts only in a downstream-ready task that is not in HALT, PAUSE or "
        "CK (the checkpoint-source handler answers the others with an error)",
        ("tq.c:tqProcessTaskCheckPointSourceReq",),
        _checkpoint_source,
    ),
    CallerRule(
        "stage-forward", ("update_stage_role",),
        "The stage is the sync term: a later role change never passes an earlier stage",
        ("vnodeSync.c:vnodeBecomeFollower", "vnodeSync.c:vnodeBecomeLeader",
         "streamMeta.c:streamMetaUpdateStageRole"),
        _stage_forward,
    ),
)


def _check_rules() -> None:
    for rule in CALLER_RULES:
        unknown = set(rule.ops) - OP_SPECS.keys()
        if unknown:
            raise MisuseError(
                f"caller rule {rule.id} governs unknown operations {sorted(unknown)}"
            )
        environment = set(rule.ops) & ENVIRONMENT
        if environment:
            raise MisuseError(
                f"caller rule {rule.id} governs the environment {sorted(environment)}"
            )


_check_rules()

_GOVERNING: dict[str, tuple[CallerRule, ...]] = {
    name: tuple(r for r in CALLER_RULES if name in r.ops) for name in OP_SPECS
}


def caller_broken(
    state: CallerState, op: Op, rules: Sequence[CallerRule] | None = None
) -> str | None:
    """The first rule (of ``rules``; None: every rule of CALLER_RULES, by the operations each
    governs) that ``op`` breaks in ``state`` (``rule-id: why``), or None. Level-1 operations
    and the environment are never governed."""
    if op.spec.level == 1 or op.name in ENVIRONMENT:
        return None
    for rule in _GOVERNING[op.name] if rules is None else rules:
        if op.name in rule.ops:
            why = rule.broken(state, op)
            if why is not None:
                return f"{rule.id}: {why}"
    return None


def rules_markdown() -> str:
    """The rules as docs/harness-protocol.md's generated table."""
    lines = [
        "| rule | operations | the vnode's callers | seed lines (at " + SEED_COMMIT + ") |",
        "|---|---|---|---|",
    ]
    for rule in CALLER_RULES:
        ops = "every caller operation but commit, unregister and reads" \
            if len(rule.ops) > 12 else ", ".join(f"`{o}`" for o in rule.ops)
        seed = "; ".join(f"`{s}`" for s in rule.seed)
        lines.append(f"| `{rule.id}` | {ops} | {rule.rule} | {seed} |")
    return "\n".join(lines)
