"""The normative tables of spec/ (lifecycle.toml, roles.toml), loaded and checked at import.

The enums are written here for typing and checked against the TOML (names and values), so the
code and the tables cannot drift. Every check raises SpecError naming the file and the row.
The loaders take a parsed document, so a test can feed them a deliberately bad table.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any, TypeVar

import attrs

from statemeta.errors import SpecError

__all__ = [
    "DIVERGENCES",
    "LIFECYCLE",
    "ROLES",
    "Divergence",
    "DivergenceTable",
    "LifecycleTable",
    "Role",
    "RoleEvent",
    "RoleRow",
    "RoleTable",
    "Switch",
    "TaskEvent",
    "TaskStatus",
    "TransitionRow",
    "load_divergences",
    "load_lifecycle",
    "load_roles",
    "read_spec",
    "spec_dir",
]


class NamedIntEnum(IntEnum):
    """An IntEnum with TDengine's values that prints by name: ``print(status)`` shows PAUSE,
    not 6 (formatting, ``f"{status:d}"`` and JSON still see the int)."""

    def __str__(self) -> str:
        return self.name


class TaskStatus(NamedIntEnum):
    """ETaskStatus: a stream task's lifecycle status, with TDengine's values."""

    READY = 0
    DROPPING = 1
    UNINIT = 2
    STOP = 3
    SCAN_HISTORY = 4
    HALT = 5
    PAUSE = 6
    CK = 7

    @property
    def display(self) -> str:
        """TDengine's display name (StreamTaskStatusList), e.g. "paused" for PAUSE."""
        return LIFECYCLE.status_display[self]


class TaskEvent(NamedIntEnum):
    """EStreamTaskEvent: what a task's lifecycle is asked to do, with TDengine's values."""

    INIT = 1
    INIT_SCANHIST = 2
    SCANHIST_DONE = 3
    STOP = 4
    GEN_CHECKPOINT = 5
    CHECKPOINT_DONE = 6
    PAUSE = 7
    RESUME = 8
    HALT = 9
    DROPPING = 10

    @property
    def display(self) -> str:
        """TDengine's display name, e.g. "pausing" for PAUSE."""
        return LIFECYCLE.event_display[self]


class Role(NamedIntEnum):
    """The meta's node role (NODE_ROLE_*), with TDengine's values."""

    UNINIT = 1
    LEADER = 2
    FOLLOWER = 3


class RoleEvent(NamedIntEnum):
    """The calls that change a meta's role (no TDengine enum; values only order them)."""

    BECOME_LEADER = 1
    BECOME_FOLLOWER = 2
    CLOSE = 3


class Switch(Enum):
    """A divergence of the intended semantics from the seed that the reference implements both
    ways (spec/divergences.toml names each; ``statemeta.semantics`` says which way a run goes)."""

    REPEAT_OVERWRITES_SAVED = "repeat_overwrites_saved"
    """L1. Seed: a repeated PAUSE / HALT overwrites the status resume restores."""
    RESUME_SWAPS_PREV = "resume_swaps_prev"
    """L2. Seed: resume swaps the status with the one saved (one slot, not a stack)."""
    WAITING_POPS_LAST = "waiting_pops_last"
    """L3. Seed: the head of the waiting queue fires, but the queue's last entry is removed."""
    WAITING_KEPT_ON_STOP = "waiting_kept_on_stop"
    """L4. Seed: entering STOP, DROPPING or UNINIT by a row or a resume keeps the queue."""
    RESET_KEEPS_PREV = "reset_keeps_prev"
    """L6. Seed: reset leaves ``prev`` as it was."""
    PREV_STARTS_READY = "prev_starts_ready"
    """L8. Seed: before any change ``prev`` is READY with no event (a zeroed struct)."""
    PAUSED_COUNT_DRIFTS = "paused_count_drifts"
    """M1. Seed: paused_count moves with calls (each PAUSE handled +1), not with statuses."""
    REGISTER_LISTS_FIRST = "register_lists_first"
    """M2. Seed: register lists the id before save and commit; a failure leaves it listed."""
    REMOVAL_NOT_COMMITTED = "removal_not_committed"
    """M3. Seed: unregister and load's removals write into the open transaction, uncommitted."""
    TRANSACTION_KEPT_OPEN = "transaction_kept_open"
    """M15. Seed: a transaction is open from open on and each commit begins the next; a failed
    commit keeps the writes in it, and a failed begin after a commit leaves the meta's handle
    stale, so that every later commit fails until close."""
    LOAD_ABORTS_ON_UNDECODABLE = "load_aborts_on_undecodable"
    """M4. Seed: load stops at the first record that does not decode (tasks so far stay)."""
    DROPPING_BEFORE_DUPLICATE = "dropping_before_duplicate"
    """M5. Seed: load recycles a DROPPING record even if its id is in the map."""
    COMPAT_CHECKS_FIRST_RECORD = "compat_checks_first_record"
    """M6. Seed: open checks the version of the first record only."""
    ROUND_COMPLETES_BY_COUNT = "round_completes_by_count"
    """M7. Seed: results go into two sets (any id, once per set) and a start round completes
    when |ready| + |failed| == the map's size."""
    READY_STEP_BY_KIND = "ready_step_by_kind"
    """M14. Seed: the downstream-ready step completes INIT for a stream task and INIT_SCANHIST
    for a fill-history task, whatever is in progress, and records the ready result and
    launches the fill-history task even when that completion is refused."""
    RELEASE_BELOW_ZERO = "release_below_zero"
    """M8. Seed: a release with no outstanding acquire decrements anyway (no ReleaseError)."""
    UNREGISTER_CLEARS_ANY_LINK = "unregister_clears_any_link"
    """M9. Seed: unregistering a fill-history task clears the link its stream task has."""
    SAVE_TASK_UNMAPPED = "save_task_unmapped"
    """M10. Seed: save_task of a task that is not mapped writes its record."""
    SAVE_TASK_KEEPS_RECORD = "save_task_keeps_record"
    """M13. Seed: the harness's save_task writes the record as the meta holds it (its status
    byte and checkpoint id as they were made), not with the current status and checkpoint."""
    LAUNCH_GIVE_UP_NOT_SAVED = "launch_give_up_not_saved"
    """M11. Seed: the fill-history launch giving up clears the link in memory only."""
    HEARTBEAT_ENDS_AT_TICK = "heartbeat_ends_at_tick"
    """M12. Seed: the heartbeat chain is armed at open for any meta and ends only at a tick
    that finds the meta not leader (leaving LEADER leaves it armed until then)."""
    HEARTBEAT_AFTER_NOTIFY_CLOSE = "heartbeat_after_notify_close"
    """M16. Seed: notify_close leaves the heartbeat chain as it is: a leader's goes on
    ticking, and sending, while its tasks stop and the meta closes."""
    LENGTH_HEADER_TRUSTED = "length_header_trusted"
    """U1. Seed: the decoder takes a record's length header as its size: a torn record is
    read past its end (undefined behaviour)."""
    RELEASE_FREES_MAPPED = "release_frees_mapped"
    """U2. Seed: a release that takes the meta's own reference frees a task the meta still
    maps (undefined behaviour at its next use)."""
    RELEASE_OF_FREED = "release_of_freed"
    """U3. Seed: a release through a handle whose task is freed writes freed memory
    (undefined behaviour)."""


@attrs.frozen
class TransitionRow:
    """One row of the lifecycle table (doInitStateTransferTable)."""

    from_status: TaskStatus
    event: TaskEvent
    to_status: TaskStatus
    attach: TaskStatus | None = None
    """The status an attached event waits for before it fires (None: applied at once)."""
    two_phase: bool = False
    """handle() only starts the transition; complete() applies it (autoInvokeEndFn false)."""

    @property
    def label(self) -> str:
        """The row for people: ``CK -HALT-> HALT (attached, waits for READY)``."""
        how = f" (attached, waits for {self.attach.name})" if self.attach is not None else ""
        phase = " (two-phase)" if self.two_phase else ""
        return f"{self.from_status.name} -{self.event.name}-> {self.to_status.name}{how}{phase}"


@attrs.frozen
class RoleRow:
    """One row of the role table, with the effects the meta must carry out."""

    from_role: Role
    event: RoleEvent
    to_role: Role
    start_heartbeat: bool = False
    stop_heartbeat: bool = False
    send_before_close: bool = False

    @property
    def label(self) -> str:
        """The row for people: ``FOLLOWER -BECOME_LEADER-> LEADER``."""
        return f"{self.from_role.name} -{self.event.name}-> {self.to_role.name}"


@attrs.frozen
class LifecycleTable:
    """spec/lifecycle.toml, checked."""

    initial: TaskStatus
    status_display: Mapping[TaskStatus, str]
    event_display: Mapping[TaskEvent, str]
    rows: tuple[TransitionRow, ...]
    rejected: frozenset[tuple[TaskStatus, TaskEvent]]
    drops_waiting: frozenset[TaskStatus]
    resumable: frozenset[TaskStatus]
    set_ready_refused: frozenset[TaskStatus]
    complete_needs_active: frozenset[TaskStatus]
    should_stop: frozenset[TaskStatus]
    should_pause: frozenset[TaskStatus]
    ready_to_run: frozenset[TaskStatus]
    sink_level: int
    ready_to_run_sink: frozenset[TaskStatus]


@attrs.frozen
class RoleTable:
    """spec/roles.toml, checked."""

    initial: Role
    rows: tuple[RoleRow, ...]


@attrs.frozen
class Divergence:
    """One row of spec/divergences.toml: a switch, or a divergence outside the model."""

    id: str
    title: str
    scope: str
    switch: Switch | None
    """None: not modelled (``why`` says why)."""
    why: str = ""


@attrs.frozen
class DivergenceTable:
    """spec/divergences.toml, checked: every ``Switch`` has exactly one row."""

    rows: tuple[Divergence, ...]

    def row(self, switch: Switch) -> Divergence:
        return next(r for r in self.rows if r.switch is switch)


_E = TypeVar("_E", bound=IntEnum)

_TRANSITION_KEYS = frozenset({"from", "event", "to", "attach", "two_phase"})
_ROLE_EFFECTS = ("start_heartbeat", "stop_heartbeat", "send_before_close")
_ROLE_TRANSITION_KEYS = frozenset({"from", "event", "to", *_ROLE_EFFECTS})


class _Checker:
    """Reads one parsed spec document; every complaint names the file and the row."""

    def __init__(self, doc: Mapping[str, Any], source: str) -> None:
        self.doc = doc
        self.source = source

    def fail(self, where: str, problem: str) -> SpecError:
        return SpecError(f"{self.source}: {where}: {problem}")

    def rows(self, key: str) -> list[Mapping[str, Any]]:
        rows = self.doc.get(key)
        if not isinstance(rows, list) or not rows:
            raise self.fail(f"[[{key}]]", "missing or empty array of tables")
        for number, row in enumerate(rows, 1):
            if not isinstance(row, dict):
                raise self.fail(f"[[{key}]] #{number}", "not a table")
        return rows

    def field(self, row: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
        value = row.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(where, f"{key!r} must be a {kind.__name__}, got {value!r}")
        return value

    def member(self, enum: type[_E], name: object, where: str, key: str) -> _E:
        valid = isinstance(name, str) and name == name.lower()
        if not valid or str(name).upper() not in enum.__members__:
            known = ", ".join(m.name.lower() for m in enum)
            raise self.fail(where, f"unknown {enum.__name__} {name!r} in {key!r} (known: {known})")
        return enum[str(name).upper()]

    def members(self, enum: type[_E], names: object, where: str) -> frozenset[_E]:
        if not isinstance(names, list):
            raise self.fail(where, f"must be a list of {enum.__name__} names, got {names!r}")
        return frozenset(self.member(enum, name, where, "list") for name in names)

    def section(self, key: str) -> Mapping[str, Any]:
        value = self.doc.get(key)
        if not isinstance(value, dict):
            raise self.fail(f"[{key}]", "missing table")
        return value

    def vocabulary(self, key: str, enum: type[_E]) -> dict[_E, Mapping[str, Any]]:
        """Checks [[key]] against ``enum``: same names, same values, no duplicates."""
        found: dict[_E, Mapping[str, Any]] = {}
        values: dict[int, str] = {}
        for number, row in enumerate(self.rows(key), 1):
            where = f"[[{key}]] #{number} ({row.get('name')!r})"
            member = self.member(enum, row.get("name"), where, "name")
            value = self.field(row, "value", int, where)
            if member in found:
                raise self.fail(where, f"duplicate name {row['name']!r}")
            if value in values:
                raise self.fail(where, f"value {value} already used by {values[value]!r}")
            if value != member.value:
                raise self.fail(where, f"value {value} differs from {enum.__name__}.{member.name}"
                                       f" = {member.value} in the code")
            found[member] = row
            values[value] = row["name"]
        missing = [m.name.lower() for m in enum if m not in found]
        if missing:
            raise self.fail(f"[[{key}]]", f"no row for {', '.join(missing)}")
        return found

    def reachable(self, initial: IntEnum, edges: list[tuple[IntEnum, IntEnum]], what: str) -> None:
        seen = {initial}
        frontier = [initial]
        while frontier:
            here = frontier.pop()
            for source, target in edges:
                if source == here and target not in seen:
                    seen.add(target)
                    frontier.append(target)
        for member in type(initial):
            if member not in seen:
                raise self.fail(
                    f"[[{what}]] {member.name.lower()!r}",
                    f"not reachable from {initial.name.lower()!r} by any transition row",
                )


def load_lifecycle(doc: Mapping[str, Any], source: str = "lifecycle.toml") -> LifecycleTable:
    """Builds the lifecycle table from a parsed lifecycle.toml; raises SpecError on any fault."""
    check = _Checker(doc, source)
    statuses = check.vocabulary("status", TaskStatus)
    events = check.vocabulary("event", TaskEvent)
    status_display = {
        s: check.field(row, "display", str, f"[[status]] {row['name']!r}")
        for s, row in statuses.items()
    }
    event_display = {
        e: check.field(row, "display", str, f"[[event]] {row['name']!r}")
        for e, row in events.items()
    }
    initial = check.member(TaskStatus, doc.get("initial"), "top level", "initial")

    rows: list[TransitionRow] = []
    by_pair: dict[tuple[TaskStatus, TaskEvent], TransitionRow] = {}
    for number, raw in enumerate(check.rows("transition"), 1):
        where = f"[[transition]] #{number} (from {raw.get('from')!r}, event {raw.get('event')!r})"
        unknown = sorted(set(raw) - _TRANSITION_KEYS)
        if unknown:
            raise check.fail(where, f"unknown key(s) {', '.join(unknown)}")
        attach = raw.get("attach")
        two_phase = raw.get("two_phase", False)
        if not isinstance(two_phase, bool):
            raise check.fail(where, f"'two_phase' must be true or false, got {two_phase!r}")
        row = TransitionRow(
            from_status=check.member(TaskStatus, raw.get("from"), where, "from"),
            event=check.member(TaskEvent, raw.get("event"), where, "event"),
            to_status=check.member(TaskStatus, raw.get("to"), where, "to"),
            attach=None if attach is None else check.member(TaskStatus, attach, where, "attach"),
            two_phase=two_phase,
        )
        if row.attach is not None and row.two_phase:
            raise check.fail(where, "a row is either attached or two-phase, not both")
        if (row.from_status, row.event) in by_pair:
            raise check.fail(where, "duplicate (from, event) pair")
        by_pair[row.from_status, row.event] = row
        rows.append(row)

    for number, row in enumerate(rows, 1):
        if row.attach is None:
            continue
        where = f"[[transition]] #{number} (from {row.from_status.name.lower()!r}, " \
                f"event {row.event.name.lower()!r})"
        fired = by_pair.get((row.attach, row.event))
        if fired is None or fired.attach is not None or fired.two_phase or (
            fired.to_status != row.to_status
        ):
            raise check.fail(where, f"an attached event must fire through a plain row "
                                    f"({row.attach.name.lower()!r}, {row.event.name.lower()!r}) "
                                    f"leading to {row.to_status.name.lower()!r}")

    rejected: set[tuple[TaskStatus, TaskEvent]] = set()
    for event_name, status_names in check.section("rejected").items():
        where = f"[rejected] {event_name!r}"
        event = check.member(TaskEvent, event_name, where, "key")
        for status in check.members(TaskStatus, status_names, where):
            if (status, event) in by_pair:
                raise check.fail(where, f"{status.name.lower()!r} is also a transition row")
            rejected.add((status, event))
    for status in TaskStatus:
        for event in TaskEvent:
            if (status, event) not in by_pair and (status, event) not in rejected:
                raise check.fail(
                    f"status {status.name.lower()!r} x event {event.name.lower()!r}",
                    "neither a [[transition]] row nor listed in [rejected]",
                )
    check.reachable(initial, [(r.from_status, r.to_status) for r in rows], "status")

    semantics = check.section("semantics")
    predicates = check.section("predicates")
    sink = predicates.get("ready_to_run_sink")
    if not isinstance(sink, dict):
        raise check.fail("[predicates.ready_to_run_sink]", "missing table")

    def statuses_in(table: Mapping[str, Any], section: str, key: str) -> frozenset[TaskStatus]:
        return check.members(TaskStatus, table.get(key), f"[{section}] {key!r}")

    ready_to_run = statuses_in(predicates, "predicates", "ready_to_run")
    return LifecycleTable(
        initial=initial,
        status_display=status_display,
        event_display=event_display,
        rows=tuple(rows),
        rejected=frozenset(rejected),
        drops_waiting=statuses_in(semantics, "semantics", "drops_waiting"),
        resumable=statuses_in(semantics, "semantics", "resumable"),
        set_ready_refused=statuses_in(semantics, "semantics", "set_ready_refused"),
        complete_needs_active=statuses_in(semantics, "semantics", "complete_needs_active"),
        should_stop=statuses_in(predicates, "predicates", "should_stop"),
        should_pause=statuses_in(predicates, "predicates", "should_pause"),
        ready_to_run=ready_to_run,
        sink_level=check.field(sink, "task_level", int, "[predicates.ready_to_run_sink]"),
        ready_to_run_sink=ready_to_run
        | statuses_in(sink, "predicates.ready_to_run_sink", "also"),
    )


def load_roles(doc: Mapping[str, Any], source: str = "roles.toml") -> RoleTable:
    """Builds the role table from a parsed roles.toml; raises SpecError on any fault."""
    check = _Checker(doc, source)
    check.vocabulary("role", Role)
    check.vocabulary("event", RoleEvent)
    initial = check.member(Role, doc.get("initial"), "top level", "initial")
    rows: list[RoleRow] = []
    pairs: set[tuple[Role, RoleEvent]] = set()
    for number, raw in enumerate(check.rows("transition"), 1):
        where = f"[[transition]] #{number} (from {raw.get('from')!r}, event {raw.get('event')!r})"
        unknown = sorted(set(raw) - _ROLE_TRANSITION_KEYS)
        if unknown:
            raise check.fail(where, f"unknown key(s) {', '.join(unknown)}")
        effects: dict[str, bool] = {}
        for effect in _ROLE_EFFECTS:
            value = raw.get(effect, False)
            if not isinstance(value, bool):
                raise check.fail(where, f"{effect!r} must be true or false, got {value!r}")
            effects[effect] = value
        row = RoleRow(
            from_role=check.member(Role, raw.get("from"), where, "from"),
            event=check.member(RoleEvent, raw.get("event"), where, "event"),
            to_role=check.member(Role, raw.get("to"), where, "to"),
            **effects,
        )
        if (row.from_role, row.event) in pairs:
            raise check.fail(where, "duplicate (from, event) pair")
        pairs.add((row.from_role, row.event))
        rows.append(row)
    for role in Role:
        for event in RoleEvent:
            if (role, event) not in pairs:
                raise check.fail(f"role {role.name.lower()!r} x event {event.name.lower()!r}",
                                 "no [[transition]] row (every pair must be a row)")
    check.reachable(initial, [(r.from_role, r.to_role) for r in rows], "role")
    return RoleTable(initial=initial, rows=tuple(rows))


_DIVERGENCE_KEYS = frozenset({"id", "title", "scope", "switch", "modelled", "why"})
_SCOPES = frozenset({"lifecycle", "roles", "meta"})


def load_divergences(doc: Mapping[str, Any], source: str = "divergences.toml") -> DivergenceTable:
    """Builds the switch table from a parsed divergences.toml; raises SpecError on any fault."""
    check = _Checker(doc, source)
    rows: list[Divergence] = []
    seen: dict[str, str] = {}
    for number, raw in enumerate(check.rows("divergence"), 1):
        where = f"[[divergence]] #{number} ({raw.get('id')!r})"
        unknown = sorted(set(raw) - _DIVERGENCE_KEYS)
        if unknown:
            raise check.fail(where, f"unknown key(s) {', '.join(unknown)}")
        ident = check.field(raw, "id", str, where)
        if ident in seen:
            raise check.fail(where, f"duplicate id {ident!r}")
        scope = check.field(raw, "scope", str, where)
        if scope not in _SCOPES:
            raise check.fail(where, f"scope {scope!r} is not one of {sorted(_SCOPES)}")
        modelled = raw.get("modelled", True)
        if not isinstance(modelled, bool):
            raise check.fail(where, f"'modelled' must be true or false, got {modelled!r}")
        switch: Switch | None = None
        why = ""
        if modelled:
            name = check.field(raw, "switch", str, where)
            if name not in {s.value for s in Switch}:
                known = ", ".join(s.value for s in Switch)
                raise check.fail(where, f"unknown switch {name!r} (known: {known})")
            switch = Switch(name)
            if switch.value in seen.values():
                raise check.fail(where, f"switch {name!r} already has a row")
        else:
            if "switch" in raw:
                raise check.fail(where, "a row that is not modelled names no switch")
            why = check.field(raw, "why", str, where)
        seen[ident] = "" if switch is None else switch.value
        rows.append(Divergence(ident, check.field(raw, "title", str, where), scope, switch, why))
    missing = [s.value for s in Switch if s.value not in seen.values()]
    if missing:
        raise check.fail("[[divergence]]", f"no row for switch(es) {', '.join(missing)}")
    return DivergenceTable(tuple(rows))


def spec_dir() -> Path:
    """The spec/ files: packaged in a wheel as statemeta/_spec, else <repo>/spec."""
    here = Path(__file__).resolve().parent
    candidates = (here / "_spec", here.parent / "spec")
    for candidate in candidates:
        if (candidate / "lifecycle.toml").is_file():
            return candidate
    raise SpecError(f"no spec directory with lifecycle.toml in {', '.join(map(str, candidates))}")


def read_spec(path: Path) -> dict[str, Any]:
    """Parses one TOML spec file; a syntax error becomes a SpecError naming the file."""
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise SpecError(f"{path}: cannot read: {error}") from error


_SPEC = spec_dir()
LIFECYCLE: LifecycleTable = load_lifecycle(
    read_spec(_SPEC / "lifecycle.toml"), str(_SPEC / "lifecycle.toml")
)
ROLES: RoleTable = load_roles(read_spec(_SPEC / "roles.toml"), str(_SPEC / "roles.toml"))
DIVERGENCES: DivergenceTable = load_divergences(
    read_spec(_SPEC / "divergences.toml"), str(_SPEC / "divergences.toml")
)
