"""Issue 34's damage campaign, bounded and seeded: truncations, zeroed pages and bit flips of a
300-task store, each opened read-only (inspect) and read-write: 0 signals, 0 hangs, every
silent change detected (a StoreError naming the file, or the changed records reported); and
inspect beside a committing writer (finding 5): whole snapshots, never a signal.

The cases run in one child process (a signal shows as its exit status, a hang as a timeout).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, random, shutil, struct, sys
from statemeta.codec import encode_task, encode_task_key
from statemeta.errors import StoreError
from statemeta.store import LmdbStore
from statemeta.tools.inspect import inspect_meta
sys.path.insert(0, sys.argv[2])
from meta_support import task

root = sys.argv[1]
rng = random.Random(34)
pristine_dir = os.path.join(root, "pristine")
with LmdbStore.open(pristine_dir, durable=False) as store:
    tasks = store.table("task.db", 16)
    store.begin()
    for n in range(300):
        t = task(n, checkpoint_id=n)
        tasks.upsert(encode_task_key(t.stream_id, t.task_id), encode_task(t))
    store.commit()
    original = dict(tasks.items())
data = open(os.path.join(pristine_dir, "stream", "data.mdb"), "rb").read()
pages = len(data) // 4096
cases = [("cut", rng.randrange(len(data))) for _ in range(10)]
cases += [("zero", rng.randrange(2, pages)) for _ in range(15)]
cases += [("flip", rng.randrange(len(data) * 8)) for _ in range(100)]
counts = {"refused": 0, "reported": 0, "unchanged": 0, "silent": 0}

def silent(rows, reported):
    changed = {k for k, v in rows if original.get(k) != v} | (set(original) - {k for k, _ in rows})
    return changed - reported

for kind, at in cases:
    damaged = bytearray(data)
    if kind == "cut":
        del damaged[at:]
    elif kind == "zero":
        damaged[at * 4096 : (at + 1) * 4096] = bytes(4096)
    else:
        damaged[at // 8] ^= 1 << at % 8
    case = os.path.join(root, "case")
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(os.path.join(case, "stream"))
    open(os.path.join(case, "stream", "data.mdb"), "wb").write(damaged)
    for mode in ("inspect", "write"):
        try:
            if mode == "inspect":
                found = inspect_meta(case)
                reported = {bytes.fromhex(b.key_hex) for b in found.bad_records}
                with LmdbStore.open(case, readonly=True) as reader:
                    rows = list(reader.table("task.db", None).items())
            else:
                with LmdbStore.open(case, durable=False) as writer:
                    rows = list(writer.table("task.db", 16).items())
                reported = {k for k, v in rows if type(v) is not bytes}
        except StoreError as e:
            assert "damaged LMDB data file" in str(e) or case in str(e), str(e)
            counts["refused"] += 1
            continue
        missed = silent(rows, reported)
        if missed:
            counts["silent"] += 1
            print(json.dumps(["silent", kind, at, mode, len(missed)]), flush=True)
        else:
            counts["reported" if reported else "unchanged"] += 1
print(json.dumps(["done", len(cases), counts]), flush=True)
"""


def test_no_damage_kills_hangs_or_goes_unnoticed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), str(Path(__file__).parent)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1][0] == "done" and lines[:-1] == [], lines[:10]
    _done, cases, counts = lines[-1]
    assert cases == 125 and counts["silent"] == 0
    assert counts["refused"] + counts["reported"] > 0, counts


WRITER = r"""
import sys
from statemeta.codec import encode_task, encode_task_key
from statemeta.store import LmdbStore
sys.path.insert(0, sys.argv[2])
from meta_support import task
store = LmdbStore.open(sys.argv[1], durable=False)
tasks = store.table("task.db", 16)
generation = 0
while True:
    store.begin()
    for n in range(300):
        t = task(n, checkpoint_id=generation)
        tasks.upsert(encode_task_key(t.stream_id, t.task_id), encode_task(t))
    store.commit()
    generation += 1
    if generation == 1:
        print("ready", flush=True)
"""

READER = r"""
import json, sys
from statemeta.errors import StoreError
from statemeta.tools.inspect import inspect_meta
for _ in range(15):
    try:
        found = inspect_meta(sys.argv[1])
    except StoreError as e:
        print(json.dumps(["StoreError", str(e)]), flush=True)
        continue
    checkpoints = {t.checkpoint_id for t in found.tasks}
    print(json.dumps([len(found.tasks), len(found.bad_records), len(checkpoints)]), flush=True)
"""


def test_inspect_beside_a_committing_writer_reads_whole_snapshots(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    here = str(Path(__file__).parent)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), here], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        done = subprocess.run([sys.executable, "-c", READER, str(tmp_path)], env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        writer.kill()
        writer.wait(timeout=30)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    reads = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(reads) == 15
    whole = [r for r in reads if r[0] != "StoreError"]
    assert whole and all(r == [300, 0, 1] for r in whole), reads
    assert all("committed twice or more" in r[1] for r in reads if r[0] == "StoreError"), reads
