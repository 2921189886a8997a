"""A Dask distributed cluster as the explorer's executor: ``statemeta explore --cluster ADDRESS``.

The search (search.py) decides what runs where: it partitions a large level's frontier by state
fingerprint and hands this module a function and plain data per partition. This module only
ships them: each call travels as one pickled blob (Dask would otherwise walk the lists of
tuples looking for tasks), and each result comes back, in the order given, as tagged JSON
(statemeta.explore.shipped) built only of the records of search.CLUSTER_RESULTS. A worker is
trusted with nothing: what it sends cannot run code here (the client also refuses Dask's
pickle deserializer), and what does not decode is a ClusterError naming the worker's task.

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
from statemeta.explore import shipped
from statemeta.explore.search import CLUSTER_RESULTS

CONNECT_SECONDS = 10.0
"""How long to wait for the scheduler, and for its first worker."""
DESERIALIZERS = ["dask", "msgpack"]
"""The Dask serializer families the client reads what the cluster sends with: not
``pickle`` (bytes and plain messages need no more; a worker's pickled error is refused)."""
RESULTS = shipped.kinds(CLUSTER_RESULTS)
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
        try:
            blobs = self._client.gather(futures)
        except Exception as error:  # what a worker raised, or sent in a form refused here
            raise ClusterError(self.address, f"a worker's task failed: {error}") from error
        return [self._result(blob, n) for n, blob in enumerate(blobs)]

    def _result(self, blob: object, n: int) -> Any:
        if not isinstance(blob, bytes):
            raise ClusterError(self.address, f"result {n} is a {type(blob).__name__}, not bytes")
        try:
            return shipped.decode(blob, RESULTS)
        except ValueError as error:
            raise ClusterError(self.address, f"result {n} is not a result: {error}") from error

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
        client = distributed.Client(
            address, timeout=timeout, set_as_default=False, deserializers=DESERIALIZERS
        )
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
    return shipped.encode(function(item))


def _version() -> str:
    return version("statemeta")
