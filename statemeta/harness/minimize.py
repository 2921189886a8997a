"""Shrinking a failing trace by deleting operations, instead of Hypothesis's shrinker.

Hypothesis shrinks the choices that drew a run: it deletes whole rule calls well but not the
single operations inside a walk (statemeta.harness.generation), and each attempt replays a
whole example. Measured on the 14 broken variants with walks: its shrink phase took 150 to
330 s on 7 of them (4 stopped by its own 300 s cap) and left up to 17 steps. The operations are
first-class and replay deterministically, so the trace itself is minimized instead (under a
second each, to at most 8 steps): Hypothesis searches with its shrink phase off
(``without_shrinking``), then delta debugging (Zeller's ddmin, complements only) deletes
chunks of halving size, then single operations, keeping a deletion when the replay still
fails with the same kind of failure (result, view, invariant or durable: a shorter trace must
not trade the bug for another), or with ``same_place`` at the same place (its catalogue
entry: operation and path, statemeta.harness.catalogue). The replays skip the trace's masks.
The result is 1-minimal: no single operation can be removed.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from hypothesis import Phase, settings

from statemeta.errors import PreconditionError
from statemeta.harness.adapter import Adapter
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import Trace, replay

__all__ = ["minimize", "without_shrinking"]


def minimize(
    trace: Trace,
    *,
    sut: Adapter,
    reference: Callable[[], ReferenceAdapter] = ReferenceAdapter,
    same_place: bool = False,
) -> Trace:
    """The shortest failing trace ddmin finds from ``trace`` (a trace of an implementation
    that broke the protocol or answered a fault is returned as it is: its replays could only
    hang or crash)."""
    if trace.failure.kind in ("sut", "fault"):
        return trace

    def still_fails(ops: list[Op]) -> Trace | None:
        try:
            again = replay(ops, level=trace.level, sut=sut, sut_command=trace.sut,
                           reference=reference, masks=trace.masks)
        except PreconditionError:
            return None  # without the steps removed, an operation breaks its precondition
        if again is None or again.failure.kind != trace.failure.kind:
            return None
        return again if not same_place or again.mask == trace.mask else None

    best = trace
    ops = list(trace.ops)
    chunks = 2
    while len(ops) >= 2:
        size = -(-len(ops) // chunks)
        for start in range(0, len(ops), size):
            found = still_fails(ops[:start] + ops[start + size:])
            if found is not None:
                best, ops = found, list(found.ops)  # the replay stops at the failure
                chunks = max(chunks - 1, 2)
                break
        else:
            if chunks >= len(ops):
                break
            chunks = min(chunks * 2, len(ops))
    return attrs.evolve(best, seed=trace.seed)


def without_shrinking(search: settings) -> settings:
    """``search`` with Hypothesis's shrink phase off: ``minimize`` shrinks what it finds."""
    return settings(search, phases=[p for p in search.phases if p is not Phase.shrink])
