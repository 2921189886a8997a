"""The start bookkeeping of a meta (STaskStartInfo): one round of launching every listed task.

``start_all`` opens a round over the ids listed at that moment (its members). Each member gets
one launch result, ready or failed; the first result of a member is kept, a result for any other
id is ignored. The round completes when every member still in the meta has a result (not by
counting results against the map size, as the seed does), and the meta then calls the
start-complete callback once. A round over zero tasks completes at once. TDengine's
``taskStarting`` gate is the round being open: results outside a round are not recorded.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Container

import attrs

from statemeta.codec import TaskId
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
    """Already downstream-ready: recorded ready at once."""
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
    started_ms: int
    member_set: frozenset[TaskId] = attrs.field(init=False)
    results: dict[TaskId, LaunchResult] = attrs.field(factory=dict, init=False)

    def __attrs_post_init__(self) -> None:
        self.member_set = frozenset(self.members)

    def copy(self) -> StartRound:
        """An independent copy (the results are the one mutable part)."""
        new = StartRound(self.members, self.started_ms)
        new.results = dict(self.results)
        return new

    def add_member(self, task_id: TaskId) -> None:
        """A task started by start_one during the round joins it (it is in the map now)."""
        if task_id not in self.member_set:
            self.members = (*self.members, task_id)
            self.member_set = self.member_set | {task_id}

    def record(self, result: LaunchResult) -> bool:
        """Keeps the first result of a member; False (ignored) for anything else."""
        if result.id not in self.member_set or result.id in self.results:
            return False
        self.results[result.id] = result
        return True

    def complete(self, mapped: Container[TaskId]) -> bool:
        """Every member still in the meta has a result."""
        return all(m in self.results for m in self.members if m in mapped)

    def result(self, now_ms: int) -> StartRoundResult:
        ready = tuple(m for m in self.members if m in self.results and self.results[m].ready)
        failed = tuple(
            m for m in self.members if m in self.results and not self.results[m].ready
        )
        return StartRoundResult(self.members, ready, failed, self.started_ms, now_ms)


@attrs.define(slots=True, eq=False)
class StartInfo:
    """The meta's start bookkeeping across rounds."""

    round: StartRound | None = None
    completed: int = 0
    superseded: int = 0
    last: StartRoundResult | None = None

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
