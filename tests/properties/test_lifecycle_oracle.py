"""Random event sequences on a few lifecycles, against oracles that do not read the TOML.

The oracles' tables are transcribed by hand from tdengine-stream-meta.md §1.4-§1.5. ``Oracle``'s
rules are DESIGN.md §4 points 2-3 written out plainly (the intended semantics); ``SeedOracle``'s
are streamTaskSm.c at the seed commit as the C code reads (§1.6-§1.8: a ``prev`` struct that
resume swaps with, a waiting array whose element 0 fires while ``taosArrayPop`` removes the
last). One listener shared by every lifecycle keeps a paused count per lifecycle from the
entries into and exits from PAUSE.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from statemeta.errors import PreconditionError
from statemeta.lifecycle import Outcome, StatusChange, TaskEvent, TaskLifecycle, TaskStatus

S, E = TaskStatus, TaskEvent

# Cells of the §1.5 matrix that change (or keep) the status at once: status -> event -> next.
APPLIED_CELLS: dict[TaskStatus, dict[TaskEvent, TaskStatus]] = {
    S.READY: {E.STOP: S.STOP, E.GEN_CHECKPOINT: S.CK, E.PAUSE: S.PAUSE, E.HALT: S.HALT,
              E.DROPPING: S.DROPPING},
    S.DROPPING: {E.STOP: S.STOP, E.PAUSE: S.DROPPING, E.DROPPING: S.DROPPING},
    S.UNINIT: {E.STOP: S.STOP, E.PAUSE: S.PAUSE, E.DROPPING: S.DROPPING},
    S.STOP: {E.STOP: S.STOP, E.PAUSE: S.STOP, E.DROPPING: S.DROPPING},
    S.SCAN_HISTORY: {E.SCANHIST_DONE: S.READY, E.STOP: S.STOP, E.PAUSE: S.PAUSE,
                     E.DROPPING: S.DROPPING},
    S.HALT: {E.STOP: S.STOP, E.HALT: S.HALT, E.DROPPING: S.DROPPING},
    S.PAUSE: {E.STOP: S.STOP, E.PAUSE: S.PAUSE, E.HALT: S.HALT, E.DROPPING: S.DROPPING},
    S.CK: {E.STOP: S.STOP, E.CHECKPOINT_DONE: S.READY, E.DROPPING: S.DROPPING},
}
TWO_PHASE = {(S.UNINIT, E.INIT): S.READY, (S.UNINIT, E.INIT_SCANHIST): S.SCAN_HISTORY}
ATTACHED = {(S.CK, E.HALT): S.READY, (S.CK, E.PAUSE): S.READY, (S.HALT, E.PAUSE): S.READY}
RESUMABLE = (S.PAUSE, S.HALT)
ASSERTS_ACTIVE = (S.SCAN_HISTORY, S.HALT, S.CK)
"""A second phase with nothing active here is a precondition error (the seed asserts)."""
DROPS_WAITING = (S.STOP, S.DROPPING, S.UNINIT)


class Oracle:
    """The intended lifecycle, written plainly from the hand-made tables above."""

    def __init__(self) -> None:
        self.status = S.UNINIT
        self.prev: tuple[TaskStatus | None, TaskEvent | None] = (None, None)
        self.active: TaskEvent | None = None
        self.waiting: list[tuple[TaskStatus, TaskEvent]] = []
        self.saved: list[TaskStatus] = []

    def _move(self, new: TaskStatus, event: TaskEvent | None) -> None:
        old = self.status
        if new not in RESUMABLE:
            self.saved = []
        elif new != old:
            self.saved.append(old)
        self.prev = (old, event)
        self.status = new
        if new in DROPS_WAITING:
            self.waiting = []

    def _drain(self) -> None:
        while self.waiting and self.waiting[0][0] == self.status:
            _, event = self.waiting.pop(0)
            self._move(APPLIED_CELLS[self.status][event], event)

    def handle(self, event: TaskEvent) -> Outcome:
        pair = (self.status, event)
        if pair in TWO_PHASE:
            self.active = event
            return Outcome.STARTED
        if pair in ATTACHED:
            self.active = None
            self.waiting.append((ATTACHED[pair], event))
            return Outcome.PENDING
        if event in APPLIED_CELLS[self.status]:
            self.active = None
            self._move(APPLIED_CELLS[self.status][event], event)
            self._drain()
            return Outcome.APPLIED
        return Outcome.REJECTED

    def accepted(self) -> list[TaskEvent]:
        """The events with a row in the current status (the rest are rejected)."""
        pairs = [*TWO_PHASE, *ATTACHED]
        return [*APPLIED_CELLS[self.status], *(e for s, e in pairs if s is self.status)]

    def complete(self, event: TaskEvent) -> Outcome:
        if self.active is None or self.active != event:
            return Outcome.REJECTED
        self.active = None
        self._move(TWO_PHASE[self.status, event], event)
        self._drain()
        return Outcome.APPLIED

    def resume(self) -> Outcome:
        if self.status not in RESUMABLE:
            return Outcome.REJECTED
        old = self.status
        self.status = self.saved.pop()
        self.prev = (old, None)
        if self.status in DROPS_WAITING:
            self.waiting = []
        self._drain()
        return Outcome.APPLIED

    def _force(self, new: TaskStatus) -> None:
        self.prev = (self.status, None)
        self.status = new
        self.active = None
        self.waiting = []
        self.saved = []

    @property
    def restores(self) -> list[TaskStatus]:
        """What resume restores, innermost last."""
        return self.saved

    def reset(self) -> None:
        self._force(S.UNINIT)

    def set_ready(self) -> Outcome:
        if self.status is S.DROPPING:
            return Outcome.REJECTED
        self._force(S.READY)
        return Outcome.APPLIED


class SeedOracle(Oracle):
    """streamTaskSm.c at the seed, as its C code reads: ``prev`` is a struct that every change
    overwrites (reset excepted) and resume swaps with; nothing else is saved."""

    def __init__(self) -> None:
        super().__init__()
        self.prev = (S.READY, None)  # calloc: prev.state = 0 (READY), prev.evt = 0

    @property
    def restores(self) -> list[TaskStatus]:
        """What a resume would restore: prev.state, in PAUSE or HALT."""
        return [self.prev[0]] if self.status in RESUMABLE and self.prev[0] is not None else []

    def _move(self, new: TaskStatus, event: TaskEvent | None) -> None:  # keepPrevInfo
        self.prev = (self.status, event)
        self.status = new

    def _drain(self) -> None:  # doHandleWaitingEvent, re-entered by each success
        while self.waiting and self.waiting[0][0] == self.status:
            _, event = self.waiting[0]
            self.waiting.pop()  # taosArrayPop: the LAST element
            self._move(APPLIED_CELLS[self.status][event], event)

    def resume(self) -> Outcome:  # streamTaskRestoreStatus: a swap
        if self.status not in RESUMABLE:
            return Outcome.REJECTED
        old = self.status
        assert self.prev[0] is not None
        self.status = self.prev[0]
        self.prev = (old, None)
        self._drain()
        return Outcome.APPLIED

    def reset(self) -> None:  # streamTaskResetStatus: prev untouched
        self.status = S.UNINIT
        self.active = None
        self.waiting = []


TASKS = 2
task_indices = st.integers(min_value=0, max_value=TASKS - 1)
events = st.sampled_from(TaskEvent)


class LifecycleAgainstOracle(RuleBasedStateMachine):
    semantics: ClassVar[str] = "intended"
    oracle: ClassVar[type[Oracle]] = Oracle

    def __init__(self) -> None:
        super().__init__()
        self.paused: dict[int, int] = {}
        self.tasks = [
            TaskLifecycle(self.count_pause, semantics=self.semantics) for _ in range(TASKS)
        ]
        self.oracles = [self.oracle() for _ in range(TASKS)]

    def count_pause(self, task: TaskLifecycle, change: StatusChange) -> None:
        entered = change.old is not S.PAUSE and change.new is S.PAUSE
        left = change.old is S.PAUSE and change.new is not S.PAUSE
        self.paused[id(task)] = self.paused.get(id(task), 0) + entered - left

    @rule(i=task_indices, event=events)
    def handle(self, i: int, event: TaskEvent) -> None:
        assert self.tasks[i].handle(event) is self.oracles[i].handle(event)

    @rule(i=task_indices, data=st.data())
    def advance(self, i: int, data: st.DataObject) -> None:
        """One accepted step, so runs go deep: an event other than STOP and DROPPING (random
        events are mostly rejected or end the task), completing the started event, or resume."""
        oracle = self.oracles[i]
        steps: list[TaskEvent | None] = [
            e for e in oracle.accepted() if e not in (E.STOP, E.DROPPING)
        ]
        if oracle.active is not None or oracle.status in RESUMABLE:
            steps.append(None)
        step = data.draw(st.sampled_from(steps), label="step")
        if step is not None:
            assert self.tasks[i].handle(step) is oracle.handle(step)
        elif oracle.active is not None:
            assert self.tasks[i].complete(oracle.active) is oracle.complete(oracle.active)
        else:
            assert self.tasks[i].resume() is oracle.resume()

    @rule(i=task_indices)
    def to_checkpoint(self, i: int) -> None:
        """INIT, its completion and GEN_CHECKPOINT from UNINIT: queues need CK, six steps in."""
        if self.oracles[i].status is S.UNINIT:
            for step in (E.INIT, None, E.GEN_CHECKPOINT):
                if step is None:
                    assert self.tasks[i].complete(E.INIT) is self.oracles[i].complete(E.INIT)
                else:
                    assert self.tasks[i].handle(step) is self.oracles[i].handle(step)

    @rule(i=task_indices, queued=st.lists(st.sampled_from([E.HALT, E.PAUSE]), max_size=3))
    def queue(self, i: int, queued: list[TaskEvent]) -> None:
        """Several attached events at once (in CK or HALT), so that queues hold more than one."""
        for event in queued:
            assert self.tasks[i].handle(event) is self.oracles[i].handle(event)

    @rule(i=task_indices, event=st.sampled_from([E.STOP, E.DROPPING]))
    def stop_or_drop(self, i: int, event: TaskEvent) -> None:
        """As stop-all and unregister do, whatever the status."""
        assert self.tasks[i].handle(event) is self.oracles[i].handle(event)

    @rule(i=task_indices, event=events)
    def complete(self, i: int, event: TaskEvent) -> None:
        oracle = self.oracles[i]
        if oracle.active is None and oracle.status in ASSERTS_ACTIVE:  # the caller's error
            with pytest.raises(PreconditionError):
                self.tasks[i].complete(event)
        else:
            assert self.tasks[i].complete(event) is oracle.complete(event)

    @rule(i=task_indices)
    def resume(self, i: int) -> None:
        assert self.tasks[i].resume() is self.oracles[i].resume()

    @rule(i=task_indices)
    def reset(self, i: int) -> None:
        self.tasks[i].reset()
        self.oracles[i].reset()

    @rule(i=task_indices)
    def set_ready(self, i: int) -> None:
        assert self.tasks[i].set_ready() is self.oracles[i].set_ready()

    @invariant()
    def same_as_oracle(self) -> None:
        for task, oracle in zip(self.tasks, self.oracles, strict=True):
            assert task.status is oracle.status
            assert (task.prev_status, task.prev_event) == oracle.prev
            assert task.active == oracle.active
            assert list(task.waiting) == oracle.waiting
            assert list(task.saved) == oracle.restores

    @invariant()
    def paused_count(self) -> None:
        for task in self.tasks:
            assert self.paused.get(id(task), 0) == (1 if task.status is S.PAUSE else 0)


class SeedLifecycleAgainstOracle(LifecycleAgainstOracle):
    semantics = "seed"
    oracle = SeedOracle


# Deep states (two events queued in CK, then CHECKPOINT_DONE) need more than 100 runs to be
# reached reliably; a deeper profile keeps its own larger budget.
for _machine in (LifecycleAgainstOracle, SeedLifecycleAgainstOracle):
    _machine.TestCase.settings = settings(max_examples=max(200, settings.default.max_examples))
TestLifecycleAgainstOracle = LifecycleAgainstOracle.TestCase
TestSeedLifecycleAgainstOracle = SeedLifecycleAgainstOracle.TestCase
