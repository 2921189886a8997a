"""What ``statemeta report`` draws: one run's results read into plain records.

Theory of operation. The input is one JSON document, recognised by its keys (``INPUT_KINDS``):
a check's ``--json`` (coverage classes, a failure, a keep-going catalogue), an explore's
``--json`` (rows taken and not reached, a counterexample), a trace file, or a concurrent
history. ``read_report`` turns it into a ``Report`` of sections, each None when the input has
nothing for it; statemeta.tools.report_html renders the sections as one self-contained page.

Where the input names a trace file (a check's failure, a catalogue entry, an explored
counterexample), the trace is read too. A trace holds each step's results and both views at
the failing step only; the reference's state after every step is recomputed here by replaying
the trace's operations on the reference (it is deterministic), and the implementation's is
the reference's until the last step (the run compared the views after every step). A
concurrent failure is checked again (statemeta.harness.linearizability), and the longest
prefix of its counterexample that the reference can linearize is searched for: the order
Porcupine draws, up to the call no order can take next.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from statemeta.errors import MisuseError, ReportInputError, StatemetaError, TraceFormatError
from statemeta.harness.differences import compact, located
from statemeta.harness.linearizability import History
from statemeta.harness.linearizability.checker import Outcome, SequentialSpec, check
from statemeta.harness.linearizability.history import HISTORY_FORMAT
from statemeta.harness.linearizability.reference import (
    CONCURRENT_LEVELS,
    Call,
    RefState,
    history_from_json,
    reference_spec,
)
from statemeta.harness.normalize import Json
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import MAX_TRACE_DEPTH, TRACE_FORMAT, Trace, result_text
from statemeta.harness.wire import loads_bounded
from statemeta.lifecycle import LIFECYCLE_ROWS
from statemeta.roles import ROLE_ROWS
from statemeta.semantics import Semantics
from statemeta.tables import Role, RoleEvent, TaskEvent, TaskStatus

__all__ = [
    "INPUT_KINDS",
    "Concurrent",
    "Counterexample",
    "Heatmap",
    "LaneCall",
    "LinearizedCall",
    "Report",
    "RowHit",
    "StateStep",
    "longest_linearizable_prefix",
    "read_report",
]

PREFIX_BUDGET = 200_000
"""Reference steps the longest-prefix search may spend (a shrunk counterexample needs few)."""


@attrs.frozen
class RowHit:
    """One table row and how often a run took it (None: the input does not count it)."""

    label: str
    source: str
    event: str
    target: str
    times: int | None
    why: str | None = None
    """Why a row was not taken, as the run said."""


@attrs.frozen
class Heatmap:
    """A table drawn as a grid: a row per source state, a column per event."""

    title: str
    sources: tuple[str, ...]
    events: tuple[str, ...]
    hits: tuple[RowHit, ...]


@attrs.frozen
class StateStep:
    """One step of a counterexample and the reference's state after it."""

    op: str
    reference: str
    sut: str
    state: dict[str, Json] | None
    """The reference's view after the step (None: the replay stopped before it)."""
    changed: tuple[str, ...]
    """What the step changed in the reference's view: ``path: before -> after``."""


@attrs.frozen
class Counterexample:
    """A failing run step by step, with both views where it failed."""

    title: str
    kind: str
    detail: str
    steps: tuple[StateStep, ...]
    reference_view: dict[str, Json] | None
    sut_view: dict[str, Json] | None
    differences: tuple[str, ...]
    note: str = ""


@attrs.frozen
class LaneCall:
    """One call of a concurrent history on its client's lane (times as column ranks)."""

    index: int
    client: int
    start: int
    end: int | None
    """None: no response seen (pending)."""
    op: str
    result: str
    order: int | None
    """Its place in the longest linearizable prefix (None: not in it)."""
    blocked: str | None
    """For a call no order can take next: what the reference would have returned."""


@attrs.frozen
class LinearizedCall:
    """One call of the longest linearizable prefix, with the reference's state after it."""

    index: int
    op: str
    observed: str
    changed: tuple[str, ...]


@attrs.frozen
class Concurrent:
    """A concurrent history: the lanes and the linearization that failed (or the witness)."""

    verdict: str
    linearizable: bool
    columns: int
    clients: tuple[int, ...]
    calls: tuple[LaneCall, ...]
    order: tuple[LinearizedCall, ...]


@attrs.frozen
class Report:
    """Everything one page shows; a section is None (or empty) when the input lacks it."""

    title: str
    kind: str
    verdict: str
    passed: bool
    summary: tuple[tuple[str, str], ...]
    lifecycle: Heatmap | None = None
    roles: Heatmap | None = None
    families: tuple[tuple[str, int, int], ...] = ()
    """Coverage classes per family: (family, reached, reachable)."""
    depths: tuple[int, ...] = ()
    """An exploration's states per depth."""
    counterexamples: tuple[Counterexample, ...] = ()
    catalogue: tuple[dict[str, Any], ...] = ()
    concurrent: Concurrent | None = None


# -- the tables as heatmaps ----------------------------------------------------------------


def _lifecycle_map(count: Callable[[str], tuple[int | None, str | None]]) -> Heatmap:
    hits = tuple(
        RowHit(r.label, r.from_status.name.lower(), r.event.name.lower(),
               r.to_status.name.lower(), *count(r.label))
        for r in LIFECYCLE_ROWS
    )
    return Heatmap("lifecycle table", tuple(s.name.lower() for s in TaskStatus),
                   tuple(e.name.lower() for e in TaskEvent), hits)


def _role_map(count: Callable[[str], tuple[int | None, str | None]]) -> Heatmap:
    hits = tuple(
        RowHit(r.label, r.from_role.name.lower(), r.event.name.lower(), r.to_role.name.lower(),
               *count(r.label))
        for r in ROLE_ROWS
    )
    return Heatmap("role table", tuple(r.name.lower() for r in Role),
                   tuple(e.name.lower() for e in RoleEvent), hits)


def _check_counts(coverage: dict[str, Any], family: str
                  ) -> Callable[[str], tuple[int | None, str | None]]:
    """A check's counts of one table's row classes (``family:label``)."""
    classes = coverage.get("classes")
    missed = coverage.get("missed", {})

    def count(label: str) -> tuple[int | None, str | None]:
        cls = f"{family}:{label}"
        if classes is None:  # a check of before coverage.classes
            return (0, missed[cls]) if cls in missed else (None, None)
        return int(classes.get(cls, 0)), missed.get(cls)

    return count


def _explore_counts(rows: dict[str, Any]) -> Callable[[str], tuple[int | None, str | None]]:
    taken = {t["row"]: int(t["times"]) for t in rows.get("taken", [])}
    why = {m["row"]: str(m["reason"]) for m in rows.get("not_reached", [])}
    return lambda label: (taken.get(label, 0), why.get(label))


# -- counterexamples -------------------------------------------------------------------------


def _changes(before: Json, after: Json) -> tuple[str, ...]:
    return tuple(f"{d.path or 'view'}: {compact(d.reference, 40)} -> {compact(d.sut, 40)}"
                 for d in located(before, after))


def _reference_states(trace: Trace) -> tuple[Json, list[dict[str, Json] | None]]:
    """The reference's view before the first step of ``trace`` and after each step, replayed
    (None past a step the reference refused to run)."""
    adapter = ReferenceAdapter(check_invariants=False, semantics=trace.semantics)
    initial: Json = {}
    states: list[dict[str, Json] | None] = []
    try:
        adapter.start(trace.level)
        initial = adapter.view()
        for op in trace.ops:
            adapter.call(op)
            states.append(adapter.view())
    except StatemetaError:
        pass
    finally:
        adapter.stop()
    return initial, states + [None] * (len(trace.steps) - len(states))


def counterexample(trace: Trace, title: str) -> Counterexample:
    """``trace`` step by step: both sides' results and the reference's state after each."""
    before, states = _reference_states(trace)
    steps = []
    for step, state in zip(trace.steps, states, strict=True):
        steps.append(StateStep(repr(step.op), result_text(step.reference),
                               result_text(step.sut), state,
                               () if state is None else _changes(before, state)))
        before = state if state is not None else before
    failure = trace.failure
    found: tuple[str, ...] = ()
    if failure.reference_view is not None and failure.sut_view is not None:
        found = tuple(d.text for d in located(failure.reference_view, failure.sut_view))
    masked = ", ".join(f"{m.op} {m.at}" for m in sorted(trace.masks))
    return Counterexample(
        title, failure.kind, failure.detail, tuple(steps), failure.reference_view,
        failure.sut_view, found, f"not compared (masked by --keep-going): {masked}"
        if masked else "",
    )


def _trace_at(name: object, base: Path) -> Path | None:
    """The trace file a document names, as written or beside the document."""
    if not isinstance(name, str) or not name:
        return None
    for path in (Path(name), base / Path(name).name):
        if path.is_file():
            return path
    return None


def _read_trace(path: Path) -> Trace:
    try:
        obj = loads_bounded(path.read_text(encoding="utf-8"), MAX_TRACE_DEPTH)
        return Trace.from_json(obj, where=str(path))
    except (OSError, ValueError, TraceFormatError) as error:
        raise ReportInputError(str(path), f"cannot be read as a trace: {error}") from error


def _named_counterexample(name: object, base: Path, title: str, detail: str) -> Counterexample:
    path = _trace_at(name, base)
    if path is None:
        return Counterexample(title, "", detail, (), None, None, (),
                              f"trace file {name} not found")
    return counterexample(_read_trace(path), f"{title} ({path.name})")


# -- concurrent histories --------------------------------------------------------------------


class _OutOfBudget(Exception):
    """The longest-prefix search spent its budget."""


def longest_linearizable_prefix(
    spec: SequentialSpec[Any, Any, Any], history: History[Any, Any],
    budget: int = PREFIX_BUDGET,
) -> list[int]:
    """The longest order of calls of ``history``, consistent with real time, in which the
    spec gives every observed result (a pending call: any): Porcupine's partial linearization.

    A depth-first search, each (calls taken, state key) seen once; the best order found when
    the budget runs out is returned."""
    calls = history.operations
    best: list[int] = []
    seen: set[Any] = set()
    left = [budget]

    def search(state: Any, order: list[int]) -> None:
        taken = frozenset(order)
        key = (taken, spec.key(state))
        if key in seen:
            return
        seen.add(key)
        if len(order) > len(best):
            best[:] = order
        for index in _next_calls(history, taken):
            left[0] -= 1
            if left[0] < 0:
                raise _OutOfBudget
            new, result = spec.step(state, calls[index].op)
            if calls[index].pending or result == calls[index].result:
                search(new, [*order, index])

    with contextlib.suppress(_OutOfBudget):
        search(spec.initial, [])
    return best


def _next_calls(history: History[Any, Any], taken: frozenset[int]) -> list[int]:
    """The calls that may take effect next: invoked before every call still to come returned."""
    waiting = [i for i in range(len(history.operations)) if i not in taken]
    returns = (history.operations[i].returned for i in waiting)
    limit = min((t for t in returns if t is not None), default=math.inf)
    return [i for i in waiting if history.operations[i].invoked <= limit]


def _view_of(state: Any) -> dict[str, Json]:
    view: dict[str, Json] = state.adapter.view()
    return view


def concurrent(history: History[Call, Json], level: int, semantics: Semantics) -> Concurrent:
    """A history checked again against the reference, drawn as lanes with its linearization."""
    spec: SequentialSpec[RefState, Call, Json] = reference_spec(level, semantics)
    verdict = check(spec, history)
    if verdict.outcome is Outcome.NOT_LINEARIZABLE:
        shown = history.select(verdict.counterexample, verdict.failed_at)
        names = sorted(i for i in verdict.counterexample
                       if verdict.failed_at is None
                       or history.operations[i].invoked <= verdict.failed_at)
        order = longest_linearizable_prefix(spec, shown)
        text = (f"not linearizable: no order of these {len(names)} calls gives the results "
                f"the clients saw; the longest order that does takes {len(order)}")
    else:
        shown, names = history, list(range(len(history.operations)))
        order = list(verdict.witness)
        text = (f"linearizable ({len(names)} calls)" if verdict.outcome is Outcome.LINEARIZABLE
                else "unknown: the checker's budget ran out")
    state = spec.initial
    lines, before = [], _view_of(state)
    for index in order:
        state, _ = spec.step(state, shown.operations[index].op)
        after = _view_of(state)
        lines.append(LinearizedCall(names[index], repr(shown.operations[index].op),
                                    _observed(shown.operations[index]), _changes(before, after)))
        before = after
    blocked = {}
    if verdict.outcome is Outcome.NOT_LINEARIZABLE:
        for index in _next_calls(shown, frozenset(order)):
            _, result = spec.step(state, shown.operations[index].op)
            blocked[index] = f"the reference returns {compact(result)} here"
    times = sorted({t for op in shown.operations for t in (op.invoked, op.returned)
                    if t is not None})
    rank = {t: n for n, t in enumerate(times)}
    place = {index: n for n, index in enumerate(order)}
    calls = tuple(
        LaneCall(names[i], op.client, rank[op.invoked],
                 None if op.returned is None else rank[op.returned], repr(op.op), _observed(op),
                 place.get(i), blocked.get(i))
        for i, op in enumerate(shown.operations)
    )
    return Concurrent(text, verdict.outcome is Outcome.LINEARIZABLE, len(times),
                      shown.clients, calls, tuple(lines))


def _observed(op: Any) -> str:
    return "no response" if op.pending else compact(op.result)


# -- reading the input -----------------------------------------------------------------------


def _is_check(doc: dict[str, Any]) -> bool:
    return "conformant" in doc and "coverage" in doc


def _is_explore(doc: dict[str, Any]) -> bool:
    return "bounds" in doc and "lifecycle_rows" in doc


def _is_trace(doc: dict[str, Any]) -> bool:
    return doc.get("format") == TRACE_FORMAT


def _is_history(doc: dict[str, Any]) -> bool:
    return doc.get("format") == HISTORY_FORMAT


def _from_check(doc: dict[str, Any], base: Path) -> Report:
    coverage = doc["coverage"]
    families = tuple((name, int(f["reached"]), int(f["reachable"]))
                     for name, f in coverage.get("families", {}).items())
    failure = doc.get("failure")
    found = []
    if isinstance(failure, dict):
        found.append(_named_counterexample(failure.get("trace"), base, "the failure",
                                           str(failure.get("detail", ""))))
    catalogue = tuple(e for e in doc.get("catalogue", []) if isinstance(e, dict))
    for number, entry in enumerate(catalogue, 1):
        if entry.get("trace") != (failure or {}).get("trace"):
            found.append(_named_counterexample(entry.get("trace"), base,
                                               f"divergence {number}", ""))
    passed = bool(doc["conformant"])
    return Report(
        f"statemeta check: {doc.get('name', doc.get('sut', ''))}", "check",
        "conformant" if passed else "NOT conformant", passed,
        (*_summary(doc, ("sut", "level", "semantics", "seed", "examples", "directed", "steps",
                         "seconds")),
         ("coverage", f"{coverage.get('reached_reachable')}/{coverage.get('reachable')} "
                      "reachable classes")),
        _lifecycle_map(_check_counts(coverage, "row")),
        _role_map(_check_counts(coverage, "role")) if doc.get("level", 2) != 1 else None,
        families, (), tuple(found), catalogue,
    )


def _from_explore(doc: dict[str, Any], base: Path) -> Report:
    found: tuple[Counterexample, ...] = ()
    example = doc.get("counterexample")
    if isinstance(example, dict):
        found = (_named_counterexample(doc.get("trace"), base, "counterexample",
                                       str(example.get("detail", ""))),)
    passed = example is None and not doc.get("violations")
    bounds = ", ".join(f"{k}={v}" for k, v in doc["bounds"].items() if k != "slots")
    return Report(
        "statemeta explore" + (f" --variant {doc['variant']}" if doc.get("variant") else ""),
        "explore", "no counterexample" if passed else "a counterexample", passed,
        (("bounds", bounds), *_summary(doc, ("semantics", "complete", "states",
                                             "transitions", "depth", "seconds"))),
        _lifecycle_map(_explore_counts(doc["lifecycle_rows"])),
        _role_map(_explore_counts(doc.get("role_rows", {}))),
        (), tuple(int(n) for n in doc.get("states_per_depth", [])), found,
    )


def _from_trace(trace: Trace, where: str) -> Report:
    summary = (("implementation", trace.sut), ("level", str(trace.level)),
               ("semantics", trace.semantics.value), ("seed", str(trace.seed)))
    if trace.history is not None:
        return _concurrent_report(trace.history, trace.level, trace.semantics, summary, where)
    return Report(f"statemeta trace: {Path(where).name}", "trace", f"failed ({trace.failure.kind})",
                  False, summary, counterexamples=(counterexample(trace, "the trace"),))


def _concurrent_report(history: History[Call, Json], level: int, semantics: Semantics,
                       summary: tuple[tuple[str, str], ...], where: str) -> Report:
    if level not in CONCURRENT_LEVELS:
        raise ReportInputError(where, f"a concurrent history is of level 2 or 3, not {level}")
    drawn = concurrent(history, level, semantics)
    return Report(f"statemeta concurrent history: {Path(where).name}", "concurrent", drawn.verdict,
                  drawn.linearizable, summary, concurrent=drawn)


def _summary(doc: dict[str, Any], keys: Sequence[str]) -> tuple[tuple[str, str], ...]:
    return tuple((key, str(doc[key])) for key in keys if key in doc)


INPUT_KINDS: dict[str, str] = {
    "check": "a check's --json (conformant, coverage, failure, catalogue)",
    "explore": "an explore's --json (bounds, lifecycle_rows, counterexample)",
    "trace": f"a trace file (format {TRACE_FORMAT}), of one run or of a concurrent history",
    "concurrent": f"a concurrent history (format {HISTORY_FORMAT!r}), checked at level 2",
}
"""What ``statemeta report`` reads, by kind."""


def read_report(path: Path, text: str | None = None) -> Report:
    """The report of the document in ``path`` (``text``: its text, already read).

    Raises ReportInputError naming the input for anything it cannot draw."""
    where = str(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8") if text is None else text)
    except (OSError, ValueError) as error:
        raise ReportInputError(where, f"cannot be read as JSON: {error}") from error
    if not isinstance(doc, dict):
        raise ReportInputError(where, f"expected a JSON object, got {compact(doc)}")
    base = path.parent
    try:
        if _is_check(doc):
            return _from_check(doc, base)
        if _is_explore(doc):
            return _from_explore(doc, base)
        if _is_trace(doc):
            return _from_trace(Trace.from_json(doc, where=where), where)
        if _is_history(doc):
            history = history_from_json(doc, where=where)
            return _concurrent_report(history, 2, Semantics.INTENDED, (("level", "2"),), where)
    except (TraceFormatError, MisuseError, KeyError, TypeError, ValueError) as error:
        if isinstance(error, ReportInputError):
            raise
        raise ReportInputError(where, f"not a valid input: {error}") from error
    kinds = "; ".join(INPUT_KINDS.values())
    raise ReportInputError(where, f"is none of what a report reads ({kinds})")
