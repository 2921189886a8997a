"""Crash campaign: SIGKILL a durable workload at random moments; nothing reported done is lost.

A child process runs meta operations on a real, durable LMDB store (the default of
StreamMeta.open) and prints a line before and after each. The parent kills it after a random
delay, reopens the store and checks that it opens and holds exactly the effect of every
operation reported done, plus, or not, the one operation in flight (it committed or did not:
commits are atomic). The next trial's child continues on the same store, so the store
accumulates every crash of the run.

Trials: ``STATEMETA_CRASH_TRIALS`` (default 12, a few seconds); the campaign profile runs
``STATEMETA_CRASH_TRIALS=200`` (docs/property-suite.md has the command and the numbers).
"""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from statemeta.meta import StreamMeta
from statemeta.tools.inspect import inspect_meta

REPO_ROOT = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("STATEMETA_CRASH_TRIALS", "12"))
SEED = int(os.environ.get("STATEMETA_CRASH_SEED", "20"))
MAX_DELAY = 0.25  # seconds from "ready" to the kill
VG_ID = 7

# op lines: "begin register|unregister|checkpoint STREAM TASK CHECKPOINT", then "done".
CHILD = """
import random, sys
import attrs
from statemeta.codec import StreamTask
from statemeta.meta import StreamMeta

path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
meta = StreamMeta.open(path, 7)
meta.load_all()
live = {(i.stream_id, i.task_id): meta.task(i.stream_id, i.task_id) for i in meta.task_ids()}
print("ready", flush=True)
while True:
    roll = rng.random()
    if not live or (roll < 0.5 and len(live) < 40):
        ids = (rng.randrange(1, 4), rng.randrange(1 << 31))
        if ids in live:
            continue
        task = StreamTask(stream_id=ids[0], task_id=ids[1])
        print("begin register", *ids, 0, flush=True)
        meta.register(task, ver=3)
        live[ids] = task
    elif roll < 0.75:
        ids = rng.choice(sorted(live))
        print("begin unregister", *ids, 0, flush=True)
        meta.unregister(*ids)
        del live[ids]
    else:
        ids = rng.choice(sorted(live))
        task = attrs.evolve(live[ids], checkpoint_id=rng.randrange(1, 1 << 40))
        print("begin checkpoint", *ids, task.checkpoint_id, flush=True)
        meta.save_task(task)
        meta.commit()
        live[ids] = task
    print("done", flush=True)
"""

Stored = dict[tuple[int, int], int]  # task id -> checkpoint id


def _apply(state: Stored, line: str) -> Stored:
    _begin, op, stream_id, task_id, checkpoint_id = line.split()
    ids = (int(stream_id), int(task_id))
    after = dict(state)
    if op == "unregister":
        del after[ids]
    else:
        after[ids] = int(checkpoint_id)
    return after


def _stored(path: Path) -> Stored:
    """What the store holds; StreamMeta.open and load_all must succeed on it too."""
    meta = StreamMeta.open(path, VG_ID)
    try:
        report = meta.load_all()
        assert report.undecodable == ()
    finally:
        meta.close()
    found = inspect_meta(path)
    assert found.bad_records == ()
    return {(t.stream_id, t.task_id): t.checkpoint_id for t in found.tasks}


def _kill_after(path: Path, seed: int, delay: float) -> list[str]:
    """Runs the child, kills it ``delay`` s after it is ready; every line it printed."""
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(seed)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        rest = child.stdout.read()
        assert child.wait(timeout=30) == -signal.SIGKILL
    return rest.splitlines()


def test_sigkill_at_random_points_loses_nothing_reported_done(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    expected: Stored = {}
    outcomes: collections.Counter[str] = collections.Counter()
    operations = 0
    for trial in range(TRIALS):
        lines = _kill_after(tmp_path, rng.randrange(1 << 32), rng.uniform(0, MAX_DELAY))
        in_flight = None
        for line in lines:
            if line == "done":
                assert in_flight is not None
                expected = _apply(expected, in_flight)
                operations += 1
                in_flight = None
            else:
                in_flight = line
        stored = _stored(tmp_path)
        if in_flight is None:
            outcome = "between operations"
            assert stored == expected, f"trial {trial} (seed {SEED})"
        elif stored == expected:
            outcome = f"{in_flight.split()[1]} in flight, not committed"
        else:
            outcome = f"{in_flight.split()[1]} in flight, committed"
            assert stored == _apply(expected, in_flight), f"trial {trial} (seed {SEED})"
        outcomes[outcome] += 1
        expected = stored
    print(
        f"\ncrash campaign: {TRIALS} SIGKILLs, {operations} operations reported done and "
        f"found, {len(expected)} tasks at the end; kills: {dict(sorted(outcomes.items()))}"
    )
    assert sum(outcomes.values()) == TRIALS

