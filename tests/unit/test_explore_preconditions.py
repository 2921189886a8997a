"""The explorer never runs an operation that breaks its precondition (the operation table's
column), in either semantics, and it still reaches the paths those operations guard."""

from __future__ import annotations

from collections import Counter

import pytest

from statemeta.explore.bounds import Bounds
from statemeta.explore.search import ForkableReference, explore
from statemeta.harness.operations import Op
from statemeta.semantics import Semantics

BOUNDS = Bounds(stream_tasks=1, no_downstream=True, reopens=0, faults=0, max_depth=4)
"""s1, the pair f1 / h1 and t1 (nothing downstream); depth 4 reaches HALT and a second phase."""


@pytest.mark.parametrize("semantics", list(Semantics), ids=lambda s: s.value)
def test_the_explorer_never_sends_an_operation_breaking_its_precondition(
    semantics: Semantics, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: Counter[str] = Counter()
    broken: list[tuple[Op, str]] = []
    call = ForkableReference.call

    def checked(self: ForkableReference, op: Op) -> dict[str, object]:
        rule = self.precondition_broken(op)
        if rule is not None:
            broken.append((op, rule))
        result = call(self, op)
        sent[f"{op.name}:{result.get('error', 'ok')}"] += 1
        return result  # type: ignore[return-value]

    monkeypatch.setattr(ForkableReference, "call", checked)
    result = explore(BOUNDS, semantics=semantics, all_violations=True)
    assert broken == []
    assert sent["handle_event:PreconditionError"] == 0
    assert sent["handle_event:ok"] and sent["complete_event:ok"] and sent["start_one:ok"]
    assert result.stats.states > 1_000
