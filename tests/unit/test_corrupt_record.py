"""corrupt_record: a torn record committed under a task's key, then open and load_all. The
intended load skips and reports it; the seed's aborts there (M4), and before that the seed's
open reads it past its end (U1, undefined behaviour), which the explorer finds."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from statemeta.codec import decode_task
from statemeta.errors import DecodeError, UndefinedBehaviour
from statemeta.explore.bounds import Bounds
from statemeta.explore.search import explore
from statemeta.harness.operations import TASK_POOL, Op, TaskSlot, slot_of
from statemeta.harness.reference import Backend, ReferenceAdapter
from statemeta.semantics import Switch

S1, S3 = [0x10, 1], [0x10, 256]  # s3's key sorts first
REGISTER_BOTH = (Op.of("register", task="s1"), Op.of("register", task="s3"))


def last(
    semantics: str, backend: Backend, *ops: Op, flipped: frozenset[Switch] = frozenset()
) -> tuple[dict[str, Any], Any]:
    """The last op's result and the view's ids after it."""
    adapter = ReferenceAdapter(semantics=semantics, backend=backend, flipped=flipped)
    adapter.start(3)
    try:
        results = [adapter.call(op) for op in ops]
        return results[-1], adapter.view()["ids"]
    finally:
        adapter.stop()


def report(loaded: list[list[int]], torn: str) -> dict[str, Any]:
    key = slot_of(torn).torn_record[0].hex()
    return {"ok": {"loaded": loaded, "removed": [], "duplicates": [], "undecodable": [key],
                   "cleared": []}}


@pytest.mark.parametrize("slot", TASK_POOL, ids=lambda s: s.name)
def test_the_torn_record_does_not_decode(slot: TaskSlot) -> None:
    key, value = slot.torn_record
    assert len(key) == 16 and len(value) == 12
    with pytest.raises(DecodeError):
        decode_task(value)


@pytest.mark.parametrize("backend", ["memory", "lmdb"])
@pytest.mark.parametrize(("torn", "kept", "seed_ids"), [("s1", S3, [S3]), ("s3", S1, [])])
def test_intended_skips_the_torn_record_the_seed_aborts_there(
    backend: Backend, torn: str, kept: list[int], seed_ids: list[list[int]]
) -> None:
    ops = (*REGISTER_BOTH, Op.of("corrupt_record", task=torn))
    assert last("intended", backend, *ops) == (report([kept], torn), [kept])
    # M4 (U1 off): the tasks loaded before the torn record stay, the rest are not loaded
    m4 = frozenset({Switch.LENGTH_HEADER_TRUSTED})
    assert last("seed", backend, *ops, flipped=m4) == ({"error": "DecodeError"}, seed_ids)
    # the seed (U1): its open reads the torn record past its end (tests/unit/test_seed_ub.py)
    with pytest.raises(UndefinedBehaviour, match="heap over-read of the record of task"):
        last("seed", backend, *ops)


def test_a_torn_record_of_a_task_never_stored_is_reported_too() -> None:
    assert last("intended", "memory", Op.of("corrupt_record", task="h1")) == (report([], "h1"), [])


def test_a_register_replaces_a_torn_record() -> None:
    ops = (Op.of("corrupt_record", task="s1"), Op.of("register", task="s1"),
           Op.of("crash_reopen"))
    result, ids = last("intended", "memory", *ops)
    assert result["ok"]["undecodable"] == [] and ids == [S1]


BOUNDS = Bounds(stream_tasks=2, fill_history=False, role_changes=0, start_rounds=0, reopens=0,
                faults=1, clock_advances=0, max_depth=2)


def test_the_explorer_finds_the_seeds_aborted_load_and_the_intended_passes() -> None:
    intended = explore(BOUNDS, all_violations=True)
    assert intended.complete and intended.violations == ()
    seed = explore(BOUNDS, semantics="seed", all_violations=True)
    found = {(v.invariant, v.operation): v.counterexample.ops for v in seed.violations}
    assert found[("undefined-behaviour-U1", "corrupt_record")] == (
        Op.of("corrupt_record", task="s1"),
    )


def test_corrupt_record_spends_the_fault_budget() -> None:
    seed = explore(attrs.evolve(BOUNDS, faults=0), semantics="seed", all_violations=True)
    assert all(v.operation != "corrupt_record" for v in seed.violations)
    assert seed.stats.states < explore(BOUNDS, semantics="seed", all_violations=True).stats.states
