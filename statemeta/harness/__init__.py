"""The one set of operations that drives the meta, and the adapters that run it.

Shared by the property suite (machine.py), the conformance harness and the explorer.
"""

from statemeta.harness.adapter import PROTOCOL_VERSION, PROTOCOL_VERSIONS, Adapter
from statemeta.harness.normalize import (
    Json,
    check_view_invariants,
    meta_view_from_json,
    to_json,
)
from statemeta.harness.observation import Observation
from statemeta.harness.operations import (
    DOMAINS,
    LEVELS,
    OP_SPECS,
    TASK_POOL,
    JsonScalar,
    Op,
    OpSpec,
    Param,
    TaskSlot,
    ops_at,
    slot_of,
)
from statemeta.harness.reference import Coverage, ReferenceAdapter, saved_record
from statemeta.harness.variants import VARIANTS, Variant

__all__ = [
    "DOMAINS",
    "LEVELS",
    "OP_SPECS",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSIONS",
    "TASK_POOL",
    "VARIANTS",
    "Adapter",
    "Coverage",
    "Json",
    "JsonScalar",
    "Observation",
    "Op",
    "OpSpec",
    "Param",
    "ReferenceAdapter",
    "TaskSlot",
    "Variant",
    "check_view_invariants",
    "meta_view_from_json",
    "ops_at",
    "saved_record",
    "slot_of",
    "to_json",
]
