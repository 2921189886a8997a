"""How the tools print ids for a person: one way everywhere (issue 32), as the store's
inspector always has: a stream id as ``0x%016x`` of its 64 bits, a task id as ``0x%08x`` of
its 32 (a negative id shows its two's complement, the bytes the key holds)."""

from __future__ import annotations

__all__ = ["ID_FORMATS", "stream_id_text", "task_id_text"]


def stream_id_text(stream_id: int) -> str:
    return f"0x{stream_id & (2**64 - 1):016x}"


def task_id_text(task_id: int) -> str:
    return f"0x{task_id & (2**32 - 1):08x}"


ID_FORMATS = {"stream_id": stream_id_text, "task_id": task_id_text}
"""A decoded field's name -> how its value is printed (any other field: ``repr``)."""
