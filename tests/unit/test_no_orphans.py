"""No process statemeta starts outlives its command, however the command ends (issue 34,
finding 8): ``explore`` and ``verify`` (their forked workers), ``campaign``, and ``explore
--cluster`` (a cluster the test starts: statemeta starts nothing there), each ended by normal
exit, an exception, SIGINT, SIGTERM, SIGHUP and SIGKILL of the command.

A run's processes are found by an environment marker every descendant inherits (never by
name), and none may be left after a short grace period. Signals go to the command's process
only (its workers are not told): the command must end them itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import distributed
import pytest

MARKER = "STATEMETA_TEST_RUN"
GRACE = 5.0
"""Seconds the run's processes have to end after the command did."""
STARTUP = 30.0
"""Seconds a run has to start its workers (the machine is shared)."""

SHORT = ("--stream-tasks", "0", "--max-depth", "3")
"""Bounds whose third level is expanded by the workers: a run of a few seconds."""
LONG = ("--stream-tasks", "1", "--max-depth", "5")
"""Bounds that keep the workers busy long past the signal."""
TINY_VERIFY = ("--no-deep", "--examples", "1", "--steps", "1", "--quiet")

RAISES_IN_A_WORKER = """
from statemeta.explore import search
expand = search._expand_counted
def broken(level, positions, seen, covered):
    if positions.start > 0:
        raise RuntimeError("a worker's bug")
    return expand(level, positions, seen, covered)
search._expand_counted = broken
"""
RAISES_IN_THE_COMMAND = {
    "explore": RAISES_IN_A_WORKER,
    "verify": RAISES_IN_A_WORKER,
    "cluster": """
from statemeta.explore import search
def broken(*args, **kwargs):
    raise RuntimeError("a bug after the cluster's answer")
search._adopt = broken
""",
    "campaign": """
from statemeta.harness import campaign
def broken(report):
    raise RuntimeError("a bug in the report")
campaign.format_campaign = broken
""",
}
RUNNER = "import sys\n{patch}\nfrom statemeta.cli import main\nsys.exit(main(sys.argv[1:]))\n"

ENDINGS = ("exit", "exception", "SIGINT", "SIGTERM", "SIGHUP", "SIGKILL")
COMMANDS = ("explore", "verify", "campaign", "cluster")
FORKS_WORKERS = {"explore", "verify"}


def _argv(command: str, address: str, short: bool) -> list[str]:
    bounds = SHORT if short else LONG
    if command == "explore":
        return ["explore", *bounds, "--workers", "2"]
    if command == "verify":
        return ["verify", *bounds, "--workers", "2", *TINY_VERIFY]
    if command == "cluster":
        return ["explore", *bounds, "--cluster", address]
    examples = "1" if short else "100000"
    return ["campaign", "--examples", examples, "--steps", "5", "--quiet"]


def run_processes(marker: str) -> list[int]:
    """The live processes (not zombies) whose environment holds the run's marker."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                entries = environ.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue  # gone, or not ours
        if needle in entries and state != b"Z":
            found.append(int(name))
    return found


def wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
        host="127.0.0.1",
    ) as local:
        yield local.scheduler_address


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("command", COMMANDS)
def test_no_process_of_the_run_outlives_it(
    command: str, ending: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    address = request.getfixturevalue("address") if command == "cluster" else ""
    marker = uuid.uuid4().hex
    patch = RAISES_IN_THE_COMMAND[command] if ending == "exception" else ""
    short = ending in ("exit", "exception")
    child = subprocess.Popen(
        [sys.executable, "-c", RUNNER.format(patch=patch), *_argv(command, address, short)],
        env={**os.environ, MARKER: marker}, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "stderr").open("wb"),
    )  # not pipes: an orphan holding one would block the test, not fail it
    try:
        if short:
            child.wait(timeout=120)
            stderr = (tmp_path / "stderr").read_bytes()
            if ending == "exception":
                assert child.returncode == 1 and b"RuntimeError" in stderr, stderr[-2000:]
            else:
                assert child.returncode in (0, 1), stderr[-2000:]
        else:
            if command in FORKS_WORKERS:
                started = wait_for(lambda: len(run_processes(marker)) > 1, STARTUP)
                assert started, "the run started no worker"
            else:
                time.sleep(1.5)
            child.send_signal(getattr(signal, ending))
            child.wait(timeout=60)
        left = []
        if not wait_for(lambda: not run_processes(marker), GRACE):
            left = run_processes(marker)
        assert not left, f"{len(left)} processes of the run left: {left}"
    finally:
        for pid in run_processes(marker):
            os.kill(pid, signal.SIGKILL)
        if child.poll() is None:
            child.kill()
            child.wait()


SIGNALS_ELSEWHERE = """
import signal, threading, time
from statemeta.explore import search
threading.Thread(target=threading.Event().wait, daemon=True).start()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
expand_run = search._expand_run
def slow(run):
    time.sleep(600)
    return expand_run(run)
search._expand_run = slow
"""
"""The kernel gives a process's signal to any thread that does not block it: here, always to
a thread that is not the main one (the pool's threads, started later, inherit the block), while
the workers take long enough that no finished run wakes the main thread."""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("ending", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("command", sorted(FORKS_WORKERS))
def test_a_signal_another_thread_receives_still_ends_the_run(
    command: str, ending: str, tmp_path: Path
) -> None:
    """Python handles a signal in the main thread only: one given to another thread while the
    main thread waits for the workers must end the run all the same (seen as a CI hang)."""
    marker = uuid.uuid4().hex
    child = subprocess.Popen(
        [sys.executable, "-c", RUNNER.format(patch=SIGNALS_ELSEWHERE),
         *_argv(command, "", short=False)],
        env={**os.environ, MARKER: marker}, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "stderr").open("wb"),
    )
    try:
        assert wait_for(lambda: len(run_processes(marker)) > 1, STARTUP), "no worker started"
        child.send_signal(getattr(signal, ending))
        child.wait(timeout=30)
        assert wait_for(lambda: not run_processes(marker), GRACE), run_processes(marker)
    finally:
        for pid in run_processes(marker):
            os.kill(pid, signal.SIGKILL)
        if child.poll() is None:
            child.kill()
            child.wait()
