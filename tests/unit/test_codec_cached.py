"""The memoised codec (statemeta/codec/cached.py): every cache is bounded, so a long run's
memory is not (measured: a 500-example campaign fills them to about 50 entries each)."""

from __future__ import annotations

import pytest

from statemeta.codec import StreamTask, cached, encode_task
from statemeta.codec.key import encode_task_key
from statemeta.errors import DecodeError

CACHES = (cached.task_key, cached.encode, cached.decode, cached.decode_record,
          cached.checkpoint_info, cached.key_id)


def test_every_cache_has_a_finite_size() -> None:
    assert all(cache.cache_info().maxsize == cached.SIZE for cache in CACHES)


def test_a_cache_keeps_at_most_its_size_after_more_distinct_inputs() -> None:
    cached.key_id.cache_clear()
    for task_id in range(cached.SIZE + 100):
        assert cached.key_id(encode_task_key(1, task_id)).task_id == task_id
    assert cached.key_id.cache_info().currsize == cached.SIZE
    cached.key_id.cache_clear()


def test_a_rejection_is_a_cached_verdict_raised_again_as_a_fresh_error() -> None:
    torn = encode_task(StreamTask(stream_id=1, task_id=1))[:12]
    cached.decode.cache_clear()
    raised = []
    for _ in range(3):
        with pytest.raises(DecodeError, match="block length") as caught:
            cached.decode(torn)
        raised.append(caught.value)
    first, *again = raised
    assert cached.decode.cache_info().currsize == 1 and cached.decode.cache_info().hits == 2
    for error in again:
        assert error is not first  # nothing cached holds a traceback (and its frames)
        assert (str(error), error.reason, error.offset) == (str(first), first.reason, first.offset)
    cached.decode.cache_clear()
