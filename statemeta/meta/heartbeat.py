"""The meta's heartbeat to the mnode (metaHbToMnode / metaHeartbeatToMnodeImpl).

A leader's meta runs one timer chain: a tick every ``META_HB_CHECK_INTERVAL`` ms, and one
message every ``META_HB_SEND_IDLE_COUNTER`` ticks. A chain is data (``HeartbeatState``: its
tick counter and the seq of its armed tick in the meta's schedule); the functions below move
it, and the meta turns a message into an effect (effects.SendHeartbeat).

The seed's timing, in both semantics (shared reference §2.2, §8.6): a meta has one chain, since
every re-arm is ``taosTmrReset`` on one handle, which re-arms a timer still waiting instead of
starting another. Each election (``streamMetaStartHb``, LEADER -> LEADER included) ticks once
at once (``start``), so the first heartbeat comes 24 ticks (4.8 s) after it, and a re-election
can send at once. The tick counter is reset at every 25th tick, whether or not a message goes
(waitForEnoughDuration; with no task to report none does), and only then: ticks counted before
a follower period carry over into the next leader period. An snode's chain, armed at open, first
ticks 200 ms later (``arm``). The chain stops as soon as the meta stops being leader; in the
seed profile (switch M12) every meta's chain is armed at open and a chain ends only at a tick
that finds the meta not leader, which only clears hbStart (``tick``).

The message lists the tasks in list order, fill-history tasks left out, each with its status,
the meta's stage and its checkpoint state; the node ids the tasks queued for update are moved
into it without duplicates. No task to report, no message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from statemeta.codec import EpSet, HbMsg, TaskLevel, TaskStatusEntry
from statemeta.meta.entry import TaskEntry
from statemeta.meta.state import HeartbeatState, Schedule, TimerKind

META_HB_CHECK_INTERVAL = 200
"""ms between two ticks of the chain."""
META_HB_SEND_IDLE_COUNTER = 25
"""ticks per message: one heartbeat per 5 s."""


class HeartbeatTransport(Protocol):
    """Sends an encoded heartbeat to the mnode (tmsgSendReq of TDMT_MND_STREAM_HEARTBEAT)."""

    def __call__(self, mnode_ep_set: EpSet, payload: bytes) -> None: ...


def build_hb_msg(
    vg_id: int, stage: int, entries: Iterable[TaskEntry]
) -> tuple[HbMsg, EpSet] | None:
    """The message for ``entries`` (in list order) and where to send it, or None if empty.

    Takes each reported task's queued update nodes (each entry's are emptied). The model has no
    input queue, token bucket or WAL reader: queue and sink figures are 0.0, and a source
    task reports processedVer = nextProcessVer - 1 with an empty WAL range (0, 0).
    """
    statuses: list[TaskStatusEntry] = []
    update_nodes: list[int] = []
    seen_nodes: set[int] = set()
    ep_set: EpSet | None = None
    for entry in entries:
        task = entry.task
        if task.fill_history:
            continue
        failed = 0
        active = entry.checkpointing_id
        trans_id = 0
        if active != 0:
            failed = int(entry.failed_checkpoint_id >= active)
            trans_id = entry.checkpoint_trans_id
        processed_ver = (
            entry.next_process_ver - 1 if task.task_level == TaskLevel.SOURCE else 0
        )
        statuses.append(
            TaskStatusEntry(
                stream_id=task.stream_id,
                task_id=task.task_id,
                status=int(entry.lifecycle.status),
                stage=stage,
                node_id=vg_id,
                processed_ver=processed_ver,
                active_checkpoint_id=active,
                checkpoint_failed=failed,
                checkpoint_trans_id=trans_id,
            )
        )
        for node in entry.update_nodes:
            if node not in seen_nodes:
                seen_nodes.add(node)
                update_nodes.append(node)
        entry.update_nodes = ()
        if ep_set is None:
            ep_set = task.mnode_ep_set
    if ep_set is None:
        return None
    return HbMsg(vg_id=vg_id, entries=tuple(statuses), update_nodes=tuple(update_nodes)), ep_set


def arm(chain: HeartbeatState, schedule: Schedule, now: int, number: int = 0) -> None:
    """The chain armed at open (streamMetaOpen's taosTmrStart): its first tick 200 ms later."""
    chain.timer = schedule.arm(now + META_HB_CHECK_INTERVAL, TimerKind.HEARTBEAT, chain=number)


def start(chain: HeartbeatState, schedule: Schedule, now: int) -> bool:
    """streamMetaStartHb: one tick at once as leader, re-arming the one chain (a tick still
    waiting is cancelled, as taosTmrReset does); True when a message is due."""
    if chain.timer is not None:
        schedule.cancel(chain.timer)
    return tick(chain, schedule, now, leader=True)


def stop_chain(chain: HeartbeatState, schedule: Schedule) -> None:
    if chain.timer is not None:
        schedule.cancel(chain.timer)
        chain.timer = None
    chain.started_ms = 0


def tick(
    chain: HeartbeatState, schedule: Schedule, now: int, leader: bool, number: int = 0
) -> bool:
    """The chain's armed tick fired: re-arm it while leader; True when a message is due."""
    chain.timer = None
    if not leader:
        chain.started_ms = 0
        return False
    if chain.started_ms == 0:
        chain.started_ms = now
    chain.tick_counter += 1
    chain.timer = schedule.arm(now + META_HB_CHECK_INTERVAL, TimerKind.HEARTBEAT, chain=number)
    if chain.tick_counter >= META_HB_SEND_IDLE_COUNTER:
        chain.tick_counter = 0
        return True  # sent after re-arming: a failing transport does not end the chain
    return False
