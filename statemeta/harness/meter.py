"""Progress of a run whose total is known (``check --concurrent``'s histories): a plain line
every ``interval`` seconds, with the time left estimated from the rate so far, so a log reads
one line per report and a person at a terminal is not left in silence."""

from __future__ import annotations

import time
from typing import TextIO

__all__ = ["Meter"]


class Meter:
    """Counts ``done`` of ``total`` ``unit``; ``tick`` after each prints at most one line per
    ``interval`` (never after the last: the run's summary says that)."""

    def __init__(self, out: TextIO | None, total: int, unit: str, *,
                 interval: float = 5.0) -> None:
        self.out = out
        self.total = total
        self.unit = unit
        self.interval = interval
        self.done = 0
        self.began = time.monotonic()
        self._next = self.began + interval

    def tick(self) -> None:
        self.done += 1
        now = time.monotonic()
        if self.out is None or now < self._next or self.done >= self.total:
            return
        self._next = now + self.interval
        elapsed = now - self.began
        left = elapsed / self.done * (self.total - self.done)
        print(f"  ... {self.done}/{self.total} {self.unit} in {elapsed:.0f} s, about "
              f"{left:.0f} s left", file=self.out, flush=True)
