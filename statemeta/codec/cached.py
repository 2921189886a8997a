"""The codec's pure functions, memoised, for the checking paths.

In check mode (the invariant checks, the durable model, the explorer, the property suite) the
same few records are encoded and decoded after every operation, hundreds of thousands of times
a run. The functions are pure and their records frozen, so a hit is the verdict on the same
bytes. A rejection is a verdict too (a torn record is rejected after every operation of the
explorer's corrupt_record states): the decoders keep what the StatemetaError they raised says
and raise a fresh one like it again. A meta outside check mode calls the plain functions: it
decodes each record once per open, and a cache would only hold memory (and flatter a
benchmark of load_all).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Generic, TypeVar

from statemeta.codec.key import TaskId, decode_task_key, encode_task_key
from statemeta.codec.task import (
    decode_checkpoint_info,
    decode_task,
    decode_task_record,
    encode_task,
)
from statemeta.errors import StatemetaError

SIZE = 8192
"""Entries per function: far more than the records of any checking run."""

R = TypeVar("R")


_Rejection = tuple[type[StatemetaError], tuple[object, ...], dict[str, object]]
"""A rejection as data: the error's class, its args and its fields (no traceback, no frames)."""


class _Verdicts(Generic[R]):
    """A decoder of bytes arguments, memoised with its rejections: the same bytes raise the
    same error again (a fresh instance each time: a cached exception would keep its traceback,
    and with it the frames of whoever called first, alive)."""

    def __init__(self, decoder: Callable[..., R]) -> None:
        def verdict(*data: bytes) -> tuple[R, None] | tuple[None, _Rejection]:
            try:
                return decoder(*data), None
            except StatemetaError as error:
                return None, (type(error), error.args, dict(vars(error)))

        self._verdict = functools.lru_cache(maxsize=SIZE)(verdict)
        self.cache_info = self._verdict.cache_info
        self.cache_clear = self._verdict.cache_clear

    def __call__(self, *data: bytes) -> R:
        value, rejection = self._verdict(*data)
        if rejection is not None:
            cls, args, fields = rejection
            error = cls.__new__(cls, *args)
            error.args = args
            vars(error).update(fields)
            raise error
        return value  # type: ignore[return-value]  # None only with a rejection


task_key = functools.lru_cache(maxsize=SIZE, typed=True)(encode_task_key)
encode = functools.lru_cache(maxsize=SIZE)(encode_task)
decode = _Verdicts(decode_task)
decode_record = _Verdicts(decode_task_record)
checkpoint_info = _Verdicts(decode_checkpoint_info)


@functools.lru_cache(maxsize=SIZE)
def key_id(key: bytes) -> TaskId:
    """The id a task.db key names."""
    return TaskId(*decode_task_key(key))
