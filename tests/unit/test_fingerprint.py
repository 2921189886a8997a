"""The seen set's fingerprints: a function of the key's value, the same in every process, and
the search over fingerprints finds exactly the states the keys tell apart."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from statemeta.explore import search
from statemeta.explore.bounds import Bounds
from statemeta.explore.search import ForkableReference
from statemeta.explore.state import (
    FINGERPRINT_BITS,
    StateAbstraction,
    collision_probability,
    fingerprint,
)
from statemeta.harness.operations import TASK_POOL, Op
from statemeta.lifecycle import TaskStatus

SMALL = Bounds(stream_tasks=2, fill_history=True, role_changes=1, start_rounds=1, reopens=1,
               faults=1, clock_advances=1, max_depth=2)


def _key_of(*ops: Op) -> object:
    adapter = ForkableReference()
    adapter.start(3)
    for op in ops:
        adapter.call(op)
    return StateAbstraction(TASK_POOL, symmetry=False).key(adapter)


def test_equal_keys_built_from_distinct_objects_share_a_fingerprint() -> None:
    name = "".join(["ab", "cd"])
    copy = "".join(["abc", "d"])
    assert name is not copy
    shared = (name, name, TaskStatus.READY, (1, None, True))
    apart = (name, copy, TaskStatus.READY, (1, None, True))
    assert fingerprint(shared) == fingerprint(apart)
    assert fingerprint(shared) != fingerprint((name, name, TaskStatus.PAUSE, (1, None, True)))


def test_a_fingerprint_is_the_same_in_another_process() -> None:
    """Strings hash differently from process to process (PYTHONHASHSEED): a fingerprint
    built on ``hash`` would differ here."""
    key = _key_of(Op.of("register", task="s1"), Op.of("handle_event", event="pause", task="s1"))
    script = (
        "from statemeta.explore.state import StateAbstraction, fingerprint\n"
        "from statemeta.explore.search import ForkableReference\n"
        "from statemeta.harness.operations import TASK_POOL, Op\n"
        "a = ForkableReference(); a.start(3)\n"
        "a.call(Op.of('register', task='s1'))\n"
        "a.call(Op.of('handle_event', event='pause', task='s1'))\n"
        "print(fingerprint(StateAbstraction(TASK_POOL, symmetry=False).key(a)))\n"
    )
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                             capture_output=True, text=True).stdout
        assert int(out) == fingerprint(key)
    assert 0 <= fingerprint(key) < 2**FINGERPRINT_BITS


def test_the_search_keeps_one_fingerprint_per_distinct_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every key the search computes, fingerprinted: as many fingerprints as distinct keys
    (no state split in two, none merged with another); every node (a state's fingerprint with
    the budgets left) likewise; and, without subsumption, as many nodes explored as distinct
    nodes met."""
    keys: set[object] = set()
    nodes: set[tuple[int, object]] = set()
    key, node = search._key, search._node

    def record_key(abstraction: Any, system: Any) -> Any:
        found = key(abstraction, system)
        keys.add(found[0])
        return found

    def record_node(state: int, left: Any) -> int:
        nodes.add((state, left))
        return node(state, left)

    monkeypatch.setattr(search, "_key", record_key)
    monkeypatch.setattr(search, "_node", record_node)
    result = search.explore(SMALL, subsume=False)
    assert len({fingerprint(k) for k in keys}) == len(keys)
    assert len({node(s, left) for s, left in nodes}) == len(nodes)
    # the nodes dropped as seen are among them: each distinct node is explored once
    assert result.stats.states == len(nodes)
    assert len(nodes) > len(keys)  # budgets do tell nodes of one state apart


def test_the_collision_probability_is_n_squared_over_two_to_the_bits_plus_one() -> None:
    assert collision_probability(1) == 0.0
    assert collision_probability(2**20) == 2**20 * (2**20 - 1) / 2.0 ** (FINGERPRINT_BITS + 1)
    assert collision_probability(17_466) < 1e-11
