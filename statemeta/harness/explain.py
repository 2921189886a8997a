"""Which switches of spec/divergences.toml explain a catalogued divergence (``check
--keep-going``).

A set of switches explains an entry when its trace passes against the reference with those
switches flipped from the semantics the run checked, and fails without them (it did: it is
the entry's trace). The search tries the smallest sets first, one switch, then two (``MAX_SET``),
and stops at the first size with a set that explains; at level 1 only the lifecycle's switches
are candidates (no meta runs there). The implementation runs each trace once: its answers are
recorded, and every candidate reference replays against the recording (``_Playback``), so a
search costs one run of the implementation and at most 17 + 136 runs of the in-process
reference over a shrunk trace.
"""

from __future__ import annotations

import functools
import itertools
from collections import deque
from typing import Any

from statemeta.errors import StatemetaError
from statemeta.harness.adapter import Adapter
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import Trace, run_ops
from statemeta.semantics import Switch
from statemeta.tables import DIVERGENCES

__all__ = ["MAX_SET", "candidates", "explained_by"]

MAX_SET = 2
"""The largest set of switches tried: sets of one, then of two (the bound of the search)."""


def candidates(level: int) -> tuple[Switch, ...]:
    """The switches that can show at ``level``, in spec/divergences.toml's order."""
    shown = (r for r in DIVERGENCES.rows if level > 1 or r.scope == "lifecycle")
    return tuple(r.switch for r in shown if r.switch is not None)


class _Unrecorded(Exception):
    """A candidate's run asked the recording something the implementation's run did not."""


class _Playback:
    """The implementation's answers to one trace, given again in the order it gave them."""

    def __init__(self, hello: dict[str, Any], answers: list[tuple[str, dict[str, Any]]]):
        self._hello = hello
        self._answers = answers
        self._left: deque[tuple[str, dict[str, Any]]] = deque()

    def hello(self) -> dict[str, Any]:
        return self._hello

    def start(self, level: int) -> None:
        self._left = deque(self._answers)

    def call(self, op: Op) -> dict[str, Any]:
        return self._next(repr(op))

    def view(self) -> dict[str, Any]:
        return self._next("view")

    def stop(self) -> None:
        self._left.clear()

    def _next(self, asked: str) -> dict[str, Any]:
        if not self._left or self._left[0][0] != asked:
            raise _Unrecorded(asked)
        return self._left.popleft()[1]


def _record(trace: Trace, sut: Adapter) -> _Playback:
    """The implementation run through the trace's operations, each followed by a view, as the
    differential machine asks them."""
    sut.start(trace.level)
    try:
        hello = sut.hello()
        answers = [("view", sut.view())]
        for op in trace.ops:
            answers.append((repr(op), sut.call(op)))
            answers.append(("view", sut.view()))
    finally:
        sut.stop()
    return _Playback(hello, answers)


def _passes(trace: Trace, playback: _Playback, flipped: frozenset[Switch]) -> bool:
    reference = functools.partial(
        ReferenceAdapter, check_invariants=False, semantics=trace.semantics, flipped=flipped
    )
    try:
        found = run_ops(trace.ops, level=trace.level, sut=playback, reference=reference,
                        masks=trace.masks)  # fmt: skip
    except (StatemetaError, _Unrecorded):  # a precondition the flipped reference breaks
        return False
    return found is None


def explained_by(trace: Trace, sut: Adapter) -> tuple[str, ...]:
    """The names of the smallest set of switches that explains ``trace`` (the first found, in
    the table's order), or () when none of at most ``MAX_SET`` does."""
    try:
        playback = _record(trace, sut)
    except StatemetaError:  # the implementation did not answer the trace again
        return ()
    switches = candidates(trace.level)
    for size in range(1, MAX_SET + 1):
        for chosen in itertools.combinations(switches, size):
            if _passes(trace, playback, frozenset(chosen)):
                return tuple(s.value for s in chosen)
    return ()
