from __future__ import annotations

import random
import sys
import threading
from pathlib import Path

from meta_support import lmdb_factory, task

from statemeta import invariants
from statemeta.errors import ReleaseError
from statemeta.lifecycle import TaskEvent
from statemeta.meta import VirtualClock
from statemeta.meta.facade import ThreadSafeStreamMeta
from statemeta.meta.rwlock import RWLock

THREADS = 6
STEPS = 2000


def worker(meta: ThreadSafeStreamMeta, seed: int, errors: list[BaseException]) -> None:
    rng = random.Random(seed)
    held = []
    try:
        for _ in range(STEPS):
            tid = rng.randrange(1, 9)
            op = rng.randrange(7)
            if op == 0:
                meta.register(task(tid, trigger_param=rng.choice([0, 50])), 5)
            elif op == 1 and (handle := meta.acquire(0x10, tid)) is not None:
                held.append(handle)
            elif op == 2 and held:
                meta.release(held.pop(rng.randrange(len(held))))
            elif op == 3 and tid in {t.task_id for t in meta.task_ids()}:
                try:
                    meta.handle_event(0x10, tid, TaskEvent.PAUSE)
                    meta.resume(0x10, tid)
                except KeyError:  # unregistered meanwhile
                    pass
            elif op == 4:
                meta.unregister(0x10, tid)
            elif op == 5:
                meta.view()
            else:
                meta.advance(20)
        for handle in held:
            meta.release(handle)
    except BaseException as e:  # reported by the test thread
        errors.append(e)


def test_threads_keep_every_invariant(tmp_path: Path) -> None:
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the threads often
    try:
        run_threads(tmp_path)
    finally:
        sys.setswitchinterval(switch)


def run_threads(tmp_path: Path) -> None:
    meta = ThreadSafeStreamMeta.open(tmp_path, 7, clock=VirtualClock(), store_factory=lmdb_factory)
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=worker, args=(meta, seed, errors)) for seed in range(THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    invariants.check_invariants(meta.core)
    view = meta.view()
    assert all(t.acquires == 0 and t.refcount >= 1 for t in view.tasks)
    assert view.detached == ()
    meta.close()


def test_release_error_through_the_facade(tmp_path: Path) -> None:
    meta = ThreadSafeStreamMeta.open(tmp_path, 7, clock=VirtualClock(), store_factory=lmdb_factory)
    meta.register(task(1), 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    meta.release(handle)
    try:
        meta.release(handle)
    except ReleaseError:
        pass
    else:
        raise AssertionError("a second release must raise")
    assert meta.refcount(0x10, 1) == 1
    meta.close()


def test_waiting_writer_goes_before_new_readers() -> None:
    lock = RWLock()
    order: list[str] = []
    lock.acquire_read()
    writer = threading.Thread(
        target=lambda: (lock.acquire_write(), order.append("w"), lock.release_write())
    )
    writer.start()
    while not lock._writers_waiting:
        pass
    reader = threading.Thread(
        target=lambda: (lock.acquire_read(), order.append("r"), lock.release_read())
    )
    reader.start()
    lock.release_read()
    writer.join(5)
    reader.join(5)
    assert order == ["w", "r"]


def test_real_clock_timers_fire_under_the_lock_and_finish_a_deferred_drop(tmp_path: Path) -> None:
    """The live path: RealClock timer threads run the meta's callbacks through the facade."""
    import time

    meta = ThreadSafeStreamMeta.open(tmp_path, 7, store_factory=lmdb_factory, check_invariants=True)
    try:
        assert meta.register(task(1), 5)
        meta.start_task_timer(0x10, 1, delay_ms=30)
        assert meta.unregister(0x10, 1).name == "DEFERRED"  # the timer is still active
        assert [t.task_id for t in meta.task_ids()] == [1]
        deadline = time.monotonic() + 5.0
        while meta.task_ids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert meta.task_ids() == ()  # removed by the timer thread when its timer ended
        invariants.check_invariants(meta.core)
    finally:
        meta.close()
