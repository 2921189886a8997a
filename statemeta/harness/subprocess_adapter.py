"""SubprocessAdapter: the harness protocol (docs/harness-protocol.md) over a child's stdin/stdout.

Theory of operation
-------------------
One child serves a whole run. ``hello`` is the handshake (when the child is spawned: protocol 2
offered, then 1 if the child refuses 2; statemeta.harness.observation reads its declaration);
``start(level)`` asks it for a fresh instance, ``stop()`` ends that instance and leaves the
child running for the next one, ``close()`` ends the child. Requests and responses are single
JSON lines.

The command is split like a shell would (``shlex``) but run without one (write ``sh -c '...'``
for a shell line), under statemeta.harness.keeper: a small process between the harness and the
implementation that ends the implementation's whole process tree (setsid'd grandchildren and
double-forked daemons included) when the harness closes it, or when the harness dies.

Every request waits at most ``timeout`` seconds for its response (a new child's first one at
least STARTUP_S: starting an interpreter and importing is not a hang), and reads at most
MAX_LINE_BYTES of it: memory stays bounded whatever the child prints. Its stderr is read
alongside (so a chatty child never blocks on a full pipe) into a tail of the last
STDERR_TAIL_BYTES, quoted when it fails. Whatever goes wrong with the child (it cannot be
started, exits, hangs, closes its stdout, prints a line that is too long, not JSON, nested
deeper than MAX_JSON_DEPTH or not the response to this request, or answers with a protocol
error) ends its process tree and raises SutError: a broken implementation never hangs the
harness, and the next ``start`` spawns a new child. The ``fault`` answer (the call hit
undefined behaviour or a fatal internal error) is SutFault, the same way. So does anything
that interrupts a request half-way (a signal's exception): the child's next line could not be
trusted.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from statemeta.errors import MisuseError, SutError, SutFault
from statemeta.harness import keeper
from statemeta.harness.adapter import PROTOCOL_VERSIONS
from statemeta.harness.normalize import id_json
from statemeta.harness.observation import Observation
from statemeta.harness.operations import LEVELS, TASK_POOL, Op, TaskSlot
from statemeta.harness.wire import MAX_JSON_DEPTH, is_int, is_op_result, loads_bounded

__all__ = ["MAX_LINE_BYTES", "STDERR_TAIL_BYTES", "SubprocessAdapter", "pool_json"]

R = TypeVar("R")

MAX_LINE_BYTES = 4 * 1024 * 1024
"""The longest response line read (without its newline); a longer one fails the run."""
STDERR_TAIL_BYTES = 64 * 1024
"""How much of the child's stderr is kept (the last bytes); the rest is counted, not kept."""
STDERR_TAIL_LINES = 20
"""How many lines of that tail a failure quotes."""

_REFUSED = object()
"""What ``_request`` returns for a request refused with the code it was told to expect."""
_CHUNK = 64 * 1024
_LABELS_SHOWN = 3
"""Requests waiting that a failure of ``receive`` names (K may wait: naming all costs K)."""
_CLOSE_GRACE_S = 1.0
"""How long ``close()`` lets the child exit on its own after its stdin is closed."""
_EXIT_GRACE_S = 0.5
"""How long a child that closed its stdout is given to exit, so its exit status can be told."""
STARTUP_S = 10.0
"""The least a new child's first response is waited for, whatever ``timeout`` says."""
_KEEPER_START_S = 10.0
"""How long the keeper may take to start the command and say so (it starts in milliseconds)."""
_KEEPER_END_S = 5.0
"""How long the keeper may take to end the tree before it is killed itself."""
_KEEPER = Path(keeper.__file__)


class _StderrTail:
    """The last STDERR_TAIL_BYTES bytes of the child's stderr, and how many came before."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.kept += chunk
        excess = len(self.kept) - STDERR_TAIL_BYTES
        if excess > 0:
            del self.kept[:excess]
            self.dropped += excess

    def text(self) -> str:
        """Its last STDERR_TAIL_LINES lines, after a note of how many bytes are not shown."""
        lines = self.kept.splitlines(keepends=True)
        shown = b"".join(lines[-STDERR_TAIL_LINES:])
        hidden = self.dropped + len(self.kept) - len(shown)
        text = shown.decode("utf-8", "replace").rstrip("\n")
        return f"[{hidden} bytes of stderr before these not shown]\n{text}" if hidden else text


class SubprocessAdapter:
    """An implementation under test behind the Adapter protocol, run as a child process."""

    def __init__(self, command: str, *, timeout: float = 5.0) -> None:
        self.command = command
        self.timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        """The keeper, whose stdin, stdout and stderr are the implementation's."""
        self._control: socket.socket | None = None
        self._pid: int | None = None
        self._stderr = _StderrTail()
        self._stderr_open = False
        self._buffer = bytearray()
        self._answered = False
        """Whether this child has answered a request yet (before that, STARTUP_S applies)."""
        self._selector: selectors.BaseSelector | None = None
        self._next_id = 1
        self._hello: dict[str, Any] | None = None
        self._started = False
        self._observation: Observation | None = None
        """What the started instance declares it observes (the views are read against it)."""
        self._pending: dict[int, str] = {}
        """Requests sent and not answered yet (``send``), by id: what each asked, for errors."""

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
        self._observation = Observation.of_hello(self.hello(), level)

    def call(self, op: Op) -> dict[str, Any]:
        """One operation; the result is ``{"ok": value}`` or ``{"error": "ClassName"}``."""
        wire = op.to_json()
        result = self._request(wire["op"], wire["args"])
        if not is_op_result(result):
            self._fail(repr(op), f"result {_clip(json.dumps(result))} is not an operation result")
        return result  # type: ignore[no-any-return]

    # -- concurrent clients --------------------------------------------------------------------

    @property
    def concurrent(self) -> bool:
        """Whether the handshake declared ``"concurrent": true`` (requests from many clients
        without waiting, answered in any order)."""
        return self.hello().get("concurrent") is True

    def send(self, op: Op, client: int) -> int:
        """Sends ``op`` for ``client`` without waiting for the response; returns its id (a
        concurrent implementation only: ``concurrent``)."""
        if not self.concurrent:
            raise SutError(self.command, repr(op), "its handshake does not declare concurrent")
        wire = op.to_json()
        request_id = self._next_id
        self._next_id += 1
        label = f"client {client}: {op!r}"
        line = {"id": request_id, "client": client, "op": wire["op"], "args": wire["args"]}
        self._guarded(lambda: self._write_line(line, label))
        self._pending[request_id] = label
        return request_id

    def receive(self) -> tuple[int, dict[str, Any]]:
        """The next response to a request ``send`` sent: its id and its operation result."""
        if not self._pending:
            raise SutError(self.command, "receive", "no request is waiting for a response")
        labels = " / ".join(itertools.islice(self._pending.values(), _LABELS_SHOWN))
        if len(self._pending) > _LABELS_SHOWN:
            labels += f" (and {len(self._pending) - _LABELS_SHOWN} more waiting)"
        response = self._guarded(lambda: self._read_response(labels))
        request_id = response.get("id")
        label = self._pending.pop(request_id, None) if is_int(request_id) else None
        if label is None:
            self._fail(labels, f"answered id {_clip(json.dumps(request_id))}, which no "
                       f"request waiting has ({sorted(self._pending)})")
        problem = _response_problem(response, request_id)
        if problem:
            self._fail(label, problem, fault=_is_fault(response, request_id))
        result = response["result"]
        if not is_op_result(result):
            self._fail(label, f"result {_clip(json.dumps(result))} is not an operation result")
        return request_id, result

    def view(self) -> dict[str, Any]:
        """The instance's observable state, holding every key it declares (a key missing or
        of another kind: SutError naming the key and the value)."""
        result = self._request("view", {})
        if not isinstance(result, dict):
            self._fail("view", f"result {_clip(json.dumps(result))} is not a JSON object")
        problem = None if self._observation is None else self._observation.problem(result)
        if problem:
            self._fail("view", f"answered a view the harness cannot read: {problem}")
        return result

    def stop(self) -> None:
        """Ends the current instance (the child stays for the next ``start``); always safe."""
        if self._started and self._process is not None:
            self._started = False
            self._request("stop", {})

    # -- the child -----------------------------------------------------------------------------

    def close(self) -> None:
        """Ends the child: EOF on its stdin, a grace period, then its whole process tree."""
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            self._await_exit(_CLOSE_GRACE_S)
        finally:
            self._kill()  # also when a signal's exception cuts the grace period short

    def __enter__(self) -> SubprocessAdapter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The implementation's process id (its process group's id too), while it runs."""
        return self._pid

    def _spawn(self) -> None:
        try:
            argv = shlex.split(self.command)
        except ValueError as error:
            raise SutError(self.command, "spawn", f"cannot start: {error}") from error
        if not argv:
            raise SutError(self.command, "spawn", "cannot start: the command is empty")
        self._control, keeper_end = socket.socketpair()
        self._stderr = _StderrTail()
        self._buffer.clear()
        self._answered = False
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_KEEPER), str(keeper_end.fileno()), *argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(keeper_end.fileno(),),
                start_new_session=True,
            )
        except OSError as error:
            self._control.close()
            self._control = None
            raise SutError(self.command, "spawn", f"cannot start the keeper: {error}") from error
        finally:
            keeper_end.close()
        assert self._process.stdout is not None and self._process.stderr is not None
        assert self._process.stdin is not None
        os.set_blocking(self._process.stdin.fileno(), False)  # _write_line reads while it waits
        os.set_blocking(self._process.stdout.fileno(), False)
        os.set_blocking(self._process.stderr.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._process.stdout, selectors.EVENT_READ)
        self._selector.register(self._process.stderr, selectors.EVENT_READ)
        self._stderr_open = True
        started = self._keeper_report()
        if not started.startswith("started "):
            self._fail("spawn", started or "the keeper did not start it")
        self._pid = int(started.split()[1])
        self._hello = self._handshake()

    def _handshake(self) -> dict[str, Any]:
        """``hello``, offering each version of PROTOCOL_VERSIONS in turn: one the child refuses
        with ``unsupported_protocol`` is followed by the next. The child may also answer an
        older version it speaks (protocol 1 means everything observed)."""
        for protocol in PROTOCOL_VERSIONS:
            hello = self._request("hello", {"protocol": protocol}, refusal="unsupported_protocol")
            if hello is not _REFUSED:
                problem = _hello_problem(hello, protocol)
                if problem:
                    self._fail("hello", problem)
                return hello  # type: ignore[no-any-return]
        self._fail("hello", f"refused every protocol this harness speaks, {PROTOCOL_VERSIONS}")

    def _keeper_report(self) -> str:
        """The keeper's one line: ``started PID`` or ``cannot start: why`` ("" if it died)."""
        assert self._control is not None
        self._control.settimeout(_KEEPER_START_S)
        report = bytearray()
        with contextlib.suppress(OSError):
            while not report.endswith(b"\n") and len(report) < 4096:
                chunk = self._control.recv(4096)
                if not chunk:
                    break
                report += chunk
        return report.decode("utf-8", "replace").strip()

    def _kill(self) -> None:
        """Ends the implementation's process tree, reaps the keeper, forgets both (idempotent)."""
        process, self._process = self._process, None
        control, self._control = self._control, None
        pid, self._pid = self._pid, None
        self._hello = None
        self._started = False
        self._pending = {}
        if control is not None:
            control.close()  # the keeper's signal to end the tree
        if process is None:
            return
        try:
            process.wait(_KEEPER_END_S)
        except subprocess.TimeoutExpired:
            process.kill()
            if pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            process.wait()
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def _fail(self, request: str, problem: str, *, fault: bool = False) -> NoReturn:
        """Ends the child and raises SutError with its stderr's tail (``fault``: SutFault, the
        implementation's own report of undefined behaviour or a fatal internal error)."""
        process = self._process
        if process is not None and process.poll() is not None:
            problem += f" (it exited with status {process.returncode})"
        self._kill()
        error = SutFault if fault else SutError
        raise error(self.command, request, problem, stderr=self._stderr.text())

    # -- reading the child's output ------------------------------------------------------------

    def _read_stderr(self) -> None:
        """Whatever the child's stderr holds now, into the tail (at end-of-file: stop watching)."""
        assert self._process is not None and self._process.stderr is not None
        assert self._selector is not None
        try:
            chunk = os.read(self._process.stderr.fileno(), _CHUNK)
        except BlockingIOError:
            return
        if chunk:
            self._stderr.add(chunk)
        else:
            self._selector.unregister(self._process.stderr)
            self._stderr_open = False

    def _await_exit(self, seconds: float) -> None:
        """Reads stderr until the child's tree has let go of it, then waits for the keeper's
        exit (which follows the implementation's), ``seconds`` in all at most."""
        assert self._process is not None and self._process.stderr is not None
        deadline = time.monotonic() + seconds
        stderr = self._process.stderr.fileno()
        while self._stderr_open and (remaining := deadline - time.monotonic()) > 0:
            if select.select([stderr], [], [], remaining)[0]:
                self._read_stderr()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(max(deadline - time.monotonic(), 0.0))

    # -- one request ---------------------------------------------------------------------------

    def _request(self, op: str, args: dict[str, Any], *, refusal: str = "") -> Any:
        """Sends one request and returns its ``result`` (anything else: SutError; a protocol
        error of code ``refusal``: _REFUSED). Interrupted half-way (a signal's exception), it
        ends the child before passing the exception on."""
        if self._process is None:
            self._spawn()
        request_id = self._next_id
        self._next_id += 1
        label = f"{op} {json.dumps(args, sort_keys=True)}" if args else op
        return self._guarded(lambda: self._exchange(request_id, op, args, label, refusal))

    def _guarded(self, body: Callable[[], R]) -> R:
        """``body()``; interrupted half-way (a signal's exception), the child is ended first."""
        try:
            return body()
        except SutError:
            raise
        except BaseException:
            self._kill()
            raise

    def _exchange(
        self, request_id: int, op: str, args: dict[str, Any], label: str, refusal: str = ""
    ) -> Any:
        self._write_line({"id": request_id, "op": op, "args": args}, label)
        response = self._read_response(label)
        if refusal and _refused(response, request_id, refusal):
            return _REFUSED
        problem = _response_problem(response, request_id)
        if problem:
            self._fail(label, problem, fault=_is_fault(response, request_id))
        return response["result"]

    def _write_line(self, request: dict[str, Any], label: str) -> None:
        """Writes the request line, within the timeout; while the child's stdin is full, reads
        what it says meanwhile (responses into the buffer ``_read_line`` takes lines from), so
        a child blocked writing responses never blocks the harness writing requests."""
        process = self._process
        assert process is not None and process.stdin is not None
        assert process.stdout is not None and process.stderr is not None
        data = memoryview(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        stdin, stdout, stderr = (p.fileno() for p in (process.stdin, process.stdout,
                                                      process.stderr))
        wait = self.timeout if self._answered else max(self.timeout, STARTUP_S)
        deadline = time.monotonic() + wait
        while data:
            try:
                data = data[os.write(stdin, data):]
                continue
            except BlockingIOError:
                pass
            except OSError as error:
                self._fail(label, f"cannot write the request ({error})")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail(label, f"did not read the request within {wait:g} s")
            watched = [stdout, stderr] if self._stderr_open else [stdout]
            for fd in select.select(watched, [stdin], [], remaining)[0]:
                if fd == stdout:
                    self._read_stdout(label)
                else:
                    self._read_stderr()

    def _read_response(self, label: str) -> Any:
        reply = self._read_line(label)
        self._answered = True
        try:
            return loads_bounded(reply, MAX_JSON_DEPTH)
        except ValueError as error:
            text = _clip(reply.decode("utf-8", "replace"))
            problem = f"answered a line that is not JSON within the protocol's bounds ({error})"
            self._fail(label, f"{problem}: {text}")

    def _read_line(self, label: str) -> bytes:
        """The next line of the child's stdout (at most MAX_LINE_BYTES), within the timeout."""
        assert self._process is not None and self._process.stdout is not None
        assert self._selector is not None
        wait = self.timeout if self._answered else max(self.timeout, STARTUP_S)
        deadline = time.monotonic() + wait
        stdout = self._process.stdout
        scanned = 0
        while True:
            end = self._buffer.find(b"\n", scanned)
            if end > MAX_LINE_BYTES or (end < 0 and len(self._buffer) > MAX_LINE_BYTES):
                self._fail(label, f"answered a line longer than {MAX_LINE_BYTES} bytes")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            scanned = len(self._buffer)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail(label, f"no response within {wait:g} s")
            for key, _ in self._selector.select(remaining):
                if key.fileobj is stdout:
                    self._read_stdout(label)
                else:
                    self._read_stderr()

    def _read_stdout(self, label: str) -> None:
        """Whatever the child's stdout holds now, into the buffer (end-of-file: it failed)."""
        assert self._process is not None and self._process.stdout is not None
        try:
            chunk = os.read(self._process.stdout.fileno(), _CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self._await_exit(_EXIT_GRACE_S)  # for the exit status, if it is exiting
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
        "dispatches": record.dispatches,
    }


def pool_json() -> list[dict[str, Any]]:
    """The task pool as ``start`` sends it: each slot's name and the record register stores."""
    return [_slot_json(slot) for slot in TASK_POOL]


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _response_problem(response: object, request_id: int) -> str:
    """What is wrong with a response line ("" if it is the result of request ``request_id``)."""
    if not isinstance(response, dict):
        return f"answered {_clip(json.dumps(response))}, not a JSON object"
    if not is_int(response.get("id")) or response["id"] != request_id:
        return f"answered id {_clip(json.dumps(response.get('id')))} to request id {request_id}"
    if "error" in response:
        error = response["error"]
        if _is_fault(response, request_id):
            return f"fault: {error.get('message', '')}"
        if isinstance(error, dict):
            return f"refused it: {error.get('code', '?')}: {error.get('message', '')}"
        return f"refused it: {_clip(json.dumps(error))}"
    if "result" not in response:
        return f'answered {_clip(json.dumps(response))} with neither "result" nor "error"'
    return ""


def _is_fault(response: object, request_id: object) -> bool:
    """Whether ``response`` is the ``fault`` answer to request ``request_id`` (undefined
    behaviour or a fatal internal error in the call: a failure of kind fault, not a broken
    protocol)."""
    return (
        isinstance(response, dict)
        and is_int(response.get("id"))
        and response["id"] == request_id
        and isinstance(response.get("error"), dict)
        and response["error"].get("code") == "fault"
    )


def _refused(response: object, request_id: int, code: str) -> bool:
    """Whether ``response`` refuses request ``request_id`` with the protocol error ``code``."""
    return (
        isinstance(response, dict)
        and is_int(response.get("id"))
        and response["id"] == request_id
        and isinstance(response.get("error"), dict)
        and response["error"].get("code") == code
    )


def _hello_problem(hello: object, protocol: int) -> str:
    """What is wrong with the handshake result to ``hello`` of ``protocol`` ("" if this harness
    can talk to it)."""
    if not isinstance(hello, dict):
        return f"handshake result {_clip(json.dumps(hello))} is not a JSON object"
    answered = hello.get("protocol")
    if not is_int(answered) or answered not in PROTOCOL_VERSIONS or answered > protocol:
        return f"answered protocol {answered!r} to a hello of protocol {protocol}"
    levels = hello.get("levels")
    if (
        not isinstance(levels, list)
        or not levels
        or not all(is_int(level) and level in LEVELS for level in levels)
    ):
        return f"handshake levels {levels!r} are not a non-empty list of {LEVELS}"
    if not isinstance(hello.get("name"), str):
        return "handshake has no name"
    try:
        for level in levels:
            Observation.of_hello(hello, level)
    except MisuseError as error:
        return f"its declaration of what it observes: {error}"
    return ""
