"""The whole meta under Hypothesis: every operation, crashes and store faults, and after every
step the invariant catalogue (the meta's check mode) plus the durable model
(statemeta.harness.machine). Sized for the ``ci`` profile; ``deep`` runs them long."""

from __future__ import annotations

import functools

from hypothesis import settings

from statemeta.harness.machine import build_machine
from statemeta.harness.reference import ReferenceAdapter


def _sized(examples: int, steps: int) -> settings:
    """The given size under ``ci``; any other profile (``deep``) keeps its own size."""
    if settings.get_current_profile_name() != "ci":
        return settings()
    return settings(max_examples=examples, stateful_step_count=steps)


MemoryMeta = build_machine(3, name="MemoryMeta")
TestMetaOnMemoryStore = MemoryMeta.TestCase
TestMetaOnMemoryStore.settings = _sized(200, 60)

LmdbMeta = build_machine(
    3, reference=functools.partial(ReferenceAdapter, backend="lmdb"), name="LmdbMeta"
)
TestMetaOnLmdbStore = LmdbMeta.TestCase
TestMetaOnLmdbStore.settings = _sized(40, 30)
