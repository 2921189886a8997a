"""Concurrent histories against the reference: hand-written, the facade, its locking variants."""

from __future__ import annotations

import pytest

from statemeta.errors import MisuseError
from statemeta.harness.concurrent_run import (
    DEFAULT_HISTORIES,
    InProcess,
    check_run,
    concurrent_ops,
    hunt,
    run_concurrent,
)
from statemeta.harness.facade_target import FacadeAdapter
from statemeta.harness.failure import UNDEFINED
from statemeta.harness.linearizability import History, Operation, Outcome, check
from statemeta.harness.linearizability.reference import (
    Call,
    history_from_json,
    reference_spec,
    undefined,
)
from statemeta.harness.locking_variants import LOCKING_VARIANTS
from statemeta.harness.operations import OP_SPECS, REOPENS, Op

OK_TRUE = {"ok": True}
OK_FALSE = {"ok": False}
OK_NONE = {"ok": None}


def call(client: int, name: str, **args: object) -> Call:
    return Call(client, Op.of(name, **args))  # type: ignore[arg-type]


def verdict(*operations: Operation[Call, object]) -> Outcome:
    return check(reference_spec(2), History(operations)).outcome  # type: ignore[arg-type]


def test_two_registers_of_one_id_both_true_is_rejected() -> None:
    assert verdict(
        Operation(0, 0, 4, call(0, "register", task="s1"), OK_TRUE),
        Operation(1, 1, 3, call(1, "register", task="s1"), OK_TRUE),
    ) is Outcome.NOT_LINEARIZABLE


def test_two_overlapping_registers_one_true_one_false_is_accepted() -> None:
    assert verdict(
        Operation(0, 0, 4, call(0, "register", task="s1"), OK_FALSE),
        Operation(1, 1, 3, call(1, "register", task="s1"), OK_TRUE),
    ) is Outcome.LINEARIZABLE


def test_an_acquire_after_the_unregister_returned_cannot_succeed() -> None:
    setup = Operation(0, 0, 1, call(0, "register", task="s1"), OK_TRUE)
    gone = Operation(0, 2, 3, call(0, "unregister", task="s1"), {"ok": "removed"})
    assert verdict(
        setup, gone, Operation(1, 4, 5, call(1, "acquire", task="s1"), OK_TRUE)
    ) is Outcome.NOT_LINEARIZABLE
    assert verdict(
        setup, gone, Operation(1, 2.5, 5, call(1, "acquire", task="s1"), OK_TRUE)
    ) is Outcome.LINEARIZABLE


def test_a_client_releases_only_what_it_acquired() -> None:
    """Handles are per client: client 1's release has nothing of its own to give back."""
    setup = Operation(0, 0, 1, call(0, "register", task="s1"), OK_TRUE)
    taken = Operation(0, 2, 3, call(0, "acquire", task="s1"), OK_TRUE)
    assert verdict(
        setup, taken, Operation(0, 4, 5, call(0, "release", task="s1"), OK_NONE)
    ) is Outcome.LINEARIZABLE
    assert verdict(
        setup, taken, Operation(1, 4, 5, call(1, "release", task="s1"), OK_NONE)
    ) is Outcome.NOT_LINEARIZABLE


def test_acquires_and_releases_alone_are_checked_per_task() -> None:
    history = History(tuple(
        Operation(c, 10 * i, 10 * i + 5, call(c, "acquire", task=t), OK_FALSE)
        for i, (c, t) in enumerate([(0, "s1"), (1, "s2"), (0, "s2"), (1, "s3")])
    ))
    result = check(reference_spec(2), history)  # type: ignore[arg-type]
    assert (result.outcome, result.partitions) == (Outcome.LINEARIZABLE, 3)


def test_reopen_is_not_a_concurrent_operation_and_level_1_is_not_concurrent() -> None:
    names = {s.name for s in concurrent_ops(3)}
    assert names == {n for n, s in OP_SPECS.items() if s.level in (2, 3)} - REOPENS
    assert {"close_reopen", "crash_reopen", "corrupt_record"} <= REOPENS
    with pytest.raises(MisuseError, match="levels"):
        concurrent_ops(1)
    with pytest.raises(MisuseError, match="levels"):
        reference_spec(1)


@pytest.mark.parametrize("level", [2, 3])
def test_the_facade_passes_concurrent_histories(level: int) -> None:
    for seed in range(8):
        run = run_concurrent(InProcess(FacadeAdapter()), level=level, clients=3, seed=seed)
        assert run.violations == () and run.errors == ()
        assert check_run(run).outcome is Outcome.LINEARIZABLE, seed


@pytest.mark.parametrize("variant", sorted(LOCKING_VARIANTS))
def test_every_locking_variant_is_caught_in_process(variant: str) -> None:
    found = hunt(lambda: InProcess(FacadeAdapter(variant)), histories=DEFAULT_HISTORIES, level=2)
    assert found.failed, variant
    assert found.run is not None and found.run.errors == ()  # caught by a check, not a crash


def test_the_facade_in_seed_semantics_passes_against_the_seed_reference() -> None:
    found = hunt(
        lambda: InProcess(FacadeAdapter(semantics="seed")), histories=5, semantics="seed", level=3
    )
    assert not found.failed


def test_after_the_seeds_undefined_behaviour_no_call_returns_as_if_nothing_happened() -> None:
    """A second release frees the task in the seed: the process is gone, and a call that
    began after that answer cannot have seen a live meta; one overlapping it can."""
    gone = {UNDEFINED: "undefined behaviour: use after free of task 0x10-0x1 at release"}
    seed = reference_spec(2, "seed")
    steps = (
        Operation(0, 0, 1, call(0, "register", task="s1"), OK_TRUE),
        Operation(0, 2, 3, call(0, "acquire", task="s1"), OK_TRUE),
        Operation(0, 4, 5, call(0, "release", task="s1"), OK_NONE),
        Operation(0, 6, 7, call(0, "release", task="s1"), gone),
    )
    assert check(seed, History(steps)).outcome is Outcome.LINEARIZABLE  # type: ignore[arg-type]
    after = Operation(1, 8, 9, call(1, "register", task="s2"), OK_TRUE)
    overlapping = Operation(1, 6.5, 9, call(1, "register", task="s2"), OK_TRUE)
    assert check(seed, History((*steps, after))).outcome is Outcome.NOT_LINEARIZABLE  # type: ignore[arg-type]
    assert check(seed, History((*steps, overlapping))).outcome is Outcome.LINEARIZABLE  # type: ignore[arg-type]


def test_no_client_calls_the_seed_facade_after_its_undefined_behaviour() -> None:
    hit = 0
    for seed in range(8):
        run = run_concurrent(InProcess(FacadeAdapter(semantics="seed")), level=3, seed=seed)
        ends = [o.returned for o in run.history.operations if undefined(o)]
        if ends:
            hit += 1
            assert len(ends) == 1 and run.errors == ()  # the seed breaks invariants on purpose
            assert all(o.invoked < ends[0] for o in run.history.operations)  # type: ignore[operator]
    assert hit > 0  # the seeds tried reach it


def test_a_history_of_calls_reads_back_and_bad_ones_are_refused() -> None:
    history = History((
        Operation(0, 0, 4, call(0, "register", task="s1"), OK_TRUE),
        Operation(1, 1, None, call(1, "acquire", task="s1")),
    ))
    obj = history.to_json(Call.to_json)
    assert history_from_json(obj) == history
    obj["operations"][0]["op"]["client"] = 1
    with pytest.raises(MisuseError, match=r"operations\[0\].*client 1"):
        history_from_json(obj)
    obj["operations"][0]["op"]["client"] = True
    with pytest.raises(MisuseError, match=r"operations\[0\]"):
        history_from_json(obj)
