"""The coverage model: the classes of observable behaviour a step can show.

Theory of operation. A step (an operation, what it returned and sent, and the state it ran in)
falls into one or more *classes*, each a string ``family:detail``. The families are data
(``FAMILIES``, beside the operation table they classify): each names the operations whose
steps it sorts and what it sorts them by. ``classify`` is a pure function of a ``Before`` (what
the reference held just before the call: the named task's status and references, the open
round's counters, the armed faults and timers) and the call's result; the table rows a call
took come from the meta's trace (``row_class`` / ``role_class``). The reference adapter builds
the ``Before`` and counts the classes of every call when asked (``Coverage.classes``).

What uses it: the explorer collects, for every class reachable within its bounds, the
shortest path that reaches it (the directed corpus, statemeta.harness.directed), and
``statemeta check`` / ``campaign`` report the classes their runs reached and missed. A class
is about the reference's behaviour along the operations sent, so the same vocabulary serves
every implementation checked against it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from statemeta.codec import decode_hb
from statemeta.errors import MisuseError
from statemeta.harness.normalize import Json
from statemeta.harness.operations import OP_SPECS, Op, task_slot
from statemeta.lifecycle import LIFECYCLE_ROWS, TaskLifecycle
from statemeta.meta.state import MetaState, TimerKind
from statemeta.roles import ROLE_ROWS, RoleEvent
from statemeta.store import FAULT_OPS
from statemeta.tables import Role, RoleRow, TransitionRow

__all__ = [
    "FAMILIES",
    "LISTED_FAMILIES",
    "ROLE_CLASSES",
    "ROW_CLASSES",
    "UNMAPPED",
    "Before",
    "Family",
    "classify",
    "families_table",
    "family_of",
    "lifecycle_before",
    "meta_before",
    "role_class",
    "row_class",
    "rows_json",
    "rows_lines",
]

UNMAPPED = "unmapped"
"""The status a class names for a task that is not in the map."""

_ALL_OPS = frozenset(OP_SPECS)
_OUTCOME_OPS = frozenset(n for n, s in OP_SPECS.items() if s.outcome)


def _listing(family: str) -> frozenset[str]:
    """The operations whose row lists ``family`` in its coverage column."""
    return frozenset(n for n, s in OP_SPECS.items() if family in s.coverage)


@attrs.frozen
class Family:
    """One kind of class: the operations whose steps it sorts, and by what."""

    name: str
    ops: frozenset[str]
    doc: str


FAMILIES: tuple[Family, ...] = (
    Family("row", _ALL_OPS, "a lifecycle table row taken (a status change, or an attached "
           "event queued): the row's label"),
    Family("role", _ALL_OPS, "a role table row taken: the row's label"),
    Family("outcome", _OUTCOME_OPS, "a lifecycle operation's outcome (or error class), by the "
           "task's status before, the event it names and its waiting events (in order)"),
    Family("result", _ALL_OPS - _OUTCOME_OPS, "any other operation's result kind (true/false, "
           "a step name, empty/some, 0/1+, or its error class), by the named task's status "
           "before (unmapped: not in the map)"),
    Family("refs", _listing("refs"), "acquire and release by the task's "
           "reference count before: 0 (not mapped), 1, 2, 3+"),
    Family("heartbeat", _listing("heartbeat"), "a heartbeat handed to the transport, by the "
           "operation and its shape: empty or with entries (one, several), an active or "
           "failed checkpoint, update nodes (duplicated), sent before close (stop_all); by the "
           "chain's tick counter before the call (0, 1, 2, 3+: when the next heartbeat goes)"),
    Family("load", _listing("load"), "a load report by shape: loaded none/one/several (out of id "
           "order: key byte order is not numeric order), removed, duplicates, undecodable, "
           "cleared"),
    Family("start", _listing("start"), "a start step by kind (started, "
           "ready, failed, skipped), and start_all over no task"),
    Family("round", _listing("round"), "a start round completed (by results, by a removal, at once "
           "when empty; with tasks mapped that are not its members or not) or superseded, by "
           "the operation that did it"),
    Family("fault", _listing("fault"), "an armed store fault (begin, put, delete, commit) "
           "hitting an operation that writes"),
    Family("reopen", _listing("reopen"), "a close or crash and reopen, with or without uncommitted "
           "writes, with or without a record persisted as DROPPING"),
    Family("timer", _listing("timer"), "timers firing, by kind: heartbeat, trigger, "
           "task (with a removal pending or not), launch"),
)
_FAMILY = {f.name: f for f in FAMILIES}
LISTED_FAMILIES = frozenset(f.name for f in FAMILIES[4:])
"""The families an operation's coverage column names (the first four follow from the table
and its outcome column)."""
_OPS = {f.name: f.ops for f in FAMILIES}


def families_table() -> str:
    """The families as the Markdown table docs/coverage.md shows (a test keeps it in step)."""
    lines = ["| family | operations | what a class distinguishes |", "|---|---|---|"]
    for f in FAMILIES:
        ops = "every operation" if f.ops == _ALL_OPS else ", ".join(
            f"`{n}`" for n in OP_SPECS if n in f.ops)
        lines.append(f"| `{f.name}` | {ops} | {f.doc} |")
    return "\n".join(lines) + "\n"


def family_of(cls: str) -> Family:
    """The family a class belongs to (KeyError for a string that is no class)."""
    return _FAMILY[cls.partition(":")[0]]


def row_class(row: TransitionRow) -> str:
    return f"row:{row.label}"


def role_class(row: RoleRow) -> str:
    return f"role:{row.label}"


ROW_CLASSES: tuple[str, ...] = tuple(row_class(r) for r in LIFECYCLE_ROWS)
ROLE_CLASSES: tuple[str, ...] = tuple(role_class(r) for r in ROLE_ROWS)

RoleKey = tuple[Role, RoleEvent, Role]


def rows_json(
    lifecycle_rows: Mapping[TransitionRow, int],
    role_rows: Mapping[RoleKey, int],
    why_lifecycle: Callable[[TransitionRow], str],
    why_role: Callable[[RoleRow], str],
) -> dict[str, Any]:
    """The table rows a run took, in the one shape the explorer and the campaign report them
    (check names them as classes, with the same labels): per table, the total, each row taken
    with how often, each row not reached with why."""

    def table(rows: Sequence[Any], times: Callable[[Any], int],
              why: Callable[[Any], str]) -> dict[str, Any]:
        return {
            "total": len(rows),
            "taken": [{"row": r.label, "times": times(r)} for r in rows if times(r)],
            "not_reached": [{"row": r.label, "reason": why(r)} for r in rows if not times(r)],
        }

    return {
        "lifecycle_rows": table(LIFECYCLE_ROWS, lambda r: lifecycle_rows.get(r, 0),
                                why_lifecycle),
        "role_rows": table(ROLE_ROWS, lambda r: role_rows.get((r.from_role, r.event,
                                                               r.to_role), 0), why_role),
    }


def rows_lines(doc: Mapping[str, Any]) -> list[str]:
    """``rows_json``'s report for people."""
    lines: list[str] = []
    for key, name in (("lifecycle_rows", "lifecycle"), ("role_rows", "role")):
        table = doc[key]
        lines.append(f"{name} rows taken: {len(table['taken'])}/{table['total']}")
        lines += [f"  not reached: {m['row']}: {m['reason']}" for m in table["not_reached"]]
    return lines


@attrs.frozen
class Before:
    """What the reference held just before a call, as far as a class reads it."""

    status: str | None = None
    """The named task's status (lower case; ``unmapped``), None if the op names no task."""
    waiting: tuple[str, ...] = ()
    """The named task's waiting (attached) events, oldest first."""
    refs: int = 0
    """The named task's reference count (0: not mapped)."""
    rounds: tuple[int, int] = (0, 0)
    """Start rounds completed and superseded so far."""
    outsiders: bool = False
    """A start round is open and the map holds a task that is not one of its members."""
    ticks: int = 0
    """The heartbeat chain's tick counter (when the next heartbeat goes depends on it)."""
    faults: tuple[int, ...] = ()
    """Armed store faults per FAULT_OPS entry."""
    firing: tuple[str, ...] = ()
    """advance_clock: the kinds of the timers due within the advance, in firing order."""
    drop_pending: bool = False
    """Some task waits for its timers to end before it is removed."""
    uncommitted: bool = False
    """save_task changed records since the last commit."""
    dropping_record: bool = False
    """A committed record is persisted as DROPPING (a reopen removes it)."""


def lifecycle_before(lifecycle: TaskLifecycle) -> Before:
    """A level-1 call's Before: the slot's lifecycle."""
    return Before(status=lifecycle.status.name.lower(), waiting=_waiting(lifecycle))


def meta_before(
    op: Op,
    state: MetaState,
    now_ms: int,
    faults: Sequence[Sequence[int]],
    dropping_record: bool,
) -> Before:
    """A level 2-3 call's Before, read off the meta's state (``StreamMeta.state``)."""
    status = None
    refs = 0
    waiting: tuple[str, ...] = ()
    if any(name == "task" for name, _ in op.args):
        entry = state.entries.get(task_slot(op).id)
        status = UNMAPPED if entry is None else entry.lifecycle.status.name.lower()
        refs = 0 if entry is None else entry.refcount
        waiting = () if entry is None else _waiting(entry.lifecycle)
    firing: tuple[str, ...] = ()
    if op.name == "advance_clock":
        until = now_ms + int(op.arg("ms") or 0)
        firing = tuple(dict.fromkeys(
            t.kind.value for t in state.schedule.in_firing_order() if t.due <= until
        ))
    start = state.start
    return Before(
        status=status,
        waiting=waiting,
        refs=refs,
        rounds=(start.completed, start.superseded),
        outsiders=start.round is not None
        and any(tid not in start.round.member_set for tid in state.entries),
        ticks=state.heartbeat.tick_counter,
        faults=tuple(len(f) for f in faults),
        firing=firing,
        drop_pending=any(e.drop_pending for e in state.entries.values()),
        uncommitted=bool(state.uncommitted),
        dropping_record=dropping_record,
    )


def classify(
    op: Op,
    before: Before,
    result: Mapping[str, Json],
    *,
    rounds: tuple[int, int] = (0, 0),
    faults: Sequence[int] = (),
) -> list[str]:
    """The classes of one call but its table rows: ``rounds`` and ``faults`` are the start
    round counters and armed faults after it (``Before``'s fields)."""
    name = op.name
    value = result.get("ok")
    error = result.get("error")
    kind = f"error:{error}" if error is not None else _kind(value)
    where = "" if before.status is None else f":{before.status}"
    out: list[str] = []
    if name in _OUTCOME_OPS:
        event = dict(op.args).get("event")
        out.append(f"outcome:{name}:{kind}{where}" + ("" if event is None else f":{event}")
                   + f":waiting={'+'.join(before.waiting) or 'none'}")
    else:
        out.append(f"result:{name}:{kind}{where}")
    if name in _OPS["refs"]:
        out.append(f"refs:{name}:{_bucket(before.refs, 3)}")
    ticks = _bucket(before.ticks, 3)
    heartbeats = _strings(result.get("heartbeats"))
    if heartbeats and name not in _OPS["heartbeat"]:
        raise MisuseError(f"{name} sent a heartbeat, but its row's coverage column does not "
                          "list the heartbeat family (statemeta/harness/operations.py)")
    for payload in heartbeats:
        out += [f"heartbeat:{name}:{shape}:ticks={ticks}" for shape in _heartbeat_shapes(payload)]
    if name in _OPS["load"] and isinstance(value, dict):
        out += [f"load:{name}:{shape}" for shape in _load_shapes(value)]
    if name in _OPS["start"]:
        if isinstance(value, list):  # start_all: each task's step
            out += [f"start:{name}:{step}" for step in dict.fromkeys(_steps(value))]
            if not value:
                out.append(f"start:{name}:no-task")
        elif isinstance(value, str):  # start_one
            out.append(f"start:{name}:{value}")
    if name in _OPS["round"]:
        if rounds[0] > before.rounds[0]:
            out.append(f"round:{name}:completed" + (":outsiders" if before.outsiders else ""))
        if rounds[1] > before.rounds[1]:
            out.append(f"round:{name}:superseded")
    if name in _OPS["fault"] and before.faults:
        for fault_op, was, now in zip(FAULT_OPS, before.faults, faults, strict=False):
            if now < was:
                out.append(f"fault:{fault_op}:{name}")
    if name in _OPS["reopen"]:
        out.append(
            f"reopen:{name}:{'uncommitted' if before.uncommitted else 'committed'}:"
            f"{'dropping' if before.dropping_record else 'no-dropping'}"
        )
    for timer in before.firing if name in _OPS["timer"] else ():
        if timer == TimerKind.TASK.value and before.drop_pending:
            out.append(f"timer:{timer}:drop-pending")
        else:
            out.append(f"timer:{timer}")
    return out


def _waiting(lifecycle: TaskLifecycle) -> tuple[str, ...]:
    return tuple(event.name.lower() for _, event in lifecycle.waiting)


def _bucket(n: int, top: int) -> str:
    """``n``, or ``top+`` from ``top`` on."""
    return f"{top}+" if n >= top else str(n)


def _kind(value: Json) -> str:
    """A result value's kind: what a class distinguishes of it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return "0" if value == 0 else "1+"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "empty" if not value else "some"
    return "report"


def _strings(value: Json) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _heartbeat_shapes(payload: str) -> list[str]:
    msg = decode_hb(bytes.fromhex(payload))
    entries = msg.entries
    shapes = ["empty" if not entries else "one-entry" if len(entries) == 1 else "entries"]
    if any(e.active_checkpoint_id for e in entries):
        shapes.append("checkpoint-active")
    if any(e.checkpoint_failed for e in entries):
        shapes.append("checkpoint-failed")
    nodes = msg.update_nodes
    if nodes:
        shapes.append("update-nodes" if len(set(nodes)) == len(nodes) else "update-nodes-dup")
    return shapes


def _load_shapes(report: Mapping[str, Json]) -> list[str]:
    loaded = report.get("loaded")
    ids = loaded if isinstance(loaded, list) else []
    shapes = ["loaded-none" if not ids else "loaded-one" if len(ids) == 1 else "loaded-several"]
    if ids != sorted(ids, key=_id_order):
        shapes.append("out-of-id-order")
    shapes += [k for k in ("removed", "duplicates", "undecodable", "cleared") if report.get(k)]
    return shapes


def _id_order(item: Json) -> tuple[int, ...]:
    return tuple(v for v in item if isinstance(v, int)) if isinstance(item, list) else ()


def _steps(value: list[Json]) -> list[str]:
    return [str(pair[1]) for pair in value if isinstance(pair, list) and len(pair) == 2]
