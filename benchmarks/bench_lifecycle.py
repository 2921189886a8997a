"""Lifecycles on the shared machine: create and handle cost, memory per lifecycle.

Every figure is compared with a baseline measured in the same run: creating a lifecycle and
its memory with the bare model a ``transitions`` trigger moves (an object holding just the
status), ``handle`` with a bare trigger on the same shared machine
(``machine.events[name].trigger(model)`` on a detached model) and with a dict lookup. The
goals of create and memory are absolute (20 us, 1 KiB); the goal of handle is a ratio.
Run: ``python -m benchmarks.bench_lifecycle [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from benchmarks._table import print_module
from statemeta.lifecycle import (
    LIFECYCLE_MACHINE,
    TaskEvent,
    TaskLifecycle,
    TaskStatus,
    transition_row,
)

CREATE_GOAL_US = 20.0
MEMORY_GOAL_BYTES = 1024.0
HANDLE_RATIO_GOAL = 1.5


class _BareModel:
    """What a bare transitions trigger moves: just the state attribute."""

    __slots__ = ("status",)

    def __init__(self) -> None:
        self.status = TaskStatus.READY


def _median_us(run: Callable[[], object], operations: int, repeats: int) -> float:
    """Median over ``repeats`` of the time per operation, in microseconds."""
    samples = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) / operations * 1e6)
    return statistics.median(samples)


def _bytes_per(make: Callable[[], object], count: int) -> float:
    """Traced allocation per object that ``make`` returns."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    made = [make() for _ in range(count)]
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(made) == count
    return (after - before) / count


def _busy_lifecycle() -> TaskLifecycle:
    """A lifecycle holding a saved status and a waiting event."""
    task = TaskLifecycle()
    task.handle(TaskEvent.INIT)
    task.complete(TaskEvent.INIT)
    task.handle(TaskEvent.HALT)
    task.handle(TaskEvent.PAUSE)  # queued until READY
    return task


def _row(name: str, value: float, unit: str, baseline: str, baseline_value: float | None,
         goal: str) -> dict[str, Any]:
    ratio = value / baseline_value if baseline_value else None
    return {"name": name, "value": value, "unit": unit, "baseline": baseline,
            "baseline_value": baseline_value, "ratio": ratio, "goal": goal}


def run(quick: bool) -> list[dict[str, Any]]:
    """Measures everything in one run; returns the rows, each against its baseline or goal."""
    count = 10_000 if quick else 100_000
    repeats = 3 if quick else 7

    create_us = _median_us(lambda: [TaskLifecycle() for _ in range(count)], count, repeats)
    bare_create_us = _median_us(lambda: [_BareModel() for _ in range(count)], count, repeats)

    ready = [TaskLifecycle() for _ in range(count)]
    for task in ready:
        task.handle(TaskEvent.INIT)
        task.complete(TaskEvent.INIT)

    def handle_events() -> None:  # count events: READY -> CK -> READY -> ...
        for task in ready:
            task.handle(TaskEvent.GEN_CHECKPOINT)
        for task in ready:
            task.handle(TaskEvent.CHECKPOINT_DONE)

    bare = [_BareModel() for _ in range(count)]
    gen_checkpoint = LIFECYCLE_MACHINE.events["gen_checkpoint"]
    checkpoint_done = LIFECYCLE_MACHINE.events["checkpoint_done"]

    def bare_triggers() -> None:
        for model in bare:
            gen_checkpoint.trigger(model)
        for model in bare:
            checkpoint_done.trigger(model)

    status, event = TaskStatus.READY, TaskEvent.GEN_CHECKPOINT

    def dict_lookups() -> None:
        for _ in range(2 * count):
            transition_row(status, event)

    # Interleave the three so that drift on a shared machine hits them alike.
    handle_samples, bare_samples, dict_samples = [], [], []
    for _ in range(repeats):
        handle_samples.append(_median_us(handle_events, 2 * count, 1))
        bare_samples.append(_median_us(bare_triggers, 2 * count, 1))
        dict_samples.append(_median_us(dict_lookups, 2 * count, 1))
    assert all(t.status is TaskStatus.READY for t in ready)
    handle_us = statistics.median(handle_samples)
    bare_us = statistics.median(bare_samples)
    dict_us = statistics.median(dict_samples)

    bare_bytes = _bytes_per(_BareModel, count)
    return [
        _row("create a lifecycle", create_us, "us", "bare model", bare_create_us,
             f"<= {CREATE_GOAL_US:.0f} us"),
        _row("memory per new lifecycle", _bytes_per(TaskLifecycle, count), "B",
             "bare model", bare_bytes, f"<= {MEMORY_GOAL_BYTES:.0f} B"),
        _row("memory per busy lifecycle (saved + waiting)", _bytes_per(_busy_lifecycle, count),
             "B", "bare model", bare_bytes, f"<= {MEMORY_GOAL_BYTES:.0f} B"),
        _row("handle (applied row)", handle_us, "us", "bare transitions trigger", bare_us,
             f"<= {HANDLE_RATIO_GOAL}x"),
        _row("handle (applied row)", handle_us, "us", "dict lookup", dict_us, ""),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 lifecycles, 3 repeats")
    args = parser.parse_args()
    print_module("lifecycle", run(args.quick))


if __name__ == "__main__":
    main()
