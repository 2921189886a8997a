"""Failure traces: the operations of a failing run, both sides' results, the views where it failed.

A trace is what ``statemeta check`` writes when the implementation under test diverges from the
reference, and what ``statemeta replay`` reads back. Only the operations are needed to replay;
the results and views are there for the reader (``format_trace`` prints them as a table, with
the paths at which the two views differ).

A divergence's trace is the shrunk example's steps, as the differential machine reports them
(``divergence_trace``); an implementation that broke the protocol (crash, hang, garbage) or
answered a fault (undefined behaviour, a fatal internal error) stops the run at once, without
shrinking, and its trace is the steps so far (``sut_error_trace``: kind ``sut`` or ``fault``).
``replay`` runs a trace's operations through the same machine outside Hypothesis, so it
applies exactly the checks of the run that wrote it: a trace of ``check --keep-going`` holds
the masks in force when it was found (``masks``), and its failure says where it shows
(``failure.at``); both fields are optional (absent: no masks, and a trace of an older run).
A trace's steps and failure are the harness's and the explorer's one ``Step`` and ``Failure``
(statemeta.harness.failure), written field by field in their declared order.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import attrs

from statemeta.errors import MisuseError, SutAborted, SutError, SutFault, TraceFormatError
from statemeta.harness.adapter import Adapter
from statemeta.harness.catalogue import NO_MASKS, START, Mask
from statemeta.harness.differences import compact, differences
from statemeta.harness.failure import FAILURE_KINDS, UNDEFINED, Failure, Step
from statemeta.harness.linearizability import History
from statemeta.harness.linearizability.reference import Call, history_from_json
from statemeta.harness.machine import Divergence, build_machine
from statemeta.harness.normalize import Json
from statemeta.harness.operations import LEVELS, OP_SPECS, Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.wire import MAX_JSON_DEPTH, is_int, is_op_result, loads_bounded
from statemeta.semantics import Semantics

__all__ = [
    "FAILURE_KINDS",
    "MAX_TRACE_DEPTH",
    "TRACE_FORMAT",
    "Failure",
    "JsonObject",
    "RecordingAdapter",
    "Trace",
    "TraceStep",
    "divergence_trace",
    "format_trace",
    "read_trace",
    "replay",
    "replay_command",
    "result_text",
    "sut_error_trace",
    "write_trace",
]

JsonObject: TypeAlias = dict[str, Any]
R = TypeVar("R")

TRACE_FORMAT = 1
"""The trace file's ``format``; a reader refuses any other."""

TraceStep = Step
"""The trace's name for a step (statemeta.harness.failure.Step)."""


@attrs.frozen
class Trace:
    """A failing run: the operations from a fresh start at ``level`` up to the failure."""

    level: int = attrs.field(validator=attrs.validators.in_(LEVELS))
    sut: str
    """The command of the implementation under test."""
    steps: tuple[Step, ...]
    failure: Failure
    seed: int | None = None
    semantics: Semantics = Semantics.INTENDED
    """The semantics of the reference the run compared against."""
    masks: frozenset[Mask] = NO_MASKS
    """What the run did not compare (``check --keep-going``): replay skips it too."""
    history: History[Call, Json] | None = None
    """A concurrent run's: the calls of several clients with their times and results (its
    failing sub-history, for a linearizability failure); ``steps`` is then empty."""

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(step.op for step in self.steps)

    @property
    def mask(self) -> Mask | None:
        """Where the failure shows, as a catalogue names it (None: the protocol broke)."""
        if self.failure.at is None:
            return None
        return Mask(self.steps[-1].op.name if self.steps else START, self.failure.at)

    def to_json(self) -> JsonObject:
        masks = {"masks": [m.to_json() for m in sorted(self.masks)]} if self.masks else {}
        return {
            "format": TRACE_FORMAT,
            "level": self.level,
            "sut": self.sut,
            "seed": self.seed,
            "semantics": self.semantics.value,
            "steps": [
                {**step.op.to_json(), "reference": step.reference, "sut": step.sut}
                for step in self.steps
            ],
            "failure": attrs.asdict(self.failure),
            **masks,
        } | ({} if self.history is None else {"history": self.history.to_json(Call.to_json)})

    @classmethod
    def from_json(cls, obj: object, *, where: str = "trace") -> Trace:
        """Parses a trace, every field checked (TraceFormatError naming ``where`` and the field)."""
        found = obj.get("format") if isinstance(obj, dict) else None
        if not (is_int(found) and found == TRACE_FORMAT):
            problem = f"not a statemeta trace of format {TRACE_FORMAT} (format {compact(found)})"
            raise TraceFormatError(where, "format", problem)
        fields = _check_fields(obj, _TRACE_FIELDS, where, "")
        steps = []
        for index, step in enumerate(fields["steps"]):
            field = f"steps[{index}]"
            _check_fields(step, _STEP_FIELDS, where, field)
            try:
                op = Op.from_json({"op": step["op"], "args": step.get("args", {})})
            except MisuseError as error:
                raise TraceFormatError(where, field, str(error)) from error
            steps.append(Step(op, step.get("reference"), step.get("sut")))
        failure = Failure(**_check_fields(fields["failure"], _FAILURE_FIELDS, where, "failure"))
        semantics = Semantics(fields.get("semantics", Semantics.INTENDED.value))
        masks = frozenset(
            Mask(**_check_fields(m, _MASK_FIELDS, where, f"masks[{i}]"))
            for i, m in enumerate(fields.get("masks", []))
        )
        history = None
        if "history" in fields:
            try:
                history = history_from_json(fields["history"], where="history")
            except MisuseError as error:
                raise TraceFormatError(where, "history", str(error)) from error
        return cls(
            fields["level"], fields["sut"], tuple(steps), failure, fields.get("seed"), semantics,
            masks, history,
        )


MAX_TRACE_DEPTH = MAX_JSON_DEPTH + 2
"""The deepest nesting read from a trace file: a response's result sits two levels deeper in a
trace than in its response line."""

_Fields: TypeAlias = dict[str, tuple[Callable[[object], bool], str, bool]]
"""A JSON object's fields: name -> (is the value valid, what it must be, is it required)."""

_TRACE_FIELDS: _Fields = {
    "format": (is_int, f"the int {TRACE_FORMAT}", True),
    "level": (lambda v: is_int(v) and v in LEVELS, f"one of the levels {LEVELS}", True),
    "sut": (
        lambda v: isinstance(v, str) and bool(v.strip()),
        "the implementation's command (a string that is not blank)",
        True,
    ),
    "seed": (lambda v: v is None or is_int(v), "an int or null", False),
    "semantics": (
        lambda v: v in {s.value for s in Semantics},
        f"one of {[s.value for s in Semantics]} (absent: intended)",
        False,
    ),
    "steps": (lambda v: isinstance(v, list), "a list of steps", True),
    "failure": (lambda v: isinstance(v, dict), "an object", True),
    "masks": (lambda v: isinstance(v, list), "a list of masks", False),
    "history": (lambda v: isinstance(v, dict), "a concurrent history (an object)", False),
}
_MASK_FIELDS: _Fields = {
    "op": (lambda v: v == START or v in OP_SPECS, f"an operation's name or {START!r}", True),
    "at": (lambda v: isinstance(v, str) and bool(v), "where a divergence shows", True),
}
_STEP_FIELDS: _Fields = {
    "op": (lambda v: isinstance(v, str), "an operation's name", True),
    "args": (lambda v: isinstance(v, dict), "an object of arguments", False),
    "reference": (
        lambda v: v is None or is_op_result(v),
        'an operation\'s result ({"ok": ...} or {"error": ...}) or null',
        False,
    ),
    "sut": (
        lambda v: v is None or is_op_result(v),
        'an operation\'s result ({"ok": ...} or {"error": ...}) or null',
        False,
    ),
}
_FAILURE_FIELDS: _Fields = {
    "kind": (lambda v: v in FAILURE_KINDS, f"one of {sorted(FAILURE_KINDS)}", True),
    "detail": (lambda v: isinstance(v, str), "a string", True),
    "reference_view": (lambda v: v is None or isinstance(v, dict), "an object or null", False),
    "sut_view": (lambda v: v is None or isinstance(v, dict), "an object or null", False),
    "at": (lambda v: v is None or isinstance(v, str), "a string or null", False),
}


def _check_fields(obj: object, fields: _Fields, where: str, path: str) -> JsonObject:
    """``obj`` itself, once it is an object with exactly ``fields``, each valid."""
    if not isinstance(obj, dict):
        raise TraceFormatError(where, path, f"expected an object, got {compact(obj)}")
    prefix = f"{path}." if path else ""
    for name in obj:
        if name not in fields:
            raise TraceFormatError(where, f"{prefix}{name}", "is not a field of the trace format")
    for name, (valid, expected, required) in fields.items():
        if name not in obj:
            if required:
                raise TraceFormatError(where, f"{prefix}{name}", "is missing")
        elif not valid(obj[name]):
            raise TraceFormatError(
                where, f"{prefix}{name}", f"expected {expected}, got {compact(obj[name])}"
            )
    return obj


def write_trace(trace: Trace, path: Path) -> None:
    """Strict RFC 8259 JSON in ASCII (a NaN is a ValueError, never a ``NaN`` literal): what an
    implementation answers is read strictly (statemeta.harness.wire), so none reaches here."""
    text = json.dumps(trace.to_json(), indent=2, allow_nan=False, ensure_ascii=True)
    path.write_text(text + "\n", encoding="utf-8")


def replay_command(trace: Path | str, sut: str, semantics: str | None) -> str:
    """The ``statemeta replay`` line that runs ``trace`` against ``sut`` again (quoted for a
    POSIX shell), what every failure prints."""
    line = f"statemeta replay {shlex.quote(str(trace))} --sut {shlex.quote(sut)}"
    return line if semantics is None else f"{line} --semantics {semantics}"


def read_trace(path: Path) -> Trace:
    """The trace in ``path`` (TraceFormatError naming it, and the field, for anything wrong)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as error:
        raise TraceFormatError(str(path), "", f"cannot be read: {error}") from error
    try:
        obj = loads_bounded(text, MAX_TRACE_DEPTH)
    except ValueError as error:
        raise TraceFormatError(str(path), "", f"is not JSON within bounds: {error}") from error
    return Trace.from_json(obj, where=str(path))


# -- recording and replaying -------------------------------------------------------------------


class RecordingAdapter:
    """Wraps the implementation for one run: records the operations since the last ``start``,
    and turns a SutError into SutAborted so that Hypothesis stops at once instead of shrinking
    (each attempt on a hung implementation would cost a timeout)."""

    def __init__(self, inner: Adapter) -> None:
        self.inner = inner
        self.ops: list[Op] = []
        self.aborted: SutError | None = None

    def hello(self) -> dict[str, Any]:
        return self._guard(self.inner.hello)

    def start(self, level: int) -> None:
        self.ops = []
        self._guard(lambda: self.inner.start(level))

    def call(self, op: Op) -> dict[str, Any]:
        self.ops.append(op)
        return self._guard(lambda: self.inner.call(op))

    def view(self) -> dict[str, Any]:
        return self._guard(self.inner.view)

    def stop(self) -> None:
        self._guard(self.inner.stop)

    def _guard(self, body: Callable[[], R]) -> R:
        try:
            return body()
        except SutError as error:
            self.aborted = error
            raise SutAborted(error) from error


def divergence_trace(
    divergence: Divergence,
    *,
    level: int,
    sut: str,
    seed: int | None,
    semantics: Semantics = Semantics.INTENDED,
    masks: frozenset[Mask] = NO_MASKS,
) -> Trace:
    """The trace of a divergence the differential machine raised (its steps, both views),
    found with ``masks`` in force."""
    return Trace(
        level, sut, tuple(divergence.steps), divergence.failure, seed, semantics, masks
    )


def sut_error_trace(
    error: SutError,
    done: Sequence[Step],
    sent: Sequence[Op],
    *,
    level: int,
    sut: str,
    seed: int | None,
    semantics: Semantics = Semantics.INTENDED,
) -> Trace:
    """The trace of an implementation that broke the protocol: the steps ``done`` in the
    example, and the operation it failed on when it failed on one (``sent`` has one more)."""
    steps = list(done)
    if len(sent) > len(done):
        steps.append(Step(sent[len(done)], None, None))
    kind = "fault" if isinstance(error, SutFault) else "sut"
    return Trace(level, sut, tuple(steps), Failure(kind, str(error)), seed, semantics)


def run_ops(
    ops: Sequence[Op],
    *,
    level: int,
    sut: Adapter | None,
    reference: Callable[[], ReferenceAdapter] = ReferenceAdapter,
    seed_violations: Counter[str] | None = None,
    masks: frozenset[Mask] = NO_MASKS,
    done: list[Step] | None = None,
) -> Divergence | None:
    """Runs ``ops`` through the differential machine (``sut`` None: the reference alone),
    outside Hypothesis (the same checks after every step, ``masks`` skipped): the divergence,
    or None if every step passed.
    ``done`` receives the steps run; SutAborted propagates. The view invariants the reference
    broke too (the seed's own violations) are added to ``seed_violations``, per invariant id."""
    machine_class = build_machine(level, reference=reference, sut=sut, name="Replay", masks=masks)
    machine: Any = None
    try:
        machine = machine_class()
        for op in ops:
            machine.step(op)
        return None
    except Divergence as divergence:
        return divergence
    finally:
        if seed_violations is not None:
            seed_violations.update(machine_class.seed_violations)  # type: ignore[attr-defined]
        if machine is not None:
            if done is not None:
                done += machine.steps
            machine.reference.stop()
            if sut is not None:
                with contextlib.suppress(SutError):
                    sut.stop()


def replay(
    ops: Sequence[Op],
    *,
    level: int,
    sut: Adapter,
    sut_command: str,
    reference: Callable[[], ReferenceAdapter] = ReferenceAdapter,
    seed_violations: Counter[str] | None = None,
    masks: frozenset[Mask] = NO_MASKS,
) -> Trace | None:
    """``run_ops`` as a trace: the trace of the failure (in the semantics of the reference
    that ``reference`` makes), or None if every step passed."""
    recording = RecordingAdapter(sut)
    semantics = reference().semantics  # not started: only asked what it compares against
    done: list[Step] = []
    try:
        divergence = run_ops(ops, level=level, sut=recording, reference=reference,
                             seed_violations=seed_violations, masks=masks, done=done)
    except SutAborted as aborted:
        return sut_error_trace(aborted.error, done, recording.ops, level=level,
                               sut=sut_command, seed=None, semantics=semantics)
    if divergence is None:
        return None
    return divergence_trace(divergence, level=level, sut=sut_command, seed=None,
                            semantics=semantics, masks=masks)


# -- printing ----------------------------------------------------------------------------------


def format_trace(trace: Trace) -> str:
    """The trace as a table a person can read and replay by hand."""
    rows = [("#", "operation", "reference", "implementation")]
    for number, step in enumerate(trace.steps, 1):
        rows.append(
            (str(number), repr(step.op), result_text(step.reference), result_text(step.sut))
        )
    widths = [min(max(len(row[i]) for row in rows), 48) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in rows
    ]
    failure = trace.failure
    if trace.history is not None:
        return (
            f"level {trace.level}, {trace.semantics.value} semantics, {trace.sut!r}: a "
            f"concurrent history of {len(trace.history.operations)} calls ({failure.kind}: "
            f"{FAILURE_KINDS[failure.kind]})\n{failure.detail}"
        )
    where = f"step {len(trace.steps)}" if trace.steps else "start"
    lines.append("")
    lines.append(
        f"level {trace.level}, {trace.semantics.value} semantics, {trace.sut!r}: failed at "
        f"{where} ({failure.kind}: {FAILURE_KINDS[failure.kind]})"
    )
    lines.append(failure.detail)
    if trace.masks:
        masked = ", ".join(f"{m.op} {m.at}" for m in sorted(trace.masks))
        lines.append(f"not compared (masked by --keep-going): {masked}")
    if failure.reference_view is not None and failure.sut_view is not None:
        found = list(differences(failure.reference_view, failure.sut_view))
        if found:
            lines.append("views at the failing step differ at:")
            lines.extend(f"  {difference}" for difference in found)
    return "\n".join(lines)


def result_text(result: JsonObject | None) -> str:
    """One side's result of a step in a few words (``-``: no result; heartbeats counted)."""
    if result is None:
        return "-"
    if UNDEFINED in result or "fault" in result:  # the step both instances end in
        return "undefined behaviour" if UNDEFINED in result else "fault"
    text = f"error {result['error']}" if "error" in result else compact(result.get("ok"))
    heartbeats = result.get("heartbeats")
    return f"{text} (+{len(heartbeats)} heartbeats)" if heartbeats else text
