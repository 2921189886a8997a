"""What a meta operation wants done outside the core, as data (h11's "bytes to send").

The core queues these in its outbox; the edge (``StreamMeta``) carries them out after each
operation or timer: a heartbeat goes to the transport, a completed start round to the
start-complete callback. Timers need no effect: the edge keeps its clock's timers in step with
the core's schedule (state.Schedule), which is itself data.
"""

from __future__ import annotations

import attrs

from statemeta.codec import EpSet
from statemeta.meta.start_round import StartRoundResult


@attrs.frozen
class SendHeartbeat:
    """Hand ``payload`` (an encoded heartbeat) to the transport, for the mnode at ``ep_set``."""

    ep_set: EpSet
    payload: bytes


@attrs.frozen
class StartComplete:
    """A start round completed: call the start-complete callback with ``result``."""

    result: StartRoundResult


Effect = SendHeartbeat | StartComplete
