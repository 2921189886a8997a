"""The codec's pure functions, memoised, for the checking paths.

In check mode (the invariant checks, the durable model, the explorer, the property suite) the
same few records are encoded and decoded after every operation, hundreds of thousands of times
a run. The functions are pure and their records frozen, and a cache keeps no exception: bytes
that do not decode are rejected on every call, and a hit is the verdict on the same bytes. A
meta outside check mode calls the plain functions: it decodes each record once per open, and a
cache would only hold memory (and flatter a benchmark of load_all).
"""

from __future__ import annotations

import functools

from statemeta.codec.key import TaskId, decode_task_key, encode_task_key
from statemeta.codec.task import (
    decode_checkpoint_info,
    decode_task,
    decode_task_record,
    encode_task,
)

SIZE = 8192
"""Entries per function: far more than the records of any checking run."""

task_key = functools.lru_cache(maxsize=SIZE, typed=True)(encode_task_key)
encode = functools.lru_cache(maxsize=SIZE)(encode_task)
decode = functools.lru_cache(maxsize=SIZE)(decode_task)
decode_record = functools.lru_cache(maxsize=SIZE)(decode_task_record)
checkpoint_info = functools.lru_cache(maxsize=SIZE)(decode_checkpoint_info)


@functools.lru_cache(maxsize=SIZE)
def key_id(key: bytes) -> TaskId:
    """The id a task.db key names."""
    return TaskId(*decode_task_key(key))
