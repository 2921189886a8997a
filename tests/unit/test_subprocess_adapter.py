"""SubprocessAdapter against tiny implementations, good and broken on purpose (in tmp_path).

Every broken one must end in SutError within the timeout, with the child and everything it
started killed and reaped.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from statemeta.errors import SutError
from statemeta.harness.operations import TASK_POOL, Op
from statemeta.harness.subprocess_adapter import (
    MAX_LINE_BYTES,
    STDERR_TAIL_BYTES,
    SubprocessAdapter,
    pool_json,
)
from statemeta.harness.wire import MAX_JSON_DEPTH

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
        send({"id": request["id"], "result": {"level": 1, "tasks": [], "pool": pool}})
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
    "answers a line longer than the limit": (
        f"""\
        if request["op"] == "handle":
            sys.stdout.write("x" * {MAX_LINE_BYTES + 1})
            sys.stdout.flush()
            time.sleep(60)
        """,
        rf"answered a line longer than {MAX_LINE_BYTES} bytes",
    ),
    "answers JSON nested too deep, then hangs": (
        """\
        if request["op"] == "handle":
            deep = "[" * 100000 + "]" * 100000
            sys.stdout.write('{"id": %d, "result": {"ok": %s}}\\n' % (request["id"], deep))
            sys.stdout.flush()
            time.sleep(60)
        """,
        rf"not JSON .*nested deeper than {MAX_JSON_DEPTH} arrays and objects",
    ),
    "answers the id as a float": (
        """\
        if request["op"] == "handle":
            send({"id": float(request["id"]), "result": {"ok": None}})
            return True
        """,
        r"answered id \d+\.0 to request id \d+",
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


_HELLO = '{"protocol": 1, "name": "x", "levels": [1]}'


def _hello_answer(request_id: str, hello: str = _HELLO) -> str:
    """A command that answers the handshake with these id and result (JSON texts)."""
    line = f'{{"id": {request_id}, "result": {hello}}}'
    return f"{sys.executable} -c 'import sys; sys.stdin.readline(); print({json.dumps(line)})'"


ANOTHER_PROTOCOL = (
    "import json, sys; sys.stdin.readline(); "
    'print(json.dumps({"id": 1, "result": {"protocol": 3, "name": "x", "levels": [1]}}))'
)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("statemeta-no-such-command-xyz", r"cannot start: .*No such file"),
        ("unbalanced 'quote", r"cannot start: No closing quotation"),
        (  # it reads the request first: exiting before it is written is another failure
            f"{sys.executable} -c 'import sys; sys.stdin.readline(); print(42)'",
            r"answered 42, not a JSON object",
        ),
        (
            f"{sys.executable} -c '{ANOTHER_PROTOCOL}'",
            r"answered protocol 3 to a hello of protocol 2",
        ),
        (f"{sys.executable} -c 'import time; time.sleep(60)'", r"request hello .*: no response"),
        (_hello_answer("true"), r"answered id true to request id 1"),
        (_hello_answer("1.0"), r"answered id 1.0 to request id 1"),
        (_hello_answer("1", _HELLO.replace("[1]", "[true]")), r"handshake levels \[True\]"),
        (_hello_answer("1", _HELLO.replace("1,", "true,", 1)), r"answered protocol True"),
        ("  ", r"cannot start: the command is empty"),
    ],
    ids=[
        "missing command",
        "unparsable command",
        "not a handshake",
        "another protocol",
        "silent",
        "id true",
        "id 1.0",
        "level true",
        "protocol true",
        "empty command",
    ],
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


def _one_line_view(tmp_path: Path, result: str) -> str:
    """An implementation whose view is the Python expression ``result`` (of the request),
    written as the response line's ``result`` verbatim."""
    behaviour = f"""\
    if request["op"] == "view":
        sys.stdout.write('{{"id": %d, "result": %s}}\\n' % (request["id"], {result}))
        sys.stdout.flush()
        return True
    """
    return _sut(tmp_path, behaviour)


@pytest.mark.parametrize(("extra", "accepted"), [(0, True), (1, False)])
def test_a_response_line_is_read_up_to_the_limit(
    tmp_path: Path, extra: int, accepted: bool
) -> None:
    """The line (without its newline) may be MAX_LINE_BYTES long, not one byte more."""
    empty = """len('{"id": %d, "result": {"level": 1, "tasks": [], "pad": ""}}' % request[
        "id"])"""
    result = (f"""'{{"level": 1, "tasks": [], "pad": "%s"}}' % ("x" * """
              f"""({MAX_LINE_BYTES + extra} - {empty}))""")
    with SubprocessAdapter(_one_line_view(tmp_path, result), timeout=5) as adapter:
        adapter.start(1)
        if accepted:
            assert len(adapter.view()["pad"]) > MAX_LINE_BYTES - 100
        else:
            with pytest.raises(SutError, match=f"longer than {MAX_LINE_BYTES} bytes"):
                adapter.view()


@pytest.mark.parametrize(("extra", "accepted"), [(0, True), (1, False)])
def test_a_response_may_nest_up_to_the_bound(tmp_path: Path, extra: int, accepted: bool) -> None:
    """The response line may nest MAX_JSON_DEPTH arrays and objects (its own object and the
    view's included), not one more."""
    lists = MAX_JSON_DEPTH - 2 + extra
    deep = f"""("[" * {lists} + "0" + "]" * {lists})"""
    result = f"""'{{"level": 1, "tasks": [], "deep": %s}}' % {deep}"""
    with SubprocessAdapter(_one_line_view(tmp_path, result), timeout=TIMEOUT) as adapter:
        adapter.start(1)
        if accepted:
            assert adapter.view()["deep"] is not None
        else:
            with pytest.raises(SutError, match=f"nested deeper than {MAX_JSON_DEPTH}"):
                adapter.view()


def test_only_a_bounded_tail_of_stderr_is_kept_and_reported(tmp_path: Path) -> None:
    flood = 8 * 1024 * 1024
    behaviour = f"""\
    if request["op"] == "handle":
        sys.stderr.write("e" * {flood} + "\\n" + "last words\\n")
        sys.stderr.flush()
        sys.exit(3)
    """
    adapter = SubprocessAdapter(_sut(tmp_path, behaviour), timeout=5)
    adapter.start(1)
    with pytest.raises(SutError, match="exited with status 3") as raised:
        adapter.call(OP)
    written = flood + len("\nlast words\n")
    tail = raised.value.stderr
    assert tail.endswith("\nlast words")
    note = f"[{written - STDERR_TAIL_BYTES} bytes of stderr before these not shown]"
    assert tail.startswith(note + "\n")
    assert len(str(raised.value)) < STDERR_TAIL_BYTES + 1000


def test_a_failure_quotes_the_last_lines_of_stderr(tmp_path: Path) -> None:
    behaviour = """\
    if request["op"] == "handle":
        sys.stderr.write("".join(f"line {n}\\n" for n in range(1, 101)))
        sys.exit(3)
    """
    adapter = SubprocessAdapter(_sut(tmp_path, behaviour), timeout=5)
    adapter.start(1)
    with pytest.raises(SutError) as raised:
        adapter.call(OP)
    hidden = sum(len(f"line {n}\n") for n in range(1, 81))
    lines = raised.value.stderr.splitlines()
    assert lines[0] == f"[{hidden} bytes of stderr before these not shown]"
    assert lines[1:] == [f"line {n}" for n in range(81, 101)]


def test_a_chatty_stderr_never_blocks_the_implementation(tmp_path: Path) -> None:
    """Far more stderr than a pipe holds, before every response: it is read as it comes."""
    behaviour = """\
    sys.stderr.write("chatter " * 200_000 + "\\n")
    sys.stderr.flush()
    """
    with SubprocessAdapter(_sut(tmp_path, behaviour), timeout=5) as adapter:
        adapter.start(1)
        for _ in range(3):
            assert adapter.call(OP) == {"ok": {"event": "init", "task": TASK_POOL[0].name}}
