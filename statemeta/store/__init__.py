"""The transactional KV store the meta persists tasks in: protocol, LMDB, memory, faults."""

from statemeta.store.faults import FAULT_OPS, FaultOp, FaultyStore, FaultyTable
from statemeta.store.lmdb_dir import MARKER_FILE
from statemeta.store.lmdb_store import DEFAULT_MAP_SIZE, ENV_DIR, LOCK_FILE, LmdbStore
from statemeta.store.memory_store import MemoryState, MemoryStore
from statemeta.store.overlay import OverlayStore, OverlayTable
from statemeta.store.protocol import Store, Table

__all__ = [
    "DEFAULT_MAP_SIZE",
    "ENV_DIR",
    "FAULT_OPS",
    "LOCK_FILE",
    "MARKER_FILE",
    "FaultOp",
    "FaultyStore",
    "FaultyTable",
    "LmdbStore",
    "MemoryState",
    "MemoryStore",
    "OverlayStore",
    "OverlayTable",
    "Store",
    "Table",
]
