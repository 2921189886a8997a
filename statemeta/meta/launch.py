"""The retry of a fill-history launch, as data (streamStart.c: launchNotBuiltFillHistoryTask,
tryLaunchHistoryTask; streamTask.c: streamTaskInitForLaunchHTask, streamTaskSetRetryInfoForLaunch).

When a stream task launches its fill-history task and that task is not in the map yet, the
stream task arms a timer (``timerActive + 1``) that ticks every ``LAUNCH_TICK_MS``. A retry is
due after ``wait_interval`` ms (``tick_count`` ticks); the wait starts at 100 ms and grows x1.2
(truncated to whole ms, as the seed's int32) per retry. Each tick is one ``tick`` below; the
meta (core.py) carries out what it says. The seed checks ``retry_times > MAX_RETRIES`` before
counting the retry, so the 41st retry is still made and the tick that would make the 42nd
gives up.
"""

from __future__ import annotations

import enum
import math

import attrs

from statemeta.codec import TaskId

__all__ = ["LAUNCH_TICK_MS", "MAX_RETRIES", "RETRY_RATE", "LaunchRetry", "Tick", "tick"]

LAUNCH_TICK_MS = 100
"""LAUNCH_HTASK_INTERVAL: the timer's period, and the first wait."""
_MIN_WAIT = 100.0
"""WAIT_FOR_MINIMAL_INTERVAL: the wait is counted in ticks of this many ms."""
MAX_RETRIES = 40
"""MAX_RETRY_LAUNCH_HISTORY_TASK."""
RETRY_RATE = 1.2
"""RETRY_LAUNCH_INTERVAL_INC_RATE: the wait's growth per retry."""


class Tick(enum.Enum):
    """What one tick of the launch timer does."""

    WAIT = "wait"
    """The wait is not over: armed again for the next tick."""
    RETRY = "retry"
    """Try again now (the fill-history task is launched if it is mapped by now)."""
    GIVE_UP = "give_up"
    """Retries exhausted: the timer ends, the fill-history task fails, the link is cleared."""


@attrs.frozen
class LaunchRetry:
    """SHistoryTaskInfo's launch fields, and the fill-history task the timer launches."""

    h_task_id: TaskId
    """pInfo->hTaskId: the fill-history task named when the timer was armed."""
    tick_count: int = 1
    """Ticks left before the next retry (ceil(wait_interval / 100))."""
    retry_times: int = 0
    wait_interval: int = LAUNCH_TICK_MS


def tick(retry: LaunchRetry) -> tuple[LaunchRetry, Tick]:
    """One tick of the timer (tryLaunchHistoryTask, once the stream task is known to run on)."""
    count = retry.tick_count - 1
    if count > 0:
        return attrs.evolve(retry, tick_count=count), Tick.WAIT
    if retry.retry_times > MAX_RETRIES:
        return attrs.evolve(retry, tick_count=count), Tick.GIVE_UP
    wait = int(retry.wait_interval * RETRY_RATE)
    advanced = attrs.evolve(
        retry,
        tick_count=math.ceil(wait / _MIN_WAIT),
        retry_times=retry.retry_times + 1,
        wait_interval=wait,
    )
    return advanced, Tick.RETRY
