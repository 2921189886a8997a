"""The implementation's whole process tree ends with the harness, whatever it did to escape.

Each implementation here is a small script written by the test; each records the pids of the
processes it starts in files, so that the test can look for them afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from test_subprocess_adapter import _alive

from statemeta.cli import main
from statemeta.harness.subprocess_adapter import SubprocessAdapter

# A level-1 implementation: the reference behind statemeta.serve, after ESCAPE has run once
# (when it starts). It ignores EOF on its stdin (it sleeps after it) and ignores SIGTERM.
_IMPLEMENTATION = """\
import json, os, signal, subprocess, sys, time
from statemeta.harness.serve import Server
from statemeta.harness.reference import ReferenceAdapter

def record(name, pid):
    path = os.path.join({directory!r}, name)
    with open(path + ".tmp", "w") as out:
        out.write(str(pid))
    os.rename(path + ".tmp", path)

def wait_for(name):
    while not os.path.exists(os.path.join({directory!r}, name)):
        time.sleep(0.01)

signal.signal(signal.SIGTERM, signal.SIG_IGN)
record("implementation", os.getpid())
{escape}
server = Server(ReferenceAdapter(check_invariants=False))
for line in sys.stdin:
    request = json.loads(line)
    {misbehaviour}
    print(json.dumps(server.respond(line)), flush=True)
time.sleep(600)
"""

# A grandchild that leaves the implementation's session and process group.
SETSID = """\
subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(600)"])
"""

# A daemon: forks, the middle process calls setsid, forks again and exits, so the grandchild's
# parent is gone before the harness ever looks at it.
DOUBLE_FORK = """\
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        record("daemon", os.getpid())
        time.sleep(600)
    os._exit(0)
wait_for("daemon")
"""


def _implementation(tmp_path: Path, escape: str = "", misbehaviour: str = "pass") -> str:
    script = tmp_path / "implementation.py"
    script.write_text(
        _IMPLEMENTATION.format(
            directory=str(tmp_path),
            escape=textwrap.dedent(escape),
            misbehaviour=misbehaviour,
        )
    )
    return f"{sys.executable} {script}"


def _pid(tmp_path: Path, name: str) -> int:
    path = tmp_path / name
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, f"{name} never started"
        time.sleep(0.01)
    return int(path.read_text())


def _children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2 :].split()[1]) == pid:
                found.append(int(name))
    return found


def _setsid_grandchild(tmp_path: Path) -> int:
    """The pid of the setsid'd grandchild (the implementation's one child)."""
    implementation = _pid(tmp_path, "implementation")
    deadline = time.monotonic() + 30
    while not (children := _children_of(implementation)):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    (grandchild,) = children
    while os.getsid(grandchild) != grandchild:  # until it has called setsid
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return grandchild


def test_a_setsid_grandchild_ends_with_the_implementation(tmp_path: Path) -> None:
    adapter = SubprocessAdapter(_implementation(tmp_path, SETSID), timeout=30)
    adapter.start(1)
    grandchild = _setsid_grandchild(tmp_path)
    assert os.getpgid(grandchild) != adapter.pid  # out of reach of the process-group kill
    adapter.close()
    assert not _alive(_pid(tmp_path, "implementation"))
    assert not _alive(grandchild)


def test_a_double_forked_daemon_ends_with_the_implementation(tmp_path: Path) -> None:
    adapter = SubprocessAdapter(_implementation(tmp_path, DOUBLE_FORK), timeout=30)
    adapter.start(1)
    daemon = _pid(tmp_path, "daemon")
    adapter.close()
    assert not _alive(daemon)


def test_after_check_ends_the_setsid_grandchild_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = _implementation(tmp_path, SETSID + 'wait_for("check-saw-it")\n')
    run = ["check", "--sut", command, "--level", "1", "--examples", "3", "--steps", "5"]
    # The grandchild is looked up while check runs: the implementation waits for that.
    found: list[int] = []

    def look() -> None:
        found.append(_setsid_grandchild(tmp_path))
        (tmp_path / "check-saw-it").write_text("")

    looking = threading.Thread(target=look)
    looking.start()
    code = main([*run, "--timeout", "30", "--seed", "0"])
    looking.join()
    assert code == 0, capsys.readouterr()
    assert not _alive(found[0])


def test_a_failing_implementation_takes_its_daemon_with_it(tmp_path: Path) -> None:
    misbehaviour = 'if request["op"] == "view": sys.exit(3)'
    adapter = SubprocessAdapter(_implementation(tmp_path, DOUBLE_FORK, misbehaviour), timeout=30)
    adapter.start(1)
    daemon = _pid(tmp_path, "daemon")
    with pytest.raises(Exception, match="exited with status 3"):
        adapter.view()
    assert not _alive(daemon)


def _harness(tmp_path: Path, body: str) -> subprocess.Popen[str]:
    """A harness process running ``body`` (Python), in its own session."""
    return subprocess.Popen(
        [sys.executable, "-c", body],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_sigterm_to_check_ends_an_implementation_that_ignores_eof(tmp_path: Path) -> None:
    hang = 'if request["op"] == "start": time.sleep(600)'
    command = _implementation(tmp_path, SETSID, hang)
    check = _harness(
        tmp_path,
        "import sys; from statemeta.cli import main; "
        f"sys.exit(main(['check', '--sut', {command!r}, '--level', '1', '--timeout', '600']))",
    )
    try:
        implementation = _pid(tmp_path, "implementation")
        grandchild = _setsid_grandchild(tmp_path)
        time.sleep(0.5)  # check is waiting for the start response now
        check.send_signal(signal.SIGTERM)
        _, err = check.communicate(timeout=60)
    finally:
        if check.poll() is None:
            check.kill()
    assert check.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines() == [
        f"interrupted by SIGTERM: ended {command!r} and every process it started"
    ]
    assert not _alive(implementation)
    assert not _alive(grandchild)


def test_an_implementation_outlives_no_harness_killed_by_sigkill(tmp_path: Path) -> None:
    """SIGKILL cannot be handled by the harness; its keeper still ends the tree."""
    command = _implementation(tmp_path, SETSID)
    harness = _harness(
        tmp_path,
        "import time; from statemeta.harness.subprocess_adapter import SubprocessAdapter; "
        f"adapter = SubprocessAdapter({command!r}, timeout=60); adapter.start(1); "
        "print('started', flush=True); time.sleep(600)",
    )
    try:
        assert harness.stdout is not None
        assert harness.stdout.readline() == "started\n"
        implementation = _pid(tmp_path, "implementation")
        grandchild = _setsid_grandchild(tmp_path)
        harness.kill()
        harness.wait()
    finally:
        if harness.poll() is None:
            harness.kill()
    assert _gone_within(implementation, 30)
    assert _gone_within(grandchild, 30)
