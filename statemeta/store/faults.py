"""A fault-injecting wrapper over a real store: it wraps, never replaces (DESIGN §6).

Faults are armed per operation by the call count they hit: ``fail_next("put", skip=2)`` makes
the third ``put`` from now raise StoreFault. An injected fault replaces the call whole, so it
is checked before anything else and the inner store never sees the call:

- a failed ``begin`` opens no transaction;
- a failed ``put`` or ``delete`` writes nothing and leaves the transaction open;
- a failed ``commit`` aborts the open transaction: nothing since ``begin`` is durable and a
  new ``begin`` is needed (as when LMDB's own commit fails);
- a crash (``crash()`` now, or ``crash_next(op)`` in place of a later call) drops the open
  transaction without commit, as a killed process would, and releases the files; every later
  call raises StoreClosedError. Reopening the path (``LmdbStore.open`` or ``MemoryStore.open``,
  whichever backend is wrapped) sees the last commit.

``calls`` counts every call by operation (faulted calls included) for tests; ``armed_faults``
is the fault plan relative to now, and ``copy`` an independent wrapper in the same state over
a copy of a memory store (the explorer forks states with it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Literal

from statemeta.errors import MisuseError, StoreClosedError, StoreFault
from statemeta.store.memory_store import MemoryStore
from statemeta.store.protocol import Store, Table

FaultOp = Literal["begin", "put", "delete", "commit"]
FAULT_OPS: tuple[FaultOp, ...] = ("begin", "put", "delete", "commit")
_NONE_ARMED: tuple[tuple[int, ...], ...] = tuple(() for _ in FAULT_OPS)
"""``armed_faults`` with nothing armed."""


class FaultyTable:
    """A real table whose puts and deletes go through the faulty store's fault plan."""

    __slots__ = ("_inner", "_store")

    def __init__(self, store: FaultyStore, inner: Table) -> None:
        self._store = store
        self._inner = inner

    @property
    def inner(self) -> Table:
        return self._inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def key_len(self) -> int | None:
        return self._inner.key_len

    def get(self, key: bytes) -> bytes | None:
        self._store._call("get")
        return self._inner.get(key)

    def upsert(self, key: bytes, value: bytes) -> None:
        self._store._call("put", f"table {self.name!r} key {key.hex()}")
        self._inner.upsert(key, value)

    def delete(self, key: bytes) -> None:
        self._store._call("delete", f"table {self.name!r} key {key.hex()}")
        self._inner.delete(key)

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        self._store._call("items")
        return self._inner.items()


class FaultyStore:
    """Wraps a Store; implements the Store protocol plus fault planning and crash."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self._calls: Counter[str] = Counter()
        self._faults: dict[str, dict[int, bool]] = {op: {} for op in FAULT_OPS}  # n -> crash?
        self._crashed = False
        self.faults_injected = 0

    @property
    def inner(self) -> Store:
        return self._inner

    @property
    def path(self) -> str:
        return self._inner.path

    @property
    def in_transaction(self) -> bool:
        return not self._crashed and self._inner.in_transaction

    @property
    def crashed(self) -> bool:
        return self._crashed

    @property
    def calls(self) -> dict[str, int]:
        """Calls made so far, by operation (faulted calls included)."""
        return dict(self._calls)

    def armed_faults(self) -> tuple[tuple[int, ...], ...]:
        """Each operation's armed faults (``FAULT_OPS`` order), as how many calls from now
        they hit (1: the next call), in increasing order."""
        faults = self._faults
        if not any(faults.values()):
            return _NONE_ARMED  # the usual case: the explorer asks in every state
        calls = self._calls
        return tuple(tuple(sorted(n - calls[op] for n in faults[op])) for op in FAULT_OPS)

    def copy(self) -> FaultyStore:
        """An independent wrapper in this one's state (counts, fault plan) over a copy of the
        wrapped store, which must be a MemoryStore (MisuseError otherwise)."""
        inner = self._inner
        if not isinstance(inner, MemoryStore) or self._crashed:
            raise MisuseError(f"copy of {self.path}: only a live memory store can be copied")
        new = object.__new__(FaultyStore)  # __init__'s fresh counters would be replaced
        new._inner = inner.copy()
        new._calls = self._calls.copy()
        new._faults = {op: dict(planned) for op, planned in self._faults.items()}
        new._crashed = False
        new.faults_injected = self.faults_injected
        return new

    def fail_next(self, op: FaultOp, skip: int = 0) -> None:
        """Make the (skip+1)-th ``op`` call from now raise StoreFault, with no effect."""
        self._arm(op, skip, crash=False)

    def crash_next(self, op: FaultOp, skip: int = 0) -> None:
        """Crash in place of the (skip+1)-th ``op`` call from now (it raises StoreFault)."""
        self._arm(op, skip, crash=True)

    def crash(self) -> None:
        """Drop the open transaction without commit and make this wrapper unusable."""
        self._check_live("crash")
        self._crashed = True
        self._inner.close()

    def table(self, name: str, key_len: int | None) -> FaultyTable:
        self._check_live("table")
        return FaultyTable(self, self._inner.table(name, key_len))

    def begin(self) -> None:
        self._call("begin")
        self._inner.begin()

    def commit(self) -> None:
        self._call("commit")
        self._inner.commit()

    def abort(self) -> None:
        self._call("abort")
        self._inner.abort()

    def close(self) -> None:
        if not self._crashed:
            self._inner.close()

    # -- the fault plan ------------------------------------------------------------------

    def _arm(self, op: FaultOp, skip: int, *, crash: bool) -> None:
        if op not in self._faults:
            raise MisuseError(f"cannot inject a fault into {op!r}; one of {FAULT_OPS}")
        if skip < 0:
            raise MisuseError(f"skip must be >= 0, got {skip}")
        self._check_live("arm a fault")
        self._faults[op][self._calls[op] + skip + 1] = crash

    def _check_live(self, op: str) -> None:
        if self._crashed:
            raise StoreClosedError(f"{op} on {self.path}: the store crashed (fault injection)")

    def _call(self, op: str, what: str = "") -> None:
        """Count the call; raise the fault planned for it, if any."""
        self._check_live(op)
        self._calls[op] += 1
        planned = self._faults.get(op)
        if not planned:
            return
        crash = planned.pop(self._calls[op], None)
        if crash is None:
            return
        self.faults_injected += 1
        where = f" {what}" if what else ""
        if crash:
            self.crash()
            raise StoreFault(f"injected crash at {op} #{self._calls[op]}{where} in {self.path}")
        if op == "commit":
            self._inner.abort()
        raise StoreFault(f"injected {op} failure #{self._calls[op]}{where} in {self.path}")
