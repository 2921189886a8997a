"""The signals that end a command (SIGTERM, SIGINT, SIGHUP) as an exception that cannot be lost.

Python runs a signal's handler between two bytecodes of the main thread, wherever they are:
inside a garbage-collector callback or a ``__del__`` too, where an exception is printed
("Exception ignored in ...") and dropped, so a command that should end runs on (a campaign did,
inside Hypothesis's gc callback). Here the handler records the signal before raising, and the
loops that run for long (each harness step, each explored level) call ``raise_if_interrupted``,
which raises again what was dropped.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["ENDING_SIGNALS", "Interrupted", "exit_code", "interruptible", "raise_if_interrupted"]

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

_received: list[int] | None = None
"""The signals the innermost active ``interruptible`` block got (None outside any)."""


class Interrupted(KeyboardInterrupt):
    """The run got SIGTERM, SIGINT or SIGHUP. A KeyboardInterrupt: no ``except Exception`` takes
    it for a failure, and Hypothesis passes it on at once without concluding the example (any
    other BaseException it concludes, and an example cut short there is a FlakyStrategyDefinition
    against the same example run before: issue 34, finding 10)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


@contextlib.contextmanager
def interruptible() -> Iterator[list[int]]:
    """While the body runs, the first ending signal raises Interrupted (later ones are only
    recorded: the command is ending); yields the list that then holds the signal. The block
    ends quietly on Interrupted; the caller reads the list. Nested blocks share the outer one's
    list and handlers; off the main thread the block sets none."""
    global _received
    if _received is not None or threading.current_thread() is not threading.main_thread():
        with contextlib.suppress(Interrupted):
            yield [] if _received is None else _received  # off the main thread: no handlers
        return
    received: list[int] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if not received:
            received.append(signum)
            raise Interrupted(signum)

    previous = {number: signal.signal(number, interrupt) for number in ENDING_SIGNALS}
    _received = received
    try:
        yield received
    except Interrupted:
        pass
    finally:
        _received = None
        for number, handler in previous.items():
            signal.signal(number, handler)


def raise_if_interrupted() -> None:
    """Raises Interrupted again if an ending signal came and its first raise was dropped."""
    if _received:
        raise Interrupted(_received[0])


def exit_code(received: list[int]) -> int:
    """The exit code of a command an ending signal stopped: 128 + N, as a shell reports it."""
    return 128 + received[0]
