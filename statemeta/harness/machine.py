"""The Hypothesis state machine over the operations of OP_SPECS at one level.

Its one rule, ``command``, runs what statemeta.harness.generation draws: an operation, or a
walk of several (why one rule and what a walk is: that module's docstring).

The machine drives a reference adapter (the reference, or a broken variant in its place) and,
in differential mode, a system under test (any Adapter) with the same operations. After every
step:

- the reference's own check mode has run the whole invariant catalogue of spec/invariants.md
  after the operation and after every timer callback (an InvariantViolation propagates);
- the **durable model**, kept here from the operations' results and not by the code under test,
  must equal the store's committed records (memory backend: every step; LMDB: at each reopen),
  and a reopen must satisfy the ``reopen`` invariant;
- in differential mode (``compare_step``): the results are equal, the SUT's JSON view keeps the
  view invariants, and the two views are equal, all as far as the SUT declares it observes
  (statemeta.harness.observation; protocol 1: everything). A failure is a ``Divergence``. The
  views right after ``start`` are compared too (``compare_views``, operation ``start``).

With masks (``statemeta check --keep-going``, statemeta.harness.catalogue) a masked result,
view path, invariant or durable check is skipped for its operation, and so is what an earlier
step left as it was: a view difference with the same path and values as before the step, an
invariant the SUT's view broke before the step too. Once a mask has hidden a difference that
an operation made, the example is over (``room`` 0, a replay skips the rest): from there the
two sides' states differ, and what differs next is that divergence's consequence, not
another divergence. A masked difference at ``start`` does not end it (else no example would
get past it). Without masks no difference survives a step, so a run stops exactly where it
did before masks existed.

The seed semantics breaks invariants on purpose (spec/divergences.md). A view invariant the
reference's own view breaks at that step too is the seed's: it is counted in the machine
class's ``seed_violations`` (per invariant id), not a divergence. The durable model is the
intended semantics' promise (every operation reported done is committed), which the seed
breaks (M3): it is kept only when the reference follows the intended semantics.

Where the seed reference hits undefined behaviour (statemeta.errors.UndefinedBehaviour: the
seed's process would be stopped by its sanitizer there), the implementation must answer a
fault with the same finding in that step, in the call or in the view after it: that is
agreement, and the example ends; no fault, or another finding, is a divergence of kind
``undefined-behaviour``.

``build_machine`` makes the class; ``steps`` of the last example run are kept on the class
(``last_steps``), so a caller can read the length of the shrunk counterexample.

``run_machine`` runs a long search as a series of Hypothesis runs of ``BATCH_CALLS`` rule
calls each. One Hypothesis run keeps every example it ran: its engine caches each example's
choices and result (up to 10,000 of them, about 0.6 MB each at 200 steps) and its tree of
explored choices grows by each example (measured: a campaign of 500 examples of 200 steps in
one run reached 345 MB of RSS, in runs of 50 examples 73 MB). Between runs all of it is
garbage; the campaign's and check's memory is one run's, whatever their length.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection
from typing import Any, ClassVar, TypeAlias

import attrs
from hypothesis import seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    get_state_machine_test,
    initialize,
    rule,
)

from statemeta.codec import (
    NO_RELATED_TASK,
    StreamTask,
    TaskId,
    decode_task_key,
    encode_task_key,
)
from statemeta.errors import (
    InvariantViolation,
    MisuseError,
    PreconditionError,
    SutAborted,
    SutFault,
    UndefinedBehaviour,
)
from statemeta.harness import generation
from statemeta.harness.adapter import Adapter
from statemeta.harness.callers import Callers
from statemeta.harness.catalogue import NO_MASKS, START, Mask, key_path
from statemeta.harness.differences import first_difference, located
from statemeta.harness.failure import UNDEFINED, Failure, Step, same_finding
from statemeta.harness.normalize import Json, meta_view_from_json
from statemeta.harness.observation import Observation
from statemeta.harness.operations import REGISTER_VER, REOPENS, TASK_POOL, Op
from statemeta.harness.reference import ReferenceAdapter, saved_record
from statemeta.interrupts import raise_if_interrupted
from statemeta.invariants import VIEW_INVARIANTS, reopen
from statemeta.lifecycle import TaskStatus
from statemeta.semantics import Semantics

__all__ = [
    "BATCH_CALLS",
    "BATCH_EXAMPLES_MIN",
    "Divergence",
    "DurableModel",
    "Step",
    "batch_seed",
    "build_machine",
    "compare_step",
    "compare_views",
    "run_machine",
]

_RECORDS = {s.id: s.record for s in TASK_POOL}


class Divergence(AssertionError):
    """The SUT differs from the reference (or breaks an invariant, or loses a commit): the
    control flow that carries the Failure (statemeta.harness.failure), the steps run and the
    two sides' values where it shows."""

    def __init__(
        self, kind: str, detail: str, at: str, reference: Json = None, sut: Json = None
    ) -> None:
        super().__init__(f"{kind} divergence: {detail}")
        self.failure = Failure(kind, detail, at=at)
        """Its kind (result, view, invariant, durable), detail and place (a Mask's ``at``:
        result, view.<keys>, invariant:<id>, durable); the views once the machine adds them."""
        self.reference = reference
        self.sut = sut
        """The two sides' values there (an invariant's: the evidence; durable's: the detail)."""
        self.steps: list[Step] = []

    @property
    def kind(self) -> str:
        return self.failure.kind

    @property
    def detail(self) -> str:
        return self.failure.detail

    @property
    def at(self) -> str:
        assert self.failure.at is not None
        return self.failure.at

    @property
    def reference_view(self) -> dict[str, Json] | None:
        return self.failure.reference_view

    @property
    def sut_view(self) -> dict[str, Json] | None:
        return self.failure.sut_view

    @property
    def mask(self) -> Mask:
        """Its name in a catalogue: the operation it follows and where it shows."""
        return Mask(self.steps[-1].op.name if self.steps else START, self.at)


def broken_invariants(
    view: dict[str, Json], skipped: Collection[str] = ()
) -> dict[str, InvariantViolation]:
    """The view invariants of spec/invariants.md a JSON view breaks, in catalogue order, but
    for those ``skipped`` (level 1 views have none: the lifecycle's own rules are checked
    through the results)."""
    if view.get("level") == 1:
        return {}
    meta_view = meta_view_from_json(view)
    broken: dict[str, InvariantViolation] = {}
    for invariant_id, check, _reads in VIEW_INVARIANTS:
        if invariant_id in skipped:
            continue
        try:
            check(meta_view)
        except InvariantViolation as e:
            broken[invariant_id] = e
    return broken


Views: TypeAlias = tuple[dict[str, Json], dict[str, Json]]
"""The reference's view and the SUT's, at one moment."""


def compare_step(
    op: Op,
    ref_result: dict[str, Json],
    sut_result: dict[str, Json],
    ref_view: dict[str, Json],
    sut_view: dict[str, Json],
    seed_violations: Counter[str] | None = None,
    observation: Observation | None = None,
    *,
    masks: frozenset[Mask] = NO_MASKS,
    before: Views | None = None,
) -> bool:
    """The differential check of one step (the machine's and ``statemeta replay``'s), on what
    ``observation`` declares (None: everything): the results, then ``compare_views``; ``masks``
    and ``before`` (the views before the step) as the module says. True: a mask hid a
    difference."""
    seen = observation or Observation.everything(int(ref_view["level"]))
    ref_out, sut_out = seen.result_of(op, ref_result), seen.result_of(op, sut_result)
    masked = ref_out != sut_out
    if masked and Mask(op.name, "result") not in masks:
        where = first_difference(ref_out, sut_out, "result")
        raise Divergence(
            "result",
            f"{op!r}: reference {ref_out}, sut {sut_out}; at {where}",
            "result",
            ref_out,
            sut_out,
        )
    hidden = compare_views(
        repr(op), op.name, (ref_view, sut_view), seed_violations, seen, masks=masks, before=before
    )
    return masked or hidden


def compare_views(
    label: str,
    op_name: str,
    views: Views,
    seed_violations: Counter[str] | None = None,
    observation: Observation | None = None,
    *,
    masks: frozenset[Mask] = NO_MASKS,
    before: Views | None = None,
) -> bool:
    """The SUT's view keeps the view invariants and equals the reference's, as far as
    ``observation`` declares (None: everything), after the operation ``op_name`` (``label``:
    how the detail names it). True: a mask hid a difference this step made.

    A SUT's view that is not a view of its level (a key missing, a value of another kind) is a
    view divergence. A view invariant the SUT's view breaks is a divergence unless the
    reference's view breaks it too (the seed's own violation: counted in ``seed_violations``).
    Only the invariants whose keys are all observed run (statemeta.harness.observation)."""
    ref_view, sut_view = views
    seen = observation or Observation.everything(int(ref_view["level"]))
    skipped = seen.unchecked(VIEW_INVARIANTS).keys()
    hidden = False
    completed = seen.completed(sut_view, ref_view)
    try:
        broken = {} if completed is None else broken_invariants(completed, skipped)
    except MisuseError as malformed:  # not a view of its level: a protocol failure, never masked
        detail = f"after {label}: {malformed}"
        raise Divergence("view", detail, "view", None, sut_view) from malformed
    if broken:
        seeds = broken_invariants(ref_view, skipped).keys()
        kept: Collection[str] = set()
        if masks and before:
            was = seen.completed(before[1], before[0])
            kept = set() if was is None else broken_invariants(was, skipped).keys()
        for invariant_id, e in broken.items():
            if invariant_id in seeds | kept:
                continue
            at = f"invariant:{invariant_id}"
            if Mask(op_name, at) not in masks:
                raise Divergence("invariant", f"after {label}: {e}", at, None, e.evidence) from e
            hidden = True
        if seed_violations is not None:
            seed_violations.update(broken.keys() & seeds)
    ref_seen, sut_seen = seen.view_of(ref_view), seen.view_of(sut_view)
    if ref_seen == sut_seen:
        return hidden
    kept_texts = (
        {d.text for d in located(seen.view_of(before[0]), seen.view_of(before[1]), "view")}
        if masks and before
        else set()
    )
    for found in located(ref_seen, sut_seen, "view"):
        if found.text in kept_texts:
            continue
        at = key_path(found.path)
        if Mask(op_name, at) not in masks:
            detail = f"after {label}: {found.text}"
            raise Divergence("view", detail, at, found.reference, found.sut)
        hidden = True
    return hidden


def _tid(obj: Json) -> TaskId:
    return TaskId(obj[0], obj[1])


@attrs.define
class DurableModel:
    """What must be committed, from the operations' results alone (not from the store).

    ``pending`` holds the records save_task wrote since the last commit; any committing
    operation (the ``commits`` column) makes them durable, a failed one, a close or a crash
    throws them away. ``step`` follows register, commit, save_task, load_all, clear and the
    reopens by name: what each one writes is this model's own account, kept apart from the
    reference on purpose (it checks the reference), not a column of the operation table.
    """

    committed: dict[TaskId, StreamTask] = attrs.field(factory=dict)
    pending: dict[TaskId, StreamTask] = attrs.field(factory=dict)
    removed: set[TaskId] = attrs.field(factory=set)
    """Ids removed since the meta opened and not registered since: a stream task registered
    naming one is stored with the link cleared."""
    torn: set[TaskId] = attrs.field(factory=set)
    """Ids whose committed record corrupt_record tore (it does not decode; none in
    ``committed``) and that no write has replaced since."""

    def record(self, tid: TaskId) -> StreamTask:
        """The record the meta holds for a mapped task."""
        return self.pending.get(tid) or self.committed[tid]

    def commit(self) -> None:
        self.committed.update(self.pending)
        self.torn.difference_update(self.pending)
        self.pending.clear()

    def stored(self) -> dict[TaskId, StreamTask | None]:
        """What the committed task.db must decode to (None: a torn record)."""
        return {**self.committed, **dict.fromkeys(self.torn)}

    def remove(self, tid: TaskId, mapped: set[TaskId]) -> None:
        """A committed removal; a fill-history task's stream task loses its related id."""
        record = self.record(tid)
        stream = record.stream_task_id
        cleared = None
        if record.fill_history and stream in mapped and self.record(stream).h_task_id == tid:
            cleared = attrs.evolve(self.record(stream), h_task_id=NO_RELATED_TASK)
        self.commit()
        del self.committed[tid]
        self.removed.add(tid)
        if cleared is not None:
            self.committed[stream] = cleared

    def apply_load(self, report: dict[str, Json]) -> None:
        removed = [_tid(i) for i in report["removed"]]
        cleared = {
            tid: attrs.evolve(self.record(tid), h_task_id=NO_RELATED_TASK)
            for tid in map(_tid, report["cleared"])
        }
        if removed or cleared:
            self.commit()
        for tid in removed:
            del self.committed[tid]
        self.removed.update(removed)
        self.committed.update(cleared)

    def step(
        self, op: Op, result: dict[str, Json], before: dict[str, Json], after: dict[str, Json]
    ) -> None:
        """Follow one operation of the reference, given its views before and after."""
        mapped = {_tid(t["id"]): t for t in before.get("tasks", ())}
        ok = "ok" in result
        if op.name in REOPENS:
            self.pending.clear()
            self.removed.clear()
            if op.name == "corrupt_record":
                tid = _slot_id(op)
                self.committed.pop(tid, None)
                self.torn.add(tid)
            if ok:
                self.apply_load(result["ok"])
            return
        if op.name == "clear":
            return  # the tasks leave memory only: nothing is written
        now = {_tid(i) for i in after.get("ids", ())}
        alive = set(mapped)
        for tid in mapped.keys() - now:  # unregister, or deferred removals at a timer's end
            alive.discard(tid)  # a stream task removed with its fill-history task has no link
            self.remove(tid, alive)
        if not ok:
            if result["error"] == "StoreFault" and op.spec.commits:
                self.pending.clear()  # a committing operation failed: rolled back
            return
        value = result["ok"]
        if op.name == "register" and value is True:
            tid = _slot_id(op)
            record = _expanded(_RECORDS[tid])
            if not record.fill_history and record.h_task_id in self.removed:
                record = attrs.evolve(record, h_task_id=NO_RELATED_TASK)
            self.commit()
            self.committed[tid] = record
            self.torn.discard(tid)
            self.removed.discard(tid)
        elif op.name == "commit":
            self.commit()
        elif op.name == "save_task":
            tid = _slot_id(op)
            task = mapped[tid]
            self.pending[tid] = saved_record(
                self.record(tid), TaskStatus[task["status"].upper()], task["checkpointing_id"]
            )
        elif op.name == "load_all":
            self.apply_load(value)


def _slot_id(op: Op) -> TaskId:
    name = op.arg("task")
    return next(s.id for s in TASK_POOL if s.name == name)


def _expanded(record: StreamTask) -> StreamTask:
    """register's record: checkpointVer = ver - 1 (a fill-history task registers at 1)."""
    ver = 1 if record.fill_history else REGISTER_VER
    return attrs.evolve(record, checkpoint_ver=ver - 1)


def _check_durable(adapter: ReferenceAdapter, model: DurableModel, op: Op) -> str | None:
    """Why the adapter's committed records differ from the model (None: they agree)."""
    if adapter.backend == "memory":
        stored = adapter.committed_records()
    elif op.name in REOPENS:
        stored = {TaskId(*decode_task_key(k)): t for k, t in adapter.meta.stored_tasks()}
    else:
        return None
    expected = model.stored()
    if stored != expected:
        only_store = sorted(map(str, stored.keys() - expected.keys()))
        only_model = sorted(map(str, expected.keys() - stored.keys()))
        changed = sorted(
            str(t) for t in stored.keys() & expected.keys() if stored[t] != expected[t]
        )
        return (
            f"after {op!r}: committed but not expected {only_store}; expected but not "
            f"committed {only_model}; committed records that differ {changed}"
        )
    if op.name in REOPENS:
        keys = [
            encode_task_key(t.stream_id, t.task_id) for t, r in stored.items() if r is not None
        ]
        reopen(keys, adapter.meta.view())
    return None


def _reference_inside(adapter: Adapter) -> ReferenceAdapter | None:
    """The in-process reference (a broken variant) behind ``adapter``, whose store the durable
    model can check, also through wrappers that keep what they wrap as ``inner`` (a replay's or
    a check's RecordingAdapter)."""
    inner: object = adapter
    while not isinstance(inner, ReferenceAdapter):
        inner = getattr(inner, "inner", None)
        if inner is None:
            return None
    return inner


class _Machine(RuleBasedStateMachine):
    """The state machine; ``build_machine`` subclasses it with the rules of one level."""

    level: ClassVar[int]
    reference_factory: ClassVar[Callable[[], ReferenceAdapter]]
    sut: ClassVar[Adapter | None]
    max_ops: ClassVar[int | None] = None
    """The most operations an example runs (``statemeta check --steps``); None: no bound."""
    last_steps: ClassVar[list[Step]] = []
    seed_violations: ClassVar[Counter[str]] = Counter()
    """The view invariants the reference itself broke, with the SUT, per id (over the run)."""
    masks: ClassVar[frozenset[Mask]] = NO_MASKS
    """What is not compared (statemeta.harness.catalogue)."""

    def __init__(self) -> None:
        super().__init__()
        self.reference = type(self).reference_factory()
        self.reference.start(self.level)
        self.model = DurableModel()
        self.ref_view = self.reference.view()
        self.steps: list[Step] = []
        type(self).last_steps = self.steps
        self.sut_view: dict[str, Json] = {}
        self.over = False
        """A mask hid a difference an operation made: the example runs nothing more."""
        self.observation = Observation.everything(self.level)
        """What the SUT declares it observes at this level (protocol 1: everything)."""
        if self.sut is None:
            return
        self.sut.start(self.level)
        self.observation = Observation.of_hello(self.sut.hello(), self.level)
        self.sut_view = self.sut.view()
        try:
            compare_views(
                START, START, (self.ref_view, self.sut_view), type(self).seed_violations,
                self.observation,
                masks=self.masks,
            )
        except Divergence as e:  # no teardown follows a machine that did not construct
            self.teardown()
            raise self._divergence(e, self.sut_view) from None

    def allows(self, op: Op) -> bool:
        return (self.reference.precondition_broken(op) is None
                and self.reference.caller_broken(op) is None)

    @property
    def callers(self) -> Callers:
        return self.reference.callers

    def step(self, op: Op) -> None:
        raise_if_interrupted()  # a signal's first raise may have been dropped (a gc callback)
        if self.over:
            return
        broken = self.reference.precondition_broken(op) or self.reference.caller_broken(op)
        if broken is not None:  # generation keeps preconditions; a replayed trace may not
            raise PreconditionError(f"step {len(self.steps) + 1}, {op!r}: {broken}")
        before = self.ref_view
        try:
            ref_result = self.reference.call(op)
        except UndefinedBehaviour as undefined:
            if self.sut is None:
                raise  # the seed's own defect, with nothing to compare it with
            self._undefined(op, undefined)
            return
        sut_result = None
        if self.sut is not None:
            try:
                sut_result = self.sut.call(op)
            except InvariantViolation as e:  # an in-process SUT checking itself
                self.steps.append(Step(op, ref_result, None))
                found = Divergence("invariant", str(e), f"invariant:{e.invariant_id}")
                raise self._divergence(found, None) from e
        self.steps.append(Step(op, ref_result, sut_result))
        self.ref_view = self.reference.view()
        durable = self.level > 1 and self.reference.profile == Semantics.INTENDED.profile
        if durable:
            self.model.step(op, ref_result, before, self.ref_view)
            problem = _check_durable(self.reference, self.model, op)
            if problem is not None:
                raise InvariantViolation("durable-model", problem)
        if self.sut is None or sut_result is None:
            return
        views_before = (before, self.sut_view)
        sut_view = self.sut_view = self.sut.view()
        try:
            self.over = compare_step(
                op, ref_result, sut_result, self.ref_view, sut_view, type(self).seed_violations,
                self.observation, masks=self.masks, before=views_before,
            )
            variant = _reference_inside(self.sut)
            if variant is not None and durable:
                self.over = self._durable_hidden(variant, op) or self.over
        except Divergence as e:
            raise self._divergence(e, sut_view) from None

    def _undefined(self, op: Op, undefined: UndefinedBehaviour) -> None:
        """The reference (the seed) hit undefined behaviour in ``op``. Agreement if the
        implementation answers a fault with the same finding in the call or in the view after
        it (the C frees a task at its release and reads the freed memory at the next read of
        it): the example is over, both instances being gone. Anything else is a divergence of
        kind undefined-behaviour (a fault without undefined behaviour is the SUT's own
        failure of kind fault)."""
        assert self.sut is not None
        reference: dict[str, Json] = {UNDEFINED: str(undefined)}
        sut_result = None
        try:
            sut_result = self.sut.call(op)
            self.sut_view = self.sut.view()
        except (SutAborted, SutFault) as stopped:
            error = stopped.error if isinstance(stopped, SutAborted) else stopped
            if not isinstance(error, SutFault):
                raise
            self.steps.append(Step(op, reference, {"fault": error.problem}))
            if same_finding(undefined.kind, error.problem):
                self.over = True
                return
            found = Divergence(
                "undefined-behaviour",
                f"{op!r}: the reference (seed) has {undefined}; the implementation's fault "
                f"is another finding: {error.problem}",
                "undefined-behaviour", str(undefined), error.problem,
            )
            raise self._divergence(found, None) from None
        self.steps.append(Step(op, reference, sut_result))
        found = Divergence(
            "undefined-behaviour",
            f"{op!r}: the reference (seed) has {undefined}; the implementation answered "
            f"{sut_result} and no fault",
            "undefined-behaviour", str(undefined), sut_result,
        )
        raise self._divergence(found, self.sut_view)

    def _durable_hidden(self, variant: ReferenceAdapter, op: Op) -> bool:
        """The durable model against an in-process implementation's store; True: it failed
        and a mask hid it."""
        kind = "durable"
        try:
            problem = _check_durable(variant, self.model, op)
        except InvariantViolation as e:  # a reopen that breaks the reopen invariant
            kind, problem = "invariant", str(e)
        if problem is None:
            return False
        if Mask(op.name, "durable") in self.masks:
            return True
        raise Divergence(kind, problem, "durable", None, problem)

    def task_states(self) -> dict[str, dict[str, Json]]:
        return generation.slot_states(self.ref_view, self.level)

    def room(self) -> int | None:
        if self.over:
            return 0
        return None if self.max_ops is None else self.max_ops - len(self.steps)

    def _divergence(self, e: Divergence, sut_view: dict[str, Json] | None) -> Divergence:
        """``e`` with the steps so far and both views as far as they are compared."""
        e.steps = list(self.steps)
        e.failure = attrs.evolve(
            e.failure,
            reference_view=self.observation.view_of(self.ref_view),
            sut_view=None if sut_view is None else self.observation.view_of(sut_view),
        )
        return e

    def teardown(self) -> None:
        self.reference.stop()
        if self.sut is not None:
            self.sut.stop()


def command(self: _Machine, data: st.DataObject) -> None:
    """The machine's one rule (statemeta.harness.generation says why one)."""
    generation.command(self, data)


_COMMAND = rule(data=st.data())(command)


def _register_initial(self: _Machine, tasks: list[str]) -> None:
    """Start from a few registered tasks: most rules need one, and Hypothesis shrinks the
    list to what a failure needs (each one is an ordinary register step)."""
    for name in tasks[: self.room()]:
        self.step(Op.of("register", task=name))


_REGISTER_INITIAL = initialize(
    tasks=st.lists(st.sampled_from([s.name for s in TASK_POOL]), min_size=1, unique=True)
)(_register_initial)


def build_machine(
    level: int = 3,
    *,
    reference: Callable[[], ReferenceAdapter] = ReferenceAdapter,
    sut: Adapter | None = None,
    name: str = "MetaMachine",
    max_ops: int | None = None,
    masks: frozenset[Mask] = NO_MASKS,
) -> type[RuleBasedStateMachine]:
    """The machine over the operations of ``level``: the reference alone, or differential
    against ``sut`` (one adapter for the whole run: started per example, stopped at its end).
    ``max_ops`` bounds the operations of an example (its initial registers and every
    operation of a walk included); Hypothesis's ``stateful_step_count`` bounds rule calls.
    ``masks``: what is not compared (statemeta.harness.catalogue)."""
    namespace: dict[str, Any] = {"command": _COMMAND}
    if level > 1:
        namespace["register_initial"] = _REGISTER_INITIAL
    namespace.update(
        level=level,
        reference_factory=staticmethod(reference),
        sut=sut,
        max_ops=max_ops,
        masks=masks,
        last_steps=[],
        seed_violations=Counter(),
    )
    return type(name, (_Machine,), namespace)


BATCH_CALLS = 10_000
"""Rule calls (examples x steps) per Hypothesis run of ``run_machine``: at 200 steps, 50
examples, whose cached results take about 30 MB and are freed when the run ends."""

BATCH_EXAMPLES_MIN = 20
"""The fewest examples of one Hypothesis run: each run starts with its simplest example (every
choice the smallest), so a run of one example would only ever run that one."""

_SEED_STRIDE = 2**64
"""Run i of a seeded search draws from ``seed + i * _SEED_STRIDE``: distinct from the first
runs of the seeds a person picks."""


def batch_seed(seed_value: int, batch: int) -> int:
    """The seed of the ``batch``-th Hypothesis run of a search seeded with ``seed_value``
    (the first run's is ``seed_value`` itself: a search of one run is unchanged)."""
    return seed_value + batch * _SEED_STRIDE


def run_machine(
    machine: type[RuleBasedStateMachine],
    search: settings,
    *,
    seed_value: int | None = None,
    deadline: float | None = None,
) -> None:
    """Runs ``search.max_examples`` examples of ``machine`` as Hypothesis runs of at most
    ``BATCH_CALLS`` rule calls (at least ``BATCH_EXAMPLES_MIN`` examples) each, run ``i``
    seeded by ``batch_seed`` (unseeded: each run draws its own seed). With a ``deadline``
    (a ``time.monotonic()`` value), no run starts after it. A failure propagates from the
    run that found it."""
    per_run = max(BATCH_EXAMPLES_MIN, BATCH_CALLS // search.stateful_step_count)
    left = search.max_examples
    batch = 0
    while left > 0 and (deadline is None or time.monotonic() < deadline):
        examples = min(left, per_run)
        test = get_state_machine_test(machine, settings=settings(search, max_examples=examples))
        if seed_value is not None:
            test = seed(batch_seed(seed_value, batch))(test)
        test()
        left -= examples
        batch += 1
