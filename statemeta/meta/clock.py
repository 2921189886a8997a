"""Clocks and timers injected into the meta: a virtual clock for tests, a real one for live use.

The meta core reads no wall clock and starts no thread. It asks its clock for the time in
milliseconds and for one-shot timers; a periodic timer (the heartbeat, a trigger timer) re-arms
itself from its callback, as taosTmrReset does in TDengine.

``VirtualClock`` fires timers only inside ``advance``/``run_next``, in (due time, arming order),
so a run is a pure function of the calls made: the explorer and the property tests rely on it.
``RealClock`` uses ``time.monotonic`` and ``threading.Timer``; its callbacks run on timer
threads, so only the thread-safe facade should be given one.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol

import attrs

from statemeta.arguments import checked_api, validator

TimerCallback = Callable[[], None]


class Timer(Protocol):
    """A one-shot timer handle."""

    def cancel(self) -> None:
        """Stop the timer if it has not fired; no-op otherwise."""
        ...


class Clock(Protocol):
    """Time in milliseconds and one-shot timers."""

    def now_ms(self) -> int: ...

    def call_later(self, delay_ms: int, callback: TimerCallback) -> Timer:
        """Run ``callback`` once, ``delay_ms`` from now."""
        ...


@attrs.define(slots=True, eq=False)
class VirtualTimer:
    """A timer of a VirtualClock; ordered by (due, seq) in the clock's heap."""

    due: int
    seq: int
    callback: TimerCallback
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: VirtualTimer) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)


@checked_api
@attrs.define(slots=True)
class VirtualClock:
    """A deterministic clock: time moves only when the owner calls ``advance`` or ``run_next``."""

    now: int = attrs.field(default=0, validator=validator("now"))
    _heap: list[VirtualTimer] = attrs.field(factory=list, init=False)
    _seq: itertools.count[int] = attrs.field(factory=itertools.count, init=False)

    def now_ms(self) -> int:
        """The virtual time in ms (moves only in ``advance`` and ``run_next``)."""
        return self.now

    def call_later(self, delay_ms: int, callback: TimerCallback) -> VirtualTimer:
        """Arm ``callback`` to fire ``delay_ms`` from now, inside a later ``advance``."""
        if delay_ms < 0:
            raise ValueError(f"timer delay must be >= 0 ms, got {delay_ms}")
        timer = VirtualTimer(self.now + delay_ms, next(self._seq), callback)
        heapq.heappush(self._heap, timer)
        return timer

    @property
    def pending(self) -> int:
        """Timers armed and not cancelled."""
        return sum(1 for t in self._heap if not t.cancelled)

    def next_due(self) -> int | None:
        """When the next live timer fires, or None when none is armed."""
        self._drop_cancelled()
        return self._heap[0].due if self._heap else None

    def run_next(self) -> bool:
        """Jump to the next live timer and fire it; False when none is armed."""
        self._drop_cancelled()
        if not self._heap:
            return False
        timer = heapq.heappop(self._heap)
        self.now = max(self.now, timer.due)
        timer.callback()
        return True

    def advance(self, ms: int) -> int:
        """Move time forward by ``ms``, firing every timer due by then (re-armed ones too).

        Returns how many timers fired.
        """
        if ms < 0:
            raise ValueError(f"time moves forward only, got {ms} ms")
        target = self.now + ms
        fired = 0
        while True:
            self._drop_cancelled()
            if not self._heap or self._heap[0].due > target:
                break
            timer = heapq.heappop(self._heap)
            self.now = timer.due
            timer.callback()
            fired += 1
        self.now = target
        return fired

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)


@attrs.define(slots=True, eq=False)
class RealTimer:
    """A timer of a RealClock (a daemon ``threading.Timer``)."""

    _thread: threading.Timer

    def cancel(self) -> None:
        self._thread.cancel()


@checked_api
class RealClock:
    """Monotonic milliseconds and thread timers, for live use behind the facade."""

    def now_ms(self) -> int:
        """Monotonic milliseconds (not wall-clock time: it never goes back)."""
        return time.monotonic_ns() // 1_000_000

    def call_later(self, delay_ms: int, callback: TimerCallback) -> RealTimer:
        """Run ``callback`` on a daemon timer thread ``delay_ms`` from now."""
        thread = threading.Timer(delay_ms / 1000.0, callback)
        thread.daemon = True
        thread.start()
        return RealTimer(thread)


class WrappedClock:
    """A clock whose timer callbacks run through ``wrap``: as a meta operation (the core's
    heartbeat chain), or under the facade's write lock."""

    __slots__ = ("_clock", "_wrap")

    def __init__(self, clock: Clock, wrap: Callable[[TimerCallback], TimerCallback]) -> None:
        self._clock = clock
        self._wrap = wrap

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def call_later(self, delay_ms: int, callback: TimerCallback) -> Timer:
        return self._clock.call_later(delay_ms, self._wrap(callback))
