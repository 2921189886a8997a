"""The Adapter protocol: how the harness drives one implementation of the stream meta.

An adapter is the reference in-process (ReferenceAdapter), another Python implementation, or a
child process speaking docs/harness-protocol.md (SubprocessAdapter). Results and views are
plain JSON values shaped as statemeta.harness.normalize makes them.
"""

from __future__ import annotations

from typing import Protocol

from statemeta.harness.normalize import Json
from statemeta.harness.operations import Op

__all__ = ["PROTOCOL_VERSION", "PROTOCOL_VERSIONS", "Adapter"]

PROTOCOL_VERSION = 2
"""The protocol this harness speaks: 2 lets ``hello`` declare what is observed."""
PROTOCOL_VERSIONS: tuple[int, ...] = (2, 1)
"""The versions the harness offers, in order: an implementation that refuses 2 is asked 1
(everything observed, outcomes in full)."""


class Adapter(Protocol):
    """One implementation under the harness's control."""

    def hello(self) -> dict[str, Json]:
        """``{"protocol": 2, "name": str, "levels": [supported levels]}``, with what it
        observes when that is not everything (statemeta.harness.observation)."""
        ...

    def start(self, level: int) -> None:
        """A fresh, empty instance at ``level`` (new directory or memory); ends any previous."""
        ...

    def call(self, op: Op) -> dict[str, Json]:
        """Run ``op``: ``{"ok": value}`` or ``{"error": class name}`` (+ ``"heartbeats"``)."""
        ...

    def view(self) -> dict[str, Json]:
        """What it observes at the adapter's level, as JSON."""
        ...

    def stop(self) -> None:
        """End the instance; always safe, also when none was started."""
        ...
