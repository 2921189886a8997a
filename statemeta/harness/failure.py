"""What a failing run is made of, for the harness and the explorer alike: its steps (``Step``)
and why it failed (``Failure``).

A step is one operation with what the reference returned and what the other side returned:
the implementation under test (``statemeta check``, ``statemeta replay``) or the broken
variant run in lockstep (``statemeta explore``). A failure is its kind, a detail for people,
both sides' views where it failed and where it shows (a Mask's ``at``). The differential
machine's ``Divergence`` and the explorer's ``Counterexample`` carry these, and a trace file
writes them (statemeta.harness.trace: the field names and order are the file format's).
"""

from __future__ import annotations

import attrs

from statemeta.harness.normalize import Json
from statemeta.harness.operations import Op

__all__ = ["FAILURE_KINDS", "FINDINGS", "Failure", "Step", "same_finding"]

FAILURE_KINDS: dict[str, str] = {
    "result": "the two sides returned different results",
    "view": "the two sides' views differ after the step",
    "invariant": "the implementation's own view breaks an invariant of spec/invariants.md",
    "durable": "the implementation's committed records differ from what must be durable",
    "sut": "the implementation broke the protocol (crashed, hung, closed its output, garbage)",
    "fault": "the implementation answered that the call hit undefined behaviour or a fatal "
    "internal error (a sanitizer's report, a failed assertion): the detail names the finding "
    "and the call",
    "linearizability": "no order of the concurrent calls, consistent with real time, gives the "
    "results the clients saw (the trace's history)",
    "crash": "the explored reference or variant raised an exception that is no statemeta "
    "error (the explorer's; its trace file says invariant)",
    "undefined-behaviour": "the reference, in the seed semantics, hit undefined behaviour of "
    "the seed's code (statemeta.errors.UndefinedBehaviour) and the implementation answered no "
    "fault with the same finding in the same step (the explorer's: the seed reaches it)",
}
"""Every kind of failure, and what it means."""

UNDEFINED = "undefined_behaviour"
"""The key of a step's result that says the seed reference hit undefined behaviour there
(``{"undefined_behaviour": "<what>"}``): its process is gone, every call after it answers the
same."""

FINDINGS: dict[str, tuple[str, ...]] = {
    "use after free": ("use-after-free", "use after free"),
    "heap over-read": ("heap-buffer-overflow", "heap over-read"),
}
"""Each kind of the seed reference's undefined behaviour, and the words of a fault's finding
that report it (AddressSanitizer's, or the served seed reference's own text): a step where
the reference hits it and the implementation answers such a fault is agreement."""


def same_finding(kind: str, finding: str) -> bool:
    """Whether a fault's ``finding`` reports undefined behaviour of ``kind`` (FINDINGS)."""
    return any(words in finding for words in FINDINGS[kind])


@attrs.frozen
class Step:
    """One operation and what each side returned (None: that side gave no result)."""

    op: Op
    reference: dict[str, Json] | None
    sut: dict[str, Json] | None
    """The implementation's result, or the explored variant's."""

    @property
    def variant(self) -> dict[str, Json] | None:
        """The explorer's name for ``sut``: the broken variant's result."""
        return self.sut


@attrs.frozen
class Failure:
    """Why a run failed at its last step (or at start, with no steps)."""

    kind: str = attrs.field(validator=attrs.validators.in_(FAILURE_KINDS))
    detail: str
    reference_view: dict[str, Json] | None = None
    sut_view: dict[str, Json] | None = None
    """The implementation's view, or the explored variant's."""
    at: str | None = None
    """Where a divergence shows (a Mask's ``at``); None for ``sut`` and the explorer's."""
