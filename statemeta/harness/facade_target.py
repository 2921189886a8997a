"""FacadeAdapter: the thread-safe facade (or a locking variant) behind the Adapter protocol, for
many threads at once.

It is the reference adapter with the meta replaced by a ``ThreadSafeStreamMeta`` over the same
store and virtual clock, so each operation runs the same handler (the operation table's one
row) and gives the same JSON result. Each operation is the facade's own call, with the facade's
locking: what a broken facade gets wrong shows. What the adapter adds is per client (set by
``call_as``): the client's handles (a client releases what it acquired) and the heartbeats its
call sent (timers fire in the thread that advances the clock). Two harness steps that are more
than one facade call, save_task (read, then save) and fail_next (arm the store), run as one
locked body. The meta runs without its per-operation check: ``quiescent`` checks the whole
invariant catalogue when no call is running.
"""

from __future__ import annotations

import threading
from typing import cast

from statemeta.errors import InvariantViolation, MisuseError
from statemeta.harness.linearizability.reference import CONCURRENT_LEVELS
from statemeta.harness.locking_variants import LOCKING_VARIANTS
from statemeta.harness.normalize import Json
from statemeta.harness.operations import Op, TaskSlot
from statemeta.harness.reference import VG_ID, ReferenceAdapter
from statemeta.invariants import check_invariants
from statemeta.meta import TaskHandle
from statemeta.meta.facade import ThreadSafeStreamMeta
from statemeta.meta.stream_meta import StreamMeta
from statemeta.semantics import Semantics

__all__ = ["FacadeAdapter"]

_Handles = tuple[dict[str, list[TaskHandle]], dict[str, TaskHandle]]


class FacadeAdapter(ReferenceAdapter):
    """``ThreadSafeStreamMeta`` (``variant=None``) or a locking variant, shared by threads."""

    def __init__(
        self, variant: str | None = None, *, semantics: Semantics | str = Semantics.INTENDED
    ) -> None:
        if variant is not None and variant not in LOCKING_VARIANTS:
            raise MisuseError(
                f"no locking variant {variant!r}; they are {sorted(LOCKING_VARIANTS)}"
            )
        self._local = threading.local()
        self._clients: dict[int, _Handles] = {}
        self._facade: ThreadSafeStreamMeta | None = None
        super().__init__(check_invariants=False, semantics=semantics)
        self.locking_variant = variant

    def hello(self) -> dict[str, Json]:
        name = "statemeta-facade" + (
            "" if self.locking_variant is None else f"[{self.locking_variant}]"
        )
        return {
            **super().hello(),
            "name": name,
            "levels": list(CONCURRENT_LEVELS),
            "concurrent": True,
        }

    def start(self, level: int) -> None:
        if level not in CONCURRENT_LEVELS:
            raise MisuseError(f"the facade runs at levels {CONCURRENT_LEVELS}, not {level}")
        self._clients = {}
        super().start(level)

    def as_client(self, client: int) -> None:
        """The calling thread's calls are ``client``'s from now on (until told otherwise)."""
        self._local.client = client

    def call_as(self, client: int, op: Op) -> dict[str, Json]:
        """``call(op)`` as ``client`` (any thread; one call per client at a time)."""
        self.as_client(client)
        return self.call(op)

    @property
    def facade(self) -> ThreadSafeStreamMeta:
        if self._facade is None:
            raise MisuseError("the facade adapter has no facade (start it at level 2 or 3)")
        return self._facade

    def quiescent(self) -> str | None:
        """The invariant catalogue on the meta now (call it when no call runs): None, or what
        is broken."""
        try:
            self.facade.locked(lambda: check_invariants(self.facade.core))
        except InvariantViolation as violation:
            return str(violation)
        return None

    # -- per client ----------------------------------------------------------------------------

    def _mine(self) -> _Handles:
        return self._clients.setdefault(getattr(self._local, "client", 0), ({}, {}))

    @property
    def _handles(self) -> dict[str, list[TaskHandle]]:
        return self._mine()[0]

    @_handles.setter
    def _handles(self, value: dict[str, list[TaskHandle]]) -> None:
        self._forget(value)

    @property
    def _given_back(self) -> dict[str, TaskHandle]:
        return self._mine()[1]

    @_given_back.setter
    def _given_back(self, value: dict[str, TaskHandle]) -> None:
        self._forget(value)

    def _forget(self, value: object) -> None:
        """The reference adapter forgets every handle (start, stop): every client's."""
        if value:
            raise MisuseError("the facade adapter's handles are per client (use call_as)")
        self._clients = {}

    @property
    def _sent(self) -> list[str]:
        sent: list[str] = getattr(self._local, "sent", [])
        self._local.sent = sent
        return sent

    @_sent.setter
    def _sent(self, value: list[str]) -> None:
        self._local.sent = value

    # -- the facade in place of the meta ---------------------------------------------------------

    def _open(self) -> None:
        assert self._path is not None
        cls = (
            ThreadSafeStreamMeta
            if self.locking_variant is None
            else LOCKING_VARIANTS[self.locking_variant].facade_class
        )
        self._facade = cls.open(
            self._path,
            VG_ID,
            store_factory=self._store_factory,
            clock=self._clock,
            transport=self._transport,
            check_invariants=False,
            semantics=self.semantics,
        )
        self._meta = cast(StreamMeta, self._facade)  # the same calls, each under its lock

    def _reopen(self, *, crash: bool, torn: TaskSlot | None = None) -> object:
        raise MisuseError("close/crash and reopen are not concurrent operations (spec/README.md)")

    def _advance(self, ms: int) -> None:
        self.facade.advance(ms)

    def do_fail_next(self, op: Op) -> None:
        self.facade.locked(lambda: super(FacadeAdapter, self).do_fail_next(op))

    def do_save_task(self, op: Op) -> None:
        self.facade.locked(lambda: super(FacadeAdapter, self).do_save_task(op))

    def stop(self) -> None:
        super().stop()
        self._facade = None
