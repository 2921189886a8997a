"""Results and views as plain JSON values (dicts, lists, str, int, bool, None).

The reference's results and views are normalized here to exactly the shapes another
implementation sends over the wire, so ``==`` compares the two sides. Enums become their
lower-case names, ids ``[stream_id, task_id]``. ``meta_view_from_json`` turns a JSON view back
into a ``MetaView`` so the view invariants of statemeta.invariants check any implementation.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, TypeAlias

import attrs

from statemeta.codec import StreamTask, TaskId
from statemeta.errors import MisuseError
from statemeta.invariants import check_view
from statemeta.lifecycle import TaskEvent, TaskLifecycle, TaskStatus
from statemeta.meta import DetachedView, HeartbeatView, LoadReport, MetaView, TaskView
from statemeta.meta.start_round import StartRoundView
from statemeta.roles import Role

__all__ = [
    "Json",
    "check_view_invariants",
    "id_json",
    "lifecycle_view_json",
    "load_report_json",
    "meta_view_from_json",
    "meta_view_json",
    "to_json",
]

Json: TypeAlias = Any
"""A JSON value: dict[str, Json] | list[Json] | str | int | bool | None."""


def id_json(task_id: TaskId) -> list[int]:
    return [task_id.stream_id, task_id.task_id]


def _ids(ids: Iterable[TaskId]) -> list[list[int]]:
    return [id_json(t) for t in ids]


def _name(value: enum.Enum | None) -> str | None:
    return None if value is None else value.name.lower()


def load_report_json(report: LoadReport) -> dict[str, Json]:
    return {
        "loaded": _ids(report.loaded),
        "removed": _ids(report.removed),
        "duplicates": _ids(report.duplicates),
        "undecodable": [r.key_hex for r in report.undecodable],
        "cleared": _ids(report.cleared),
    }


def to_json(value: object) -> Json:
    """An operation's return value as JSON."""
    if isinstance(value, enum.Enum):  # before int: TaskStatus and Role are IntEnums
        return value.name.lower()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, TaskId):
        return id_json(value)
    if isinstance(value, LoadReport):
        return load_report_json(value)
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    raise MisuseError(f"no JSON form for a result of type {type(value).__name__}: {value!r}")


def _task_json(t: TaskView) -> dict[str, Json]:
    record = t.task
    return {
        "id": id_json(t.id),
        "status": _name(t.status),
        "saved": [_name(s) for s in t.saved],
        "active": _name(t.active),
        "waiting": [[_name(s), _name(e)] for s, e in t.waiting],
        "refcount": t.refcount,
        "acquires": t.acquires,
        "trigger_held": t.trigger_held,
        "downstream_ready": t.downstream_ready,
        "timer_active": t.timer_active,
        "drop_pending": t.drop_pending,
        "next_process_ver": t.next_process_ver,
        "checkpointing_id": t.checkpointing_id,
        "failed_checkpoint_id": t.failed_checkpoint_id,
        "fill_history": t.fill_history,
        "trigger_param": record.trigger_param,
        "h_task_id": id_json(record.h_task_id),
        "stream_task_id": id_json(record.stream_task_id),
        "persisted_status": _name(TaskStatus(record.task_status)),
        "checkpoint_id": record.checkpoint_id,
        "checkpoint_ver": record.checkpoint_ver,
    }


def meta_view_json(view: MetaView, level: int, now_ms: int) -> dict[str, Json]:
    """Everything observable about a meta (levels 2 and 3)."""
    r = view.start_round
    hb = view.heartbeat
    return {
        "level": level,
        "now_ms": now_ms,
        "vg_id": view.vg_id,
        "stage": view.stage,
        "role": _name(view.role),
        "ids": _ids(view.ids),
        "map_ids": sorted(_ids(view.map_ids)),
        "num_tasks": view.num_tasks,
        "stream_count": view.stream_count,
        "paused_count": view.paused_count,
        "tasks": [_task_json(t) for t in view.tasks],
        "start_round": {
            "open": r.open,
            "members": _ids(r.members),
            "ready": _ids(r.ready),
            "failed": _ids(r.failed),
            "completed": r.completed,
            "superseded": r.superseded,
        },
        "heartbeat": {
            "armed": hb.armed,
            "tick_counter": hb.tick_counter,
            "sent": hb.sent,
            "send_before_close": hb.send_before_close,
        },
        "detached": [
            {"id": id_json(d.id), "refcount": d.refcount, "acquires": d.acquires}
            for d in view.detached
        ],
        "removed": sorted(_ids(view.removed)),
        "loaded": view.loaded,
        "closing": view.closing,
    }


def lifecycle_view_json(lifecycles: Iterable[tuple[str, TaskLifecycle]]) -> dict[str, Json]:
    """Level 1: each pool slot's lifecycle, in pool order."""
    return {
        "level": 1,
        "tasks": [
            {
                "slot": slot,
                "status": _name(lc.status),
                "saved": [_name(s) for s in lc.saved],
                "active": _name(lc.active),
                "waiting": [[_name(s), _name(e)] for s, e in lc.waiting],
                "prev_status": _name(lc.prev_status),
                "prev_event": _name(lc.prev_event),
            }
            for slot, lc in lifecycles
        ],
    }


# -- back from JSON ------------------------------------------------------------------------


def _tid(obj: Json) -> TaskId:
    stream_id, task_id = obj
    return TaskId(int(stream_id), int(task_id))


def _status(name: Json) -> TaskStatus:
    return TaskStatus[str(name).upper()]


def _event(name: Json) -> TaskEvent | None:
    return None if name is None else TaskEvent[str(name).upper()]


def _task_view(t: dict[str, Json]) -> TaskView:
    tid = _tid(t["id"])
    record = StreamTask(
        stream_id=tid.stream_id,
        task_id=tid.task_id,
        fill_history=int(bool(t["fill_history"])),
        trigger_param=t["trigger_param"],
        h_task_id=_tid(t["h_task_id"]),
        stream_task_id=_tid(t["stream_task_id"]),
        task_status=int(_status(t["persisted_status"])),
        checkpoint_id=t["checkpoint_id"],
        checkpoint_ver=t["checkpoint_ver"],
    )
    waiting = tuple((_status(s), TaskEvent[str(e).upper()]) for s, e in t["waiting"])
    return TaskView(
        id=tid,
        task=record,
        status=_status(t["status"]),
        saved=tuple(_status(s) for s in t["saved"]),
        active=_event(t["active"]),
        waiting=waiting,
        refcount=t["refcount"],
        acquires=t["acquires"],
        trigger_held=t["trigger_held"],
        downstream_ready=t["downstream_ready"],
        timer_active=t["timer_active"],
        drop_pending=t["drop_pending"],
        next_process_ver=t["next_process_ver"],
        checkpointing_id=t["checkpointing_id"],
        failed_checkpoint_id=t["failed_checkpoint_id"],
    )


def meta_view_from_json(obj: dict[str, Json]) -> MetaView:
    """The MetaView a level-2/3 JSON view describes (MisuseError if it is malformed: a key
    missing, or a value of another kind, an int field holding ``true`` or ``1.5`` included, since
    the invariants do arithmetic on them).

    The records carry only what the view shows (ids, fill-history, trigger, related ids,
    persisted status, checkpoint): enough for every view invariant.
    """
    try:
        view = _meta_view(obj)
        _plain_fields_typed(view)
    except (KeyError, TypeError, ValueError) as e:
        raise MisuseError(f"malformed view ({type(e).__name__}: {e}): {obj!r:.300}") from e
    return view


_PLAIN_FIELDS = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
                 "bool": lambda v: isinstance(v, bool)}
"""The view records' declared plain types, and what a value of each is (a bool is no int)."""
_VIEW_RECORDS = (TaskView, StartRoundView, HeartbeatView, DetachedView)
"""The records a MetaView holds whose plain fields are checked too."""


def _plain_fields_typed(record: attrs.AttrsInstance) -> None:
    """Every int and bool field of a view record (and of the view records it holds) is one:
    TypeError naming the first that is not."""
    for field in attrs.fields(type(record)):
        value = getattr(record, field.name)
        holds = _PLAIN_FIELDS.get(str(field.type))
        if holds is not None and not holds(value):
            raise TypeError(f"{field.name} is {value!r:.40}, not {field.type}")
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, _VIEW_RECORDS):
                _plain_fields_typed(item)



def _meta_view(obj: dict[str, Json]) -> MetaView:
    """The MetaView ``obj`` names, its plain fields as given (checked by the caller)."""
    r = obj["start_round"]
    hb = obj["heartbeat"]
    return MetaView(
        vg_id=obj["vg_id"],
        stage=obj["stage"],
        role=Role[str(obj["role"]).upper()],
        ids=tuple(_tid(i) for i in obj["ids"]),
        map_ids=frozenset(_tid(i) for i in obj["map_ids"]),
        tasks=tuple(_task_view(t) for t in obj["tasks"]),
        stream_count=obj["stream_count"],
        paused_count=obj["paused_count"],
        start_round=StartRoundView(
            open=r["open"],
            members=tuple(_tid(i) for i in r["members"]),
            ready=tuple(_tid(i) for i in r["ready"]),
            failed=tuple(_tid(i) for i in r["failed"]),
            completed=r["completed"],
            superseded=r["superseded"],
        ),
        heartbeat=HeartbeatView(
            hb["armed"], hb["tick_counter"], hb["sent"], hb["send_before_close"]
        ),
        detached=tuple(
            DetachedView(_tid(d["id"]), n, d["refcount"], d["acquires"])
            for n, d in enumerate(obj["detached"], start=1)
        ),
        removed=frozenset(_tid(i) for i in obj["removed"]),
        loaded=obj["loaded"],
        closing=obj.get("closing", False),  # a trace file's view written before the key
    )


def check_view_invariants(obj: dict[str, Json]) -> None:
    """Every view invariant of spec/invariants.md on a JSON view (level 1 views have none:
    the lifecycle's own rules are checked through the results)."""
    if obj.get("level") == 1:
        return
    check_view(meta_view_from_json(obj))
