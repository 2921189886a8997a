"""Linearizability: did concurrent calls behave as if made one at a time, in real-time order?

Theory of operation. A *history* (history.py) records each client's calls as intervals with
the observed results. A *sequential specification* (checker.SequentialSpec) says what one
call at a time does: ``step(state, op) -> (state, result)`` on states that are values, so
that the search can go back to any of them. ``check`` looks for an order of the operations
that respects real time (an operation that returned before another was invoked comes first)
and in which the spec returns every observed result; a pending operation may be placed
anywhere after its invocation or left out. It returns a Verdict: the order when there is one,
a small failing sub-history when there is none, UNKNOWN when its step budget runs out.
``timeline`` draws a history, ``format_verdict`` the verdict. Why partitioning is sound, and
what a partition must satisfy: docs/linearizability.md. ``reference_spec`` is the stream-meta
reference as a spec, for histories of ``Call``s (reference.py).
"""

from statemeta.harness.linearizability.checker import (
    DEFAULT_BUDGET,
    Outcome,
    SequentialSpec,
    Verdict,
    check,
)
from statemeta.harness.linearizability.history import HISTORY_FORMAT, History, Operation
from statemeta.harness.linearizability.reference import (
    CONCURRENT_LEVELS,
    Call,
    history_from_json,
    reference_spec,
)
from statemeta.harness.linearizability.timeline import format_verdict, timeline

__all__ = [
    "CONCURRENT_LEVELS",
    "DEFAULT_BUDGET",
    "HISTORY_FORMAT",
    "Call",
    "History",
    "Operation",
    "Outcome",
    "SequentialSpec",
    "Verdict",
    "check",
    "format_verdict",
    "history_from_json",
    "reference_spec",
    "timeline",
]
