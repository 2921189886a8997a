"""What an implementation observes: the view keys it reports, and how finely it tells outcomes.

Real code cannot produce every key of the reference's view: TDengine's state machine keeps no
saved *stack* and no acquire count, and its wrapper answers ``pending`` only because it cuts a
blocking call short. A harness that compares every key forces such a wrapper to fake internal
state. So in protocol 2 (docs/harness-protocol.md) an implementation declares in ``hello`` what
it can honestly report, and the harness compares exactly that:

- ``observes``: per level, the view's top-level keys (``view``) and each task's keys
  (``tasks``), a key in full or in one of the coarser forms of ``COARSE_FORMS``;
- ``outcomes``: ``full``, or ``ok_rejected`` (applied, started and pending are one ``ok``);
- ``results``: per operation, what of its result it gives (``RESULT_FORMS``: in full, only its
  outcome, or nothing), for real code whose call returns a code where the reference returns a
  value (a start round's steps, a load report, a bool);
- ``sets``: the view keys of ``SET_KEYS`` it holds as sets (their order is not compared);
- ``blocks``: the operations of statemeta.harness.blocking's table it may answer
  ``{"blocked": true}`` (the call waits in the code), compared with where the seed waits.

Both sides' views and results are projected onto the declaration (``view_of``, ``result_of``)
and then compared; every projection is idempotent, so an implementation sends its values already
projected. An undeclared key is never compared; ``unobserved`` names what was left out, and an
invariant runs on the implementation's view only when every key it reads is observed
(``unchecked``). Protocol 1 means everything observed, outcomes in full.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from statemeta.errors import MisuseError
from statemeta.harness.blocking import BLOCKED, BLOCKING, blocked_form
from statemeta.harness.differences import compact
from statemeta.harness.normalize import Json
from statemeta.harness.operations import LEVELS, OP_SPECS, Op
from statemeta.harness.wire import is_int
from statemeta.lifecycle import TaskEvent, TaskStatus
from statemeta.roles import Role

__all__ = [
    "COARSE_FORMS",
    "IDENTITY",
    "OBJECT_FIELDS",
    "OUTCOMES",
    "RESULT_FORMS",
    "SET_KEYS",
    "VIEW_KEYS",
    "VIEW_KINDS",
    "Observation",
    "declared",
    "observes_json",
]

_LEVEL_1_TASK = ("slot", "status", "saved", "active", "waiting", "prev_status", "prev_event")
_META_VIEW = (
    "level", "now_ms", "vg_id", "stage", "role", "ids", "map_ids", "num_tasks", "stream_count",
    "paused_count", "tasks", "start_round", "heartbeat", "detached", "removed", "loaded",
    "closing",
)
_META_TASK = (
    "id", "status", "saved", "active", "waiting", "refcount", "acquires", "trigger_held",
    "downstream_ready", "timer_active", "drop_pending", "next_process_ver", "checkpointing_id",
    "failed_checkpoint_id", "fill_history", "trigger_param", "h_task_id", "stream_task_id",
    "persisted_status", "checkpoint_id", "checkpoint_ver",
)

VIEW_KEYS: Mapping[int, tuple[tuple[str, ...], tuple[str, ...]]] = {
    1: (("level", "tasks"), _LEVEL_1_TASK),
    2: (_META_VIEW, _META_TASK),
    3: (_META_VIEW, _META_TASK),
}
"""Per level: the view's top-level keys and each task's keys, in view order."""

IDENTITY: Mapping[int, tuple[tuple[str, ...], tuple[str, ...]]] = {
    1: (("level", "tasks"), ("slot",)),
    2: (("level", "tasks"), ("id",)),
    3: (("level", "tasks"), ("id",)),
}
"""The keys every view holds whatever is declared: the level, and which tasks it shows."""

OBJECT_FIELDS: Mapping[str, tuple[str, ...]] = {
    "start_round": ("open", "members", "ready", "failed", "completed", "superseded"),
    "heartbeat": ("armed", "tick_counter", "sent", "send_before_close"),
}
"""Top-level keys whose value is an object: ``KEY.FIELD`` declares one of its fields alone."""

COARSE_FORMS: Mapping[str, tuple[str, str, Callable[[Json], Json]]] = {
    "saved:top": (
        "saved",
        "only the status one resume restores: `[status]`, or `[]` when there is none",
        lambda saved: saved[-1:],
    ),
}
"""Task keys in a coarser form: name -> (the key, what the form keeps, its projection)."""

OUTCOMES: Mapping[str, str] = {
    "full": "`applied`, `started`, `pending` and `rejected` are told apart",
    "ok_rejected": "`applied`, `started` and `pending` are all `ok`; `rejected` stays",
}
"""The declarations of ``outcomes``: how finely an outcome result is compared."""

RESULT_FORMS: Mapping[str, str] = {
    "full": "the whole result: the `ok` value, or the error's class, and the heartbeats",
    "outcome": "whether it succeeded and the error's class, and the heartbeats; not the `ok` "
    "value (a call that returns a code, or nothing)",
    "none": "only the heartbeats: neither the `ok` value nor whether it failed",
}
"""The declarations of ``results``: what of one operation's result is compared."""

SET_KEYS: Mapping[str, str] = {
    "start_round.ready": "the round's ready ids (a hash set in the seed)",
    "start_round.failed": "the round's failed ids (a hash set in the seed)",
}
"""The view keys whose value is a set in the seed: an implementation may declare that it holds
them so (``sets``), and they are then compared in one order (sorted) on both sides."""

Kind = tuple[Callable[[Json], bool], str]
"""A check of a view value, and what the value must be (for the message naming it)."""


def _names(enum_type: type[TaskStatus] | type[TaskEvent] | type[Role]) -> Callable[[Json], bool]:
    names = frozenset(member.name.lower() for member in enum_type)
    return lambda value: isinstance(value, str) and value in names


def _id(value: Json) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(map(is_int, value))


def _ids(value: Json) -> bool:
    return isinstance(value, list) and all(map(_id, value))


_STATUS, _EVENT, _ROLE = _names(TaskStatus), _names(TaskEvent), _names(Role)
_INT: Kind = (is_int, "an int")
_BOOL: Kind = (lambda v: isinstance(v, bool), "a bool")
_ID: Kind = (_id, "an id [stream_id, task_id]")
_IDS: Kind = (_ids, "a list of ids [stream_id, task_id]")
_STATUS_OR_NULL: Kind = (lambda v: v is None or _STATUS(v), "a status name or null")
_EVENT_OR_NULL: Kind = (lambda v: v is None or _EVENT(v), "an event name or null")

VIEW_KINDS: Mapping[str, Kind] = {
    "level": _INT, "now_ms": _INT, "vg_id": _INT, "stage": _INT,
    "role": (_ROLE, "a role name"), "ids": _IDS, "map_ids": _IDS, "num_tasks": _INT,
    "stream_count": _INT, "paused_count": _INT,
    "tasks": (lambda v: isinstance(v, list), "a list of tasks"),
    "start_round": (lambda v: isinstance(v, dict), "an object"),
    "start_round.open": _BOOL, "start_round.members": _IDS, "start_round.ready": _IDS,
    "start_round.failed": _IDS, "start_round.completed": _INT, "start_round.superseded": _INT,
    "heartbeat": (lambda v: isinstance(v, dict), "an object"),
    "heartbeat.armed": _BOOL, "heartbeat.tick_counter": _INT, "heartbeat.sent": _INT,
    "heartbeat.send_before_close": _BOOL,
    "detached": (
        lambda v: isinstance(v, list) and all(
            isinstance(d, dict) and _id(d.get("id")) and is_int(d.get("refcount"))
            and is_int(d.get("acquires")) for d in v
        ),
        'a list of {"id", "refcount", "acquires"}',
    ),
    "removed": _IDS, "loaded": _BOOL, "closing": _BOOL,
    "tasks.slot": (lambda v: isinstance(v, str), "a slot name"), "tasks.id": _ID,
    "tasks.status": (_STATUS, "a status name"),
    "tasks.saved": (lambda v: isinstance(v, list) and all(map(_STATUS, v)),
                    "a list of status names"),
    "tasks.active": _EVENT_OR_NULL,
    "tasks.waiting": (
        lambda v: isinstance(v, list) and all(
            isinstance(w, list) and len(w) == 2 and _STATUS(w[0]) and _EVENT(w[1]) for w in v
        ),
        "a list of [status, event]",
    ),
    "tasks.prev_status": _STATUS_OR_NULL, "tasks.prev_event": _EVENT_OR_NULL,
    "tasks.refcount": _INT, "tasks.acquires": _INT, "tasks.trigger_held": _BOOL,
    "tasks.downstream_ready": _BOOL, "tasks.timer_active": _INT, "tasks.drop_pending": _BOOL,
    "tasks.next_process_ver": _INT, "tasks.checkpointing_id": _INT,
    "tasks.failed_checkpoint_id": _INT, "tasks.fill_history": _BOOL,
    "tasks.trigger_param": _INT, "tasks.h_task_id": _ID, "tasks.stream_task_id": _ID,
    "tasks.persisted_status": (_STATUS, "a status name"), "tasks.checkpoint_id": _INT,
    "tasks.checkpoint_ver": _INT,
}  # fmt: skip
"""What each view key holds (``KEY``, ``KEY.FIELD``, ``tasks.KEY``): a view whose declared
key holds anything else is one the harness cannot read (``Observation.problem``)."""

_OK = frozenset({"applied", "started", "pending"})
_MINIMUM = "status"
"""The task key every declaration includes (docs/harness-protocol.md: the minimum)."""


def _check_outcomes(outcomes: object) -> str:
    if not isinstance(outcomes, str) or outcomes not in OUTCOMES:
        raise MisuseError(f"outcomes {outcomes!r}: it is one of {sorted(OUTCOMES)}")
    return outcomes


def _choices(level: int) -> tuple[frozenset[str], frozenset[str]]:
    """The declarable top-level and task keys at ``level`` (coarse and dotted forms too)."""
    view, tasks = VIEW_KEYS[level]
    dotted = {f"{key}.{field}" for key in view for field in OBJECT_FIELDS.get(key, ())}
    return frozenset(view) | dotted, frozenset(tasks) | frozenset(COARSE_FORMS)


@attrs.frozen
class Observation:
    """What an implementation reports at one level (identity keys always included)."""

    level: int = attrs.field(validator=attrs.validators.in_(LEVELS))
    view: frozenset[str]
    """Top-level keys, or ``KEY.FIELD`` for one field of an object-valued key."""
    tasks: frozenset[str]
    """Each task's keys, or a coarse form's name (``saved:top``)."""
    outcomes: str = attrs.field(default="full", validator=attrs.validators.in_(OUTCOMES))
    results: tuple[tuple[str, str], ...] = ()
    """``(operation, form)`` for each operation not given in full (``RESULT_FORMS``), sorted."""
    sets: frozenset[str] = frozenset()
    """The keys of ``SET_KEYS`` compared as sets."""
    blocks: frozenset[str] = frozenset()
    """The operations of ``BLOCKING`` it may answer blocked."""
    full: bool = attrs.field(init=False, eq=False, repr=False)
    """Everything observed, outcomes in full: the projections change nothing."""

    @full.default
    def _everything_observed(self) -> bool:
        view, tasks = VIEW_KEYS[self.level]
        return (
            self.view >= set(view) and self.tasks >= set(tasks) and self.outcomes == "full"
            and not self.results and not self.sets and not self.blocks
        )

    @classmethod
    def everything(cls, level: int) -> Observation:
        """Protocol 1: every key, outcomes in full."""
        return _EVERYTHING[level]

    @classmethod
    def of(
        cls, level: int, view: Iterable[str], tasks: Iterable[str], outcomes: str = "full"
    ) -> Observation:
        """A declaration at ``level``, checked (MisuseError naming the key that is wrong)."""
        _check_outcomes(outcomes)
        view_choices, task_choices = _choices(level)
        declared_view, declared_tasks = frozenset(view), frozenset(tasks)
        for keys, choices, where in (
            (declared_view, view_choices, "view"),
            (declared_tasks, task_choices, "tasks"),
        ):
            unknown = sorted(keys - choices)
            if unknown:
                raise MisuseError(
                    f"level {level} {where} key(s) {unknown}: the keys are {sorted(choices)}"
                )
        if _MINIMUM not in declared_tasks:
            raise MisuseError(f"level {level}: every declaration observes the tasks' {_MINIMUM!r}")
        identity_view, identity_tasks = IDENTITY[level]
        return cls(
            level, declared_view | set(identity_view), declared_tasks | set(identity_tasks),
            outcomes,
        )

    @classmethod
    def of_hello(cls, hello: Mapping[str, Any], level: int) -> Observation:
        """What a handshake declares at ``level`` (MisuseError: a malformed declaration).

        Protocol 1, or a level that ``observes`` does not name: everything."""
        if hello.get("protocol") == 1:
            return cls.everything(level)
        outcomes = _check_outcomes(hello.get("outcomes", "full"))
        results, sets = _results(hello.get("results", {})), _sets(hello.get("sets", []))
        blocks = _blocks(hello.get("blocks", []))
        everything = attrs.evolve(
            cls.everything(level), outcomes=outcomes, results=results, sets=sets, blocks=blocks
        )
        observes = hello.get("observes")
        if observes is None:
            return everything
        if not isinstance(observes, dict):
            raise MisuseError(f"observes {observes!r}: an object of levels")
        at = observes.get(str(level))
        if at is None:
            return everything
        if (
            not isinstance(at, dict)
            or set(at) != {"view", "tasks"}
            or not all(isinstance(at[k], list) for k in at)
            or not all(isinstance(key, str) for k in at for key in at[k])
        ):
            raise MisuseError(
                f'observes["{level}"] {at!r}: {{"view": [keys], "tasks": [keys]}}'
            )
        return attrs.evolve(
            cls.of(level, at["view"], at["tasks"], outcomes),
            results=results, sets=sets, blocks=blocks,
        )

    # -- the projections -----------------------------------------------------------------------

    def view_of(self, view: dict[str, Json]) -> dict[str, Json]:
        """``view`` as far as it is declared (keys the view lacks stay absent)."""
        if self.full:
            return view
        out: dict[str, Json] = {}
        for key, value in view.items():
            if key == "tasks" and isinstance(value, list):
                out[key] = [self._task(t) for t in value]
            elif key in self.view:
                out[key] = value
            elif key in OBJECT_FIELDS and isinstance(value, dict):
                fields = {f: value[f] for f in value if f"{key}.{f}" in self.view}
                if fields:
                    out[key] = fields
        for dotted in self.sets:
            key, _, field = dotted.partition(".")
            held = out.get(key)
            if isinstance(held, dict) and isinstance(held.get(field), list):
                out[key] = {**held, field: sorted(held[field], key=_canonical)}
        return out

    def _task(self, task: Json) -> Json:
        if not isinstance(task, dict):
            return task
        out = {k: v for k, v in task.items() if k in self.tasks}
        for name, (key, _doc, coarse) in COARSE_FORMS.items():
            if name in self.tasks and key not in self.tasks and isinstance(task.get(key), list):
                out[key] = coarse(task[key])
        return out

    def result_of(self, op: Op, result: dict[str, Json]) -> dict[str, Json]:
        """``result`` with its outcome collapsed as declared (``ok_rejected``: ok); an outcome
        that is not a name (``{}``, a list) stays as it is, for the comparison to show.

        A declared blocking operation (``blocks``) is first compared as blocked or not: a
        blocked answer and a reference result where the seed waits are both ``{"blocked":
        true}`` (statemeta.harness.blocking). A blocked answer of another operation stays
        blocked under every form but ``none``, so it differs from any result."""
        if op.name in self.blocks:
            blocked = blocked_form(op.name, result)
            if blocked is not None:
                return blocked
        form = self.result_form(op.name)
        if form != "full":
            kept = {k: v for k, v in result.items() if k == "heartbeats"}
            if form == "outcome":
                kept.update(
                    {"error": result["error"]} if "error" in result
                    else {BLOCKED: True} if BLOCKED in result
                    else {"ok": None}
                )
            return kept
        outcome = result.get("ok")
        if (
            self.outcomes == "ok_rejected" and op.spec.outcome and isinstance(outcome, str)
            and outcome in _OK
        ):
            return {**result, "ok": "ok"}
        return result

    def result_form(self, op_name: str) -> str:
        """How much of ``op_name``'s result is compared (a key of ``RESULT_FORMS``)."""
        return dict(self.results).get(op_name, "full")

    def problem(self, view: dict[str, Json]) -> str | None:
        """Why the harness cannot read ``view`` as a view of this level holding the declared
        keys (a key missing, or holding a value ``VIEW_KINDS`` refuses), naming the key and the
        value; None: it can."""
        if view.get("level") != self.level or not is_int(view.get("level")):
            return f"view key level: {_shown(view, 'level')}, not the started level {self.level}"
        whole = {f"{k}.{f}" for k in self.view for f in OBJECT_FIELDS.get(k, ())}
        for key in sorted(self.view | whole):
            head, _, field = key.partition(".")
            holder = view.get(head) if field else view
            if not isinstance(holder, dict):
                return f"view key {head}: {_shown(view, head)} is not an object"
            found = _wrong(holder, field or key, key, key)
            if found:
                return found
        for index, task in enumerate(view["tasks"]):
            if not isinstance(task, dict):
                return f"view key tasks[{index}]: {compact(task)} is not an object"
            for key in sorted(self.tasks):
                name = COARSE_FORMS[key][0] if key in COARSE_FORMS else key
                found = _wrong(task, name, f"tasks.{name}", f"tasks[{index}].{name}")
                if found:
                    return found
        return None

    # -- what is not compared ------------------------------------------------------------------

    def reads(self, key: str) -> bool:
        """Whether the key an invariant reads (``KEY``, ``KEY.FIELD``, ``tasks.KEY``) is
        observed in full."""
        head, _, field = key.partition(".")
        if head == "tasks" and field:
            return field in self.tasks
        return head in self.view or key in self.view

    @property
    def unobserved(self) -> dict[str, list[str]]:
        """The view's keys not compared in full, in view order (a key observed in a coarse
        form or by some of its fields is listed: it is compared only in part)."""
        view, tasks = VIEW_KEYS[self.level]
        return {
            "view": [k for k in view if k not in self.view],
            "tasks": [k for k in tasks if k not in self.tasks],
        }

    @property
    def results_not_given(self) -> dict[str, str]:
        """The operations of this level whose result is not compared in full, and the form
        that is (``RESULT_FORMS``), in the operation table's order."""
        forms = dict(self.results)
        return {
            name: forms[name]
            for name, spec in OP_SPECS.items()
            if name in forms and spec.level <= self.level
        }

    def unchecked(
        self, invariants: Iterable[tuple[str, object, Sequence[str]]]
    ) -> dict[str, list[str]]:
        """Per invariant of ``invariants`` (rows id, check, reads) that cannot run on the
        implementation's view at this level, the keys it reads that are not observed."""
        if self.level == 1 or self.full:
            return {}  # level-1 views have no view invariants
        return {
            name: missing
            for name, _check, reads in invariants
            if (missing := [key for key in reads if not self.reads(key)])
        }

    def completed(
        self, sut_view: dict[str, Json], reference_view: dict[str, Json]
    ) -> dict[str, Json] | None:
        """The implementation's view completed with the reference's values where a key is not
        observed, for the invariants whose keys are all observed (they read none of the
        reference's values); None when the two show different tasks, or the implementation's
        are not objects (the comparison says so)."""
        if self.full:
            return sut_view
        identity = IDENTITY[self.level][1][0]
        sut_tasks, ref_tasks = sut_view.get("tasks"), reference_view.get("tasks")
        if not isinstance(sut_tasks, list) or not isinstance(ref_tasks, list):
            return None
        if not all(isinstance(task, dict) for task in sut_tasks):
            return None
        if [t.get(identity) for t in sut_tasks] != [t.get(identity) for t in ref_tasks]:
            return None
        out = dict(reference_view)
        for key, value in sut_view.items():
            if key in self.view and key != "tasks":
                out[key] = value
            elif key in OBJECT_FIELDS and isinstance(value, dict):
                out[key] = {**reference_view.get(key, {}), **value}
        out["tasks"] = [
            {**ref, **{k: v for k, v in sut.items() if k in self.tasks}}
            for ref, sut in zip(ref_tasks, sut_tasks, strict=True)
        ]
        return out

    def to_json(self) -> dict[str, Json]:
        """The declaration as ``hello`` carries it for this level."""
        view, tasks = VIEW_KEYS[self.level]
        order = {k: n for n, k in enumerate((*view, *tasks, *COARSE_FORMS))}
        return {
            "view": sorted(self.view, key=lambda k: (order.get(k.partition(".")[0], 99), k)),
            "tasks": sorted(self.tasks, key=lambda k: (order.get(k, 99), k)),
        }


def _shown(holder: dict[str, Json], key: str) -> str:
    return compact(holder[key]) if key in holder else "missing"


def _wrong(holder: dict[str, Json], key: str, kind: str, where: str) -> str | None:
    """Why ``holder[key]`` is not what VIEW_KINDS[kind] says, naming it ``where``."""
    check, expected = VIEW_KINDS[kind]
    if key not in holder:
        return f"view key {where}: missing"
    if not check(holder[key]):
        return f"view key {where}: {compact(holder[key])} is not {expected}"
    return None


def _canonical(value: Json) -> str:
    """A total order on JSON values (a set's elements, sorted by their text)."""
    return json.dumps(value, sort_keys=True)


def _results(results: object) -> tuple[tuple[str, str], ...]:
    """A ``results`` declaration, checked: operation name -> a form of RESULT_FORMS."""
    if not isinstance(results, dict):
        raise MisuseError(f"results {results!r}: an object of operation -> form")
    for name, form in results.items():
        if name not in OP_SPECS:
            raise MisuseError(f"results: no operation {name!r}; the operations are "
                              f"{sorted(OP_SPECS)}")
        if not isinstance(form, str) or form not in RESULT_FORMS:
            raise MisuseError(f"results[{name!r}] {form!r}: it is one of {sorted(RESULT_FORMS)}")
    return tuple(sorted((n, f) for n, f in results.items() if f != "full"))


def _blocks(blocks: object) -> frozenset[str]:
    """A ``blocks`` declaration, checked: operations of BLOCKING."""
    if not isinstance(blocks, list) or not all(isinstance(k, str) for k in blocks):
        raise MisuseError(f"blocks {blocks!r}: a list of operation names")
    unknown = sorted(set(blocks) - set(BLOCKING))
    if unknown:
        raise MisuseError(f"blocks {unknown}: only these operations block in the seed: "
                          f"{sorted(BLOCKING)}")
    return frozenset(blocks)


def _sets(sets: object) -> frozenset[str]:
    """A ``sets`` declaration, checked: keys of SET_KEYS."""
    if not isinstance(sets, list) or not all(isinstance(k, str) for k in sets):
        raise MisuseError(f"sets {sets!r}: a list of view keys")
    unknown = sorted(set(sets) - set(SET_KEYS))
    if unknown:
        raise MisuseError(f"sets {unknown}: only these keys are sets: {sorted(SET_KEYS)}")
    return frozenset(sets)


_EVERYTHING: dict[int, Observation] = {
    level: Observation(level, frozenset(view), frozenset(tasks))
    for level, (view, tasks) in VIEW_KEYS.items()
}


def declared(keys: Sequence[str] | None, outcomes: str = "full") -> dict[int, Observation]:
    """Per level, the observation of a flat list of keys (``serve --observe``; None: every
    key): each key is declared at the levels that have it, as a top-level or a task key; a key
    no level has is a MisuseError."""
    _check_outcomes(outcomes)
    if keys is None:
        return {
            level: attrs.evolve(Observation.everything(level), outcomes=outcomes)
            for level in LEVELS
        }
    known = set().union(*(set().union(*_choices(level)) for level in LEVELS))
    unknown = sorted(set(keys) - known)
    if unknown:
        raise MisuseError(f"no view key {unknown} at any level; the keys are {sorted(known)}")
    by_level: dict[int, Observation] = {}
    for level in LEVELS:
        view_choices, task_choices = _choices(level)
        view = [k for k in keys if k in view_choices]
        tasks = [k for k in keys if k in task_choices]
        by_level[level] = Observation.of(level, view, tasks, outcomes)
    return by_level


def observes_json(by_level: Mapping[int, Observation]) -> dict[str, Json]:
    """The ``hello`` fields of a protocol-2 declaration: ``observes`` and ``outcomes``."""
    outcomes = {o.outcomes for o in by_level.values()}
    if len(outcomes) != 1:
        raise MisuseError(f"one outcomes declaration for every level, not {sorted(outcomes)}")
    return {
        "observes": {str(level): o.to_json() for level, o in by_level.items()},
        "outcomes": outcomes.pop(),
    }
