"""The thread-safe facade behind the harness protocol, for many clients at once.

``python -m statemeta.serve --concurrent [--variant NAME]``: the handshake declares
``"concurrent": true``; an operation request that names its ``client`` is handed to a pool of
``WORKERS`` threads and answered when it is done, so responses come in any order (each names
its request's id). Each client's handles are its own (FacadeAdapter). A request without a
client (hello, start, stop, view, or an operation that names none) waits until every request
in flight is answered, then is answered in turn: the harness sends those only when no client
has a call running. With ``--variant``, one of the locking variants
(statemeta.harness.locking_variants).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TextIO

from statemeta.harness.facade_target import FacadeAdapter
from statemeta.harness.normalize import Json
from statemeta.serve import Server

__all__ = ["WORKERS", "ConcurrentServer"]

WORKERS = 8
"""Threads that run the clients' requests."""


class ConcurrentServer(Server):
    """A Server whose operation requests run on a thread pool, each as its client."""

    adapter: FacadeAdapter

    def __init__(self, adapter: FacadeAdapter) -> None:
        super().__init__(adapter)
        self._out = threading.Lock()

    def serve(self, lines: Iterable[str], out: TextIO) -> None:
        """Answers every non-blank line; a client's request on the pool, the rest in turn."""
        in_flight: set[Future[None]] = set()
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="statemeta-client") as pool:
            for line in lines:
                if not line.strip():
                    continue
                client = _client(line)
                if client is None:
                    wait(in_flight)
                    in_flight.clear()
                    self._write(out, self.respond(line))
                    continue
                in_flight = {f for f in in_flight if not f.done()}
                in_flight.add(pool.submit(self._as_client, client, line, out))
            wait(in_flight)

    def _as_client(self, client: int, line: str, out: TextIO) -> None:
        self.adapter.as_client(client)
        self._write(out, self.respond(line))

    def _write(self, out: TextIO, response: dict[str, Json]) -> None:
        text = json.dumps(response, separators=(",", ":")) + "\n"
        with self._out:
            out.write(text)
            out.flush()


def _client(line: str) -> int | None:
    """The client a request names (None: none, or not a request Server.respond would run)."""
    try:
        request = json.loads(line)
    except ValueError:
        return None
    if not isinstance(request, dict) or request.get("op") in {"hello", "start", "stop", "view"}:
        return None
    client = request.get("client")
    if isinstance(client, bool) or not isinstance(client, int) or client < 0:
        return None
    return client
