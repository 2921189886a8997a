"""The stream-task meta: the sans-IO core, its clocks, views and thread-safe facade."""

from statemeta.meta.clock import Clock, RealClock, Timer, VirtualClock
from statemeta.meta.core import (
    SNODE_HANDLE,
    CheckTrace,
    DropResult,
    LoadReport,
    SkippedRecord,
    StreamMeta,
    TaskHandle,
)
from statemeta.meta.entry import ExpandHook, expand_task
from statemeta.meta.heartbeat import (
    META_HB_CHECK_INTERVAL,
    META_HB_SEND_IDLE_COUNTER,
    HeartbeatTransport,
)
from statemeta.meta.start_round import StartRoundResult, StartRoundView, StartStep
from statemeta.meta.view import DetachedView, HeartbeatView, MetaView, TaskView

__all__ = [
    "META_HB_CHECK_INTERVAL",
    "META_HB_SEND_IDLE_COUNTER",
    "SNODE_HANDLE",
    "CheckTrace",
    "Clock",
    "DetachedView",
    "DropResult",
    "ExpandHook",
    "HeartbeatTransport",
    "HeartbeatView",
    "LoadReport",
    "MetaView",
    "RealClock",
    "SkippedRecord",
    "StartRoundResult",
    "StartRoundView",
    "StartStep",
    "StreamMeta",
    "TaskHandle",
    "TaskView",
    "Timer",
    "VirtualClock",
    "expand_task",
]
