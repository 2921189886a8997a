"""A registered task as the meta holds it: the persisted record plus the runtime state.

The record (``StreamTask``) is what task.db stores; everything else here lives only in memory
and starts afresh on every register or load, as ``streamTaskInit`` does in TDengine. An entry
is plain data: its timers are rows of the meta's schedule (state.py), not handles.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from statemeta.codec import StreamTask, TaskId
from statemeta.identity import OUTSIDE_KEY, REGISTRATION
from statemeta.lifecycle import TaskLifecycle
from statemeta.meta.launch import LaunchRetry

ExpandHook = Callable[[StreamTask, int], StreamTask]
"""The meta's ``expandFunc``: the record to keep and store for a task registered (or loaded)
at version ``ver``. It may raise; the registration (or load) then changes nothing."""


def expand_task(task: StreamTask, ver: int) -> StreamTask:
    """streamTaskInit's effect on the record: checkpointVer = ver - 1.

    Loading passes ver = checkpointVer + 1, so a loaded record is kept as stored. The data
    range is left as it is (the seed sets [ver, ver]: spec/divergences.md says why not).
    """
    if task.checkpoint_ver == ver - 1:
        return task
    return attrs.evolve(task, checkpoint_ver=ver - 1)


@attrs.define(slots=True, eq=False)
class TaskEntry:
    """One task in the meta's map (and, once removed while still acquired, a detached one)."""

    id: TaskId = attrs.field(metadata={
        OUTSIDE_KEY: "the map key it is stored under, which the key reads (through the list)",
    })
    task: StreamTask
    lifecycle: TaskLifecycle
    incarnation: int = attrs.field(metadata={OUTSIDE_KEY: REGISTRATION})
    """Which registration or load made this entry; a TaskHandle and the entry's timers name it."""
    next_process_ver: int
    """chkInfo.nextProcessVer (processedVer is one less), set from ``ver`` by streamTaskInit."""
    refcount: int = 1
    """refCnt: 1 for the meta, 1 while the trigger timer holds the task, 1 per acquire."""
    acquires: int = 0
    """Outstanding acquires (handles not yet released)."""
    trigger_held: bool = False
    """The trigger timer's reference (triggerParam != 0 and not fill-history); it stays held
    when the trigger chain ends (the task stops or pauses), until unregister or close."""
    downstream_ready: bool = False
    timer_active: int = 0
    """status.timerActive: task timers armed and not yet ended."""
    drop_pending: bool = False
    """Unregistered while a timer was active: removed when the last timer ends."""
    checkpointing_id: int = 0
    checkpoint_trans_id: int = 0
    failed_checkpoint_id: int = 0
    update_nodes: tuple[int, ...] = ()
    """outputInfo.pDownstreamUpdateList: node ids the next heartbeat reports."""
    launch: LaunchRetry | None = None
    """The fill-history launch retry while its timer runs (its tick is a LAUNCH timer)."""

    def copy(self) -> TaskEntry:
        """An independent copy: every field is an immutable value but the lifecycle."""
        cls = type(self)
        new = object.__new__(cls)
        names = _FIELDS.get(cls)
        if names is None:  # a subclass's fields too (a variant's, a test's)
            names = _FIELDS[cls] = tuple(a.name for a in attrs.fields(cls))
        for name in names:
            object.__setattr__(new, name, getattr(self, name))
        new.lifecycle = self.lifecycle.copy()
        return new


_FIELDS: dict[type[TaskEntry], tuple[str, ...]] = {}
