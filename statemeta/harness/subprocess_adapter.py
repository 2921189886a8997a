"""SubprocessAdapter: the harness protocol (docs/harness-protocol.md) over a child's stdin/stdout.

Theory of operation
-------------------
One child serves a whole run. ``hello`` is the handshake (sent once, when the child is spawned);
``start(level)`` asks it for a fresh instance, ``stop()`` ends that instance and leaves the
child running for the next one, ``close()`` ends the child. Requests and responses are single
JSON lines; the child's stderr goes to a temporary file whose tail is quoted when it fails.

Every request waits at most ``timeout`` seconds for its response. Whatever goes wrong with the
child (it cannot be started, exits, hangs, closes its stdout, prints a line that is not the JSON
response to this request, or answers with a protocol error) kills the child's whole process
group, reaps it and raises SutError: a broken implementation never hangs the harness, and the
next ``start`` spawns a new child. The command is split like a shell would (``shlex``) but run
without one (write ``sh -c '...'`` for a shell line), in a new session, so that every process
it starts is killed with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import time
from typing import IO, Any, NoReturn

from statemeta.errors import SutError
from statemeta.harness.adapter import PROTOCOL_VERSION
from statemeta.harness.normalize import id_json
from statemeta.harness.operations import LEVELS, TASK_POOL, Op, TaskSlot

__all__ = ["SubprocessAdapter", "pool_json"]

_CLOSE_GRACE_S = 1.0
"""How long ``close()`` lets the child exit on its own after its stdin is closed."""
_EXIT_GRACE_S = 0.2
"""How long a child that closed its stdout is given to exit, so its exit status can be told."""
_STDERR_TAIL_LINES = 20


class SubprocessAdapter:
    """An implementation under test behind the Adapter protocol, run as a child process."""

    def __init__(self, command: str, *, timeout: float = 5.0) -> None:
        self.command = command
        self.timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = bytearray()
        self._selector: selectors.BaseSelector | None = None
        self._next_id = 1
        self._hello: dict[str, Any] | None = None
        self._started = False

    # -- the Adapter protocol ------------------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        """The child's handshake (spawning it if needed): protocol, name and levels."""
        if self._process is None:
            self._spawn()
        assert self._hello is not None
        return self._hello

    def start(self, level: int) -> None:
        """A fresh, empty instance at ``level`` (a level the handshake did not list is refused)."""
        levels = self.hello()["levels"]
        if level not in levels:
            raise SutError(self.command, f"start(level={level})", f"it supports levels {levels}")
        self._request("start", {"level": level, "pool": pool_json()})
        self._started = True

    def call(self, op: Op) -> dict[str, Any]:
        """One operation; the result is ``{"ok": value}`` or ``{"error": "ClassName"}``."""
        wire = op.to_json()
        result = self._request(wire["op"], wire["args"])
        if not _is_op_result(result):
            self._fail(repr(op), f"result {_clip(json.dumps(result))} is not an operation result")
        return result  # type: ignore[no-any-return]

    def view(self) -> dict[str, Any]:
        """The instance's observable state."""
        result = self._request("view", {})
        if not isinstance(result, dict):
            self._fail("view", f"result {_clip(json.dumps(result))} is not a JSON object")
        return result

    def stop(self) -> None:
        """Ends the current instance (the child stays for the next ``start``); always safe."""
        if self._started and self._process is not None:
            self._started = False
            self._request("stop", {})

    # -- the child -----------------------------------------------------------------------------

    def close(self) -> None:
        """Ends the child: EOF on its stdin, then SIGKILL to its process group; always reaps."""
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(_CLOSE_GRACE_S)
        self._kill()

    def __enter__(self) -> SubprocessAdapter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The child's process id (its process group's id too), while it runs."""
        return None if self._process is None else self._process.pid

    def _spawn(self) -> None:
        self._stderr = tempfile.TemporaryFile(prefix="statemeta-sut-stderr-")  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                shlex.split(self.command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                start_new_session=True,
            )
        except (OSError, ValueError) as error:
            self._stderr.close()
            self._stderr = None
            raise SutError(self.command, "spawn", f"cannot start: {error}") from error
        assert self._process.stdout is not None
        os.set_blocking(self._process.stdout.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._process.stdout, selectors.EVENT_READ)
        self._buffer.clear()
        hello = self._request("hello", {"protocol": PROTOCOL_VERSION})
        problem = _hello_problem(hello)
        if problem:
            self._fail("hello", problem)
        self._hello = hello

    def _kill(self) -> None:
        """Kills the process group, reaps the child and forgets it (idempotent)."""
        process, self._process = self._process, None
        self._hello = None
        self._started = False
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _fail(self, request: str, problem: str) -> NoReturn:
        """Kills the child and raises SutError with its stderr's tail."""
        stderr = self._stderr_tail()
        process = self._process
        if process is not None and process.poll() is not None:
            problem += f" (it exited with status {process.returncode})"
        self._kill()
        raise SutError(self.command, request, problem, stderr=stderr)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").splitlines()
        return "\n".join(lines[-_STDERR_TAIL_LINES:])

    # -- one request ---------------------------------------------------------------------------

    def _request(self, op: str, args: dict[str, Any]) -> Any:
        """Sends one request and returns its ``result`` (anything else: SutError)."""
        if self._process is None:
            self._spawn()
        process = self._process
        assert process is not None and process.stdin is not None
        request_id = self._next_id
        self._next_id += 1
        label = f"{op} {json.dumps(args, sort_keys=True)}" if args else op
        line = json.dumps({"id": request_id, "op": op, "args": args}, separators=(",", ":"))
        try:
            process.stdin.write(line.encode() + b"\n")
            process.stdin.flush()
        except OSError as error:
            self._fail(label, f"cannot write the request ({error})")
        reply = self._read_line(label)
        try:
            response = json.loads(reply)
        except ValueError:
            text = _clip(reply.decode("utf-8", "replace"))
            self._fail(label, f"answered a line that is not JSON: {text}")
        problem = _response_problem(response, request_id)
        if problem:
            self._fail(label, problem)
        return response["result"]

    def _read_line(self, label: str) -> bytes:
        """The next line of the child's stdout, within the timeout."""
        assert self._process is not None and self._process.stdout is not None
        assert self._selector is not None
        deadline = time.monotonic() + self.timeout
        fd = self._process.stdout.fileno()
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail(label, f"no response within {self.timeout:g} s")
            if not self._selector.select(remaining):
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(_EXIT_GRACE_S)  # for the exit status, if it is exiting
                self._fail(label, "it closed its stdout before answering")
            self._buffer += chunk


def _slot_json(slot: TaskSlot) -> dict[str, Any]:
    record = slot.record
    return {
        "slot": slot.name,
        "id": id_json(record.id),
        "fill_history": record.fill_history == 1,
        "trigger_param": record.trigger_param,
        "h_task_id": id_json(record.h_task_id),
        "stream_task_id": id_json(record.stream_task_id),
    }


def pool_json() -> list[dict[str, Any]]:
    """The task pool as ``start`` sends it: each slot's name and the record register stores."""
    return [_slot_json(slot) for slot in TASK_POOL]


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _is_op_result(result: object) -> bool:
    """``{"ok": value}`` or ``{"error": "ClassName"}``, either with optional ``"heartbeats"``."""
    if not isinstance(result, dict) or set(result) - {"ok", "error", "heartbeats"}:
        return False
    if ("ok" in result) == ("error" in result):
        return False
    if "error" in result and not isinstance(result["error"], str):
        return False
    heartbeats = result.get("heartbeats", [])
    return isinstance(heartbeats, list) and all(isinstance(h, str) for h in heartbeats)


def _response_problem(response: object, request_id: int) -> str:
    """What is wrong with a response line ("" if it is the result of request ``request_id``)."""
    if not isinstance(response, dict):
        return f"answered {_clip(json.dumps(response))}, not a JSON object"
    if response.get("id") != request_id:
        return f"answered id {response.get('id')!r} to request id {request_id}"
    if "error" in response:
        error = response["error"]
        if isinstance(error, dict):
            return f"refused it: {error.get('code', '?')}: {error.get('message', '')}"
        return f"refused it: {_clip(json.dumps(error))}"
    if "result" not in response:
        return f'answered {_clip(json.dumps(response))} with neither "result" nor "error"'
    return ""


def _hello_problem(hello: object) -> str:
    """What is wrong with a handshake result ("" if this harness can talk to it)."""
    if not isinstance(hello, dict):
        return f"handshake result {_clip(json.dumps(hello))} is not a JSON object"
    if hello.get("protocol") != PROTOCOL_VERSION:
        return f"speaks protocol {hello.get('protocol')!r}, this harness speaks {PROTOCOL_VERSION}"
    levels = hello.get("levels")
    if (
        not isinstance(levels, list)
        or not levels
        or not all(isinstance(level, int) and level in LEVELS for level in levels)
    ):
        return f"handshake levels {levels!r} are not a non-empty list of {LEVELS}"
    if not isinstance(hello.get("name"), str):
        return "handshake has no name"
    return ""
