"""The start bookkeeping of a meta (STaskStartInfo): one round of launching every listed task.

``start_all`` opens a round over the ids listed at that moment (its members). Results go into
TDengine's two sets, ``ready`` and ``failed``. Each member gets one launch result, ready or
failed; the first result of a member is kept, a result for any other id is ignored. The round
completes when every member still in the meta has a result, and the meta then calls the
start-complete callback once. A round over zero tasks completes at once. TDengine's
``taskStarting`` gate is the round being open: results outside a round are not recorded.

The seed (M7, ``record_seed``) puts any id into the set of its kind unless that set has it
already (taosHashPut with update = false), so one id can be in both sets and a non-member in
either, and the round completes when the two sets together number the map's tasks, compared
as each result is recorded (and only then).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Container, Sized

import attrs

from statemeta.codec import TaskId
from statemeta.identity import ABSOLUTE_TIME, COUNTS_ONLY, OUTSIDE_KEY
from statemeta.views import StartRoundView

__all__ = [
    "LaunchResult",
    "StartCompleteCallback",
    "StartInfo",
    "StartRound",
    "StartRoundResult",
    "StartRoundView",
    "StartStep",
]


class StartStep(enum.Enum):
    """What starting one task did (streamMetaStartAllTasks / streamMetaStartOneTask)."""

    STARTED = "started"
    """INIT started: the task checks its downstream; its result comes by report_launch."""
    READY = "ready"
    """Downstream-ready (already, or at once: nothing downstream): recorded ready."""
    FAILED = "failed"
    """Not acquirable (stopping or dropping) or INIT rejected: recorded failed."""
    SKIPPED = "skipped"
    """A fill-history task: its stream task launches it."""


@attrs.frozen
class LaunchResult:
    """STaskInitTs: when a member's launch began and ended, and whether it succeeded."""

    id: TaskId
    ready: bool
    start_ms: int
    end_ms: int


@attrs.frozen
class StartRoundResult:
    """A completed round, as the start-complete callback receives it."""

    members: tuple[TaskId, ...]
    ready: tuple[TaskId, ...]
    failed: tuple[TaskId, ...]
    started_ms: int
    completed_ms: int


StartCompleteCallback = Callable[[StartRoundResult], None]


@attrs.define(slots=True, eq=False)
class StartRound:
    """One open round."""

    members: tuple[TaskId, ...]
    started_ms: int = attrs.field(metadata={OUTSIDE_KEY: ABSOLUTE_TIME})
    member_set: frozenset[TaskId] = attrs.field(
        init=False, metadata={OUTSIDE_KEY: "the members, as a set"}
    )
    ready: dict[TaskId, LaunchResult] = attrs.field(factory=dict, init=False)
    """pReadyTaskSet: the ready results, in the order recorded."""
    failed: dict[TaskId, LaunchResult] = attrs.field(factory=dict, init=False)
    """pFailedTaskSet."""

    def __attrs_post_init__(self) -> None:
        self.member_set = frozenset(self.members)

    def copy(self) -> StartRound:
        """An independent copy (the two sets are the mutable part)."""
        new = StartRound(self.members, self.started_ms)
        new.ready = dict(self.ready)
        new.failed = dict(self.failed)
        return new

    @property
    def count(self) -> int:
        """|ready| + |failed|: what the seed compares with the map's size."""
        return len(self.ready) + len(self.failed)

    def has_result(self, task_id: TaskId) -> bool:
        return task_id in self.ready or task_id in self.failed

    def add_member(self, task_id: TaskId) -> None:
        """A task started by start_one during the round joins it (it is in the map now)."""
        if task_id not in self.member_set:
            self.members = (*self.members, task_id)
            self.member_set = self.member_set | {task_id}

    def record(self, result: LaunchResult) -> bool:
        """Keeps the first result of a member; False (ignored) for anything else."""
        if result.id not in self.member_set or self.has_result(result.id):
            return False
        (self.ready if result.ready else self.failed)[result.id] = result
        return True

    def record_seed(self, result: LaunchResult) -> bool:
        """The seed (M7): into the set of its kind, unless that set has the id already."""
        kind = self.ready if result.ready else self.failed
        if result.id in kind:
            return False
        kind[result.id] = result
        return True

    def complete(self, mapped: Container[TaskId]) -> bool:
        """Every member still in the meta has a result."""
        return all(self.has_result(m) for m in self.members if m in mapped)

    def counted_out(self, mapped: Sized) -> bool:
        """The seed's verdict (M7), taken as each result is recorded: the results number the
        map's tasks."""
        return self.count == len(mapped)

    def result(self, now_ms: int) -> StartRoundResult:
        """Members in member order, then any other id (only the seed records one) as recorded."""
        return StartRoundResult(
            self.members, _in_order(self.members, self.ready),
            _in_order(self.members, self.failed), self.started_ms, now_ms,
        )


def _in_order(members: tuple[TaskId, ...], results: dict[TaskId, LaunchResult]) -> tuple[
    TaskId, ...
]:
    inside = tuple(m for m in members if m in results)
    if len(inside) == len(results):
        return inside
    return inside + tuple(t for t in results if t not in inside)


@attrs.define(slots=True, eq=False)
class StartInfo:
    """The meta's start bookkeeping across rounds."""

    round: StartRound | None = None
    completed: int = attrs.field(default=0, metadata={OUTSIDE_KEY: COUNTS_ONLY})
    superseded: int = attrs.field(default=0, metadata={OUTSIDE_KEY: COUNTS_ONLY})
    last: StartRoundResult | None = attrs.field(default=None, metadata={
        OUTSIDE_KEY: "the last round's result: only the start-complete callback receives it",
    })

    def copy(self) -> StartInfo:
        r = self.round
        copied = None if r is None else r.copy()
        return StartInfo(copied, self.completed, self.superseded, self.last)

    def view(self) -> StartRoundView:
        r = self.round
        if r is None:
            return StartRoundView(False, (), (), (), self.completed, self.superseded)
        res = r.result(r.started_ms)
        return StartRoundView(
            True, r.members, res.ready, res.failed, self.completed, self.superseded
        )
