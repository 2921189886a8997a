"""The stream-task meta: the sans-IO core and its state, the edge (StreamMeta), its clocks and
the thread-safe facade (docs/architecture.md maps the modules)."""

from statemeta.meta.clock import Clock, RealClock, Timer, VirtualClock
from statemeta.meta.core import SNODE_HANDLE, DropResult, MetaCore, TaskHandle
from statemeta.meta.entry import ExpandHook, expand_task
from statemeta.meta.heartbeat import (
    META_HB_CHECK_INTERVAL,
    META_HB_SEND_IDLE_COUNTER,
    HeartbeatTransport,
)
from statemeta.meta.persist import LoadReport, SkippedRecord
from statemeta.meta.start_round import StartRoundResult, StartStep
from statemeta.meta.state import ArmedTimer, MetaState, TimerKind
from statemeta.meta.stream_meta import StreamMeta
from statemeta.views import (
    CheckTrace,
    DetachedView,
    HeartbeatView,
    MetaView,
    StartRoundView,
    TaskView,
)

__all__ = [
    "META_HB_CHECK_INTERVAL",
    "META_HB_SEND_IDLE_COUNTER",
    "SNODE_HANDLE",
    "ArmedTimer",
    "CheckTrace",
    "Clock",
    "DetachedView",
    "DropResult",
    "ExpandHook",
    "HeartbeatTransport",
    "HeartbeatView",
    "LoadReport",
    "MetaCore",
    "MetaState",
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
    "TimerKind",
    "VirtualClock",
    "expand_task",
]
