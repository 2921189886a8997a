"""SubprocessAdapter against tiny implementations, good and broken on purpose (in tmp_path).

Every broken one must end in SutError within the timeout, with the child and everything it
started killed and reaped.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from statemeta.errors import SutError
from statemeta.harness.operations import TASK_POOL, Op
from statemeta.harness.subprocess_adapter import SubprocessAdapter, pool_json

TIMEOUT = 0.5

# A minimal implementation; BEHAVIOUR is the body of `misbehave(request)`, which returns True
# when it has handled the request itself (by misbehaving).
_SUT = """\
import json, os, subprocess, sys, time

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n")
    sys.stdout.flush()

def misbehave(request):
{behaviour}
    return False

for line in sys.stdin:
    request = json.loads(line)
    if misbehave(request):
        continue
    op = request["op"]
    if op == "hello":
        result = {{"protocol": 1, "name": "tiny", "levels": [1]}}
    elif op == "view":
        result = {{"level": 1, "tasks": [], "pool": request.get("pool")}}
    elif op in ("start", "stop"):
        result = None
    else:
        result = {{"ok": request["args"]}}
    send({{"id": request["id"], "result": result}})
"""


def _sut(tmp_path: Path, behaviour: str = "    pass") -> str:
    script = tmp_path / "sut.py"
    script.write_text(_SUT.format(behaviour=textwrap.indent(textwrap.dedent(behaviour), "    ")))
    return f"{sys.executable} {script}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


OP = Op.of("handle", task=TASK_POOL[0].name, event="init")


def test_a_good_implementation_round_trips_and_is_reaped_on_close(tmp_path: Path) -> None:
    adapter = SubprocessAdapter(_sut(tmp_path), timeout=TIMEOUT)
    assert adapter.hello() == {"protocol": 1, "name": "tiny", "levels": [1]}
    adapter.start(1)
    assert adapter.call(OP) == {"ok": {"event": "init", "task": TASK_POOL[0].name}}
    assert adapter.view()["tasks"] == []
    adapter.stop()
    adapter.start(1)
    pid = adapter.pid
    assert pid is not None
    adapter.close()
    assert adapter.pid is None
    assert not _alive(pid)
    adapter.close()


def test_start_sends_the_task_pool(tmp_path: Path) -> None:
    behaviour = """\
    if request["op"] == "start":
        global pool
        pool = request["args"]["pool"]
    if request["op"] == "view":
        send({"id": request["id"], "result": {"pool": pool}})
        return True
    """
    with SubprocessAdapter(_sut(tmp_path, behaviour), timeout=TIMEOUT) as adapter:
        adapter.start(1)
        pool = adapter.view()["pool"]
    assert pool == pool_json()
    assert [slot["slot"] for slot in pool] == [slot.name for slot in TASK_POOL]
    assert pool[0]["id"] == [TASK_POOL[0].id.stream_id, TASK_POOL[0].id.task_id]


def test_a_level_the_handshake_did_not_list_is_refused(tmp_path: Path) -> None:
    with (
        SubprocessAdapter(_sut(tmp_path), timeout=TIMEOUT) as adapter,
        pytest.raises(SutError, match=r"supports levels \[1\]"),
    ):
        adapter.start(2)


BROKEN: dict[str, tuple[str, str]] = {
    "crashes": (
        """\
        if request["op"] == "handle":
            sys.stderr.write("boom: out of cheese\\n")
            sys.exit(3)
        """,
        r"closed its stdout before answering \(it exited with status 3\)(.|\n)*boom: out of cheese",
    ),
    "hangs": (
        """\
        if request["op"] == "handle":
            time.sleep(60)
        """,
        r"no response within 0.5 s",
    ),
    "closes its stdout and keeps running": (
        """\
        if request["op"] == "handle":
            sys.stdout.close()
            os.close(1)
            time.sleep(60)
        """,
        r"closed its stdout before answering",
    ),
    "prints garbage": (
        """\
        if request["op"] == "handle":
            print("Segmentation fault (core dumped)", flush=True)
            return True
        """,
        r"answered a line that is not JSON .*: Segmentation fault",
    ),
    "prints half a line and hangs": (
        """\
        if request["op"] == "handle":
            sys.stdout.write('{"id": ')
            sys.stdout.flush()
            time.sleep(60)
        """,
        r"no response within",
    ),
    "answers another request's id": (
        """\
        if request["op"] == "handle":
            send({"id": request["id"] + 7, "result": {"ok": None}})
            return True
        """,
        r"answered id \d+ to request id \d+",
    ),
    "answers with a protocol error": (
        """\
        if request["op"] == "handle":
            send({"id": request["id"], "error": {"code": "unknown_op", "message": "handle?"}})
            return True
        """,
        r"refused it: unknown_op: handle\?",
    ),
    "answers a malformed result": (
        """\
        if request["op"] == "handle":
            send({"id": request["id"], "result": {"okay": 1}})
            return True
        """,
        r"is not an operation result",
    ),
    "answers neither result nor error": (
        """\
        if request["op"] == "handle":
            send({"id": request["id"]})
            return True
        """,
        r"neither \"result\" nor \"error\"",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_implementation_raises_sut_error_and_is_reaped(tmp_path: Path, name: str) -> None:
    behaviour, message = BROKEN[name]
    adapter = SubprocessAdapter(_sut(tmp_path, behaviour), timeout=TIMEOUT)
    adapter.start(1)
    pid = adapter.pid
    assert pid is not None
    began = time.monotonic()
    with pytest.raises(SutError, match=message) as raised:
        adapter.call(OP)
    assert time.monotonic() - began < TIMEOUT + 1.0
    assert "handle" in raised.value.request
    assert adapter.pid is None
    assert not _alive(pid)
    adapter.stop()  # safe after a failure
    adapter.start(1)  # a new child
    assert adapter.pid not in (None, pid)
    adapter.close()


def test_everything_the_child_started_is_killed(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    behaviour = f"""\
    if request["op"] == "handle":
        child = subprocess.Popen(["sleep", "60"])
        open({str(marker)!r}, "w").write(str(child.pid))
        time.sleep(60)
    """
    adapter = SubprocessAdapter(_sut(tmp_path, behaviour), timeout=TIMEOUT)
    adapter.start(1)
    with pytest.raises(SutError):
        adapter.call(OP)
    grandchild = int(marker.read_text())
    deadline = time.monotonic() + 2
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.01)  # init reaps the orphan shortly after the kill
    assert not _alive(grandchild)


ANOTHER_PROTOCOL = (
    "import json, sys; sys.stdin.readline(); "
    'print(json.dumps({"id": 1, "result": {"protocol": 2, "name": "x", "levels": [1]}}))'
)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("statemeta-no-such-command-xyz", r"cannot start: .*No such file"),
        ("unbalanced 'quote", r"cannot start: No closing quotation"),
        (f"{sys.executable} -c 'print(42)'", r"answered 42, not a JSON object"),
        (
            f"{sys.executable} -c '{ANOTHER_PROTOCOL}'",
            r"speaks protocol 2",
        ),
        (f"{sys.executable} -c 'import time; time.sleep(60)'", r"request hello .*: no response"),
    ],
    ids=["missing command", "unparsable command", "not a handshake", "another protocol", "silent"],
)
def test_a_failed_handshake_raises_sut_error(command: str, message: str) -> None:
    adapter = SubprocessAdapter(command, timeout=TIMEOUT)
    with pytest.raises(SutError, match=message):
        adapter.hello()
    assert adapter.pid is None


def test_close_kills_a_child_that_ignores_eof(tmp_path: Path) -> None:
    script = tmp_path / "stays.py"
    script.write_text(_SUT.format(behaviour="    pass") + "time.sleep(60)\n")
    adapter = SubprocessAdapter(f"{sys.executable} {script}", timeout=TIMEOUT)
    adapter.start(1)
    pid = adapter.pid
    assert pid is not None
    adapter.close()
    assert not _alive(pid)
