"""A Dask distributed cluster as the explorer's executor: ``statemeta explore --cluster ADDRESS``.

The search (search.py) decides what runs where: it partitions a large level's frontier by state
fingerprint and hands this module a function and plain data per partition. This module only
ships them: each call travels as one pickled blob (Dask would otherwise walk the lists of
tuples looking for tasks) and comes back the same way, in the order given.

Decision (docs/formal-checking.md, "Past one machine"): Dask distributed, not Ray. Both were
measured here; Dask installs in a quarter of the space and starts a local cluster three times
faster, while Ray's lower per-task cost does not matter at a few tasks per level.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
from importlib.metadata import version
from types import TracebackType
from typing import Any, TypeVar

from statemeta.errors import ClusterError

CONNECT_SECONDS = 10.0
"""How long to wait for the scheduler, and for its first worker."""
_In = TypeVar("_In")
_Out = TypeVar("_Out")


class DaskCluster:
    """A connection to a running Dask scheduler (``search.Executor``)."""

    def __init__(self, address: str, client: Any) -> None:
        self.address = address
        self._client = client
        self.workers = sum(client.nthreads().values())
        """Tasks the cluster runs at once: one partition of a level each."""

    def map(self, function: Callable[[_In], _Out], items: Iterable[_In]) -> list[_Out]:
        futures = [
            self._client.submit(_call, pickle.dumps((function, item)), pure=False)
            for item in items
        ]
        return [pickle.loads(blob) for blob in self._client.gather(futures)]

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> DaskCluster:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def connect(address: str, *, timeout: float | None = None) -> DaskCluster:
    """A connection to the Dask scheduler at ``address`` (``tcp://host:port`` or ``host:port``)
    whose workers run this statemeta; ClusterError if there is none. ``timeout``: seconds to
    wait for the scheduler and for a worker (default CONNECT_SECONDS)."""
    timeout = CONNECT_SECONDS if timeout is None else timeout
    try:
        import distributed
    except ImportError as error:
        raise ClusterError(
            address, "needs Dask distributed, an optional extra: pip install 'statemeta[cluster]'"
        ) from error
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, ValueError) as error:  # TimeoutError is an OSError
        raise ClusterError(address, f"cannot reach the scheduler: {error}") from error
    try:
        client.wait_for_workers(1, timeout=timeout)
        versions = client.run(_version)
    except (OSError, ValueError) as error:
        client.close()
        raise ClusterError(address, f"no worker joined within {timeout:g} s") from error
    except Exception as error:  # a worker that cannot unpickle _version has no statemeta
        client.close()
        raise ClusterError(
            address, f"its workers cannot run statemeta ({type(error).__name__}: {error})"
        ) from error
    ours = _version()
    wrong = {worker: v for worker, v in versions.items() if v != ours}
    if wrong:
        client.close()
        raise ClusterError(address, f"workers run another statemeta than {ours}: {wrong}")
    return DaskCluster(address, client)


def _call(blob: bytes) -> bytes:
    """On a worker: one shipped call."""
    function, item = pickle.loads(blob)
    return pickle.dumps(function(item))


def _version() -> str:
    return version("statemeta")
