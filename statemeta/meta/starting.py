"""MetaStarting: starting tasks (streamMetaStartAllTasks, streamMetaStartOneTask), the
downstream-ready step and the fill-history launch with its retry timer (streamStart.c).

A task's INIT (INIT_SCANHIST for a fill-history task) is its downstream check. A task that
dispatches to downstream tasks waits for their replies: the check is two-phase, completed by
``complete_event``. A task with nothing downstream completes it inside the same call (reference
section 8.5). Completing it (``_downstream_ready``, doProcessDownstreamReadyRsp) makes the task
downstream-ready, records its ready result and launches its fill-history task, as ``start_all``
does for a stream task that is downstream-ready already (section 8.2): a result for the
fill-history task, INIT_SCANHIST on it, or, while it is not mapped, the retry timer: a LAUNCH
row of the schedule ticking every 100 ms, whose state (launch.py) is the entry's ``launch``.
"""

from __future__ import annotations

import attrs

from statemeta.codec import NO_RELATED_TASK, TaskId
from statemeta.errors import PreconditionError, UnknownTaskError
from statemeta.lifecycle import Outcome, TaskEvent, TaskStatus, should_stop
from statemeta.meta import launch
from statemeta.meta.entry import TaskEntry
from statemeta.meta.preconditions import LifecycleCall, halt_broken, start_one_broken
from statemeta.meta.registry import MetaRegistry, task_id
from statemeta.meta.start_round import StartRound, StartStep
from statemeta.meta.state import TimerKind
from statemeta.semantics import Switch

__all__ = ["MetaStarting"]


class MetaStarting(MetaRegistry):
    """Starting tasks and launching fill-history tasks (see the module docstring)."""

    def start_all(self) -> tuple[tuple[TaskId, StartStep], ...]:
        """streamMetaStartAllTasks: open a round over the listed tasks and start each one.

        A round still open is superseded (its callback never runs). A round over zero tasks,
        or one whose every member has a result already, completes before this returns.
        """
        info = self.state.start
        if not self.state.ids and self.by_count:
            return ()  # M7: the seed returns at once, with no round and no callback
        if info.round is not None:
            info.superseded += 1
        entries = self.state.entries
        info.round = StartRound(tuple(self.state.ids), self.now)
        steps = tuple(
            (tid, self._start_task(entries[tid]) if tid in entries else self._not_acquired(tid))
            for tid in info.round.members
        )
        self._complete_round_if_done()
        return steps

    def start_one(self, stream_id: int, task_id_: int) -> StartStep:
        """streamMetaStartOneTask: start one mapped task (it joins the open round, if any).

        An unmapped task fails to be acquired: a failed result is recorded for it, then
        UnknownTaskError (the seed's TASK_IVLD_STATUS). PreconditionError for a task that is
        downstream-ready already (the seed asserts it is not)."""
        tid = task_id(stream_id, task_id_)
        entry = self.state.entries.get(tid)
        if entry is None:
            self._record_launch(tid, False)
            self._complete_round_if_done()
            raise UnknownTaskError(stream_id, task_id_)
        broken = start_one_broken(entry.task, entry.lifecycle, entry.downstream_ready)
        if broken is not None:
            raise PreconditionError(broken)
        if self.state.start.round is not None:
            self.state.start.round.add_member(entry.id)
        step = self._start_task(entry)
        self._complete_round_if_done()
        return step

    def report_launch(self, stream_id: int, task_id_: int, ready: bool) -> bool:
        """streamMetaAddTaskLaunchResult: False (ignored) outside a round, for a non-member or
        for a member that has a result already (the first one is kept); in the seed (M7) any
        id is taken, once per set."""
        accepted = self._record_launch(task_id(stream_id, task_id_), ready)
        self._complete_round_if_done()
        return accepted

    def all_tasks_ready(self) -> bool:
        """streamMetaAllTasksReady: every listed task is downstream-ready."""
        return all(entry.downstream_ready for entry in self.listed())

    def _not_acquired(self, tid: TaskId) -> StartStep:
        """start_all of a listed id that is not mapped (left by the seed's register, M2): the
        acquire fails, a failed result is recorded."""
        self._record_launch(tid, False)
        return StartStep.FAILED

    def _start_task(self, entry: TaskEntry) -> StartStep:
        status = entry.lifecycle.status
        if should_stop(status):
            self._record_launch(entry.id, False)
            return StartStep.FAILED
        if entry.task.fill_history:
            return StartStep.SKIPPED
        if entry.downstream_ready:
            if entry.task.h_task_id != NO_RELATED_TASK:
                self._launch_fill_history(entry)
            self._record_launch(entry.id, True)
            return StartStep.READY
        outcome = self._handle(entry, TaskEvent.INIT)
        if outcome is Outcome.REJECTED:
            self._record_launch(entry.id, False)
            if entry.task.h_task_id != NO_RELATED_TASK:
                self._record_launch(entry.task.h_task_id, False)
            return StartStep.FAILED
        return StartStep.READY if outcome is Outcome.APPLIED else StartStep.STARTED

    def _require_halt_link(
        self, entry: TaskEntry, event: TaskEvent | None, call: LifecycleCall
    ) -> None:
        """PreconditionError, before anything changes, if ``call`` applies a HALT to a task
        with no fill-history task (preconditions.halt_broken)."""
        broken = halt_broken(entry.task, entry.lifecycle, event, call)
        if broken is not None:
            raise PreconditionError(broken)

    def _handle(self, entry: TaskEntry, event: TaskEvent) -> Outcome:
        """streamTaskHandleEvent; the downstream check of a task with nothing downstream
        (no dispatcher) succeeds inside the call (section 8.5 of the reference)."""
        outcome = entry.lifecycle.handle(event, listener=self._on_status_change)
        if outcome is Outcome.STARTED and not entry.task.dispatches:
            ready = self._downstream_ready(entry, event)
            return outcome if ready is Outcome.REJECTED and self.by_kind else ready
        return outcome

    def _downstream_ready(self, entry: TaskEntry, event: TaskEvent) -> Outcome:
        """doProcessDownstreamReadyRsp: the success step of ``event``; once applied, the task
        is downstream-ready, its ready result is recorded and its fill-history task launched.
        The seed (M14) completes the event of the task's kind, INIT or INIT_SCANHIST, whatever
        ``event`` is, and records and launches even when that completion is refused."""
        if self.by_kind:  # M14
            event = TaskEvent.INIT_SCANHIST if entry.task.fill_history else TaskEvent.INIT
        outcome = entry.lifecycle.complete(event, listener=self._on_status_change)
        if outcome is not Outcome.APPLIED and not self.by_kind:
            return outcome
        if outcome is Outcome.APPLIED:
            entry.downstream_ready = True
        self._record_launch(entry.id, True)
        if entry.task.h_task_id != NO_RELATED_TASK:
            self._launch_fill_history(entry)
        return outcome

    def _launch_fill_history(self, entry: TaskEntry) -> None:
        """streamLaunchFillHistoryTask: a failed result for the fill-history task unless the
        stream task is READY; else a ready result if it is downstream-ready, INIT_SCANHIST on
        it if it is mapped, a failed result if it stops; the retry timer if it is not mapped."""
        h_id = entry.task.h_task_id
        if entry.lifecycle.status is not TaskStatus.READY:
            self._record_launch(h_id, False)
            return
        h_entry = self.state.entries.get(h_id)
        if h_entry is None:
            self._arm_launch(entry, h_id)
        elif should_stop(h_entry.lifecycle.status):
            self._record_launch(h_id, False)
        elif h_entry.downstream_ready:
            self._record_launch(h_id, True)
        else:
            self._handle(h_entry, TaskEvent.INIT_SCANHIST)

    def _arm_launch(self, entry: TaskEntry, h_id: TaskId) -> None:
        """launchNotBuiltFillHistoryTask: (re)start the retry from its first wait; a timer
        already armed is re-armed (taosTmrReset), else timerActive + 1."""
        schedule = self.state.schedule
        if entry.launch is None:
            entry.timer_active += 1
        else:
            for timer in schedule.of_task(entry, TimerKind.LAUNCH):
                schedule.cancel(timer.seq)
        entry.launch = launch.LaunchRetry(h_id)
        self._arm_launch_tick(entry)

    def _arm_launch_tick(self, entry: TaskEntry) -> None:
        self.state.schedule.arm(
            self.now + launch.LAUNCH_TICK_MS, TimerKind.LAUNCH, entry.id, entry.incarnation
        )

    def _fire_launch(self, entry: TaskEntry) -> None:
        """tryLaunchHistoryTask: one tick of the retry (launch.tick says what it does)."""
        retry = entry.launch
        assert retry is not None
        if should_stop(entry.lifecycle.status):
            self._end_launch(entry, retry, failed=True)
            return
        advanced, step = launch.tick(retry)
        entry.launch = advanced
        if step is launch.Tick.GIVE_UP:
            self._end_launch(entry, retry, failed=True)
            self._clear_fill_history_link(entry)
            return
        h_entry = self.state.entries.get(entry.task.h_task_id)
        if step is launch.Tick.WAIT or h_entry is None or should_stop(h_entry.lifecycle.status):
            self._arm_launch_tick(entry)  # not due, or not acquirable yet: the next tick
            return
        self._handle(h_entry, TaskEvent.INIT_SCANHIST)  # checkFillhistoryTaskStatus
        self._end_launch(entry, retry, failed=False)

    def _end_launch(self, entry: TaskEntry, retry: launch.LaunchRetry, *, failed: bool) -> None:
        """The timer ends (timerActive - 1), with a failed result for the fill-history task it
        was launching if ``failed``."""
        entry.launch = None
        if failed:
            self._record_launch(retry.h_task_id, False)
        self._end_task_timer(entry)

    def _clear_fill_history_link(self, entry: TaskEntry) -> None:
        """The retries are exhausted: the stream task forgets its fill-history task. The seed
        clears hTaskInfo.id in memory only (M11); the reference saves and commits the record
        too, so memory and store agree (a failed write leaves the link, and raises)."""
        cleared = attrs.evolve(entry.task, h_task_id=NO_RELATED_TASK)

        def apply() -> None:
            entry.task = cleared

        if self.profile.seed(Switch.LAUNCH_GIVE_UP_NOT_SAVED):  # M11
            apply()
        else:
            self._durably([self.codec.record(cleared)], (), apply)
