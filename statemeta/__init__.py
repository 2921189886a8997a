"""statemeta: a formally checked reference model of TDengine's stream-task meta (streamMeta.c).

The public API, by layer (imports only point down):

- the meta: ``StreamMeta`` (sans-IO core; ``StreamMeta.open(path, vg_id, ...)``),
  ``ThreadSafeStreamMeta`` (reader-writer-locked facade), ``VirtualClock`` / ``RealClock``,
  ``TaskHandle`` (what ``acquire`` returns), ``LoadReport``, ``DropResult``, ``MetaView``;
- the machines: ``TaskLifecycle`` with ``TaskStatus``, ``TaskEvent``, ``Outcome`` and
  ``StatusChange``; ``RoleMachine`` with ``Role`` and ``RoleEvent``; the predicates
  ``should_stop``, ``should_pause``, ``ready_to_run``;
- the records: ``StreamTask`` and ``TaskId`` (their byte layouts are in ``statemeta.codec``);
- the semantics: ``Semantics.INTENDED`` (the default) or ``Semantics.SEED`` (TDengine at the
  seed commit, bug for bug), each difference a ``Switch`` of spec/divergences.toml;
- the checks: ``check_invariants`` and ``InvariantViolation``; ``PreconditionError``, what an
  operation the seed asserts against raises (the caller's contract); ``UndefinedBehaviour``,
  where the seed profile reaches a memory error of the seed's code (a use after free, an
  over-read);
- every exception class is in ``statemeta.errors``; the stores are in ``statemeta.store``.
"""

from statemeta.codec import StreamTask, TaskId
from statemeta.errors import (
    InvariantViolation,
    PreconditionError,
    StatemetaError,
    UndefinedBehaviour,
)
from statemeta.invariants import check_invariants
from statemeta.lifecycle import (
    Outcome,
    StatusChange,
    TaskEvent,
    TaskLifecycle,
    TaskStatus,
    TransitionRow,
    ready_to_run,
    should_pause,
    should_stop,
)
from statemeta.meta import (
    DropResult,
    LoadReport,
    MetaView,
    RealClock,
    StreamMeta,
    TaskHandle,
    VirtualClock,
)
from statemeta.meta.facade import ThreadSafeStreamMeta
from statemeta.roles import Role, RoleEvent, RoleMachine, RoleRow
from statemeta.semantics import Semantics, Switch

__version__ = "0.1.0"

__all__ = [
    "DropResult",
    "InvariantViolation",
    "LoadReport",
    "MetaView",
    "Outcome",
    "PreconditionError",
    "RealClock",
    "Role",
    "RoleEvent",
    "RoleMachine",
    "RoleRow",
    "Semantics",
    "StatemetaError",
    "StatusChange",
    "StreamMeta",
    "StreamTask",
    "Switch",
    "TaskEvent",
    "TaskHandle",
    "TaskId",
    "TaskLifecycle",
    "TaskStatus",
    "ThreadSafeStreamMeta",
    "TransitionRow",
    "UndefinedBehaviour",
    "VirtualClock",
    "__version__",
    "check_invariants",
    "ready_to_run",
    "should_pause",
    "should_stop",
]
