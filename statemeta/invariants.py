"""The invariant catalogue of spec/invariants.md, one function per id.

Most invariants are functions of a ``MetaView`` alone, so the harness can check another
implementation's view with them. ``store-mirror`` also needs the stored records, and
``table``, ``role``, ``heartbeat`` and ``acquire-live`` are about what happened between two
views: they read the ``CheckTrace`` a meta records in check mode. ``reopen`` compares a meta
after close, open and load with the records committed before. Each function raises
``InvariantViolation(id, evidence)``; ``check_invariants(meta)`` runs them all.

The catalogue reads views and traces (statemeta.views), never the meta itself: it sits below
the meta in the layers (docs/architecture.md), and the meta's edge calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from statemeta.codec import NO_RELATED_TASK, StreamTask, TaskId, cached, decode_hb
from statemeta.errors import DecodeError, InvariantViolation
from statemeta.lifecycle import LIFECYCLE_ROWS, StatusChange, TaskStatus, should_stop
from statemeta.roles import ROLE_ROWS, Role
from statemeta.views import CheckTrace, MetaView, RoleChange, SentHeartbeat

__all__ = [
    "VIEW_INVARIANTS",
    "Checked",
    "acquire_live",
    "check_invariants",
    "check_trace",
    "check_view",
    "drop_pending",
    "fill_history",
    "heartbeat",
    "heartbeat_chain",
    "list_map",
    "paused_count",
    "refcount",
    "reopen",
    "role",
    "start_round",
    "store_mirror",
    "stream_count",
    "table",
]

_LIFECYCLE_ROWS = frozenset(LIFECYCLE_ROWS)
_ROLE_ROWS = frozenset((r.from_role, r.event, r.to_role) for r in ROLE_ROWS)
_NOT_TABLE_CAUSES = frozenset({"resume", "reset", "set_ready"})


def _fail(invariant_id: str, evidence: str) -> InvariantViolation:
    return InvariantViolation(invariant_id, evidence)


# -- over a view ---------------------------------------------------------------------------


def list_map(view: MetaView) -> None:
    """list-map: the task list and the task map hold the same ids, no duplicates."""
    if len(set(view.ids)) != len(view.ids):
        dups = sorted({str(t) for t in view.ids if view.ids.count(t) > 1})
        raise _fail("list-map", f"duplicate ids in the task list: {dups}")
    if set(view.ids) != view.map_ids:
        only_list = sorted(str(t) for t in set(view.ids) - view.map_ids)
        only_map = sorted(str(t) for t in view.map_ids - set(view.ids))
        raise _fail("list-map", f"only in the list: {only_list}; only in the map: {only_map}")
    if tuple(t.id for t in view.tasks) != view.ids:
        raise _fail("list-map", "the task views are not in list order")


def stream_count(view: MetaView) -> None:
    """stream-count: stream_count == mapped tasks with fill_history == 0."""
    expected = sum(1 for t in view.tasks if not t.fill_history)
    if view.stream_count != expected:
        raise _fail("stream-count", f"stream_count {view.stream_count}, stream tasks {expected}")


def paused_count(view: MetaView) -> None:
    """paused-count: paused_count == mapped tasks in PAUSE."""
    paused = [str(t.id) for t in view.tasks if t.status is TaskStatus.PAUSE]
    if view.paused_count != len(paused):
        raise _fail("paused-count", f"paused_count {view.paused_count}, in PAUSE: {paused}")


def refcount(view: MetaView) -> None:
    """refcount: refcount == 1 + (trigger timer held) + outstanding acquires, never below 0;
    a detached task holds exactly its outstanding acquires, at least one."""
    for t in view.tasks:
        expected = 1 + int(t.trigger_held) + t.acquires
        if t.acquires < 0 or t.refcount != expected:
            raise _fail(
                "refcount",
                f"task {t.id}: refcount {t.refcount}, expected 1 + {int(t.trigger_held)} "
                f"(trigger) + {t.acquires} (acquires)",
            )
        if t.trigger_held and (t.task.trigger_param == 0 or t.fill_history):
            raise _fail("refcount", f"task {t.id} holds a trigger reference it cannot have")
    for d in view.detached:
        if d.acquires < 1 or d.refcount != d.acquires:
            raise _fail(
                "refcount",
                f"detached task {d.id} (registration {d.incarnation}): refcount {d.refcount}, "
                f"acquires {d.acquires}",
            )


def start_round(view: MetaView) -> None:
    """start-round: ready and failed are disjoint subsets of the round's members."""
    r = view.start_round
    members = set(r.members)
    if len(members) != len(r.members):
        raise _fail("start-round", f"duplicate members: {[str(m) for m in r.members]}")
    both = set(r.ready) & set(r.failed)
    if both:
        raise _fail("start-round", f"both ready and failed: {sorted(map(str, both))}")
    outside = (set(r.ready) | set(r.failed)) - members
    if outside:
        raise _fail("start-round", f"results for non-members: {sorted(map(str, outside))}")
    if not r.open and (r.members or r.ready or r.failed):
        raise _fail("start-round", "a closed round still holds members or results")


def fill_history(view: MetaView) -> None:
    """fill-history: a stream task's related fill-history id is in the map, cleared, or names
    a task this meta never removed (one not registered yet)."""
    for t in view.tasks:
        h = t.task.h_task_id
        dangling = h != NO_RELATED_TASK and h not in view.map_ids and h in view.removed
        if dangling and not t.fill_history:
            raise _fail(
                "fill-history",
                f"stream task {t.id} still names its removed fill-history task {h}",
            )


def heartbeat_chain(view: MetaView) -> None:
    """heartbeat-chain: the (one) heartbeat chain is armed exactly while the meta is leader
    and not closing."""
    due = view.role is Role.LEADER and not view.closing
    if view.heartbeat.armed != due:
        closing = ", closing" if view.closing else ""
        raise _fail(
            "heartbeat-chain",
            f"role {view.role.name}{closing}, heartbeat chain "
            f"{'armed' if view.heartbeat.armed else 'idle'}",
        )


def drop_pending(view: MetaView) -> None:
    """drop-pending: a task waiting for its timers to be removed is stopping (DROPPING, or
    STOP which the table lets a STOP event reach from DROPPING) with a timer active; no task
    has a negative timer count."""
    for t in view.tasks:
        if t.timer_active < 0:
            raise _fail("drop-pending", f"task {t.id}: timer_active {t.timer_active}")
        if t.drop_pending and (not should_stop(t.status) or t.timer_active == 0):
            raise _fail(
                "drop-pending",
                f"task {t.id} waits for removal in {t.status.name} with "
                f"{t.timer_active} timer(s) active",
            )


VIEW_INVARIANTS: tuple[tuple[str, Callable[[MetaView], None], tuple[str, ...]], ...] = (
    # id                check            the view keys it reads (docs/harness-protocol.md)
    ("list-map", list_map, ("ids", "map_ids", "tasks.id")),
    ("stream-count", stream_count, ("stream_count", "tasks.fill_history")),
    ("paused-count", paused_count, ("paused_count", "tasks.status")),
    ("refcount", refcount, (
        "tasks.refcount", "tasks.acquires", "tasks.trigger_held", "tasks.trigger_param",
        "tasks.fill_history", "detached",
    )),
    ("start-round", start_round, (
        "start_round.open", "start_round.members", "start_round.ready", "start_round.failed",
    )),
    ("fill-history", fill_history, (
        "tasks.id", "tasks.h_task_id", "tasks.fill_history", "map_ids", "removed",
    )),
    ("heartbeat-chain", heartbeat_chain, ("role", "heartbeat.armed", "closing")),
    ("drop-pending", drop_pending, ("tasks.status", "tasks.timer_active", "tasks.drop_pending")),
)
"""Each invariant a view alone decides, and the keys of the JSON view it reads: the harness
runs it on an implementation's view only when all of them are observed."""


def check_view(view: MetaView) -> None:
    """Every invariant that a view alone decides."""
    for _id, check, _reads in VIEW_INVARIANTS:
        check(view)


# -- over the store ------------------------------------------------------------------------


def store_mirror(
    view: MetaView, stored: Sequence[tuple[bytes, StreamTask | None]]
) -> None:
    """store-mirror: every mapped task is stored, decoding to its in-memory record; once
    load_all has run, every other stored record is one that does not decode (skipped)."""
    records = {t.id: t.task for t in view.tasks}
    seen: set[TaskId] = set()
    for key, task in stored:
        try:
            key_id = cached.key_id(key)
        except DecodeError as e:
            raise _fail("store-mirror", f"stored key {key.hex()} does not decode: {e}") from e
        if key_id not in records:
            if view.loaded and task is not None:
                raise _fail("store-mirror", f"stored task {key_id} is not mapped after load")
            continue
        if task != records[key_id]:
            what = "does not decode" if task is None else "differs from the in-memory record"
            raise _fail("store-mirror", f"the stored value of task {key_id} {what}")
        seen.add(key_id)
    missing = sorted(str(t) for t in records.keys() - seen)
    if missing:
        raise _fail("store-mirror", f"mapped tasks not in the store: {missing}")


# -- over what happened --------------------------------------------------------------------


def table(changes: Sequence[StatusChange]) -> None:
    """table: every status change is a row of the lifecycle table, or resume / reset."""
    for c in changes:
        if c.row is None:
            if c.cause not in _NOT_TABLE_CAUSES:
                raise _fail("table", f"{c.old.name} -> {c.new.name} ({c.cause}) names no row")
        elif (
            c.row not in _LIFECYCLE_ROWS
            or (c.row.from_status, c.row.event, c.row.to_status) != (c.old, c.event, c.new)
        ):
            raise _fail("table", f"{c.old.name} -{c.event}-> {c.new.name} is not the row {c.row}")


def role(changes: Sequence[RoleChange]) -> None:
    """role: every role change is a row of the role table."""
    for c in changes:
        if (c.old, c.event, c.new) not in _ROLE_ROWS:
            raise _fail("role", f"{c.old.name} -{c.event.name}-> {c.new.name} is not a row")


def heartbeat(sent: Sequence[SentHeartbeat]) -> None:
    """heartbeat: only a leader sends (the before-close one aside); the entries are the
    non-fill-history tasks in list order; decode(encode(m)) == m."""
    for hb in sent:
        if hb.role is not Role.LEADER and not hb.before_close:
            raise _fail("heartbeat", f"a {hb.role.name} sent a heartbeat")
        ids = tuple(TaskId(e.stream_id, e.task_id) for e in hb.msg.entries)
        if ids != hb.expected_ids:
            raise _fail(
                "heartbeat",
                f"entries {[str(i) for i in ids]}, expected {[str(i) for i in hb.expected_ids]}",
            )
        decoded = decode_hb(hb.payload)
        if decoded != hb.msg:
            raise _fail("heartbeat", f"the payload decodes to {decoded}, not to {hb.msg}")


def acquire_live(acquired: Sequence[TaskStatus]) -> None:
    """acquire-live: acquire never returns a task in STOP or DROPPING."""
    for status in acquired:
        if should_stop(status):
            raise _fail("acquire-live", f"acquire returned a task in {status.name}")


def check_trace(trace: CheckTrace) -> None:
    table(trace.status_changes)
    role(trace.role_changes)
    heartbeat(trace.heartbeats)
    acquire_live(trace.acquired)


# -- across close and open -----------------------------------------------------------------


def reopen(committed_keys: Sequence[bytes], view: MetaView) -> None:
    """reopen: after close, open and load_all of a fresh meta, its ids are the committed
    records' (in key byte order), every task UNINIT, not downstream-ready, paused_count 0."""
    expected = tuple(cached.key_id(k) for k in sorted(committed_keys))
    if view.ids != expected:
        raise _fail(
            "reopen",
            f"ids {[str(i) for i in view.ids]}, committed {[str(i) for i in expected]}",
        )
    for t in view.tasks:
        if t.status is not TaskStatus.UNINIT or t.downstream_ready:
            raise _fail(
                "reopen",
                f"task {t.id} loaded as {t.status.name}, downstream-ready {t.downstream_ready}",
            )
    if view.paused_count != 0:
        raise _fail("reopen", f"paused_count {view.paused_count} after load")


class Checked(Protocol):
    """What ``check_invariants`` reads of a meta (a ``StreamMeta`` is one)."""

    def view(self) -> MetaView: ...

    def stored_tasks(self) -> tuple[tuple[bytes, StreamTask | None], ...]: ...

    def take_trace(self) -> CheckTrace: ...


def check_invariants(meta: Checked) -> None:
    """Every invariant on ``meta`` now, and on what it recorded since the last check."""
    view = meta.view()
    check_view(view)
    store_mirror(view, meta.stored_tasks())
    check_trace(meta.take_trace())
