"""Whether a seed defect's trace is a path of the vnode (``--callers vnode``) or only of
direct calls: docs/seed-defects.md's "vnode callers" column.

The explorer's shortest traces call the meta directly: an event without an acquire, a
release with nothing held. The vnode's handlers acquire a task, send it an event and release
it, so the question for a trace is whether it keeps the rules once each event is put in that
bracket. ``vnode_reachability`` replays the trace on a reference with vnode callers, puts an
acquire before each event on a task the caller holds no handle of (and a release after it,
but after the last step), and either meets a rule the trace breaks anyway (an acquire
refused included: the task is stopping or dropping) or replays the bracketed trace with
every invariant checked and says whether it breaks the trace's invariant at its last step.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

import attrs

from statemeta.errors import MisuseError, UndefinedBehaviour
from statemeta.explore.search import first_failure
from statemeta.harness.callers import Callers
from statemeta.harness.operations import Op, task_slot
from statemeta.harness.reference import ReferenceAdapter
from statemeta.semantics import Semantics

__all__ = ["Reachability", "parse_op", "vnode_reachability"]

_BRACKETED = frozenset({"handle_event", "complete_event", "resume", "begin_checkpoint"})
"""The operations a handler sends between its acquire and its release."""


@attrs.frozen
class Reachability:
    """One trace under vnode callers."""

    ops: tuple[Op, ...] | None
    """The bracketed trace that keeps every rule and breaks the invariant at its last step;
    None if there is none."""
    why: str
    """The rule it breaks, or what its bracketed replay showed."""

    def cell(self) -> str:
        if self.ops is None:
            return f"direct calls only: {self.why}"
        return f"yes, {self.why}"


def vnode_reachability(
    ops: Sequence[Op], invariant: str, *, level: int, semantics: Semantics | str
) -> Reachability:
    """``ops`` (a trace from the empty meta that breaks ``invariant`` at its last step) as the
    vnode's callers would make it, if they can (module docstring)."""
    if not ops:  # the meta as opened breaks it: every caller's meta is opened so
        return Reachability((), "the meta as opened")
    adapter = ReferenceAdapter(semantics=semantics, check_invariants=False,
                               callers=Callers.VNODE)
    adapter.start(level)
    bracketed: list[Op] = []
    try:
        for position, op in enumerate(ops):
            last = position == len(ops) - 1
            acquire = _needs_acquire(adapter, op)
            if acquire is not None:
                if adapter.call(acquire) != {"ok": True}:
                    return Reachability(None, f"step {position + 1}, {op!r}: "
                                        f"acquired-not-stopping: {_refused(adapter, op)}")
                bracketed.append(acquire)
            broken = adapter.caller_broken(op)
            if broken is not None:
                return Reachability(None, f"step {position + 1}, {op!r}: {broken}")
            try:
                adapter.call(op)
            except UndefinedBehaviour:  # the row's own defect, at its last step: confirmed below
                if not last:
                    raise
            bracketed.append(op)
            if acquire is not None and not last:
                release = Op.of("release", task=task_slot(op).name)
                adapter.call(release)
                bracketed.append(release)
    finally:
        adapter.stop()
    return _confirmed(tuple(bracketed), invariant, level, Semantics.of(semantics), len(ops))


def _refused(adapter: ReferenceAdapter, op: Op) -> str:
    slot = task_slot(op)
    entry = adapter.meta.state.entries.get(slot.id)
    where = "not mapped" if entry is None else f"in {entry.lifecycle.status.name}"
    return f"acquire refuses {slot.name}, {where}"


def parse_op(text: str) -> Op:
    """An operation as the explorer's report writes it (``name(arg=value, ...)``, its repr);
    MisuseError for anything else."""
    try:
        call = ast.parse(text.strip(), mode="eval").body
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args:
            raise ValueError("not a call with keyword arguments")
        args = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    except (SyntaxError, ValueError) as error:
        raise MisuseError(f"not an operation: {text!r} ({error})") from None
    return Op.of(call.func.id, **args)


def _needs_acquire(adapter: ReferenceAdapter, op: Op) -> Op | None:
    if op.name not in _BRACKETED or adapter.caller_broken(op) is None:
        return None
    acquire = Op.of("acquire", task=task_slot(op).name)
    return acquire if adapter.caller_broken(acquire) is None else None


def _confirmed(
    ops: tuple[Op, ...], invariant: str, level: int, semantics: Semantics, direct: int
) -> Reachability:
    failed = first_failure(ops, level=level, semantics=semantics, callers=Callers.VNODE)
    if failed is None:
        return Reachability(None, f"its bracketed replay breaks no invariant ({len(ops)} steps)")
    position, found = failed
    if position != len(ops) - 1 or found != invariant:
        return Reachability(None, f"its bracketed replay breaks {found} at step {position + 1}, "
                            f"not {invariant} at the last")
    if len(ops) == direct:
        return Reachability(ops, "the same trace")
    return Reachability(ops, f"with an acquire and a release around each event ({len(ops)} "
                        "steps)")
